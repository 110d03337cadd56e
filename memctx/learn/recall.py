"""The profile as a context reads it: the items that bear on a query, their source turns as
retrieval keys, the ratings that weigh memories, and the procedures for errors seen again.

Owns: `ProfileReader.read`, one round trip beside the memory search (`profile_for_context`: the
items ranked by cosine to the query's vector, by full text and by the topics the query names,
fused by reciprocal rank, the standing instructions always, each with its source turns and the
values it replaced; the user's replaced items' source messages; their ratings of memories; the
procedures of the tools whose errors the recent turns show), and the pure rules a context applies
to what it read:

- `keyed`: an item is a key to the turns it was learned from (the LongMemEval paper's
  fact-augmented key expansion): the turns of the `key_items` best items matched by their
  content (cosine or full text), in the memories or not, gain `key_weight / (k + rank)` in the
  fused score (new memories when the search had not found them), and a memory's useful ratings
  raise it by `useful_boost` each, at most `useful_cap` of them (wrong ones lower it as much),
  so that one vote cannot take over;
- `replaced_notes`: a memory turn that a replaced item was learned from is marked replaced, with
  the date and the value that replaced it;
- `profile_lines`: the section's lines, best first, dated and in the person's words, each item
  once (an item whose source turns the context already shows is left out: they say it).

It never writes, and it does not budget tokens (memctx.assemble.profile fits the lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Mapping, Sequence
from uuid import UUID

import numpy as np
from psycopg_pool import ConnectionPool

from memctx.frozen import frozen_new
from memctx.learn.merge import says
from memctx.learn.topics import topics_of
from memctx.learn.types import USER, Procedure, ProfileItem
from memctx.retrieve.types import Fragment, Memory, Provenance
from memctx.sql import QUERIES
from memctx.summarize.text import format_day
from memctx.words import split_sentences

PROFILE_HEADER = "What the user has told you in earlier conversations (dated, in their own words; newest wins):"


@dataclass(frozen=True)
class ProfileOptions:
    """Tunables of the profile in a context; `from_settings` maps the MEMCTX_* settings."""

    enabled: bool = True
    share: float = 0.15  # of the tokens after system prompt and query, at most, for the profile's lines
    max_tokens: int = 150  # the profile's lines at most, whatever the budget
    limit: int = 30  # items read per context (instructions first, then by fused rank)
    min_similarity: float = 0.15  # cosine under which an item is not on the dense list
    rrf_k: float = 20.0
    topic_weight: float = 0.5  # of the topic list in the items' fusion
    key_items: int = 10  # best content-matched items whose source turns are retrieval keys
    key_weight: float = 0.0  # of their rank in the memories' fused score (0: keys off)
    key_k: float = 20.0
    useful_boost: float = 0.1  # a memory's or item's score × (1 + boost × votes), votes capped
    useful_cap: int = 3

    @classmethod
    def from_settings(cls, settings: Any) -> "ProfileOptions":
        return cls(enabled=settings.profile_enabled, share=settings.profile_share,
                   max_tokens=settings.profile_max_tokens, limit=settings.profile_items,
                   min_similarity=settings.profile_min_similarity, key_items=settings.profile_key_items,
                   key_weight=settings.profile_key_weight, useful_boost=settings.feedback_useful_boost,
                   useful_cap=settings.feedback_useful_cap)


@dataclass(frozen=True)
class Hit:
    """An item read for a context: the item, its fused score and ranks, its source turns as
    memory fragments, and the values it replaced (oldest first)."""

    item: ProfileItem
    score: float
    dense_rank: int | None
    lexical_rank: int | None
    topic_rank: int | None
    fragments: tuple[Fragment, ...]
    replaced: tuple[tuple[str, datetime | None], ...] = ()

    @property
    def matched(self) -> bool:
        """Matched by its content (cosine or full text), not only by its topic or kind."""
        return self.dense_rank is not None or self.lexical_rank is not None


@dataclass(frozen=True)
class Rating:
    useful: int = 0
    wrong: int = 0
    outdated: int = 0
    outdated_at: datetime | None = None


@dataclass(frozen=True)
class ProfileView:
    """What one context read of the profile."""

    hits: tuple[Hit, ...] = ()
    replaced: Mapping[int, tuple[str, str, datetime | None]] = field(default_factory=dict)  # message id int → (old, new, when)
    ratings: Mapping[int, Rating] = field(default_factory=dict)  # memory id int → its ratings
    procedures: tuple[Procedure, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()  # (tool, signature) of the recent turns' errors


EMPTY = ProfileView()


class ProfileReader:
    """Reads the profile for contexts over one pool; safe to share between threads."""

    def __init__(self, pool: ConnectionPool, options: ProfileOptions | None = None) -> None:
        self.pool = pool
        self.options = options or ProfileOptions()

    def read(self, user: UUID, query: str, query_vec: np.ndarray | None, tsquery: str, *,
             conversation: UUID | None = None, errors: Sequence[tuple[str, str]] = (),
             options: ProfileOptions | None = None) -> ProfileView:
        """The profile's part of a context for `query`: all of it, or within one conversation's
        memory (`conversation`) its standing instructions only. The items learned in a conversation
        are what its memories already hold in the user's words; on LoCoMo they took room from the
        evidence and repeated it (docs/BENCHMARKS.md, "The learning layer"). So no item is ranked
        by meaning there."""
        opts = options or self.options
        if conversation is not None:
            query_vec = None
        params = {"user_id": user, "conversation_id": conversation, "query_vec": query_vec,
                  "tsquery": tsquery, "topics": list(topics_of(query)), "min_similarity": opts.min_similarity,
                  "rrf_k": opts.rrf_k, "topic_weight": opts.topic_weight, "limit": opts.limit,
                  "tools": sorted({tool for tool, _ in errors})}
        with self.pool.connection() as conn, conn.pipeline():
            hits = conn.execute(QUERIES["profile_for_context"], params)
            replaced = conn.execute(QUERIES["profile_replaced_sources"], params)
            ratings = conn.execute(QUERIES["memory_ratings"], params)
            procedures = conn.execute(QUERIES["procedures_for_tools"], params) if errors else None
            conn.execute("commit")
        found = tuple(_hit(r) for r in hits.fetchall())
        return ProfileView(
            hits=found if conversation is None else tuple(h for h in found if h.item.kind == "instruction"),
            replaced={r["message_id"].int: (r["old_value"], r["new_value"], r["replaced_at"])
                      for r in replaced.fetchall()},
            ratings={r["target_id"].int: Rating(r["useful"], r["wrong"], r["outdated"], r["outdated_at"])
                     for r in ratings.fetchall()},
            procedures=tuple(Procedure.from_row(r) for r in procedures.fetchall()) if procedures is not None else (),
            errors=tuple(errors))


def _hit(row: Mapping[str, Any]) -> Hit:
    sources = row["sources"] or []
    item = ProfileItem.from_row({**row, "sources": sources})
    fragments = tuple(frozen_new(Fragment, {
        "id": UUID(s["message_id"]), "conversation_id": UUID(s["conversation_id"]), "role": s["role"],
        "text": s["text"], "seq": s["seq"], "time": item_time(s["said_at"]), "external_id": s.get("external_id"),
        "speaker": s.get("speaker"), "token_count": int(s.get("token_count") or 0),
        "session": int(s["session"]) if s.get("session") not in (None, "") else None, "passage": None,
        "excerpt_of": None}) for s in sources)
    replaced = tuple((r["value"], item_time(r["replaced_at"]) if r.get("replaced_at") else None)
                     for r in (row.get("replaced") or []))
    return Hit(item, float(row["score"] or 0), row["dense_rank"], row["lexical_rank"], row["topic_rank"], fragments,
               replaced)


def item_time(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


# Retrieval keys and ratings ------------------------------------------------------------------

def keyed(memories: Sequence[Memory], view: ProfileView, opts: ProfileOptions) -> list[Memory]:
    """The memories with the profile's keys and the user's ratings applied (module docstring),
    best first."""
    boost: dict[int, tuple[float, int, Fragment]] = {}
    if opts.key_weight > 0:
        for rank, hit in enumerate((h for h in view.hits if h.matched and h.item.kind != "instruction"), start=1):
            if rank > opts.key_items:
                break
            for fragment in hit.fragments:
                if fragment.id.int not in boost:
                    boost[fragment.id.int] = (opts.key_weight / (opts.key_k + rank), rank, fragment)
    if not boost and not view.ratings:
        return list(memories)
    out: list[Memory] = []
    found: set[int] = set()
    for memory in memories:
        found.update(f.id.int for f in memory.fragments)
        score = memory.score + (boost[memory.id.int][0] if memory.id.int in boost else 0.0)
        score *= rated(view.ratings.get(memory.id.int), opts)
        if score != memory.score:
            ranks = {**memory.provenance.ranks, "profile": boost[memory.id.int][1]} if memory.id.int in boost \
                else memory.provenance.ranks
            memory = replace(memory, score=score, provenance=replace(memory.provenance, ranks=ranks))
        out.append(memory)
    for key, (score, rank, fragment) in boost.items():
        if key in found:
            continue  # a companion of a memory already: it comes with it
        provenance = Provenance(ranks={"profile": rank}, first_seq=fragment.seq, last_seq=fragment.seq)
        out.append(Memory("message", fragment.id, fragment.conversation_id, (fragment,),
                          score * rated(view.ratings.get(key), opts), None, provenance))
    out.sort(key=lambda m: -m.score)
    return out


# Memories a search reads past its limit, so that a rated one below it can rise into it.
RATED_DEPTH = 10


def with_ratings(pool: ConnectionPool, user: UUID, memories: Sequence[Memory], opts: ProfileOptions) -> list[Memory]:
    """Memories (a search's, best first) reordered by the user's ratings of them (`rated`)."""
    if not memories:
        return list(memories)
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["memory_ratings"], {"user_id": user}).fetchall()
    return keyed(memories, ProfileView(ratings={r["target_id"].int: Rating(r["useful"], r["wrong"], r["outdated"],
                                                                          r["outdated_at"]) for r in rows}), opts)


def rated(rating: Rating | None, opts: ProfileOptions) -> float:
    """A score's factor from its ratings: × (1 + boost × votes), useful votes up and wrong ones
    down, at most `useful_cap` votes either way."""
    if rating is None:
        return 1.0
    votes = max(-opts.useful_cap, min(opts.useful_cap, rating.useful - rating.wrong))
    return max(0.1, 1 + opts.useful_boost * votes)


def replaced_notes(memories: Sequence[Memory], view: ProfileView) -> list[Memory]:
    """The memories with each turn a replaced item was learned from, or that the user rated
    outdated, marked so: " (replaced on 10 June 2024 by: We moved to Lisbon)"; and the summaries
    without their sentences that state a replaced value (the current one is said where it was
    learned)."""
    if not view.replaced and not any(r.outdated for r in view.ratings.values()):
        return list(memories)
    olds = {old for old, _, _ in view.replaced.values()}

    def note(fragment: Fragment) -> str | None:
        found = view.replaced.get(fragment.id.int)
        if found is not None:
            _, new, when = found
            return f" (replaced{f' on {format_day(when)}' if when else ''} by: {new})"
        rating = view.ratings.get(fragment.id.int)
        if rating is not None and rating.outdated:
            return f" (marked outdated{f' on {format_day(rating.outdated_at)}' if rating.outdated_at else ''})"
        return None

    out = []
    for memory in memories:
        if memory.kind != "message":
            if olds:
                fragments = tuple(replace(f, text=without_values(f.text, olds)) for f in memory.fragments)
                if any(a.text != b.text for a, b in zip(fragments, memory.fragments)):
                    memory = replace(memory, fragments=fragments)
            out.append(memory)
            continue
        notes = [note(f) for f in memory.fragments]
        if any(notes):
            memory = replace(memory, fragments=tuple(replace(f, text=f.text + n) if n else f
                                                     for f, n in zip(memory.fragments, notes)))
        out.append(memory)
    return out


def without_values(text: str, values: set[str]) -> str:
    """`text` without its sentences that state one of `values` (`merge.says`), line by line."""
    lines = []
    for line in text.split("\n"):
        parts = split_sentences(line)
        kept = [p for p in parts if not any(says(p, v) for v in values)]
        if len(kept) == len(parts):
            lines.append(line)
        elif kept:
            lines.append(" ".join(kept))
    return "\n".join(lines)


# The section's lines ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    """One line of the profile section and what it stands for (an item, or a procedure)."""

    text: str
    item: ProfileItem | None = None
    procedure: Procedure | None = None


def profile_lines(view: ProfileView, shown: set[int], opts: ProfileOptions) -> list[Line]:
    """The section's lines, best first: the procedures for the errors the recent turns show, the
    standing instructions, then the items that bear on the query, each item none of whose source
    turns `shown` (ids as ints) already holds, useful ones first among equals."""
    lines = [Line(procedure_line(p), procedure=p) for p in matching(view.procedures, view.errors)]
    hits = sorted(view.hits, key=lambda h: (h.item.kind != "instruction",
                                            -h.score * (1 + opts.useful_boost * min(h.item.useful, opts.useful_cap))))
    for hit in hits:
        if any(f.id.int in shown for f in hit.fragments):
            continue  # a turn that says it is in the context (the same words said in two conversations: either)
        lines.append(Line(item_line(hit), item=hit.item))
    return lines


def item_line(hit: Hit) -> str:
    """"[3 May 2024] user: I'm vegetarian", with "(standing instruction)" and what it replaced."""
    item = hit.item
    who = "the user" if item.person == USER else item.person
    tag = " (standing instruction)" if item.kind == "instruction" else ""
    when = format_day(item.last_seen) if item.origin != "user" or item.seen_count else format_day(item.first_seen)
    line = f"[{when}] {who}{tag}: {item.value}"
    if hit.replaced:
        old, at = hit.replaced[-1]
        line += f" (before: {old}; replaced{f' on {format_day(at)}' if at else ''})"
    return line


def procedure_line(p: Procedure) -> str:
    rate = f"{p.resolved} of {p.seen_count} times"
    return (f"[{format_day(p.last_seen)}] when {p.tool} failed with \"{p.error}\", a later call worked: "
            f"{p.tool}({p.fix}) ({rate})")


def matching(procedures: Sequence[Procedure], errors: Sequence[tuple[str, str]]) -> list[Procedure]:
    """The procedures of the errors seen again: the same tool, and the same error signature or one
    sharing most of its words; the most resolved first."""
    out = []
    for p in procedures:
        if any(tool == p.tool and (sig == p.error or _close(sig, p.error)) for tool, sig in errors):
            out.append(p)
    return sorted(out, key=lambda p: (-(p.resolved / p.seen_count if p.seen_count else 0), -p.seen_count))


def _close(a: str, b: str) -> bool:
    wa, wb = set(a.split()), set(b.split())
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= 0.5
