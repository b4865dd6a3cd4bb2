"""The fleet driver without a cluster: its loop over Ray calls answered in this
process (``FakeRay``), the publisher, the ledger of engines that are gone,
the STOP file, each node's own spool folder, and an engine that waits for
the workspace's network."""
from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from pathlib import Path

import pytest

from sayuri_async.chunkfile import peek_chunk
from sayuri_async.cluster.actor import ActorStatus, EngineActor
from sayuri_async.cluster.ingest import IngestStats
from sayuri_async.cluster.ledger import Ledger
from sayuri_async.cluster.publisher import Publisher, holds_networks
from sayuri_async.cluster.spool import SPOOL_FOLDER, node_spool_root
from sayuri_async.cluster.store import WeightStore
from sayuri_async.cluster.view import SPOOL_BEHIND, ClusterView
from sayuri_async.infer.stats import Counters
from sayuri_async.net.identity import file_sha256
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.selfplay.writer import ChunkWriter
from sayuri_async.usererror import UserError

from test_cluster_units import LocalLinks, wait_for
from test_follow_weights import save_net, small_cfg


def status(node: str, pid: int, finished: int, written: int | None = None, live: int = 0, spool: int = 0,
           t: float = 1.0) -> ActorStatus:
    from sayuri_async.selfplay.game import LiveGame

    engine = Status(t=t, elapsed=t, loop_cpu_s=0.0, counters=Counters(), settings=EngineSettings(), pid=pid,
                    node=node, finished=finished, games_written=finished if written is None else written,
                    chunks=finished if written is None else written, games=[LiveGame(7) for _ in range(live)])
    return ActorStatus(node=node, actor=f"engine-{node}-{pid}", gpu="", engine=engine, spool_files=spool)


def totals(text: str) -> list[int]:
    return [int(line.split("games")[1].split()[0]) for line in text.splitlines() if line.startswith("total: ")]


# ---- item: lost games and totals that never shrink -----------------------------------------------------------
def test_a_node_that_leaves_loses_its_games_waiting_for_a_chunk_and_the_totals_keep_its_games():
    ledger, out = Ledger(), io.StringIO()
    view = ClusterView(every=0.0, stream=out)
    a, b = status("box-a", 1, finished=6), status("box-b", 2, finished=10, written=7, live=2)
    for st in (a, b):
        ledger.note(st.actor, st.engine)
    view.update([a, b], done=ledger.done)
    assert ledger.gone(b.actor) == 5  # 2 in progress, 3 finished but waiting for their chunk
    view.update([a], done=ledger.done)
    d = ledger.done
    assert (d.lost_in_progress, d.lost_waiting, d.games) == (2, 3, 10)
    a2 = status("box-a", 3, finished=1)  # Ray restarted box-a's engine: a new life, from 0
    ledger.note(a.actor, a2.engine)
    view.update([a2], done=ledger.done)
    assert totals(out.getvalue()) == [16, 16, 17]  # never less than before
    view.close([a2], ingest=IngestStats(written=20, chunks=14, games=14), done=ledger.done)
    text = out.getvalue()
    assert "games 17  positions" in text and "engines gone (nodes that left, engines restarted): games 16" in text
    assert "games lost with engines that went: 5 (2 in progress, 3 waiting for their chunk)" in text
    assert "14 game(s) in 14 chunk(s)" in text


def test_the_writer_counts_the_games_whose_files_are_all_written(tmp_path):
    from test_selfplay import _records

    w = ChunkWriter(tmp_path, "simple-v1", 25, 2, "t", "random")
    for r in _records(3):
        w.add(r)
    assert w.games_written == 2  # the third waits for a second game of its chunk
    w.close()
    assert w.games_written == 3


# ---- item: spools on each node, and spools that fall behind ---------------------------------------------------
def test_the_default_spool_is_in_the_temporary_folder_of_the_node_where_the_engine_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "ray-tmp"))
    assert node_spool_root() == tmp_path / "ray-tmp" / SPOOL_FOLDER
    monkeypatch.delenv("RAY_TMPDIR")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmpdir"))  # as TMPDIR=... gives
    assert node_spool_root() == tmp_path / "tmpdir" / SPOOL_FOLDER
    from sayuri_async.cluster.cli import build_parser
    from sayuri_async.cluster.fleet import FleetSettings

    args = build_parser().parse_args(["run", "--address", "a:1", "--config", "c", "--workspace", "w"])
    assert args.spool is None  # no path of the driver's machine is handed to the nodes
    assert FleetSettings(workspace=tmp_path, selfplay=small_cfg(tmp_path)).spool is None


