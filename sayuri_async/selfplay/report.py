"""Figures from engine statuses, the verdict on what limits throughput, and
the plain-text reporter (used with ``--no-tui`` or when stdout is no terminal).

Vocabulary
----------
aggregate   several processes' ``Status`` records -> one: counters added up, loop
            CPU time summed, number of loops, per-process loop clocks, the
            settings of the first, the device's best rate
            (``device_best_of``), ``draining`` (every process has
            started its last game), ``network`` (the networks playing now,
            joined) and ``networks`` (every one played, in order).
figures     ``Figures``: ``rates`` between two aggregates plus what needs the
            processes apart: loop busy per process (and its maximum), GPU busy per
            device (busy time summed over the processes sharing it, capped
            at 100%), games in progress, ``draining``.
Window      keeps recent aggregates and gives figures over the last
            ``seconds`` (and over the whole run).
host_load   the machine's 1-minute load average per core: above 1 with fewer
            engine processes than cores, other programs compete for the CPU.
History     the figures of every update over the last minute, for sparklines.
Verdict     ``diagnose(figures, settings)``: which side limits, as a ``kind``
            (one of ``KINDS``) and a one-line text with the numbers and the
            lever to pull. ``verdict()`` returns the text alone. While the
            run drains (no new game starts) with fewer games left than the
            rule of thumb wants, or where the advice would be more games,
            the verdict is "finishing": no setting helps a run's last games.
rule of thumb  enough games for two batches of requests in flight, so one
            batch fills while the other runs: each game has up to
            ``leaves_per_await`` requests waiting, hence ``parallel_games``
            about 2 x ``batch_size`` / ``leaves_per_await`` (2 x batch_size
            with one leaf per await). ``games_needed`` computes it.
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace

from ..infer.stats import Counters, Rates, add_efficiency, merge, rates
from .status import EngineSettings, Status


def cores() -> int:
    """The cores this process may run on (its affinity), else the machine's."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1

# verdict thresholds (fractions of wall time, of batch_size, of the device's best)
LOOP_SATURATED = 0.90  # an event loop this busy cannot search any faster
LOOP_ROOM = 0.85  # advice never projects a loop busier than this
GPU_SATURATED = 0.85  # the device is busy from here on
GPU_IDLE = 0.70  # below this, the device waits for work
FULL_BATCH = 0.90  # batch fill from which batches count as full
DEVICE_LIMIT = 0.80  # a busy device is "the limit" only from this efficiency on
CORES_IDLE = 0.5  # cores the engine leaves unused before the verdict asks for more processes
BUCKET_GAIN = 1.10  # a larger batch must promise this much more evals/s to be advised
GAMES_PER_BATCH = 2  # the rule of thumb: parallel_games ~ 2 x batch_size / leaves_per_await

KINDS = ("warming up", "paused", "finishing", "device-bound", "batch too small", "cores idle", "CPU-bound",
         "fragmented", "starved", "contended", "latency-bound", "balanced")


def aggregate(statuses: list[Status]) -> Status | None:
    if not statuses:
        return None
    return Status(
        t=max(s.t for s in statuses),
        elapsed=max(s.elapsed for s in statuses),
        loop_cpu_s=sum(s.loop_cpu_s for s in statuses),
        proc_cpu_s=sum(s.proc_cpu_s for s in statuses),
        loops=len(statuses),
        procs={s.proc if s.pid else str(i): (s.t, s.loop_cpu_s) for i, s in enumerate(statuses)},
        counters=merge([s.counters for s in statuses]),
        settings=statuses[0].settings,
        device_best=device_best_of(statuses),
        draining=all(s.draining for s in statuses),
        games_unstarted=(None if any(s.games_unstarted is None for s in statuses)
                         else sum(s.games_unstarted for s in statuses)),
        device_rates=device_rates_of(statuses),
        warm_at=None if any(s.warm_at is None for s in statuses) else max(s.warm_at for s in statuses),
        games=[g for s in statuses for g in s.games],
        finished=sum(s.finished for s in statuses),
        chunks=sum(s.chunks for s in statuses),
        positions_written=sum(s.positions_written for s in statuses),
        games_written=sum(s.games_written for s in statuses),
        network=network_of_statuses(statuses),
        networks=list(dict.fromkeys(n for s in statuses for n in s.networks)),
    )


