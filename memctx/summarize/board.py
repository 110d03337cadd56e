"""The summary board, updated by transparent rules: previous board + new messages → new board.

Owns: the rules below and `board_from_fields`, which applies the same invariants (caps,
dedup, constraints never lost, counts, seq bookkeeping) to a board an LLM proposed. It must not
call a model or the database.

Every item is a `BoardItem` citing the messages it came from (a repeat adds its message, the
newest `SOURCES_KEPT` kept); the caps are those of `SECTIONS`. Which sentence is a fact, an
action item, a constraint or a question is `memctx.summarize.detect`'s call.

Rules, applied to the new messages in seq order:
- Messages at or before `board.last_seq` are skipped, so a retried update changes nothing.
- What people said is read (`said`): system prompts are not, nor a tool call's arguments (a
  tool's result is); the messages count as consumed all the same.
- summary: the extractive summary of (the previous board summary + the new messages) within
  `max_tokens`.
- key_facts: one per message, from its first key-fact sentence (`detect.is_key_fact`: something
  the speaker did, has or is, with a fact cue; never cheering, thanks, advice or a wish), cut to
  its fact clause (`detect.fact_clause`), grouped under its speaker (who is named once per
  group, not on every line) and weighted by the message's number of key-fact sentences.
  Deduplicated; over the cap of 30 the lightest go first, oldest first.
- entities: runs of capitalized words ("New York", "University of Michigan"), not a
  sentence-initial common word, not "I", months or weekdays. Classified by the first cue that
  applies: a speaker → people; an organization word (Inc, Corp, University, Bank, Club …) →
  organizations; a place word (City, Street, Lake …) or a gazetteer place → places; someone
  addressed by name ("Hey Mel!") or after a title (Dr, Mrs, Aunt …) → people; "work at/for X",
  "joined X" → organizations; "my friend/sister/… X", "named X", "name is X", "X said" →
  people; "in/near/visited X", "am/is/come from X", or "to X" after a movement verb (went,
  moved, flew …) → places; else other. An entity first seen as other moves when a later
  mention gives it a class. Mentions are counted; each kind lists its 50 most mentioned (ties
  by name); the speakers of the new messages are always listed among people.
- topics: lowercase content words (3+ letters, no stopwords, chat filler or names) and
  adjacent pairs of them, counted over the whole conversation; pairs seen twice or more weigh
  1.5×; the 10 heaviest are listed, words inside a listed pair left out.
- action_items: sentences with an actor and a concrete act (`detect.is_action`); deduplicated,
  the 20 newest kept.
- pending_questions: a question (`detect.is_question`: ends in "?", not a greeting or a tag
  question). It stays pending until a later
  message from a different speaker (speaker name, else role) arrives; later messages from the
  same speaker do not answer it. Answered questions leave the list; the 20 newest are kept.
- constraints: stated preferences, rules and corrections (`detect.is_constraint`). Kept across
  updates, never dropped by a later update but for the 50-item cap (oldest first) and corrections.
- corrections win: a correction ("actually I'm vegetarian now", "no, the budget is 2,000")
  removes the earlier fact, action item or constraint of the same person it corrects (the one
  sharing most of its words or their slot, `supersede`); the correction is kept.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence
from uuid import UUID

from memctx.summarize import detect
from memctx.summarize.ranking import extract_summary
from memctx.summarize.text import NOT_NAMES, RELATIONS, SMALL_TALK, STOPWORDS, Unit, units_of
from memctx.summarize.types import (ENTITY_KINDS, SECTION, SECTIONS, Board, BoardItem, ItemSource, SourceText,
                                    unprefixed)
from memctx.tokens import TokenCounter
from memctx.words import words

SOURCES_KEPT = 5  # the newest messages an item cites
TOPIC_TERMS_KEPT = 300

# A word of a name, unlike `memctx.words.WORD`: it keeps "&" and "-" ("AT&T", "Jean-Luc") and never
# starts with a digit, so that a run of capitalized words is a name as written.
_TOKEN = re.compile(r"[^\W\d_][\w'’&-]*")
_CONNECTORS = frozenset("of the de del da das do dos di du van von la le".split())
_STARTERS = STOPWORDS | SMALL_TALK | frozenset("""
yesterday today tomorrow tonight last next maybe also anyway btw honestly actually luckily sadly
unfortunately fortunately recently lately finally now after before during since although though
still even sounds omg aww yay sorry please guess wish hope speaking woohoo whoa hooray ooh ahh
yay yup nah
""".split())
ORG_WORDS = frozenset("""
inc corp corporation ltd llc co company university college school academy institute foundation
bank group association club society agency hospital clinic church labs studio studios records
press airlines ministry department council committee union team center centre org nonprofit
""".split())
PLACE_WORDS = frozenset("""
city town village street st avenue ave road rd boulevard blvd park lake river mountain mountains
mount mt beach island islands county state bay valley canyon falls bridge square harbor harbour
coast forest desert sea ocean kingdom republic museum cafe café restaurant mall airport station
library zoo garden gardens hill hills peninsula province district trail palace castle cathedral tower market
""".split())
KNOWN_PLACES = frozenset("""
America USA US UK England Scotland Ireland Wales Britain Canada Mexico Brazil Argentina Chile Peru
France Paris Germany Berlin Italy Rome Spain Madrid Barcelona Portugal Lisbon Netherlands Amsterdam
Belgium Switzerland Austria Vienna Sweden Stockholm Norway Oslo Denmark Finland Poland Greece
Athens Turkey Istanbul Russia Moscow Ukraine Kyiv Israel Egypt Morocco Kenya Nigeria India Delhi
Mumbai China Beijing Shanghai Japan Tokyo Kyoto Korea Seoul Thailand Bangkok Vietnam Singapore
Indonesia Bali Philippines Australia Sydney Melbourne Zealand Hawaii Alaska California Texas
Florida York Boston Chicago Seattle Portland Denver Austin Miami Atlanta Philadelphia Vegas
Angeles Francisco Washington Oregon Colorado Arizona Nevada Utah Michigan Ohio Georgia Virginia
Carolina London Dublin Toronto Vancouver Montreal Europe Asia Africa Caribbean
""".split())
TITLES = re.compile(r"\b(?:mr|mrs|ms|miss|mx|dr|prof|professor|aunt|uncle|grandma|grandpa|sir)\.?$",
                    re.IGNORECASE)
PERSON_BEFORE = re.compile(
    rf"\b(?:my|his|her|our|their|your)\s+{RELATIONS}s?,?$|\bnamed$|"
    r"\b(?:name\s+is|name's)$",
    re.IGNORECASE,
)
PERSON_AFTER = re.compile(r"^(?:'s)?\s+(?:said|says|told|asked|texted|called|thinks|thought|and\s+I)\b",
                          re.IGNORECASE)
ORG_BEFORE = re.compile(r"\b(?:work(?:s|ed|ing)?\s+(?:at|for)|employed\s+by|joined|intern(?:ing)?\s+at|"
                        r"job\s+at|hired\s+by)$", re.IGNORECASE)
PLACE_BEFORE = re.compile(
    r"\b(?:in|near|visit(?:ed|ing)?|(?:am|'m|is|are|was|were|come|comes|came|coming)\s+from|(?:went|go(?:es|ing)?|gone|moved?|moving|travel(?:l?ed|l?ing)?|"
    r"trip|drove|drive|driving|flew|fly(?:ing)?|headed|back|returned?|relocated?|road\s+trip)\s+(?:back\s+)?to)$",
    re.IGNORECASE,
)
TOPIC_FILLER = frozenset("""
feel feels felt feeling think thought know knew want wanted need needs see saw seen say said tell told
look looks looked looking take took made make makes let lot lots time times day days bit little
pretty super stuff always never ever maybe guess hope hoping mean means keep come came hear heard
excited glad happy cool amazing awesome great good nice love loved loving lovely fun wow thanks thank
sounds sound everyone someone anyone people person year years week weeks month months today
yesterday tomorrow new old big small best better right sure totally definitely probably actually
literally especially hey hello wonderful beautiful incredible fantastic things thing way ways
trying tried try doing done work hard can't also awesome else enough kind sort
image images photo photos picture pictures pic pics last first every please important special
making tough together difference help helps helped helping proud inspiring impact means meaning least
""".split())


# Generic list handling -----------------------------------------------------------------------

def _key(line: str) -> str:
    return " ".join(words(line.lower()))


def join_sources(old: Iterable[ItemSource], new: Iterable[ItemSource]) -> tuple[ItemSource, ...]:
    """`old` then `new`, each message once, the newest `SOURCES_KEPT` kept."""
    out: dict[UUID, ItemSource] = {}
    for source in (*old, *new):
        out.pop(source.id, None)
        out[source.id] = source
    return tuple(out.values())[-SOURCES_KEPT:]


def merge_recent(old: Iterable[BoardItem], new: Iterable[BoardItem], cap: int) -> tuple[BoardItem, ...]:
    """`old` then `new`, deduplicated (a repeat moves to the newest position and adds its sources;
    an edited item stays edited); over `cap`, the lightest items go first, oldest first (all
    weights equal: the newest `cap` are kept)."""
    out: dict[tuple[str | None, str], BoardItem] = {}
    for item in (*old, *new):
        key = (item.group, _key(item.text))
        if not key[1]:
            continue
        before = out.pop(key, None)
        if before is not None:
            item = replace(before, sources=join_sources(before.sources, item.sources),
                           weight=max(before.weight, item.weight))
        out[key] = replace(item, text=item.text.strip())
    items = list(out.values())
    kept = set(sorted(range(len(items)), key=lambda i: (items[i].weight, i))[max(0, len(items) - cap):])
    return tuple(item for i, item in enumerate(items) if i in kept)


def _fresh(board: Board, new_messages: Sequence[SourceText]) -> list[SourceText]:
    return sorted((m for m in new_messages if m.last_seq > board.last_seq), key=lambda m: m.first_seq)


# A tool call as `memctx.models.text_from_blocks` writes it: one line of its own.
_TOOL_CALL_LINE = re.compile(r"^\[tool call .*\]$", re.MULTILINE)


def said(messages: Sequence[SourceText]) -> list[SourceText]:
    """What the board reads of `messages`: what people said, and tools' results. A system prompt is
    an instruction to the model, not part of the conversation, and a tool call's arguments are
    data for a program (their JSON made entities of "Ask the Graça" and topics of its keys)."""
    out: list[SourceText] = []
    for message in messages:
        if message.role == "system":
            continue
        text = _TOOL_CALL_LINE.sub("", message.text).strip() if "[tool call " in message.text else message.text
        if text:
            out.append(message if text == message.text else replace(message, text=text))
    return out


def _item(unit: Unit, sources: Sequence[SourceText]) -> BoardItem:
    """A board line for `unit` ("Speaker: sentence"), sourced to its message."""
    return BoardItem(unit.line, (ItemSource.of(sources[unit.source]),), unit.speaker)


# Facts, actions, constraints, questions --------------------------------------------------------

def key_facts_of(units: Sequence[Unit], sources: Sequence[SourceText]) -> list[BoardItem]:
    """One fact per message: the fact clause of its first key-fact sentence, weighted by how many
    key-fact sentences the message has."""
    by_message: dict[int, list[Unit]] = {}
    for unit in units:
        if detect.is_key_fact(unit.text):
            by_message.setdefault(unit.source, []).append(unit)
    return [BoardItem(detect.fact_clause(found[0].text), (ItemSource.of(sources[found[0].source]),), found[0].speaker,
                      weight=len(found)) for found in by_message.values()]


def action_items_of(units: Sequence[Unit], sources: Sequence[SourceText]) -> list[BoardItem]:
    return [_item(u, sources) for u in units if detect.is_action(u.text)]


def constraints_of(units: Sequence[Unit], sources: Sequence[SourceText]) -> list[BoardItem]:
    return [_item(u, sources) for u in units if detect.is_constraint(u.text)]


def _asker(item: BoardItem) -> str | None:
    if item.group:
        return item.group
    head, sep, _ = item.text.partition(": ")
    return head if sep and len(head) <= 60 else None


def pending_after(previous: Sequence[BoardItem], messages: Sequence[SourceText],
                  units: Sequence[Unit]) -> tuple[BoardItem, ...]:
    """Questions still unanswered after `messages`, whose units are `units` (see the rule in the
    module docstring)."""
    asked: dict[int, list[BoardItem]] = {}
    for unit in units:
        if detect.is_question(unit.text):
            asked.setdefault(unit.source, []).append(_item(unit, messages))
    pending = [(_asker(q), q) for q in previous]
    for index, message in enumerate(messages):
        speaker = message.who
        pending = [(who, q) for who, q in pending if who is not None and who == speaker]
        pending.extend((speaker, q) for q in asked.get(index, ()))
    return merge_recent([], [q for _, q in pending], SECTION["pending_questions"].cap)


# Corrections -----------------------------------------------------------------------------------

# Words that name the same slot of what someone says ("vegetarian" now, "pescatarian" before).
_SLOTS = {word: slot for slot, listed in {
    "diet": "vegetarian vegan pescatarian meat fish eat eating diet omnivore keto gluten dairy",
    "money": "budget price cost costs spend spending euros dollars pounds",
    "when": "monday tuesday wednesday thursday friday saturday sunday morning afternoon evening night am pm",
}.items() for word in listed.split()}
_CORRECTION_WORDS = frozenset("actually no nope sorry meant correction now instead anymore longer mean wait "
                              "scratch oops wrong right said".split())


def _slots(item: BoardItem) -> set[str]:
    """The words of what an item says (who said it left out), a slot standing for its words."""
    return said_slots(unprefixed(item).text)


def said_slots(text: str) -> set[str]:
    """The words of a sentence that say what it is about, a slot standing for its words (the
    context applies the same rule to the sentences it would show)."""
    said = set(words(text.lower()))
    return {_SLOTS.get(w, w) for w in said if w not in STOPWORDS and w not in _CORRECTION_WORDS and len(w) > 2}


def supersede(old: Mapping[str, Sequence[BoardItem]], new: Mapping[str, Sequence[BoardItem]],
              order: Sequence[SourceText]) -> tuple[dict[str, list[BoardItem]], dict[str, list[BoardItem]]]:
    """`old` and `new` without what the corrections among `new` replace: for each correction, the
    earlier item of the same person (on the board, or said before it in `order`) that shares the
    most of its words or their slot (a diet, an amount, a day), in any section, if it shares
    one. The correction itself is kept."""
    said = {m.id: i for i, m in enumerate(order)}

    def when(item: BoardItem) -> int:
        return max((said.get(s.id, -1) for s in item.sources), default=-1)

    lists = {"old": {n: list(v) for n, v in old.items()}, "new": {n: list(v) for n, v in new.items()}}
    for correction in [i for section in new.values() for i in section]:
        if not detect.is_correction(unprefixed(correction).text):
            continue
        wanted, at = _slots(correction), when(correction)
        candidates = [(len(wanted & _slots(item)), side, name, k)
                      for side, sections in lists.items() for name, section in sections.items()
                      for k, item in enumerate(section)
                      if item.group == correction.group and when(item) < at and _key(item.text) != _key(correction.text)]
        overlap, side, name, k = max(candidates, default=(0, "", "", 0))
        if overlap:
            del lists[side][name][k]
    return lists["old"], lists["new"]


# Entities ------------------------------------------------------------------------------------

def _capitalized(word: str) -> bool:
    return word[0].isupper() and word not in NOT_NAMES and re.sub(r"['’]s$", "", word) not in NOT_NAMES


def _extend(sentence: str, tokens: Sequence[re.Match[str]], j: int) -> int | None:
    """The index a run ending at token j extends to: the next capitalized word, possibly across
    one or two connectors ("Bank of America", "Lord of the Rings"); None when it ends."""
    k = j + 1
    while k < len(tokens) and sentence[tokens[k - 1].end(): tokens[k].start()] == " ":
        word = tokens[k].group()
        if _capitalized(word):
            return k
        if word.lower() not in _CONNECTORS or k - j > 2:
            return None
        k += 1
    return None


@lru_cache(maxsize=16384)
def _runs(sentence: str) -> tuple[tuple[int, int], ...]:
    """(start, end) character spans of runs of capitalized words joined by single spaces."""
    tokens = list(_TOKEN.finditer(sentence))
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not _capitalized(tokens[i].group()):
            i += 1
            continue
        j = i
        while (step := _extend(sentence, tokens, j)) is not None:
            j = step
        start = tokens[i].start()
        first = tokens[i].group().lower()
        if i == 0 and (first in _STARTERS or first.endswith(("ing", "ed", "ly"))):
            start = tokens[i + 1].start() if j > i else -1
            if j > i + 1 and tokens[i + 1].group().lower() in _CONNECTORS:
                start = tokens[i + 2].start()
        if start >= 0:
            spans.append((start, tokens[j].end()))
        i = j + 1
    return tuple(spans)


def _clean_name(name: str) -> str:
    return re.sub(r"['’]s$", "", name).strip(" -&'’")


def classify(name: str, sentence: str, start: int, end: int, speakers: set[str]) -> str:
    """The entity kind a mention's cues give (the first rule of the module docstring that applies)."""
    parts = name.split()
    lower = [p.lower() for p in parts]
    before = sentence[:start].rstrip()
    after = sentence[end:]
    first_names = {s.split()[0] for s in speakers if s.split()}
    if name in speakers or parts[0] in first_names:
        return "people"
    if lower[-1] in ORG_WORDS or lower[0] in {"university", "bank", "college", "school", "institute"}:
        return "organizations"
    if any(p in PLACE_WORDS for p in lower) or any(p in KNOWN_PLACES for p in parts):
        return "places"
    if _vocative(before, after):
        return "people"
    if TITLES.search(before):
        return "people"
    if ORG_BEFORE.search(before):
        return "organizations"
    if PERSON_BEFORE.search(before) or PERSON_AFTER.search(after):
        return "people"
    if PLACE_BEFORE.search(before):
        return "places"
    return "other"


