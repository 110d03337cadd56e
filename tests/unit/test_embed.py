"""The local int8 MiniLM embedder agrees with fp32 sentence-transformers vectors."""

import json
from pathlib import Path

import numpy as np
import pytest

from memctx.embed import LocalMiniLM, embed_query

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_fp32_reference.json"


@pytest.fixture(scope="module")
def local():
    return LocalMiniLM(batch_size=4)


def test_int8_vectors_match_fp32_reference(local):
    ref = json.loads(REFERENCE.read_text())
    texts = [item["text"] for item in ref["items"]]
    expected = np.asarray([item["vector"] for item in ref["items"]], dtype=np.float32)
    got = local.embed(texts)
    cosines = (got * expected).sum(axis=1)
    assert got.shape == (len(texts), ref["dim"])
    assert cosines.min() >= 0.99, dict(zip(texts, cosines.round(4)))


def test_vectors_are_normalized_and_order_preserved(local):
    texts = ["short", "a much longer sentence about Postgres and vectors " * 3, "medium length text here"]
    together = local.embed(texts)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([local.embed([t]) for t in texts])
    assert np.allclose(together, one_by_one, atol=1e-4)  # batching/padding does not change results


def test_semantics(local):
    a, b, c = local.embed(["I adopted a puppy", "We got a new dog", "The stock market fell today"])
    assert a @ b > a @ c + 0.2


def test_empty_batch(local):
    assert local.embed([]).shape == (0, 384)


def test_batches_cap_padded_tokens_so_long_texts_do_not_grow_the_arena():
    """Long (summary-sized) texts go in small batches, short ones in full ones; every text once."""
    e = LocalMiniLM(batch_size=64, max_batch_tokens=4096)
    lengths = [20] * 100 + [256] * 40  # ascending, as embed() sorts them
    batches = list(e._batches(lengths, list(range(len(lengths)))))
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    assert all(len(b) * max(lengths[i] for i in b) <= 4096 for b in batches)
    assert len(batches[0]) == 64 and max(len(b) for b in batches if lengths[b[-1]] == 256) == 16
    assert list(e._batches([5000], [0])) == [[0]]  # a text longer than the cap still goes, alone


def test_capped_batches_give_the_same_vectors():
    texts = ["a short one", "Caroline went to the LGBTQ support group and felt accepted there. " * 12, "medium text"]
    capped = LocalMiniLM(batch_size=64, max_batch_tokens=200).embed(texts)
    uncapped = LocalMiniLM(batch_size=64, max_batch_tokens=10**9).embed(texts)
    assert np.allclose(capped, uncapped, atol=1e-4)


def test_queries_run_on_their_own_session_and_land_in_the_same_space(local):
    """A search query goes through the one-thread, non-spinning session: the same vector as the
    batch session's, so queries and stored turns stay comparable."""
    texts = ["When did Melanie paint a sunrise?", "What do my kids like?", "camping by the lake"]
    assert local._query_session is not local._session
    assert local._query_session.get_session_options().intra_op_num_threads == 1
    assert np.allclose(local.embed_queries(texts), local.embed(texts), atol=1e-5)
    assert np.allclose(embed_query(local, texts[0]), local.embed(texts[:1])[0], atol=1e-5)
