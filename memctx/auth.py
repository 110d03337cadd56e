"""Who calls: a bearer credential resolved to a user, and that user's row-level-security scoped App.

Owns: reading an `Authorization: Bearer <credential>` header and deciding whose it is, for every
door (the HTTP API, the MCP server over HTTP and stdio); the doors turn `Unauthorized` into their
own refusal. It knows no web framework. The credential is a memctx API key (`mck_…`, looked up by
its hash with the owner's pool: the only query here that runs before the caller is known) or a
Supabase JWT: HS256 with `MEMCTX_JWT_SECRET`, or RS256 / ES256 checked against the keys at
`MEMCTX_JWT_JWKS_URL`. `exp`, `aud` and a UUID `sub` are
required. Anything else is `Unauthorized`, which a door answers without a detail of why. Handlers
get a `Caller` whose `app` is `App.for_user(...)`: every query of theirs runs under RLS.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import httpx
import jwt

from memctx import keys
from memctx.app import App
from memctx.config import Settings

ASYMMETRIC = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "EdDSA")
# A token naming a key id the cached JWKS lacks refetches it, at most this often (key rotation).
JWKS_REFRESH_MIN_S = 10.0


@dataclass(frozen=True)
class Caller:
    user_id: UUID
    app: App  # already scoped: App.for_user(user_id)


class Unauthorized(Exception):
    """The credential is missing or not valid; never says more to the client."""


class JwksCache:
    """The JWKS at a URL, fetched with httpx and kept for `ttl_s`; refetched early for an unknown key id."""

    def __init__(self, url: str, ttl_s: float) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched = 0.0
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> jwt.PyJWK:
        with self._lock:
            age = time.monotonic() - self._fetched
            if age > self.ttl_s or (kid not in self._keys and age > JWKS_REFRESH_MIN_S):
                self._fetch()
            if kid is None and len(self._keys) == 1:
                return next(iter(self._keys.values()))
            if kid not in self._keys:
                raise Unauthorized(f"no JWKS key {kid!r}")
            return self._keys[kid]

    def _fetch(self) -> None:
        try:
            response = httpx.get(self.url, timeout=5.0)
            response.raise_for_status()
            jwks = jwt.PyJWKSet.from_dict(response.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            raise Unauthorized(f"JWKS unavailable: {exc}") from exc
        self._keys = {k.key_id: k for k in jwks.keys}
        self._fetched = time.monotonic()


class Authenticator:
    """Resolves a bearer credential to a user id, with the settings' secret and JWKS."""

    def __init__(self, app: App, settings: Settings) -> None:
        self.app = app
        self.secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
        self.audience = settings.jwt_audience
        self.jwks = JwksCache(settings.jwt_jwks_url, settings.jwks_cache_s) if settings.jwt_jwks_url else None

    def caller(self, credential: str) -> Caller:
        """The credential's user, with the app scoped to them (row-level security)."""
        return self.caller_of(self.user(credential))

    def caller_of(self, user: UUID) -> Caller:
        """A user already authenticated, with the app scoped to them."""
        return Caller(user, self.app.for_user(user))

    def user(self, credential: str) -> UUID:
        if keys.looks_like_key(credential):
            user = keys.key_user(self.app.pool, credential)
            if user is None:
                raise Unauthorized("unknown or revoked API key")
            return user
        return self._jwt_user(credential)

    def _jwt_user(self, token: str) -> UUID:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized("malformed token") from exc
        alg = header.get("alg")
        key: Any
        if alg == "HS256" and self.secret:
            key, algorithms = self.secret, ["HS256"]
        elif alg in ASYMMETRIC and self.jwks is not None:
            jwk = self.jwks.key(header.get("kid"))
            key, algorithms = jwk, [jwk.algorithm_name or alg]
        else:
            raise Unauthorized(f"tokens signed with {alg!r} are not accepted here")
        try:
            claims = jwt.decode(token, key, algorithms=algorithms, audience=self.audience,
                                options={"require": ["exp", "sub", "aud"]})
            return UUID(str(claims["sub"]))
        except (jwt.PyJWTError, ValueError) as exc:
            raise Unauthorized("invalid token") from exc


def bearer(authorization: str | None) -> str:
    """The credential of an `Authorization: Bearer <credential>` header value."""
    scheme, _, credential = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthorized("no bearer credential")
    return credential.strip()
