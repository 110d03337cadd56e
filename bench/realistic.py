"""Realistic data for bench/scale.py: LoCoMo-like texts, real embeddings, long-tailed users.

Owns: generating message texts from the LoCoMo dev turns (two turns spliced at a sentence
boundary, names, numbers and hobby nouns swapped), perturbed LoCoMo questions as queries, the
pool of distinct texts embedded once with the real embedder and cached outside the repo, the
long-tailed shape (users, conversations, sessions, dates) with one named heavy user, and the
bulk load (binary COPY, triggers skipped), the messages in the order they would have arrived
unless asked otherwise (`ORDERS`). It does not build indexes or time anything.

Embedding a million texts on two cores takes hours, so messages are drawn from a pool of
distinct texts (`--pool`); each draw keeps its text's real embedding plus a small gaussian jitter
(cosine ≈ 0.995 to the original) so the HNSW graph holds distinct points, as it would with real
traffic, instead of pgvector folding up to ten identical vectors into one element.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memctx.embed import Embedder
from memctx.tokens import TiktokenCounter

GENERATOR_VERSION = 1  # bump when the texts a seed produces change: the cache is keyed on it
CHUNK = 4096  # texts per cache file: an interrupted embedding run resumes at its last chunk
JITTER = 0.005  # per-dimension sigma: cosine to the pool vector ≈ 1 / sqrt(1 + 384 σ²) ≈ 0.995
HEAVY_USER = uuid.UUID("00000000-0000-4000-8000-00000000beef")  # "heavy": the user with ~100k messages

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"\b\d+\b")
NAMES = ("Aisha Ben Carlos Dana Elif Farah Gabriel Hana Ivan Jonas Keiko Leon Maya Nadia Omar Priya Quinn Rosa "
         "Sven Tara Uma Victor Wen Yusuf Zoe Amara Bruno Chloe Diego Esme").split()
NOUNS = ("pottery painting hiking camping guitar piano novel poem recipe cake garden dog cat puppy marathon "
         "concert festival museum beach lake mountain workshop class project book movie camera bike car "
         "sister brother mom dad friend team church school job interview shelter parade").split()


@dataclass(frozen=True)
class Source:
    """The LoCoMo turns, speaker names and questions the generator recombines."""

    turns: list[list[str]]  # sentences of each turn
    names: list[str]
    questions: list[str]
    digest: str

    @classmethod
    def read(cls, path: Path) -> "Source":
        data = path.read_bytes()
        samples = json.loads(data)
        turns, names = [], set(NAMES)
        for sample in samples:
            conv = sample["conversation"]
            names.update((conv["speaker_a"], conv["speaker_b"]))
            for key, value in conv.items():
                if key.startswith("session_") and isinstance(value, list):
                    turns.extend(_SENTENCE.split(t["text"].strip()) for t in value if t.get("text", "").strip())
        questions = [q["question"] for s in samples for q in s.get("qa", []) if q.get("question")]
        return cls(turns, sorted(names), questions, hashlib.sha256(data).hexdigest()[:12])


class Perturb:
    """Swaps names (consistently within a text), numbers and hobby nouns."""

    def __init__(self, source: Source, rng: random.Random) -> None:
        self.rng = rng
        self.names = source.names
        self.name_re = re.compile(r"\b(" + "|".join(map(re.escape, source.names)) + r")\b")
        self.noun_re = re.compile(r"\b(" + "|".join(NOUNS) + r")\b")

    def __call__(self, text: str) -> str:
        swap: dict[str, str] = {}
        text = self.name_re.sub(lambda m: swap.setdefault(m.group(1), self.rng.choice(self.names)), text)
        text = _NUMBER.sub(self._number, text)
        return self.noun_re.sub(lambda m: self.rng.choice(NOUNS) if self.rng.random() < 0.5 else m.group(1), text)

    def _number(self, match: re.Match) -> str:
        value = match.group(0)
        if len(value) == 4 and value[:2] in ("19", "20"):
            return str(self.rng.randint(2015, 2025))
        return str(self.rng.randint(1, max(10, 2 * int(value))))


def texts(source: Source, seed: int = 13) -> Iterator[str]:
    """Distinct message texts, deterministic for a seed; a longer pool extends a shorter one."""
    rng = random.Random(seed)
    perturb, seen = Perturb(source, rng), set()
    while True:
        a = rng.choice(source.turns)
        if rng.random() < 0.6:  # splice: the head of one turn, the tail of another
            b = rng.choice(source.turns)
            a = a[:rng.randint(1, len(a))] + b[rng.randint(0, len(b) - 1):]
        text = perturb(" ".join(a))
        if text not in seen:
            seen.add(text)
            yield text


def queries(source: Source, n: int, seed: int = 7) -> list[str]:
    """LoCoMo questions, names and numbers swapped like the texts'."""
    rng = random.Random(seed)
    perturb = Perturb(source, rng)
    return [perturb(rng.choice(source.questions)) for _ in range(n)]


