"""``train --follow``: rounds paced by the data on disk, networks published for self-play."""
from __future__ import annotations

from pathlib import Path

import pytest

from sayuri_async.net.identity import check_file, sidecar_path
from sayuri_async.train.follow import FollowSettings, follow
from sayuri_async.train.trainer import TrainResult
from test_train_chunks import make_chunk
from test_train_loop import quiet, tiny_config


class Arrivals:
    """Stands for self-play: each wait (``sleep``) writes the next chunk."""

    def __init__(self, data: Path, positions: int, chunks: int) -> None:
        self.data, self.positions, self.left = data, positions, chunks
        self.written = 0
        self.waits = 0

    def add(self) -> None:
        make_chunk(self.data / f"chunk-000000-t-{self.written + 1:06d}.npz", n=7, positions=self.positions,
                   seed=self.written)
        self.written += 1

    def sleep(self, _seconds: float) -> None:
        self.waits += 1
        if self.left == 0:
            raise AssertionError("waited with no more data to come")
        self.left -= 1
        self.add()


def test_follow_waits_for_data_and_trains_reuse_samples_per_position(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    cfg = tiny_config(data, tmp_path / "out")  # batch 32
    arrivals = Arrivals(data, positions=64, chunks=6)
    rounds: list[tuple[int, int]] = []  # (target step, positions on disk when it started)

    def train(cfg, steps, init, resume, refresh_window, progress):
        positions = arrivals.written * arrivals.positions
        rounds.append((steps, positions))
        assert refresh_window and (resume == (False if not rounds[:-1] else True))
        export = tmp_path / "exports" / f"net-s{steps:09d}.safetensors"
        export.parent.mkdir(exist_ok=True)
        export.write_bytes(f"network of step {steps}".encode())
        return TrainResult(steps, steps * 32, export=str(export))

    settings = FollowSettings(reuse=2.0, export_every=5, poll_s=0.0, steps=20, publish=str(tmp_path / "pub"))
    result = follow(cfg, settings, say=quiet, sleep=arrivals.sleep, train=train)
    # 2 samples a position at batch 32: ceil(positions / 16) steps allowed; a round of 5 steps starts only
    # once the data allows its last step: over 64, 144, 224 and 304 positions (2, 3, 4 and 5 chunks of 64)
    assert rounds == [(5, 128), (10, 192), (15, 256), (20, 320)]
    assert arrivals.written == 5 and result.steps == 20 and result.rounds == 4
    assert all(steps * 32 <= 2.0 * positions + 32 for steps, positions in rounds)  # never ahead of the data
    pub = sorted((tmp_path / "pub").glob("*.safetensors"))
    assert [p.name for p in pub] == [f"net-s{s:09d}.safetensors" for s in (5, 10, 15, 20)]
    assert all(sidecar_path(p).is_file() and check_file(p).name == p.stem for p in pub)
    assert not list((tmp_path / "pub").glob(".*"))  # no temporary left behind


def test_follow_trains_for_real_and_publishes_networks_selfplay_can_follow(tmp_path):
    from sayuri_async.selfplay.follow import WeightsFollower

    data = tmp_path / "data"
    data.mkdir()
    cfg = tiny_config(data, tmp_path / "out", data={"shuffle_buffer": 64})
    arrivals = Arrivals(data, positions=48, chunks=3)
    arrivals.add()
    settings = FollowSettings(reuse=1.0, export_every=2, poll_s=0.0, steps=4)
    result = follow(cfg, settings, say=quiet, sleep=arrivals.sleep, progress=False)
    # 1 sample a position at batch 32: ceil(positions / 32) steps allowed; one chunk of 48 allows step 2
    # at once, step 4 waits for a third chunk (96 positions allow step 3, 144 step 5)
    assert result.steps == 4 and result.rounds == 2 and arrivals.written == 3
    published = tmp_path / "out" / "published"
    follower = WeightsFollower(published, 1.0, warn=pytest.fail)
    path, network = follower.poll()
    assert path.name == "net-s000000004.safetensors" and network.name == "net-s000000004"


def test_the_train_command_refuses_follow_options_without_follow(tmp_path, capsys):
    from sayuri_async.train.cli import main

    status = main(["--config", "configs/train-9x9.toml", "--publish", str(tmp_path), "--out", str(tmp_path / "o")])
    assert status == 2 and "--publish goes with --follow" in capsys.readouterr().err
    status = main(["--config", "configs/train-9x9.toml", "--follow", "--follow-reuse", "0"])
    assert status == 2 and "--follow-reuse" in capsys.readouterr().err
