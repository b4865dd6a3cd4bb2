"""The fleet's live view on a terminal (rich): the plain view's figures, redrawn in place.

Vocabulary
----------
ClusterTui  a ClusterView (``view.py``) that redraws one screen about every
            second instead of printing blocks: the fleet line, the totals
            line with the one-machine verdict (the engines that are gone
            included), a table of one row per node and per GPU
            (``ROW_COLUMNS``, with the files waiting in its spools), and the
            last ``EVENTS`` events (nodes that joined or left, networks
            published or refused, spools behind).
            ``close`` leaves the screen and prints the summary, as the plain
            view does.
"""
from __future__ import annotations

import time
from collections import deque

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..selfplay.report import plain_line
from .actor import ActorStatus
from .ingest import IngestStats
from .ledger import Done
from .view import ROW_COLUMNS, TOTAL, ClusterView

EVENTS = 8


class ClusterTui(ClusterView):
    def __init__(self, console: Console | None = None, leaves_per_await: int = 1) -> None:
        self.console = console or Console()
        super().__init__(every=0.0, stream=self.console.file, leaves_per_await=leaves_per_await)
        self.events: deque[str] = deque(maxlen=EVENTS)
        self.header = "fleet: starting"
        self.live: Live | None = None

    def event(self, text: str) -> None:
        self.events.append(f"[{time.monotonic() - self._t0:7.1f}s] {text}")
        self._draw()

    def update(self, statuses: list[ActorStatus], ingest: IngestStats | None = None, generation: int = 0,
               done: Done | None = None, waiting: int = 0, starting: int = 0) -> None:
        self._push(statuses)
        self._note(ingest, done)
        self.header = self.fleet_line(statuses, ingest, generation, waiting, starting)
        self._draw()

    def render(self) -> Group:
        table = Table(*ROW_COLUMNS, box=None, pad_edge=False)
        for key in self.groups_in_order():
            table.add_row(*self.row_cells(key))
        parts = [Text(self.header, style="bold")]
        agg = self.total()
        if agg is not None and TOTAL in self.groups:
            parts.append(Text("total: " + plain_line(agg, self.groups[TOTAL].window.recent(), self.leaves)))
        parts += [table, Text(""), Text("\n".join(self.events) or "no events yet", style="dim")]
        return Group(*parts)

    def _draw(self) -> None:
        if self.live is None:
            self.live = Live(self.render(), console=self.console, auto_refresh=False, transient=True)
            self.live.start()
        self.live.update(self.render(), refresh=True)

    def close(self, statuses: list[ActorStatus], ingest: IngestStats | None = None, done: Done | None = None,
              spool_left: int = 0) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        for line in self.events:
            self.console.print(line, highlight=False)
        super().close(statuses, ingest=ingest, done=done, spool_left=spool_left)
