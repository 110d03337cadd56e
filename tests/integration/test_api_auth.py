"""Who may call the HTTP API: API keys (stored hashed, revocable) and Supabase JWTs (HS256 with the
project secret, RS256/ES256 from a JWKS served on loopback), and the caller-scoped App every handler
uses: its SQL runs as `authenticated` with the caller's claims, so row-level security decides."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import jwt
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from psycopg.rows import dict_row
from typer.testing import CliRunner

from api_support import build_api, client, serve
from memctx import keys
from memctx.cli import app as cli_app
from memctx.config import Settings
from memctx.models import NewMessage
from memctx.store import UnknownConversation

SECRET = "a-supabase-project-jwt-secret-of-32-chars"


def _token(user, key, alg, *, kid=None, exp_in=300, aud="authenticated", sub=None) -> str:
    claims = {"sub": sub if sub is not None else str(user), "aud": aud, "role": "authenticated",
              "exp": int(time.time()) + exp_in}
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid} if kid else None)


@pytest.fixture
def jwks_server() -> Iterator[tuple[str, dict]]:
    """A JWKS endpoint on loopback serving the public halves of an RSA and an EC key made here."""
    private = {"rsa-1": rsa.generate_private_key(public_exponent=65537, key_size=2048),
               "ec-1": ec.generate_private_key(ec.SECP256R1())}
    jwks = {"keys": []}
    for kid, key in private.items():
        algorithm = jwt.algorithms.RSAAlgorithm if kid.startswith("rsa") else jwt.algorithms.ECAlgorithm
        jwk = json.loads(algorithm.to_jwk(key.public_key()))
        jwks["keys"].append({**jwk, "kid": kid, "use": "sig", "alg": "RS256" if kid.startswith("rsa") else "ES256"})
    body = json.dumps(jwks).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/auth/v1/.well-known/jwks.json", private
    server.shutdown()
    server.server_close()


@pytest.fixture
def jwt_server(app, settings, jwks_server) -> Iterator[str]:
    url, _ = jwks_server
    jwt_settings = Settings(**{**settings.model_dump(), "jwt_secret": SECRET, "jwt_jwks_url": url})
    with serve(build_api(app, jwt_settings)) as base_url:
        yield base_url


def _status(base_url, credential=None, path="/v1/me") -> int:
    with client(base_url, credential) as c:
        return c.get(path).status_code


def test_no_bad_or_expired_credentials_get_401_with_a_bearer_challenge(jwt_server, jwks_server):
    user = uuid.uuid4()
    _, private = jwks_server
    wrong_secret = "another-secret-of-at-least-32-characters"
    bad = [None, "nonsense", "mck_unknown-key", _token(user, wrong_secret, "HS256"),
           _token(user, SECRET, "HS256", exp_in=-60), _token(user, SECRET, "HS256", aud="anon"),
           _token(user, SECRET, "HS256", sub="not-a-uuid"),
           _token(user, private["ec-1"], "ES256", kid="unknown-kid"),
           _token(user, rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256", kid="rsa-1"),
           jwt.encode({"sub": str(user), "aud": "authenticated", "exp": int(time.time()) + 60}, None, algorithm="none")]
    with client(jwt_server) as c:
        for credential in bad:
            r = c.get("/v1/me", headers={"Authorization": f"Bearer {credential}"} if credential else {})
            assert r.status_code == 401, credential
            assert r.headers["www-authenticate"] == "Bearer"
        assert c.get("/v1/me", headers={"Authorization": f"Basic {SECRET}"}).status_code == 401
        assert c.get("/healthz").status_code == 200  # operations need no credentials


def test_hs256_and_jwks_tokens_are_accepted_as_their_subject(jwt_server, jwks_server):
    user = uuid.uuid4()
    _, private = jwks_server
    for token in (_token(user, SECRET, "HS256"), _token(user, private["rsa-1"], "RS256", kid="rsa-1"),
                  _token(user, private["ec-1"], "ES256", kid="ec-1")):
        with client(jwt_server, token) as c:
            assert c.get("/v1/me").json() == {"user_id": str(user)}


def test_a_jwt_signed_with_the_public_jwks_key_as_hmac_secret_is_refused(jwt_server, jwks_server):
    """Algorithm confusion: an HS256 token whose secret is a published key must not pass."""
    user = uuid.uuid4()
    _, private = jwks_server
    public_pem = private["rsa-1"].public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    part = lambda obj: base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=")  # noqa: E731
    signed = part({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}) + b"." + part(
        {"sub": str(user), "aud": "authenticated", "exp": int(time.time()) + 60})
    mac = base64.urlsafe_b64encode(hmac.new(public_pem, signed, hashlib.sha256).digest()).rstrip(b"=")
    forged = (signed + b"." + mac).decode()
    assert _status(jwt_server, forged) == 401


def test_keys_are_shown_once_stored_hashed_listed_and_revoked(app, api_server, database_url):
    user = uuid.uuid4()
    made = keys.create_key(app.pool, user, "laptop")
    assert made.secret.startswith("mck_") and len(made.secret) > 40
    assert _status(api_server, made.secret) == 200
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        stored = conn.execute("select * from memctx.api_keys").fetchall()
        assert [r["key_hash"] for r in stored] == [keys.hash_key(made.secret)]
        assert stored[0]["prefix"] == made.secret[:10]  # what `keys list` shows: 6 of its 43 random characters
        tables = [r["t"] for r in conn.execute(
            "select format('%I.%I', table_schema, table_name) as t from information_schema.tables "
            "where table_schema in ('memctx', 'memctx_queue') and table_type = 'BASE TABLE'")]
        assert "memctx.api_keys" in tables and "memctx.context_requests" in tables
        for table in tables:  # the plain key is in no row of any table, once it has been used
            rows = conn.execute(f"select t::text as row from {table} t").fetchall()
            assert not [r for r in rows if made.secret[10:] in r["row"]], table
    second = keys.create_key(app.pool, user)
    assert [(k.name, k.revoked_at) for k in keys.list_keys(app.pool, user)] == [("laptop", None), (None, None)]
    keys.revoke_key(app.pool, made.key.id)
    assert _status(api_server, made.secret) == 401 and _status(api_server, second.secret) == 200
    with pytest.raises(LookupError):
        keys.revoke_key(app.pool, made.key.id)


def test_keys_commands_create_list_revoke(database_url, api_server, monkeypatch):
    monkeypatch.setenv("MEMCTX_DATABASE_URL", database_url)
    user = str(uuid.uuid4())
    runner = CliRunner()
    created = runner.invoke(cli_app, ["keys", "create", "--user", user, "--name", "ci"])
    assert created.exit_code == 0, created.output
    made = json.loads(created.stdout)
    assert _status(api_server, made["key"]) == 200
    listed = [json.loads(line) for line in runner.invoke(cli_app, ["keys", "list", "--user", user]).stdout.splitlines()]
    assert [(k["id"], k["name"]) for k in listed] == [(made["id"], "ci")] and "key" not in listed[0]
    assert runner.invoke(cli_app, ["keys", "revoke", made["id"]]).exit_code == 0
    assert _status(api_server, made["key"]) == 401
    again = runner.invoke(cli_app, ["keys", "revoke", made["id"]])
    assert again.exit_code == 2 and "no active API key" in again.stderr
    assert runner.invoke(cli_app, ["keys", "create", "--user", "nobody"]).exit_code == 2


def test_the_callers_app_runs_its_sql_as_the_caller_under_rls(app):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    conv = app.store.create_conversation(alice, external_id="a")
    app.store.append_messages(alice, conv.id, [NewMessage.build("user", "secret")])
    as_bob = app.for_user(bob)
    with as_bob.pool.connection() as conn:
        who = conn.execute("select current_user as role, auth.uid() as uid").fetchone()
        assert (who["role"], who["uid"]) == ("authenticated", bob)
        assert conn.execute("select count(*) as n from memctx.messages").fetchone()["n"] == 0
        with pytest.raises(psycopg.ProgrammingError):  # a commit inside the caller's transaction is refused
            conn.commit()
    with pytest.raises(UnknownConversation):  # even naming Alice as the user, Bob's SQL can not reach her rows
        as_bob.store.get_conversation(alice, conv.id)
    with app.pool.connection() as conn:  # the role and claims never leak into the shared pool
        assert conn.execute("select current_user <> 'authenticated' as owner, auth.uid() as uid").fetchone() == {
            "owner": True, "uid": None}
    assert [m.text for m in app.for_user(alice).store.list_messages(alice, conv.id)] == ["secret"]


def test_a_callers_app_is_kept_per_user_so_its_caches_outlive_one_request(app, monkeypatch):
    import memctx.app as app_module
    from memctx.assemble import assembler_for

    alice, bob, carol = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    assert app.for_user(alice) is app.for_user(alice)
    assert assembler_for(app.for_user(alice)) is assembler_for(app.for_user(alice))
    assert app.for_user(bob) is not app.for_user(alice) and app.for_user(bob).pool.user_id == bob
    monkeypatch.setattr(app_module, "SCOPED_APPS", 2)
    first = app.for_user(alice)
    app.for_user(bob), app.for_user(carol)  # alice is now the least recently used of three: dropped
    assert app.for_user(alice) is not first and app.for_user(alice).pool.user_id == alice


def test_a_request_with_a_body_looks_its_api_key_up_once(app, settings, api_key_for, monkeypatch):
    """The gate checks the credential before the body is read; the handler takes the user it found
    instead of asking the database again."""
    user = uuid.uuid4()
    key = api_key_for(user)
    lookups = []
    real = keys.key_user
    monkeypatch.setattr(keys, "key_user", lambda pool, credential: lookups.append(credential) or real(pool, credential))
    with serve(build_api(app, settings)) as url, client(url, key) as http:
        made = http.post("/v1/conversations", json={"external_id": "once"})
        assert made.status_code in (200, 201), made.text
        assert lookups == [key]
        lookups.clear()
        assert http.get("/v1/conversations").status_code == 200  # no body: the handler's own check
        assert lookups == [key]
