"""The cluster mode's pieces without a cluster: Ingest, WeightStore, the
spool and its uploader, an EngineActor in this process with its services
as plain objects, the one-line answers, and Ray staying out of one-machine
runs."""
from __future__ import annotations

import fcntl
import hashlib
import io
import os
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sayuri_async.chunkfile import peek_chunk, read_chunk
from sayuri_async.cluster.actor import ActorStatus, EngineActor
from sayuri_async.cluster.ingest import EXISTS, WRITTEN, Ingest, IngestStats
from sayuri_async.cluster.ledger import Done
from sayuri_async.cluster.nodes import (AUTH_MODE, WORKER_NICENESS, head_command, join_command, mismatch_line, ray_env,
                                        use_one_auth_mode)
from sayuri_async.cluster import spool as spool_module
from sayuri_async.cluster.spool import LOCK, Spool, Uploader, finished_files
from sayuri_async.cluster.store import WeightStore
from sayuri_async.cluster.view import ClusterView
from sayuri_async.infer.stats import Counters
from sayuri_async.selfplay.report import KINDS
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.fileio import host_name
from sayuri_async.net.identity import file_sha256

from test_follow_weights import save_net, small_cfg

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def test_ingest_writes_each_name_once_and_whole(tmp_path):
    ingest = Ingest(str(tmp_path / "ws"))
    assert ingest.put("data", "chunk-000000-a-p0-1.npz", b"first") == WRITTEN
    assert ingest.put("data", "chunk-000000-a-p0-1.npz", b"second") == EXISTS  # a retried put
    assert (tmp_path / "ws" / "data" / "chunk-000000-a-p0-1.npz").read_bytes() == b"first"
    assert ingest.put("sgf", "game-1.sgf", b"(;)") == WRITTEN
    for kind, name in (("data", "../escape.npz"), ("data", ".hidden.tmp"), ("checkpoints", "x.pt"), ("data", "a/b")):
        with pytest.raises(ValueError):
            ingest.put(kind, name, b"x")
    assert ingest.stats() == IngestStats(written=2, duplicates=1, bytes=8)
    assert sorted(p.name for p in (tmp_path / "ws").rglob("*") if p.is_file()) == \
        ["chunk-000000-a-p0-1.npz", "game-1.sgf"]


def test_the_weight_store_checks_bytes_and_counts_generations():
    store = WeightStore()
    assert store.current() is None and store.fetch(1) is None
    a, b = b"net a", b"net b"
    with pytest.raises(ValueError, match="sha256"):
        store.publish("a", hashlib.sha256(b).hexdigest(), a)
    assert store.publish("a", hashlib.sha256(a).hexdigest(), a) == 1
    assert store.publish("a", hashlib.sha256(a).hexdigest(), a) == 1  # the same network again
    assert store.publish("b", hashlib.sha256(b).hexdigest(), b) == 2
    assert store.current().name == "b" and store.fetch(2) == b and store.fetch(1) is None


