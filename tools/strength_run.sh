#!/usr/bin/env bash
# The continuation runs of docs/strength.md, kept going across machines that
# start from a fresh clone.
#
#   tools/strength_run.sh start [RUN]   restore the workspace from its packed copy
#                                       (logs/strength/RUN/workspace.tar) when
#                                       runs/strength/RUN is missing, then run
#                                       the loop in the background at nice 19
#   tools/strength_run.sh stop [RUN]    end the loop (SIGTERM: it stops after the
#                                       step in progress; a kill at any moment is
#                                       safe too) and wait for it
#   tools/strength_run.sh pack [RUN]    stop, then pack what a resume needs (state,
#                                       networks, the newest checkpoint, held-out, window and
#                                       rehearsal chunks; not the SGF files) and copy
#                                       the curves and the log to logs/strength/RUN/
#   tools/strength_run.sh status [RUN]  the loop's process, its last lines and the
#                                       loop time its log records (tools/loop_hours.py)
#
# RUN is one of
#   rehearse         (the default) configs/loop-9x9-rehearse.toml from
#                    weights/9x9/gnugo9c-4x48.safetensors, GNU Go positions
#                    rehearsed in every window (runs/strength/rehearse/rehearsal);
#   continue         configs/loop-9x9-continue.toml from the same network,
#                    self-play data only;
#   distil-continue  configs/loop-9x9-distil-continue.toml from the distilled
#                    6b96c network (logs/strength/distil/distil-6b96c-s4000.safetensors,
#                    configs/train-9x9-distil.toml); it rehearses its distillation
#                    set (runs/strength/distil-continue/rehearsal, packed with the
#                    workspace) and measures on the rehearse run's reference
#                    positions, restored from its packed copy when missing.
# RUN's workspace is runs/strength/RUN, its log runs/strength/RUN.log, its
# packed copy logs/strength/RUN/.
#
# The loop runs from a snapshot of the code (a detached git worktree of HEAD
# in runs/strength/code-RUN, refreshed at each start), so that editing the
# checkout while it runs changes nothing under it: a loop that imports a
# module lazily would otherwise load a newer version than the rest. (-P keeps
# the working folder off the import path, so the snapshot is what runs.)
# THREADS (default 1) sets the loop's torch threads: THREADS=2 gives it both
# cores of these machines when nothing else needs them.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${2:-rehearse}
INIT=weights/9x9/gnugo9c-4x48.safetensors
NEEDS=
case "$RUN" in
  rehearse|continue) CONFIG=configs/loop-9x9-$RUN.toml ;;
  distil-continue) CONFIG=configs/loop-9x9-distil-continue.toml; INIT=logs/strength/distil/distil-6b96c-s4000.safetensors
                   NEEDS=rehearse ;;
  *) echo "tools/strength_run.sh: unknown run '$RUN' (rehearse, continue or distil-continue)" >&2; exit 2 ;;
esac
WS=runs/strength/$RUN
LOG=runs/strength/$RUN.log
KEEP=logs/strength/$RUN
CODE=runs/strength/code-$RUN
PY=${PY:-.venv/bin/python}
THREADS=${THREADS:-1}

pids() { pgrep -f "sayuri_async loop .*--workspace $WS" || true; }

case "${1:-}" in
  start)
    if [ -n "$(pids)" ]; then echo "already running: $(pids)"; exit 0; fi
    for run in $NEEDS $RUN; do
      if [ ! -d "runs/strength/$run" ] && [ -f "logs/strength/$run/workspace.tar" ]; then
        mkdir -p runs/strength
        tar -xf "logs/strength/$run/workspace.tar" -C runs/strength
        echo "restored runs/strength/$run from logs/strength/$run/workspace.tar"
      fi
    done
    mkdir -p "$(dirname "$LOG")"
    [ -f "$LOG" ] || { [ -f "$KEEP/loop.log" ] && cp "$KEEP/loop.log" "$LOG"; } || true
    if [ -d "$CODE" ]; then git -C "$CODE" checkout -q --detach "$(git rev-parse HEAD)"
    else git worktree add -q --detach "$CODE" HEAD; fi
    echo "code: $(git -C "$CODE" log -1 --format='%h %s' | cut -c1-72)"
    OMP_NUM_THREADS=$THREADS PYTHONPATH="$PWD/$CODE" nohup nice -n 19 "$PY" -P -m sayuri_async loop --init "$INIT" \
      --config "$CONFIG" --workspace "$WS" >>"$LOG" 2>&1 &
    echo "started: pid $!, log $LOG"
    ;;
  stop)
    for p in $(pids); do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 1 120); do [ -z "$(pids)" ] && break; sleep 1; done
    if [ -n "$(pids)" ]; then
      echo "still running after 120 s; killing (a kill is safe: the loop resumes from its last whole step)"
      for p in $(pids); do kill -KILL "$p" 2>/dev/null || true; done
    fi
    echo "stopped"
    ;;
  pack)
    "$0" stop "$RUN"
    mkdir -p "$KEEP"
    tmp="$KEEP/.workspace.tar.tmp"
    # every training checkpoint but the newest is left out: training resumes from the newest
    older=()
    for c in $(ls "$WS"/checkpoints/checkpoints/ckpt-*.pt 2>/dev/null | sort | head -n -1); do
      older+=(--exclude="$(basename "$WS")/checkpoints/checkpoints/$(basename "$c")")
    done
    tar -cf "$tmp" -C "$(dirname "$WS")" --exclude="$(basename "$WS")/sgf" --exclude="$(basename "$WS")/matches" \
      "${older[@]}" "$(basename "$WS")"
    mv "$tmp" "$KEEP/workspace.tar"
    for f in logs/generations.csv logs/curves.png state.json; do
      [ -f "$WS/$f" ] && cp "$WS/$f" "$KEEP/$(basename "$f")"
    done
    [ -f "$WS/checkpoints/train_log.csv" ] && cp "$WS/checkpoints/train_log.csv" "$KEEP/train_log.csv"
    [ -f "$LOG" ] && cp "$LOG" "$KEEP/loop.log"
    echo "packed $WS into $KEEP/workspace.tar ($(du -h "$KEEP/workspace.tar" | cut -f1))"
    ;;
  status)
    echo "process: $(pids | tr '\n' ' ')"
    [ -f "$LOG" ] && tail -n 3 "$LOG" | cut -c1-200
    [ -f "$LOG" ] && "$PY" tools/loop_hours.py "$LOG" | tail -n 1
    ;;
  *)
    echo "usage: tools/strength_run.sh start|stop|pack|status [rehearse|continue|distil-continue]" >&2
    exit 2
    ;;
esac