def network_of_statuses(statuses: list[Status]) -> str:
    """The network the engines play now (several, joined, while some have
    not swapped yet); "" when the statuses do not say."""
    return ", ".join(dict.fromkeys(s.network for s in statuses if s.network))


def device_best_of(statuses) -> float:
    """One device's best evals/s from engine statuses. Processes on one GPU
    (or the device model) each measure the whole device: the largest. On
    the CPU each process runs its own share of the cores: the sum. Several
    devices are of one kind; the largest of them counts (``add_efficiency``
    multiplies by the number of devices)."""
    per_device: dict[str, list[float]] = {}
    for s in statuses:
        per_device.setdefault(str(s.settings.device), []).append(s.device_best)
    return max((sum(v) if d == "cpu" else max(v) for d, v in per_device.items()), default=0.0)


def device_rates_of(statuses) -> dict:
    """The device's measured rates from engine statuses (the fullest set:
    processes of one device measure the same device)."""
    return max((s.device_rates for s in statuses), key=len, default={})


@dataclass
class Figures(Rates):
    """``rates`` between two aggregates with what needs the processes apart;
    while warming up only ``warming``, ``elapsed`` and ``games_live`` are
    set."""
    warming: bool = False
    loop_busy_procs: list[float] = field(default_factory=list)
    loop_busy_max: float = 0.0
    device_rates: dict[int, float] = field(default_factory=dict)
    games_live: int = 0
    draining: bool = False
    games_unstarted: int | None = None  # the run's games not started yet (None: no end)
    elapsed: float = 0.0
    host_load: float = 0.0
    cores: int = 1  # the cores the engine may run on
    cores_used: float | None = None  # the engine processes' CPU time over wall time (every thread); None: not reported
    procs: int = 1


def figures(a: Status | None, b: Status, devices: int = 1) -> Figures:
    """Figures from aggregate ``a`` to ``b``; from the engines' start when
    ``a`` is None. ``gpu_busy`` is per device."""
    if a is None:
        dt = b.elapsed
        r = rates(Counters(), b.counters, dt, b.loop_cpu_s, b.loops)
        per_proc = [cpu / max(dt, 1e-9) for _, cpu in b.procs.values()]
        busy = b.counters.busy_s
        cpu = b.proc_cpu_s
    else:
        dt = b.elapsed - a.elapsed
        r = rates(a.counters, b.counters, dt, b.loop_cpu_s - a.loop_cpu_s, b.loops)
        per_proc = []
        for pid, (t1, cpu1) in b.procs.items():
            t0, cpu0 = a.procs.get(pid, (None, None))
            if t0 is not None and t1 > t0:
                per_proc.append((cpu1 - cpu0) / (t1 - t0))
        busy = b.counters.busy_s - a.counters.busy_s
        cpu = b.proc_cpu_s - a.proc_cpu_s
    f = Figures(**vars(r))
    f.gpu_busy = min(busy / max(dt, 1e-9) / max(devices, 1), 1.0)
    f.loop_busy_procs = [min(max(x, 0.0), 1.0) for x in per_proc]
    f.loop_busy_max = max(f.loop_busy_procs, default=f.loop_busy)
    add_efficiency(f, b.device_best, int(b.settings.batch_size), devices)
    f.device_rates = b.device_rates
    f.games_live = len(b.games)
    f.draining = b.draining
    f.games_unstarted = b.games_unstarted
    f.elapsed = b.elapsed
    f.host_load = host_load()
    f.cores = cores()
    f.cores_used = cpu / max(dt, 1e-9) if cpu > 0 else None
    f.procs = b.loops
    return f


def host_load() -> float:
    """The 1-minute load average per core (0 where the OS has none)."""
    try:
        return os.getloadavg()[0] / max(os.cpu_count() or 1, 1)
    except (AttributeError, OSError):
        return 0.0


