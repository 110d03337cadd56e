"""Words, sentences and stop words: the one way memctx splits text into words and sentences, and
the one stop-word list.

Owns: the word pattern (letters and digits of any script, with inner apostrophes: "Melanie's",
"can't"), the English stop words that carry no topic (function words, fillers, chat noise), and
`bare_words`, a word's bare form for matching (the part before an apostrophe, lower-cased), and
`split_sentences` (at . ! ? … and CJK stops and line breaks, not after an abbreviation or an
initial). The summarizer's TF-IDF, the board's detectors, query analysis and the cleaning of web
pages all use these. Pure; no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while
who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
yourself yourselves just really also get got gets getting go goes going gone went make made
much many lot lots thing things something anything everything nothing one ones would could
might must shall may us yeah yes yep oh ok okay like well even still back way kind sort
im ive id dont cant wont thats its youre theyre lets gonna wanna gotta kinda sorta
""".split())


def words(text: str) -> list[str]:
    """The words of `text`, in order, with typographic apostrophes made plain."""
    return WORD.findall(text.replace("’", "'"))


def bare_words(text: str) -> list[str]:
    """The words' bare forms: lower-cased, cut at an apostrophe ("Melanie's" → "melanie")."""
    return [w.split("'")[0].lower() for w in words(text)]


# Sentences: a stop after one of these is not a boundary.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e inc ltd co corp no approx mt ft u.s u.k a.m p.m "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_BOUNDARY = re.compile(r"\s*\n\s*|[.!?…]+[\"'”’»)\]]*(?:\s+|$)|[。！？]+[」』”’)]*\s*")


def _false_stop(text: str, m: re.Match[str]) -> bool:
    """A full stop after an abbreviation ("Dr.", "e.g.") or an initial is not a boundary.

    A lowercase next word does not make one: chat sentences often start in lowercase.
    """
    mark = m.group()
    if "\n" in mark or any(c in mark for c in "!?…。！？"):
        return False
    before = text[: m.start()].rsplit(None, 1)
    word = before[-1].lower().strip("(\"'") if before else ""
    if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
        return True
    nxt = text[m.end(): m.end() + 1]
    return "." in word and nxt.islower()


@lru_cache(maxsize=16384)
def split_sentences(text: str) -> tuple[str, ...]:
    """Sentences of `text`, split at . ! ? … (and CJK stops) and line breaks."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if m.end() <= start or _false_stop(text, m):
            continue
        piece = text[start: m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return tuple(out)
