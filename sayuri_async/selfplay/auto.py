"""Settings the engine picks for itself at start: ``batch_size = "auto"``
and ``procs = "auto"``.

Vocabulary
----------
curve       the device's sustained evals/s per bucket, as the backend
            measures it (``Backend.measure_rates``): the same curve the
            verdict, the live view and ``tune`` read.
auto batch  ``pick_batch(curve)``: the smallest bucket within
            ``AUTO_WITHIN`` (5%) of the curve's best rate (a larger batch
            costs memory and latency for nothing); ``parallel_games`` then
            follows the rule of thumb (``report.games_needed``). A run of
            ``num_games`` games can fill, per process, batches of at most
            ``games_fillable`` (its games' requests in flight, by the same
            rule): the pick stays among those buckets, so a short run's
            batches leave full instead of waiting for games it does not have.
            Without a curve (the random network, which has no device) the
            batch stays ``FALLBACK_BATCH``.
auto procs  on a CPU with a network, the engine processes per device and
            torch threads per process (``cores // procs``): ``pick_procs``
            over the forward rates of the candidates ``1`` and ``cores``,
            each measured with all its processes running passes of the chosen
            batch at once (``forward_rates``). The most processes whose
            rate is within ``AUTO_WITHIN`` of the best win: in one process
            the search and the network's Python share one interpreter lock,
            which separate processes do not, so at an equal forward rate
            more processes search faster. On a GPU, the device model and the
            random network: 1 (the verdict says when more would help).
Choice      what ``resolve`` picked and the one line that says why.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..usererror import RunFailure
from .config import AUTO, SelfplayConfig
from .report import GAMES_PER_BATCH, cores, games_needed

AUTO_WITHIN = 0.05  # a bucket (or process count) within 5% of the best counts as the best
FALLBACK_BATCH = 32  # batch_size = "auto" where there is no curve (the random network)
PROBE_SECONDS = 0.5  # forward passes per candidate of procs = "auto"
PROBE_START_S = 120.0  # a candidate's processes must report within this (spawn, torch import, weights)


class AutoError(RuntimeError, RunFailure):
    """A measurement for "auto" failed; the message says which, in one line."""


@dataclass(frozen=True)
class Choice:
    cfg: SelfplayConfig  # batch_size, parallel_games and procs resolved
    line: str  # "" when nothing was "auto"
    # the curve measured for the pick, by board size: an engine with these
    # settings (its share of the cores) need not measure it again
    measured: dict[int, dict[int, float]] = field(default_factory=dict)


def pick_batch(curve: dict[int, float], within: float = AUTO_WITHIN, most: int | None = None) -> int | None:
    """The smallest bucket whose rate is within ``within`` of the best among
    the buckets up to ``most`` (all when None, the smallest when none is
    that small); None for an empty curve."""
    if not curve:
        return None
    fits = {b: r for b, r in curve.items() if most is None or b <= most} or {min(curve): curve[min(curve)]}
    best = max(fits.values())
    return min(b for b, r in fits.items() if r >= (1 - within) * best)


def games_fillable(num_games: int, procs: int, leaves_per_await: int) -> int | None:
    """The largest batch ``num_games`` games (0: no end) fill in each of
    ``procs`` processes by the rule of thumb; None without a limit."""
    if num_games <= 0:
        return None
    per_proc = -(-num_games // max(procs, 1))
    return max(per_proc * max(leaves_per_await, 1) // GAMES_PER_BATCH, 1)


def pick_procs(rates: dict[int, float], within: float = AUTO_WITHIN) -> int:
    """The most processes whose total forward rate is within ``within`` of
    the best candidate's (see the vocabulary); 1 for no measurement."""
    if not rates:
        return 1
    best = max(rates.values())
    return max(k for k, r in rates.items() if r >= (1 - within) * best)


def _passes(be, n: int, batch: int, seconds: float) -> float:
    """Median evals/s of forward passes of ``batch`` run for ``seconds``
    (at least three) after one untimed pass."""
    from ..net.backends import median_rate

    x = np.zeros((batch, be.planes, n, n), dtype=np.uint8)
    times: list[float] = []
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop or len(times) < 3:
        t0 = time.perf_counter()
        be.run(x)
        times.append(time.perf_counter() - t0)
    return median_rate(batch, times)


def _probe(weights: str, threads: int, n: int, batch: int, seconds: float, barrier, out) -> None:
    """One process of a candidate: load the network, wait for its
    siblings, then time passes; sends its rate (or its error's line)."""
    try:
        from ..backend_factory import make_backend

        be = make_backend(weights, device="cpu", threads=threads, max_batch=batch)
        be.run(np.zeros((1, be.planes, n, n), dtype=np.uint8))
        barrier.wait(timeout=PROBE_START_S)
        out.put(_passes(be, n, batch, seconds))
    except Exception as e:  # the parent reports it in one line
        out.put(f"{type(e).__name__}: {e}")


