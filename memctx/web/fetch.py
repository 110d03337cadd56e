"""Fetching a result's page safely: one deadline, a byte cap, a redirect cap, HTML only, no cookies.

Owns: one GET per page and its redirects, each hop checked before it is requested: http(s) only,
and unless private addresses are allowed (tests, self-hosted engines) the host must resolve to
public addresses only — no private, loopback, link-local, reserved or multicast address (SSRF).
The connection goes to the address that was checked (the URL names the address, the Host header
and TLS's server name the host): a DNS answer that changes after the check (rebinding) is never
asked for. The whole fetch, redirects and a page that drips in included, has one deadline.
A page that is not HTML, too large, too slow or unreachable raises `FetchRefused` with the reason.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import urljoin, urlsplit, urlunsplit

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
    """One verifying TLS context for every client (building one loads the whole CA store)."""
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


@dataclass(frozen=True)
class Target:
    """Where one hop connects: the URL with the checked address in place of the host, and the
    host's name for the Host header and TLS (server name and certificate check)."""

    url: str
    host_header: str
    server_name: str | None


class Fetcher:
    """Fetches HTML pages; safe to share between threads (each fetch has its own client).
    `public` says which addresses count as public (a test may stand a loopback server in for a site)."""

    def __init__(self, *, timeout_s: float = 5.0, max_bytes: int = 2_000_000, max_redirects: int = 3,
                 allow_private: bool = False, resolve: Resolver = system_resolve,
                 public: Callable[[str], bool] = is_public) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.allow_private = allow_private
        self.resolve = resolve
        self.public = public

    def check(self, url: str) -> Target:
        """Where `url` may be requested; FetchRefused unless it may."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused(f"not an http(s) URL: {url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = self.resolve(parts.hostname, port)
        if not addresses:
            raise FetchRefused(f"{parts.hostname} does not resolve")
        private = [a for a in addresses if not self.public(a)]
        if private and not self.allow_private:
            raise FetchRefused(f"{parts.hostname} resolves to a non-public address ({', '.join(private)})")
        address = next((a for a in addresses if ":" not in a), addresses[0]).split("%")[0]  # IPv4 first
        netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        host = parts.netloc.rpartition("@")[2]  # without any user:password@
        return Target(urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), host,
                      parts.hostname if parts.scheme == "https" else None)

    def fetch(self, url: str, *, deadline: float | None = None) -> Page:
        """The page at `url`, within the fetch timeout or by `deadline` (time.monotonic()),
        whichever comes first."""
        own = time.monotonic() + self.timeout_s
        limit = f"within {self.timeout_s:g} s" if deadline is None or own <= deadline else "by the search's deadline"
        deadline = own if deadline is None else min(own, deadline)
        with httpx.Client(follow_redirects=False, trust_env=False, verify=tls_context(),
                          headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml"}) as client:
            for _ in range(self.max_redirects + 1):
                target = self.check(url)
                client.cookies.clear()  # no cookies, not even between the hops of one page
                try:
                    with client.stream("GET", target.url, headers={"Host": target.host_header},
                                       timeout=_left(url, deadline, limit),
                                       extensions={"sni_hostname": target.server_name} if target.server_name
                                       else {}) as response:
                        if response.is_redirect:
                            location = response.headers.get("location")
                            if not location:
                                raise FetchRefused(f"{url}: redirect without a location")
                            url = urljoin(url, location)
                            continue
                        return self._read(url, response, deadline, limit)
                except httpx.HTTPError as exc:
                    raise FetchRefused(f"{url}: {type(exc).__name__}: {exc}") from exc
            raise FetchRefused(f"more than {self.max_redirects} redirects")

    def _read(self, url: str, response: httpx.Response, deadline: float, limit: str) -> Page:
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
            _left(url, deadline, limit)  # a page that drips in is cut at the deadline
        encoding = response.charset_encoding or "utf-8"
        try:
            html = body.decode(encoding, errors="replace")
        except LookupError:
            html = body.decode("utf-8", errors="replace")
        return Page(url=url, html=html, bytes=len(body))


def _left(url: str, deadline: float, limit: str) -> float:
    """Seconds left before the fetch's deadline (each read waits at most that long)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchRefused(f"{url}: not fetched {limit}")
    return left
