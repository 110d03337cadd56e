#!/usr/bin/env bash
# Refresh constraints.txt, the versions that scripts/test.sh and scripts/run.sh install: resolve
# memctx with the extras they install (test, redis, e5), newest from the package index, in a
# scratch venv, and write every package pip installed there with its version. The wheel's own
# dependency ranges (pyproject.toml) stay open; only this project's commands use the file.
#
#   scripts/lock.sh            # then run scripts/test.sh, and commit constraints.txt if it passes
#
# scripts/test.sh --latest runs the suite on the newest versions without touching the file, and
# says which packages moved from it.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
pip=("$scratch/venv/bin/python" -m pip)
"${pip[@]}" install -qq --upgrade pip setuptools wheel
"${pip[@]}" install -qq ".[test,redis,e5]"
{
  echo "# The versions scripts/test.sh and scripts/run.sh install (pip constraints), for $("$scratch/venv/bin/python" -c 'import platform; print(f"CPython {platform.python_version()} on {platform.system()} {platform.machine()}")')."
  echo "# Written by scripts/lock.sh on $(date -u +%Y-%m-%d); run it to refresh them."
  "${pip[@]}" freeze --all --exclude memctx | LC_ALL=C sort -f
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages"
