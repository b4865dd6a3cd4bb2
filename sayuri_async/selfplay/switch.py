"""Changing an engine's network while it plays: load off the loop, swap between batches.

Vocabulary
----------
NetworkSwitch  one per engine. ``request(path, network)`` (on the event loop)
            loads the weights file in a loader thread of its own (neither
            the loop nor the inference worker waits for it); once loaded, the
            swap goes to the inference worker as a job of its own, behind
            the batches already handed to it (``net/swap.py``, "between
            batches"); when the worker reaches it, the loop hears of it and
            the network becomes ``current``. Requests that come while one
            loads wait, and only the newest of them is loaded next.
history     every network the engine has played, in order; ``serial`` is
            the index of the current one. A game notes the serial when it
            starts and takes ``since(serial)`` when it ends: the networks
            it was played with (the first one played its first move; a game
            that spans a swap lists both, and the rest of its moves are the
            later network's).
error       a file that fails to load, or reads other planes than the
            engine's, is refused: ``error`` holds the one-line reason, and
            the current network keeps playing. A later good file clears it.
inline      batchers that run on the loop (the random network, no worker):
            the swap is made on the loop at once, which is between batches
            too.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..infer.worker import Worker
from ..net.backends import Backend
from ..net.identity import NetworkId
from ..net.swap import SwappableBackend

MakeBackend = Callable[[str], Backend]
Prepare = Callable[[Backend], object]  # runs in the loader thread on a new backend (the engine measures its rates)


class NetworkSwitch:
    def __init__(self, slot: SwappableBackend, network: NetworkId, make_backend: MakeBackend | None,
                 worker: Worker | None, on_swapped: Callable[[Backend, object], None] | None = None,
                 prepare: Prepare | None = None) -> None:
        self.slot = slot
        self.make_backend = make_backend
        self.prepare = prepare
        self.worker = worker
        self.on_swapped = on_swapped
        self.history: list[NetworkId] = [network]
        self.error: str | None = None
        self.swaps = 0
        self._loading = False
        self._queued: tuple[str, NetworkId] | None = None
        self._pool: ThreadPoolExecutor | None = None

    @property
    def current(self) -> NetworkId:
        return self.history[-1]

    @property
    def serial(self) -> int:
        return len(self.history) - 1

    def since(self, serial: int) -> list[NetworkId]:
        """The networks current from history index ``serial`` to now, in order."""
        return list(self.history[serial:])

    @property
    def busy(self) -> bool:
        """A network is loading or waiting for its swap."""
        return self._loading

    def request(self, path: str, network: NetworkId) -> None:
        """Load ``path`` (identified as ``network``) and swap it in between
        batches; on the event loop. The current network is asked for again:
        nothing happens."""
        if self.make_backend is None:
            self.error = f"{path}: this engine cannot change its network"
            return
        if self._loading:
            self._queued = (path, network)
            return
        if network == self.current:
            return
        self._loading = True
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="network-load")
        fut = asyncio.get_running_loop().run_in_executor(self._pool, self._load, path)
        fut.add_done_callback(lambda f: self._loaded(f, path, network))

    def _load(self, path: str) -> tuple[Backend, object]:
        backend = self.make_backend(path)
        why = self.slot.incompatibility(backend)
        if why is not None:
            backend.close()
            raise ValueError(why)
        return backend, (self.prepare(backend) if self.prepare is not None else None)

    def _loaded(self, fut: asyncio.Future, path: str, network: NetworkId) -> None:
        if fut.cancelled():
            self._loading = False
            return
        exc = fut.exception()
        if exc is not None:
            self.error = f"{path}: not loaded, {network_text(self.current)} keeps playing: " + \
                         " ".join(f"{type(exc).__name__}: {exc}".split())
            self._next()
            return
        backend, prepared = fut.result()
        if self.worker is None:
            self._swapped(network, prepared, self.slot.swap(backend), None)
            return
        loop = asyncio.get_running_loop()
        try:
            self.worker.submit(loop, self._swap_job, (backend,),
                               lambda old, e: self._swapped(network, prepared, old, e))
        except RuntimeError:  # the worker is shut down: the run is ending
            backend.close()
            self._loading = False

    def _swap_job(self, backend: Backend) -> Callable[[], Backend]:
        """In the worker's launcher thread, between two batches: swap. The
        old backend comes back through the collector, after every batch
        launched on it was collected."""
        old = self.slot.swap(backend)
        return lambda: old

    def _swapped(self, network: NetworkId, prepared: object, old: Backend | None,
                 error: BaseException | None) -> None:
        if error is None:
            self.history.append(network)
            self.swaps += 1
            self.error = None
            if self.on_swapped is not None:
                self.on_swapped(self.slot.current, prepared)
            if old is not None:
                old.close()
        self._next()

    def _next(self) -> None:
        self._loading = False
        queued, self._queued = self._queued, None
        if queued is not None:
            self.request(*queued)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def network_text(network: NetworkId) -> str:
    return f"network {network.label}"
