"""Running self-play: in this process, or as several engine processes per
device, with a reporter (the TUI or plain lines) watching and steering.

Vocabulary
----------
reporter    an object with ``update(statuses) -> list of control dicts`` called
            about every ``interval`` seconds with one status dict per engine
            process, and ``close(statuses)`` at the end. Controls (e.g.
            ``{"batch_size": 64}``) go to every engine.
engine process  with ``procs > 1`` (or several devices) each process runs its
            own event loop, batcher and backend; it sends its status through a
            queue and reads controls from another. ``parallel_games`` and
            ``batch_size`` are per process.
Summary     the final figures: games, positions, chunks, evals/s over the run.
"""
from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue
import signal
import sys
import time
from dataclasses import replace

from .config import SelfplayConfig

STATUS_INTERVAL = 0.5


def install_uvloop() -> str:
    """Use uvloop where it is installed; returns the loop's name."""
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    except ImportError:
        return "asyncio"


def make_engine_backend(cfg: SelfplayConfig, device: str):
    """The backend of one engine process. On a CPU the cores are shared out
    between the engine processes, so K processes do not each start a torch
    thread per core."""
    import os

    from ..net.backends import make_backend

    from ..features import DEFAULT_ENCODER

    weights = cfg.weights or None
    kw: dict = {"max_batch": max(cfg.batch_size, 1)}
    if weights is not None and device == "cpu":
        kw["threads"] = max(1, (os.cpu_count() or 1) // max(cfg.procs, 1))
    return make_backend(weights, device=device, seed=cfg.seed or None, encoder=cfg.encoder or DEFAULT_ENCODER,
                        device_model=cfg.device_model, device_table=cfg.device_table, **kw)


async def _serve_engine(engine, interval: float, on_status, get_controls) -> None:
    """Run ``engine`` while reporting its status every ``interval`` s."""
    run = asyncio.ensure_future(engine.run())
    try:
        while not run.done():
            await asyncio.wait([run], timeout=interval)
            for cmd in get_controls():
                engine.control(cmd)
            on_status(engine.status())
        await run
    finally:
        if not run.done():
            engine.stop()
            await run


def _stop_on_signals(loop: asyncio.AbstractEventLoop, stop) -> None:
    """SIGINT and SIGTERM call ``stop`` (a clean stop: whole files only).
    Where the loop cannot watch signals itself (Windows' event loop) a plain
    handler forwards them to it; off the main thread no signal is delivered
    here at all (the caller's thread owns Ctrl-C), so nothing is installed."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop)
        except NotImplementedError:  # Windows' loop cannot watch signals: forward them to it
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop))
        except (RuntimeError, ValueError):  # not the main thread
            return


def run_inprocess(cfg: SelfplayConfig, reporter, interval: float = STATUS_INTERVAL) -> list[dict]:
    """One engine in this process; Ctrl-C stops it cleanly."""
    from .engine import Engine

    install_uvloop()
    backend = make_engine_backend(cfg, cfg.device.split(",")[0])
    final: list[dict] = []

    async def main() -> None:
        engine = Engine(cfg, backend)
        _stop_on_signals(asyncio.get_running_loop(), engine.stop)
        pending: list[dict] = []

        def on_status(st: dict) -> None:
            final[:] = [st]
            pending.extend(reporter.update([st]) or [])

        def controls() -> list[dict]:
            out = list(pending)
            pending.clear()
            return out

        try:
            await _serve_engine(engine, interval, on_status, controls)
        finally:
            final[:] = [engine.status()]
            engine.close()

    try:
        asyncio.run(main())
    finally:
        backend.close()
    reporter.close(final)
    return final


def _child(cfg: SelfplayConfig, device: str, tag: str, num_games: int, status_q, ctrl_q) -> None:
    """Entry point of one engine process."""
    from .engine import Engine

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    install_uvloop()
    backend = make_engine_backend(cfg, device)

    async def main() -> None:
        engine = Engine(cfg, backend, tag=tag, num_games=num_games)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, engine.stop)

        def controls() -> list[dict]:
            out = []
            while True:
                try:
                    out.append(ctrl_q.get_nowait())
                except queue.Empty:
                    return out

        try:
            await _serve_engine(engine, STATUS_INTERVAL, lambda st: status_q.put((tag, st, False)), controls)
        finally:
            status_q.put((tag, engine.status(), True))
            engine.close()

    try:
        asyncio.run(main())
    finally:
        backend.close()


def run_multiprocess(cfg: SelfplayConfig, reporter, interval: float = STATUS_INTERVAL) -> list[dict]:
    """``cfg.procs`` engine processes per device in ``cfg.device``."""
    devices = [d.strip() for d in cfg.device.split(",") if d.strip()] or ["cpu"]
    slots = [(d, k) for d in devices for k in range(cfg.procs)]
    total = len(slots)
    ctx = mp.get_context("spawn")  # CUDA does not survive fork
    status_q = ctx.Queue()
    procs, ctrls = [], []
    for i, (dev, k) in enumerate(slots):
        share = 0 if cfg.num_games <= 0 else cfg.num_games // total + (1 if i < cfg.num_games % total else 0)
        if cfg.num_games > 0 and share == 0:
            continue
        ctrl_q = ctx.Queue()
        tag = f"p{i}"
        child_cfg = replace(cfg, seed=(cfg.seed + 7919 * i) if cfg.seed else 0)
        p = ctx.Process(target=_child, args=(child_cfg, dev, tag, share, status_q, ctrl_q), name=f"selfplay-{tag}")
        p.start()
        procs.append(p)
        ctrls.append(ctrl_q)
    latest: dict[str, dict] = {}
    finished: set[str] = set()
    stopping = False

    def stop(*_a) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            for q in ctrls:
                q.put({"stop": True})

    old = signal.signal(signal.SIGINT, stop)
    try:
        next_report = time.monotonic() + interval
        while len(finished) < len(procs):
            try:
                tag, st, done = status_q.get(timeout=0.1)
                latest[tag] = st
                if done:
                    finished.add(tag)
            except queue.Empty:
                pass
            if all(not p.is_alive() for p in procs) and status_q.empty():
                break
            if time.monotonic() >= next_report:
                next_report = time.monotonic() + interval
                for cmd in reporter.update(list(latest.values())) or []:
                    if cmd.get("stop"):
                        stop()
                    else:
                        for q in ctrls:
                            q.put(cmd)
    finally:
        signal.signal(signal.SIGINT, old)
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
    final = list(latest.values())
    reporter.close(final)
    failed = [p.name for p in procs if p.exitcode not in (0, None)]
    if failed:
        print(f"sayuri-async: engine process(es) {', '.join(failed)} failed", file=sys.stderr)
    return final


def run_selfplay(cfg: SelfplayConfig, reporter) -> list[dict]:
    from .writer import clean_stale_temp

    clean_stale_temp(cfg.out)
    devices = [d for d in cfg.device.split(",") if d.strip()]
    if cfg.procs == 1 and len(devices) <= 1:
        return run_inprocess(cfg, reporter)
    return run_multiprocess(cfg, reporter)
