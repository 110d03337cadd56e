"""Search engines behind one protocol, tried in the configured order with fallback on error.

Owns: the SearXNG JSON API (self-hostable, the recommended one), DuckDuckGo's HTML page (no key)
and the Brave Search API (a key), each with its own URL and timeout; `EngineChain` falls back to
the next engine when one fails. Engines return hits (title, URL, snippet) and fetch no page.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Protocol, Sequence
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from selectolax.lexbor import LexborHTMLParser

from memctx.web.fetch import USER_AGENT, tls_context
from memctx.web.types import Hit, SearchFailed

ENGINES = ("searxng", "duckduckgo", "brave")


class SearchEngine(Protocol):
    """A web search engine: the top `max_results` hits of a query; raises on any failure. The whole
    call, its answer read to the end, ends within the engine's own timeout, or within `timeout_s`
    (the time left of a search's deadline) when that is shorter."""

    name: str

    def search(self, query: str, max_results: int, *, timeout_s: float | None = None) -> list[Hit]: ...


def _client(timeout_s: float, headers: dict[str, str] | None = None) -> httpx.Client:
    # trust_env=False: no proxy or .netrc from the environment; the configured URL is what is called.
    return httpx.Client(timeout=httpx.Timeout(timeout_s), trust_env=False, follow_redirects=True,
                        verify=tls_context(), headers={"User-Agent": USER_AGENT, **(headers or {})})


def _capped(own: float, cap: float | None) -> float:
    """An engine's time: its own timeout (MEMCTX_WEB_TIMEOUT_S), or the time left of the
    search's deadline when that is shorter; so an engine that is slow leaves the next one time."""
    return own if cap is None else min(own, cap)


def _request(client: httpx.Client, method: str, url: str, within: float, **kwargs: Any) -> httpx.Response:
    """The answer, read whole, within `within` seconds (the engine's time): an answer that drips
    in is cut then, though each read is quick."""
    deadline = time.monotonic() + within
    with client.stream(method, url, **kwargs) as response:
        raw = bytearray()
        for chunk in response.iter_raw():
            raw += chunk
            if time.monotonic() >= deadline:
                raise httpx.ReadTimeout(f"no whole answer within {within:g} s", request=response.request)
    return httpx.Response(response.status_code, headers=response.headers, content=bytes(raw),
                          request=response.request)


def _text(html: str) -> str:
    return " ".join(LexborHTMLParser(f"<body>{html}</body>").body.text(deep=True).split()) if html else ""


class SearxngEngine:
    """SearXNG's JSON API (`format=json` must be enabled in its settings.yml)."""

    name = "searxng"

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        self.url = urljoin(url.rstrip("/") + "/", "search")
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int, *, timeout_s: float | None = None) -> list[Hit]:
        within = _capped(self.timeout_s, timeout_s)
        with _client(within) as client:
            response = _request(client, "GET", self.url, within, params={"q": query, "format": "json"})
            response.raise_for_status()
            rows: list[dict[str, Any]] = response.json().get("results", [])
        return [Hit(title=_text(r.get("title", "")), url=r["url"], snippet=_text(r.get("content", "")))
                for r in rows if r.get("url")][:max_results]


class DuckDuckGoEngine:
    """DuckDuckGo's no-JavaScript results page, parsed (result links unwrapped from its redirect)."""

    name = "duckduckgo"

    def __init__(self, url: str = "https://html.duckduckgo.com/html/", timeout_s: float = 5.0) -> None:
        self.url = url
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int, *, timeout_s: float | None = None) -> list[Hit]:
        within = _capped(self.timeout_s, timeout_s)
        with _client(within) as client:
            response = _request(client, "POST", self.url, within, data={"q": query})
            response.raise_for_status()
        hits: list[Hit] = []
        for result in LexborHTMLParser(response.text).css(".result"):
            classes = (result.attributes.get("class") or "").split()
            link = result.css_first("a.result__a")
            if "result--ad" in classes or link is None or not link.attributes.get("href"):
                continue
            snippet = result.css_first(".result__snippet")
            hits.append(Hit(title=" ".join(link.text(deep=True).split()), url=_unwrap(link.attributes["href"]),
                            snippet=" ".join(snippet.text(deep=True).split()) if snippet else ""))
            if len(hits) == max_results:
                break
        return hits


