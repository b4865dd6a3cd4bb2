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
             the top names its file and reads as a RunFailure; an interrupt
             exits 130. Anything else is a bug and keeps its traceback.
parser       ``ArgumentParser``: argparse's, except that a mistake on the
             command line (an unknown option, a missing or malformed value)
             is a UserError too: the one line, not argparse's usage text
             and a second line. ``--help`` prints the whole usage as ever.
checks       ``input_file``, ``output_file``, ``output_folder``, ``check_device`` and
             ``at_least`` raise UserError naming the option, so every
             subcommand checks files, folders, devices and numbers the same
             way before it starts.
"""
from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

EXIT_USER = 2
EXIT_RUN = 1
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A mistake the user can fix (exit status 2); the message names the file or option."""

    exit_status = EXIT_USER


class RunFailure(Exception):
    """A failure during a run (exit status 1)."""

    exit_status = EXIT_RUN


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


def exit_status(e: BaseException) -> int | None:
    """The exit status the policy gives ``e``, or None for a bug (keep its traceback)."""
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED
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


def answered(command: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a subcommand's ``main(argv, ...) -> int``: an error the policy
    knows becomes its one line and exit status; a bug keeps its traceback."""
    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(*args, **kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except (Exception, KeyboardInterrupt) as e:
                status = report(command, e)
                if status is None:
                    raise
                return status
        return run
    return wrap


# ---------------------------------------------------------------------------
# checks that subcommands run before they start


def at_least(option: str, value: int | float | None, low: int | float) -> None:
    """UserError unless ``value`` (when given) is at least ``low``."""
    if value is not None and value < low:
        raise UserError(f"{option} must be at least {low:g}, got {value:g}")


def input_file(path: str | os.PathLike, option: str, what: str = "file") -> Path:
    """``path`` as a readable regular file, else UserError naming ``option``
    (``""`` for a positional argument: the path alone)."""
    p = Path(path)
    where = f"{option} {p}" if option else str(p)
    if not p.exists():
        raise UserError(f"{where}: no such {what}")
    if not p.is_file():
        raise UserError(f"{where}: not a {what} (a folder or a device)")
    if not os.access(p, os.R_OK):
        raise UserError(f"{where}: cannot be read (permission denied)")
    return p


def output_file(path: str | os.PathLike, option: str, example: str) -> Path:
    """``path`` as a file to write: UserError naming ``option`` when it is a
    folder (``example``: a file name to suggest in it) or its folder cannot
    be written (``output_folder``)."""
    out = Path(path)
    if out.is_dir():
        raise UserError(f"{option} {out}: a folder; give the file to write (e.g. {out / example})")
    output_folder(out.parent, option)
    return out


def output_folder(path: str | os.PathLike, option: str) -> Path:
    """Create ``path`` (and its parents) and check that files can be made in
    it; UserError naming ``option`` when it is a file, read-only or full."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{option} {p}: not a folder")
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