def _vocative(before: str, after: str) -> bool:
    """Someone addressed by name: "Hey Mel!", "Thanks, Caroline.", "That's great, Mel!"."""
    greeted = re.search(r"\b(?:hi|hey|hello|thanks|thank\s+you|bye|congrats|dear)[,!]?$", before, re.IGNORECASE)
    if greeted:
        return after[:1] in ("!", "?", ".", ",", "")
    return before.endswith(",") and after.strip()[:1] in ("!", "?", "")


def mentions(units: Sequence[Unit], known: set[str], speakers: set[str]) -> list[tuple[str, str, Unit]]:
    """(entity, kind, unit) for each mention in `units`; `known` entities may start a sentence."""
    found: list[tuple[str, str, Unit]] = []
    for unit in units:
        text = unit.text.replace("’", "'")
        for start, end in _runs(text):
            name = _clean_name(text[start:end])
            if len(name) < 2 or name.lower() in _STARTERS or (start == 0 and " " not in name
                                 and name not in known and name not in speakers and name not in KNOWN_PLACES):
                continue
            found.append((name, classify(name, text, start, end, speakers), unit))
    return found


def _entities(board: Board, units: Sequence[Unit], fresh: Sequence[SourceText],
              speakers: set[str]) -> tuple[tuple[BoardItem, ...], dict[str, int]]:
    previous = board.section("entities")
    kind_of = {i.text: i.group or "other" for i in previous}
    sources = {i.text: i.sources for i in previous}
    counts = Counter(board.entity_counts)
    for speaker in speakers:
        kind_of[speaker] = "people"
        counts[speaker] += 0
        said = next(m for m in fresh if m.who == speaker)
        sources[speaker] = sources.get(speaker) or (ItemSource.of(said),)
    mid_sentence = {_clean_name(u.text[s:e]) for u in units for s, e in _runs(u.text) if s > 0}
    for name, kind, unit in mentions(units, set(kind_of) | mid_sentence, speakers):
        counts[name] += 1
        sources[name] = join_sources(sources.get(name, ()), (ItemSource.of(fresh[unit.source]),))
        if kind_of.get(name, "other") == "other":
            kind_of[name] = kind
    return rank_entities(kind_of, counts, sources)


