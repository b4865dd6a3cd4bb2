#!/usr/bin/env python3
"""Self-play throughput: CPU cost per network request, evals/s, batch use.

With the random backend (no network work) it measures the CPU cost of one
request in self-play (search + features + queue) in one process: the central
figure of docs/engine.md. With ``--backend torch`` it measures evals/s,
avgBatchSize and GPU busy % with a random-weights network of the given size,
for each ``--procs`` value. With ``--backend model`` the device model
(``sayuri_async/net/device_model.py``) holds one modeled device for the
measured forward time of ``--net`` (a row of ``--device-table``, the shipped
H200 table by default) at the padded batch size: the GPU side of scheduling,
without a GPU. Every run reports device efficiency (nnEvals/s over the
device's best evals/s, measured by the backend at warm-up) and batch fill.

Warm-up (numba loading, CUDA graph capture, the first moves) is excluded:
figures come from the counters between ``--warmup`` and ``--warmup +
--seconds``. The last line is a JSON object; ``cpu_us_per_request`` holds the
CPU figure (process CPU time over search requests). The random backend runs in
the inference worker thread here, as a real network does, so the figure
includes that handoff; ``--inline`` measures it the way random-network
self-play runs (on the event loop).
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

from sayuri_async.infer.stats import add_efficiency, rates  # noqa: E402
from sayuri_async.search.config import SearchConfig  # noqa: E402
from sayuri_async.selfplay.config import SelfplayConfig  # noqa: E402
from sayuri_async.selfplay.report import aggregate  # noqa: E402
from sayuri_async.selfplay.status import Status  # noqa: E402


def make_cfg(a, out: str, procs: int) -> SelfplayConfig:
    return SelfplayConfig(
        board_sizes=[a.board], num_games=0, parallel_games=a.parallel_games, batch_size=a.batch_size,
        timeout_ms=a.timeout_ms, playouts=a.playouts, reduce_playouts=0, reduce_playouts_prob=0.0,
        random_moves_factor=0.0, chunk_games=10_000, write_sgf=False, out=out, procs=procs,
        device=a.device, weights=a.weights or "", seed=1, inline_cheap_backend=a.inline,
        device_model=a.net, device_table=a.device_table, encoder=a.encoder, batches_in_flight=a.batches_in_flight,
        gumbel=a.gumbel, gumbel_playouts_threshold=a.playouts + 1 if a.gumbel else 0,
        search=SearchConfig(edge_capacity=a.edge_capacity, leaves_per_await=a.leaves_per_await),
    )


def bench_inprocess(a, cfg: SelfplayConfig) -> dict:
    """One engine in this process; CPU time of the whole process per request."""
    from sayuri_async.selfplay.engine import Engine
    from sayuri_async.selfplay.runner import install_uvloop, make_engine_backend

    loop_name = install_uvloop()
    backend = make_engine_backend(cfg, cfg.device)

    async def main() -> dict:
        engine = Engine(cfg, backend)
        run = asyncio.ensure_future(engine.run())
        await asyncio.sleep(a.warmup)
        s0, c0 = engine.status(), time.process_time()
        await asyncio.sleep(a.seconds)
        s1, c1 = engine.status(), time.process_time()
        engine.stop()
        await run
        engine.close()
        r = add_efficiency(rates(s0.counters, s1.counters, s1.t - s0.t, s1.loop_cpu_s - s0.loop_cpu_s),
                           s1.device_best, cfg.batch_size).as_json()
        req = s1.counters.requests - s0.counters.requests
        r["cpu_us_per_request"] = 1e6 * (c1 - c0) / max(req, 1)
        r["loop"] = loop_name
        return r

    try:
        return asyncio.run(main())
    finally:
        backend.close()


def cpu_seconds_by_program() -> dict[str, float]:
    """CPU seconds (user + system) used so far by every process of the machine,
    summed by program name (``/proc/PID/comm``: at most 15 characters, e.g.
    ``raylet``, ``ray::EngineActo``); {} where ``/proc`` is missing."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    used: dict[str, float] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return used


class Measurement:
    """The measurement window of a multi-process run: the first aggregate at
    ``warmup`` seconds or later, the last one, done once they are ``seconds``
    apart. ``tools/bench_cluster.py`` measures its Ray side with it too.
    ``cpu_share()``: each program's share of one core over the window (the
    machine's every process, ``cpu_seconds_by_program``), to see where the
    CPU that the engines did not get went."""

    def __init__(self, warmup: float, seconds: float) -> None:
        self.warmup, self.seconds = warmup, seconds
        self.first: Status | None = None
        self.last: Status | None = None
        self.cpu_first: dict[str, float] = {}
        self.cpu_last: dict[str, float] = {}

    def add(self, statuses: list[Status]) -> bool:
        """Take the processes' statuses now; True once the window is whole."""
        agg = aggregate(statuses)
        if agg is None:
            return False
        if self.first is None and agg.elapsed >= self.warmup:
            self.first = agg
            self.cpu_first = cpu_seconds_by_program()
        if self.first is not None:
            self.last = agg
            if self.done():
                self.cpu_last = cpu_seconds_by_program()
        return self.done()

    def cpu_share(self, at_least: float = 0.01) -> dict[str, float]:
        """Cores used per program over the window, busiest first; those
        under ``at_least`` of a core left out."""
        if self.first is None or self.last is None or not self.cpu_last:
            return {}
        wall = self.last.elapsed - self.first.elapsed
        share = {k: (v - self.cpu_first.get(k, 0.0)) / wall for k, v in self.cpu_last.items()}
        return {k: round(v, 3) for k, v in sorted(share.items(), key=lambda kv: -kv[1]) if v >= at_least}

    def done(self) -> bool:
        return self.first is not None and self.last is not None and self.last.elapsed - self.first.elapsed >= self.seconds

    def figures(self, batch_size: int) -> dict:
        """The window's rates and efficiency as JSON (``Rates.as_json``)."""
        f, l = self.first, self.last
        if f is None or l is None or l is f:
            raise SystemExit("bench_selfplay: the run ended before the measurement window")
        r = rates(f.counters, l.counters, l.elapsed - f.elapsed, l.loop_cpu_s - f.loop_cpu_s, l.loops)
        return add_efficiency(r, l.device_best, batch_size).as_json()


