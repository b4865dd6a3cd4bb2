"""Sharing a filesystem across boxes, self-play side: host names in chunk
names, the hot network swap between batches, ``selfplay --follow-weights``."""
from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sayuri_async import fileio
from sayuri_async.chunkfile import chunk_name, peek_chunk
from sayuri_async.infer.batcher import Batcher
from sayuri_async.infer.stats import Counters
from sayuri_async.infer.worker import Worker
from sayuri_async.net.backends import Backend, NetOutput, RandomBackend
from sayuri_async.net.identity import NetworkId, check_file, file_sha256, sidecar_path
from sayuri_async.net.swap import SwappableBackend
from sayuri_async.search.config import SearchConfig
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.follow import WeightsFollower, newest_weights
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.selfplay.switch import NetworkSwitch


# ----------------------------------------------------------------- host names

def test_host_names_are_file_name_safe_and_tell_boxes_apart():
    assert fileio.host_name("Box-2.lan.example") == "boxx2"
    assert fileio.host_name("gpu01") == "gpu01"
    assert fileio.host_name("") == "host"
    assert len(fileio.host_name("x" * 100)) == fileio.HOST_NAME_CHARS
    assert fileio.host_name("boxa") != fileio.host_name("boxb")


def test_run_stamps_carry_the_host_so_chunk_names_differ_across_boxes(monkeypatch):
    stamp = fileio.run_stamp()
    assert f"-{fileio.host_name()}-{os.getpid()}" in stamp
    names = set()
    for host in ("boxa.lan", "boxb.lan"):  # the same second, the same pid, two machines
        monkeypatch.setattr(fileio.socket, "gethostname", lambda host=host: host)
        names.add(chunk_name(3, f"{fileio.run_stamp()}-p0", 1))
    assert len(names) == 2 and all(n.startswith("chunk-000003-") for n in names)


# ----------------------------------------------------------------- the swap between batches

class Marked(Backend):
    """Answers every position with one fixed win probability, its ``mark``;
    with a ``gate``, each batch waits in the worker until the gate opens."""

    def __init__(self, mark: float, gate: threading.Event | None = None, planes: int = 18) -> None:
        self.mark, self.gate = mark, gate
        self.planes, self.name = planes, f"marked-{mark}"
        self.launched = 0
        self.closed = False

    def run(self, batch: np.ndarray) -> NetOutput:
        self.launched += 1
        if self.gate is not None:
            assert self.gate.wait(10.0)
        b, n = batch.shape[0], batch.shape[2]
        wdl = np.tile(np.array([self.mark, 0.0, 1.0 - self.mark], dtype=np.float32), (b, 1))
        return NetOutput(np.full((b, n * n + 1), 1.0 / (n * n + 1), dtype=np.float32), wdl,
                         np.zeros(b, np.float32), np.zeros((b, n * n), np.float32))

    def close(self) -> None:
        self.closed = True


def test_a_swap_changes_the_next_batch_and_never_one_in_flight():
    gate = threading.Event()
    old, new = Marked(0.25, gate), Marked(0.75)
    slot = SwappableBackend(old)
    worker = Worker(name="swap-test")
    heard = []

    async def main():
        batcher = Batcher(slot, 7, batch_size=1, timeout_ms=None, worker=worker)
        switch = NetworkSwitch(slot, NetworkId("old"), lambda path: new, worker,
                               on_swapped=lambda be, prep: heard.append(be))
        batcher.attach()
        first = batcher.commit(1)  # a full batch: handed to the worker, held there by the gate
        while old.launched == 0:
            await asyncio.sleep(0.01)
        switch.request("new.safetensors", NetworkId("new", "ab" * 32))
        for _ in range(50):  # the new network is loaded meanwhile, its swap queued behind the batch
            await asyncio.sleep(0.01)
        assert switch.current == NetworkId("old") and not first.done()
        gate.set()
        out1 = await first
        while switch.current.name != "new":
            await asyncio.sleep(0.01)
        out2 = await batcher.commit(1)
        batcher.close()
        switch.close()
        return out1, out2, switch

    out1, out2, switch = asyncio.run(main())
    worker.shutdown()
    assert out1.wdl[0, 0] == pytest.approx(0.25)  # the batch in flight: the old network's answer
    assert out2.wdl[0, 0] == pytest.approx(0.75)  # the next batch: the new network's
    assert old.closed and not new.closed and heard == [new]
    assert [n.name for n in switch.since(0)] == ["old", "new"] and switch.serial == 1


def test_a_network_that_reads_other_planes_is_refused_and_the_old_one_plays():
    slot = SwappableBackend(Marked(0.25))
    other = Marked(0.75, planes=5)

    async def main():
        switch = NetworkSwitch(slot, NetworkId("old"), lambda path: other, None)
        switch.request("other.safetensors", NetworkId("other", "cd" * 32))
        while switch.busy:
            await asyncio.sleep(0.01)
        switch.close()
        return switch

    switch = asyncio.run(main())
    assert switch.current == NetworkId("old") and slot.current.mark == 0.25
    assert "other.safetensors" in switch.error and "5 planes" in switch.error and "\n" not in switch.error
    assert other.closed