def rank_entities(kind_of: Mapping[str, str], counts: Mapping[str, int],
                  sources: Mapping[str, tuple[ItemSource, ...]]) -> tuple[tuple[BoardItem, ...], dict[str, int]]:
    """Each kind's most mentioned entities (ties by name), capped; counts of those kept."""
    items: list[BoardItem] = []
    for kind in ENTITY_KINDS:
        members = sorted((n for n, k in kind_of.items() if k == kind), key=lambda n: (-counts.get(n, 0), n))
        items.extend(BoardItem(n, sources.get(n, ()), kind) for n in members[:SECTION["entities"].cap])
    return tuple(items), {i.text: int(counts.get(i.text, 0)) for i in items}


# Topics --------------------------------------------------------------------------------------

def topic_terms(units: Sequence[Unit], excluded: set[str]) -> Counter[str]:
    """Content words and adjacent content-word pairs of `units` (see the module docstring)."""
    tally: Counter[str] = Counter()
    for unit in units:
        text = unit.text.replace("’", "'")
        tokens = list(_TOKEN.finditer(text))
        prev: re.Match[str] | None = None
        for i, m in enumerate(tokens):
            word = m.group()
            low = word.lower()
            content = (len(low) >= 3 and low.isalpha() and low not in STOPWORDS and low not in SMALL_TALK
                       and low not in TOPIC_FILLER and low not in excluded and (i == 0 or not word[0].isupper()))
            if not content:
                prev = None
                continue
            tally[low] += 1
            if prev is not None and text[prev.end(): m.start()] == " ":
                tally[f"{prev.group().lower()} {low}"] += 1
            prev = m
    return tally


