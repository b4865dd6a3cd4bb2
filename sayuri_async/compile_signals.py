"""SIGTERM and Ctrl-C during a numba compile end the command at once.

Vocabulary
----------
compile     numba compiling a function of ours on its first call with no
            cached machine code (a first start, or one after an edit of the
            compiled sources: ``numba_cache``): seconds to minutes, nested
            (typing a function compiles the functions it calls), in the
            main thread of self-play, GTP, match and the loop.
the delay   a command that stops cleanly on a signal (self-play: its event
            loop hears the signal and finishes the games in flight) cannot
            hear it while its main thread compiles: the stop waited for the
            compile and then for the games, which compile more. A SIGTERM
            during a first start's compile was honoured after 35 s and more.
at once     ``end_on_signals_while_compiling(command)`` (``cli.main`` run as
            the program, for the commands that compile; a caller of
            ``cli.main(argv)`` in its own process, such as a test, keeps
            its own handling) registers a numba compile listener. From
            the start of the outermost compile in the main thread to its
            end, SIGTERM and SIGINT have a handler that prints the command's
            one line (``terminated (SIGTERM)``, ``interrupted``: what
            ``usererror.answered`` prints) and ends the process there with
            status 143 or 130 (``os._exit``). numba's compiler is Python
            code between LLVM's calls, so the handler runs within moments.
            It ends the process rather than raising: unwinding an event loop
            cancels its other tasks, which run on into code not compiled
            yet, and the exit waited for those compiles too. What was in
            progress is lost as with a kill, and handled as after one:
            every file is written whole or not at all (``fileio``), the
            temporaries of unfinished writes are removed at the next start,
            engine and writer processes end with their parent
            (``lifetime.die_with_parent``). After the compile the handlers
            found at its start are back.
engines     self-play's engine processes compile on their own: each
            registers the listener with no command (``command=None``: no
            line, the parent prints the command's), and the parent,
            stopping on a signal, sends them SIGTERM besides its stop
            request, so an engine that compiles ends at once (143) and one
            that plays stops cleanly as before.
left alone  a signal the process ignores (self-play's engine processes
            leave SIGINT to their parent) or leaves to the default action
            (which ends it at once already); compiles in other threads;
            processes forked from the command (a data-loader worker).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from .usererror import Terminated, exit_status, message

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_state: dict = {"pid": None, "command": "", "depth": 0, "saved": {}}


def _end_now(signum: int, _frame: FrameType | None) -> None:
    """The handler while the main thread compiles (see "at once")."""
    ended: BaseException = KeyboardInterrupt() if signum == signal.SIGINT else Terminated()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if _state["command"] is not None:
        try:
            print(f"sayuri-async {_state['command']}: {message(ended)}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr closed: the status still says it
            pass
    os._exit(exit_status(ended) or 128 + signum)


def _ours() -> bool:
    """Whether this compile is the command's own: its process (not a forked
    child), its main thread."""
    return os.getpid() == _state["pid"] and threading.current_thread() is threading.main_thread()


def compile_started() -> None:
    """The outermost compile starts: ``_end_now`` takes SIGTERM and SIGINT
    (unless ignored or left to the default action)."""
    if not _ours():
        return
    _state["depth"] += 1
    if _state["depth"] > 1:
        return
    for sig in SIGNALS:
        old = signal.getsignal(sig)
        if old in (signal.SIG_IGN, signal.SIG_DFL, None):  # ignored, already ends the process, or not Python's
            continue
        _state["saved"][sig] = old
        signal.signal(sig, _end_now)


def compile_ended() -> None:
    """The outermost compile ended (or failed): the handlers found at its
    start are back (a handler installed meanwhile by someone else stays)."""
    if not _ours() or _state["depth"] == 0:
        return
    _state["depth"] -= 1
    if _state["depth"] > 0:
        return
    saved, _state["saved"] = _state["saved"], {}
    for sig, old in saved.items():
        if signal.getsignal(sig) is _end_now:
            signal.signal(sig, old)


def end_on_signals_while_compiling(command: str | None) -> None:
    """Register the compile listener for this process (once; see "at once");
    ``command`` names the subcommand in the line printed (None: an engine
    process, which prints none)."""
    _state["command"] = command
    if _state["pid"] == os.getpid():
        return
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            compile_started()

        def on_end(self, ev) -> None:
            compile_ended()

    _state.update(pid=os.getpid(), depth=0, saved={})
    event.register("numba:compile", Listener())
