"""``sayuri-async gtp``: the GTP program (also ``python -m gtp``).

Vocabulary
----------
StdinInbox   input lines from a reader thread, handed to the event loop: the
             loop is never blocked on stdin, so analysis keeps searching while
             it watches for the next line ("stop on any input"). End of input
             counts as input (analysis stops, then the program ends). Lines
             are split at LF only and capped in length
             (``protocol.LineSplitter``).
SafeStderr   wraps ``sys.stderr`` so that no line written through Python can
             start with ``=``, ``?``, ``info`` or ``play`` (Lizzie reads stderr
             as if it were stdout); such lines get the ``sayuri-async:``
             prefix that every log line of ours carries anyway.
serve        the command loop: one line at a time, in order; each command's
             answer is complete before the next line is read.
threads      torch's CPU threads for the network: ``[net] threads`` when set,
             else self-play's rule for sharing the cores between engine
             processes (``cores // processes``, at least 1) with two
             processes: the engine and the program that drives it (a GUI,
             a match runner). One game's search and network take turns, so
             more threads than free cores only spin against the search and
             the other programs (a 9x9 genmove took minutes with two busy
             programs on two cores and torch's default of two threads,
             seconds with one). The start line on stderr says how many.
"""
from __future__ import annotations

import argparse
import asyncio
import io
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import BinaryIO

from sayuri_async.configfile import CommandLine, recheck
from sayuri_async.usererror import ArgumentParser, UserError, check_device, input_file, one_line

from .commands import Dispatcher, log
from .context import OutputClosed
from .config import ConfigError, GtpConfig, load_config
from .engine import Engine
from .protocol import LineSplitter, parse_line

FORBIDDEN_STARTS = ("=", "?", "info", "play")


class SafeStderr(io.TextIOBase):
    """Line-buffering stderr filter: prefixes lines a GUI could misread."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        text = self._partial + s
        lines = text.split("\n")
        self._partial = lines.pop()
        for ln in lines:
            self.inner.write(self._safe(ln) + "\n")
        if lines:
            self.inner.flush()
        return len(s)

    def flush(self) -> None:
        if self._partial:
            self.inner.write(self._safe(self._partial))
            self._partial = ""
        self.inner.flush()

    @staticmethod
    def _safe(line: str) -> str:
        return "sayuri-async: " + line if line.lstrip().startswith(FORBIDDEN_STARTS) else line

    def fileno(self) -> int:
        return self.inner.fileno()


class StdinInbox:
    def __init__(self, stream: BinaryIO) -> None:
        self._loop = asyncio.get_running_loop()
        self._lines: deque[str] = deque()
        self._eof = False
        self._event = asyncio.Event()
        self._thread = threading.Thread(target=self._read, args=(stream,), name="gtp-stdin", daemon=True)
        self._thread.start()

    def _read(self, stream: BinaryIO) -> None:
        # Read the raw file descriptor: a daemon thread blocked inside a
        # buffered reader holds its lock and aborts interpreter shutdown.
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            fd = -1
        splitter = LineSplitter()
        try:
            while True:
                chunk = os.read(fd, 65536) if fd >= 0 else stream.readline()
                if not chunk:
                    break
                lines = splitter.feed(chunk)
                self._lines.extend(lines)
                if lines:
                    self._loop.call_soon_threadsafe(self._event.set)
        except (OSError, ValueError, RuntimeError):
            pass
        last = splitter.end()
        if last is not None:
            self._lines.append(last)
        self._eof = True
        try:
            self._loop.call_soon_threadsafe(self._event.set)
        except RuntimeError:  # the loop is closed already
            pass

    def pending(self) -> bool:
        return bool(self._lines) or self._eof

    async def get(self) -> str | None:
        """The next line, or None at end of input."""
        while True:
            if self._lines:
                return self._lines.popleft()
            if self._eof:
                return None
            self._event.clear()
            if self._lines or self._eof:
                continue
            await self._event.wait()


def stdout_writer(stream: BinaryIO) -> Callable[[str], None]:
    def write(text: str) -> None:
        try:
            stream.write(text.encode("utf-8"))
            stream.flush()
        except (BrokenPipeError, ValueError, OSError) as e:
            raise OutputClosed(str(e)) from None

    return write


async def serve(cfg: GtpConfig, backend, inp: BinaryIO, write: Callable[[str], None]) -> int:
    try:
        engine = Engine(cfg, backend)
    except ValueError as e:
        log(str(e))
        return 2
    try:
        await engine.warmup()
        inbox = StdinInbox(inp)
        disp = Dispatcher(engine, write, cfg)
        while not disp.quit_requested:
            line = await inbox.get()
            if line is None:
                break
            cmd = parse_line(line)
            if cmd is None:
                continue
            await disp.execute(cmd, inbox)
    except OutputClosed:
        _silence_stdout()
    finally:
        engine.close()
    return 0


def _silence_stdout() -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except OSError:
        pass


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="sayuri-async gtp",
        description="Speak GTP version 2 on stdin/stdout (Sabaki, Lizzie, GoGui, match runners).",
    )
    p.add_argument("--config", metavar="TOML", help="settings file (see configs/gtp.toml); default: built-in defaults")
    p.add_argument("--weights", metavar="FILE",
                   help="network weights (.safetensors), or 'random' for the random network on every board size; "
                        "default: the shipped network on 9x9 (weights/9x9/), the random network on other sizes")
    p.add_argument("--device", help="torch device for the network, e.g. cpu or cuda:0")
    p.add_argument("--playouts", type=int, metavar="N", help="playouts per genmove (also capped by the clock)")
    p.add_argument("--lizzie", action="store_true",
                   help="answer `version` as Lizzie 0.7.4 requires (X.Y with Y >= 15), same as "
                        "[protocol] lizzie_version = true")
    p.add_argument("--seed", type=int, help="random seed for the search (tie breaks)")
    p.add_argument("--tree-memory-mb", type=float, metavar="MB",
                   help="memory budget of the search tree, same as [search] tree_memory_mb (default 1024)")
    p.add_argument("--verbose", action="store_true", help="log a line per genmove on stderr")
    return p


def _configure(args: argparse.Namespace) -> GtpConfig:
    cfg = load_config(args.config)
    if args.weights:
        cfg.net.weights = args.weights
    if args.device:
        cfg.net.device = args.device
    if args.playouts is not None:
        cfg.search.playouts = args.playouts
    if args.lizzie:
        cfg.protocol.lizzie_version = True
    if args.seed is not None:
        cfg.search.seed = args.seed
    if args.tree_memory_mb is not None:
        cfg.search.tree_memory_mb = args.tree_memory_mb
    if args.verbose:
        cfg.protocol.verbose = True
    recheck(cfg, CommandLine())  # an error names the option (--playouts)
    return cfg


RANDOM = "random"  # --weights random: the random network on every board size, no shipped one


def given_weights(cfg: GtpConfig) -> str:
    """The weights file the user named (--weights or [net] weights); '' for none or ``random``."""
    return "" if cfg.net.weights == RANDOM else cfg.net.weights


ENGINE_PROCESSES = 2  # the engine and the program that drives it, as self-play counts its engine processes


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def torch_threads(cfg: GtpConfig) -> int:
    """The network's torch CPU threads: ``[net] threads``, or when it is 0
    self-play's share of the cores, ``cores // ENGINE_PROCESSES`` (at least
    1; module docstring, "threads")."""
    return cfg.net.threads or max(1, usable_cores() // ENGINE_PROCESSES)


def threads_text(cfg: GtpConfig) -> str:
    """The start line's words on the threads (empty on a GPU)."""
    if cfg.net.device != "cpu":
        return ""
    why = "[net] threads" if cfg.net.threads else \
        f"{usable_cores()} cores shared by the engine and its controller; [net] threads sets it"
    return f", torch threads {torch_threads(cfg)} ({why})"


