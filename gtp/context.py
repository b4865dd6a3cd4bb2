"""What every command handler gets and returns.

Vocabulary
----------
Context     the command's id, the Engine, the Inbox (to stop analysis when
            input arrives) and ``begin``/``emit`` for streamed answers
            (analysis: ``=id`` first, then one line per interval, then the
            closing empty line that the dispatcher writes).
handler     ``async (ctx, args) -> str`` (the success text) or STREAMED when
            it wrote its answer through ``begin``/``emit``; failures raise
            GtpError.
log         a diagnostic line on stderr, always prefixed ``sayuri-async:``.
OutputClosed  stdout is gone (the controller closed the pipe or was killed):
            raised by the writer, it ends the program quietly (exit 0); it is
            never answered or logged as a failed command.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sayuri_async.go.coords import action_to_vertex
from sayuri_async.search.value import winrate

from .engine import RESIGN, Engine, Inbox

STREAMED = object()  # a handler's return value: the answer was written already

Writer = Callable[[str], None]


class OutputClosed(Exception):
    """stdout is gone (the controller closed the pipe or was killed)."""

Handler = Callable[["Context", list[str]], Awaitable[Any]]


@dataclass
class Context:
    id: int | None
    engine: Engine
    inbox: Inbox
    write: Writer
    name: str = ""
    started: bool = False

    def begin(self) -> None:
        self.write("=" if self.id is None else f"={self.id}")
        self.write("\n")
        self.started = True

    def emit(self, line: str) -> None:
        if line.strip():  # an empty line would end the response
            self.write(line + "\n")


def log(msg: str) -> None:
    """Diagnostics go to stderr, always prefixed (Lizzie merges stderr into
    stdout and must never mistake a log line for an answer)."""
    print(f"sayuri-async: {msg}", file=sys.stderr, flush=True)


def move_text(engine: Engine, action: int) -> str:
    """A genmove answer: the vertex, ``pass`` or ``resign``."""
    return "resign" if action == RESIGN else action_to_vertex(action, engine.size)


def log_search(engine: Engine, t0: float) -> None:
    """The verbose line after a genmove: visits, time, winrate, clock."""
    s = engine.search
    log(f"searched {s.root_visits()} visits in {time.perf_counter() - t0:.2f} s, "
        f"root winrate {winrate(s.root_value()):.3f}, time: {engine.time.describe()}")
