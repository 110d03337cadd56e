#!/usr/bin/env bash
# Install memctx into .venv and run it on the embedded default: check the machine and Postgres
# (memctx doctor), then start Postgres, migrate, ingest the demo conversations shipped in
# memctx/data/demo.jsonl, and print what was stored and a working context.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
.venv/bin/memctx doctor
exec .venv/bin/memctx demo "$@"
