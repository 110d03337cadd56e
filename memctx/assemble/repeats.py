"""Saying each thing once: the sentences of a context, and which of them it already holds.

Owns: splitting text into comparable sentences (a speaker's "Name:" lead, date brackets, bullets
and case set aside, so "user: I'll buy the tickets." and "Priya: I'll buy the tickets." are one
sentence), `strip_said` (a text without the sentences already said), `elide_said` (the same for
a quoted turn, with "…" where a sentence was left out) and `sentence_tally` (how many
sentences of five words or more a context says more than once, of how many). Pure; no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import Collection, Iterable, Mapping, Sequence
from uuid import UUID

from memctx.retrieve.types import Memory

MIN_WORDS = 5  # shorter sentences ("Thanks!", "Sounds good.") may repeat: they frame, they do not inform

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'(\[]?[A-Z0-9¿¡])|\n+")
_LEAD = re.compile(r"^\s*(?:[-*•]\s+)?(?:\[[^\]]*\]\s*)*(?:\[summary of messages [^\]]*\]\s*)?"
                   r"(?:[A-Za-z][\w.'’-]*(?: [A-Za-z][\w.'’-]*){0,2}:\s+)?")
_WORD = re.compile(r"[\w'’]+")
# What a turn's relative dates meant, as the memory section appends it ("(last week = the week
# before 16 July 2023)", memctx.assemble.render.date_note): a date, which may frame many lines.
_DATE_NOTE = re.compile(r"\s*\((?:[^()=;]+ = [^();]+)(?:; [^()=;]+ = [^();]+)*\)\s*$")


def sentences(text: str) -> list[str]:
    """The sentences of `text` as written, in order (line breaks end a sentence too)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@lru_cache(maxsize=65_536)
def key(sentence: str) -> str | None:
    """What a sentence says, comparable across sections: its words, lowercase, without a leading
    speaker, date or bullet and without a trailing date note; None when it has fewer than five words."""
    words = _WORD.findall(_DATE_NOTE.sub("", _LEAD.sub("", sentence, count=1)).lower().replace("’", "'"))
    return " ".join(words) if len(words) >= MIN_WORDS else None


@lru_cache(maxsize=65_536)
def keys(text: str) -> frozenset[str]:
    """The `key`s of a text's sentences of five words or more (cached: turns recur across calls)."""
    return frozenset(k for k in map(key, sentences(text)) if k)


def strip_said(text: str, said: set[str]) -> str:
    """`text` without the sentences whose words `said` holds; what it keeps is added to `said`.
    Lines keep their breaks; a line left empty goes."""
    lines: list[str] = []
    for line in text.split("\n"):
        parts = sentences(line)
        kept: list[str] = []
        for sentence in parts:
            k = key(sentence)
            if k is not None and k in said:
                continue
            if k is not None:
                said.add(k)
            kept.append(sentence)
        if len(kept) == len(parts):
            lines.append(line)  # nothing left out: the line as it was written
        elif kept:
            lines.append(" ".join(kept))
    return "\n".join(lines)


ELIDED = "…"


def elide_said(text: str, said: set[str]) -> str:
    """`text` with "…" for each run of sentences whose words `said` holds, or an earlier sentence
    of `text` says; its own sentences are then added to `said`. For a turn quoted as evidence:
    the reader sees that something was left out. A text with nothing said already comes back as
    it was."""
    if not keys(text) & said and _distinct(text):
        said.update(keys(text))
        return text
    seen: set[str] = set()
    lines: list[str] = []
    for line in text.split("\n"):
        parts, kept, cut = sentences(line), [], False
        for sentence in parts:
            k = key(sentence)
            if k is not None and (k in said or k in seen):
                if kept[-1:] != [ELIDED]:
                    kept.append(ELIDED)
                cut = True
                continue
            if k is not None:
                seen.add(k)
            kept.append(sentence)
        lines.append(" ".join(kept) if cut else line)
    said.update(seen)
    return "\n".join(lines)


@lru_cache(maxsize=65_536)
def _distinct(text: str) -> bool:
    """Whether no sentence of five words or more says what another of `text` says."""
    return len(keys(text)) == sum(1 for k in map(key, sentences(text)) if k)


def memories_once(memories: Sequence[Memory], chosen: Collection[UUID], said: Collection[str]) -> list[Memory] | None:
    """The `chosen` memories (ids of the turns and summaries a memory section shows) with each
    sentence of five words or more once: in rank order, a memory's hit before its partners, each
    turn is `elide_said` of what `said` (the recent turns') or a turn before it already says, and a
    turn left with nothing of its own goes (another turn says all of it, and is cited). The
    turns that stay are cited whole or with their "…", so the reader sees that something was
    left out. A chat user's requests share their openings ("I'm looking for some book
    recommendations."): the second such turn is quoted from "…" on. None when nothing repeats
    (the section stands as it is)."""
    # Ids as the UUIDs' ints: asked of every turn of every memory, and UUID.__hash__ is Python code.
    chosen = {i.int for i in chosen}
    said = set(said)  # grows with each turn's sentences, in rank order
    texts: dict[int, str] = {}
    picked, changed = [], False
    for memory in memories:
        whole = memory.kind != "message" and memory.id.int in chosen
        shown = [f for f in memory.fragments if whole or f.id.int in chosen]
        if not shown:
            continue
        for fragment in sorted(shown, key=lambda f: f.id != memory.id):  # the hit before its partners
            if fragment.id.int not in texts:
                texts[fragment.id.int] = text = elide_said(fragment.text, said)
                changed = changed or text != fragment.text
        picked.append((memory, shown))
    if not changed:
        return None
    out = []
    for memory, shown in picked:
        kept = tuple(f if texts[f.id.int] == f.text else replace(f, text=texts[f.id.int])
                     for f in shown if _WORD.search(texts[f.id.int]))
        if kept:
            out.append(replace(memory, fragments=kept))
    return out


def sentence_tally(messages: Sequence[Mapping[str, str]] | Iterable[str]) -> tuple[int, int]:
    """How many times a sentence of five words or more recurs in the context (0: each said once),
    and how many such sentences it holds, repeats included."""
    texts = [m if isinstance(m, str) else m["content"] for m in messages]
    counts = Counter(k for text in texts for k in map(key, sentences(text)) if k)
    return sum(n - 1 for n in counts.values() if n > 1), sum(counts.values())


def repeated_sentences(messages: Sequence[Mapping[str, str]] | Iterable[str]) -> int:
    """How many times a sentence of five words or more recurs in the context (0: each said once)."""
    return sentence_tally(messages)[0]