def fold_plurals(counts: Mapping[str, int]) -> dict[str, int]:
    """Fold "books" into "book" (and "support groups" into "support group") when the singular
    has been seen too."""
    folded = dict(counts)
    for term in sorted(counts):
        singular = term[:-1]
        if term.endswith("s") and not term.endswith("ss") and singular in folded and term in folded:
            folded[singular] += folded.pop(term)
    return folded


def rank_topics(counts: Mapping[str, int]) -> tuple[list[str], dict[str, int]]:
    """The listed topics and the tallies kept for the next update."""
    def weight(term: str) -> float:
        return counts[term] * (1.5 if " " in term else 1.0)

    counts = fold_plurals(counts)
    usable = [t for t in counts if " " not in t or counts[t] >= 2]
    ranked = sorted(usable, key=lambda t: (-weight(t), t))
    shown: list[str] = []
    for term in ranked:
        if len(shown) == SECTION["topics"].cap:
            break
        if " " not in term and any(term in s.split() for s in shown if " " in s):
            continue
        if " " in term:
            shown = [s for s in shown if " " in s or s not in term.split()]
        shown.append(term)
    kept = sorted(counts, key=lambda t: (-counts[t], t))[:TOPIC_TERMS_KEPT]
    return shown, {t: int(counts[t]) for t in kept}