def _unwrap(href: str) -> str:
    """DuckDuckGo links its results through /l/?uddg=<the real URL>."""
    parts = urlsplit(href if "://" in href else "https:" + href if href.startswith("//") else href)
    target = parse_qs(parts.query).get("uddg")
    return target[0] if parts.path.startswith("/l/") and target else href


class BraveEngine:
    """The Brave Search API (an API key from api-dashboard.search.brave.com)."""

    name = "brave"

    def __init__(self, api_key: str, url: str = "https://api.search.brave.com/res/v1/web/search",
                 timeout_s: float = 5.0) -> None:
        self.url = url
        self.api_key = api_key
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int, *, timeout_s: float | None = None) -> list[Hit]:
        headers = {"X-Subscription-Token": self.api_key, "Accept": "application/json"}
        within = _capped(self.timeout_s, timeout_s)
        with _client(within, headers) as client:
            response = _request(client, "GET", self.url, within, params={"q": query, "count": max_results})
            response.raise_for_status()
            rows = response.json().get("web", {}).get("results", [])
        return [Hit(title=_text(r.get("title", "")), url=r["url"], snippet=_text(r.get("description", "")))
                for r in rows if r.get("url")][:max_results]


@dataclass(frozen=True)
class ChainResult:
    engine: str
    hits: list[Hit]
    errors: tuple[str, ...]  # the engines tried before, and why each failed


class EngineChain:
    """Engines in order: the first that answers wins; one that fails (error, timeout, bad reply)
    hands over to the next."""

    def __init__(self, engines: Sequence[SearchEngine]) -> None:
        self.engines = list(engines)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.engines]

    def search(self, query: str, max_results: int, *, deadline: float | None = None) -> ChainResult:
        """The first answer; with a `deadline` (time.monotonic()), each engine waits at most the
        time left before it, and no engine is asked once it has passed."""
        errors: list[str] = []
        for engine in self.engines:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                errors.append(f"{engine.name}: not asked: the search deadline had passed")
                continue
            try:
                return ChainResult(engine.name, engine.search(query, max_results, timeout_s=left), tuple(errors))
            except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
                errors.append(f"{engine.name}: {failure(exc)}")
        raise SearchFailed("; ".join(errors) or "no search engine configured")


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def failure(exc: Exception) -> str:
    """Why an engine failed, without the URL it asked (its query string is the query): httpx
    names it in a status error's text, and a report's errors reach the logs."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{type(exc).__name__}: HTTP {exc.response.status_code}"
    return f"{type(exc).__name__}: {_URL.sub('<url>', str(exc))}"


def make_engines(settings: Any) -> list[SearchEngine]:
    """The engines `settings.web_engines` names, in order (empty: external search is off)."""
    engines: list[SearchEngine] = []
    timeout = settings.web_timeout_s
    for name in settings.web_engines:
        if name == "searxng":
            if not settings.searxng_url:
                raise ValueError("MEMCTX_WEB_ENGINES names searxng: set MEMCTX_SEARXNG_URL")
            engines.append(SearxngEngine(settings.searxng_url, timeout))
        elif name == "duckduckgo":
            engines.append(DuckDuckGoEngine(settings.duckduckgo_url, timeout))
        elif name == "brave":
            if settings.brave_api_key is None:
                raise ValueError("MEMCTX_WEB_ENGINES names brave: set MEMCTX_BRAVE_API_KEY")
            engines.append(BraveEngine(settings.brave_api_key.get_secret_value(), settings.brave_url, timeout))
        else:
            raise ValueError(f"unknown search engine {name!r}: one of {', '.join(ENGINES)}")
    return engines
