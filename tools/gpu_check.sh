#!/usr/bin/env bash
# The checks that need a CUDA GPU, as one short script for a machine that has
# one (about 8 minutes on an H200). It writes every figure under
# ${OUT:-gpu-check}/ and prints a summary; run it from the repository root:
#
#   bash tools/gpu_check.sh            # or: OUT=/some/dir bash tools/gpu_check.sh
#
# 1. the CUDA tests (graphs vs eager vs CPU, bf16 tolerance, stream, pinned input)
# 2. bench_infer: evals/s by batch, eager vs CUDA graph, against sayuri_async/net/device_tables/h200.json
# 3. bench_selfplay: evals/s, avgBatchSize, GPU busy with 1, 2, 4, 8 engine processes
# 4. bench_raise: batch_size raised live from 32 to 128 on 20b256c 19x19 (time to 95% of the ceiling, longest stall)
# 5. bench_train: the training pipeline against a bare forward+backward loop
set -uo pipefail
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
if ! "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "gpu_check: no CUDA device visible to torch" >&2
  exit 2
fi
nvidia-smi -L | tee "$OUT/device.txt"
step() { echo "== $1"; shift; timeout "${STEP_TIMEOUT:-180}" "$@"; echo "   (rc $?)"; }
step "CUDA tests" "$PY" -m pytest -q tests/test_backends.py -k cuda 2>&1 | tee "$OUT/tests.txt" | tail -3
step "infer 9x9 6b96c" "$PY" tools/bench_infer.py --device cuda:0 --board 9 --blocks 6 --channels 96 --seconds 1 \
  > "$OUT/infer-9-6b96c.txt" 2>&1; tail -1 "$OUT/infer-9-6b96c.txt"
step "infer 19x19 10b128c" "$PY" tools/bench_infer.py --device cuda:0 --board 19 --blocks 10 --channels 128 --seconds 1 \
  > "$OUT/infer-19-10b128c.txt" 2>&1; tail -1 "$OUT/infer-19-10b128c.txt"
step "infer 19x19 20b256c" "$PY" tools/bench_infer.py --device cuda:0 --board 19 --blocks 20 --channels 256 --seconds 1 \
  > "$OUT/infer-19-20b256c.txt" 2>&1; tail -1 "$OUT/infer-19-20b256c.txt"
for net in "10 128" "20 256"; do
  set -- $net
  step "selfplay 19x19 ${1}b${2}c procs 1 2 4 8" "$PY" tools/bench_selfplay.py --backend torch --device cuda:0 \
    --board 19 --blocks "$1" --channels "$2" --parallel-games 256 --batch-size 128 --procs 1 2 4 8 \
    --warmup 15 --seconds 10 > "$OUT/selfplay-19-${1}b${2}c.txt" 2>&1
  grep "^board" "$OUT/selfplay-19-${1}b${2}c.txt"
done
step "raise 19x19 20b256c 32 -> 128" "$PY" tools/bench_raise.py --device cuda:0 --blocks 20 --channels 256 --board 19 \
  --from 32 --to 128 --games 64 > "$OUT/raise-19-20b256c.txt" 2>&1; tail -2 "$OUT/raise-19-20b256c.txt" | head -1
step "train 9x9 6b96c" "$PY" tools/bench_train.py --device cuda:0 --board 9 --blocks 6 --channels 96 --steps 200 \
  > "$OUT/train-9-6b96c.txt" 2>&1; tail -1 "$OUT/train-9-6b96c.txt"
echo "gpu_check: figures in $OUT/"
