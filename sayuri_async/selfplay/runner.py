"""Running self-play: in this process, or as several engine processes per
device, with a reporter (the TUI or plain lines) watching and steering.

Vocabulary
----------
reporter    an object with ``update(statuses) -> list of control dicts`` called
            about every ``interval`` seconds with one ``Status`` per engine
            process (``status.py``), and ``close(statuses)`` at the end. Controls (e.g.
            ``{"batch_size": 64}``) go to every engine.
engine process  with ``procs > 1`` (or several devices) each process runs its
            own event loop, batcher and backend; it sends its ``Status``
            (pickled as it is) through a queue and reads controls from another. ``parallel_games`` and
            ``batch_size`` are per process.
lifetime    SIGINT and SIGTERM stop a run cleanly (whole files only), in one
            process or many; engine processes stop the same way when their
            parent dies, SIGKILL included (``lifetime.die_with_parent``), and
            their writer processes follow them. After the run the handlers
            it found are back (``run_event_loop``: uvloop leaves its own in
            place when its loop closes), so a caller's later phases (the RL
            loop's training and evaluation) get KeyboardInterrupt and its
            SIGTERM handler again. Stopping on a signal, the parent sends
            its engine processes SIGTERM besides the stop request: one
            that is compiling (a first start) cannot read its queue and
            ends at once (``compile_signals``), which is no failure.
tags        an engine's writer tag (part of every file name) is the run's
            ``fileio.run_stamp()`` (plus ``-p<i>`` per engine process), so no
            run reuses an earlier run's names.
follow      with ``follow_weights`` (``follow.py``) a thread of this process
            watches the folder and every engine gets each new network as a
            control; a network an engine fails to load is reported once
            (``warn``) and the engine keeps its network.
failure     an engine that fails (a full disk, a crash) stops the others;
            the run then raises ``SelfplayError`` naming the process(es) and
            the first error, in one line.
Summary     the final figures: games, positions, chunks, evals/s over the run.
"""
from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Coroutine

from ..backend_factory import make_backend
from ..encoders import DEFAULT_ENCODER
from ..fileio import run_stamp
from ..killpoint import kill_point
from ..lifetime import die_with_parent, parent_alive, stop_on_signals
from ..net.identity import NetworkId, network_of
from .auto import resolve
from .config import AUTO, SelfplayConfig
from .report import cores
from .follow import WeightsFollower
from ..usererror import RunFailure
from .status import Status

STATUS_INTERVAL = 0.5
STOP_GRACE_S = 60.0  # an engine whose parent died has this long to write its whole games
DEAD_SILENT_S = 2.0  # an engine gone this long without its last status failed
OnSignal = Callable[[int], None]
Warn = Callable[[str], None]


class SelfplayError(RuntimeError, RunFailure):
    """Self-play failed; the one-line message names the process(es) and the error."""


def describe(e: BaseException) -> str:
    """One line: the exception's kind and message."""
    return " ".join(f"{type(e).__name__}: {e}".split())


def install_uvloop() -> str:
    """Use uvloop where it is installed; returns the loop's name."""
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    except ImportError:
        return "asyncio"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
