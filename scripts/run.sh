#!/usr/bin/env bash
# Install memctx into .venv and run it on the embedded default: check the machine and Postgres
# (memctx doctor), then start Postgres, migrate, ingest the demo conversations shipped in
# memctx/data/demo.jsonl, and print what was stored and a working context.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  python3 -m venv .venv
fi
echo "==> pip: installing memctx into .venv (quiet; about a minute the first time)"
.venv/bin/python -m pip install -qq -c constraints.txt --upgrade pip
.venv/bin/python -m pip install -qq -c constraints.txt -e .
echo "==> memctx doctor: checking this machine and the database"
.venv/bin/memctx doctor
echo "==> memctx demo: migrating, ingesting the demo conversations, summarizing them"
.venv/bin/memctx demo "$@"
if [ -z "${MEMCTX_DATABASE_URL:-}" ]; then
  echo
  echo "The embedded Postgres is still running (.venv/bin/memctx db status says where)."
  echo "Stop it with: .venv/bin/memctx db stop"
fi
