"""Child processes that end with their parent, and stop signals.

Vocabulary
----------
parent watch  ``die_with_parent(parent_pid, signum, grace_s)``, called first
              thing in a spawned child: on Linux the kernel sends ``signum``
              to the child when its parent dies (``prctl(PR_SET_PDEATHSIG)``
              through ctypes); everywhere, a daemon thread polls
              ``os.getppid()`` every ``WATCH_INTERVAL_S`` and, once the parent
              is gone (the child was re-parented), sends ``signum`` itself.
              Either way the child's own handler for ``signum`` stops it
              cleanly; if it is still running ``grace_s`` later, the thread
              ends it with ``os._exit(EXIT_ORPHANED)``. ``signum = None``
              sends nothing (for a child that notices on its own, e.g. the end
              of a pipe, and needs only the deadline).
spawning thread  Linux sends the death signal when the *thread* that started
              the child exits: start children from a thread that lives as
              long as they should (the main thread, in this project).
subprocess  ``end_with_this_process(signum)``: the same kernel request as a
              ``preexec_fn``, for a child that runs a command of its own (the
              cluster fleet's trainer).
stop signals  ``stop_on_signals(loop, stop)``: SIGINT and SIGTERM call
              ``stop(signum)`` (a clean stop), through the event loop where it
              can watch signals, else through a plain handler.
ctrl-c      ``ctrl_c_interrupts()``: inside it SIGINT raises
              KeyboardInterrupt whatever its disposition was when the process
              started. A program started in the background by a script (``cmd
              &`` without job control) begins with SIGINT ignored, and Python
              then installs no handler of its own; a phase that sets its own
              handler (self-play's clean stop) would honour Ctrl-C and the
              next phase, with the ignored disposition put back, would not.
process tree  ``child_pids``, ``descendant_pids`` and ``pid_running`` read
              Linux's /proc (empty / False elsewhere): what the tests and
              ``tools/kill_runs.py`` use to find a run's processes and check
              that none outlives it (a zombie counts as ended).
"""
from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

WATCH_INTERVAL_S = 0.5
EXIT_ORPHANED = 3
_PR_SET_PDEATHSIG = 1


def _set_pdeathsig(signum: int) -> bool:
    """Ask the kernel for ``signum`` on the parent's death (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_with_this_process(signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``signum``
    when the thread that started it ends (Linux; see "spawning thread")."""
    return lambda: None if _set_pdeathsig(signum) else None


def parent_alive(parent_pid: int) -> bool:
    """True while this process is still the child of ``parent_pid``."""
    return os.getppid() == parent_pid


def die_with_parent(parent_pid: int, signum: int | None = signal.SIGTERM, grace_s: float = 60.0) -> None:
    """Start the parent watch (see the module's vocabulary)."""
    if signum is not None:
        _set_pdeathsig(signum)

    def watch() -> None:
        while parent_alive(parent_pid):
            time.sleep(WATCH_INTERVAL_S)
        if signum is not None:
            os.kill(os.getpid(), signum)
        time.sleep(grace_s)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def stop_on_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[int], None]) -> None:
    """SIGINT and SIGTERM call ``stop(signum)`` (a clean stop: whole files
    only). Where the loop cannot watch signals itself (Windows' event loop) a
    plain handler forwards them to it; off the main thread no signal is
    delivered here at all (the caller's thread owns Ctrl-C), so nothing is
    installed."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop, sig)
        except NotImplementedError:
            # Windows' event loop has no add_signal_handler: a plain handler forwards the signal to the loop
            signal.signal(sig, lambda s, _f: loop.call_soon_threadsafe(stop, s))
        except (RuntimeError, ValueError):  # not the main thread
            return


@contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt inside the block (see "ctrl-c"); the
    disposition found is back afterwards. Off the main thread nothing is
    touched (no signal is delivered there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)


def _interrupt(signum: int, frame) -> None:
    """Python's own Ctrl-C (KeyboardInterrupt), with multiprocessing's
    threads told the process is ending (``usererror.ending_quietly``): a
    data-loader worker that ends while it hands a batch over prints no
    traceback."""
    from .usererror import ending_quietly

    ending_quietly()
    signal.default_int_handler(signum, frame)


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def descendant_pids(pid: int) -> list[int]:
    """Every process below ``pid``: children, their children, ..."""
    out, todo = [], [pid]
    while todo:
        kids = child_pids(todo.pop())
        out += kids
        todo += kids
    return out


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
