"""The workspace's networks into WeightStore, on a thread of the driver.

Vocabulary
----------
Publisher   a thread of the fleet driver that every ``every_s`` seconds looks
            for the newest ``*.safetensors`` of ``<workspace>/weights``
            (``selfplay/follow.py``'s rule), checks it (its sha256 against its
            sidecar, and that it loads) and sends its bytes to WeightStore.
            Checking and loading a network takes seconds (the first one
            imports torch), so the driver's loop, which gathers the engines'
            figures and draws the view, never waits for it: it takes the
            thread's ``events()`` (published, refused) and reads
            ``generation``.
newest good at the start a newest file that fails its check is passed over
            for the next newest, down to the oldest: a run that continues a
            network starts on the newest one that loads. After the first
            publication a refused file leaves the network playing as it is;
            a file is looked at again when it changes (its time or size).
expected    ``holds_networks(folder)``: the workspace holds weights files, so
            the run continues a network and its engines wait for the
            publication (``actor.py``, "waiting") instead of playing the
            random network meanwhile.
restart     a store that Ray restarted is empty: the newest good file is
            published again.
StoreCalls  what the publisher needs of the store (``current``,
            ``publish``): WeightStore itself in tests, its Ray actor in a run
            (``RayStore``).
"""
from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from typing import Protocol

from ..net.identity import NetworkId, network_name
from ..selfplay.follow import Candidate, check_weights, one_line, weights_newest_first
from .store import Published

PUBLISH_EVERY_S = 1.0  # a look is a scan of the folder (and a ~1 ms call to the store)


class StoreCalls(Protocol):
    def current(self) -> Published | None: ...
    def publish(self, name: str, sha256: str, data: bytes) -> int: ...


class RayStore:
    """The store's Ray actor behind ``StoreCalls``."""

    def __init__(self, ray, handle) -> None:
        self._ray, self._handle = ray, handle

    def current(self) -> Published | None:
        return self._ray.get(self._handle.current.remote())

    def publish(self, name: str, sha256: str, data: bytes) -> int:
        return self._ray.get(self._handle.publish.remote(name, sha256, data))


def holds_networks(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a weights file (see "expected")."""
    return bool(weights_newest_first(folder))


class Publisher:
    """See the vocabulary; ``look()`` is one pass (the thread's, or a test's)."""

    def __init__(self, folder: Path, store: StoreCalls, every_s: float = PUBLISH_EVERY_S) -> None:
        self.folder = Path(folder)
        self.store = store
        self.every_s = every_s
        self.generation = 0
        self.network: NetworkId | None = None  # the network published last
        self.looked: Candidate | None = None  # the newest file looked at last
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60.0)

    def events(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except Exception as e:  # the store restarting: the next pass tries again
                self._events.put(f"publication: {one_line(e)}")
            self._stop.wait(self.every_s)

    def look(self) -> None:
        if self.network is not None and self.store.current() is None:
            self.network, self.looked = None, None  # a restarted store (see "restart")
        found = weights_newest_first(self.folder)
        if not found or found[0] == self.looked:
            return
        self.looked = found[0]
        for cand in found if self.network is None else found[:1]:  # see "newest good"
            if self._stop.is_set():
                return
            if self._publish(cand):
                return

    def _publish(self, cand: Candidate) -> bool:
        try:
            network = check_weights(cand.path)
            data = cand.path.read_bytes()
        except Exception as e:  # a copy in progress, a damaged file: the engines keep their network
            self._events.put(f"refused {cand.path.name}: {one_line(e)}")
            return False
        self.generation = self.store.publish(network_name(cand.path), network.sha256, data)
        self.network = network
        self._events.put(f"published {network.label} as generation {self.generation}")
        return True