def _excluded_words(board: Board, speakers: set[str]) -> set[str]:
    names_seen = set(board.entity_counts) | speakers
    return {w.lower() for n in names_seen for w in n.split()}


def tally_topics(board: Board, units: Sequence[Unit], speakers: set[str]) -> tuple[list[str], dict[str, int]]:
    counts = Counter(board.topic_counts)
    counts.update(topic_terms(units, _excluded_words(board, speakers)))
    return rank_topics(counts)


def topic_items(board: Board, shown: Sequence[str], fresh: Sequence[SourceText]) -> tuple[BoardItem, ...]:
    """The listed topics, each sourced to the latest messages that use it."""
    before = {i.text: i.sources for i in board.section("topics")}
    items = []
    for term in shown:
        said = re.compile(rf"\b{re.escape(term)}", re.IGNORECASE)
        new = [ItemSource.of(m) for m in fresh if said.search(m.text)]
        items.append(BoardItem(term, join_sources(before.get(term, ()), new)))
    return tuple(items)


# The update ----------------------------------------------------------------------------------

def _previous_summary_source(board: Board) -> list[SourceText]:
    if not board.summary.strip():
        return []
    return [SourceText(id=UUID(int=0), kind="summary", role=None, speaker=None, text=board.summary,
                       first_seq=1, last_seq=max(board.last_seq, 1), level=1)]


