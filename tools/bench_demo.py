#!/usr/bin/env python3
"""`make demo`'s self-play, timed: this checkout against an earlier revision,
runs alternating, so that the machine's drift falls on both alike.

Each run is the demo's own command (``sayuri-async selfplay --config
configs/selfplay-9x9.toml --weights WEIGHTS --num-games N``, WEIGHTS the
shipped 9x9 network, ``sayuri_async.net.shipped.SHIPPED[9]``, which the
Makefile's ``demo`` recipe names too) with ``--no-tui`` and a fresh
output folder, run from the checkout itself (``new``) or from a worktree
of ``--old`` (``old``), with the same Python. Per run it reports:

- ``positions_s``: positions written over the engines' elapsed time (from
  their start, after the device's measurement), the rate the summary shows;
- ``wall_positions_s``: positions over the whole command's wall time (start,
  measurement, ``auto``'s picks and the last games included);
- ``evals_s`` and the first progress line's figures (evals/s, efficiency,
  batch, verdict) and the ``auto:`` line, where the run prints them.

The first run of each side is a warm-up (numba's cache, the OS's file
cache) and is not counted. The last line is a JSON object with the medians
and the ratio new / old.

    nice -n -15 python tools/bench_demo.py --old 3066e2a --runs 3
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sayuri_async.net.shipped import SHIPPED

ROOT = Path(__file__).resolve().parents[1]
DEMO = ["selfplay", "--config", "configs/selfplay-9x9.toml", "--weights", str(SHIPPED[9].relative_to(ROOT)),
        "--no-tui"]
SUMMARY = re.compile(r"games (\d+)\s+positions (\d+) in \d+ chunk\(s\)\s+elapsed ([\d.]+)s")
EVALS = re.compile(r"nnEvals/s (\d+)")
PROGRESS = re.compile(r"evals/s\s+(\d+)(?: \(eff\s*(\d+)%\))?\s+batch\s+([\d.]+)/(\d+).*\| (.*)$")


def worktree(rev: str) -> Path:
    """A detached worktree of ``rev`` in the temporary folder, kept for the
    next run (its numba cache is compiled on its first warm-up run); remove
    it with ``git worktree remove PATH``."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True, capture_output=True,
                         text=True).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"sayuri-bench-demo-{sha}"
    if not (where / "sayuri_async").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(where), sha], check=True)
    return where


def one_run(code: Path, games: int, extra: list[str]) -> dict:
    out = tempfile.mkdtemp(prefix="bench-demo-out-")
    env = dict(os.environ, PYTHONPATH=str(code))
    cmd = [sys.executable, "-P", "-m", "sayuri_async", *DEMO, "--num-games", str(games), "--out", out, *extra]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    text = p.stdout + p.stderr
    m = SUMMARY.search(text)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"bench_demo: the run from {code} failed ({p.returncode}): {text.strip().splitlines()[-1:]}")
    games_done, positions, elapsed = int(m.group(1)), int(m.group(2)), float(m.group(3))
    ev = EVALS.search(text)
    first = next((PROGRESS.search(line) for line in text.splitlines() if PROGRESS.search(line)), None)
    auto = next((line for line in text.splitlines() if line.startswith("auto:")), "")
    return {"games": games_done, "positions": positions, "elapsed_s": elapsed, "wall_s": round(wall, 1),
            "positions_s": round(positions / elapsed, 1), "wall_positions_s": round(positions / wall, 1),
            "evals_s": int(ev.group(1)) if ev else None,
            "first_line": None if first is None else {"evals_s": int(first.group(1)), "efficiency": first.group(2),
                                                      "batch": f"{first.group(3)}/{first.group(4)}",
                                                      "verdict": first.group(5)},
            "auto": auto}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--old", default="HEAD~1", help="the earlier revision to compare with")
    p.add_argument("--runs", type=int, default=3, help="counted runs of each side (after one warm-up each)")
    p.add_argument("--games", type=int, default=24, help="games a run (the demo's 24)")
    a = p.parse_args(argv)
    old = worktree(a.old)
    print(f"old: {a.old} in {old}", flush=True)
    sides = {"old": old, "new": ROOT}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for k in range(a.runs + 1):
        for name, code in sides.items():
            r = one_run(code, a.games, [])
            if k > 0:
                runs[name].append(r)
            print(f"{'warm-up' if k == 0 else f'run {k}'} {name}: {json.dumps(r)}", flush=True)
    med = {n: {f: statistics.median(r[f] for r in rs) for f in ("positions_s", "wall_positions_s")}
           for n, rs in runs.items()}
    result = {"old": a.old, "games": a.games, "runs": a.runs, "median": med,
              "ratio_positions_s": round(med["new"]["positions_s"] / med["old"]["positions_s"], 2),
              "ratio_wall_positions_s": round(med["new"]["wall_positions_s"] / med["old"]["wall_positions_s"], 2),
              "load_per_core": round(os.getloadavg()[0] / (os.cpu_count() or 1), 2)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
