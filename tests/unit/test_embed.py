"""The local int8 MiniLM embedder agrees with fp32 sentence-transformers vectors."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from embed_support import compare_rankings, keeps_retrieval, mini_corpus
from memctx.embed import (PROBE_QUERIES, LocalMiniLM, _model_path, accepts, embed_query, int8_query_model,
                          int8_query_model_path)

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
    # int8 weights against float ones: 0.9996 median, 0.994 least ("OK"); a kernel's rounding
    # moves the sixth decimal, a broken model the first.
    assert np.median(cosines) >= 0.995 and cosines.min() >= 0.98, dict(zip(texts, cosines.round(4)))


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
    the float model) but near them and near fp32 sentence-transformers, so queries and stored
    turns stay comparable. The levels catch a broken model, not a kernel's rounding at the third
    decimal ('auto' takes the int8 model only where it agrees with the float model: below)."""
    texts = ["When did Melanie paint a sunrise?", "What do my kids like?", "camping by the lake"]
    int8 = LocalMiniLM(batch_size=4, model_cache=local.model_cache, queries="int8")
    assert int8.query_model.precision == "int8"
    assert int8._query_session is not int8._session
    assert int8._query_session.get_session_options().intra_op_num_threads == 1
    model = Path(int8._query_session._model_path)
    assert model == int8_query_model_path(_model_path(), local.model_cache) and model.exists()
    queries, stored = int8.embed_queries(texts), int8.embed(texts)
    assert not np.allclose(queries, stored, atol=1e-5)
    assert (queries * stored).sum(axis=1).min() >= 0.95
    assert np.allclose(embed_query(int8, texts[0]), queries[0], atol=1e-5)
    ref = json.loads(REFERENCE.read_text())
    expected = np.asarray([item["vector"] for item in ref["items"]], dtype=np.float32)
    cosines = (int8.embed_queries([item["text"] for item in ref["items"]]) * expected).sum(axis=1)
    assert np.median(cosines) >= 0.98 and cosines.min() >= 0.9, cosines  # "Thanks!" is the least (~0.97)


def test_auto_takes_the_int8_model_where_this_cpu_agrees_with_the_float_model(local):
    """On every CPU measured the int8 kernels pass the check; where one does not, queries are
    float, as stored texts are. Either way the choice and its figures are kept."""
    chosen = local.query_model
    assert chosen.agreement is not None and chosen.precision == ("int8" if accepts(chosen.agreement) else "float")
    text = ["What do my kids like?"]
    assert np.allclose(local.embed_queries(text), local.embed(text), atol=1e-5) == (chosen.precision == "float")


def test_int8_queries_rank_stored_turns_as_float_queries_do(local):
    """The requirement itself: the dense ranking of a conversation's stored turns for its
    questions is the float queries' ranking (docs/BENCHMARKS.md measures the whole context on
    both benchmarks)."""
    corpus = mini_corpus()
    stored = local.embed(corpus.turns)
    agreement = compare_rankings(corpus, stored, local.embed_queries(corpus.questions), local.embed(corpus.questions))
    assert keeps_retrieval(agreement), agreement


def test_float_queries_embed_as_stored_texts_do(tmp_path):
    embedder = LocalMiniLM(model_cache=tmp_path, queries="float")
    texts = ["What do my kids like?", "camping by the lake"]
    assert embedder.query_model.precision == "float" and embedder.query_model.agreement is None
    assert np.allclose(embedder.embed_queries(texts), embedder.embed(texts), atol=1e-5)
    assert list(tmp_path.iterdir()) == []  # no int8 model is built for nothing
    with pytest.raises(ValueError, match="'auto', 'int8' or 'float'"):
        LocalMiniLM(queries="fast")


def test_a_query_model_that_rounds_too_far_gives_way_to_the_float_model(tmp_path, caplog):
    """Where the int8 model in the cache agrees with the float model less than the gate asks
    (here one quantization scale per tensor instead of per channel, ~0.97 median), 'auto' embeds
    queries with the float model and says why; 'int8' still takes it, as configured."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    target = int8_query_model_path(_model_path(), tmp_path)
    folded = tmp_path / "folded.onnx"
    quant_pre_process(_model_path(), folded, skip_symbolic_shape=True)
    quantize_dynamic(folded, target, weight_type=QuantType.QInt8, per_channel=False, reduce_range=True)
    folded.unlink()
    auto = LocalMiniLM(model_cache=tmp_path)
    chosen = auto.query_model
    assert chosen.precision == "float" and not accepts(chosen.agreement), chosen
    assert "round too far" in chosen.describe() and "queries use the float model" in caplog.text
    text = ["What do my kids like?"]
    assert np.allclose(auto.embed_queries(text), auto.embed(text), atol=1e-5)
    forced = LocalMiniLM(model_cache=tmp_path, queries="int8")
    assert forced.query_model.precision == "int8"
    assert not np.allclose(forced.embed_queries(text), forced.embed(text), atol=1e-3)


def test_the_query_models_check_is_kept_per_kernel(local, tmp_path):
    """The check runs once: a second process reads it, keyed by the first probe's int8 vector
    (a kernel that rounds otherwise, as under an emulated CPU, has another key and checks again)."""
    built = int8_query_model_path(_model_path(), local.model_cache)
    shutil.copyfile(built, tmp_path / built.name)  # the model alone, as just built
    first = LocalMiniLM(model_cache=tmp_path).query_model
    path = next(tmp_path.glob("*.agreement.json"))
    record = json.loads(path.read_text())
    assert len(record["kernels"]) == 1 and record["kernels"][0]["median"] == first.agreement.median
    assert len(record["reference"]) == len(PROBE_QUERIES)  # the float vectors, the same on every kernel
    assert LocalMiniLM(model_cache=tmp_path).query_model == first and json.loads(path.read_text()) == record
    record["kernels"][0]["fingerprint"] = [v + 0.01 for v in record["kernels"][0]["fingerprint"]]  # another kernel's
    path.write_text(json.dumps(record))
    assert LocalMiniLM(model_cache=tmp_path).query_model == first
    assert len(json.loads(path.read_text())["kernels"]) == 2


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