# ----------------------------------------------------------------- networks per game

def small_cfg(out: Path, **kw) -> SelfplayConfig:
    base = dict(board_sizes=[7], komi=7.5, num_games=0, parallel_games=4, batch_size=2, playouts=8,
                chunk_games=1, out=str(out), seed=5, writer_process=False,
                search=SearchConfig(edge_capacity=20_000))
    base.update(kw)
    return SelfplayConfig(**base)


def test_an_engine_swaps_on_a_control_and_records_the_networks_of_each_game(tmp_path):
    from sayuri_async.go.sgf import load_sgf_file
    from sayuri_async.selfplay.engine import Engine

    cfg = small_cfg(tmp_path / "out")
    second = NetworkId("second", "12" * 32)

    async def main():
        engine = Engine(cfg, RandomBackend(seed=1), tag="t", make_network=lambda path: RandomBackend(seed=2))
        run = asyncio.ensure_future(engine.run())
        while engine.finished < 2:
            await asyncio.sleep(0.01)
        engine.control({"network": {"path": "second.safetensors", **second.as_dict()}})
        while engine.switch.current != second:
            await asyncio.sleep(0.01)
        done = engine.finished
        while engine.finished < done + len(engine.live) + 2:  # games that started on the second network
            await asyncio.sleep(0.01)
        status = engine.status()
        engine.stop()
        await run
        engine.close()
        return status

    status = asyncio.run(main())
    assert status.network == second.label and status.networks == ["random", second.label]
    assert status.network_error is None
    metas = [peek_chunk(p)[1] for p in sorted((tmp_path / "out" / "data").glob("*.npz"))]
    assert all(m["host"] == socket.gethostname() for m in metas)
    per_game = [[m["networks"][i]["name"] for i in g] for m in metas for g in m["game_networks"]]
    assert ["random"] in per_game and ["second"] in per_game
    assert all(g in (["random"], ["second"], ["random", "second"]) for g in per_game)
    players = set()
    for path in (tmp_path / "out" / "sgf").glob("*.sgf"):
        _, info = load_sgf_file(path)
        players.add(info.black)
        assert info.black == info.white and "networks:" in info.comment
    assert players == {"random", second.label}


# ----------------------------------------------------------------- following a folder

def save_net(path: Path, seed: int, later: float = 0.0) -> Path:
    """A tiny network at ``path``, renamed there whole, dated ``later`` seconds from now."""
    import torch

    from sayuri_async.net.model import Net, NetConfig, init_weights
    from sayuri_async.net.weights import save_weights

    net = init_weights(Net(NetConfig(blocks=1, channels=8, policy_channels=2, value_channels=2, value_hidden=8)),
                       seed)
    tmp = path.with_name(f".{path.name}.tmp")
    with torch.no_grad():
        save_weights(tmp, net, {"name": path.stem})
    touch_later(tmp, later)
    os.replace(tmp, path)
    return path


