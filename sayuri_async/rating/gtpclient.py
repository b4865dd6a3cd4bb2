"""The GTP client: one engine subprocess spoken to over pipes.

Vocabulary
----------
GtpProcess   ``send(command)`` numbers each command, waits (with a timeout)
             for the answer with that id and returns its text, raising
             GtpFailure on ``?``. A reader thread queues the engine's output
             lines, so ``read_line`` can time out; tests that watch streamed
             answers (analysis) use ``write_line``/``read_line`` directly.
GtpFailure   the engine answered ``?`` or broke the protocol (a RunFailure:
             exit status 1 when it ends a command).
EngineGone   the engine's process ended or closed its pipes (EOFError, so
             callers that wait for the end of output keep working).
limits       what another engine can make us hold: one line at most
             ``MAX_LINE_BYTES`` (1 MiB; the rest of a longer line is read and
             dropped, and reading it raises GtpFailure), at most
             ``QUEUED_LINES`` lines read ahead of the caller (the reader then
             waits, so the engine blocks on its pipe), one response at most
             ``MAX_RESPONSE_BYTES`` (16 MiB). Memory stays bounded whatever
             the engine writes.
probe_engine starts an engine and asks its ``name`` with a deadline; a
             command line that does not start, or an engine that does not
             answer, is a UserError naming the command (exit status 2).

Both the GTP referee (``gtp/match.py``) and network matches
(``sayuri_async/rating/match.py``, from coroutines through a thread) use it.
"""
from __future__ import annotations

import queue
import shlex
import subprocess
import threading
import time
from typing import IO

from ..usererror import RunFailure, UserError, one_line

MAX_LINE_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 16 << 20
QUEUED_LINES = 256


class GtpFailure(RunFailure):
    """The engine answered ``?`` or broke the protocol; the message says which."""


class EngineGone(EOFError):
    """The engine closed its output or its input (it ended)."""


class _Overlong:
    """Queued in place of a line longer than MAX_LINE_BYTES."""

    def __init__(self, size: int) -> None:
        self.size = size


class GtpProcess:
    def __init__(self, argv: list[str], name: str | None = None, stderr: IO | int | None = None,
                 cwd: str | None = None, env: dict | None = None) -> None:
        self.argv = list(argv)
        self.name = name or argv[0]
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if stderr is None else stderr, cwd=cwd, env=env,
        )
        self.lines: queue.Queue[str | _Overlong | None] = queue.Queue(maxsize=QUEUED_LINES)
        self._next_id = 1
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, name=f"gtp-{self.name}", daemon=True)
        self._reader.start()

    def _put(self, item: str | _Overlong | None) -> bool:
        """Queue ``item``, waiting while the queue is full; False once closing."""
        while not self._closing.is_set():
            try:
                self.lines.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        """Queue the engine's lines; a line over MAX_LINE_BYTES is read in
        pieces and dropped, an ``_Overlong`` marker queued in its place."""
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                raw = out.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    size = len(raw)
                    while raw and not raw.endswith(b"\n") and not self._closing.is_set():
                        raw = out.readline(MAX_LINE_BYTES)
                        size += len(raw)
                    item: str | _Overlong = _Overlong(size)
                else:
                    item = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not self._put(item):
                    return
        except (OSError, ValueError):  # the pipe was closed under us
            pass
        self._put(None)

    # ---- raw I/O (for tests that watch streamed answers) ---------------------
    def write_line(self, line: str) -> None:
        """Send one line; EngineGone when the engine no longer reads."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((line + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            raise EngineGone(f"{self.name}: the engine has ended{self._exit_text()}") from None

    def _exit_text(self) -> str:
        code = self.proc.poll()
        return "" if code is None else f" (exit status {code})"

    def read_line(self, timeout: float) -> str:
        """The next output line; raises TimeoutError, EngineGone (an EOFError)
        at the end, or GtpFailure for a line over MAX_LINE_BYTES."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.name}: no output within {timeout:g} s") from None
        if line is None:
            self.lines.put(None)
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            raise EngineGone(f"{self.name}: the engine closed its output{self._exit_text()}")
        if isinstance(line, _Overlong):
            raise GtpFailure(f"{self.name}: an output line of {line.size:,} bytes, over the limit of "
                             f"{MAX_LINE_BYTES:,}")
        return line

    def read_response(self, timeout: float) -> tuple[bool, int | None, str]:
        """(ok, id, text) of the next complete response."""
        deadline = time.monotonic() + timeout
        line = self.read_line(timeout)
        while not line.strip():  # stray empty lines between responses
            line = self.read_line(max(0.0, deadline - time.monotonic()))
        if line[:1] not in "=?":
            raise GtpFailure(f"{self.name}: not a GTP response: {line[:80]!r}")
        head, _, first = line.partition(" ")
        digits = head[1:]
        rid = int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None
        body = [first]
        size = len(first)
        while True:
            line = self.read_line(max(0.0, deadline - time.monotonic()))
            if not line.strip():
                break
            size += len(line) + 1
            if size > MAX_RESPONSE_BYTES:
                raise GtpFailure(f"{self.name}: a response over the limit of {MAX_RESPONSE_BYTES:,} bytes")
            body.append(line)
        return head[0] == "=", rid, "\n".join(body).strip()

    # ---- commands --------------------------------------------------------------
    def send(self, command: str, timeout: float = 60.0) -> str:
        """Send ``command`` with a fresh id; the answer's text, or GtpFailure."""
        cid = self._next_id
        self._next_id += 1
        self.write_line(f"{cid} {command}")
        ok, rid, text = self.read_response(timeout)
        if rid != cid:
            raise GtpFailure(f"{self.name}: answer id {rid} for command {cid} ({command!r})")
        if not ok:
            raise GtpFailure(text)
        return text

    def close(self, timeout: float = 10.0) -> int | None:
        """``quit``, then wait; kill it if it does not end."""
        if self.proc.poll() is None:
            try:
                self.send("quit", timeout=timeout)
            except (GtpFailure, TimeoutError, EOFError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._closing.set()  # the reader stops waiting on a full queue
        for s in (self.proc.stdin, self.proc.stdout):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
        return self.proc.returncode

    def __enter__(self) -> "GtpProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def probe_engine(command: str, timeout: float = 30.0) -> str:
    """Start the engine of ``command`` (a shell-quoted command line), ask its
    ``name`` and end it; its name, or UserError saying why it cannot play."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise UserError(f"GTP engine {command!r}: not a command line ({e})") from None
    if not argv:
        raise UserError("GTP engine '': an empty command line")
    try:
        proc = GtpProcess(argv)
    except OSError as e:
        raise UserError(f"GTP engine {command!r} cannot start: {e.strerror or one_line(e)}") from None
    try:
        return proc.send("name", timeout=timeout)
    except (GtpFailure, EOFError, TimeoutError) as e:
        raise UserError(f"GTP engine {command!r} does not speak GTP: {one_line(e)}") from None
    finally:
        proc.close(timeout=5.0)
