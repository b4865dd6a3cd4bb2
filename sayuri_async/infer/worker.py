"""The inference worker: one thread per device that runs backend calls in
the order they were sent, off the event loop.

Vocabulary
----------
job        ``(loop, fn, args, done)``: the worker runs ``fn(*args)`` and then
           schedules ``done(result, error)`` on ``loop`` (one of them None).
Worker     the thread and its job queue. Batchers on one device share one
           worker, so their batches never overlap on the device.

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

_LIVE: "weakref.WeakSet[Worker]" = weakref.WeakSet()


@atexit.register
def _join_all() -> None:
    """At interpreter exit, let every worker finish its batch and stop: a
    thread still inside a backend (torch) while the interpreter tears down
    can abort the process."""
    for w in list(_LIVE):
        w.shutdown(wait=True)


class Worker:
    def __init__(self, name: str = "infer") -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._closed = False
        self._thread.start()
        _LIVE.add(self)

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable, args: tuple,
               done: Callable[[Any, BaseException | None], None]) -> None:
        if self._closed:
            raise RuntimeError("inference worker is shut down")
        self._jobs.put((loop, fn, args, done))

    def _main(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, fn, args, done = job
            try:
                result, error = fn(*args), None
            except BaseException as e:  # handed to the loop, which fails the batch's requests
                result, error = None, e
            try:
                loop.call_soon_threadsafe(done, result, error)
            except RuntimeError:
                pass  # the loop is closed: nobody waits for this batch any more

    def shutdown(self, wait: bool = True) -> None:
        """Finish the queued jobs, then stop the thread."""
        if not self._closed:
            self._closed = True
            self._jobs.put(None)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()