ENDED_BY_SIGTERM = (128 + signal.SIGTERM, -signal.SIGTERM)  # an engine's exit code after the parent's SIGTERM


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(main)``, then the SIGINT and SIGTERM handlers found
    before it put back: uvloop's loop leaves its own handler in place after
    it closes, which would swallow every later Ctrl-C and SIGTERM. Off the
    main thread no handler can be set, and none is touched."""
    on_main = threading.current_thread() is threading.main_thread()
    saved = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} if on_main else {}
    try:
        asyncio.run(main)
    finally:
        for sig, handler in saved.items():
            if handler is not None:  # None: a handler not set from Python, nothing to put back
                signal.signal(sig, handler)


def make_engine_backend(cfg: SelfplayConfig, device: str):
    """The backend of one engine process. On a CPU the cores are shared out
    between the engine processes, so K processes do not each start a torch
    thread per core."""
    weights = cfg.weights or None
    kw: dict = {"max_batch": cfg.max_batch}
    if weights is not None and device == "cpu":
        kw["threads"] = max(1, cores() // (1 if cfg.procs == AUTO else max(int(cfg.procs), 1)))
    return make_backend(weights, device=device, seed=cfg.seed or None, encoder=cfg.encoder or DEFAULT_ENCODER,
                        device_model=cfg.device_model, device_table=cfg.device_table, **kw)


def network_maker(cfg: SelfplayConfig, device: str):
    """How an engine that follows a folder builds a network from a file:
    the backend ``make_engine_backend`` would make for it."""
    if not cfg.follow_weights:
        return None
    return lambda path: make_engine_backend(replace(cfg, weights=path), device)


class NetworkReports:
    """Says once, through ``warn``, each network an engine refused (its
    status's ``network_error``)."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.said: set[str] = set()

    def look(self, statuses: list[Status]) -> None:
        for st in statuses:
            err = st.network_error
            if err and err not in self.said:
                self.said.add(err)
                self.warn(f"follow-weights: {err}")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _serve_engine(engine, interval: float, on_status, get_controls) -> None:
    """Run ``engine`` while reporting its status every ``interval`` s."""
    run = asyncio.ensure_future(engine.run())
    try:
        while not run.done():
            await asyncio.wait([run], timeout=interval)
            if run.done():
                break  # its result (or failure) is taken below
            for cmd in get_controls():
                engine.control(cmd)
            on_status(engine.status())
        await run
    finally:
        if not run.done():
            engine.stop()
            await run


def run_inprocess(cfg: SelfplayConfig, reporter, interval: float = STATUS_INTERVAL,
                  on_signal: OnSignal | None = None, network: NetworkId | None = None,
                  follower: WeightsFollower | None = None, warn: Warn = _say,
                  measured: dict[int, dict[int, float]] | None = None) -> list[Status]:
    """One engine in this process; Ctrl-C and SIGTERM stop it cleanly (and
    call ``on_signal(signum)``). ``follower`` hands it new networks;
    ``measured`` holds device curves measured already (``auto.Choice``)."""
    from .engine import Engine

    install_uvloop()
    device = cfg.device.split(",")[0]
    backend = make_engine_backend(cfg, device)
    final: list[Status] = []
    reports = NetworkReports(warn)

    async def main() -> None:
        engine = Engine(cfg, backend, tag=run_stamp(), network=network, make_network=network_maker(cfg, device),
                        measured=measured)

        def stop(signum: int) -> None:
            if on_signal is not None:
                on_signal(signum)
            engine.stop()

        stop_on_signals(asyncio.get_running_loop(), stop)
        pending: list[dict] = []

        def on_status(st: Status) -> None:
            final[:] = [st]
            reports.look([st])
            pending.extend(reporter.update([st]) or [])

        def controls() -> list[dict]:
            out = list(pending) + (follower.take() if follower is not None else [])
            pending.clear()
            return out

        try:
            await _serve_engine(engine, interval, on_status, controls)
        finally:
            try:
                final[:] = [engine.status()]
            except Exception:  # a failed writer has no figures to give; the error says why
                pass
            engine.close()

    try:
        run_event_loop(main())
    finally:
        backend.close()
    reporter.close(final)
    return final


def _child(cfg: SelfplayConfig, device: str, tag: str, writer_tag: str, num_games: int, status_q, ctrl_q,
           parent_pid: int, network: NetworkId | None = None,
           measured: dict[int, dict[int, float]] | None = None) -> None:
    """Entry point of one engine process: it sends ``(tag, status, done,
    error)`` tuples, the last with ``done`` and the error's one-line text (or
    None), and exits 1 after a failure. It stops cleanly on SIGTERM and when
    its parent dies (``lifetime.die_with_parent``)."""
    die_with_parent(parent_pid, signal.SIGTERM, STOP_GRACE_S)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    from ..compile_signals import end_on_signals_while_compiling
    from .engine import Engine

    end_on_signals_while_compiling(None)  # SIGTERM while compiling: end at once, silently (the parent speaks)

    final: list[Status | None] = [None]
    error: str | None = None

    async def main(backend) -> None:
        engine = Engine(cfg, backend, tag=writer_tag, num_games=num_games, network=network,
                        make_network=network_maker(cfg, device), measured=measured)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, engine.stop)

        def controls() -> list[dict]:
            out = []
            while True:
                try:
                    out.append(ctrl_q.get_nowait())
                except queue.Empty:
                    return out

        def on_status(st: Status) -> None:
            if parent_alive(parent_pid):  # nobody reads an orphan's figures
                status_q.put((tag, st, False, None))

        try:
            await _serve_engine(engine, STATUS_INTERVAL, on_status, controls)
        finally:
            try:
                final[0] = engine.status()
            except Exception:  # a failed writer has no figures to give; the error says why
                pass
            engine.close()

    try:
        install_uvloop()
        backend = make_engine_backend(cfg, device)
        try:
            run_event_loop(main(backend))
        finally:
            backend.close()
    except Exception as e:
        error = describe(e)
    if parent_alive(parent_pid):
        status_q.put((tag, final[0], True, error))
    else:
        status_q.cancel_join_thread()  # no reader left: do not wait to flush at exit
    if error is not None:
        raise SystemExit(1)


