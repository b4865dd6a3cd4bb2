"""One policy for every error a user can cause, for every subcommand.

Vocabulary
----------
UserError    a mistake the user can fix before anything runs: a file that is
             missing or is not what it should be, an output folder that cannot
             be written, an option out of range, a device that is not there,
             a GTP engine that will not start. Exit status 2.
RunFailure   something that failed during a run (a full disk, an engine that
             died in the middle, a training error). Exit status 1.
kinds        the project's own error classes say which of the two they are by
             inheriting one of them (``ConfigError``, ``WeightsError``,
             ``DeviceModelError``, ``SgfError`` ... are UserErrors;
             ``SelfplayError``, ``TrainError`` ... are RunFailures), so a
             subcommand lets them rise and ``cli.main`` answers them all in
             one place.
answered    ``@answered("<command>")`` on a subcommand's ``main`` applies the
             policy whether ``main`` is called by ``cli.main`` or directly (as
             tests do); ``cli.main`` applies it again to whatever is left.
one line     ``sayuri-async <command>: <message>`` on stderr, whitespace folded
             to single spaces, never a traceback. An ``OSError`` that reaches
             the top names its file and reads as a RunFailure, and so does a
             ``MemoryError`` (an allocation the machine could not make: the
             line says so). Anything else is a bug and keeps its traceback.
signals      one rule for every command: ended by a signal, it exits 128 +
             the signal's number, 130 for SIGINT (Ctrl-C) and 143 for
             SIGTERM. While ``answered`` runs a command, SIGTERM raises
             ``Terminated`` in the main thread, as SIGINT raises
             ``KeyboardInterrupt``: both unwind the command (``finally``
             blocks remove temporaries) and end in the one line
             ``interrupted`` or ``terminated``. A command that stops cleanly
             on a signal instead (self-play finishes the games in flight and
             writes whole files) calls ``stopped_by(signum)`` from its
             handler, and ``answered`` turns its return (whatever it is: a
             sweep cut short reports no result) into the same 130 or 143
             with the line ``stopped by SIGINT``. A stop the command asks
             for itself (``q`` in the live view, a STOP file, the games or
             steps reached) exits 0. A process forked from the command (a
             data-loader worker) ends on SIGTERM as it would by default.
             While numba compiles (a first start), SIGTERM and SIGINT end
             the command at once with the same line and status
             (``compile_signals``): a clean stop would wait for the compile.
parser       ``ArgumentParser``: argparse's, except that a mistake on the
             command line (an unknown option, a missing or malformed value)
             is a UserError too: the one line, not argparse's usage text
             and a second line. ``--help`` prints the whole usage as ever.
checks       ``input_file``, ``output_file``, ``output_folder`` and
             ``check_device`` raise UserError naming the option, so every
             subcommand checks files, folders and devices the same way
             before it starts (numbers: ``configfile.at_least``). An input
             must be a regular file: ``not_regular`` says what else a path
             is (a folder, a named pipe, a device, a socket), checked before
             it is opened, since opening a named pipe with no writer waits
             for ever; ``input_file`` and ``configfile.read_toml`` (every
             ``--config``) both ask it. ``output_file`` and ``output_folder``
             take the command's ``inputs`` and refuse an output that is one
             of them (``same_file``: the same path once links are resolved,
             or the same device and inode, so a hard link or a symlink to
             the input is refused too): nothing is written over its own
             input.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import signal
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

EXIT_USER = 2
EXIT_RUN = 1
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143


class UserError(Exception):
    """A mistake the user can fix (exit status 2); the message names the file or option."""

    exit_status = EXIT_USER


class RunFailure(Exception):
    """A failure during a run (exit status 1)."""

    exit_status = EXIT_RUN


class Terminated(SystemExit):
    """SIGTERM reached a command run by ``answered`` (exit status 143). A
    SystemExit, so no ``except Exception`` takes it and an event loop
    (asyncio's, uvloop's) lets it through as it does an exit, where it would
    log any other exception of a signal handler and carry on; uncaught, it
    still exits 143."""

    exit_status = EXIT_TERMINATED

    def __init__(self) -> None:
        super().__init__(EXIT_TERMINATED)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose command-line mistakes are UserErrors."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see {self.prog} --help)")


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(str(text).split())


def describe_os_error(e: OSError) -> str:
    """``<file>: <reason>`` for an OSError, naming both files of a rename."""
    reason = e.strerror or one_line(e) or type(e).__name__
    names = [str(n) for n in (e.filename, e.filename2) if n]
    return f"{' -> '.join(names)}: {reason}" if names else reason


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is an allocation that failed: a MemoryError (numpy's
    included), torch's OutOfMemoryError (CUDA), or torch's CPU allocator's
    RuntimeError ("can't allocate memory")."""
    return (isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
            or (type(e) is RuntimeError and "can't allocate memory" in str(e)))