def update_board(board: Board, new_messages: Sequence[SourceText], *, max_tokens: int,
                 counter: TokenCounter) -> Board:
    """The board after `new_messages`, by the rules in the module docstring."""
    arrived = _fresh(board, new_messages)
    if not arrived:
        return board
    fresh = said(arrived)
    consumed = {"message_count": board.message_count + len(arrived), "last_seq": max(m.last_seq for m in arrived)}
    if not fresh:
        return replace(board, **consumed)
    units = units_of(fresh)
    speakers = {m.who for m in fresh if m.speaker and m.who}
    entities, entity_counts = _entities(board, units, fresh, speakers)
    topics, topic_counts = tally_topics(board, units, speakers)
    found: Mapping[str, Sequence[BoardItem]] = {
        "key_facts": key_facts_of(units, fresh), "action_items": action_items_of(units, fresh),
        "constraints": constraints_of(units, fresh)}
    kept, found = supersede({name: board.section(name) for name in found}, found, fresh)
    items = {name: merge_recent(kept[name], new, SECTION[name].cap) for name, new in found.items()}
    return Board(
        summary=extract_summary([*_previous_summary_source(board), *fresh], max_tokens=max_tokens, counter=counter),
        items={**items, "entities": entities, "topics": topic_items(board, topics, fresh),
               "pending_questions": pending_after(board.section("pending_questions"), fresh, units)},
        **consumed,
        entity_counts=entity_counts,
        topic_counts=topic_counts,
    )


