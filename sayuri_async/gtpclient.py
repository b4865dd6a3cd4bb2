"""The GTP client: one engine subprocess spoken to over pipes.

Vocabulary
----------
GtpProcess   ``send(command)`` numbers each command, waits (with a timeout)
             for the answer with that id and returns its text, raising
             GtpFailure on ``?``. A reader thread queues the engine's output
             lines, so ``read_line`` can time out; tests that watch streamed
             answers (analysis) use ``write_line``/``read_line`` directly.
GtpFailure   the engine answered ``?`` or broke the protocol.

Both the GTP referee (``gtp/match.py``) and network matches
(``sayuri_async/match.py``, from coroutines through a thread) use it.
"""
from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import IO


class GtpFailure(Exception):
    """The engine answered ``?``; the message is its text."""


class GtpProcess:
    def __init__(self, argv: list[str], name: str | None = None, stderr: IO | int | None = None,
                 cwd: str | None = None, env: dict | None = None) -> None:
        self.argv = list(argv)
        self.name = name or argv[0]
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if stderr is None else stderr, cwd=cwd, env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 1
        self._reader = threading.Thread(target=self._read, name=f"gtp-{self.name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.lines.put(None)

    # ---- raw I/O (for tests that watch streamed answers) ---------------------
    def write_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def read_line(self, timeout: float) -> str:
        """The next output line; raises TimeoutError, or EOFError at the end."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.name}: no output within {timeout:g} s") from None
        if line is None:
            self.lines.put(None)
            raise EOFError(f"{self.name}: the engine closed its output")
        return line

    def read_response(self, timeout: float) -> tuple[bool, int | None, str]:
        """(ok, id, text) of the next complete response."""
        deadline = time.monotonic() + timeout
        line = self.read_line(timeout)
        while not line.strip():  # stray empty lines between responses
            line = self.read_line(max(0.0, deadline - time.monotonic()))
        if line[:1] not in "=?":
            raise GtpFailure(f"{self.name}: not a GTP response: {line!r}")
        head, _, first = line.partition(" ")
        rid = int(head[1:]) if head[1:].isdigit() else None
        body = [first]
        while True:
            line = self.read_line(max(0.0, deadline - time.monotonic()))
            if not line.strip():
                break
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
