"""The self-play engine of one process: game workers, batchers, the writer.

Vocabulary
----------
Engine      owns one backend, one batcher per board size (sharing one worker
            thread: one device, one stream), ``parallel_games`` worker
            coroutines and a writer (``WriterProcess``: a process of its own,
            or ``ChunkWriter`` on the loop with ``writer_process = false``).
            ``await engine.run()`` plays until ``num_games`` games are
            finished or ``stop()`` is called.
worker      a coroutine that plays games one after another; workers above the
            current ``parallel_games`` leave after their game, new ones start
            when it grows.
status      ``engine.status()``: a ``Status`` record (``status.py``; it
            crosses process boundaries) with the merged counters, the loop's CPU time, the
            live settings, ``warm_at`` (elapsed seconds at the first
            status after a move was played: rates count from there), the
            games in progress, ``draining`` (True once no new game will
            start: the run's last games, or a stop) and the device's own
            speed (``device_rates``: evals/s per full bucket, measured by the
            backend when the run starts, on the largest board;
            ``device_best``: the best rate measured on any of the run's
            board sizes, raised to the fastest batch the run has seen
            (``Counters.best_rate``); 0 for the random network).
            ``selfplay/report.figures`` turns two of them into the figures
            the TUI shows.
controls    ``set_batch_size``, ``set_parallel_games``, ``set_timeout_ms``,
            ``pause``/``resume``, ``stop``: take effect at once (the batcher
            switches size at its next flush). ``{"network": {"path", "name",
            "sha256"}}`` loads another network and swaps it in between
            batches (``switch.py``); the engine needs ``make_network`` for it.
network     the engine's backend sits in a ``SwappableBackend``; the status
            carries ``network`` (the current one's label), ``networks``
            (the last ``NETWORKS_SHOWN`` played, in order) and
            ``network_error`` (why the last file offered was refused, or
            None). Each game's record lists the networks it was played with
            (``GameRecord.networks``). An engine that may change its network
            hands every batch to its worker, the random network's too, so
            that no network runs on the loop; a new network's device rates
            are measured in the loader thread before it plays.
"""
from __future__ import annotations

import asyncio
import os
import time
from dataclasses import replace

import numpy as np

from ..infer.batcher import Batcher
from ..infer.stats import Counters, LoopClock, merge, sustained_rate
from ..infer.worker import Worker
from ..killpoint import kill_point
from ..net.identity import NetworkId, network_of
from ..net.swap import SwappableBackend
from ..search.mcts import Search
from .config import SelfplayConfig
from .game import LiveGame, play_game
from .status import EngineSettings, Status
from .switch import MakeBackend, NetworkSwitch
from .writer import ChunkWriter
from .writer_proc import WriterProcess

NETWORKS_SHOWN = 16  # networks an engine's status lists (the latest)


def curve_key(backend) -> tuple | None:
    """What a device's curve depends on: the backend's kind, its network's
    shape (not its weights), its device and largest batch; None where a
    backend does not say its shape."""
    be = getattr(backend, "current", backend)  # through a SwappableBackend
    config = getattr(be, "config", None)
    if config is None and not hasattr(be, "table"):
        return None
    return (type(be).__name__, repr(config), repr(getattr(be, "table", None)), str(getattr(be, "device", "")),
            int(getattr(be, "max_batch", 0)))