def exit_status(e: BaseException) -> int | None:
    """The exit status the policy gives ``e``, or None for a bug (keep its traceback)."""
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(e, Terminated):
        return EXIT_TERMINATED
    if out_of_memory(e):
        return EXIT_RUN
    status = getattr(type(e), "exit_status", None)
    if isinstance(status, int) and isinstance(e, (UserError, RunFailure)):
        return status
    if isinstance(e, UnicodeDecodeError):
        return EXIT_USER
    if isinstance(e, OSError):
        return EXIT_RUN
    return None


def message(e: BaseException) -> str:
    """The one line the user reads for ``e``."""
    if isinstance(e, KeyboardInterrupt):
        return "interrupted"
    if isinstance(e, Terminated):
        return "terminated (SIGTERM)"
    if out_of_memory(e):
        detail = one_line(e)[:300]
        return "out of memory: an allocation failed" + (f" ({detail})" if detail else "") + \
            "; use smaller settings (batch size, games, network)"
    if isinstance(e, OSError) and not isinstance(e, (UserError, RunFailure)):
        return describe_os_error(e)
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text ({e.reason} at byte {e.start})"
    return one_line(e) or type(e).__name__


def report(command: str, e: BaseException, stream=None) -> int | None:
    """Print ``e`` as the policy's one line and return its exit status;
    None (printing nothing) when ``e`` is a bug."""
    status = exit_status(e)
    if status is None:
        return None
    print(f"sayuri-async {command}: {message(e)}", file=stream or sys.stderr, flush=True)
    return status


class _SignalEndsNoTask(logging.Filter):
    """Drops the event loop's "Task exception was never retrieved" record
    of a task that a signal's exception (Terminated, KeyboardInterrupt) ended
    while it ran: the signal ends the command with its one line, and the
    task's copy of the exception is not a second error to report."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (Terminated, KeyboardInterrupt))


logging.getLogger("asyncio").addFilter(_SignalEndsNoTask())

_stopped: list[int] = []  # signals a command stopped cleanly on (``stopped_by``)
_depth = [0]  # ``answered`` calls in progress (cli.main's around a subcommand's)
_owner = [0]  # the process that installed the SIGTERM handler


def stopped_by(signum: int) -> None:
    """A command stopped cleanly on signal ``signum``: ``answered`` returns
    128 + ``signum`` (see "signals")."""
    _stopped.append(int(signum))


def ending_quietly() -> None:
    """The command is ending on a signal: multiprocessing's background
    threads (the resource sharer that hands tensors over from data-loader
    workers, queue feeders) stop without printing a traceback as the workers
    end, as they do once the interpreter exits. Their own "exiting" flag,
    ``multiprocessing.util._exiting``, is set now instead of at exit."""
    import multiprocessing.util as mp_util

    mp_util._exiting = True


def _on_sigterm(signum: int, _frame) -> None:
    if os.getpid() != _owner[0]:  # a forked child (a data-loader worker): end as by default
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    ending_quietly()
    raise Terminated()


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def answered(command: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a subcommand's ``main(argv, ...) -> int``: an error the policy
    knows becomes its one line and exit status; a bug keeps its traceback;
    a signal gives 128 + its number (see "signals")."""
    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(*args, **kwargs) -> int:
            outermost = _depth[0] == 0
            old = None
            if outermost:
                _stopped.clear()
                _owner[0] = os.getpid()
                try:
                    old = signal.signal(signal.SIGTERM, _on_sigterm)
                except ValueError:  # not the main thread: no signal arrives here
                    old = None
            _depth[0] += 1
            try:
                status = main(*args, **kwargs)
            except (Exception, KeyboardInterrupt, Terminated) as e:
                status = report(command, e)
                if status is None:
                    raise
            finally:
                _depth[0] -= 1
                if old is not None:
                    signal.signal(signal.SIGTERM, old)
            if outermost and _stopped:  # the signal is why the command ended, whatever it returned
                signum = _stopped[0]
                print(f"sayuri-async {command}: stopped by {_signal_name(signum)}", file=sys.stderr, flush=True)
                status = 128 + signum
            return status
        return run
    return wrap


