#!/usr/bin/env python3
"""The loop time a `sayuri-async loop` log records: how long the loop ran, in
all and per start, to hold a run to a cap ("at most 24 hours of loop time").

A log (``tools/strength_run.sh``'s ``runs/strength/RUN.log``, packed as
``logs/strength/RUN/loop.log``) is the output of one loop start after
another. Vocabulary:

  start      a line ``[loop HH:MM:SS] workspace ...: generation G, phase P``:
             the loop (re)started there.
  clock      the ``[loop HH:MM:SS]`` stamps (the time of day; a stamp
             earlier than the one before it is the next day) and self-play's
             progress lines ``[ 7714.4s] games ...``: seconds since the
             ``generation G: self-play`` line before them.
  end        the last time a start's lines give: its last stamp or its last
             self-play progress line, whichever is later. A start that
             stopped during training (whose lines carry no time) counts to
             its last stamp, so the total is a lower bound by at most the
             training steps after it.

    python tools/loop_hours.py logs/strength/distil-continue/loop.log

prints one line a start (its first stamp, its hours, the generation and
phase it began at) and, last, a JSON object with the total.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

STAMP = re.compile(r"^\[loop (\d\d):(\d\d):(\d\d)\] (.*)$")
START = re.compile(r"workspace .*: generation (\d+), phase (\w+)")
SELFPLAY = re.compile(r"generation \d+: self-play ")
PROGRESS = re.compile(r"^\[\s*([\d.]+)s\] games")
DAY = 86400.0


def starts(lines: list[str]) -> list[dict]:
    """One record a start: first and end time (seconds, unwrapped across midnight), generation, phase."""
    runs: list[dict] = []
    last = 0.0  # the latest time seen, unwrapped
    selfplay_at: float | None = None
    for line in lines:
        m = STAMP.match(line)
        if m:
            if "--init" in m.group(4):  # a restart's first line, before its start line
                continue
            t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3)) + (last // DAY) * DAY
            if t < last:
                t += DAY
            last = t
            s = START.search(m.group(4))
            if s:
                runs.append({"first": t, "end": t, "generation": int(s.group(1)), "phase": s.group(2)})
                selfplay_at = None
            elif runs:
                runs[-1]["end"] = t
            if SELFPLAY.search(m.group(4)):
                selfplay_at = t
            continue
        p = PROGRESS.match(line)
        if p and runs and selfplay_at is not None:
            runs[-1]["end"] = max(runs[-1]["end"], selfplay_at + float(p.group(1)))
            last = max(last, runs[-1]["end"])
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", help="a loop log (runs/strength/RUN.log or logs/strength/RUN/loop.log)")
    a = ap.parse_args(argv)
    path = Path(a.log)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as e:
        print(f"loop_hours: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    runs = starts(lines)
    if not runs:
        print(f"loop_hours: {path} has no loop start ('[loop HH:MM:SS] workspace ...: generation G, phase P')",
              file=sys.stderr)
        return 2
    for r in runs:
        first = r["first"] % DAY
        print(f"{int(first // 3600):02d}:{int(first % 3600 // 60):02d}  {(r['end'] - r['first']) / 3600:5.2f} h  "
              f"from generation {r['generation']}, {r['phase']}")
    total = sum(r["end"] - r["first"] for r in runs) / 3600
    print(json.dumps({"log": str(path), "starts": len(runs), "hours": round(total, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
