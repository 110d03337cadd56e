"""Sentences, words and surface cues: the text analysis summaries and boards are built from.

Owns: splitting sources into attributed sentence units (with the day they were said), word
terms for TF-IDF, the cue detectors (names, numbers, dates, facts, preferences and corrections,
plans, small talk) and the date header format "[8 May 2023 – 25 May 2023]". Pure functions over
strings: no token counting, no ranking, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Iterator, Sequence

from memctx.summarize.types import SourceText
from memctx.words import STOPWORDS, WORD, split_sentences, words

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# A sentence piece longer than this many words (or CJK characters) is split at clauses.
MAX_UNIT_WORDS = 40

SMALL_TALK = frozenset("""
hi hey hello hiya yo bye goodbye cya thanks thank thx ty welcome lol lmao haha hahaha hehe wow
cool nice great awesome amazing good fine sure ok okay yeah yep yup nope no yes oh ah hmm um uh
congrats congratulations glad happy love totally absolutely definitely indeed agreed right
true exactly same morning night evening afternoon see soon later care too so much very really
that's sounds fun beautiful lovely sweet interesting fantastic wonderful incredible
""".split())
GREETINGS = frozenset("hi hey hello thanks thank bye congrats congratulations dear wow oh".split())
SMALL_TALK_PHRASES = re.compile(
    r"\b(?:good|nice|great) to (?:see|hear from|meet) you\b|\bhow (?:are|have) you(?: been)?\b|"
    r"\bwhat'?s up\b|\btake care\b|\btalk (?:to you )?(?:soon|later)\b|\bsee you\b|"
    r"\bhave a (?:good|nice|great) (?:day|night|one|time)\b|\bthat'?s (?:so )?(?:cool|great|awesome)\b",
    re.IGNORECASE,
)
# Capitalized words that are not names.
NOT_NAMES = frozenset("""
I I'm I'll I've I'd Im Ive OK Ok Okay LOL Lol OMG Omg BTW Btw TBH Tbh Mr Mrs Ms Dr Prof
Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun
""".split()) | frozenset(MONTHS) | frozenset(WEEKDAYS)

_CLAUSE = re.compile(r"(?<=[,;:，、；：])\s*|\s+[–—-]\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_NUMBER = re.compile(
    r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
    r"fifty|hundred|thousand|million|billion|dozen)\b",
    re.IGNORECASE,
)
# The people someone calls "my …" (a pattern: "best friend", "little sister", "coworkers"): a name
# after one is a person, and a fact about the speaker's life.
RELATIONS = (r"(?:best\s+|old\s+|new\s+|little\s+|big\s+)?(?:friend|sister|brother|mom|mother|dad|father|son|"
             r"daughter|wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|cousin|aunt|uncle|grandma|grandmother|"
             r"grandpa|grandfather|boss|coworker|colleague|neighbou?r|kid|child|niece|nephew|roommate|teacher|mentor|"
             r"therapist|doctor|buddy|pal)")
_MONTHS_BUT_MAY = [m for m in MONTHS if m != "May"]
_ABSOLUTE_DATE = re.compile(
    r"\b(?:" + "|".join(_MONTHS_BUT_MAY + list(WEEKDAYS)) + r")\b"
    r"|\b(?:in|on|of|since|until|by|early|late|mid|last|next|this)\s+May\b|\bMay\s+\d"
    r"|\b(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?\s+\d|\b(?:1[89]|20)\d\d\b",
)
_RELATIVE_DATE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|weekend|ago)\b"
    r"|\b(?:last|next|this|coming|past)\s+(?:week|month|year|summer|winter|spring|fall|autumn|night|weekend)\b",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\bI\s+(?:really\s+|much\s+|strongly\s+)?prefer\b|\bI\s+(?:really\s+)?(?:don'?t|do\s+not|can'?t|cannot)\s+"
    r"(?:really\s+)?(?:like|stand|eat|drink|want|do)\b|\bI\s+(?:hate|dislike)\b|\bI'?d\s+rather\b|"
    r"\bI\s+would\s+rather\b|\bplease\s+(?:don'?t|do\s+not|never|always|stop|avoid|use|call)\b|"
    r"\bfrom\s+now\s+on\b|\binstead\s+of\b|\bI(?:'m|\s+am)\s+(?:allergic|vegan|vegetarian)\b|"
    r"\bcall\s+me\b",
    re.IGNORECASE,
)
# "Always/never" make a standing rule only as an instruction ("Never call me Bob.") or a
# first-person habit ("I never eat meat", "I'd never fly"), not in "I'll never forget that day".
_ALWAYS_NEVER = re.compile(
    r"^\s*(?:please\s+)?(?:always|never)\b|\b(?:I|we)\s+(?:always|never)\b(?!\s+(?:forget|remember))"
    r"|\b(?:I'd|I\s+would|I\s+will|I'll|we'll|we\s+will)\s+never\b(?!\s+(?:forget|remember))",
    re.IGNORECASE,
)
CORRECTION = re.compile(
    r"(?:^|[.!?]\s+)actually\b|\bactually,|\bI\s+meant\b|\bcorrection\b|\bto\s+clarify\b|"
    r"\bnot\s+[\w'’-]+(?:\s+[\w'’-]+){0,3},?\s+but\b|\bthat'?s\s+(?:not\s+right|wrong)\b|"
    r"\bI\s+misspoke\b|\b(?:no|sorry),\s+(?:it'?s|it\s+is|I\s+said)\b",
    re.IGNORECASE,
)
FACT = re.compile(
    r"\bmy\s+(?:[\w'’-]+\s+){0,2}(?:is|are|was|were|lives?|works?)\b|"
    r"\bI\s+(?:work(?:ed)?|live[ds]?|lived|moved|grew\s+up|was\s+born|stud(?:y|ied)|teach|taught|own|"
    r"bought|adopted|joined|started|graduated|married|visited|signed\s+up|volunteer(?:ed)?)\b|"
    r"\bI\s+(?:have|had)\s+(?:a|an|two|three|four|five|\d+)\b|"
    r"\bI(?:'m|\s+am)\s+(?:a|an|from|married|engaged|divorced|single|pregnant|retired|\d+)\b",
    re.IGNORECASE,
)
ACTION = re.compile(
    r"\bI\s+will\b|\bI'll\b(?!\s+(?:never|always))|^\s*(?:please\s+)?remind\s+me\b|\bremind\s+me\s+to\b|"
    r"\bto-?do\b|\b(?:don'?t|do\s+not)\s+forget\b|\b(?:I|we)\s+(?:really\s+|still\s+|just\s+)?need\s+to\b|"
    r"\blet's\b|\b(?:I'm|I\s+am|we're|we\s+are)\s+(?:going\s+to|gonna)\b|\bI\s+plan\s+to\b|"
    r"\bI'm\s+planning\s+to\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Unit:
    """One sentence (or clause of a long one) and who said it, with its source and day."""

    text: str
    speaker: str | None
    source: int
    day: date | None

    @property
    def line(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


# Dates ---------------------------------------------------------------------------------------

def format_day(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def format_span(first: date, last: date) -> str:
    """The header that opens a summary: "[8 May 2023]" or "[8 May 2023 – 25 May 2023]"."""
    if first == last:
        return f"[{format_day(first)}]"
    return f"[{format_day(first)} – {format_day(last)}]"


_DAY_TEXT = r"(\d{1,2}) (" + "|".join(MONTHS) + r") (\d{4})"
_SPAN_LINE = re.compile(r"^\[" + _DAY_TEXT + r"(?: – " + _DAY_TEXT + r")?\]$")


def parse_span(line: str) -> tuple[date, date] | None:
    """The (first, last) days of a header line written by `format_span`, else None."""
    m = _SPAN_LINE.match(line.strip())
    if not m:
        return None
    try:
        first = date(int(m[3]), MONTHS.index(m[2]) + 1, int(m[1]))
        last = date(int(m[6]), MONTHS.index(m[5]) + 1, int(m[4])) if m[4] else first
    except ValueError:
        return None
    return first, last


# Sentence units ------------------------------------------------------------------------------

def unit_size(text: str) -> int:
    """Length in words, counting each CJK character as a word."""
    return max(len(text.split()), len(_CJK.findall(text)), len(text) // 12)


def _windows(text: str, limit: int) -> list[str]:
    words = text.split()
    if len(words) > 1 and not _CJK.search(text):
        return [" ".join(words[i: i + limit]) for i in range(0, len(words), limit)]
    step = max(1, len(text) * limit // max(unit_size(text), 1))
    return [text[i: i + step].strip() for i in range(0, len(text), step) if text[i: i + step].strip()]


def split_long(sentence: str, limit: int = MAX_UNIT_WORDS) -> list[str]:
    """Split a sentence longer than `limit` words at clause marks, then into word windows."""
    if unit_size(sentence) <= limit:
        return [sentence]
    pieces: list[str] = []
    current = ""
    for clause in (c for c in _CLAUSE.split(sentence) if c and c.strip()):
        joiner = "" if _CJK.search(current[-1:]) or current.endswith(("，", "、", "；", "：")) else " "
        joined = f"{current}{joiner}{clause}".strip() if current else clause.strip()
        if unit_size(joined) <= limit:
            current = joined
            continue
        if current:
            pieces.append(current)
        if unit_size(clause) <= limit:
            current = clause.strip()
        else:
            pieces.extend(_windows(clause.strip(), limit))
            current = ""
    if current:
        pieces.append(current)
    return pieces


_SPEAKER_LINE = re.compile(r"^([^\s:\[\]][^:\n\[\]]{0,40}?): (\S.*)$")


def _summary_units(source: SourceText, index: int) -> Iterator[Unit]:
    """Units of a summary: its header and day markers set the day; "Name: …" lines keep Name."""
    day = source.created_at.date() if source.created_at else None
    for line in (ln.strip() for ln in source.text.splitlines()):
        if not line:
            continue
        span = parse_span(line)
        if span is not None:
            day = span[0] if span[0] == span[1] else None
            continue
        m = _SPEAKER_LINE.match(line)
        speaker, body = (m[1], m[2]) if m else (None, line)
        for sentence in split_sentences(body):
            for piece in split_long(sentence):
                yield Unit(piece, speaker, index, day)


def units_of(sources: Sequence[SourceText]) -> list[Unit]:
    """All sentence units of `sources`, in order; messages are attributed to their speaker."""
    units: list[Unit] = []
    for index, source in enumerate(sources):
        if source.kind == "summary":
            units.extend(_summary_units(source, index))
            continue
        day = source.created_at.date() if source.created_at else None
        for sentence in split_sentences(source.text):
            units.extend(Unit(p, source.who, index, day) for p in split_long(sentence))
    return units


def source_days(sources: Sequence[SourceText]) -> list[date]:
    """Every day the sources speak of: message dates and summary headers and day markers."""
    days: list[date] = []
    for source in sources:
        found = False
        if source.kind == "summary":
            for line in source.text.splitlines():
                span = parse_span(line)
                if span is not None:
                    days.extend(span)
                    found = True
        if not found and source.created_at is not None:
            days.append(source.created_at.date())
    return days


# Words and cues ------------------------------------------------------------------------------

@lru_cache(maxsize=32768)
def terms(text: str) -> tuple[str, ...]:
    """Lowercased content terms for TF-IDF: stopwords dropped, CJK runs as character bigrams."""
    out: list[str] = []
    for word in words(text.lower()):
        if _CJK.search(word):
            out.extend(word[i: i + 2] for i in range(max(len(word) - 1, 1)))
        elif word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            out.append(word)
    return tuple(out)


def names(sentence: str) -> list[str]:
    """Capitalized words that are probably names: not sentence-initial, not "I", not a
    month or weekday, and not a vocative ("Thanks, Mel!", "Hey Caroline!")."""
    found: list[str] = []
    tokens = list(WORD.finditer(sentence.replace("’", "'")))
    for i, m in enumerate(tokens):
        word = m.group()
        if i == 0 or len(word) < 2 or not word[0].isupper() or word in NOT_NAMES:
            continue
        if word.lower() in STOPWORDS or word.lower() in SMALL_TALK:  # "Yeah, Here's one", "so, Wow"
            continue
        before = sentence[: m.start()].rstrip()
        after = sentence[m.end(): m.end() + 1]
        prev = tokens[i - 1].group().lower()
        vocative = (before.endswith(",") or prev in GREETINGS) and after in "!?.,;"
        if not vocative:
            found.append(word)
    return found


def has_number(sentence: str) -> bool:
    return bool(_NUMBER.search(sentence))


def has_absolute_date(sentence: str) -> bool:
    """A month, weekday or year ("in May", "on Friday", "in 2019")."""
    return bool(_ABSOLUTE_DATE.search(sentence))


def has_date(sentence: str) -> bool:
    """An absolute date or a relative one ("yesterday", "last week")."""
    return has_absolute_date(sentence) or bool(_RELATIVE_DATE.search(sentence))


def is_explicit_preference(sentence: str) -> bool:
    """A preference or standing instruction stated outright ("I prefer", "please don't")."""
    return bool(PREFERENCE.search(sentence))


def is_preference(sentence: str) -> bool:
    """An explicit preference, or "always"/"never" as an instruction or first-person habit."""
    if is_explicit_preference(sentence):
        return True
    return bool(_ALWAYS_NEVER.search(sentence))


def is_correction(sentence: str) -> bool:
    return bool(CORRECTION.search(sentence))


def is_constraint(sentence: str) -> bool:
    """A stated preference or a correction: what later summaries must not lose."""
    return is_preference(sentence) or is_correction(sentence)


def is_fact(sentence: str) -> bool:
    return bool(FACT.search(sentence.replace("’", "'")))


def is_action(sentence: str) -> bool:
    return not is_question(sentence) and bool(ACTION.search(sentence.replace("’", "'")))


def is_question(sentence: str) -> bool:
    return sentence.rstrip(" \"'”’)]»」』").endswith(("?", "？"))


def is_small_talk(sentence: str) -> bool:
    """Greetings, thanks and interjections that carry no fact ("Thanks!", "lol ok", "Hey Mel!")."""
    stripped = SMALL_TALK_PHRASES.sub(" ", sentence.replace("’", "'"))
    tokens = words(stripped)
    content = [w for w in tokens if w.lower() not in SMALL_TALK and w.lower() not in STOPWORDS]
    if not content:
        return True
    if has_number(sentence) or _CJK.search(sentence):
        return False
    # "Hey Caroline!" / "Thanks, Mel!": a greeting plus only the name of the person addressed.
    return (len(content) == 1 and len(tokens) <= 4 and content[0][0].isupper()
            and tokens[0].lower() in GREETINGS)


@dataclass(frozen=True)
class Cues:
    """Everything the ranking and the board rules ask of one sentence, computed once."""

    names: int
    number: bool
    date: bool
    absolute_date: bool
    constraint: bool
    explicit_constraint: bool
    fact: bool
    action: bool
    question: bool
    small_talk: bool
    size: int


@lru_cache(maxsize=32768)
def cues(sentence: str) -> Cues:
    """The cues of a sentence. Cached: a sentence is read again at every summary level."""
    text = sentence.replace("’", "'")
    return Cues(names=len(set(names(text))), number=has_number(text), date=has_date(text),
                absolute_date=has_absolute_date(text),
                constraint=is_constraint(text),
                explicit_constraint=is_explicit_preference(text) or is_correction(text),
                fact=is_fact(text), action=is_action(text),
                question=is_question(text), small_talk=is_small_talk(text), size=unit_size(text))