def test_the_uploader_deletes_only_acknowledged_files_and_adopts_dead_spools(tmp_path):
    root = tmp_path / "spool"
    dead = root / "engine-dead-0"
    (dead / "data").mkdir(parents=True)
    (dead / LOCK).touch()  # nobody holds it: its actor died
    (dead / "data" / "chunk-old.npz").write_bytes(b"old")
    alive = root / "engine-alive-0"
    (alive / "data").mkdir(parents=True)
    (alive / "data" / "chunk-alive.npz").write_bytes(b"alive")
    fd = os.open(alive / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live actor of the node (an open file of its own: flock is per open file)
    spool = Spool(root, "engine-me-0")
    (spool.folder / "data" / "chunk-mine.npz").write_bytes(b"mine")
    (spool.folder / "data" / ".chunk-half.npz.1-abcdef01-abcdef01.tmp").write_bytes(b"half")
    got: dict[str, bytes] = {}
    failing = [True]

    def put(kind, name, data):
        if failing[0]:
            raise ConnectionError("ingest restarting")
        got[name] = data
        return WRITTEN

    up = Uploader(spool, put)
    assert not up.upload_pass() and up.pending() == 1 and "ingest restarting" in up.error
    failing[0] = False
    assert up.upload_pass() and up.error is None
    assert got == {"chunk-mine.npz": b"mine", "chunk-old.npz": b"old"}  # not the live actor's, not the temp
    assert not dead.exists() and (alive / "data" / "chunk-alive.npz").exists() and up.uploaded == 2
    os.close(fd)
    spool.close()


def test_a_spool_file_removed_while_it_is_listed_is_skipped_not_an_error(tmp_path, monkeypatch):
    """The uploader thread deletes acknowledged files while status() counts them."""
    spool = Spool(tmp_path / "spool", "engine-me-0")
    for name in ("chunk-a.npz", "chunk-b.npz"):
        (spool.folder / "data" / name).write_bytes(b"x")
    real_scandir = os.scandir

    def scandir_then_remove(path):
        entries = list(real_scandir(path))
        gone = Path(path) / "chunk-a.npz"
        if gone.exists():
            gone.unlink()  # removed after the listing, before its stat
        return iter(entries)

    monkeypatch.setattr(spool_module.os, "scandir", scandir_then_remove)
    assert [p.name for _, p in finished_files(spool.folder)] == ["chunk-b.npz"]
    spool.close()


def test_the_store_follower_takes_each_new_network_once_even_from_a_restarted_store(tmp_path):
    from sayuri_async.cluster.actor import StoreFollower

    links = LocalLinks(tmp_path / "ws")
    follower = StoreFollower(links, tmp_path / "networks", poll_s=1.0)
    assert follower.poll() is None  # nothing published yet
    a, b = b"network a", b"network b"
    links.store.publish("a", hashlib.sha256(a).hexdigest(), a)
    path, network = follower.poll()
    assert path.read_bytes() == a and network.name == "a" and follower.generation == 1
    assert follower.poll() is None
    links.store = WeightStore()  # Ray restarted the store: empty, then the driver publishes again
    links.store.publish("a", hashlib.sha256(a).hexdigest(), a)
    assert follower.poll() is None and follower.generation == 1  # the same network: nothing to do
    links.store = WeightStore()
    links.store.publish("b", hashlib.sha256(b).hexdigest(), b)  # generation 1 again, another network
    path, network = follower.poll()
    assert path.read_bytes() == b and network.name == "b"


def test_version_mismatch_becomes_one_line():
    out = ("RuntimeError: Version mismatch: The cluster was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n"
           "This process on node 10.0.0.2 was started with:\n    Ray: 2.60.0\n    Python: 3.11.2\n")
    line = mismatch_line(out)
    assert "\n" not in line and "Python 3.11.7" in line and "Python 3.11.2" in line and "patch" in line
    assert mismatch_line("Ray runtime started.") is None


def test_head_and_join_bind_to_the_address_named_with_the_projects_defaults():
    head = head_command("10.0.0.1", 6379, 4, None, block=False)
    join = join_command("10.0.0.1:6379", "10.0.0.2", None, 1)
    for cmd, bind in ((head, "10.0.0.1"), (join, "10.0.0.2")):
        assert cmd[cmd.index("--node-ip-address") + 1] == bind
        assert cmd[cmd.index("--object-store-memory") + 1] == "1000000000" and "--disable-usage-stats" in cmd
    assert head[head.index("--include-dashboard") + 1] == "false" and "--include-dashboard" not in join  # head only
    assert "--block" in join and "--block" not in head and head[head.index("--num-cpus") + 1] == "4"


class LocalLinks:
    """The fleet's services as plain objects in this process."""

    def __init__(self, workspace: Path) -> None:
        self.ingest, self.store = Ingest(str(workspace)), WeightStore()

    def put(self, kind, name, data):
        return self.ingest.put(kind, name, data)

    def current(self):
        return self.store.current()

    def fetch(self, generation):
        return self.store.fetch(generation)


def wait_for(cond, seconds: float, what: str, actor: EngineActor):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds}s; status {actor.status()}")


