"""Checkpoint files (atomic, pruned, checked on load), the CSV log on resume,
and the EMA / SWA weights recomputed by hand from the raw weights of each step."""
from __future__ import annotations

import os

import pytest
import torch

from sayuri_async.net.model import Net, NetConfig, init_weights
from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.trainer import train
from test_train_loop import chunks, quiet, tiny_config


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    ckpt.atomic_write_bytes(path, b"old contents")

    def crash(*_):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        ckpt.atomic_write_bytes(path, b"new contents that never land")
    assert path.read_bytes() == b"old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary left behind


def test_keep_the_newest_checkpoints_and_refuse_foreign_files(tmp_path):
    for step in (10, 20, 30, 40):
        ckpt.save_checkpoint(tmp_path, step, {"step": step}, keep=2)
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [30, 40]
    assert ckpt.load_checkpoint(ckpt.latest_checkpoint(tmp_path))["step"] == 40
    foreign = tmp_path / "checkpoints" / "ckpt-000000050.pt"
    torch.save({"hello": 1}, foreign)
    with pytest.raises(ckpt.CheckpointError, match="ckpt-000000050.pt: not a"):
        ckpt.load_checkpoint(foreign)
    foreign.write_bytes(b"garbage")
    with pytest.raises(ckpt.CheckpointError, match="cannot read checkpoint"):
        ckpt.load_checkpoint(foreign)


def test_log_drops_rows_after_the_resumed_step(tmp_path):
    log = ckpt.CsvLog(tmp_path, None)
    for step in (5, 10, 15):
        log.write({"step": step, "loss": 1.0 / step})
    ckpt.CsvLog(tmp_path, 10)
    with open(tmp_path / "train_log.csv") as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("step,samples,lr,loss,")
    assert [line.split(",")[0] for line in lines[1:]] == ["5", "10"]


def _raw_weights(out, steps):
    return [torch.load(ckpt.checkpoint_path(out, s), weights_only=True)["model"] for s in steps]


def _start_weights() -> dict[str, torch.Tensor]:
    cfg = NetConfig(blocks=2, channels=16, policy_channels=8, value_channels=8, value_hidden=16)
    return init_weights(Net(cfg), seed=1).state_dict()


@pytest.mark.slow
def test_swa_is_the_mean_of_the_snapshots(tmp_path):
    data = chunks(tmp_path / "data")
    out = tmp_path / "out"
    cfg = tiny_config(data, out, average={"mode": "swa", "swa_start": 0, "swa_every": 1},
                      run={"checkpoint_every": 1, "keep_checkpoints": 3})
    train(cfg, steps=3, say=quiet)
    raw = _raw_weights(out, (1, 2, 3))
    avg = torch.load(ckpt.checkpoint_path(out, 3), weights_only=True)["average"]["state"]
    key = "blocks.0.branch.c1.conv.weight"
    assert torch.allclose(avg[key], (raw[0][key] + raw[1][key] + raw[2][key]) / 3, atol=1e-7)


@pytest.mark.slow
def test_ema_follows_its_formula(tmp_path):
    data = chunks(tmp_path / "data")
    out = tmp_path / "out"
    # decay 0.5 per step at the reference batch; batch 32 = 2 x reference 16 -> 0.25 per step;
    # the first updates use min(decay, (1+t)/(10+t)) = 0.1, then 2/11, then 0.25
    cfg = tiny_config(data, out, average={"mode": "ema", "ema_decay": 0.5},
                      schedule={"reference_batch": 16}, run={"checkpoint_every": 1, "keep_checkpoints": 3})
    train(cfg, steps=3, say=quiet)
    raw = _raw_weights(out, (1, 2, 3))
    avg = torch.load(ckpt.checkpoint_path(out, 3), weights_only=True)["average"]["state"]
    key = "value_head.fc1.weight"
    e = _start_weights()[key]
    for w, decay in zip(raw, (0.1, 2 / 11, 0.25)):
        e = decay * e + (1 - decay) * w[key]
    assert torch.allclose(avg[key], e, atol=1e-6)
