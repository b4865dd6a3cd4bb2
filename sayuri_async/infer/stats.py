"""The engine's figures: counters kept by the batcher and the games, and
rates derived from two snapshots.

Vocabulary (KataGo's names where they exist)
--------------------------------------------
nnEvals        positions the network evaluated (cache hits excluded).
nnBatches      batches sent to the backend.
avgBatchSize   nnEvals / nnBatches over the window.
flush reasons  why each batch left: "full" (batch_size reached), "waiting"
               (every live game was waiting: nothing more could arrive),
               "timeout" (the oldest request waited timeout_ms).
GPU busy %     the device's busy time over wall time: CUDA events on CUDA, the
               device model's own clock, the worker thread's time in the
               backend otherwise (which also counts its waits for the GIL).
loop busy %    CPU time of the event-loop thread over wall time (the loop is
               idle in select() otherwise).
encode busy %  the worker thread's time encoding leaves (the searches' rounds
               prepared in the batcher, just before each batch runs) over
               wall time: near 100% the encoding, not the device or the
               loop, paces the batches. ``encode_us_per_request``: that
               time over search requests.
loop us per request
               event-loop CPU time over search requests (hits included): the
               search + features + queue cost of one request. One process
               can make at most 1e6 / that many requests per second.
queue wait     mean time from a request's commit to its batch's dispatch.
best rate     ``best_rate``: the fastest batch so far, its size over its busy
               time (a peak: ``merge`` keeps the largest, it adds nothing up).
sustained rate ``sustained_rate(counters)``: evaluations over busy time,
               the run's own batches as a sustained figure (not a peak).
device efficiency
               nnEvals/s over the device's best evals/s (``device_best``:
               the best *sustained* bucket rate of the backend's curve,
               measured at warm-up on the run's board sizes, raised to the
               run's own sustained rate where the run went faster (a curve
               measured on a loaded machine), times the number of devices):
               the figure that small batches cannot hide, since a device
               busy 100% of the time on batches of 8 still scores low, and a
               device busy on full batches of its best bucket reads about
               100%. ``add_efficiency`` caps it at 100% (engine processes
               sharing one GPU time each other's work into their own
               batches). None without a device (the random network).
batch fill     avgBatchSize over ``batch_size``.
Counters only grow; ``Counters.snapshot()`` freezes them into a copy (it
travels between processes), ``merge`` adds such copies up, and
``rates(a, b, ...)`` turns two of them into per-second figures: a ``Rates``
record, whose ``as_json()`` names its fields as above (``nnEvals/s``, ...).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, fields

import numpy as np

FLUSH_REASONS = ("full", "waiting", "timeout")
PEAKS = ("best_rate",)  # counters that ``merge`` takes the largest of
HIST_BINS = 1025  # batch sizes 0..1024 (larger ones land in the last bin)


@dataclass
class Counters:
    evals: int = 0
    batches: int = 0
    flush: dict[str, int] = field(default_factory=lambda: {r: 0 for r in FLUSH_REASONS})
    busy_s: float = 0.0  # backend time
    encode_s: float = 0.0  # worker time writing the batches' rows (the searches' leaf encoding)
    queue_wait_s: float = 0.0  # summed over requests
    cache_lookups: int = 0
    cache_hits: int = 0
    requests: int = 0  # search requests (hits + evals)
    playouts: int = 0
    moves: int = 0
    games: int = 0
    positions: int = 0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(HIST_BINS, dtype=np.int64))
    queue_depth: int = 0  # requests committed and not yet answered (a level, not a counter)
    in_flight: int = 0  # batches in the backend or waiting for the worker (a level)
    best_rate: float = 0.0  # the fastest batch: evals per busy second (a peak)

    def snapshot(self) -> "Counters":
        """A frozen copy: the flush counts and the histogram copied."""
        return Counters(**{f.name: getattr(self, f.name) for f in fields(self)}
                        | {"flush": dict(self.flush), "hist": self.hist.copy()})

    def add_batch(self, size: int, reason: str, busy_s: float) -> None:
        self.evals += size
        self.batches += 1
        self.flush[reason] += 1
        self.busy_s += busy_s
        self.hist[min(size, HIST_BINS - 1)] += 1
        if busy_s > 0:
            self.best_rate = max(self.best_rate, size / busy_s)


def merge(snaps: list[Counters]) -> Counters:
    """Add up counter snapshots from several batchers or processes
    (``PEAKS``: the largest)."""
    out = Counters()
    for s in snaps:
        for f in fields(Counters):
            k = f.name
            v = getattr(s, k)
            if k == "flush":
                for r, n in v.items():
                    out.flush[r] = out.flush.get(r, 0) + n
            elif k in PEAKS:
                setattr(out, k, max(getattr(out, k), v))
            else:
                setattr(out, k, getattr(out, k) + v)
    return out


def named(key: str, default=0.0):
    """A figure whose JSON name (KataGo's) differs from its field name."""
    return field(default=default, metadata={"key": key})


@dataclass
class Rates:
    """Figures between two counter snapshots (the vocabulary above), and,
    after ``add_efficiency``, ``device_best``, ``device_efficiency`` and
    ``batch_fill``."""
    nn_evals_s: float = named("nnEvals/s")
    nn_batches_s: float = named("nnBatches/s")
    avg_batch_size: float = named("avgBatchSize")
    gpu_busy: float = 0.0
    loop_busy: float = 0.0
    encode_busy: float = 0.0
    encode_us_per_request: float = 0.0
    queue_wait_ms: float = 0.0
    loop_us_per_request: float = 0.0
    cache_hit_rate: float = 0.0
    requests_s: float = named("requests/s")
    playouts_s: float = named("playouts/s")
    moves_s: float = named("moves/s")
    games_s: float = named("games/s")
    positions_s: float = named("positions/s")
    flush_share: dict[str, float] = field(default_factory=lambda: {r: 0.0 for r in FLUSH_REASONS})
    hist: np.ndarray = field(default_factory=lambda: np.zeros(HIST_BINS, dtype=np.int64))
    queue_depth: int = 0
    in_flight: int = 0
    device_best: float = 0.0
    device_efficiency: float | None = None
    batch_fill: float = 0.0

    def as_json(self) -> dict:
        """The figures under their JSON names (``nnEvals/s``, ...), in field
        order, without the histogram."""
        return {f.metadata.get("key", f.name): getattr(self, f.name) for f in fields(self) if f.name != "hist"}


def rates(a: Counters, b: Counters, dt: float, loop_cpu_s: float = 0.0, loops: int = 1) -> Rates:
    """Per-second figures between counter snapshots ``a`` (older) and ``b``."""
    dt = max(dt, 1e-9)
    evals, batches = float(b.evals - a.evals), float(b.batches - a.batches)
    lookups, hits = b.cache_lookups - a.cache_lookups, b.cache_hits - a.cache_hits
    requests = float(b.requests - a.requests)
    encode_s = b.encode_s - a.encode_s
    flush = {r: b.flush.get(r, 0) - a.flush.get(r, 0) for r in FLUSH_REASONS}
    nflush = max(sum(flush.values()), 1)
    return Rates(
        nn_evals_s=evals / dt,
        nn_batches_s=batches / dt,
        avg_batch_size=evals / batches if batches else 0.0,
        gpu_busy=min((b.busy_s - a.busy_s) / dt, 1.0),
        loop_busy=min(loop_cpu_s / dt / max(loops, 1), 1.0),
        encode_busy=min(encode_s / dt / max(loops, 1), 1.0),
        encode_us_per_request=1e6 * encode_s / requests if requests > 0 else 0.0,
        queue_wait_ms=1000.0 * (b.queue_wait_s - a.queue_wait_s) / evals if evals else 0.0,
        loop_us_per_request=1e6 * loop_cpu_s / requests if requests > 0 else 0.0,
        cache_hit_rate=hits / lookups if lookups else 0.0,
        requests_s=requests / dt,
        playouts_s=(b.playouts - a.playouts) / dt,
        moves_s=(b.moves - a.moves) / dt,
        games_s=(b.games - a.games) / dt,
        positions_s=(b.positions - a.positions) / dt,
        flush_share={r: flush[r] / nflush for r in FLUSH_REASONS},
        hist=np.asarray(b.hist) - np.asarray(a.hist),
        queue_depth=b.queue_depth,
        in_flight=b.in_flight,
    )


def sustained_rate(c: Counters) -> float:
    """Evaluations per second of backend time over the run (0 before any)."""
    return c.evals / c.busy_s if c.busy_s > 0 else 0.0


def add_efficiency(r: Rates, device_best: float, batch_size: int, devices: int = 1) -> Rates:
    """Set ``device_efficiency`` (at most 1: see the vocabulary),
    ``device_best`` and ``batch_fill`` of figures ``r``."""
    best = device_best * max(devices, 1)
    r.device_best = best
    r.device_efficiency = min(r.nn_evals_s / best, 1.0) if best > 0 else None
    r.batch_fill = r.avg_batch_size / batch_size if batch_size > 0 else 0.0
    return r


class LoopClock:
    """CPU time of the thread that created it (the event-loop thread)."""

    def __init__(self) -> None:
        self._t0 = time.thread_time()

    def cpu_s(self) -> float:
        return time.thread_time() - self._t0