@pytest.mark.slow
def test_an_engine_actor_uploads_its_chunks_and_plays_a_published_network(tmp_path):
    ws = tmp_path / "ws"
    links = LocalLinks(ws)
    cfg = small_cfg(tmp_path / "ignored", batch_size=4)
    actor = EngineActor(cfg, "engine-test-0", "box-1", str(tmp_path / "spool"), poll_s=0.2, links=links)
    try:
        wait_for(lambda: links.ingest.written >= 2, 240, "two chunks uploaded", actor)
        net = save_net(tmp_path / "net-s000000010.safetensors", 3)
        data = net.read_bytes()
        assert links.store.publish("net-s000000010", hashlib.sha256(data).hexdigest(), data) == 1
        wait_for(lambda: engine_of(actor).network.startswith("net-s000000010@"), 120,
                 "the published network playing", actor)
        mark = engine_of(actor).finished + len(engine_of(actor).games)
        wait_for(lambda: engine_of(actor).finished >= mark + 1, 240, "a game of the new network", actor)
        view_rows_per_node_and_gpu(actor)
    finally:
        final = actor.stop(timeout_s=120)
    assert final.engine_error is None and final.spool_files == 0 and final.playing is False
    assert final.engine.proc == f"box-1:{os.getpid()}" and final.generation == 1
    chunks = sorted((ws / "data").glob("*.npz"))
    assert len(chunks) == links.ingest.written - len(list((ws / "sgf").glob("*"))) >= 3
    names = set()
    for p in chunks:
        read_chunk(p)  # whole and readable
        meta = peek_chunk(p)[1]
        assert meta["host"] and host_name() in p.name
        names |= {n["name"] for n in meta["networks"]}
    assert {"random", "net-s000000010"} <= names
    assert file_sha256(tmp_path / "spool" / "networks" / "net-s000000010.safetensors") == file_sha256(net)
    assert not [p for p in (tmp_path / "spool").rglob("*.npz")]  # every chunk left the spool


@pytest.mark.slow
def test_an_engine_actor_on_the_device_model_plays_and_follows_no_network(tmp_path):
    ws = tmp_path / "ws"
    links = LocalLinks(ws)
    data = save_net(tmp_path / "net-s000000010.safetensors", 3).read_bytes()
    links.store.publish("net-s000000010", hashlib.sha256(data).hexdigest(), data)  # not for a modelled device
    cfg = small_cfg(tmp_path / "ignored", batch_size=4, device="model", device_model="6b96c", board_sizes=[9])
    actor = EngineActor(cfg, "engine-test-0", "box-1", str(tmp_path / "spool"), poll_s=0.2, links=links)
    try:
        wait_for(lambda: links.ingest.written >= 1, 240, "a chunk uploaded", actor)
    finally:
        final = actor.stop(timeout_s=120)
    assert final.engine_error is None and final.network_fetch_error is None and final.generation == 0
    assert final.engine.network.startswith("random") and final.engine.network_error is None
    assert not (tmp_path / "spool" / "networks").exists() or not list((tmp_path / "spool" / "networks").iterdir())


def engine_of(actor: EngineActor) -> Status:
    """The engine's latest status (an empty one before the first)."""
    return actor.status().engine or Status(t=0.0, elapsed=0.0, loop_cpu_s=0.0, counters=Counters(),
                                           settings=EngineSettings())


def on_box_2(st: ActorStatus) -> ActorStatus:
    """``st`` as if an engine of a second node, on its GPU 3, had sent it."""
    return replace(st, node="box-2", gpu="3", engine=replace(st.engine, node="box-2", pid=1))


def view_rows_per_node_and_gpu(actor: EngineActor) -> None:
    """The live view of two nodes, one of them with a GPU: totals with the
    one-machine verdict, a row per node and per GPU, a node's departure."""
    out = io.StringIO()
    view = ClusterView(every=0.0, stream=out)
    for _ in range(8):
        st = actor.status()
        view.update([st, on_box_2(st)], ingest=IngestStats(written=5), generation=1)
        time.sleep(0.3)
    text = out.getvalue()
    assert "total: [" in text and "fleet: 2 engine(s), published generation 1" in text, text
    assert "  box-1 " in text and "  box-2 " in text and "  box-2/gpu3 " in text, text
    verdicts = [line.rsplit("| ", 1)[-1] for line in text.splitlines() if "box-1 " in line and "| " in line]
    assert verdicts and all(v in KINDS for v in verdicts), text
    tui_text = tui_screen([actor.status(), on_box_2(actor.status())])
    assert "total: [" in tui_text and "box-2/gpu3" in tui_text and "node box-2 joined" in tui_text, tui_text
    view.update([actor.status()])  # box-2 left: its rows go, the totals start again
    assert set(view.groups) == {"total", "box-1"}
    view.close([actor.status()], ingest=IngestStats(written=5, duplicates=1, bytes=10), done=Done(lost_in_progress=2))
    assert "games lost with engines that went: 2 (2 in progress, 0 waiting for their chunk)" in out.getvalue()


