"""Key information per token: how many of LoCoMo's gold observations a text keeps, per 100 tokens.

Owns: reading the authors' `observation` annotations (a fact and the dia_ids of the turns that
say it; read here and by the board evaluation only, never by the memory system), each
observation's key sentence, and the scores. The key sentence of an evidence turn is its sentence
sharing the most content words with the observation ("Melanie ran a charity race for mental
health last Saturday." → "I ran a charity race for mental health last Saturday – it was really
rewarding."); under five words, the whole turn. An observation is kept by a text when the key
sentence of one of its evidence turns is in it, word for word (case and punctuation aside):
inside a whole turn, or quoted by a summary, a board line or compressed turns. It is kept
*whole* when an evidence turn's full text is there, as the evidence recall counts turns.

`RetentionTally` sums contexts (memctx's or a baseline's, at one budget): observations kept per
100 context tokens, and how many of them by the key sentence alone, with no evidence turn whole
(in memctx's contexts: summaries, board lines, compressed turns and turns cut by "…"; in a
baseline's, the same sentence said in another turn). `ChainTally` scores conversations' live
summary chain and board alone (`chain_text`: as the context renders them, with room for all):
the observations they keep, of those whose evidence the chain covers, per 100 tokens of that text.
Pure but for reading the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from memctx.assemble.current import CurrentItems
from memctx.assemble.repeats import sentences
from memctx.evaluate.locomo import parse_evidence
from memctx.words import STOPWORDS

MIN_KEY_WORDS = 5  # a shorter key sentence ("Yes, I did!") is no evidence on its own: the turn is
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@dataclass(frozen=True)
class Observation:
    """One gold fact of a sample and the dialogue ids of the turns that say it."""

    sample_id: str
    text: str
    evidence: tuple[str, ...]


def load_observations(path: Path) -> dict[str, list[Observation]]:
    """sample_id → its gold observations that name at least one evidence turn."""
    out: dict[str, list[Observation]] = {}
    for sample in json.loads(Path(path).read_text(encoding="utf-8")):
        sid = str(sample["sample_id"])
        for per_speaker in (sample.get("observation") or {}).values():
            for facts in (per_speaker or {}).values():
                for fact, evidence in facts or []:
                    ids = parse_evidence(evidence if isinstance(evidence, list) else [evidence])[0]
                    if ids:
                        out.setdefault(sid, []).append(Observation(sid, str(fact), ids))
    return out


def normalized(text: str) -> str:
    """Lowercase words separated by single spaces, padded with one space each side."""
    return " " + " ".join(_WORD.findall(text.lower().replace("’", "'"))) + " "


def key_sentence(observation: str, turn: str) -> str:
    """The sentence of `turn` that carries `observation` (normalized), or the whole turn when that
    sentence has fewer than five words."""
    wanted = {w for w in normalized(observation).split() if w not in STOPWORDS}
    best, score = turn, (-1, 0)
    for sentence in sentences(turn):
        words = normalized(sentence).split()
        s = (len(wanted.intersection(words)), len(words))
        if s > score:
            best, score = sentence, s
    key = normalized(best)
    return key if len(key.split()) >= MIN_KEY_WORDS else normalized(turn)


@dataclass(frozen=True)
class Gold:
    """The observations of one conversation (or prefix), ready to score texts against."""

    keys: tuple[tuple[str, ...], ...]  # per observation: its evidence turns' key sentences
    turns: tuple[tuple[str, ...], ...]  # per observation: its evidence turns' full texts

    @classmethod
    def of(cls, observations: Iterable[Observation], texts: Mapping[str, str]) -> "Gold":
        """The observations whose every evidence turn `texts` (dia_id → stored text) holds."""
        keys, turns = [], []
        for o in observations:
            if o.evidence and all(e in texts for e in o.evidence):
                keys.append(tuple(key_sentence(o.text, texts[e]) for e in o.evidence))
                turns.append(tuple(texts[e] for e in o.evidence))
        return cls(tuple(keys), tuple(turns))

    def __len__(self) -> int:
        return len(self.keys)

    def kept(self, text: str) -> tuple[int, int]:
        """(observations `text` keeps, of which kept whole: an evidence turn's full text in it)."""
        norm = normalized(text)
        kept = whole = 0
        for keys, turns in zip(self.keys, self.turns):
            if any(k in norm for k in keys):
                kept += 1
                whole += any(t in text for t in turns)
        return kept, whole


@dataclass
class RetentionTally:
    """Observations kept over contexts of one arm and budget, and the contexts' tokens."""

    kept: int = 0
    whole: int = 0
    observations: int = 0
    tokens: int = 0

    def add(self, gold: Gold, text: str, tokens: int) -> None:
        kept, whole = gold.kept(text)
        self.kept, self.whole = self.kept + kept, self.whole + whole
        self.observations += len(gold)
        self.tokens += tokens

    def summary(self) -> dict[str, Any]:
        return {"kept_per_100_tokens": _per_100(self.kept, self.tokens),
                "kept_share": round(self.kept / self.observations, 4) if self.observations else None,
                "kept_by_sentence_only": self.kept - self.whole,
                "kept": self.kept, "observations": self.observations, "tokens": self.tokens}


@dataclass
class ChainTally:
    """The live chains and boards of several conversations, scored alone."""

    kept: int = 0
    covered: int = 0
    tokens: int = 0
    conversations: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, gold: Gold, text: str, tokens: int) -> None:
        kept = gold.kept(text)[0]
        self.kept, self.covered, self.tokens = self.kept + kept, self.covered + len(gold), self.tokens + tokens
        self.conversations.append({"conversation": name, "kept": kept, "covered": len(gold), "tokens": tokens})

    def summary(self) -> dict[str, Any]:
        return {"kept_per_100_tokens": _per_100(self.kept, self.tokens),
                "kept_share": round(self.kept / self.covered, 4) if self.covered else None,
                "kept": self.kept, "covered": self.covered, "tokens": self.tokens,
                "per_conversation": self.conversations}


def chain_text(rows: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """The live summary chain and board of `current_context` rows, rendered as the context
    renders them with room for all, and the last turn they cover (0: none)."""
    items = CurrentItems.from_rows(rows, 0)
    text = items.messages()[0]["content"] if items.messages() else ""
    covered = max([r["last_seq"] or 0 for r in rows if r["kind"] in ("summary", "board")], default=0)
    return text, covered


def _per_100(kept: int, tokens: int) -> float | None:
    return round(100 * kept / tokens, 3) if tokens else None
