"""The fleet driver: engines on every node, Ingest and WeightStore, the trainer, publication.

Vocabulary
----------
FleetSettings  what a run needs: the workspace, the engines' self-play
            config, the training config (None: the trainer runs elsewhere and
            only its exports are published), the spool root on each node,
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
            the games it had in progress (lost) and its engines are dropped.
            An engine whose construction raised (Ray does not restart it) is
            dropped and said once with its error's last line; when no engine
            is left that way, the run ends with that error (``FleetEnd.error``).
trainer     ``sayuri-async train --follow`` (``--auto-resume``) on the
            workspace as a subprocess of the driver, ending with it; it
            reads ``<workspace>/data``, trains in ``<workspace>/train`` and
            publishes its exports into ``<workspace>/weights``. It is started
            again when it fails; a usage error (exit 2) ends the run; once it
            ends by itself (its ``--steps`` reached) self-play goes on.
publication every ``PUBLISH_EVERY_S`` the newest good file of
            ``<workspace>/weights`` (``selfplay/follow.py``'s rule and check)
            goes to WeightStore, which the engines poll; a store that Ray
            restarted (empty) gets it again.
stop        SIGINT, SIGTERM or a file ``<workspace>/STOP``: the trainer is
            stopped, every engine ends its games in flight and uploads its
            spool, then the fleet's actors are ended. Only whole files are
            left, on the nodes and in the workspace. ``run()`` returns a
            ``FleetEnd``.
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
from ..net.identity import network_name
from ..selfplay.config import SelfplayConfig
from ..selfplay.follow import Candidate, check_weights, newest_weights, one_line
from . import NAMESPACE
from .actor import DEFAULT_POLL_S, STOP_TIMEOUT_S, ActorStatus, EngineActor
from .ingest import INGEST_NAME, Ingest, IngestStats
from .store import STORE_NAME, WeightStore
from .view import ClusterView

NODES_EVERY_S = 2.0
PUBLISH_EVERY_S = 2.0
STATUS_EVERY_S = 1.0
STATUS_WAIT_S = 2.0
TRAINER_RESTART_S = 5.0
TRAINER_STOP_S = 60.0
Say = Callable[[str], None]


@dataclass
class FleetSettings:
    workspace: Path
    selfplay: SelfplayConfig
    spool: str
    train_config: str | None = None
    train_args: list[str] = field(default_factory=list)
    cpu_engines: int = 1
    cpu_device: str = "cpu"  # the engines' device on a node without GPUs: "cpu" or "model"
    poll_s: float = DEFAULT_POLL_S
    stop_file: bool = True

    @property
    def weights(self) -> Path:
        return self.workspace / "weights"


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
        self.lost_games = 0
        self.published: Candidate | None = None
        self.generation = 0
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
                                     ).remote(cfg, name, node.label, self.settings.spool, self.settings.poll_s)
                self.engines[name] = (node_id, handle)
            self.view.event(f"node {node.label} joined: {slots} engine(s)"
                            + (f" on {node.gpus} GPU(s)" if node.gpus else " on the CPU"))

    def _node_left(self, node: Node) -> None:
        lost = 0
        for name in [n for n, (nid, _) in self.engines.items() if nid == node.node_id]:
            _, handle = self.engines.pop(name)
            st = self.latest.pop(name, None)
            lost += len(st.engine.games) if st is not None and st.engine is not None else 0
            self._kill(handle)
        self.lost_games += lost
        self.view.event(f"node {node.label} left: {lost} game(s) in progress lost")

    def _kill(self, handle) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except Exception:  # already gone (with its node)
            pass

    # ---- publication --------------------------------------------------------
    def publish_new(self) -> None:
        if self.published is not None and self.ray.get(self.store.current.remote()) is None:
            self.published = None  # the store was restarted empty: publish the newest again
        cand = newest_weights(self.settings.weights)
        if cand is None or cand == self.published:
            return
        self.published = cand
        try:
            network = check_weights(cand.path)
            data = cand.path.read_bytes()
        except Exception as e:  # a copy in progress, a damaged file: the engines keep their network
            self.view.event(f"refused {cand.path.name}: {one_line(e)}")
            return
        self.generation = self.ray.get(self.store.publish.remote(network_name(cand.path), network.sha256, data))
        self.view.event(f"published {network.label} as generation {self.generation}")

    # ---- statuses -------------------------------------------------------------
    def gather(self) -> None:
        refs = {h.status.remote(): name for name, (_, h) in self.engines.items()}
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=STATUS_WAIT_S) if refs else ([], [])
        for ref in ready:
            try:
                self.latest[refs[ref]] = self.ray.get(ref)
            except Exception as e:  # restarting, or its node is leaving: its last status stands
                if getattr(e, "actor_init_failed", False):
                    self._engine_failed(refs[ref], e)
        self.view.update(self.with_figures(), ingest=self._ingest_stats(), generation=self.generation)

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
        if self.settings.stop_file and (self.settings.workspace / "STOP").exists():
            return "STOP file"
        return self.fatal()

    def fatal(self) -> str | None:
        """Why the run cannot go on by itself, if it cannot."""
        return self.engines_failed or self.trainer.fatal

    def run(self) -> FleetEnd:
        self.start_services()
        due = {"nodes": 0.0, "publish": 0.0, "status": 0.0}
        while (reason := self.stop_requested()) is None:
            now = time.monotonic()
            if now >= due["nodes"]:
                self.sync_nodes()
                due["nodes"] = now + NODES_EVERY_S
            if now >= due["publish"]:
                self.publish_new()
                due["publish"] = now + PUBLISH_EVERY_S
            self.trainer.check()
            if now >= due["status"]:
                self.gather()
                due["status"] = now + STATUS_EVERY_S
            time.sleep(0.2)
        self.say(f"stopping ({reason}): the games in flight finish, then every spool is uploaded")
        return self.shutdown()

    def shutdown(self) -> FleetEnd:
        self.trainer.stop()
        refs = {h.stop.remote(): name for name, (_, h) in self.engines.items()}
        ready, _ = (self.ray.wait(list(refs), num_returns=len(refs), timeout=STOP_TIMEOUT_S + 30)
                    if refs else ([], []))
        for ref in ready:
            try:
                self.latest[refs[ref]] = self.ray.get(ref)
            except Exception:
                pass
        left = sum(st.spool_files for st in self.latest.values())
        ingest = self._ingest_stats()
        for handle in [h for _, h in self.engines.values()] + [self.ingest, self.store]:
            if handle is not None:
                self._kill(handle)
        final = self.with_figures()
        self.view.close(final, ingest=ingest, lost_games=self.lost_games, spool_left=left)
        return FleetEnd(final, ingest, self.lost_games, left, self.generation, self.fatal())