def tui_screen(statuses: list[ActorStatus]) -> str:
    """What the rich view draws for these statuses (three updates apart)."""
    from rich.console import Console

    from sayuri_async.cluster.tui import ClusterTui

    tui = ClusterTui(console=Console(file=io.StringIO(), width=240, force_terminal=False))
    tui.event("node box-2 joined: 1 engine(s) on 1 GPU(s)")
    for _ in range(3):
        tui.update(statuses, ingest=IngestStats(written=5), generation=1)
        time.sleep(0.3)
    screen = Console(file=io.StringIO(), width=240, record=True)
    screen.print(tui.render())
    tui.close(statuses)
    return screen.export_text()


def _run_cli(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=ENV, cwd=ROOT, timeout=600)


def test_the_cluster_commands_without_ray_say_what_to_install_in_one_line(tmp_path, monkeypatch, capsys):
    from sayuri_async.cli import main

    config = tmp_path / "sp.toml"
    config.write_text("[selfplay]\nboard_sizes = [7]\n")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    for args in (["cluster", "run", "--address", "127.0.0.1:1", "--config", str(config),
                  "--workspace", str(tmp_path / "ws")],
                 ["cluster", "head", "--bind", "127.0.0.1"], ["cluster", "join", "127.0.0.1:1", "--bind", "127.0.0.1"]):
        status = main(args)
        lines = capsys.readouterr().err.strip().splitlines()
        assert status == 2, (args, lines)
        assert lines == ["sayuri-async cluster: the cluster mode needs Ray: pip install 'sayuri-async[cluster]'"], lines


