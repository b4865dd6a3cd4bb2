#!/usr/bin/env bash
# Create the virtual environment, install sayuri-async with its test and plot
# extras, and compile the numba code ahead of time (sayuri_async.precompile),
# so the first start of any command loads compiled code instead of compiling.
# Without an NVIDIA GPU, torch is pinned to the CPU build first (on the project's
# machines `pip install torch==2.13.0` takes it from local disk in seconds; an
# unpinned torch would pull a multi-gigabyte CUDA build). With a GPU, pip picks
# the CUDA build that `torch>=2.4` resolves to.
set -euo pipefail
PY=${1:-python3}
VENV=${2:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip install -q "torch>=2.4"
  else
    "$VENV/bin/python" -m pip install -q "torch==${SAYURI_TORCH_CPU_VERSION:-2.13.0}"
  fi
fi
"$VENV/bin/python" -m pip install -q -e ".[test,plot]"
"$VENV/bin/python" -m sayuri_async.precompile