def run_multiprocess(cfg: SelfplayConfig, reporter, interval: float = STATUS_INTERVAL,
                     on_signal: OnSignal | None = None, network: NetworkId | None = None,
                     follower: WeightsFollower | None = None, warn: Warn = _say,
                     measured: dict[int, dict[int, float]] | None = None) -> list[Status]:
    """``cfg.procs`` engine processes per device in ``cfg.device``. SIGINT and
    SIGTERM stop them cleanly (and call ``on_signal(signum)``); they end with
    this process if it dies. A failed engine stops the others and raises
    SelfplayError once all have ended. ``follower`` hands every engine new
    networks."""
    devices = [d.strip() for d in cfg.device.split(",") if d.strip()] or ["cpu"]
    slots = [(d, k) for d in devices for k in range(cfg.procs)]
    total = len(slots)
    ctx = mp.get_context("spawn")  # CUDA does not survive fork
    stamp = run_stamp()  # file names of this run differ from every earlier run's
    latest: dict[str, Status] = {}
    finished: set[str] = set()
    errors: dict[str, str] = {}
    procs: list = []
    ctrls: list = []
    stopping = False
    signalled = False  # stopping on a signal: the engines got SIGTERM too
    reports = NetworkReports(warn)

    def stop(signum: int | None = None, _frame=None) -> None:
        nonlocal stopping, signalled
        if signum is not None and on_signal is not None:
            on_signal(signum)
        if not stopping:
            stopping = True
            for q in ctrls:
                q.put({"stop": True})
        if signum is not None and not signalled:  # one that compiles cannot read its queue: it ends at once
            signalled = True
            for p in procs:
                if p.is_alive():
                    p.terminate()

    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        status_q = ctx.Queue()
        for i, (dev, k) in enumerate(slots):
            share = 0 if cfg.num_games <= 0 else cfg.num_games // total + (1 if i < cfg.num_games % total else 0)
            if cfg.num_games > 0 and share == 0:
                continue
            ctrl_q = ctx.Queue()
            tag = f"p{i}"
            child_cfg = replace(cfg, seed=(cfg.seed + 7919 * i) if cfg.seed else 0)
            p = ctx.Process(target=_child, args=(child_cfg, dev, tag, f"{stamp}-{tag}", share, status_q, ctrl_q,
                                                 os.getpid(), network, measured), name=f"selfplay-{tag}")
            ctrls.append(ctrl_q)
            if stopping:
                break
            p.start()
            procs.append(p)
        dead_since: dict[str, float] = {}
        next_report = time.monotonic() + interval
        while len(finished) < len(procs):
            try:
                tag, st, done, error = status_q.get(timeout=0.1)
                if st is not None:
                    latest[tag] = st
                    kill_point("selfplay-status")  # the parent of engine processes took a report
                if done:
                    finished.add(tag)
                if error is not None:
                    errors[tag] = error
                    stop()
            except queue.Empty:
                pass
            now = time.monotonic()
            for p in procs:
                tag = p.name.removeprefix("selfplay-")
                if tag not in finished and not p.is_alive():
                    if signalled and p.exitcode in ENDED_BY_SIGTERM:  # as asked (see compile_signals)
                        finished.add(tag)
                    elif now - dead_since.setdefault(tag, now) > DEAD_SILENT_S:
                        finished.add(tag)
                        errors[tag] = f"exited with code {p.exitcode} before its last report"
                        stop()
            if now >= next_report:
                next_report = now + interval
                reports.look(list(latest.values()))
                for cmd in follower.take() if follower is not None else []:
                    for q in ctrls:
                        q.put(cmd)
                for cmd in reporter.update(list(latest.values())) or []:
                    if cmd.get("stop"):
                        stop()
                    else:
                        for q in ctrls:
                            q.put(cmd)
    except BaseException:  # the reporter failed: stop the engines before waiting for them
        stop()
        raise
    finally:
        for p in procs:
            p.join(timeout=STOP_GRACE_S)
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    final = list(latest.values())
    reporter.close(final)
    for p in procs:
        tag = p.name.removeprefix("selfplay-")
        if p.exitcode not in (0, None) and tag not in errors and not (signalled and p.exitcode in ENDED_BY_SIGTERM):
            errors[tag] = f"exited with code {p.exitcode}"
    if errors:
        names = ", ".join(f"selfplay-{t}" for t in sorted(errors))
        first = errors[sorted(errors)[0]]
        raise SelfplayError(f"engine process{'es' if len(errors) > 1 else ''} {names} failed: {first}")
    return final