def test_a_cluster_address_where_nothing_answers_is_one_line(tmp_path, capsys):
    pytest.importorskip("ray", reason="needs Ray (pip install 'sayuri-async[cluster]'): without it the command "
                                      "says what to install first")
    from sayuri_async.cli import main

    with socket.socket() as s:  # a port of this machine that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = str(ROOT / "configs" / "selfplay-9x9.toml")
    status = main(["cluster", "run", "--address", f"127.0.0.1:{port}", "--config", config,
                   "--workspace", str(tmp_path / "ws"), "--no-tui"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and f"--address 127.0.0.1:{port}: nothing answers there" in err[0], err


@pytest.mark.slow
def test_one_machine_self_play_never_imports_ray(tmp_path):
    config = tmp_path / "sp.toml"
    config.write_text("[selfplay]\nboard_sizes = [7]\nplayouts = 4\nparallel_games = 2\nbatch_size = 2\n"
                      "writer_process = false\n")
    code = """
        import sys
        from sayuri_async.cli import main
        import sayuri_async.loop.driver, sayuri_async.selfplay.runner
        status = main(sys.argv[1:])
        print("ray imported:", "ray" in sys.modules)
        sys.exit(status)
    """
    r = _run_cli(code, "selfplay", "--config", str(config), "--num-games", "1", "--out", str(tmp_path / "out"),
                 "--no-tui")
    assert r.returncode == 0, r.stderr
    assert "ray imported: False" in r.stdout


class DeadActor(Exception):
    """What ``ray.get`` raises for an engine: its ``__init__`` raised, or its process is restarting."""

    def __init__(self, text: str, init_failed: bool) -> None:
        super().__init__(text)
        self.actor_init_failed = init_failed


CREATION_ERROR = ("The actor died because of an error raised in its creation task, ray::engine-ab-0:EngineActor.__init__() "
                  "(pid=1, ip=127.0.0.1)\n  File \"actor.py\", line 194, in __init__\n    self.cfg = replace(cfg)\n"
                  "           ^^^^^^^^^^^^\nsayuri_async.configfile.Bad: follow_weights: answers as the random network\n")


class StatusRef:
    def __init__(self, answer) -> None:
        self.answer = answer


class FakeEngine:
    def __init__(self, answer) -> None:
        self.status = type("Method", (), {"remote": staticmethod(lambda: StatusRef(answer))})()


class FakeRay:
    def wait(self, refs, num_returns, timeout):
        return refs, []

    def get(self, ref):
        if isinstance(ref.answer, Exception):
            raise ref.answer
        return ref.answer


def test_an_engine_that_cannot_start_is_dropped_and_said_and_with_none_left_the_run_ends(tmp_path):
    from sayuri_async.cluster.fleet import Fleet, FleetSettings

    settings = FleetSettings(workspace=tmp_path / "ws", selfplay=small_cfg(tmp_path / "x"), spool=str(tmp_path / "sp"))
    out = io.StringIO()
    fleet = Fleet(settings, FakeRay(), ClusterView(every=1e9, stream=out), say=lambda text: None)
    restarting = DeadActor("The actor died unexpectedly before finishing this task.", init_failed=False)
    fleet.engines = {"engine-ab-0": ("ab", FakeEngine(DeadActor(CREATION_ERROR, init_failed=True))),
                     "engine-ab-1": ("ab", FakeEngine(restarting))}
    fleet.gather()
    assert list(fleet.engines) == ["engine-ab-1"]  # a restarting engine stays
    assert fleet.stop_requested() is None
    said = out.getvalue()
    assert "engine engine-ab-0 could not start: sayuri_async.configfile.Bad: follow_weights: answers as the random network" in said
    assert said.count("could not start") == 1

    fleet.engines["engine-ab-1"] = ("ab", FakeEngine(DeadActor(CREATION_ERROR, init_failed=True)))
    fleet.gather()
    assert fleet.engines == {}
    assert fleet.stop_requested() == "no engine could start: sayuri_async.configfile.Bad: follow_weights: answers as the random network"


@pytest.mark.slow
def test_the_fleets_trainer_follows_the_workspace_and_a_usage_error_ends_the_run(tmp_path, monkeypatch):
    from sayuri_async.cluster.fleet import FleetSettings, Trainer

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    bad = tmp_path / "train.toml"
    bad.write_text("[nonsense]\n")
    said: list[str] = []
    settings = FleetSettings(workspace=tmp_path / "ws", selfplay=small_cfg(tmp_path / "x"), spool=str(tmp_path / "sp"),
                             train_config=str(bad))
    settings.workspace.mkdir()
    trainer = Trainer(settings, said.append)
    cmd = trainer.command()
    assert cmd[cmd.index("--data") + 1] == str(settings.workspace / "data")
    assert cmd[cmd.index("--publish") + 1] == str(settings.weights)
    assert "--follow" in cmd and "--auto-resume" in cmd
    deadline = time.monotonic() + 300
    while trainer.fatal is None and time.monotonic() < deadline:
        trainer.check()
        time.sleep(0.2)
    assert trainer.fatal is not None and "usage error" in trainer.fatal and trainer.starts == 1, said
    assert "sayuri-async train:" in trainer.log_path().read_text()
    trainer.check()
    assert trainer.proc is None and trainer.starts == 1  # not started again


@pytest.mark.slow  # it starts two small Python processes as the trainer
def test_a_failed_trainer_is_started_again_and_one_that_finished_is_not(tmp_path, monkeypatch):
    from sayuri_async.cluster import fleet
    from sayuri_async.cluster.fleet import FleetSettings, Trainer

    monkeypatch.setattr(fleet, "TRAINER_RESTART_S", 0.0)
    settings = FleetSettings(workspace=tmp_path, selfplay=small_cfg(tmp_path / "x"), spool=str(tmp_path / "sp"),
                             train_config="train.toml")
    said: list[str] = []
    trainer = Trainer(settings, said.append)
    runs = tmp_path / "runs"
    # the first start fails (a crash), the second ends by itself
    script = f"import os, sys; p = {str(runs)!r}; n = len(open(p).read()) if os.path.exists(p) else 0; " \
             f"open(p, 'a').write('x'); sys.exit(1 if n == 0 else 0)"
    monkeypatch.setattr(trainer, "command", lambda: [sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while not trainer.finished and time.monotonic() < deadline:
        trainer.check()
        time.sleep(0.05)
    assert trainer.starts == 2 and trainer.finished and trainer.fatal is None, said
    assert "exited with status 1" in said[0] and "--auto-resume" in said[0] and "finished" in said[1]
    trainer.check()
    assert trainer.starts == 2


def test_ray_start_runs_the_workers_at_the_commands_niceness_unless_the_user_sets_it(monkeypatch):
    monkeypatch.delenv(WORKER_NICENESS, raising=False)
    assert ray_env()[WORKER_NICENESS] == str(os.nice(0))
    monkeypatch.setenv(WORKER_NICENESS, "7")
    assert ray_env()[WORKER_NICENESS] == "7"


def test_every_node_and_the_driver_use_one_auth_mode_disabled_unless_the_user_sets_it(monkeypatch):
    monkeypatch.delenv(AUTH_MODE, raising=False)
    assert ray_env()[AUTH_MODE] == "disabled"
    use_one_auth_mode()
    assert os.environ[AUTH_MODE] == "disabled"
    monkeypatch.setenv(AUTH_MODE, "token")
    assert ray_env()[AUTH_MODE] == "token"
    use_one_auth_mode()
    assert os.environ[AUTH_MODE] == "token"
