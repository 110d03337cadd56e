#!/usr/bin/env bash
# Install memctx into .venv and run it on the embedded default: start Postgres, migrate,
# ingest the demo conversation shipped in memctx/data/demo.jsonl, print what was stored.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/memctx demo "$@"
