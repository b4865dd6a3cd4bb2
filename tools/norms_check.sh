#!/usr/bin/env bash
# The batch-norm question on one loop generation: its candidate as exported
# (statistics as training left them) against the same network with its
# statistics recomputed on the generation's newest 8,192 positions
# (sayuri_async/train/norm_stats.py), and the network that played the
# games, judged on the generation's held-out positions (tools/value_check.py).
#
#   tools/norms_check.sh runs/strength/continue 1 [START_WEIGHTS]
#
# The recomputed copy is written to a temporary folder and removed; nothing
# in the workspace changes. The last line is value_check's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
WS=${1:?usage: tools/norms_check.sh WORKSPACE GENERATION [START_WEIGHTS]}
GEN=${2:?usage: tools/norms_check.sh WORKSPACE GENERATION [START_WEIGHTS]}
BIN=${BIN:-.venv/bin}
W=$(printf "%s/weights/gen-%06d.safetensors" "$WS" "$GEN")
PREV=${3:-$(printf "%s/weights/gen-%06d.safetensors" "$WS" 0)}
[ -f "$W" ] || { echo "norms_check: $W: no such network" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cp "$W" "$TMP/recomputed.safetensors"
"$BIN/python" - "$TMP/recomputed.safetensors" "$WS/data" "$GEN" <<'PY'
import sys
from pathlib import Path
from sayuri_async.train.norm_stats import recompute_export
print("recomputed:", recompute_export(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), 8192, seed=int(sys.argv[3])))
PY
"$BIN/python" tools/value_check.py "$PREV" "$W" "$TMP/recomputed.safetensors" --data "$WS/holdout" \
  --generation "$GEN" --max-positions 20000
