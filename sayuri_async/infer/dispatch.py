"""Handing batches to one device: a bounded double buffer.

Vocabulary
----------
handed     batches given to the device (running in the backend, or queued
           in the worker thread behind the running one) and not yet
           answered. At most ``bound`` of them (2 by default: one running,
           one ready behind it, the classic double buffer), so the device
           never idles between batches while the batchers keep filling.
ready      full batches that left their batcher while ``bound`` were
           handed; they go to the device in order, one for each batch that
           comes back.
idle slot  ``handed < bound`` and nothing ready: the device would run dry
           after what it has. Only then may a batcher send a *partial*
           batch (``infer/flush.py``): while the device has work, the games
           whose answers come back join the filling buffer instead, so
           groups of games merge into full batches rather than splitting
           into small ones.
feeders    the batchers of this device (one per board size). When a batch
           comes back, the next ready one is handed; with none ready every
           feeder is polled, since its partial batch may now leave.

Everything here runs on the event loop (batches answered by the worker
thread come back through ``call_soon_threadsafe``).
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .worker import Worker

DEFAULT_BOUND = 2


class Dispatch:
    def __init__(self, worker: "Worker | None", bound: int = DEFAULT_BOUND) -> None:
        self.worker = worker  # None: batches run on the loop (inline)
        self.bound = max(1, int(bound))
        self.handed = 0
        self.ready: deque[tuple[asyncio.AbstractEventLoop, Callable, tuple, Callable]] = deque()
        self.feeders: list[Any] = []  # batchers with ``poll()``
        self.most_handed = 0  # the highest ``handed`` seen (tests check the bound with it)

    def add_feeder(self, batcher: Any) -> None:
        self.feeders.append(batcher)

    def remove_feeder(self, batcher: Any) -> None:
        if batcher in self.feeders:
            self.feeders.remove(batcher)

    def idle_slot(self) -> bool:
        """May a partial batch leave now? (See the vocabulary.)"""
        return self.handed < self.bound and not self.ready

    def send(self, loop: asyncio.AbstractEventLoop, fn: Callable, args: tuple,
             done: Callable[[Any, BaseException | None], None]) -> None:
        """Launch ``fn(*args)`` on the device (it returns the result, or a
        ``collect`` that waits for it: see ``infer/worker.py``) and then
        call ``done(result, error)`` on the loop; the batch waits in ``ready`` while ``bound`` are
        handed. ``done`` must call ``finished()`` first."""
        if self.handed >= self.bound:
            self.ready.append((loop, fn, args, done))
            return
        self._hand(loop, fn, args, done)

    def _hand(self, loop: asyncio.AbstractEventLoop, fn: Callable, args: tuple, done: Callable) -> None:
        self.handed += 1
        if self.handed > self.most_handed:
            self.most_handed = self.handed
        if self.worker is None:  # inline: run now, answer on the loop's next turn
            try:
                started = fn(*args)
                result, error = (started() if callable(started) else started), None
            except BaseException as e:
                result, error = None, e
            loop.call_soon(done, result, error)
            return
        try:
            self.worker.submit(loop, fn, args, done)
        except Exception as e:  # the worker is shut down: answer the batch with the error
            loop.call_soon(done, None, e)

    def finished(self) -> None:
        """A handed batch came back: hand the next ready one, or let the
        feeders send a partial batch into the free slot."""
        self.handed -= 1
        if self.ready:
            self._hand(*self.ready.popleft())
            return
        for b in list(self.feeders):
            if not self.idle_slot():
                return
            b.poll(returned=True)
