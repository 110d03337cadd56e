"""A process's first App freezes the objects alive then (its imported libraries) out of the cyclic
garbage collector's reach, so that a full collection no longer stalls a request for tens of
milliseconds; MEMCTX_GC_FREEZE=false leaves the collector alone. Each case runs in a process of
its own: the freeze is once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import gc, json, sys
from memctx.app import freeze_startup_objects, open_app
from memctx.config import Settings
before = gc.get_freeze_count()
with open_app(Settings(database_url=sys.argv[1])):
    first = gc.get_freeze_count()
with open_app(Settings(database_url=sys.argv[1])):
    second = gc.get_freeze_count()
print(json.dumps({"before": before, "first": first, "second": second, "again": freeze_startup_objects()}))
"""


@pytest.mark.parametrize("freeze", ["true", "false"])
def test_the_first_app_of_a_process_freezes_what_is_alive_then(database_url, freeze):
    env = {**os.environ, "MEMCTX_GC_FREEZE": freeze}
    done = subprocess.run([sys.executable, "-c", PROBE, database_url], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.splitlines()[-1])
    assert counts["before"] == 0
    if freeze == "true":
        # the libraries' objects (tens of thousands), once: a second App freezes nothing more (and
        # a frozen object is still freed when its last reference goes)
        assert counts["first"] > 20_000 and counts["second"] <= counts["first"] and counts["again"] is False
    else:
        assert counts["first"] == counts["second"] == 0 and counts["again"] is True