def attribute(text: str, fresh: Sequence[SourceText]) -> tuple[ItemSource, ...]:
    """The message a line written by someone else (an LLM) most likely came from: the one that
    shares the most of its content words, if it shares at least half of them; else none."""
    wanted = {w for w in words(text.lower()) if len(w) > 2 and w not in STOPWORDS}
    if not wanted:
        return ()
    overlap = [(len(wanted & set(words(m.text.lower()))), -i) for i, m in enumerate(fresh)]
    best, index = max(overlap, default=(0, 0))
    return (ItemSource.of(fresh[-index]),) if best * 2 >= len(wanted) else ()


def _proposed(previous: Board, name: str, lines: Any, fresh: Sequence[SourceText]) -> list[BoardItem]:
    """The lines an LLM proposed for a section as items: a line already on the board stays as it
    is; a new one cites the message it came from, and in a section grouped per person its
    "Name: " prefix becomes its group."""
    before = {_key(line): item for line, item in zip(previous.texts(name), previous.section(name))}
    personal = SECTION[name].grouped_by == "person"
    items = []
    for line in lines if isinstance(lines, (list, tuple)) else []:
        text = str(line).strip()
        item = before.get(_key(text)) or BoardItem(text, attribute(text, fresh), _asker(BoardItem(text)))
        items.append(unprefixed(item) if personal else item)
    return items


def board_from_fields(previous: Board, new_messages: Sequence[SourceText], *, summary: str,
                      proposed: Mapping[str, Any]) -> Board:
    """A board proposed by someone else (an LLM) as plain text lists (entities by kind), held to
    the rules' invariants: the same caps, kept sections (constraints) never lost, items sourced
    to the message they came from, mention counts and topic tallies kept, seqs advanced."""
    fresh = _fresh(previous, new_messages)
    if not fresh:
        return previous
    raw_entities = proposed.get("entities") or {}
    kind_of: dict[str, str] = {}
    for kind in ENTITY_KINDS:
        for name in raw_entities.get(kind, []) if isinstance(raw_entities, Mapping) else []:
            if str(name).strip():
                kind_of.setdefault(str(name).strip(), kind)
    counts = Counter({n: previous.entity_counts.get(n, 0) for n in kind_of})
    sources = {i.text: i.sources for i in previous.section("entities")}
    for name in kind_of:
        said = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        hits = [(m, len(said.findall(m.text))) for m in fresh]
        counts[name] += sum(n for _, n in hits)
        sources[name] = join_sources(sources.get(name, ()), [ItemSource.of(m) for m, n in hits if n])
    entities, entity_counts = rank_entities(kind_of, counts, sources)
    speakers = {m.who for m in fresh if m.speaker and m.who}
    _, topic_counts = tally_topics(previous, units_of(fresh), speakers)
    lists = [s for s in SECTIONS if s.name != "entities"]
    new = {s.name: _proposed(previous, s.name, proposed.get(s.name), fresh) for s in lists}
    kept, new = supersede({s.name: previous.section(s.name) if s.kept else () for s in lists}, new, fresh)
    items: dict[str, tuple[BoardItem, ...]] = {"entities": entities}
    items.update({s.name: merge_recent(kept[s.name], new[s.name], s.cap) for s in lists})
    return Board(
        summary=summary.strip(),
        items=items,
        message_count=previous.message_count + len(fresh),
        last_seq=max(m.last_seq for m in fresh),
        entity_counts=entity_counts,
        topic_counts=topic_counts,
    )
