#!/usr/bin/env bash
# Install memctx into .venv and run it on the embedded default: check the machine and Postgres
# (memctx doctor), then start Postgres, migrate, ingest the demo conversations shipped in
# memctx/data/demo.jsonl, and print what was stored and a working context.
#
# A second run skips what has nothing to do, and says so: pip, while pyproject.toml, the pins
# (constraints.txt) and this script are unchanged since .venv was installed (the key is their
# SHA-256, kept in .venv/.memctx-installed; delete it to reinstall); the doctor's disassembly of
# the Postgres binaries, while their bytes are unchanged (memctx doctor keeps that cache beside
# the data).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.memctx-installed
key="$(cat pyproject.toml constraints.txt "$0" | sha256sum | cut -d' ' -f1)"
if [ -x .venv/bin/memctx ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
  echo "==> pip: skipped (pyproject.toml, constraints.txt and run.sh unchanged since .venv was installed; rm $stamp to reinstall)"
else
  echo "==> pip: installing memctx into .venv (quiet; about a minute the first time)"
  .venv/bin/python -m pip install -qq -c constraints.txt --upgrade pip
  .venv/bin/python -m pip install -qq -c constraints.txt -e .
  echo "$key" > "$stamp"
fi
echo "==> memctx doctor: checking this machine and the database"
.venv/bin/memctx doctor
echo "==> memctx demo: migrating, ingesting the demo conversations, summarizing them"
.venv/bin/memctx demo "$@"
if [ -z "${MEMCTX_DATABASE_URL:-}" ]; then
  echo
  echo "The embedded Postgres is still running (.venv/bin/memctx db status says where)."
  echo "Stop it with: .venv/bin/memctx db stop"
fi