class _Recorder:
    """Reporter for run_multiprocess: stops the run once the window is whole."""

    def __init__(self, window: Measurement) -> None:
        self.window = window

    def update(self, statuses: list[Status]) -> list[dict]:
        return [{"stop": True}] if self.window.add(statuses) else []

    def close(self, statuses: list[Status]) -> None:
        pass


def bench_multiprocess(a, cfg: SelfplayConfig) -> dict:
    from sayuri_async.selfplay.runner import run_multiprocess

    window = Measurement(a.warmup, a.seconds)
    run_multiprocess(cfg, _Recorder(window))
    return {**window.figures(cfg.batch_size), "cpu_cores": window.cpu_share()}


def random_weights(blocks: int, channels: int, folder: str) -> str:
    """A torch network of random weights (``blocks`` x ``channels``), saved in ``folder``."""
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    path = os.path.join(folder, f"random-{blocks}b{channels}c.safetensors")
    save_weights(path, Net(NetConfig(blocks=blocks, channels=channels)), {"name": f"random-{blocks}b{channels}c"})
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board", type=int, default=9)
    ap.add_argument("--backend", choices=["random", "torch", "model"], default="random",
                    help="random network, a torch net of --blocks/--channels, or the device model of --net")
    ap.add_argument("--procs", type=int, nargs="+", default=[1])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--edge-capacity", type=int, default=0, help="tree edges per game (0: sized from playouts, as the configs)")
    ap.add_argument("--parallel-games", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--timeout-ms", type=float, default=5.0)
    ap.add_argument("--playouts", type=int, default=100)
    ap.add_argument("--inline", action="store_true",
                    help="let the random backend answer on the event loop, as self-play does; by default it runs "
                         "in the worker thread so that the figure includes the handoff a real network pays")
    ap.add_argument("--leaves-per-await", type=int, default=SearchConfig().leaves_per_await,
                    help="leaves a search sends before it waits (1..16)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--weights", help="weights file (torch backend); random weights of --blocks/--channels otherwise")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--channels", type=int, default=96)
    ap.add_argument("--net", default="20b256c", help="device model: the net (NET or NET/MODE) in --device-table")
    ap.add_argument("--device-table", default="", help="device model: forward times (default: the shipped H200 table)")
    ap.add_argument("--gumbel", action="store_true", help="Gumbel root search (sequential halving) instead of PUCT")
    ap.add_argument("--encoder", default="", help="planes of the random network / device model (default simple-v1)")
    ap.add_argument("--batches-in-flight", type=int, default=2, help="batches handed to the device at a time")
    ap.add_argument("--switch-interval-ms", type=float, default=0.0,
                    help="sys.setswitchinterval for the run (0: the engine's default)")
    a = ap.parse_args()
    if a.switch_interval_ms > 0:
        sys.setswitchinterval(a.switch_interval_ms / 1000.0)
    if a.backend == "model" and not a.device.startswith("model"):
        a.device = "model"
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if a.backend == "torch" and not a.weights:
            a.weights = random_weights(a.blocks, a.channels, tmp)
        if a.backend == "random":
            a.weights = None
        for procs in a.procs:
            cfg = make_cfg(a, os.path.join(tmp, f"out{procs}"), procs)
            r = bench_inprocess(a, cfg) if procs == 1 else bench_multiprocess(a, cfg)
            r["procs"] = procs
            results.append(r)
            cpu = f"  cpu/request {r['cpu_us_per_request']:.1f} us" if "cpu_us_per_request" in r else ""
            eff = r.get("device_efficiency")
            eff_txt = f"  efficiency {eff:.2f} of {r['device_best']:.0f}" if eff is not None else ""
            flush = " ".join(f"{k} {v:.0%}" for k, v in r["flush_share"].items())
            print(
                f"board {a.board} backend {a.backend} procs {procs}: nnEvals/s {r['nnEvals/s']:.0f}  "
                f"avgBatchSize {r['avgBatchSize']:.1f}/{a.batch_size} (fill {r['batch_fill']:.2f}){eff_txt}  "
                f"{'backend' if a.device == 'cpu' else 'GPU'} busy {r['gpu_busy']:.0%}  "
                f"loop busy {r['loop_busy']:.0%}  playouts/s {r['playouts/s']:.0f}{cpu}  flush: {flush}",
                flush=True,
            )
    out = {
        "board": a.board, "backend": a.backend, "playouts": a.playouts, "parallel_games": a.parallel_games,
        "batch_size": a.batch_size, "leaves_per_await": a.leaves_per_await, "inline": a.inline, "device": a.device,
        "net": {"random": None, "torch": f"{a.blocks}b{a.channels}c", "model": a.net}[a.backend],
        "batches_in_flight": a.batches_in_flight,
        "cpu_us_per_request": results[0].get("cpu_us_per_request"),
        "runs": [{k: v for k, v in r.items() if k != "flush_share"} | {"flush_share": r["flush_share"]}
                 for r in results],
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
