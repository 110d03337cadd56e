"""OpenAIEmbedder against a real OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memctx.config import Settings
from memctx.embed import OpenAIEmbedder
from memctx.providers import make_embedder


class _Handler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        dims = body.get("dimensions", 8)
        inputs = body["input"]
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t) + k) for k in range(dims)]}
                for i, t in reversed(list(enumerate(inputs)))]  # out of order on purpose
        payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_batches_keep_order_and_vectors_are_normalized(server):
    embedder = OpenAIEmbedder(model="text-embedding-3-small", dimensions=4, base_url=server, api_key="sk-test", batch_size=2)
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert vectors.shape == (3, 4)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected_first = np.array([1, 2, 3, 4], dtype=np.float32) / np.linalg.norm([1, 2, 3, 4])
    assert np.allclose(vectors[0], expected_first, atol=1e-6)  # order restored from `index`
    assert [len(r["body"]["input"]) for r in _Handler.requests] == [2, 1]
    assert all(r["path"] == "/v1/embeddings" and r["auth"] == "Bearer sk-test" for r in _Handler.requests)
    assert embedder.dim == 4 and embedder.name == "text-embedding-3-small@4"


def test_dimension_is_probed_when_not_configured(server):
    settings = Settings(embedder="openai", embedding_model="local-model", embedding_base_url=server)
    embedder = make_embedder(settings)
    assert embedder.dim == 8
