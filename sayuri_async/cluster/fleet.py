"""The fleet driver: engines on every node, Ingest and WeightStore, the trainer, publication.

Vocabulary
----------
FleetSettings  what a run needs: the workspace, the engines' self-play
            config, the training config (None: the trainer runs elsewhere and
            only its exports are published), the spool root on each node
            (None: each node's own temporary folder, ``spool.py``),
            engines per GPU (``cfg.procs``) and per GPU-less node
            (``cpu_engines``, on ``cpu_device``: the CPU, or ``model``, the
            device model, to study the cluster's scheduling without a GPU).
services    Ingest (``ingest.py``) and WeightStore (``store.py``): named,
            detached actors on the driver's node, found again by name when a
            driver restarts (``get_if_exists``).
engines     one EngineActor (``actor.py``) per engine slot of every alive
            node: on a node with GPUs ``procs`` per GPU (``num_gpus =
            1/procs``), else ``cpu_engines``; one logical CPU each. Named
            ``engine-<node id>-<slot>``, detached, restarted by Ray when their
            process dies (``max_restarts=-1``), pinned to their node. The
            driver looks at ``ray.nodes()`` every ``NODES_EVERY_S``: a node
            that joins gets its engines, one that leaves is reported with
            the games it lost (``ledger.py``: in progress, and finished but
            waiting for their chunk) and its engines are dropped.
            An engine whose construction raised (Ray does not restart it) is
            dropped and said once with its error's last line; when no engine
            is left that way, the run ends with that error (``FleetEnd.error``).
trainer     ``sayuri-async train --follow`` (``--auto-resume``) on the
            workspace as a subprocess of the driver, ending with it; it
            reads ``<workspace>/data``, trains in ``<workspace>/train`` and
            publishes its exports into ``<workspace>/weights``. It is started
            again when it fails; a usage error (exit 2) ends the run; once it
            ends by itself (its ``--steps`` reached) self-play goes on.
publication the newest good file of ``<workspace>/weights`` goes to
            WeightStore, which the engines poll, from a thread of the driver
            (``publisher.py``): the view goes on while a network is checked
            and loaded. When the workspace holds a network at the start, the
            run continues it: the engines wait for its publication and play
            no game of the random network (``actor.py``, "waiting"). A run
            that starts from nothing (no network in the workspace, none in
            the self-play config) says so in one line.
stop        SIGINT, SIGTERM or a file ``<workspace>/STOP``: the trainer is
            stopped, every engine ends its games in flight and uploads its
            spool, then the fleet's actors are ended. Only whole files are
            left, on the nodes and in the workspace. The STOP file is removed
            when the run ends; one there at the start (a stop request that no
            run took) refuses the start in one line that names it. ``run()``
            returns a ``FleetEnd``.
totals      the ``Ledger`` (``ledger.py``) keeps what the engines that are
            gone did, so that the view's totals and the summary count every
            game of the run.
statuses    each engine's latest ``ActorStatus`` (``actor.py``), sent by Ray
            pickled as it is; the view gets those with figures
            (``with_figures``).
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..lifetime import end_with_this_process
from ..selfplay.config import SelfplayConfig
from ..usererror import UserError
from . import NAMESPACE
from .actor import DEFAULT_POLL_S, STOP_TIMEOUT_S, ActorStatus, EngineActor
from .ingest import INGEST_NAME, Ingest, IngestStats
from .ledger import Ledger
from .publisher import Publisher, RayStore, holds_networks
from .store import STORE_NAME, WeightStore
from .view import ClusterView

NODES_EVERY_S = 2.0
STATUS_EVERY_S = 1.0
STATUS_WAIT_S = 2.0
TRAINER_RESTART_S = 5.0
TRAINER_STOP_S = 60.0
Say = Callable[[str], None]


@dataclass
class FleetSettings:
    workspace: Path
    selfplay: SelfplayConfig
    spool: str | None = None  # None: each node's own temporary folder
    train_config: str | None = None
    train_args: list[str] = field(default_factory=list)
    cpu_engines: int = 1
    cpu_device: str = "cpu"  # the engines' device on a node without GPUs: "cpu" or "model"
    poll_s: float = DEFAULT_POLL_S
    stop_file: bool = True

    @property
    def weights(self) -> Path:
        return self.workspace / "weights"

    @property
    def stop_path(self) -> Path:
        return self.workspace / "STOP"


@dataclass
class FleetEnd:
    """What a run leaves: the engines' last statuses (those with figures),
    Ingest's counts, the games lost with nodes that left, the files left in
    spools and the last generation published."""
    statuses: list[ActorStatus]
    ingest: IngestStats | None
    lost_games: int
    spool_left: int
    generation: int
    error: str | None = None  # why the run ended by itself: no engine could start, or the trainer's usage error


@dataclass
class Node:
    node_id: str
    label: str
    gpus: int

    def engine_slots(self, settings: FleetSettings) -> int:
        return self.gpus * settings.selfplay.procs if self.gpus else settings.cpu_engines


def creation_error(e: Exception) -> str:
    """The last line of an actor's creation error: the exception its
    ``__init__`` raised (Ray's text above it is a traceback)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip().strip("^~")]
    return " ".join(lines[-1].split()) if lines else type(e).__name__


def alive_nodes(ray) -> dict[str, Node]:
    """The cluster's alive nodes by id; a label of host name and id prefix."""
    from ..fileio import host_name

    out = {}
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        node_id = n["NodeID"]
        host = host_name(str(n.get("NodeManagerHostname") or n.get("NodeName") or "node"))
        out[node_id] = Node(node_id, f"{host}-{node_id[:6]}", int(n.get("Resources", {}).get("GPU", 0)))
    return out


class Trainer:
    """The trainer subprocess (see the vocabulary)."""

    def __init__(self, settings: FleetSettings, say: Say) -> None:
        self.settings = settings
        self.say = say
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.failed_at = 0.0
        self.fatal: str | None = None
        self.finished = False

    def command(self) -> list[str]:
        ws = self.settings.workspace
        return [sys.executable, "-m", "sayuri_async", "train", "--config", str(self.settings.train_config),
                "--data", str(ws / "data"), "--out", str(ws / "train"), "--follow", "--auto-resume",
                "--publish", str(self.settings.weights), "--no-progress", *self.settings.train_args]

    def check(self) -> None:
        """Start it, or again after a failure (``TRAINER_RESTART_S`` later)."""
        if self.settings.train_config is None or self.fatal is not None or self.finished:
            return
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return
            self.proc = None
            if code == 0:  # it reached its --steps: nothing left for it to do
                self.finished = True
                self.say(f"trainer finished (see {self.log_path()}); self-play goes on")
                return
            if code == 2:
                self.fatal = f"the trainer stopped with a usage error (see {self.log_path()})"
                return
            self.say(f"trainer exited with status {code}; starting it again with --auto-resume")
            self.failed_at = time.monotonic()
        if time.monotonic() - self.failed_at < TRAINER_RESTART_S:
            return
        log = open(self.log_path(), "ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=end_with_this_process())
        finally:
            log.close()
        self.starts += 1

    def log_path(self) -> Path:
        return self.settings.workspace / "trainer.log"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=TRAINER_STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Fleet:
    def __init__(self, settings: FleetSettings, ray, view: ClusterView, say: Say) -> None:
        self.settings = settings
        self.ray = ray
        self.view = view
        self.say = say
        self.nodes: dict[str, Node] = {}
        self.engines: dict[str, tuple[str, object]] = {}  # actor name -> (node id, handle)
        self.latest: dict[str, ActorStatus] = {}  # actor name -> its latest status
        self.ledger = Ledger()
        self.publisher: Publisher | None = None
        self.wait_network = False  # the run continues the workspace's network (see "publication")
        self.stop_reason: str | None = None
        self.engines_failed: str | None = None
        self.trainer = Trainer(settings, say)
        self.ingest = None
        self.store = None
        self._engine_class = None

    # ---- services ---------------------------------------------------------
    def _here(self):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node_id = self.ray.get_runtime_context().get_node_id()
        return NodeAffinitySchedulingStrategy(node_id, soft=False)

    def start_services(self) -> None:
        common = dict(namespace=NAMESPACE, lifetime="detached", get_if_exists=True, max_restarts=-1,
                      num_cpus=0, scheduling_strategy=self._here())
        self.ingest = self.ray.remote(Ingest).options(name=INGEST_NAME, **common).remote(
            str(self.settings.workspace.resolve()))
        self.store = self.ray.remote(WeightStore).options(name=STORE_NAME, **common).remote()
        self.ray.get([self.ingest.stats.remote(), self.store.current.remote()])
        self.publisher = Publisher(self.settings.weights, RayStore(self.ray, self.store))
        self.wait_network = holds_networks(self.settings.weights)
        if not self.wait_network and not self.settings.selfplay.weights:
            self.view.event(f"starting from nothing: no network in {self.settings.weights} and none in the "
                            "self-play config; the engines play the random network until one is published")

    @property
    def generation(self) -> int:
        return self.publisher.generation if self.publisher is not None else 0

    # ---- nodes and engines -------------------------------------------------
    def sync_nodes(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        now = alive_nodes(self.ray)
        for node_id in [n for n in self.nodes if n not in now]:
            self._node_left(self.nodes.pop(node_id))
        for node_id, node in now.items():
            if node_id in self.nodes:
                continue
            self.nodes[node_id] = node
            slots = node.engine_slots(self.settings)
            cfg = replace(self.settings.selfplay, device="cuda:0" if node.gpus else self.settings.cpu_device,
                          procs=self.settings.selfplay.procs if node.gpus else max(slots, 1))
            resources = {"num_gpus": 1.0 / self.settings.selfplay.procs} if node.gpus else {}
            if self._engine_class is None:
                self._engine_class = self.ray.remote(EngineActor)
            cls = self._engine_class
            for slot in range(slots):
                name = f"engine-{node_id[:12]}-{slot}"
                handle = cls.options(name=name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
                                     max_restarts=-1, num_cpus=1, **resources,
                                     scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
                                     ).remote(cfg, name, node.label, self.settings.spool, self.settings.poll_s,
                                              wait_network=self.wait_network)
                self.engines[name] = (node_id, handle)
            self.view.event(f"node {node.label} joined: {slots} engine(s)"
                            + (f" on {node.gpus} GPU(s)" if node.gpus else " on the CPU"))

    def _node_left(self, node: Node) -> None:
        before = (self.ledger.done.lost_in_progress, self.ledger.done.lost_waiting)
        for name in [n for n, (nid, _) in self.engines.items() if nid == node.node_id]:
            _, handle = self.engines.pop(name)
            self.latest.pop(name, None)
            self.ledger.gone(name)
            self._kill(handle)
        live = self.ledger.done.lost_in_progress - before[0]
        waiting = self.ledger.done.lost_waiting - before[1]
        self.view.event(f"node {node.label} left: {live + waiting} game(s) lost ({live} in progress, {waiting} "
                        "finished waiting for their chunk; their SGF files are kept)")

    def _kill(self, handle) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except Exception:  # already gone (with its node)
            pass

    # ---- publication --------------------------------------------------------
    def publish_events(self) -> None:
        """Say what the publisher's thread did since the last look."""
        for text in self.publisher.events() if self.publisher is not None else []:
            self.view.event(text)

    # ---- statuses -------------------------------------------------------------
    def gather(self) -> None:
        refs = {h.status.remote(): name for name, (_, h) in self.engines.items()}
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=STATUS_WAIT_S) if refs else ([], [])
        for ref in ready:
            try:
                st = self.latest[refs[ref]] = self.ray.get(ref)
            except Exception as e:  # restarting, or its node is leaving: its last status stands
                if getattr(e, "actor_init_failed", False):
                    self._engine_failed(refs[ref], e)
                continue
            self.ledger.note(refs[ref], st.engine)
        waiting = sum(st.waiting_network for st in self.latest.values())
        figures = self.with_figures()
        self.view.update(figures, ingest=self._ingest_stats(), generation=self.generation, done=self.ledger.done,
                         waiting=waiting, starting=max(len(self.engines) - len(figures) - waiting, 0))

    def _engine_failed(self, name: str, e: Exception) -> None:
        """An engine whose ``__init__`` raised: dropped, said once (see the vocabulary)."""
        self.engines.pop(name, None)
        self.latest.pop(name, None)
        why = creation_error(e)
        self.view.event(f"engine {name} could not start: {why}")
        if not self.engines:
            self.engines_failed = f"no engine could start: {why}"

    def with_figures(self) -> list[ActorStatus]:
        """The latest statuses of the engines that have reported figures."""
        return [st for st in self.latest.values() if st.engine is not None]

    def _ingest_stats(self) -> IngestStats | None:
        try:
            return self.ray.get(self.ingest.stats.remote(), timeout=STATUS_WAIT_S)
        except Exception:
            return None

    # ---- the run ----------------------------------------------------------
    def stop_requested(self) -> str | None:
        if self.stop_reason is not None:
            return self.stop_reason
        if self.settings.stop_file and self.settings.stop_path.exists():
            return "STOP file"
        return self.fatal()

    def fatal(self) -> str | None:
        """Why the run cannot go on by itself, if it cannot."""
        return self.engines_failed or self.trainer.fatal

    def check_stop_file(self) -> None:
        """UserError when a STOP file is there before the run (see "stop")."""
        if self.settings.stop_file and self.settings.stop_path.exists():
            raise UserError(f"{self.settings.stop_path} is there from before (a stop request no run took): "
                            "remove it to start the fleet")

    def run(self) -> FleetEnd:
        self.check_stop_file()
        self.start_services()
        self.publisher.start()
        due = {"nodes": 0.0, "status": 0.0}
        while (reason := self.stop_requested()) is None:
            now = time.monotonic()
            if now >= due["nodes"]:
                self.sync_nodes()
                due["nodes"] = now + NODES_EVERY_S
            self.publish_events()
            self.trainer.check()
            if now >= due["status"]:
                self.gather()
                due["status"] = now + STATUS_EVERY_S
            time.sleep(0.2)
        self.say(f"stopping ({reason}): the games in flight finish, then every spool is uploaded")
        return self.shutdown()

    def shutdown(self) -> FleetEnd:
        self.trainer.stop()
        if self.publisher is not None:
            self.publisher.stop()
            self.publish_events()
        refs = {h.stop.remote(): name for name, (_, h) in self.engines.items()}
        ready, _ = (self.ray.wait(list(refs), num_returns=len(refs), timeout=STOP_TIMEOUT_S + 30)
                    if refs else ([], []))
        for ref in ready:
            try:
                st = self.latest[refs[ref]] = self.ray.get(ref)
            except Exception:
                continue
            self.ledger.note(refs[ref], st.engine)
        left = sum(st.spool_files for st in self.latest.values())
        ingest = self._ingest_stats()
        for handle in [h for _, h in self.engines.values()] + [self.ingest, self.store]:
            if handle is not None:
                self._kill(handle)
        final = self.with_figures()
        self.view.close(final, ingest=ingest, done=self.ledger.done, spool_left=left)
        self.remove_stop_file()
        return FleetEnd(final, ingest, self.ledger.done.lost, left, self.generation, self.fatal())

    def remove_stop_file(self) -> None:
        """The run ended: its STOP file, if any, goes (see "stop")."""
        if self.settings.stop_file and self.settings.stop_path.exists():
            self.settings.stop_path.unlink(missing_ok=True)
            self.say(f"removed {self.settings.stop_path}")
