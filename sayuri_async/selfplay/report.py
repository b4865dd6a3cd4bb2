"""Figures from engine statuses, the verdict on what limits throughput, and
the plain-text reporter (used with ``--no-tui`` or when stdout is no terminal).

Vocabulary
----------
aggregate   several processes' status dicts -> one: counters added up, loop
            CPU time summed, number of loops, per-process loop clocks, the
            settings of the first.
figures     ``rates`` between two aggregates plus what needs the processes
            apart: loop busy per process (and its maximum), GPU busy per
            device (busy time summed over the processes sharing it, capped
            at 100%), games in progress.
Window      keeps recent aggregates and gives figures over the last
            ``seconds`` (and over the whole run).
host_load   the machine's 1-minute load average per core: above 1 with fewer
            engine processes than cores, other programs compete for the CPU.
History     the figures of every update over the last minute, for sparklines.
Verdict     ``diagnose(figures, settings)``: which side limits, as a ``kind``
            (one of ``KINDS``) and a one-line text with the numbers and the
            lever to pull. ``verdict()`` returns the text alone.
rule of thumb  enough games for two batches of requests in flight, so one
            batch fills while the other runs: each game has up to
            ``leaves_per_await`` requests waiting, hence ``parallel_games``
            about 2 x ``batch_size`` / ``leaves_per_await`` (2 x batch_size
            with one leaf per await). ``games_needed`` computes it; settings
            dicts may carry ``leaves_per_await`` (1 when absent).
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass

from ..infer.stats import merge, rates

# verdict thresholds (fractions of wall time / of batch_size)
LOOP_SATURATED = 0.90  # an event loop this busy cannot search any faster
GPU_SATURATED = 0.85  # the device is the bottleneck from here on
GPU_IDLE = 0.70  # below this, the GPU waits for work
FULL_BATCH = 0.75  # avg batch at least this share of batch_size counts as full
SMALL_BATCH = 64  # a busy GPU at batch sizes below this has room to amortise
GAMES_PER_BATCH = 2  # the rule of thumb: parallel_games ~ 2 x batch_size

KINDS = ("warming up", "paused", "CPU-bound", "starved", "batch too small", "GPU-bound", "timeouts", "contended",
         "latency-bound", "balanced")


def aggregate(statuses: list[dict]) -> dict:
    if not statuses:
        return {}
    return {
        "t": max(s["t"] for s in statuses),
        "elapsed": max(s["elapsed"] for s in statuses),
        "loop_cpu_s": sum(s["loop_cpu_s"] for s in statuses),
        "loops": len(statuses),
        "procs": {str(s.get("pid", i)): (s["t"], s["loop_cpu_s"]) for i, s in enumerate(statuses)},
        "counters": merge([s["counters"] for s in statuses]),
        "settings": statuses[0]["settings"],
        "games": [g for s in statuses for g in s["games"]],
        "finished": sum(s["finished"] for s in statuses),
        "chunks": sum(s["chunks"] for s in statuses),
        "positions_written": sum(s["positions_written"] for s in statuses),
    }


def _zeros(counters: dict) -> dict:
    out: dict = {}
    for k, v in counters.items():
        if isinstance(v, dict):
            out[k] = {kk: 0 for kk in v}
        else:
            out[k] = 0 * v
    return out


def figures(a: dict | None, b: dict, devices: int = 1) -> dict:
    """Figures from aggregate ``a`` to ``b``; from the engines' start when
    ``a`` is None. Adds ``loop_busy_procs``, ``loop_busy_max``,
    ``games_live`` and ``elapsed`` to ``rates``' keys; ``gpu_busy`` is per
    device."""
    if a is None:
        dt = b["elapsed"]
        r = rates(_zeros(b["counters"]), b["counters"], dt, b["loop_cpu_s"], b.get("loops", 1))
        per_proc = [cpu / max(dt, 1e-9) for _, cpu in b.get("procs", {}).values()]
        busy = b["counters"].get("busy_s", 0.0)
    else:
        dt = b["elapsed"] - a["elapsed"]
        r = rates(a["counters"], b["counters"], dt, b["loop_cpu_s"] - a["loop_cpu_s"], b.get("loops", 1))
        per_proc = []
        for pid, (t1, cpu1) in b.get("procs", {}).items():
            t0, cpu0 = a.get("procs", {}).get(pid, (None, None))
            if t0 is not None and t1 > t0:
                per_proc.append((cpu1 - cpu0) / (t1 - t0))
        busy = b["counters"].get("busy_s", 0.0) - a["counters"].get("busy_s", 0.0)
    r["gpu_busy"] = min(busy / max(dt, 1e-9) / max(devices, 1), 1.0)
    r["loop_busy_procs"] = [min(max(x, 0.0), 1.0) for x in per_proc]
    r["loop_busy_max"] = max(r["loop_busy_procs"], default=r["loop_busy"])
    r["games_live"] = len(b.get("games", []))
    r["elapsed"] = b["elapsed"]
    r["host_load"] = host_load()
    r["cores"] = os.cpu_count() or 1
    r["procs"] = b.get("loops", 1)
    return r


def host_load() -> float:
    """The 1-minute load average per core (0 where the OS has none)."""
    try:
        return os.getloadavg()[0] / max(os.cpu_count() or 1, 1)
    except (AttributeError, OSError):
        return 0.0


class Window:
    """Figures over a sliding window of aggregates."""

    def __init__(self, seconds: float = 5.0, devices: int = 1) -> None:
        self.seconds = seconds
        self.devices = devices
        self.items: deque[dict] = deque()

    def push(self, agg: dict) -> None:
        if not agg:
            return
        self.items.append(agg)
        while len(self.items) > 2 and agg["elapsed"] - self.items[0]["elapsed"] > self.seconds:
            self.items.popleft()

    def _between(self, a: dict | None, b: dict) -> dict:
        return figures(a, b, self.devices)

    def recent(self) -> dict:
        if not self.items:
            return {}
        if len(self.items) < 2:
            return self._between(None, self.items[-1])
        return self._between(self.items[0], self.items[-1])

    def overall(self) -> dict:
        return self._between(None, self.items[-1]) if self.items else {}


class History:
    """(elapsed, figures) of each update over the last ``seconds``."""

    def __init__(self, seconds: float = 60.0) -> None:
        self.seconds = seconds
        self.items: deque[tuple[float, dict]] = deque()

    def push(self, elapsed: float, fig: dict) -> None:
        if not fig:
            return
        self.items.append((elapsed, fig))
        while self.items and elapsed - self.items[0][0] > self.seconds:
            self.items.popleft()

    def series(self, key: str) -> list[float]:
        return [float(f.get(key, 0.0)) for _, f in self.items]


@dataclass(frozen=True)
class Verdict:
    kind: str  # one of KINDS
    text: str


def diagnose(r: dict, settings: dict) -> Verdict:
    """Which side limits throughput, from ``figures`` ``r``.

    Order matters: a saturated loop limits whatever the batch settings are;
    too few games limit a GPU that is not busy; a busy GPU is either at its
    limit or running batches too small to use it well."""
    if settings.get("paused"):
        return Verdict("paused", "paused: press p to resume")
    if not r or r.get("nnEvals/s", 0) <= 0:
        return Verdict("warming up", "warming up: no batches yet")
    # the busy figure is the backend's: a GPU's, or the CPU's when the network runs there
    dev = busy_label(settings)
    loop = r.get("loop_busy_max", r["loop_busy"])
    gpu = r["gpu_busy"]
    b, p = int(settings.get("batch_size", 0)), int(settings.get("parallel_games", 0))
    avg = r["avgBatchSize"]
    share = r.get("flush_share", {})
    full = avg >= FULL_BATCH * b
    if loop >= LOOP_SATURATED and gpu < GPU_IDLE:
        us = r.get("loop_us_per_request", 0.0)
        cost = f" ({us:.1f} us of CPU per request)" if us > 0 else ""
        return Verdict("CPU-bound", f"CPU-bound: loop {loop:.0%} busy{cost}, {dev} {gpu:.0%}: add processes "
                                    f"(--procs) or lower the search cost (playouts)")
    leaves = int(settings.get("leaves_per_await", 1) or 1)
    need = games_needed(b, leaves)
    if p < need and gpu < GPU_SATURATED:
        return Verdict("starved", f"starved: too few games: parallel_games {p} < {rule_text(b, leaves)}, "
                                  f"avg batch {avg:.0f}, loop {loop:.0%}, {dev} {gpu:.0%}: "
                                  f"raise parallel_games or lower batch_size")
    if gpu >= GPU_SATURATED:
        if not full:
            return Verdict("starved", f"starved: {dev} {gpu:.0%} busy on batches of {avg:.0f} of {b}: raise "
                                      f"parallel_games (now {p}, rule of thumb {need})")
        if b < SMALL_BATCH and loop < LOOP_SATURATED:
            return Verdict("batch too small", f"batch too small for the {dev}: {dev} {gpu:.0%} busy at batch {b}, "
                                              f"loop {loop:.0%}: raise batch_size with parallel_games "
                                              f"following it (rule of thumb: {rule_text(b, leaves)})")
        return Verdict("GPU-bound", f"{dev}-bound: {dev} {gpu:.0%} busy, loop {loop:.0%}, batches full "
                                    f"({avg:.0f} of {b}): a smaller net or another {dev if dev == 'GPU' else 'device'}")
    if share.get("timeout", 0.0) >= 0.3 and not full:
        return Verdict("timeouts", f"batches leave on timeout (avg {avg:.0f} of {b}): raise parallel_games "
                                   f"or lower timeout_ms")
    if max(loop, gpu) < GPU_IDLE:
        load, procs = r.get("host_load", 0.0), int(r.get("procs", 1))
        if load >= 1.0 and procs < r.get("cores", 1):
            return Verdict("contended", f"contended: loop {loop:.0%}, {dev} {gpu:.0%} while the machine's load is "
                                        f"{load:.1f} per core with {procs} engine process(es): other programs "
                                        f"take the CPU")
        return Verdict("latency-bound", f"latency-bound: loop {loop:.0%}, {dev} {gpu:.0%} at "
                                        f"{r.get('nnBatches/s', 0.0):.0f} batches/s of {avg:.0f}: the loop waits on "
                                        f"batch round trips; keep more batches in flight (parallel_games above "
                                        f"{need}), make them larger (batch_size) or add processes")
    return Verdict("balanced", f"balanced: loop {loop:.0%}, {dev} {gpu:.0%}, avg batch {avg:.0f} of {b}")


def games_needed(batch_size: int, leaves_per_await: int = 1) -> int:
    """The rule of thumb: games for ``GAMES_PER_BATCH`` batches in flight."""
    return max(1, math.ceil(GAMES_PER_BATCH * batch_size / max(leaves_per_await, 1)))


def rule_text(batch_size: int, leaves_per_await: int = 1) -> str:
    need = games_needed(batch_size, leaves_per_await)
    if leaves_per_await <= 1:
        return f"{GAMES_PER_BATCH} x batch_size {batch_size} = {need}"
    return f"{GAMES_PER_BATCH} x batch_size {batch_size} / leaves_per_await {leaves_per_await} = {need}"


def verdict(r: dict, settings: dict, games_live: int = 0) -> str:
    """The verdict's text (``games_live`` is kept for older callers)."""
    return diagnose(r, settings).text