def embedded_pool(source: Source, size: int, embedder: Embedder, cache: Path,
                  log: Callable[[str], None]) -> tuple[list[str], np.ndarray]:
    """The first `size` texts and their vectors. Vectors are cached in files of CHUNK texts
    (the generator is prefix-stable, so a larger pool reuses a smaller one's files)."""
    folder = cache / f"{embedder.name}-{source.digest}-v{GENERATOR_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    gen = texts(source)
    pool = [next(gen) for _ in range(-(-size // CHUNK) * CHUNK)]
    chunks = []
    for start in range(0, size, CHUNK):
        path = folder / f"chunk-{start // CHUNK:05d}.npy"
        if not path.exists():
            began = time.perf_counter()
            vectors = embedder.embed(pool[start:start + CHUNK]).astype(np.float32)
            np.save(folder / "partial.npy", vectors)
            (folder / "partial.npy").rename(path)
            log(f"embedded texts {start + CHUNK}/{len(pool)} ({CHUNK / (time.perf_counter() - began):.0f} texts/s)")
        chunks.append(np.load(path))
    return pool[:size], np.concatenate(chunks)[:size] if chunks else np.empty((0, embedder.dim), np.float32)


# Shape ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conversation:
    user_id: uuid.UUID
    id: uuid.UUID
    external_id: str
    length: int
    speakers: tuple[str, str]  # user, assistant
    start: datetime


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, low: int, high: int) -> int:
    """A long-tailed count with the given mean (before clipping)."""
    return int(np.clip(rng.lognormal(np.log(mean) - sigma ** 2 / 2, sigma), low, high))


def shape(messages: int, per_conversation: int, conversations_per_user: int, *, heavy_messages: int = 100_000,
          long_conversation: int = 5_000, seed: int = 13) -> list[Conversation]:
    """Conversations of the heavy user (one `long_conversation` turns long, `heavy_messages` in all)
    then of ordinary users until `messages`: messages per user and turns per conversation are
    lognormal (σ 1.2 and 1.0) with means `per_conversation × conversations_per_user` and
    `per_conversation`; conversations started over the last 18 months."""
    rng = np.random.default_rng(seed)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    out: list[Conversation] = []

    def add(user: uuid.UUID, length: int) -> None:
        a, b = rng.choice(NAMES, 2, replace=False)
        start = now - timedelta(days=float(rng.uniform(14, 540)))
        out.append(Conversation(user, uuid.UUID(int=int(rng.integers(2 ** 62)) << 64 | len(out) + 1),
                                f"conv-{len(out) + 1}", length, (str(a), str(b)), start))

    def fill(user: uuid.UUID, total: int) -> None:
        while total > 0:
            length = min(total, _lognormal(rng, per_conversation, 1.0, 2, 3_000))
            add(user, length)
            total -= length

    heavy = min(heavy_messages, messages)
    add(HEAVY_USER, min(long_conversation, heavy))
    fill(HEAVY_USER, heavy - out[0].length)
    left, user = messages - heavy, 1
    while left > 0:
        total = min(left, _lognormal(rng, per_conversation * conversations_per_user, 1.2, 10, 50_000))
        fill(uuid.UUID(int=user), total)
        left -= total
        user += 1
    return out


# Load ---------------------------------------------------------------------------------------------
_MESSAGE_COLUMNS = ("conversation_id, user_id, seq, role, content, text, external_id, token_count, embedding, "
                    "created_at, metadata")
_MESSAGE_TYPES = ["uuid", "uuid", "int8", "text", "jsonb", "text", "text", "int4", "vector", "timestamptz", "jsonb"]


# The orders a load may write the messages in (`load`), which decide the pages a scope's rows lie
# on: "arrival", every conversation's turns by their created_at across all conversations, as a
# deployment's inserts lay them in the heap (this shape's timeline has about one session at a
# time, so a session's turns mostly lie together); "shuffled", each turn among random others, as
# the heap of a deployment with many sessions at once holds them; "conversation", each
# conversation's turns together, as a bulk import lays them.
ORDERS = ("arrival", "shuffled", "conversation")


def message_rows(conversations: list[Conversation], pool: list[str], vectors: np.ndarray, tokens: np.ndarray,
                 order: str = "arrival", seed: int = 13, now: datetime | None = None) -> list[tuple]:
    """The messages' rows (`_MESSAGE_COLUMNS`) in `order` (`ORDERS`), all of them in memory: the
    same rows whatever the order, their sessions spread until `now` (default: now). The heavy user
    draws its texts without replacement while the pool lasts; everyone else draws with it."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")
    now = now or datetime.now(timezone.utc)
    rng = np.random.default_rng(seed)
    heavy = rng.permutation(len(pool))
    done, rows = 0, []
    for c in conversations:
        if c.user_id == HEAVY_USER:
            picks = heavy[np.arange(done, done + c.length) % len(pool)]
        else:
            picks = rng.integers(len(pool), size=c.length)
        jittered = vectors[picks] + rng.normal(0, JITTER, (c.length, vectors.shape[1])).astype(np.float32)
        jittered /= np.linalg.norm(jittered, axis=1, keepdims=True)
        for seq, (i, vector, (at, session, turn)) in enumerate(zip(picks, jittered, _timeline(c, rng, now)), start=1):
            role = "user" if seq % 2 else "assistant"
            text = pool[i]
            rows.append((c.id, c.user_id, seq, role, Jsonb([{"type": "text", "text": text}]), text,
                         f"D{session}:{turn}", int(tokens[i]), vector, at,
                         Jsonb({"speaker": c.speakers[seq % 2 == 0], "session": session})))
        done += c.length
    if order == "arrival":
        rows.sort(key=lambda row: row[9])  # stable: a conversation's turns keep their seq order
    elif order == "shuffled":
        rows = [rows[i] for i in rng.permutation(len(rows))]
    return rows


def load(conn: psycopg.Connection, conversations: list[Conversation], pool: list[str], vectors: np.ndarray,
         log: Callable[[str], None], seed: int = 13, order: str = "arrival") -> None:
    """COPY the conversations and their messages (triggers must be off on `conn`), the messages in
    `order` (`ORDERS`)."""
    tokens = np.array(TiktokenCounter().count_many(pool), dtype=np.int32)
    with conn.cursor().copy("copy memctx.conversations (id, user_id, external_id, title, metadata, message_count, "
                            "last_seq, created_at, last_message_at) from stdin (format binary)") as copy:
        copy.set_types(["uuid", "uuid", "text", "text", "jsonb", "int4", "int8", "timestamptz", "timestamptz"])
        for c in conversations:
            copy.write_row((c.id, c.user_id, c.external_id, f"{c.speakers[0]} & {c.speakers[1]}",
                            Jsonb({"source": "scale-realistic", "speaker_a": c.speakers[0],
                                   "speaker_b": c.speakers[1]}), c.length, c.length, c.start, c.start))
    rows = message_rows(conversations, pool, vectors, tokens, order, seed)
    log(f"{len(rows)} messages made, written in {order} order")
    began = time.perf_counter()
    with conn.cursor().copy(f"copy memctx.messages ({_MESSAGE_COLUMNS}) from stdin (format binary)") as copy:
        copy.set_types(_MESSAGE_TYPES)
        for done, row in enumerate(rows, start=1):
            copy.write_row(row)
            if done % 100_000 == 0:
                log(f"loaded {done} messages ({done / (time.perf_counter() - began):.0f}/s)")


def _timeline(c: Conversation, rng: np.random.Generator, now: datetime) -> Iterator[tuple[datetime, int, int]]:
    """(created_at, session, turn in session): sessions of ~20 turns spread evenly from the
    conversation's start to `now`, turns 10–90 s apart within a session."""
    sessions = max(1, round(c.length / 20))
    gap = (now - c.start) / (sessions + 1)
    at, current, turn = c.start, 0, 0
    for i in range(c.length):
        session = 1 + i * sessions // c.length
        if session != current:
            current, turn = session, 0
            at = max(at, c.start + gap * (session - 1) + gap * float(rng.uniform(0, 0.5)))
        turn += 1
        at += timedelta(seconds=float(rng.uniform(10, 90)))
        yield at, session, turn