class Window:
    """Figures over a sliding window of aggregates. Start-up (numba loading,
    the first searches, CUDA graph capture) is left out: an aggregate counts
    from the engines' ``warm_at`` on (the first status after a move was
    played); before that ``recent()`` and ``overall()`` give only
    ``Figures(warming=True, ...)``, never rates."""

    def __init__(self, seconds: float = 5.0, devices: int = 1) -> None:
        self.seconds = seconds
        self.devices = devices
        self.items: deque[Status] = deque()
        self.first_warm: Status | None = None

    def push(self, agg: Status | None) -> None:
        if agg is None:
            return
        if self.first_warm is None and _is_warm(agg):
            self.first_warm = agg
        self.items.append(agg)
        while len(self.items) > 2 and agg.elapsed - self.items[0].elapsed > self.seconds:
            self.items.popleft()

    def _between(self, a: Status | None, b: Status) -> Figures:
        return figures(a, b, self.devices)

    def _warming(self) -> Figures:
        last = self.items[-1]
        return Figures(warming=True, elapsed=last.elapsed, games_live=len(last.games))

    def recent(self) -> Figures | None:
        if not self.items:
            return None
        warm = [a for a in self.items if _is_warm(a)]
        if len(warm) < 2:
            return self._warming()
        return self._between(warm[0], warm[-1])

    def overall(self) -> Figures | None:
        if not self.items:
            return None
        last = self.items[-1]
        if self.first_warm is None or last is self.first_warm:
            return self._warming()
        return self._between(self.first_warm, last)


def _is_warm(agg: Status) -> bool:
    return agg.warm_at is not None and agg.elapsed >= agg.warm_at


class History:
    """(elapsed, figures) of each update over the last ``seconds``."""

    def __init__(self, seconds: float = 60.0) -> None:
        self.seconds = seconds
        self.items: deque[tuple[float, Figures]] = deque()

    def push(self, elapsed: float, fig: Figures | None) -> None:
        if fig is None:
            return
        self.items.append((elapsed, fig))
        while self.items and elapsed - self.items[0][0] > self.seconds:
            self.items.popleft()

    def series(self, name: str) -> list[float]:
        """Figure ``name`` (a field of ``Figures``) of each update."""
        return [float(getattr(f, name)) for _, f in self.items]


@dataclass(frozen=True)
class Verdict:
    kind: str  # one of KINDS
    text: str
    # the settings to change ({} when the lever is outside the engine): what
    # the text advises, as values; applied once it must not lower evals/s
    # (tools/bench_verdict.py checks that over a grid)
    advice: dict = field(default_factory=dict)


def _bucket_rate(rates: dict[int, float], b: int) -> float | None:
    """The device's evals/s at the bucket a batch of ``b`` is padded to."""
    return next((rates[k] for k in sorted(rates) if k >= b), None)


