"""The async batching queue between game coroutines and one network backend.

Vocabulary
----------
client     a game coroutine attached to the batcher. It commits one or more
           requests, then blocks until they are answered; the batcher counts
           blocked clients (``waiting``) for the "every client waits" rule.
request    one position: the client writes its planes straight into slot
           ``slot`` of the filling buffer (``batcher.current()``), then
           ``await batcher.commit()`` returns ``(output, row)``, where
           ``output`` is the backend's NetOutput for the whole batch and
           ``row`` the request's row in it. Nothing is copied on the way.
buffer     a ``[max_batch, C, N, N]`` uint8 input array (pinned on CUDA). One
           fills on the loop while earlier ones run in the worker thread.
flush      sending the filling buffer to the backend: when ``batch_size``
           requests wait ("full"), at once when every attached client is
           waiting ("waiting": nothing more can arrive), or when the oldest
           request has waited ``timeout_ms`` ("timeout").
worker     one thread per device (a ThreadPoolExecutor with one thread, which
           batchers on the same device share) runs ``backend.run``; the event
           loop never blocks on it, so while batch k runs, batch k+1 fills.
NN cache   results by position key (``search/puct.cache_key``), FIFO-evicted
           at ``cache_size`` entries; rows are copied out of the batch output.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .stats import Counters


@dataclass
class _Buffer:
    arr: np.ndarray  # [max_batch, C, N, N] uint8
    futures: list
    t_commit: list
    finals: list  # True where the request is the last its client committed before blocking
    count: int = 0


class Batcher:
    def __init__(
        self,
        backend,
        board_size: int,
        batch_size: int,
        timeout_ms: float = 5.0,
        max_batch: int | None = None,
        cache_size: int = 0,
        executor: ThreadPoolExecutor | None = None,
        counters: Counters | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.backend = backend
        self.n = board_size
        self.max_batch = max(max_batch or batch_size, batch_size)
        self._batch_size = batch_size
        self.timeout_ms = timeout_ms
        self.executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="infer")
        self._own_executor = executor is None
        self.counters = counters or Counters()
        self.clients = 0
        self.waiting = 0
        self._free: list[_Buffer] = []
        self._cur = self._new_buffer()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cache: dict[int, tuple] = {}
        self.cache_size = cache_size
        self._closed = False
        self._last: tuple[_Buffer, int] | None = None

    # ---- settings ------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        """Takes effect at the next flush (the filling buffer may be smaller)."""
        value = max(1, int(value))
        if value > self.max_batch:
            # grow the buffers now; the filling one keeps its requests
            self.max_batch = value
            self._free.clear()
            old = self._cur
            new = self._new_buffer()
            k = old.count
            new.arr[:k] = old.arr[:k]
            new.futures[:k] = old.futures[:k]
            new.t_commit[:k] = old.t_commit[:k]
            new.finals[:k] = old.finals[:k]
            new.count = k
            if self._last is not None and self._last[0] is old:
                self._last = (new, self._last[1])
            self._cur = new
            if self._timer is not None and self._loop is not None:
                self._timer.cancel()
                left = self.timeout_ms / 1000.0 - (time.perf_counter() - new.t_commit[0])
                self._timer = self._loop.call_later(max(left, 0.0), self._on_timeout, new)
        self._batch_size = value
        if self._cur.count >= value and self._cur.count > 0:
            self._flush("full")

    def _new_buffer(self) -> _Buffer:
        if self._free:
            b = self._free.pop()
            b.count = 0
            return b
        arr = self.backend.alloc_input(self.max_batch, self.n)
        return _Buffer(arr, [None] * self.max_batch, [0.0] * self.max_batch, [False] * self.max_batch)

    # ---- clients -------------------------------------------------------
    def attach(self) -> None:
        self.clients += 1

    def detach(self) -> None:
        self.clients -= 1
        self._check_all_waiting()

    def current(self) -> tuple[np.ndarray, int]:
        """The filling buffer and the slot the next request will occupy."""
        return self._cur.arr, self._cur.count

    def cache_get(self, key: int):
        if not self.cache_size:
            return None
        c = self.counters
        c.cache_lookups += 1
        hit = self._cache.get(key)
        if hit is not None:
            c.cache_hits += 1
        return hit

    def cache_put(self, key: int, output, row: int) -> None:
        if not self.cache_size:
            return
        if len(self._cache) >= self.cache_size:
            # FIFO eviction: dicts keep insertion order
            for _ in range(max(1, self.cache_size // 16)):
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (output.policy[row : row + 1].copy(), output.wdl[row : row + 1].copy(),
                            output.score[row : row + 1].copy(), output.ownership[row : row + 1].copy())

    def commit(self, final: bool = True) -> asyncio.Future:
        """Queue the request whose planes were written into ``current()``.
        ``final``: the client blocks after this one (see ``block``)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        buf = self._cur
        fut = loop.create_future()
        i = buf.count
        buf.futures[i] = fut
        buf.t_commit[i] = time.perf_counter()
        buf.finals[i] = False
        buf.count = i + 1
        self._last = (buf, i)
        self.counters.queue_depth += 1
        if buf.count >= self._batch_size or buf.count >= self.max_batch:
            self._flush("full")
        elif i == 0 and self.timeout_ms is not None:
            self._timer = loop.call_later(self.timeout_ms / 1000.0, self._on_timeout, buf)
        if final:
            self.block()
        return fut

    def block(self) -> None:
        """The client that committed last now waits for its answers: it counts
        as waiting until the batch holding its last request comes back."""
        buf, i = self._last
        buf.finals[i] = True
        self.waiting += 1
        self._check_all_waiting()

    def _check_all_waiting(self) -> None:
        if self._cur.count and self.waiting >= self.clients:
            self._flush("waiting")

    def _on_timeout(self, buf: _Buffer) -> None:
        self._timer = None
        if buf is self._cur and buf.count:
            self._flush("timeout")

    # ---- flushing ------------------------------------------------------
    def _flush(self, reason: str) -> None:
        buf = self._cur
        if buf.count == 0:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._cur = self._new_buffer()
        count = buf.count
        now = time.perf_counter()
        c = self.counters
        c.queue_wait_s += sum(now - t for t in buf.t_commit[:count])
        c.in_flight += 1
        loop = self._loop or asyncio.get_running_loop()
        fut = loop.run_in_executor(self.executor, self._run, buf.arr, count)
        fut.add_done_callback(lambda f, buf=buf, count=count, reason=reason: self._done(f, buf, count, reason))

    def _run(self, arr: np.ndarray, count: int):
        t0 = time.perf_counter()
        out = self.backend.run(arr[:count])
        return out, time.perf_counter() - t0

    def _done(self, f: asyncio.Future, buf: _Buffer, count: int, reason: str) -> None:
        c = self.counters
        c.in_flight -= 1
        c.queue_depth -= count
        self.waiting -= sum(buf.finals[:count])
        futures = buf.futures[:count]
        for i in range(count):
            buf.futures[i] = None
            buf.finals[i] = False
        if buf.arr.shape[0] == self.max_batch:
            self._free.append(buf)
        exc = f.exception()
        if exc is not None:
            for fut in futures:
                if not fut.done():
                    fut.set_exception(exc)
            return
        out, busy = f.result()
        c.add_batch(count, reason, busy)
        for i, fut in enumerate(futures):
            if not fut.done():
                fut.set_result((out, i))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._own_executor:
            self.executor.shutdown(wait=True)
        self._closed = True
