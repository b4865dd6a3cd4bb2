"""The records an engine reports and the views read: typed, so that a
renamed figure fails where it is read instead of reading as 0.

Vocabulary
----------
EngineSettings  the engine's live values (what the controls change, and
                what the verdict reads): ``batch_size``, ``parallel_games``,
                ``timeout_ms``, ``paused``, ``device``, ``leaves_per_await``,
                ``batches_in_flight``, ``max_batch_size`` (the largest
                batch the backend is built for: the keys stop there).
Status          ``Engine.status()`` (``selfplay/engine.py``, whose
                vocabulary says what each field means); ``report.aggregate``
                adds several processes' up into one (``loops``: how many,
                ``procs``: each one's ``(t, loop_cpu_s)`` by ``proc``,
                ``network``: the networks playing now, joined,
                ``networks``: every one played, in order).
proc            a process's name in an aggregate: its pid, or
                ``<node>:<pid>`` for an engine of a fleet (``node`` set by
                ``cluster/actor.py``), so that processes of several machines
                stay apart.
crossing        a Status crosses process boundaries as it is, pickled: through
                the engine processes' queue (``runner.py``) and, inside an
                ``ActorStatus``, from a Ray actor to the fleet's driver
                (``cluster/actor.py``). Every field is a plain value, a numpy
                array or one of these records, so no conversion is needed;
                JSON is only written from figures (``Rates.as_json``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..infer.stats import Counters

if TYPE_CHECKING:  # (game.py loads the search; the views need not)
    from .game import LiveGame


@dataclass
class EngineSettings:
    batch_size: int = 1
    parallel_games: int = 1
    timeout_ms: float | None = 0.0
    paused: bool = False
    device: str = "cpu"
    leaves_per_await: int = 1
    batches_in_flight: int = 2
    max_batch_size: int = 1024


@dataclass
class Status:
    t: float  # time.perf_counter() of the process that made it
    elapsed: float  # seconds since the engine started
    loop_cpu_s: float
    counters: Counters
    settings: EngineSettings
    warm_at: float | None = None
    device_rates: dict[int, float] = field(default_factory=dict)
    device_best: float = 0.0
    draining: bool = False
    games_unstarted: int | None = None  # games of the run not started yet; None: no end (num_games 0)
    games: list[LiveGame] = field(default_factory=list)
    finished: int = 0
    chunks: int = 0
    positions_written: int = 0
    games_written: int = 0  # finished games whose files are all written (``writer.py``, "written")
    pid: int = 0
    node: str = ""  # the fleet node of the engine; "" on one machine
    network: str = ""  # the label of the network playing now
    networks: list[str] = field(default_factory=list)  # labels of the networks played, in order
    network_error: str | None = None  # why the last network offered was refused
    loops: int = 1  # engine processes added up in it
    procs: dict[str, tuple[float, float]] = field(default_factory=dict)  # proc -> (t, loop_cpu_s)
    proc_cpu_s: float = 0.0  # CPU time of the whole process (every thread: the loop, the backend's, the writer's)

    @property
    def proc(self) -> str:
        """The process's name in an aggregate (see the vocabulary)."""
        return f"{self.node}:{self.pid}" if self.node else str(self.pid)