def _fillable(r: Figures, leaves: int) -> int:
    """The largest batch the run's remaining games (in progress and not yet
    started) fill in each process by the rule of thumb; no limit for a run
    without an end."""
    if r.games_unstarted is None:
        return 1 << 30
    per_proc = -(-(r.games_live + r.games_unstarted) // max(r.procs, 1))
    return max(per_proc * leaves // GAMES_PER_BATCH, 1)


def _larger_batch(r: Figures, b: int, loop: float, most: int | None = None) -> int | None:
    """The smallest batch size (a bucket of the device's rates, at most
    ``most``: the backend's ``max_batch_size``) that gives at least 95% of
    the most evals/s any larger bucket promises with the loop projected at
    most ``LOOP_ROOM`` busy, when it beats ``b``'s bucket by
    ``BUCKET_GAIN``; else None."""
    rates = {int(k): float(v) for k, v in r.device_rates.items() if most is None or int(k) <= most}
    now = _bucket_rate(rates, b)
    evals = r.nn_evals_s
    if not now or evals <= 0:
        return None
    fits = {k: rate for k, rate in rates.items() if k > b and loop * rate / evals <= LOOP_ROOM}
    if not fits or max(fits.values()) < now * BUCKET_GAIN:
        return None
    top = max(fits.values())
    return min(k for k, rate in fits.items() if rate >= 0.95 * top)


def diagnose(r: Figures | None, settings: EngineSettings) -> Verdict:
    """Which side limits throughput (``_diagnose``), except for a run's last
    games: while the run drains, with fewer games left than
    ``games_needed`` or a verdict that asks for more games, it is
    "finishing" (see the vocabulary)."""
    v = _diagnose(r, settings)
    if v.kind in ("warming up", "paused") or not r.draining:
        return v
    b = settings.batch_size or 1
    need = games_needed(b, settings.leaves_per_await or 1)
    live = r.games_live
    if live < need or "parallel_games" in v.advice:
        return Verdict("finishing", f"finishing: {live} game(s) left of the run, no new ones start; "
                                    f"{_figures_text(r, settings)}: batches of {b} stay part-full until the end")
    return v


def _figures_text(r: Figures, settings: EngineSettings) -> str:
    """Busy, efficiency, batch fill and loop, as the verdicts quote them."""
    eff = r.device_efficiency
    eff_txt = f", {eff:.0%} of the device's best" if eff is not None else ""
    return (f"{busy_label(settings.device)} {r.gpu_busy:.0%} busy{eff_txt}, batches "
            f"{r.avg_batch_size:.0f} of {settings.batch_size or 1}, "
            f"loop {r.loop_busy_max:.0%}")


def _diagnose(r: Figures | None, settings: EngineSettings) -> Verdict:
    """Which side limits throughput, from ``figures`` ``r``, and the lever.

    Order matters: first a busy device (is it running full batches of a size
    it does well on?), then a saturated loop or leaf encoding (the worker
    thread's, ``encode_busy``; more processes, while there are cores for
    them), too few games, a machine taken by other programs,
    and round trips."""
    if settings.paused:
        return Verdict("paused", "paused: press p to resume")
    if r is None or r.warming or r.nn_evals_s <= 0:
        return Verdict("warming up", "warming up: loading compiled code and opening games; rates follow the first batches")
    dev = busy_label(settings.device)
    loop = r.loop_busy_max
    gpu = r.gpu_busy
    b, p = settings.batch_size or 1, settings.parallel_games
    leaves = settings.leaves_per_await or 1
    procs, cores = r.procs, r.cores
    avg = r.avg_batch_size
    fill = avg / b
    need = games_needed(b, leaves)
    figs = _figures_text(r, settings)
    if gpu >= GPU_SATURATED:
        if fill >= FULL_BATCH:
            bigger = _larger_batch(r, b, loop, min(settings.max_batch_size, _fillable(r, leaves)))
            if bigger is not None:
                games = max(p, games_needed(bigger, leaves))
                return Verdict("batch too small",
                               f"batch too small: {figs}; the device does more at batch {bigger}: raise batch_size "
                               f"to {bigger} and parallel_games to {games}",
                               {"batch_size": bigger, "parallel_games": games})
            if dev == "backend" and procs < cores and r.cores_used is not None and r.cores_used < cores - CORES_IDLE:
                return _cores_idle(r, figs, dev)
            eff = r.device_efficiency
            if eff is not None and eff < DEVICE_LIMIT:
                return _below_best(r, settings, figs)
            return Verdict("device-bound", f"{dev}-bound: {figs}: the device is the limit; a smaller net or "
                                           f"another {dev if dev == 'GPU' else 'device'} would go faster")
        if p < need:
            return Verdict("starved", f"starved: {figs}: too few games to fill a batch: parallel_games {p} < "
                                      f"{rule_text(b, leaves)}: raise parallel_games to {need}",
                           {"parallel_games": need})
        inflight = settings.batches_in_flight or 2
        if inflight > 2:
            return Verdict("fragmented", f"fragmented: {figs}: {inflight} batches in flight hold requests back "
                                         f"from the filling batch: set batches_in_flight to 2",
                           {"batches_in_flight": 2})
        return Verdict("fragmented", f"fragmented: {figs} with {p} games: raise parallel_games to {2 * p}",
                       {"parallel_games": 2 * p})
    encode = r.encode_busy
    if loop >= LOOP_SATURATED or encode >= LOOP_SATURATED:
        if loop >= encode:
            us = r.loop_us_per_request
            side = f"loop {loop:.0%} busy" + (f" ({us:.1f} us of CPU per request)" if us > 0 else "")
        else:  # the worker thread that encodes each batch's leaves before it runs
            us = r.encode_us_per_request
            side = f"leaf encoding {encode:.0%} busy" + (f" ({us:.1f} us per request)" if us > 0 else "")
        if procs < cores:
            more = min(cores, 2 * procs)
            return Verdict("CPU-bound", f"CPU-bound: {side}, {dev} {gpu:.0%}: run {more} "
                                        f"engine processes (--procs {more}; {cores} cores)", {"procs": more})
        return Verdict("CPU-bound", f"CPU-bound: {side}, {dev} {gpu:.0%}, and all {cores} cores "
                                    f"run an engine: fewer playouts or a faster machine")
    if p < need:
        return Verdict("starved", f"starved: {figs}: parallel_games {p} < {rule_text(b, leaves)}: "
                                  f"raise parallel_games to {need}", {"parallel_games": need})
    load = r.host_load
    if load >= 1.0 and procs < cores and max(loop, gpu) < GPU_IDLE:
        return Verdict("contended", f"contended: loop {loop:.0%}, {dev} {gpu:.0%} while the machine's load is "
                                    f"{load:.1f} per core with {procs} engine process(es): other programs take the CPU")
    if max(loop, gpu) < GPU_IDLE:
        return Verdict("latency-bound", f"latency-bound: {figs} at {r.nn_batches_s:.0f} batches/s: the "
                                        f"loop waits on round trips: raise parallel_games to {2 * p}",
                       {"parallel_games": 2 * p})
    return Verdict("balanced", f"balanced: {figs}")


def _cores_idle(r: Figures, figs: str, dev: str) -> Verdict:
    """A CPU backend busy while the engine leaves cores unused: one process's
    search and network share one interpreter lock, so one process per core
    (one torch thread each) uses them all. Unless other programs hold those
    cores (the machine's load beyond the engine's own use): then the figures
    are not the engine's own."""
    others = r.host_load * r.cores - (r.cores_used or 0.0)
    if others >= CORES_IDLE:
        return Verdict("contended", f"contended: {figs}, the engine gets {r.cores_used:.1f} of {r.cores} cores while "
                                    f"the machine's load is {r.host_load:.1f} per core: other programs take the CPU; "
                                    f"stop them before tuning")
    return Verdict("cores idle", f"cores idle: {figs}, the engine uses {r.cores_used:.1f} of {r.cores} cores: run "
                                 f"--procs {r.cores} (one torch thread each) so search and network use them all",
                   {"procs": r.cores})


def _below_best(r: Figures, settings: EngineSettings, figs: str) -> Verdict:
    """A device busy on full batches that gives less than ``DEVICE_LIMIT``
    of its measured best, with no larger batch to go to. On a CPU the
    backend shares its cores with the search: an engine that leaves cores
    unused is told to run one process per core (one torch thread each);
    one that uses them all is CPU-bound. On a GPU something else takes it."""
    if busy_label(settings.device) == "backend":
        used = f" ({r.cores_used:.1f} in use)" if r.cores_used is not None else ""
        return Verdict("CPU-bound", f"CPU-bound: {figs}; search and network share all {r.cores} cores{used}: "
                                    f"fewer playouts, a smaller net or a GPU would go faster")
    return Verdict("contended", f"contended: {figs}: the GPU is busy but gives less than {DEVICE_LIMIT:.0%} of "
                                f"its measured best: another program shares it")


def games_needed(batch_size: int, leaves_per_await: int = 1) -> int:
    """The rule of thumb: games for ``GAMES_PER_BATCH`` batches in flight."""
    return max(1, math.ceil(GAMES_PER_BATCH * batch_size / max(leaves_per_await, 1)))


def rule_text(batch_size: int, leaves_per_await: int = 1) -> str:
    need = games_needed(batch_size, leaves_per_await)
    if leaves_per_await <= 1:
        return f"{GAMES_PER_BATCH} x batch_size {batch_size} = {need}"
    return f"{GAMES_PER_BATCH} x batch_size {batch_size} / leaves_per_await {leaves_per_await} = {need}"


def verdict(r: Figures | None, settings: EngineSettings) -> str:
    """The verdict's text."""
    return diagnose(r, settings).text


def busy_label(device: str) -> str:
    """What the busy figure of ``device`` measures: a GPU (or the device
    model's modeled one), or the backend on the CPU."""
    return "GPU" if device.startswith(("cuda", "model")) else "backend"


def summary_lines(agg: Status | None, overall: Figures | None) -> list[str]:
    if agg is None:
        return ["no figures"]
    lines = [
        f"games {agg.finished}  positions {agg.positions_written} in {agg.chunks} chunk(s)  "
        f"elapsed {agg.elapsed:.1f}s",
    ]
    if overall is not None and overall.warming:
        lines.append("no rates: the run ended while warming up")
    elif overall is not None:
        lines.append(
            f"nnEvals/s {overall.nn_evals_s:.0f}  avgBatchSize {overall.avg_batch_size:.1f} "
            f"(fill {overall.batch_fill:.0%})  {_eff(overall, 'device efficiency {:.0%}  ')}"
            f"{busy_label(agg.settings.device)} busy {overall.gpu_busy:.0%}  loop busy {overall.loop_busy:.0%}  "
            f"games/s {overall.games_s:.2f}  cache hits {overall.cache_hit_rate:.0%}"
        )
    if agg.networks:
        lines.append(f"networks played: {', '.join(agg.networks)}")
    return lines


def plain_line(agg: Status, r: Figures, leaves_per_await: int = 1) -> str:
    """One progress line of figures and the verdict (no rates while warming up)."""
    s = replace(agg.settings, leaves_per_await=leaves_per_await)
    head = f"[{agg.elapsed:7.1f}s] games {agg.finished:5d} live {len(agg.games):3d}  "
    if r.warming:
        return f"{head}| {diagnose(r, s).text}"
    return (f"{head}evals/s {r.nn_evals_s:8.0f}{_eff(r, ' (eff {:4.0%})')}  batch {r.avg_batch_size:5.1f}/{s.batch_size}  "
            f"parallel {s.parallel_games}  {busy_label(s.device).lower()} {r.gpu_busy:4.0%}  "
            f"loop {r.loop_busy_max:4.0%} "
            f"{r.loop_us_per_request:5.1f} us/request  "
            f"moves/s {r.moves_s:6.1f}{_net(agg)}  | {diagnose(r, s).text}")


def _net(agg: Status) -> str:
    return f"  net {agg.network}" if agg.network else ""


def _eff(r: Figures, form: str) -> str:
    """``form`` with the device efficiency, or "" without a device."""
    return form.format(r.device_efficiency) if r.device_efficiency is not None else ""


class PlainReporter:
    """A line of figures every ``every`` seconds on ``stream``."""

    def __init__(self, every: float = 2.0, stream=None, devices: int = 1, leaves_per_await: int | None = None) -> None:
        if leaves_per_await is None:
            from ..search.config import SearchConfig

            leaves_per_await = SearchConfig().leaves_per_await
        self.leaves = leaves_per_await
        self.every = every
        self.stream = stream or sys.stdout
        self.window = Window(devices=devices)
        self._last = 0.0

    def update(self, statuses: list[Status]) -> list[dict]:
        agg = aggregate(statuses)
        self.window.push(agg)
        now = time.monotonic()
        if agg is not None and now - self._last >= self.every:
            self._last = now
            r = self.window.recent()
            if r is not None:
                print(plain_line(agg, r, self.leaves), file=self.stream, flush=True)
        return []

    def close(self, statuses: list[Status]) -> None:
        agg = aggregate(statuses)
        self.window.push(agg)
        for line in summary_lines(agg, self.window.overall()):
            print(line, file=self.stream, flush=True)
