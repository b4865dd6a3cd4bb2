"""The async batching queue between game coroutines and one network backend.

Vocabulary
----------
client     a game coroutine attached to the batcher. It commits requests,
           then blocks until they are answered; the batcher counts blocked
           clients (``waiting``) for the "every client waits" trigger.
request    one position, whose planes go straight into a slot of the filling
           buffer. ``reserve()`` gives the buffer, the next free slot and
           how many slots are left before the batch is full; a client may
           take several consecutive slots (a search round's leaves) and
           ``commit(count, prepare=(run, item))`` them, where ``run``
           writes them (``search/evaluator.py``, "preparation"): the
           batch's preparations run in the worker thread just before the
           backend, in one call per kind (so the searches' leaves are
           encoded off the event loop, while the device runs the batch
           before), or on the loop when inline; a client that wrote its
           rows itself passes none. Every commit into a buffer gets
           the buffer's one future, answered with the backend's NetOutput
           for the whole batch: a request's row in it is the slot it was
           written to. Nothing is copied on the way.
buffer     a ``[max_batch, C, N, N]`` uint8 input array (pinned on CUDA). One
           fills on the loop while earlier ones run in the worker thread.
flush      the filling buffer leaves for the device (``infer/dispatch.py``)
           when ``flush_reason`` (``infer/flush.py``: the flush rule, in
           one place) says so; the batcher asks it at each ``Event``.
worker     one thread per device (``infer/worker.py``; batchers on the same
           device share it and its dispatch) runs ``backend.run``; the event
           loop never blocks on it, so while batch k runs, batch k+1 fills.
inline     with ``inline=True`` (for a ``cheap`` backend: the random network)
           the loop runs the batch itself when it is handed and answers it on
           its next turn: no thread handoff, which costs more than such a
           batch.
busy time  per batch, the device's own time where the backend reports it
           (``NetOutput.device_s``: CUDA events, the device model's clock),
           else the wall time of ``backend.run``.
NN cache   ``nn_cache`` (``infer/cache.py``): answers by position key, read and
           written by the compiled search itself; ``cache_get``/``cache_put``
           reach it from Python. It has no slots when ``cache_size`` is 0.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from .cache import NNCache
from .dispatch import Dispatch
from .flush import Event, flush_reason
from .stats import Counters
from .worker import Worker


def run_preparations(preparations: list, planes: np.ndarray) -> None:
    """Run ``preparations`` (``(run, item)`` each, ``search/evaluator.py``)
    in order, each run of consecutive ones with the same ``run`` as one
    call: ``run(items, planes)``."""
    i, k = 0, len(preparations)
    while i < k:
        run = preparations[i][0]
        j = i + 1
        while j < k and preparations[j][0] is run:
            j += 1
        run([p[1] for p in preparations[i:j]], planes)
        i = j


@dataclass
class _Buffer:
    arr: np.ndarray  # [max_batch, C, N, N] uint8
    count: int = 0  # slots filled
    future: asyncio.Future | None = None  # every commit's answer: the batch's NetOutput
    t_first: float = 0.0  # time of the first commit (the timeout counts from it)
    t_sum: float = 0.0  # commit times summed over requests (queue wait = count * now - t_sum)
    finals: int = 0  # commits after which their client blocked
    prepares: list = field(default_factory=list)  # the preparation of each commit that has one, in order

    def clear(self) -> None:
        self.count = 0
        self.future = None
        self.t_sum = 0.0
        self.finals = 0
        self.prepares = []  # (a new list: the worker may still hold the old one)


class Batcher:
    def __init__(
        self,
        backend,
        board_size: int,
        batch_size: int,
        timeout_ms: float = 5.0,
        max_batch: int | None = None,
        cache_size: int = 0,
        worker: Worker | None = None,
        counters: Counters | None = None,
        inline: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.backend = backend
        self.n = board_size
        self.max_batch = max(max_batch or batch_size, batch_size)
        self._batch_size = batch_size
        self.timeout_ms = timeout_ms
        self.inline = inline
        # inline: the loop runs the batches itself, whatever worker the
        # caller has (an engine passes its device's worker either way)
        self.worker = None if inline else (worker or Worker())
        self._own_worker = worker is None and not inline
        self.dispatch = Dispatch(None) if inline else self.worker.dispatch
        self.dispatch.add_feeder(self)
        self.counters = counters or Counters()
        self.clients = 0
        self.waiting = 0
        self._free: list[_Buffer] = []
        self._cur = self._new_buffer()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.cache_size = cache_size
        self.nn_cache = NNCache(cache_size, board_size)
        self._last: _Buffer | None = None  # the buffer of the latest commit

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
            new.count = k
            new.future, new.t_first, new.t_sum, new.finals = old.future, old.t_first, old.t_sum, old.finals
            new.prepares = old.prepares
            if self._last is old:
                self._last = new
            self._cur = new
            if self._timer is not None and self._loop is not None:
                self._timer.cancel()
                left = self.timeout_ms / 1000.0 - (time.perf_counter() - new.t_first)
                self._timer = self._loop.call_later(max(left, 0.0), self._on_timeout, new)
        self._batch_size = value
        self._consult(Event.FILLED)

    def _new_buffer(self) -> _Buffer:
        if self._free:
            b = self._free.pop()
            b.clear()
            return b
        return _Buffer(self.backend.alloc_input(self.max_batch, self.n))

    # ---- clients -------------------------------------------------------
    def attach(self) -> None:
        self.clients += 1

    def detach(self) -> None:
        self.clients -= 1
        self.poll()

    def reserve(self) -> tuple[np.ndarray, int, int]:
        """The filling buffer, its next free slot, and how many requests it
        takes before it is full (at least 1)."""
        buf = self._cur
        return buf.arr, buf.count, max(self._batch_size - buf.count, 1)  # (batch_size <= max_batch)

    def cache_get(self, key: int):
        """The NN cache's (policy [A], wdl [3], score) for ``key``, or None."""
        if not self.cache_size:
            return None
        c = self.counters
        c.cache_lookups += 1
        hit = self.nn_cache.get(key)
        if hit is not None:
            c.cache_hits += 1
        return hit

    def cache_put(self, key: int, output, row: int) -> None:
        if self.cache_size:
            self.nn_cache.put(key, output.policy, output.wdl, output.score, row)

    def commit(self, count: int = 1, final: bool = True, prepare=None) -> asyncio.Future:
        """Queue ``count`` requests in the filling buffer's slots from
        ``reserve()[1]`` on, written there already or by the preparation
        ``prepare`` when the batch leaves; the future gives the batch's NetOutput
        (their rows are their slots). ``final``: the client blocks after
        this one (see ``block``). Every search round runs this: keep it
        lean."""
        buf = self._cur
        i = buf.count
        n = i + count
        if n > self.max_batch:
            raise ValueError(f"commit of {count} requests at slot {i} overflows the batch of {self.max_batch}")
        fut = buf.future
        now = time.perf_counter()
        if fut is None:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            fut = buf.future = loop.create_future()
            buf.t_first = now
            if self.timeout_ms is not None and n < self._batch_size:
                self._timer = loop.call_later(self.timeout_ms / 1000.0, self._on_timeout, buf)
        buf.count = n
        buf.t_sum += count * now
        if prepare is not None:
            buf.prepares.append(prepare)
        self.counters.queue_depth += count
        self._last = buf
        if final:  # the client blocks (see ``block``)
            buf.finals += 1
            self.waiting += 1
        # only a full buffer or every client waiting can send it at a commit
        # (``infer/flush.py``, ``Event``): the rest skip the rule's cost
        if n >= self._batch_size or (final and self.waiting >= self.clients):
            self._consult(Event.BLOCKED if final else Event.FILLED, now)
        return fut

    def block(self) -> None:
        """The client that committed last now waits for its answers: it counts
        as waiting until the batch holding its last request comes back."""
        self._last.finals += 1
        self.waiting += 1
        if self.waiting >= self.clients:
            self._consult(Event.BLOCKED)

    def poll(self, returned: bool = False) -> None:
        """Look at the flush rule again (``infer/flush.py``): ``returned``,
        a batch just came back (``Dispatch.finished``); else a client
        detached or the engine stops."""
        self._consult(Event.RETURNED if returned else Event.POLLED)

    def _on_timeout(self, buf: _Buffer) -> None:
        self._timer = None
        if buf is not self._cur or not buf.count:
            return
        if not self._consult(Event.TIMER) and self._loop is not None and self.timeout_ms:
            # held behind the device's work: look again later
            self._timer = self._loop.call_later(self.timeout_ms / 1000.0, self._on_timeout, buf)

    # ---- flushing ------------------------------------------------------
    def _consult(self, event: str, now: float | None = None) -> bool:
        """Ask the flush rule about the filling buffer at ``event`` and send
        it if the rule says so; True when it left."""
        buf = self._cur
        if not buf.count:
            return False
        dispatch = self.dispatch
        timeout_ms = self.timeout_ms
        reason = flush_reason(
            event, buf.count, self._batch_size, self.clients, self.waiting,
            (time.perf_counter() if now is None else now) - buf.t_first,
            None if timeout_ms is None else timeout_ms / 1000.0,
            dispatch.idle_slot(), dispatch.handed == 0)
        if reason is None:
            return False
        self._flush(reason)
        return True

    def _flush(self, reason: str) -> None:
        buf = self._cur
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._cur = self._new_buffer()
        count = buf.count
        now = time.perf_counter()
        c = self.counters
        c.queue_wait_s += count * now - buf.t_sum
        c.in_flight += 1
        loop = self._loop or asyncio.get_running_loop()
        self.dispatch.send(loop, self._launch, (buf.arr, count, buf.prepares),
                           partial(self._done, buf, count, reason))

    def _launch(self, arr: np.ndarray, count: int, prepares: list):
        """Write the batch's prepared rows (``prepares``, see "request") and
        start it on the backend (in the worker thread, or on the loop when
        inline). Returns the batch's ``(output, error, busy seconds)`` when
        it ran inside ``launch`` (or failed there), else ``collect() ->
        (output, error, busy seconds)``, which waits for it
        (``infer/worker.py``). ``_done`` gets the tuple on the loop."""
        try:
            if prepares:
                t = time.perf_counter()
                run_preparations(prepares, arr)
                self.counters.encode_s += time.perf_counter() - t
            t0 = time.perf_counter()
            wait = self.backend.launch(arr[:count])
        except BaseException as e:  # the batch's requests get it, not the thread
            return None, e, 0.0
        launched_s = time.perf_counter() - t0
        if not callable(wait):  # it ran: the NetOutput
            return wait, None, launched_s if wait.device_s is None else wait.device_s

        def collect() -> tuple:
            t1 = time.perf_counter()
            try:
                out = wait()
            except BaseException as e:
                return None, e, 0.0
            busy = out.device_s
            return out, None, (launched_s + time.perf_counter() - t1) if busy is None else busy

        return collect

    def _done(self, buf: _Buffer, count: int, reason: str, result, worker_exc: BaseException | None) -> None:
        """On the loop: answer every request of ``buf`` with the batch's
        output or, when the backend or the worker failed, with the error:
        no request is ever left waiting."""
        if worker_exc is not None:
            out, exc, busy = None, worker_exc, 0.0
        else:
            out, exc, busy = result
        c = self.counters
        c.in_flight -= 1
        c.queue_depth -= count
        self.waiting -= buf.finals
        fut = buf.future
        if buf.arr.shape[0] == self.max_batch:
            self._free.append(buf)  # cleared when taken again
        if exc is not None:
            if not fut.done():
                fut.set_exception(exc)
        else:
            c.add_batch(count, reason, busy)
            if not fut.done():
                fut.set_result(out)
        self.dispatch.finished()  # after the answer: its games are no longer waiting

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.dispatch.remove_feeder(self)
        if self._own_worker:
            self.worker.shutdown(wait=True)
