"""A loopback web for the external search tests: a SearXNG-compatible JSON endpoint, a
DuckDuckGo-style results page, a Brave-Search-API-compatible endpoint (key `BRAVE_KEY`), an
OpenAI-compatible `/v1/chat/completions` whose reply the model name picks (`SLM_REPLIES`), article
pages full of boilerplate (tests/fixtures/web/), and the pages a fetcher must refuse (too large,
not HTML, redirects to private addresses)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

WEB = Path(__file__).resolve().parent / "fixtures" / "web"
BRAVE_KEY = "brave-test-key"
# model name → the small LLM's reply: a string is the answer's content; "slow" answers "yes" after
# two seconds, "broken" is a 500 and "not-json" a body that is not JSON.
SLM_REPLIES = {"yes": "yes", "yes-dot": "Yes.", "no": "no", "garbage": "Sure! I would search the web for that.",
               "yes-but": "yes, but only if it is recent", "empty": ""}


class LoopbackWeb:
    """Serves on 127.0.0.1 from a daemon thread; `queries` are the search queries it received."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.slm_requests: list[dict] = []  # the chat completion requests received, as JSON
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except ConnectionError:  # the client gave up first (a timeout test): nothing to answer
                    pass

            def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Set-Cookie", "session=tracker; Path=/")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _fixture(self, name: str, **subs: str) -> bytes:
                text = (WEB / name).read_text()
                for key, value in {"base": web.base, "base_q": quote(web.base, safe=""), **subs}.items():
                    text = text.replace("{" + key + "}", value)
                return text.encode()

            def _chat(self, request: dict) -> None:
                web.slm_requests.append(request)
                model = request.get("model", "")
                if model == "broken":
                    self._send(500, b'{"error": {"message": "boom"}}', "application/json")
                    return
                if model == "not-json":
                    self._send(200, b"<html>proxy error</html>", "application/json")
                    return
                if model == "slow":
                    time.sleep(2)
                reply = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": SLM_REPLIES.get(model, "yes")}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                self._send(200, json.dumps(reply).encode(), "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                if urlsplit(self.path).path == "/v1/chat/completions":
                    self._chat(json.loads(body))
                    return
                form = parse_qs(body)
                if urlsplit(self.path).path == "/ddg/html/":
                    web.queries.append(form.get("q", [""])[0])
                    self._send(200, self._fixture("ddg-results.html"), "text/html; charset=utf-8")
                else:
                    self._send(404, b"not found", "text/plain")

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                path = parts.path
                if path == "/searxng/search":
                    q = query.get("q", [""])[0]
                    web.queries.append(q)
                    if self.headers.get("Cookie"):
                        self._send(400, b"cookies sent", "text/plain")
                        return
                    self._send(200, self._fixture("searxng.json", query=json.dumps(q)[1:-1]), "application/json")
                elif path == "/brave/res/v1/web/search":
                    web.queries.append(query.get("q", [""])[0])
                    if self.headers.get("X-Subscription-Token") != BRAVE_KEY:
                        self._send(401, b'{"type": "ErrorResponse"}', "application/json")
                        return
                    self._send(200, self._fixture("brave.json", count=query.get("count", ["?"])[0]),
                               "application/json")
                elif path == "/broken/search":
                    self._send(502, b"bad gateway", "text/plain")
                elif path == "/slow/search":
                    time.sleep(2)
                    self._send(200, b'{"results": []}', "application/json")
                elif path == "/article/news":
                    if self.headers.get("Cookie"):
                        self._send(400, b"cookies sent", "text/plain")
                        return
                    self._send(200, self._fixture("news-article.html"), "text/html; charset=utf-8")
                elif path == "/article/blog":
                    self._send(200, self._fixture("blog-post.html"), "text/html")
                elif path == "/pdf":
                    self._send(200, b"%PDF-1.7 not html", "application/pdf")
                elif path == "/big":
                    self._send(200, b"<html><body><p>" + b"word " * 200_000 + b"</p></body></html>", "text/html")
                elif path == "/redirect/news":
                    self._send(302, b"", "text/html", {"Location": "/article/news"})
                elif path == "/redirect/metadata":
                    self._send(302, b"", "text/html", {"Location": "http://169.254.169.254/latest/meta-data/"})
                elif path == "/redirect/internal":
                    self._send(302, b"", "text/html", {"Location": "http://intranet.test/admin"})
                elif path == "/redirect/loop":
                    self._send(302, b"", "text/html", {"Location": "/redirect/loop"})
                else:
                    self._send(404, b"not found", "text/plain")

        return Handler