# ---------------------------------------------------------------------------
# checks that subcommands run before they start


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists and is not a regular file (links
    followed): "a folder", "a named pipe (FIFO)", "a character device" ...;
    None for a regular file or a path that does not exist (opening it says
    so). Only ``stat``: nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def input_file(path: str | os.PathLike, option: str, what: str = "file") -> Path:
    """``path`` as a readable regular file, else UserError naming ``option``
    (``""`` for a positional argument: the path alone)."""
    p = Path(path)
    where = f"{option} {p}" if option else str(p)
    if not p.exists():
        raise UserError(f"{where}: no such {what}")
    kind = not_regular(p)
    if kind is not None:
        raise UserError(f"{where}: not a {what} but {kind}; give a regular file")
    if not os.access(p, os.R_OK):
        raise UserError(f"{where}: cannot be read (permission denied)")
    return p


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether paths ``a`` and ``b`` name one file or folder: the same path
    once links are resolved, or (both existing) the same device and inode,
    which a hard link shares."""
    try:
        sa, sb = os.stat(a), os.stat(b)
        if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
            return True
    except (OSError, ValueError):
        pass
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop
        return False


def not_an_input(out: str | os.PathLike, option: str, inputs: tuple | list = ()) -> None:
    """UserError naming ``option`` when ``out`` is one of ``inputs``."""
    for given in inputs:
        if given is not None and str(given) != "" and same_file(out, given):
            shown = f" ({given})" if str(given) != str(out) else ""
            raise UserError(f"{option} {out}: is the input{shown}; writing there would replace it "
                            f"(give another output path)")


def output_file(path: str | os.PathLike, option: str, example: str, inputs: tuple | list = ()) -> Path:
    """``path`` as a file to write: UserError naming ``option`` when it is
    one of ``inputs`` (``not_an_input``), a folder (``example``: a file name
    to suggest in it) or its folder cannot be written (``output_folder``)."""
    out = Path(path)
    not_an_input(out, option, inputs)
    if out.is_dir():
        raise UserError(f"{option} {out}: a folder; give the file to write (e.g. {out / example})")
    output_folder(out.parent, option)
    return out


def output_folder(path: str | os.PathLike, option: str, inputs: tuple | list = ()) -> Path:
    """Create ``path`` (and its parents) and check that files can be made in
    it; UserError naming ``option`` when it is one of ``inputs``, a file,
    read-only or full."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{option} {p}: not a folder")
    not_an_input(p, option, inputs)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=p)
        try:
            os.write(fd, b"\0" * 4096)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise UserError(f"{option} {p}: cannot write there ({e.strerror or one_line(e)})") from None
    return p


_DEVICE = re.compile(r"(cpu|cuda|cuda:(\d+)|mps)")


def check_device(device: str, option: str = "--device", allow: tuple[str, ...] = ()) -> None:
    """UserError unless every comma-separated name in ``device`` is ``cpu``,
    ``cuda`` or ``cuda:K`` with CUDA present and K below the GPU count (or one
    of ``allow``, a regex each, such as the device model's ``model(:K)?``)."""
    names = [d.strip() for d in device.split(",") if d.strip()] or [device]
    for name in names:
        if any(re.fullmatch(a, name) for a in allow):
            continue
        m = _DEVICE.fullmatch(name)
        if m is None:
            shown = [a.replace(r"(:\d+)?", "") + (", " + a.replace(r"(:\d+)?", ":K") if r"(:\d+)?" in a else "")
                     for a in allow]
            choices = ", ".join(["cpu, cuda, cuda:K", *shown])
            raise UserError(f"{option} {name!r}: not a device (one of {choices})")
        if name == "cpu":
            continue
        import torch

        if name == "mps":
            if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
                raise UserError(f"{option} {name}: this machine has no MPS device")
            continue
        if not torch.cuda.is_available():
            raise UserError(f"{option} {name}: CUDA is not available on this machine (torch {torch.__version__} "
                            f"sees no GPU); use --device cpu")
        if m.group(2) is not None and int(m.group(2)) >= torch.cuda.device_count():
            raise UserError(f"{option} {name}: this machine has {torch.cuda.device_count()} GPU(s), "
                            f"cuda:0..cuda:{torch.cuda.device_count() - 1}")