def test_a_spool_that_falls_behind_is_said_with_ingests_rate_and_shown_per_node(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("sayuri_async.cluster.view.time.monotonic", lambda: clock[0])
    out = io.StringIO()
    view = ClusterView(every=0.0, stream=out)
    view.update([], waiting=1, starting=2)  # no figures yet: the fleet line all the same
    assert "fleet: 3 engine(s) (2 starting, 1 waiting for the network), published generation 0" in out.getvalue()
    for i, waiting in enumerate((10, 60, SPOOL_BEHIND + 40, SPOOL_BEHIND + 90, 5)):
        clock[0] += 1.0
        view.update([status("box-a", 1, finished=i, spool=waiting, t=clock[0])],
                    ingest=IngestStats(written=18 * i), generation=1)
    text = out.getvalue()
    assert "node box-a's spools fall behind: 140 file(s) waiting, Ingest at 18.0 file(s)/s" in text, text
    assert text.count("fall behind") == 1 and "node box-a's spools caught up: 5 file(s) waiting" in text, text
    assert "spools 190 file(s) waiting, ingest 18.0 file(s)/s: 54 file(s)" in text, text
    assert any(line.startswith("  box-a ") and "spool  190" in line for line in text.splitlines()), text


# ---- item: publication off the driver's loop, newest good network ----------------------------------------------
def test_the_publisher_publishes_the_newest_good_network_and_refuses_a_bad_one(tmp_path):
    weights = tmp_path / "weights"
    weights.mkdir()
    assert not holds_networks(weights)
    good = save_net(weights / "net-s000000010.safetensors", 3)
    bad = weights / "net-s000000020.safetensors"
    bad.write_bytes(b"not a network")
    os.utime(bad, ns=(good.stat().st_mtime_ns + 10**9,) * 2)
    assert holds_networks(weights)
    store = WeightStore()
    pub = Publisher(weights, store)
    pub.look()  # the newest is refused: the one before it starts the run
    events = pub.events()
    assert store.current().name == "net-s000000010" and pub.generation == 1, events
    assert events[0].startswith("refused net-s000000020.safetensors") and events[1].startswith("published"), events
    pub.look()
    assert pub.events() == []  # nothing new
    newer = save_net(weights / "net-s000000030.safetensors", 4, later=5)
    pub.look()
    assert store.current().name == "net-s000000030" and pub.generation == 2
    restarted = pub.store = WeightStore()  # Ray restarted the store: empty
    pub.look()
    assert restarted.current().sha256 == file_sha256(newer)


class _Ref:
    def __init__(self, fn, args, kwargs) -> None:
        try:
            self.value, self.error = fn(*args, **kwargs), None
        except Exception as e:
            self.value, self.error = None, e


class _Method:
    def __init__(self, fn) -> None:
        self.fn = fn

    def remote(self, *args, **kwargs) -> _Ref:
        return _Ref(self.fn, args, kwargs)


class _Handle:
    def __init__(self, obj) -> None:
        self.obj = obj

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self.obj, name))


class _ActorClass:
    def __init__(self, ray: "FakeRay", cls) -> None:
        self.ray, self.cls, self.name = ray, cls, None

    def options(self, name=None, **kwargs) -> "_ActorClass":
        self.name = name
        return self

    def remote(self, *args, **kwargs) -> _Handle:
        if self.name not in self.ray.actors:
            self.ray.actors[self.name] = _Handle(self.cls(*args, **kwargs))
        return self.ray.actors[self.name]


class FakeEngine:
    """An engine actor that plays nothing: one finished game a status."""

    def __init__(self, cfg, name, node, spool, poll_s, wait_network=False) -> None:
        self.name, self.node, self.spool, self.wait_network, self.n = name, node, spool, wait_network, 0

    def status(self) -> ActorStatus:
        self.n += 1
        return status(self.node, 7, finished=self.n, t=float(self.n))

    def stop(self, timeout_s: float = 0.0) -> ActorStatus:
        return self.status()


class FakeRay:
    """Ray's calls as the driver makes them, answered in this process."""
    NODE = "ab" * 28  # a node id: 28 bytes in hex

    def __init__(self) -> None:
        self.actors: dict[str, _Handle] = {}

    def remote(self, cls) -> _ActorClass:
        return _ActorClass(self, FakeEngine if cls is EngineActor else cls)

    def get(self, ref, timeout=None):
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        if ref.error is not None:
            raise ref.error
        return ref.value

    def wait(self, refs, num_returns, timeout):
        return refs, []

    def nodes(self) -> list[dict]:
        return [{"Alive": True, "NodeID": self.NODE, "NodeManagerHostname": "box", "Resources": {"CPU": 2}}]

    def get_runtime_context(self):
        return type("Context", (), {"get_node_id": lambda _self: self.NODE})()

    def kill(self, handle, no_restart=True) -> None:
        pass


def fleet_of(ws: Path, out: io.StringIO, said: list[str]):
    from sayuri_async.cluster.fleet import Fleet, FleetSettings

    settings = FleetSettings(workspace=ws, selfplay=small_cfg(ws / "unused"), poll_s=0.2)
    return Fleet(settings, FakeRay(), ClusterView(every=0.0, stream=out), say=said.append)