def run_selfplay(cfg: SelfplayConfig, reporter, on_signal: OnSignal | None = None,
                 warn: Warn = _say, measured: dict[int, dict[int, float]] | None = None) -> list[Status]:
    """Self-play in this process or in engine processes (see the vocabulary).
    A failure of the run (a full disk, a crashed engine) raises SelfplayError
    naming what failed; ``on_signal(signum)`` hears SIGINT and SIGTERM, which
    stop the run cleanly; ``warn`` takes the follower's one-line reports.
    ``batch_size`` / ``procs`` = "auto" are resolved here unless the caller
    did (``auto.resolve``, whose curve it may hand on as ``measured``)."""
    from .writer import clean_stale_temp
    from .writer_proc import WriterError

    clean_stale_temp(cfg.out)
    cfg, network, follower = start_following(cfg, warn)
    if AUTO in (cfg.batch_size, cfg.procs):  # a caller that did not resolve them (the command line does, first)
        choice = resolve(cfg)
        cfg, measured = choice.cfg, choice.measured
        warn(choice.line)
    devices = [d for d in cfg.device.split(",") if d.strip()]
    try:
        if cfg.procs == 1 and len(devices) <= 1:
            try:
                return run_inprocess(cfg, reporter, on_signal=on_signal, network=network, follower=follower,
                                     warn=warn, measured=measured)
            except (WriterError, OSError) as e:
                raise SelfplayError(f"self-play failed: {describe(e)}") from None
        return run_multiprocess(cfg, reporter, on_signal=on_signal, network=network, follower=follower, warn=warn,
                                measured=measured)
    finally:
        if follower is not None:
            follower.stop()


def start_following(cfg: SelfplayConfig, warn: Warn) -> tuple[SelfplayConfig, NetworkId, WeightsFollower | None]:
    """The network the engines start with, and the follower of
    ``follow_weights`` (started; None without it): the folder's newest good
    file, else ``weights``, else the random network (``follow.py``, "start")."""
    if not cfg.follow_weights:
        return cfg, network_of(cfg.weights or None), None
    follower = WeightsFollower(cfg.follow_weights, cfg.follow_interval_s, warn)
    found = follower.starting_network()
    if found is not None:
        cfg = replace(cfg, weights=str(found[0]))
        network = found[1]
    else:
        network = network_of(cfg.weights or None)
        follower.current = network
        warn(f"follow-weights: no network in {cfg.follow_weights} yet; "
             f"{network.label} plays until one appears")
    follower.start()
    return cfg, network, follower