def busy_label(settings: dict) -> str:
    """What the busy figure measures: a GPU, or the backend on the CPU."""
    return "GPU" if str(settings.get("device", "cuda")).startswith("cuda") else "backend"


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
            f"{busy_label(agg.get('settings', {}))} busy {overall['gpu_busy']:.0%}  loop busy {overall['loop_busy']:.0%}  "
            f"games/s {overall['games/s']:.2f}  cache hits {overall['cache_hit_rate']:.0%}"
        )
    return lines


def plain_line(agg: dict, r: dict, leaves_per_await: int = 1) -> str:
    """One progress line of figures and the verdict."""
    s = {**agg["settings"], "leaves_per_await": leaves_per_await}
    return (f"[{agg['elapsed']:7.1f}s] games {agg['finished']:5d} live {len(agg['games']):3d}  "
            f"evals/s {r['nnEvals/s']:8.0f}  batch {r['avgBatchSize']:5.1f}/{s['batch_size']}  "
            f"games {s['parallel_games']}  {busy_label(s).lower()} {r['gpu_busy']:4.0%}  "
            f"loop {r.get('loop_busy_max', r['loop_busy']):4.0%} "
            f"{r.get('loop_us_per_request', 0.0):5.1f} us/request  "
            f"moves/s {r['moves/s']:6.1f}  | {diagnose(r, s).text}")


class PlainReporter:
    """A line of figures every ``every`` seconds on ``stream``."""

    def __init__(self, every: float = 2.0, stream=None, devices: int = 1, leaves_per_await: int | None = None) -> None:
        if leaves_per_await is None:
            from ..search.mcts import SearchConfig

            leaves_per_await = SearchConfig().leaves_per_await
        self.leaves = leaves_per_await
        self.every = every
        self.stream = stream or sys.stdout
        self.window = Window(devices=devices)
        self._last = 0.0

    def update(self, statuses: list[dict]) -> list[dict]:
        agg = aggregate(statuses)
        self.window.push(agg)
        now = time.monotonic()
        if agg and now - self._last >= self.every:
            self._last = now
            r = self.window.recent()
            if r:
                print(plain_line(agg, r, self.leaves), file=self.stream, flush=True)
        return []

    def close(self, statuses: list[dict]) -> None:
        agg = aggregate(statuses)
        if agg:
            self.window.push(agg)
        for line in summary_lines(agg, self.window.overall()):
            print(line, file=self.stream, flush=True)