class Engine:
    def __init__(self, cfg: SelfplayConfig, backend, tag: str | None = None, writer: ChunkWriter | WriterProcess | None = None,
                 num_games: int | None = None, network: NetworkId | None = None,
                 make_network: MakeBackend | None = None,
                 measured: dict[int, dict[int, float]] | None = None) -> None:
        self.cfg = cfg
        self._measured = dict(measured or {})  # curves by board size measured already (``auto.resolve``)
        self._curve_key: tuple | None = curve_key(backend)  # the shape the device's curve was measured for
        backend = SwappableBackend(backend)
        self.backend = backend
        self.encoder = backend.encoder
        self.tag = tag or f"{os.getpid()}"
        seed = cfg.seed or int.from_bytes(os.urandom(8), "little")
        self.rng = np.random.default_rng([seed, os.getpid()])
        self.num_games = cfg.num_games if num_games is None else num_games
        self.worker = Worker(name=f"infer-{backend.device}", bound=cfg.batches_in_flight)
        self.max_batch = cfg.max_batch  # what the backend and the batchers' buffers are built for
        inline = cfg.inline_cheap_backend and backend.cheap and make_network is None
        self.batchers = {
            n: Batcher(backend, n, cfg.batch_size, cfg.timeout_ms, max_batch=self.max_batch,
                       cache_size=cfg.cache_size, worker=self.worker, counters=Counters(), inline=inline)
            for n in sorted(set(cfg.board_sizes))
        }
        if writer is None:
            make = WriterProcess if cfg.writer_process else ChunkWriter
            writer = make(cfg.out, self.encoder, backend.planes, cfg.chunk_games, self.tag,
                          generator=getattr(backend, "name", "random"), write_sgf=cfg.write_sgf,
                          generation=cfg.generation)
        self.writer = writer
        self.switch = NetworkSwitch(backend, network or network_of(cfg.weights or None), make_network,
                                    None if inline else self.worker, on_swapped=self._swapped,
                                    prepare=self._rates_of)
        self.parallel_games = cfg.parallel_games
        self.search_cfg = cfg.search_config()
        self.live: dict[int, LiveGame] = {}
        self.started = 0
        self.finished = 0
        self._stop = False
        self._paused = asyncio.Event()
        self._paused.set()
        self._workers: set[asyncio.Task] = set()
        self._next_worker = 0
        self._clock: LoopClock | None = None
        self._t0 = time.perf_counter()
        self._done: asyncio.Event | None = None
        self.device_rates: dict[int, float] = {}
        self.measured_best = 0.0  # the best rate measured at start on any board size
        self._warm_at: float | None = None  # elapsed seconds when the first move was played
        weights = np.asarray(cfg.board_size_weights or [1.0] * len(cfg.board_sizes), dtype=np.float64)
        self._size_p = weights / weights.sum()

    # ---- controls ------------------------------------------------------
    def set_batch_size(self, b: int) -> None:
        """From the next flush on; at most ``max_batch_size``."""
        for bt in self.batchers.values():
            bt.batch_size = min(max(1, int(b)), self.max_batch)

    def set_timeout_ms(self, ms: float) -> None:
        for bt in self.batchers.values():
            bt.timeout_ms = max(0.0, float(ms))

    def set_parallel_games(self, n: int) -> None:
        self.parallel_games = max(1, int(n))
        self._spawn_workers()

    def pause(self) -> None:
        self._paused.clear()

    def resume(self) -> None:
        self._paused.set()

    @property
    def paused(self) -> bool:
        return not self._paused.is_set()

    def stop(self) -> None:
        self._stop = True
        self._paused.set()
        for bt in self.batchers.values():
            bt.poll()

    def control(self, cmd: dict) -> None:
        """Apply a control message: {"batch_size": b} etc."""
        if "batch_size" in cmd:
            self.set_batch_size(cmd["batch_size"])
        if "parallel_games" in cmd:
            self.set_parallel_games(cmd["parallel_games"])
        if "timeout_ms" in cmd:
            self.set_timeout_ms(cmd["timeout_ms"])
        if cmd.get("pause") is True:
            self.pause()
        if cmd.get("pause") is False:
            self.resume()
        if cmd.get("stop"):
            self.stop()
        if "network" in cmd:
            net = cmd["network"]
            self.switch.request(str(net["path"]), NetworkId.from_dict(net))

    def _swapped(self, backend, rates) -> None:
        """A new network answers from now on: the cache's answers are the
        old one's, and the device's rates are the new one's."""
        for bt in self.batchers.values():
            bt.nn_cache.clear()
        self.device_rates, self.measured_best = rates

    def _rates_of(self, backend) -> tuple[dict[int, float], float]:
        """``(device_rates, measured_best)`` of a backend (see
        ``_measure_device``). A new network of the same shape on the same
        device (a loop's next generation) runs at the same speed: its curve
        is the one measured already, not measured again."""
        key = curve_key(backend)
        if key is not None and key == self._curve_key and self.device_rates:
            return self.device_rates, self.measured_best
        sizes = sorted(set(self.cfg.board_sizes))
        by_size = {n: backend.measure_rates(n, self.cfg.batch_size) for n in sizes}
        self._curve_key = key
        return by_size[sizes[-1]], max((r for rates in by_size.values() for r in rates.values()), default=0.0)

    # ---- running -------------------------------------------------------
    def _want_more_games(self) -> bool:
        return not self._stop and (self.num_games <= 0 or self.started < self.num_games)

    def _spawn_workers(self) -> None:
        if self._done is None:
            return
        while len(self._workers) < self.parallel_games and self._want_more_games():
            wid = self._next_worker
            self._next_worker += 1
            t = asyncio.get_running_loop().create_task(self._worker(wid))
            self._workers.add(t)
            t.add_done_callback(self._worker_done)

    def _worker_done(self, t: asyncio.Task) -> None:
        self._workers.discard(t)
        if not t.cancelled() and t.exception() is not None and self._error is None:
            self._error = t.exception()
            self.stop()
        if not self._workers and self._done is not None:
            self._done.set()

    async def _gate(self, batcher: Batcher) -> None:
        if not self._paused.is_set():
            batcher.detach()
            await self._paused.wait()
            batcher.attach()

    async def _worker(self, wid: int) -> None:
        search = Search(self.search_cfg, self.encoder, rng=np.random.default_rng(self.rng.integers(1 << 62)))
        while self._want_more_games() and len(self._workers) <= self.parallel_games:
            await self._paused.wait()
            if not self._want_more_games():
                break
            self.started += 1
            size = int(self.rng.choice(self.cfg.board_sizes, p=self._size_p))
            batcher = self.batchers[size]
            live = self.live[wid] = LiveGame(size)
            first_network = self.switch.serial
            batcher.attach()
            try:
                rec = await play_game(self.cfg, search, batcher, self.rng, size, self.encoder, live,
                                      controls=_WorkerControls(self, batcher))
            finally:
                batcher.detach()
                self.live.pop(wid, None)
            if rec is None:
                break
            rec.networks = self.switch.since(first_network)
            self.finished += 1
            self.writer.add(rec)
            kill_point("selfplay-game")
            if len(self._workers) > self.parallel_games:
                break

    async def run(self) -> None:
        """Play until ``num_games`` are done or ``stop()``; then write what is
        pending (whole games only)."""
        self._measure_device()
        self._clock = LoopClock()
        self._t0 = time.perf_counter()
        self._done = asyncio.Event()
        self._error: BaseException | None = None
        self._spawn_workers()
        if self._workers:
            await self._done.wait()
        self.writer.close()
        if self._error is not None:
            raise self._error

    def _measure_device(self) -> None:
        """The device's rates on every board size the run plays: those of
        the largest board go to ``device_rates`` (the verdict's batch
        advice), the best of them all to ``measured_best``. Curves given
        at construction for every board size are not measured again."""
        sizes = sorted(set(self.cfg.board_sizes))
        if self._measured and all(n in self._measured for n in sizes):
            by_size = {n: self._measured[n] for n in sizes}
            self.device_rates = by_size[sizes[-1]]
            self.measured_best = max((r for c in by_size.values() for r in c.values()), default=0.0)
            return
        self.device_rates, self.measured_best = self._rates_of(self.backend)

    def close(self) -> None:
        """Stop the batchers, the inference worker and the writer (which
        writes whatever whole games it still holds)."""
        for bt in self.batchers.values():
            bt.close()
        self.switch.close()
        self.worker.shutdown(wait=True)
        if self.switch.swaps:  # a network the engine loaded itself (the caller closes the one it gave)
            self.backend.current.close()
        self.writer.close()

    # ---- figures -------------------------------------------------------
    def status(self) -> Status:
        counters = merge([bt.counters.snapshot() for bt in self.batchers.values()])
        elapsed = time.perf_counter() - self._t0
        if self._warm_at is None and counters.moves > 0:
            self._warm_at = elapsed  # a whole search has run: every compiled path is loaded
        first = next(iter(self.batchers.values()))
        return Status(
            warm_at=self._warm_at,
            t=time.perf_counter(),
            elapsed=elapsed,
            loop_cpu_s=self._clock.cpu_s() if self._clock else 0.0,
            counters=counters,
            settings=EngineSettings(
                batch_size=first.batch_size,
                parallel_games=self.parallel_games,
                timeout_ms=first.timeout_ms,
                paused=self.paused,
                device=str(getattr(self.backend, "device", "cpu")),
                leaves_per_await=self.search_cfg.leaves_per_await,
                batches_in_flight=self.worker.dispatch.bound,
                max_batch_size=self.max_batch,
            ),
            proc_cpu_s=time.process_time(),
            device_rates=dict(self.device_rates),
            device_best=max(self.measured_best, sustained_rate(counters)) if self.measured_best > 0 else 0.0,
            draining=not self._want_more_games(),
            games_unstarted=max(self.num_games - self.started, 0) if self.num_games > 0 else None,
            games=[replace(g) for g in self.live.values()],
            finished=self.finished,
            chunks=self.writer.chunks_written,
            positions_written=self.writer.positions_written,
            games_written=self.writer.games_written,
            pid=os.getpid(),
            network=self.switch.current.label,
            networks=[n.label for n in self.switch.history[-NETWORKS_SHOWN:]],
            network_error=self.switch.error,
        )


class _WorkerControls:
    """A game's ``Controls`` (``selfplay/game.py``): the engine's stop flag,
    and its pause gate, which detaches the game's batcher while it waits so
    the batcher does not wait for a paused game."""

    def __init__(self, engine: Engine, batcher: Batcher) -> None:
        self.engine = engine
        self.batcher = batcher

    def stopped(self) -> bool:
        return self.engine._stop

    async def gate(self) -> None:
        await self.engine._gate(self.batcher)
