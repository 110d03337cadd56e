"""Fetching a result's page safely: timeouts, a byte cap, a redirect cap, HTML only, no cookies.

Owns: one GET per page and its redirects, each hop checked before it is requested: http(s) only,
and unless private addresses are allowed (tests, self-hosted engines) the host must resolve to
public addresses only — no private, loopback, link-local, reserved or multicast address (SSRF).
A page that is not HTML, too large or unreachable raises `FetchRefused` with the reason.
(The check resolves the name, then httpx resolves it again to connect: a DNS answer that
changes in between is not caught; the redirect and address checks are what it guarantees.)
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import urljoin, urlsplit

import httpx

USER_AGENT = "memctx/0.1 (external search for a chat assistant)"
HTML_TYPES = ("text/html", "application/xhtml+xml")

Resolver = Callable[[str, int], Sequence[str]]


class FetchRefused(RuntimeError):
    """The page was not fetched: the reason is the message."""


@dataclass(frozen=True)
class Page:
    url: str  # after redirects
    html: str
    bytes: int


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client (building one loads the CA store: ~100 ms)."""
    return ssl.create_default_context()


def system_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (IPv4 and IPv6)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchRefused(f"{host} does not resolve: {exc}") from exc
    return sorted({info[4][0] for info in infos})


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast
                or ip.is_unspecified or not ip.is_global)


class Fetcher:
    """Fetches HTML pages; safe to share between threads (each fetch has its own client)."""

    def __init__(self, *, timeout_s: float = 5.0, max_bytes: int = 2_000_000, max_redirects: int = 3,
                 allow_private: bool = False, resolve: Resolver = system_resolve) -> None:
        self.timeout = httpx.Timeout(timeout_s)
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.allow_private = allow_private
        self.resolve = resolve

    def check(self, url: str) -> None:
        """Raise FetchRefused unless `url` may be requested."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused(f"not an http(s) URL: {url}")
        if self.allow_private:
            return
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = self.resolve(parts.hostname, port)
        if not addresses:
            raise FetchRefused(f"{parts.hostname} does not resolve")
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise FetchRefused(f"{parts.hostname} resolves to a non-public address ({', '.join(private)})")

    def fetch(self, url: str) -> Page:
        with httpx.Client(timeout=self.timeout, follow_redirects=False, trust_env=False, verify=tls_context(),
                          headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml"}) as client:
            for _ in range(self.max_redirects + 1):
                self.check(url)
                client.cookies.clear()  # no cookies, not even between the hops of one page
                try:
                    with client.stream("GET", url) as response:
                        if response.is_redirect:
                            location = response.headers.get("location")
                            if not location:
                                raise FetchRefused(f"{url}: redirect without a location")
                            url = urljoin(url, location)
                            continue
                        return self._read(url, response)
                except httpx.HTTPError as exc:
                    raise FetchRefused(f"{url}: {type(exc).__name__}: {exc}") from exc
            raise FetchRefused(f"more than {self.max_redirects} redirects")

    def _read(self, url: str, response: httpx.Response) -> Page:
        if response.status_code != 200:
            raise FetchRefused(f"{url}: HTTP {response.status_code}")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in HTML_TYPES:
            raise FetchRefused(f"{url}: not HTML ({kind or 'no content type'})")
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise FetchRefused(f"{url}: {declared} bytes, over the cap of {self.max_bytes}")
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                raise FetchRefused(f"{url}: over the cap of {self.max_bytes} bytes")
        encoding = response.charset_encoding or "utf-8"
        try:
            html = body.decode(encoding, errors="replace")
        except LookupError:
            html = body.decode("utf-8", errors="replace")
        return Page(url=url, html=html, bytes=len(body))