def forward_rates(weights: str, n: int, batch: int, candidates: list[int], total_cores: int,
                  seconds: float = PROBE_SECONDS) -> dict[int, float]:
    """Total evals/s of ``k`` processes of ``total_cores // k`` torch threads
    each, running passes of ``batch`` on board ``n`` at once, per ``k``.
    This process is one of them (the only one for ``k = 1``); the others
    are spawned for the measurement. Its torch thread count is put back."""
    import torch

    from ..backend_factory import make_backend

    ctx = mp.get_context("spawn")
    threads_before = torch.get_num_threads()
    rates: dict[int, float] = {}
    try:
        for k in candidates:
            threads = max(total_cores // k, 1)
            be = make_backend(weights, device="cpu", threads=threads, max_batch=batch)
            barrier, out = ctx.Barrier(k), ctx.Queue()
            procs = [ctx.Process(target=_probe, args=(weights, threads, n, batch, seconds, barrier, out),
                                 name=f"procs-probe-{k}-{i}", daemon=True) for i in range(k - 1)]
            for p in procs:
                p.start()
            try:
                be.run(np.zeros((1, be.planes, n, n), dtype=np.uint8))
                if procs:
                    barrier.wait(timeout=PROBE_START_S)
                got: list = [_passes(be, n, batch, seconds)]
                got += [out.get(timeout=PROBE_START_S) for _ in procs]
            except Exception as e:  # a sibling that never came (the barrier broke) or never answered
                raise AutoError(f"procs = auto: the measurement of {k} processes failed: "
                                   f"{type(e).__name__}: {e}") from None
            finally:
                for p in procs:
                    p.join(timeout=10)
                    if p.is_alive():
                        p.terminate()
            errors = [g for g in got if isinstance(g, str)]
            if errors:
                raise AutoError(f"procs = auto: the measurement failed: {errors[0]}")
            rates[k] = float(sum(got))
    finally:
        torch.set_num_threads(threads_before)
    return rates


def measure_curve_of(cfg: SelfplayConfig, threads: int | None) -> dict[int, float]:
    """The curve of ``cfg``'s backend on its largest board, with ``threads``
    torch threads on a CPU (the engines' share)."""
    from ..backend_factory import make_backend
    from ..encoders import DEFAULT_ENCODER

    device = cfg.device.split(",")[0].strip()
    kw: dict = {"max_batch": cfg.max_batch}
    if cfg.weights and device == "cpu" and threads is not None:
        kw["threads"] = threads
    be = make_backend(cfg.weights or None, device=device, encoder=cfg.encoder or DEFAULT_ENCODER,
                      device_model=cfg.device_model, device_table=cfg.device_table, **kw)
    try:
        return be.measure_rates(max(cfg.board_sizes), 1)
    finally:
        be.close()


def _fmt(rate: float) -> str:
    return f"{rate:,.0f}"


def resolve(cfg: SelfplayConfig, measure: Callable[[SelfplayConfig, int | None], dict[int, float]] = measure_curve_of,
            probe: Callable[..., dict[int, float]] = forward_rates, total_cores: int | None = None) -> Choice:
    """``cfg`` with ``batch_size`` and ``procs`` resolved where they are
    "auto" (see the vocabulary), and the line that says what was picked."""
    batch_auto, procs_auto = cfg.batch_size == AUTO, cfg.procs == AUTO
    if not (batch_auto or procs_auto):
        return Choice(cfg, "")
    c = total_cores or cores()
    device = cfg.device.split(",")[0].strip()
    on_cpu_net = device == "cpu" and bool(cfg.weights)
    parts: list[str] = []
    measured: dict[int, dict[int, float]] = {}
    procs = cfg.procs if not procs_auto else (c if on_cpu_net else 1)
    batch = cfg.batch_size
    if batch_auto:
        threads = max(c // procs, 1) if on_cpu_net else None
        curve = measure(cfg, threads)
        measured[max(cfg.board_sizes)] = curve
        most = games_fillable(cfg.num_games, int(procs), cfg.search.leaves_per_await)
        pick = pick_batch(curve, most=most)
        if pick is None:
            batch = FALLBACK_BATCH
            parts.append(f"batch_size {batch} (the random network has no device curve to pick from)")
        else:
            best = max(curve, key=curve.get)
            batch = pick
            why = (f"the smallest bucket within {AUTO_WITHIN:.0%} of the best sustained rate: "
                   f"{_fmt(curve[pick])} evals/s" + (f" against {_fmt(curve[best])} at {best}" if best != pick else ""))
            smaller = [b for b in curve if b < pick]
            if smaller:
                b0 = max(smaller)
                why += f", {_fmt(curve[b0])} at {b0}"
            if most is not None and max(curve) > most:
                why += f"; {cfg.num_games} games fill batches of at most {most} a process"
            parts.append(f"batch_size {batch} ({why})")
    if procs_auto:
        if on_cpu_net and c > 1:
            rates = probe(cfg.weights, max(cfg.board_sizes), int(batch), [1, c], c)
            procs = pick_procs(rates)
            parts.append(f"procs {procs} x {max(c // procs, 1)} torch thread(s) (forward passes at batch {batch}, "
                         + ", ".join(f"{k} x {max(c // k, 1)}: {_fmt(r)} evals/s" for k, r in sorted(rates.items()))
                         + ")")
        else:
            procs = 1
            where = "one core" if on_cpu_net else ("the random network" if not cfg.weights and device == "cpu"
                                                    else f"device {device}")
            parts.append(f"procs 1 ({where}: the verdict says when more processes would help)")
    out = replace(cfg, batch_size=int(batch), procs=int(procs))
    if batch_auto:
        # the curve was measured up to this: the keys may go as far
        out = replace(out, max_batch_size=max(cfg.max_batch, int(batch)))
        games = games_needed(int(batch), cfg.search.leaves_per_await)
        out = replace(out, parallel_games=games)
        parts.append(f"parallel_games {games} (the rule of thumb)")
    if measured and (len(set(cfg.board_sizes)) > 1 or (on_cpu_net and threads != max(c // int(procs), 1))):
        measured = {}  # not what an engine of these settings would measure: the engines measure their own
    return Choice(out, "auto: " + "; ".join(parts), measured)
