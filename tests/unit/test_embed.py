"""The local int8 MiniLM embedder agrees with fp32 sentence-transformers vectors."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memctx.embed import LocalMiniLM, _model_path, embed_query, int8_query_model

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_fp32_reference.json"


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    return LocalMiniLM(batch_size=4, model_cache=tmp_path_factory.mktemp("models"))


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


def test_queries_run_int8_on_their_own_session_and_land_in_the_same_space(local):
    """A search query goes through the one-thread, non-spinning session of the int8 query model,
    built once into the model cache: its vectors are not the batch session's (stored turns keep
    the float model) but close to them and to fp32 sentence-transformers, so queries and stored
    turns stay comparable."""
    texts = ["When did Melanie paint a sunrise?", "What do my kids like?", "camping by the lake"]
    assert local._query_session is not local._session
    assert local._query_session.get_session_options().intra_op_num_threads == 1
    assert [p.name for p in local.model_cache.iterdir()] == [Path(local._query_session._model_path).name]
    queries, stored = local.embed_queries(texts), local.embed(texts)
    assert not np.allclose(queries, stored, atol=1e-5)
    assert (queries * stored).sum(axis=1).min() >= 0.99
    assert np.allclose(embed_query(local, texts[0]), queries[0], atol=1e-5)
    ref = json.loads(REFERENCE.read_text())
    expected = np.asarray([item["vector"] for item in ref["items"]], dtype=np.float32)
    cosines = (local.embed_queries([item["text"] for item in ref["items"]]) * expected).sum(axis=1)
    assert np.median(cosines) >= 0.99 and cosines.min() >= 0.97  # the least: "Thanks!" (0.972)


def test_the_int8_query_model_is_built_once_per_cache(tmp_path):
    first = int8_query_model(_model_path(), tmp_path)
    built = first.stat().st_mtime_ns
    assert int8_query_model(_model_path(), tmp_path) == first and first.stat().st_mtime_ns == built
    assert list(tmp_path.iterdir()) == [first]  # no leftovers of the build


def test_the_same_model_installed_elsewhere_reuses_the_cached_int8_model(tmp_path):
    """A fresh virtualenv installs the same model at another path with another time: its queries
    take the model already built, where one 23 MB copy per virtualenv used to pile up."""
    cache = tmp_path / "cache"
    first = int8_query_model(_model_path(), cache)
    elsewhere = tmp_path / "venv" / _model_path().name
    elsewhere.parent.mkdir()
    shutil.copyfile(_model_path(), elsewhere)  # a new path, and a new modification time
    assert int8_query_model(elsewhere, cache) == first
    assert list(cache.iterdir()) == [first]


def test_queries_fall_back_to_the_float_model_when_no_int8_model_can_be_built(tmp_path, caplog):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    embedder = LocalMiniLM(model_cache=blocked)
    text = ["What do my kids like?"]
    assert np.allclose(embedder.embed_queries(text), embedder.embed(text), atol=1e-5)
    assert "queries use the float model" in caplog.text