def put_bytes(path: Path, data: bytes, later: float = 0.0) -> Path:
    """``data`` at ``path``, renamed there whole, dated ``later`` seconds from now."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    touch_later(tmp, later)
    os.replace(tmp, path)
    return path


def touch_later(path: Path, seconds: float) -> None:
    t = time.time() + seconds
    os.utime(path, (t, t))


def test_the_follower_takes_the_newest_file_and_refuses_a_corrupt_one_in_one_line(tmp_path):
    said: list[str] = []
    follower = WeightsFollower(tmp_path, 0.1, said.append)
    assert follower.poll() is None  # an empty folder: nothing to play yet
    a = save_net(tmp_path / "net-s000000010.safetensors", 1)
    (tmp_path / ".net-s000000020.safetensors.tmp").write_bytes(b"half")  # hidden: not a candidate
    path, network = follower.poll()
    assert path == a and network == NetworkId("net-s000000010", file_sha256(a))
    assert follower.poll() is None  # looked at already
    bad = put_bytes(tmp_path / "net-s000000020.safetensors", b"\x00" * 64, later=5)
    assert newest_weights(tmp_path).path == bad
    assert follower.poll() is None and follower.poll() is None
    assert len(said) == 1 and str(bad) in said[0] and "refused" in said[0] and "\n" not in said[0]
    assert network.label in said[0]  # the network that keeps playing
    b = save_net(tmp_path / "net-s000000030.safetensors", 2, later=10)
    assert follower.poll()[1] == check_file(b)


def test_a_file_that_does_not_match_its_sidecar_is_refused(tmp_path):
    said: list[str] = []
    a = save_net(tmp_path / "a.safetensors", 1)
    sidecar_path(a).write_text(f"{'0' * 64}  a.safetensors\n")
    follower = WeightsFollower(tmp_path, 0.1, said.append)
    assert follower.poll() is None and "does not match" in said[0]
    sidecar_path(a).write_text(f"{file_sha256(a)}  a.safetensors\n")
    touch_later(sidecar_path(a), 5)  # the right sidecar arrived
    assert follower.poll()[1].name == "a"


def test_selfplay_follows_a_folder_and_records_the_network_of_every_game(tmp_path):
    from sayuri_async.selfplay.runner import run_selfplay

    nets = tmp_path / "published"
    nets.mkdir()
    cfg = small_cfg(tmp_path / "out", follow_weights=str(nets), follow_interval_s=0.2, batch_size=4)
    said: list[str] = []
    seen: list[Status] = []

    class Reporter:
        def __init__(self):
            self.t0 = time.monotonic()
            self.step = 0

        def update(self, statuses):
            seen.extend(statuses)
            st = statuses[0]
            if self.step == 0 and st.finished >= 1:  # the random network played a game: publish two files
                put_bytes(nets / "net-s000000002.safetensors", b"not a network", later=5)  # the newest
                save_net(nets / "net-s000000001.safetensors", 3)
                self.step, self.mark = 1, st.finished
            elif self.step == 1 and len(said) >= 2:
                save_net(nets / "net-s000000003.safetensors", 4, later=10)
                self.step = 2
            elif self.step == 2 and st.network.startswith("net-s000000003@"):
                self.step, self.mark = 3, st.finished + len(st.games)
            elif self.step == 3 and st.finished >= self.mark + 1:
                return [{"stop": True}]
            if time.monotonic() - self.t0 > 240:
                return [{"stop": True}]
            return []

        def close(self, statuses):
            pass

    final = run_selfplay(cfg, Reporter(), warn=said.append)
    assert final[0].network.startswith("net-s000000003@"), (final[0].network, said)
    assert len(said) == 2 and "no network" in said[0] and "net-s000000002" in said[1] and "refused" in said[1]
    assert final[0].networks[0] == "random"
    metas = [peek_chunk(p)[1] for p in (tmp_path / "out" / "data").glob("*.npz")]
    names = {m["networks"][i]["name"] for m in metas for g in m["game_networks"] for i in g}
    assert "random" in names and "net-s000000003" in names and "net-s000000002" not in names
    sha = file_sha256(nets / "net-s000000003.safetensors")
    assert any(n["sha256"] == sha for m in metas for n in m["networks"])
    assert all(fileio.host_name() in p.name for p in (tmp_path / "out" / "data").glob("*.npz"))


def test_the_summary_and_the_progress_line_name_the_networks():
    from sayuri_async.selfplay.report import aggregate, summary_lines

    def status(pid: int, networks: list[str]) -> Status:
        return Status(t=1.0, elapsed=1.0, loop_cpu_s=0.5, pid=pid, counters=Counters(), settings=EngineSettings(),
                      finished=1, chunks=1, positions_written=10, network=networks[-1], networks=networks)

    agg = aggregate([status(1, ["random", "net-a@0123"]), status(2, ["random"])])
    assert agg.network == "net-a@0123, random"  # one engine has not swapped yet
    assert agg.networks == ["random", "net-a@0123"]  # every one played, in order
    assert summary_lines(agg, None)[-1] == "networks played: random, net-a@0123"


def test_follow_weights_naming_a_file_is_refused_in_one_line(tmp_path, capsys):
    from sayuri_async.selfplay.cli import main

    not_a_folder = tmp_path / "net.safetensors"
    not_a_folder.write_bytes(b"x")
    status = main(["--no-tui", "--out", str(tmp_path / "o"), "--follow-weights", str(not_a_folder)])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "--follow-weights" in err and "not a folder" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_every_engine_process_follows_the_folder(tmp_path):
    from sayuri_async.selfplay.runner import run_selfplay

    nets = tmp_path / "published"
    nets.mkdir()
    first = save_net(nets / "net-s000000001.safetensors", 1)
    cfg = small_cfg(tmp_path / "out", follow_weights=str(nets), follow_interval_s=0.2, procs=2, writer_process=True)
    said: list[str] = []

    class Reporter:
        def __init__(self):
            self.t0 = time.monotonic()
            self.published = False

        def update(self, statuses):
            if len(statuses) == 2 and not self.published and all(s.finished >= 1 for s in statuses):
                save_net(nets / "net-s000000002.safetensors", 2, later=5)
                self.published = True
            labels = {s.network.split("@")[0] for s in statuses}
            if self.published and labels == {"net-s000000002"} and len(statuses) == 2:
                return [{"stop": True}]
            return [{"stop": True}] if time.monotonic() - self.t0 > 300 else []

        def close(self, statuses):
            pass

    final = run_selfplay(cfg, Reporter(), warn=said.append)
    assert not said and len(final) == 2
    assert all(s.networks == [check_file(first).label, check_file(nets / "net-s000000002.safetensors").label]
               for s in final), [s.networks for s in final]


def test_the_loop_refuses_to_follow_a_folder(tmp_path):
    from sayuri_async.configfile import ConfigError
    from sayuri_async.loop.config import load_loop_config

    root = Path(__file__).resolve().parents[1]
    text = (root / "configs" / "loop-7x7.toml").read_text()
    text = text.replace("[selfplay]\n", "[selfplay]\nfollow_weights = 'w'\n", 1)
    cfg = tmp_path / "loop.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=r"follow_weights.*selfplay --follow-weights"):
        load_loop_config(str(cfg))
