"""One engine process of the fleet, as a Ray actor on a node.

Vocabulary
----------
EngineActor  runs the unchanged self-play ``Engine`` on a thread of its own
            with its own event loop (``selfplay/runner.run_inprocess``: no
            signal handler is touched off the main thread). Its engine writes
            into the actor's spool (``spool.py``), an uploader thread sends
            the finished files to Ingest, and a StoreFollower hands it each
            network the fleet publishes. ``status()`` is an ``ActorStatus``:
            the engine's latest ``Status`` with the node, the actor and the
            spool's figures;
            ``control(cmd)`` reaches the engine as the TUI's controls do;
            ``stop()`` ends the games in flight, writes them, uploads the
            spool and returns the last status.
waiting     an engine told to wait (``wait_network``: the fleet's workspace
            holds a network) starts no game before the fleet's network is
            published: it asks the store every second and starts on that
            network, so that a run that continues a network never plays (and
            never writes) a game of the random one. Its status says
            ``waiting_network`` meanwhile.
links       how an actor reaches the fleet's services: ``put(kind, name,
            data)`` (Ingest), ``current()`` and ``fetch(generation)``
            (WeightStore). ``RayLinks`` finds them by name in the cluster;
            tests pass objects of their own.
StoreFollower  ``selfplay/follow.py``'s WeightsFollower asking the store,
            not a folder: a thread that asks ``current()`` every ``poll_s`` seconds;
            on a network other than its own (by sha256: a restarted store
            counts generations from 1 again) it fetches the bytes once, checks their
            sha256, writes them to the node's network folder (temporary name,
            then rename; a copy already there with the right sha256 is used
            as it is) and queues a ``{"network": {"path", "name", "sha256"}}``
            control: the engine swaps between batches, and every game
            records the networks it was played with (chunk metadata
            ``networks`` and ``game_networks``). An engine on the device
            model (``device = "model"``: it answers as the random network and
            takes no weights) follows nothing.
ActorStatus  what the driver reads, a picklable record that Ray sends as it
            is: ``node``, ``actor``, ``gpu`` (the GPU ids the engine sees,
            "" on the CPU), ``engine`` (the engine's latest ``Status``, with
            its ``node`` set, so that processes of several machines stay
            apart in ``report.aggregate``; None before its first one),
            ``spool_files`` (finished files not yet acknowledged),
            ``uploaded``, ``upload_error``, ``engine_error`` (why the engine
            stopped, or None), ``network_fetch_error``, ``playing``,
            ``generation`` (the fleet's network generation this actor last
            received), ``waiting_network`` (see "waiting").
"""
from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ..fileio import write_bytes_atomic
from ..net.device_model import device_index
from ..net.identity import NetworkId, file_sha256
from ..selfplay.config import SelfplayConfig
from ..selfplay.follow import WeightsFollower, one_line
from ..selfplay.status import Status
from . import NAMESPACE
from .ingest import INGEST_NAME
from .spool import NETWORKS, Spool, Uploader, node_spool_root
from .store import STORE_NAME, Published

DEFAULT_POLL_S = 5.0
PUT_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 120.0
WAIT_LOOK_S = 1.0  # how often a waiting engine asks the store (see "waiting")


@dataclass
class ActorStatus:
    node: str
    actor: str
    gpu: str
    engine: Status | None
    spool_files: int = 0
    uploaded: int = 0
    upload_error: str | None = None
    engine_error: str | None = None
    network_fetch_error: str | None = None
    playing: bool = False
    generation: int = 0
    waiting_network: bool = False


class Links(Protocol):
    def put(self, kind: str, name: str, data: bytes) -> str: ...
    def current(self) -> Published | None: ...
    def fetch(self, generation: int) -> bytes | None: ...


class RayLinks:
    """Ingest and WeightStore, found by name (they may restart: a call that
    fails raises, and the caller tries again later)."""

    def __init__(self) -> None:
        import ray

        self._ray = ray
        self._ingest = ray.get_actor(INGEST_NAME, namespace=NAMESPACE)
        self._store = ray.get_actor(STORE_NAME, namespace=NAMESPACE)

    def put(self, kind: str, name: str, data: bytes) -> str:
        return self._ray.get(self._ingest.put.remote(kind, name, data), timeout=PUT_TIMEOUT_S)

    def current(self) -> Published | None:
        return self._ray.get(self._store.current.remote(), timeout=PUT_TIMEOUT_S)

    def fetch(self, generation: int) -> bytes | None:
        return self._ray.get(self._store.fetch.remote(generation), timeout=PUT_TIMEOUT_S)


