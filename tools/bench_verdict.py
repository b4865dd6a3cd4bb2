#!/usr/bin/env python3
"""Does the verdict's advice work? Over a grid of settings on the device
model: measure a point, take the verdict's advice (``report.Verdict.advice``:
the settings it says to change), measure the advised point, and compare.

The property: applying the advice once never lowers evals/s beyond noise
(the two points' window spread, at least ``--noise``); the figures say how
often it raised them. Points are measured as ``sayuri-async tune`` measures
them (``selfplay/tune.py``: warm-up excluded, windows until they agree), on
the device model of each net (``sayuri_async/net/device_model.py``, the
shipped H200 table). Results go to ``--results`` as JSON lines, so an
interrupted run continues where it stopped; the last line printed is a JSON
summary.

    nice -n -15 python tools/bench_verdict.py                 # the whole grid (long)
    python tools/bench_verdict.py --nets 20b256c:19 --games 64,256 --batches 32,128 --procs 1
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.search.config import SearchConfig  # noqa: E402
from sayuri_async.selfplay.config import SelfplayConfig  # noqa: E402
from sayuri_async.selfplay.tune import MeasureSpec, Point, Result, engine_measure  # noqa: E402

LIVE_KEYS = ("parallel_games", "batch_size", "procs", "batches_in_flight")


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def base_config(net: str, board: int, a) -> SelfplayConfig:
    return SelfplayConfig(
        board_sizes=[board], num_games=0, playouts=a.playouts, write_sgf=False, device="model", device_model=net,
        device_table=a.device_table, seed=1, search=SearchConfig(leaves_per_await=a.leaves_per_await),
    )


def measure(base: SelfplayConfig, point: Point, inflight: int, spec: MeasureSpec) -> Result:
    return engine_measure(replace(base, batches_in_flight=inflight))(point, spec)


def summary_of(r: Result) -> dict:
    return {"evals_s": r.mean(), "stdev": r.stdev, "lo": r.lo, "hi": r.hi, "avg_batch": r.mean("avg_batch"),
            "efficiency": r.mean("efficiency") if r.values("efficiency") else None, "busy": r.mean("gpu_busy"),
            "loop_busy_max": r.mean("loop_busy_max"), "verdict": r.verdict, "advice": r.advice,
            "error": r.error}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="10b128c:19,20b256c:19,6b96c:9", help="NET:BOARD, comma-separated")
    ap.add_argument("--games", default="16,64,256,1024", help="parallel_games per process")
    ap.add_argument("--batches", default="8,32,128,512", help="batch sizes")
    ap.add_argument("--procs", default="1,2", help="engine processes")
    ap.add_argument("--playouts", type=int, default=100)
    ap.add_argument("--leaves-per-await", type=int, default=SearchConfig().leaves_per_await)
    ap.add_argument("--device-table", default="")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--window", type=float, default=1.5)
    ap.add_argument("--min-windows", type=int, default=3)
    ap.add_argument("--max-windows", type=int, default=6)
    ap.add_argument("--noise", type=float, default=0.05, help="smallest drop counted as a loss (fraction)")
    ap.add_argument("--results", default="runs/bench_verdict.jsonl", help="JSON lines, one per grid point")
    a = ap.parse_args()
    spec = MeasureSpec(a.warmup, a.window, a.min_windows, a.max_windows, 0.05)
    path = Path(a.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
                done[row["key"]] = row
            except (json.JSONDecodeError, KeyError):
                continue
    cores = os.cpu_count() or 1
    for spec_net in a.nets.split(","):
        net, _, board = spec_net.strip().partition(":")
        base = base_config(net, int(board or 19), a)
        for procs in _ints(a.procs):
            if procs > cores:
                continue
            for b in _ints(a.batches):
                for g in _ints(a.games):
                    key = f"{net}:{board} procs {procs} games {g} batch {b}"
                    if key in done:
                        continue
                    point = Point(g, b, procs)
                    before = measure(base, point, 2, spec)
                    row = {"key": key, "net": net, "board": int(board or 19), "point": [g, b, procs],
                           "before": summary_of(before)}
                    adv = {k: v for k, v in before.advice.items() if k in LIVE_KEYS}
                    if before.ok and adv:
                        after_point = Point(adv.get("parallel_games", g), adv.get("batch_size", b),
                                            adv.get("procs", procs))
                        after = measure(base, after_point, adv.get("batches_in_flight", 2), spec)
                        row["after"] = summary_of(after)
                        noise = max(a.noise, (before.stdev + after.stdev) / max(before.mean(), 1.0))
                        ratio = after.mean() / max(before.mean(), 1e-9)
                        row["ratio"] = ratio
                        row["outcome"] = "lowered" if ratio < 1 - noise else ("raised" if ratio > 1 + noise
                                                                               else "same")
                    else:
                        row["outcome"] = "no advice" if before.ok else "failed"
                    with open(path, "a") as f:
                        f.write(json.dumps(row) + "\n")
                    done[key] = row
                    extra = (f" -> {row['after']['evals_s']:.0f} ({row['ratio']:.2f}x, {row['outcome']})"
                             if "after" in row else f" ({row['outcome']})")
                    print(f"{key}: {row['before']['evals_s']:.0f} evals/s, {row['before']['verdict']}, "
                          f"advice {adv}{extra}", flush=True)
    rows = list(done.values())
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    advised = [r for r in rows if "after" in r]
    out = {"points": len(rows), "advised": len(advised), "outcomes": counts,
           "raised_share": counts.get("raised", 0) / len(advised) if advised else None,
           "worst_ratio": min((r["ratio"] for r in advised), default=None), "results": str(path)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