def make_engine_backend(cfg: GtpConfig, weights: str | None = None):
    """The backend of ``weights`` (default: the user's, see ``given_weights``;
    the random network when there is none)."""
    from sayuri_async.backend_factory import make_backend

    weights = given_weights(cfg) if weights is None else weights
    kw: dict = {}
    if weights:
        if cfg.net.dtype:
            kw["dtype"] = cfg.net.dtype
        kw["threads"] = torch_threads(cfg)
        kw["max_batch"] = cfg.search.leaves_per_await
    seed = None if cfg.search.seed < 0 else cfg.search.seed
    return make_backend(weights or None, device=cfg.net.device, seed=seed, **kw)


def shipped_backend(cfg: GtpConfig):
    """With no weights given: the shipped 9x9 network on 9x9 and the random
    network elsewhere, and its path; (None, None) when the file is absent
    (an install without the repository's weights/), a ``random`` request or a
    device model."""
    from sayuri_async.net.device_model import device_index
    from sayuri_async.net.shipped import BoardSizeBackend, shipped_weights

    path = shipped_weights(9)
    if path is None or cfg.net.weights == RANDOM or device_index(cfg.net.device) is not None:
        return None, None
    return BoardSizeBackend({9: make_engine_backend(cfg, str(path))}, make_engine_backend(cfg, "")), path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if not isinstance(sys.stderr, SafeStderr):
        sys.stderr = SafeStderr(sys.stderr)
    cfg: GtpConfig | None = None
    try:
        cfg = _configure(args)
        if given_weights(cfg):
            input_file(cfg.net.weights, "--weights" if args.weights else "[net] weights", "weights file")
        check_device(cfg.net.device, "--device" if args.device else "[net] device", allow=(r"model(:\d+)?",))
        backend, shipped = (None, None) if given_weights(cfg) else shipped_backend(cfg)
        if backend is None:
            backend = make_engine_backend(cfg)
    except (ConfigError, UserError) as e:  # a bad option, config, weights file or device
        print(f"sayuri-async gtp: {one_line(e)}", file=sys.stderr, flush=True)
        return 2
    except Exception as e:  # a weights file that loads but cannot be used (planes, shapes)
        weights = cfg.net.weights if cfg is not None else args.weights
        print(f"sayuri-async gtp: cannot use the network {weights!r}: {one_line(e)}", file=sys.stderr, flush=True)
        return 2
    if given_weights(cfg):
        log(f"network {cfg.net.weights} ({backend.name}) on {cfg.net.device}{threads_text(cfg)}")
    elif shipped is not None:
        log(f"no weights given: 9x9 plays the shipped network {shipped} on {cfg.net.device}{threads_text(cfg)}; "
            f"other board sizes the random network (near-uniform policy, neutral value)")
    elif cfg.net.weights == RANDOM:
        log("weights 'random': playing with the random network on every board size (near-uniform policy, "
            "neutral value)")
    else:
        log("no weights given: playing with the random network (near-uniform policy, neutral value)")
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    out = sys.stdout.buffer
    try:
        return runner(serve(cfg, backend, sys.stdin.buffer, stdout_writer(out)))
    except KeyboardInterrupt:  # Ctrl-C at a terminal: leave quietly
        log("interrupted")
        return 130
