"""The chunk writer in a process of its own, so that the event loop never
waits on SGF text, compression or the disk.

Vocabulary
----------
WriterProcess  the engine's writer when ``writer_process`` is on: ``add(rec)``
               puts the finished game in an outbox and returns; a feeder
               thread pickles it into a one-way pipe, and a spawned process
               runs a ``ChunkWriter`` (``writer.py``) over what arrives.
               ``close()`` sends the end mark and waits until every game is
               written.
pipes          one each way, each end held by one process only: when the
               engine dies, the writer's read sees the end of the pipe even
               in the middle of a game (a shared ``multiprocessing.Queue``
               would leave it waiting forever for the rest of that game).
progress       ``(chunks, positions, games)`` written so far, sent back
               whenever a chunk is written (or a game of no position);
               ``chunks_written``, ``positions_written`` and
               ``games_written`` read the latest.
failure        an exception in the writer process comes back as text and is
               raised as ``WriterError`` (naming the output folder) by the
               next ``add``, ``chunks_written`` or ``close``: a failing disk
               stops the run instead of losing games silently. So does a
               writer that died without a word (SIGKILL): ``add`` finds it
               gone, ``close`` finds it ended without its last report.
orphan         when the engine dies without closing it (SIGKILL), the writer
               finishes the file it is writing and exits: every file is
               whole either way (temporary name, then rename); games not yet
               sent and unfinished chunks are lost with the engine. The end
               of the pipe tells it; a parent watch
               (``lifetime.die_with_parent``) ends it ``ORPHAN_GRACE_S``
               after the engine's death should it still be running then.

Why a process and not a thread: sgfmill's serialisation is Python and would
hold the GIL the event loop needs. Measured on the 2-core CPU machine, 9x9
at 64 playouts: writing SGF on the loop took 12-16% of the games per second.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
from typing import Any

from ..lifetime import die_with_parent
from .game import GameRecord
from .writer import ChunkWriter
from ..usererror import RunFailure

QUEUE_GAMES = 256  # finished games waiting for the feeder before add() blocks (back-pressure)
ORPHAN_GRACE_S = 60.0


class WriterError(RuntimeError, RunFailure):
    """The writer process failed; the message names the folder and the error."""


def _main(settings: dict[str, Any], games, replies, parent_pid: int) -> None:
    """The writer process: write every game read from ``games`` until the
    end mark (None) or the end of the pipe (the engine is gone), reporting
    progress and failures on ``replies``."""
    die_with_parent(parent_pid, None, ORPHAN_GRACE_S)  # the pipe's end stops us; this is the deadline
    for sig in (signal.SIGINT, signal.SIGTERM):  # the engine ends us with the end mark after its last game
        signal.signal(sig, signal.SIG_IGN)
    try:
        w = ChunkWriter(**settings)
        written = (0, 0)
        while True:
            try:
                rec = games.recv()
            except EOFError:
                return  # orphaned: the engine died; nobody waits for the rest
            if rec is None:
                w.close()
                replies.send(("done", w.chunks_written, w.positions_written, w.games_written))
                return
            w.add(rec)
            if (w.chunks_written, w.games_written) != written:
                written = (w.chunks_written, w.games_written)
                replies.send(("progress", w.chunks_written, w.positions_written, w.games_written))
    except (BrokenPipeError, EOFError):
        return  # the engine is gone
    except BaseException as e:  # reported to the engine, which raises it
        replies.send(("error", f"{type(e).__name__}: {e}", 0))


class WriterProcess:
    """``ChunkWriter``'s interface (``add``, ``close``, ``chunks_written``,
    ``positions_written``, ``games_written``) with the writing done in a spawned process."""

    def __init__(self, out_dir: str, encoder: str, planes: int, chunk_games: int, tag: str, generator: str,
                 write_sgf: bool = True, generation: int = 0) -> None:
        settings = dict(out_dir=str(out_dir), encoder=encoder, planes=planes, chunk_games=chunk_games, tag=tag,
                        generator=generator, write_sgf=write_sgf, generation=generation)
        ChunkWriter(**settings)  # makes the folders here: a bad --out fails at once, in this process
        self.out_dir = str(out_dir)
        ctx = mp.get_context("spawn")
        games_in, self._games = ctx.Pipe(duplex=False)
        self._replies, replies_out = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_main, args=(settings, games_in, replies_out, os.getpid()),
                                 name=f"writer-{tag}", daemon=True)
        self._proc.start()
        games_in.close()  # the child's ends: this process keeps only its own
        replies_out.close()
        self._outbox: queue.Queue = queue.Queue(maxsize=QUEUE_GAMES)
        self._feeder = threading.Thread(target=self._feed, name=f"writer-feed-{tag}", daemon=True)
        self._feeder.start()
        self._chunks = 0
        self._positions = 0
        self._games_written = 0
        self._error: str | None = None
        self._reported = False
        self._closed = False
        self._done = False  # the writer said it wrote every game

    def _feed(self) -> None:
        """The feeder thread: pickle and send each game (a send blocks this
        thread, never the event loop, while the writer is busy)."""
        while True:
            rec = self._outbox.get()
            try:
                self._games.send(rec)
            except OSError:  # the writer is gone; close() and _poll() say why
                return
            if rec is None:
                return

    # ---- the ChunkWriter interface -------------------------------------------
    def add(self, rec: GameRecord) -> None:
        self._poll()
        if self._closed:
            raise WriterError(f"{self.out_dir}: the writer is closed")
        if not self._proc.is_alive():  # killed: stop now rather than play games nobody writes
            raise WriterError(f"{self.out_dir}: the writer process exited (code {self._proc.exitcode})")
        while True:
            try:
                self._outbox.put(rec, timeout=1.0)
                return
            except queue.Full:  # the writer is behind: wait for it, unless it is gone
                self._poll()
                if not self._proc.is_alive():
                    raise WriterError(f"{self.out_dir}: the writer process exited (code {self._proc.exitcode})")

    @property
    def chunks_written(self) -> int:
        self._poll()
        return self._chunks

    @property
    def positions_written(self) -> int:
        self._poll()
        return self._positions

    @property
    def games_written(self) -> int:
        self._poll()
        return self._games_written

    def close(self) -> None:
        """Write what is pending (whole games only) and stop the process;
        raises WriterError if it failed and nobody was told yet. Safe to call
        twice."""
        if not self._closed:
            self._closed = True
            while True:  # the end mark, unless nobody is left to take it
                try:
                    self._outbox.put(None, timeout=0.5)
                    break
                except queue.Full:
                    if not (self._proc.is_alive() and self._feeder.is_alive()):
                        break
            while self._proc.is_alive():
                if self._take(timeout=0.5) == "done":
                    break
            self._proc.join(timeout=30)
            self._feeder.join(timeout=5)
            while self._take() is not None:  # what it said before it ended
                pass
            if not self._done and self._error is None:  # it died without a word (SIGKILL, the OOM killer)
                self._error = f"the writer process exited (code {self._proc.exitcode}) before the last games"
        self._poll(again=False)

    # ---- replies -------------------------------------------------------------
    def _take(self, timeout: float = 0.0) -> str | None:
        """One reply from the writer, if one comes within ``timeout``."""
        try:
            if not self._replies.poll(timeout):
                return None
            reply = self._replies.recv()
        except (EOFError, OSError):  # the writer is gone and said everything
            return None
        kind = reply[0]
        if kind == "error":
            self._error = reply[1]
        else:
            self._chunks, self._positions, self._games_written = reply[1], reply[2], reply[3]
            self._done = self._done or kind == "done"
        return kind

    def _poll(self, again: bool = True) -> None:
        """Take the replies that arrived; raise a failure (once only for
        ``again=False``: a close after the run reported it stays quiet)."""
        while self._take() is not None:
            pass
        if self._error is not None and (again or not self._reported):
            self._reported = True
            raise WriterError(f"{self.out_dir}: writing training data failed: {self._error}")
