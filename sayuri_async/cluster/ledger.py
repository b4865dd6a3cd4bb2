"""What every engine of a fleet run did, the engines that are gone included.

Vocabulary
----------
life        one process of an engine actor (``Status.proc``). Ray restarts an
            actor whose process died as a new life; an actor whose node left
            has no next one.
written     a life's games whose files are all written into its spool
            (``Status.games_written``: in a chunk, and their SGF files); the
            spool's files reach the workspace (``spool.py``), or wait on the
            node until they can.
lost        a life that ends without ``stop()`` (its process died, its node
            left) loses its games in progress and its finished games that
            still waited for a full chunk (``chunk_games``), counted from its
            last status. Their SGF files, written when each game finished,
            are kept.
Done        the lives that ended, added up: their finished games (those
            lost waiting for their chunk included), chunks and positions,
            and their lost games (in progress, waiting for a chunk). The view adds it to the engines' own figures, so that the
            totals count every game of the run and never shrink when a node
            leaves or an engine restarts.
Ledger      ``note(actor, status)`` for each status gathered (a new life of
            the actor ends the one before); ``gone(actor)`` when the actor is
            dropped with its node (its games lost are returned, for the
            event). An engine stopped in order ends with its final status,
            which the view takes as it is: its life stays in the ledger.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..selfplay.status import Status


@dataclass
class Done:
    games: int = 0
    chunks: int = 0
    positions: int = 0
    lost_in_progress: int = 0
    lost_waiting: int = 0  # finished, waiting for a full chunk

    @property
    def lost(self) -> int:
        return self.lost_in_progress + self.lost_waiting


def waiting_for_chunk(st: Status) -> int:
    """Finished games of a life whose chunk is not written yet."""
    return max(st.finished - st.games_written, 0)


class Ledger:
    def __init__(self) -> None:
        self.lives: dict[str, Status] = {}  # actor -> the latest status of its life now
        self.done = Done()

    def note(self, actor: str, st: Status | None) -> None:
        """The actor's latest status; None from a life that has not
        reported yet (a life that reported always has one)."""
        if st is None:
            if actor in self.lives:
                self._end(self.lives.pop(actor), lost=True)  # a new life, not playing yet
            return
        before = self.lives.get(actor)
        if before is not None and before.proc != st.proc:
            self._end(before, lost=True)  # a new life: the process before it died
        self.lives[actor] = st

    def gone(self, actor: str) -> int:
        """The actor's life ended with its node; its games lost."""
        st = self.lives.pop(actor, None)
        return 0 if st is None else self._end(st, lost=True)

    def _end(self, st: Status, lost: bool) -> int:
        waiting = waiting_for_chunk(st)
        d = self.done
        d.games += st.finished
        d.chunks += st.chunks
        d.positions += st.positions_written
        if not lost:
            return 0
        d.lost_in_progress += len(st.games)
        d.lost_waiting += waiting
        return len(st.games) + waiting
