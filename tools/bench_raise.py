#!/usr/bin/env python3
"""A live raise of ``batch_size``: how soon the engine reaches the new
batch's ceiling, and how long it stalls meanwhile.

One engine in this process plays on the device model (``--net`` on board
``--board``; the shipped H200 table), or with ``--device cuda:0`` / ``cpu``
on a real backend (``--weights``, or random weights of ``--blocks`` x
``--channels``), at ``--from`` with ``--games`` games.
After ``--before`` seconds it gets the controls the live view's keys send:
``batch_size`` doubled until it reaches ``--to`` (the ``B`` key), then
``parallel_games`` by the rule of thumb (the ``a`` key). It samples
nnEvals/s over sliding ``--window``-second windows every 0.25 s and reports:

- ``ceiling``: the curve's evals/s at ``--to`` (the backend's own
  ``measure_rates``, the figure the verdict and the view read);
- ``before``: nnEvals/s over the last window before the raise;
- ``reach_s``: seconds from the raise to the end of the first window whose
  nnEvals/s is at least ``--target`` (0.95) of the ceiling (null: never
  within ``--after`` seconds); ``best_after``: the best window after it;
- ``longest_stall_ms``: the longest time, from the raise on, in which no
  evaluation finished (sampled every 20 ms): a CUDA graph captured for a new
  bucket shows here;
- on the device model also ``longest_gap_ms``, the longest time the modeled
  device sat idle between two batches from the raise on, and
  ``captures_ms``, the modeled graph captures of buckets the curve had not
  measured (``device_model.py``, "capture").

Run it at ``nice -n -15`` on a quiet machine: under load, late answers hide
the device's idle time. The last line is a JSON object.

    python tools/bench_raise.py --net 20b256c --board 19 --from 32 --to 128 --games 64
    python tools/bench_raise.py --device cuda:0 --blocks 20 --channels 256 --board 19 --from 32 --to 128
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.search.config import SearchConfig  # noqa: E402
from sayuri_async.selfplay.config import SelfplayConfig  # noqa: E402
from sayuri_async.selfplay.report import games_needed  # noqa: E402

from bench_selfplay import random_weights  # noqa: E402  (tools/, the script's folder)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="model", help="model (the device model), cuda:K or cpu")
    p.add_argument("--net", default="20b256c", help="the device model's net (a row of the H200 table)")
    p.add_argument("--weights", help="a network (cuda or cpu); random weights of --blocks x --channels otherwise")
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--channels", type=int, default=256)
    p.add_argument("--max-batch-size", type=int, default=0, help="the backend's largest batch (0: the default)")
    p.add_argument("--board", type=int, default=19)
    p.add_argument("--from", dest="start", type=int, default=32, help="batch_size at the start")
    p.add_argument("--to", type=int, default=128, help="batch_size after the raise")
    p.add_argument("--games", type=int, default=64, help="parallel_games at the start")
    p.add_argument("--playouts", type=int, default=100)
    p.add_argument("--leaves-per-await", type=int, default=4)
    p.add_argument("--before", type=float, default=12.0, help="seconds before the raise")
    p.add_argument("--after", type=float, default=15.0, help="seconds after it")
    p.add_argument("--window", type=float, default=2.0, help="seconds of each nnEvals/s window")
    p.add_argument("--target", type=float, default=0.95, help="the share of the ceiling to reach")
    return p.parse_args(argv)


def run(a: argparse.Namespace) -> dict:
    from sayuri_async.selfplay.engine import Engine
    from sayuri_async.selfplay.runner import install_uvloop, make_engine_backend

    install_uvloop()
    out = tempfile.mkdtemp(prefix="bench-raise-")
    model = a.device.startswith("model")
    weights = "" if model else (a.weights or random_weights(a.blocks, a.channels, out))
    cfg = SelfplayConfig(board_sizes=[a.board], num_games=0, parallel_games=a.games, batch_size=a.start,
                         max_batch_size=a.max_batch_size, playouts=a.playouts, reduce_playouts=0,
                         reduce_playouts_prob=0.0, write_sgf=False, chunk_games=10_000, out=out, device=a.device,
                         device_model=a.net, weights=weights, seed=1,
                         search=SearchConfig(leaves_per_await=a.leaves_per_await))
    backend = make_engine_backend(cfg, cfg.device)
    if model:
        backend.intervals = []

    async def main() -> dict:
        engine = Engine(cfg, backend)
        task = asyncio.ensure_future(engine.run())
        samples: list[tuple[float, int]] = []  # (perf_counter, evals)
        raised_at = None
        t_end = None
        stall, last_change, last_evals = 0.0, None, -1
        while True:
            await asyncio.sleep(0.02)
            st = engine.status()
            now = time.perf_counter()
            if st.counters.evals != last_evals:
                if raised_at is not None and last_change is not None:
                    stall = max(stall, now - max(last_change, raised_at))
                last_change, last_evals = now, st.counters.evals
            if samples and now - samples[-1][0] < 0.25:
                continue
            samples.append((now, st.counters.evals))
            if raised_at is None and st.warm_at is not None and st.elapsed >= a.before:
                b = a.start
                while b < a.to:  # the B key, pressed until the batch reaches --to
                    b = min(2 * b, a.to)
                    engine.control({"batch_size": b})
                engine.control({"parallel_games": games_needed(b, a.leaves_per_await)})  # the a key
                raised_at = now
                stalls_before = len(backend.stalls) if model else 0
                ivals_before = len(backend.intervals) if model else 0
                t_end = now + a.after
            if t_end is not None and now >= t_end:
                break
        ceiling = engine.device_rates.get(a.to) or max(engine.device_rates.values())
        engine.stop()
        await task
        engine.close()

        def window_rate(i: int) -> float | None:
            t1, e1 = samples[i]
            j = next((k for k in range(i, -1, -1) if t1 - samples[k][0] >= a.window), None)
            if j is None:
                return None
            t0, e0 = samples[j]
            return (e1 - e0) / (t1 - t0)

        before = next(window_rate(i) for i in range(len(samples) - 1, -1, -1) if samples[i][0] <= raised_at)
        reach = None
        best_after = 0.0
        for i, (t, _) in enumerate(samples):
            if t <= raised_at:
                continue
            r = window_rate(i)
            if r is None or samples[i][0] - a.window < raised_at:
                continue  # a window that still holds time before the raise
            best_after = max(best_after, r)
            if reach is None and r >= a.target * ceiling:
                reach = t - raised_at
        r = {
            "device": a.device, "net": a.net if model else f"{a.blocks}b{a.channels}c" if not a.weights else a.weights,
            "board": a.board, "from": a.start, "to": a.to, "games": a.games,
            "ceiling": round(ceiling), "before": round(before or 0.0), "reach_s": None if reach is None else round(reach, 2),
            "best_after": round(best_after), "best_after_of_ceiling": round(best_after / ceiling, 3),
            "longest_stall_ms": round(1000 * stall, 1),
            "load_per_core": round(os.getloadavg()[0] / (os.cpu_count() or 1), 2),
        }
        if model:
            mono_raise = time.monotonic() - (time.perf_counter() - raised_at)
            after = sorted(backend.intervals[ivals_before:])
            gaps = [b[0] - a_[1] for a_, b in zip(after, after[1:]) if b[0] > mono_raise]
            r["longest_gap_ms"] = round(1000 * max(gaps, default=0.0), 1)
            r["captures_ms"] = [round(1000 * s, 1) for s in backend.stalls[stalls_before:]]
        return r

    try:
        return asyncio.run(main())
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    r = run(a)
    model = (f"; longest device gap {r['longest_gap_ms']} ms; captures {r['captures_ms']} ms"
             if "captures_ms" in r else "")
    print(f"{r['net']} {a.board}x{a.board} on {a.device}: batch {a.start} -> {a.to}: {r['before']:,} evals/s before, "
          f"ceiling {r['ceiling']:,} at {a.to}; {a.target:.0%} of it reached {r['reach_s']} s after the raise "
          f"(best window {r['best_after_of_ceiling']:.0%}); longest stall {r['longest_stall_ms']} ms{model}")
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