def run_in_thread(fleet):
    box: dict = {}

    def body():
        try:
            box["end"] = fleet.run()
        except BaseException as e:
            box["error"] = e

    th = threading.Thread(target=body, daemon=True)
    th.start()
    return th, box


def wait_until(cond, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_the_view_goes_on_while_a_network_loads_and_the_run_removes_its_stop_file(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="the driver places actors with Ray's scheduling strategies")
    from sayuri_async.cluster import publisher

    loading, release = threading.Event(), threading.Event()
    real_check = publisher.check_weights

    def slow_check(path):  # a first network that takes long to load (torch's first import)
        loading.set()
        assert release.wait(60)
        return real_check(path)

    monkeypatch.setattr(publisher, "check_weights", slow_check)
    ws = tmp_path / "ws"
    (ws / "weights").mkdir(parents=True)
    save_net(ws / "weights" / "net-s000000010.safetensors", 3)
    out, said = io.StringIO(), []
    fleet = fleet_of(ws, out, said)
    th, box = run_in_thread(fleet)
    try:
        assert loading.wait(60), out.getvalue()
        shown = out.getvalue().count("fleet: ")
        wait_until(lambda: out.getvalue().count("fleet: ") >= shown + 3, 30,
                   f"the view stopped while the network loaded: {out.getvalue()}")
        assert "published net-" not in out.getvalue()
    finally:
        release.set()
    wait_until(lambda: "published net-s000000010" in out.getvalue(), 60, out.getvalue())
    # the workspace held a network: the engines were told to wait for it; nothing said about starting from nothing
    assert [h.obj.wait_network for n, h in fleet.ray.actors.items() if n.startswith("engine-")] == [True]
    assert "starting from nothing" not in out.getvalue()
    (ws / "STOP").touch()
    th.join(60)
    assert not th.is_alive() and "end" in box, box
    assert not (ws / "STOP").exists() and f"removed {ws / 'STOP'}" in said, said
    assert "stopping (STOP file)" in " ".join(said)


def test_a_stop_file_from_before_refuses_the_start_in_one_line_and_an_empty_workspace_says_so(tmp_path):
    pytest.importorskip("ray", reason="the driver places actors with Ray's scheduling strategies")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "STOP").touch()
    out, said = io.StringIO(), []
    fleet = fleet_of(ws, out, said)
    with pytest.raises(UserError) as e:
        fleet.run()
    assert str(e.value) == f"{ws / 'STOP'} is there from before (a stop request no run took): remove it to start the fleet"
    assert fleet.ray.actors == {}  # nothing started
    (ws / "STOP").unlink()
    fleet = fleet_of(ws, out, said)
    th, box = run_in_thread(fleet)
    wait_until(lambda: "fleet: " in out.getvalue(), 30, out.getvalue())
    (ws / "STOP").touch()
    th.join(60)
    assert "end" in box, box
    lines = [line for line in out.getvalue().splitlines() if "starting from nothing" in line]
    assert len(lines) == 1 and f"no network in {ws / 'weights'}" in lines[0], out.getvalue()
    assert [h.obj.wait_network for n, h in fleet.ray.actors.items() if n.startswith("engine-")] == [False]


# ---- item: a run that continues a network plays no game of the random one --------------------------------------
@pytest.mark.slow
def test_an_engine_told_to_wait_plays_no_game_before_the_fleets_network(tmp_path):
    ws = tmp_path / "ws"
    links = LocalLinks(ws)
    cfg = small_cfg(tmp_path / "ignored", batch_size=4)
    actor = EngineActor(cfg, "engine-test-0", "box-1", str(tmp_path / "spool"), poll_s=0.2, links=links,
                        wait_network=True)
    try:
        time.sleep(3.0)
        st = actor.status()
        assert st.waiting_network and st.engine is None and not st.playing, st
        assert links.ingest.written == 0
        net = save_net(tmp_path / "net-s000000010.safetensors", 3)
        data = net.read_bytes()
        links.store.publish("net-s000000010", hashlib.sha256(data).hexdigest(), data)
        wait_for(lambda: links.ingest.chunks >= 2, 240, "two chunks uploaded", actor)
    finally:
        final = actor.stop(timeout_s=120)
    assert not final.waiting_network and final.engine_error is None
    chunks = sorted((ws / "data").glob("*.npz"))
    assert chunks
    for p in chunks:
        assert [n["name"] for n in peek_chunk(p)[1]["networks"]] == ["net-s000000010"], p


def test_an_engine_stopped_while_it_waits_ends_at_once(tmp_path):
    links = LocalLinks(tmp_path / "ws")
    actor = EngineActor(small_cfg(tmp_path / "ignored"), "engine-test-0", "box-1", str(tmp_path / "spool"),
                        poll_s=0.2, links=links, wait_network=True)
    t0 = time.monotonic()
    final = actor.stop(timeout_s=30)
    assert time.monotonic() - t0 < 10 and final.engine is None and not final.playing
