"""The inference worker: one thread per device that runs backend calls in
the order they were sent, off the event loop.

Vocabulary
----------
job        ``(loop, launch, args, done)``: the worker calls ``launch(*args)``,
           which starts the work and returns ``collect``, a callable that
           waits for it and returns the result, or (work that ran inside
           ``launch``) the result itself; then the worker schedules
           ``done(result, error)`` on ``loop`` (one of them None).
pipeline   two threads: the launcher calls ``launch`` as soon as a job is
           submitted, the collector calls each ``collect`` in launch order and
           answers the loop. So a device that queues work (a CUDA stream, the
           device model) has batch k+1 queued behind batch k however late
           the collector wakes up or gets the GIL back after batch k; a
           backend that cannot queue runs the batch inside ``launch``, which
           returns the result: the launcher then answers the loop itself
           (one thread hop less) unless earlier batches still wait in the
           collector, behind which it queues to keep the order. How many batches
           are launched at a time is the dispatch's ``bound``.
Worker     the threads and their queues. Batchers on one device share one
           worker, so their batches never overlap on the device, and its
           ``dispatch`` (``infer/dispatch.py``), which bounds how many
           batches are handed to it at a time.

Why not ``loop.run_in_executor``: each call there builds a
``concurrent.futures.Future``, an asyncio future chained to it and two
callback hops through the loop, about 15 us of Python per batch on a
2-core machine. A batch needs none of that: one queue put, one
``call_soon_threadsafe``.
"""
from __future__ import annotations

import asyncio
import atexit
import queue
import threading
import weakref
from typing import Any, Callable

from .dispatch import DEFAULT_BOUND, Dispatch

_LIVE: "weakref.WeakSet[Worker]" = weakref.WeakSet()


@atexit.register
def _join_all() -> None:
    """At interpreter exit, let every worker finish its batch and stop: a
    thread still inside a backend (torch) while the interpreter tears down
    can abort the process."""
    for w in list(_LIVE):
        w.shutdown(wait=True)


class Worker:
    def __init__(self, name: str = "infer", bound: int = DEFAULT_BOUND) -> None:
        self.dispatch = Dispatch(self, bound)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._launched: queue.SimpleQueue = queue.SimpleQueue()  # (loop, done, collect or result, error), or None
        self._threads = [threading.Thread(target=self._launch_all, name=f"{name}-launch", daemon=True),
                         threading.Thread(target=self._collect_all, name=f"{name}-collect", daemon=True)]
        self._closed = False
        for t in self._threads:
            t.start()
        _LIVE.add(self)

    def submit(self, loop: asyncio.AbstractEventLoop, launch: Callable[..., Callable[[], Any]], args: tuple,
               done: Callable[[Any, BaseException | None], None]) -> None:
        if self._closed:
            raise RuntimeError("inference worker is shut down")
        self._jobs.put((loop, launch, args, done))

    def _launch_all(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                self._launched.put(None)
                return
            loop, launch, args, done = job
            try:
                started = launch(*args)
            except BaseException as e:  # handed to the loop, which fails the batch's requests
                self._launched.put((loop, done, None, e))
                continue
            if not callable(started) and self._launched.empty():
                self._answer(loop, done, started, None)  # it ran inside launch: no hop to the collector
            else:
                self._launched.put((loop, done, started, None))

    def _collect_all(self) -> None:
        while True:
            item = self._launched.get()
            if item is None:
                return
            self._answer(*item)

    @staticmethod
    def _answer(loop: asyncio.AbstractEventLoop, done: Callable, started: Any,
                error: BaseException | None) -> None:
        result = None
        if error is None:
            try:
                result = started() if callable(started) else started
            except BaseException as e:
                error = e
        try:
            loop.call_soon_threadsafe(done, result, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this batch any more

    def shutdown(self, wait: bool = True) -> None:
        """Finish the queued jobs, then stop the thread."""
        if not self._closed:
            self._closed = True
            self._jobs.put(None)
        if wait:
            for t in self._threads:
                if threading.current_thread() is not t:
                    t.join()
