"""Figures from engine statuses, the verdict on what limits throughput, and
the plain-text reporter (used with ``--no-tui`` or when stdout is no terminal).

Vocabulary
----------
aggregate   several processes' status dicts -> one: counters added up, loop
            CPU time summed, number of loops, settings of the first.
Window      keeps recent aggregates and gives rates over the last
            ``seconds`` (and over the whole run).
verdict     one line saying which side limits: the event loop (CPU-bound),
            the GPU, a batch too small for the GPU, or too few games.
"""
from __future__ import annotations

import sys
import time
from collections import deque

from ..infer.stats import merge, rates


def aggregate(statuses: list[dict]) -> dict:
    if not statuses:
        return {}
    return {
        "t": max(s["t"] for s in statuses),
        "elapsed": max(s["elapsed"] for s in statuses),
        "loop_cpu_s": sum(s["loop_cpu_s"] for s in statuses),
        "loops": len(statuses),
        "counters": merge([s["counters"] for s in statuses]),
        "settings": statuses[0]["settings"],
        "games": [g for s in statuses for g in s["games"]],
        "finished": sum(s["finished"] for s in statuses),
        "chunks": sum(s["chunks"] for s in statuses),
        "positions_written": sum(s["positions_written"] for s in statuses),
    }


class Window:
    """Rates over a sliding window of aggregates."""

    def __init__(self, seconds: float = 5.0) -> None:
        self.seconds = seconds
        self.items: deque[dict] = deque()

    def push(self, agg: dict) -> None:
        if not agg:
            return
        self.items.append(agg)
        while len(self.items) > 2 and agg["elapsed"] - self.items[0]["elapsed"] > self.seconds:
            self.items.popleft()

    @staticmethod
    def _between(a: dict | None, b: dict) -> dict:
        """Rates from ``a`` to ``b``; from the engines' start when ``a`` is None."""
        if a is None:
            return rates(_zeros(b["counters"]), b["counters"], b["elapsed"], b["loop_cpu_s"], b.get("loops", 1))
        dt = b["elapsed"] - a["elapsed"]
        return rates(a["counters"], b["counters"], dt, b["loop_cpu_s"] - a["loop_cpu_s"], b.get("loops", 1))

    def recent(self) -> dict:
        if not self.items:
            return {}
        if len(self.items) < 2:
            return self._between(None, self.items[-1])
        return self._between(self.items[0], self.items[-1])

    def overall(self) -> dict:
        return self._between(None, self.items[-1]) if self.items else {}


def _zeros(counters: dict) -> dict:
    out: dict = {}
    for k, v in counters.items():
        if isinstance(v, dict):
            out[k] = {kk: 0 for kk in v}
        else:
            out[k] = 0 * v
    return out


def verdict(r: dict, settings: dict, games_live: int) -> str:
    """Which side limits throughput, from the figures ``r`` (``rates``)."""
    if not r or r.get("nnEvals/s", 0) <= 0:
        return "warming up"
    loop, gpu = r["loop_busy"], r["gpu_busy"]
    b, p = settings.get("batch_size", 0), settings.get("parallel_games", 0)
    avg = r["avgBatchSize"]
    if p < 2 * b and r["flush_share"].get("waiting", 0) > 0.5:
        return (f"starved: too few games for the batch (parallel_games {p} < 2 x batch_size {b}); "
                f"raise parallel_games or lower batch_size")
    if loop > 0.9 and gpu < 0.8:
        return (f"CPU-bound: loop {loop:.0%} busy, GPU {gpu:.0%}; add processes (--procs) "
                f"or lower search cost")
    if gpu > 0.9:
        if avg < 0.5 * b:
            return f"GPU-bound with small batches (avg {avg:.0f} of {b}): raise parallel_games"
        return f"GPU-bound: GPU {gpu:.0%} busy, loop {loop:.0%}"
    if avg < 0.75 * b and r["flush_share"].get("timeout", 0) > 0.3:
        return f"batches leave on timeout (avg {avg:.0f} of {b}): raise parallel_games or lower timeout_ms"
    return f"balanced: loop {loop:.0%}, GPU {gpu:.0%}, avg batch {avg:.0f} of {b}"


def summary_lines(agg: dict, overall: dict) -> list[str]:
    if not agg:
        return ["no figures"]
    lines = [
        f"games {agg['finished']}  positions {agg['positions_written']} in {agg['chunks']} chunk(s)  "
        f"elapsed {agg['elapsed']:.1f}s",
    ]
    if overall:
        lines.append(
            f"nnEvals/s {overall['nnEvals/s']:.0f}  avgBatchSize {overall['avgBatchSize']:.1f}  "
            f"GPU busy {overall['gpu_busy']:.0%}  loop busy {overall['loop_busy']:.0%}  "
            f"games/s {overall['games/s']:.2f}  cache hits {overall['cache_hit_rate']:.0%}"
        )
    return lines


class PlainReporter:
    """A line of figures every ``every`` seconds on ``stream``."""

    def __init__(self, every: float = 2.0, stream=None) -> None:
        self.every = every
        self.stream = stream or sys.stdout
        self.window = Window()
        self._last = 0.0

    def update(self, statuses: list[dict]) -> list[dict]:
        agg = aggregate(statuses)
        self.window.push(agg)
        now = time.monotonic()
        if agg and now - self._last >= self.every:
            self._last = now
            r = self.window.recent()
            if r:
                print(
                    f"[{agg['elapsed']:7.1f}s] games {agg['finished']:5d} live {len(agg['games']):3d}  "
                    f"evals/s {r['nnEvals/s']:8.0f}  batch {r['avgBatchSize']:5.1f}/{agg['settings']['batch_size']}  "
                    f"gpu {r['gpu_busy']:4.0%}  loop {r['loop_busy']:4.0%}  moves/s {r['moves/s']:6.1f}  "
                    f"| {verdict(r, agg['settings'], len(agg['games']))}",
                    file=self.stream,
                    flush=True,
                )
        return []

    def close(self, statuses: list[dict]) -> None:
        agg = aggregate(statuses)
        if agg:
            self.window.push(agg)
        for line in summary_lines(agg, self.window.overall()):
            print(line, file=self.stream, flush=True)