class StoreFollower(WeightsFollower):
    """See the vocabulary: ``selfplay/follow.py``'s follower, with the
    fleet's WeightStore in place of a folder (``take()`` is what
    ``run_inprocess`` calls for controls)."""

    def __init__(self, links: Links, folder: Path, poll_s: float) -> None:
        super().__init__(folder, poll_s, warn=self._note)
        self.links = links
        self.generation = 0
        self.error: str | None = None

    def _note(self, text: str) -> None:
        self.error = text

    def poll(self) -> tuple[Path, NetworkId] | None:
        """One look: the new network as a local file, or None."""
        pub = self.links.current()
        self.error = None
        if pub is None:
            return None
        if self.current is not None and pub.sha256 == self.current.sha256:
            self.generation = pub.generation
            return None
        path = self.folder / f"{pub.name}.safetensors"
        if not (path.is_file() and file_sha256(path) == pub.sha256):
            data = self.links.fetch(pub.generation)
            if data is None:  # replaced meanwhile: the next look takes the newer one
                return None
            if hashlib.sha256(data).hexdigest() != pub.sha256:
                raise ValueError(f"generation {pub.generation} ({pub.name}) arrived with another sha256")
            write_bytes_atomic(path, data)
        self.generation = pub.generation
        self.current = NetworkId(pub.name, pub.sha256)
        return path, self.current


def drain(q: queue.SimpleQueue) -> list:
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


class _Latest:
    """The reporter ``run_inprocess`` drives: keeps the latest status, hands
    over queued controls."""

    def __init__(self) -> None:
        self.status: Status | None = None
        self.controls: queue.SimpleQueue = queue.SimpleQueue()

    def update(self, statuses: list[Status]) -> list[dict]:
        if statuses:
            self.status = statuses[0]
        return drain(self.controls)

    def close(self, statuses: list[Status]) -> None:
        if statuses:
            self.status = statuses[0]


class EngineActor:
    """A plain class: the fleet makes it a Ray actor (``ray.remote``)."""

    def __init__(self, cfg: SelfplayConfig, name: str, node: str, spool_root: str | None = None,
                 poll_s: float = DEFAULT_POLL_S, links: Links | None = None, wait_network: bool = False) -> None:
        self.name = name
        self.node = node
        self.links = links if links is not None else RayLinks()
        root = Path(spool_root) if spool_root else node_spool_root()  # this node's own temporary folder
        self.spool = Spool(root, name)
        self.uploader = Uploader(self.spool, self.links.put)
        self.uploader.upload_pass()  # leftovers of an earlier life go first
        self.uploader.start()
        networks = root / NETWORKS
        self.follower = StoreFollower(self.links, networks, poll_s)
        self.follows = device_index(cfg.device) is None  # the device model takes no weights
        self.network: NetworkId | None = None
        self.cfg = replace(cfg, out=str(self.spool.folder), num_games=0, weights=cfg.weights or "",
                           follow_weights=str(networks) if self.follows else "")
        self.wait_network = wait_network and self.follows
        self.engine_error: str | None = None
        self.gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "") if self.cfg.device.startswith("cuda") else ""
        self._latest = _Latest()
        self._started = time.time()
        self._stopping = threading.Event()
        if self.follows:
            self._look()  # the fleet's network, when one is published, from the first game
        self._thread = threading.Thread(target=self._play, name="engine", daemon=True)
        self._thread.start()

    def _look(self) -> bool:
        """Ask the store once; True once the engine has the fleet's network."""
        try:
            found = self.follower.poll()
        except Exception as e:
            self.follower.error = f"network: {one_line(e)}"
            return False
        if found is not None:
            self.cfg = replace(self.cfg, weights=str(found[0]))
            self.network = found[1]
        return self.network is not None

    def waiting(self) -> bool:
        """Whether the engine still waits for the fleet's network (see "waiting")."""
        return self.wait_network and self.network is None

    def _play(self) -> None:
        from ..selfplay.runner import run_inprocess

        while self.waiting() and not self._stopping.wait(WAIT_LOOK_S):
            self._look()
        if self._stopping.is_set() and self.waiting():
            return  # stopped before the network came: no game to play
        if self.follows:
            self.follower.start()
        try:
            run_inprocess(self.cfg, self._latest, network=self.network, follower=self.follower,
                          warn=lambda text: None)  # refusals show in the status's network_error
        except BaseException as e:  # the engine's end, said in the status
            self.engine_error = one_line(e)

    def status(self) -> ActorStatus:
        st = self._latest.status
        return ActorStatus(
            node=self.node, actor=self.name, gpu=self.gpu,
            engine=None if st is None else replace(st, node=self.node),
            spool_files=self.uploader.pending(), uploaded=self.uploader.uploaded,
            upload_error=self.uploader.error, engine_error=self.engine_error,
            network_fetch_error=self.follower.error, playing=self._thread.is_alive() and not self.waiting(),
            generation=self.follower.generation, waiting_network=self.waiting(),
        )

    def control(self, cmd: dict) -> None:
        self._latest.controls.put(dict(cmd))

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> ActorStatus:
        """End the games in flight, write and upload them (see the vocabulary)."""
        self._stopping.set()
        self._latest.controls.put({"stop": True})
        self._thread.join(timeout=timeout_s)
        self.follower.stop()
        self.uploader.drain(timeout_s)
        return self.status()
