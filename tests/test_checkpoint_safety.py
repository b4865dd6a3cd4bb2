"""What training keeps when things go wrong: an unreadable newest checkpoint
is set aside under a name that says so and the one resumed from is never
deleted; a full disk leaves the log without half a row; a loss that goes
non-finite stops the run in one line before any update, checkpoint or export
is made from it."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.cli import main as train_main
from sayuri_async.train.errors import TrainError
from sayuri_async.train.step import NonFiniteLoss
from sayuri_async.train.trainer import train
from test_train_loop import chunks, quiet, read_log, tiny_config

SMALL = dict(model={"blocks": 1, "channels": 8}, optim={"batch_size": 16})
KEEP_ONE = dict(run={"checkpoint_every": 2, "keep_checkpoints": 1, "log_every": 1, "export_every": 2}, **SMALL)

DAMAGES = {
    "truncated": lambda data: data[:1000],
    "random": lambda data: np.random.default_rng(1).bytes(len(data)),
    "empty": lambda data: b"",
}


def _bytes(path) -> bytes:
    return path.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_bad_newest_checkpoint_is_set_aside_and_the_one_resumed_from_is_kept(tmp_path, capfd, damage):
    data = chunks(tmp_path / "data", count=2)
    out = tmp_path / "run"
    train(tiny_config(data, out, run={"checkpoint_every": 2, "keep_checkpoints": 2, "log_every": 1}, **SMALL),
          steps=4, say=quiet)
    older, newest = ckpt.checkpoint_path(out, 2), ckpt.checkpoint_path(out, 4)
    older_bytes = _bytes(older)
    bad = DAMAGES[damage](_bytes(newest))
    newest.write_bytes(bad)
    capfd.readouterr()
    said: list[str] = []
    # keep_checkpoints = 1: the retention rule alone would delete step 2 at the first new checkpoint
    result = train(tiny_config(data, out, **KEEP_ONE), steps=8, resume=True, say=said.append)
    err = capfd.readouterr().err
    assert result.steps == 8
    assert any("resumed" in s and older.name in s for s in said), said
    assert "ckpt-000000004.pt" in err and "ckpt-000000004.pt.unreadable" in err
    aside = out / "checkpoints" / "ckpt-000000004.pt.unreadable"
    assert _bytes(aside) == bad  # kept as it was, to look at
    assert _bytes(older) == older_bytes  # the checkpoint resumed from stands
    assert [s for s, _ in ckpt.list_checkpoints(out)] == [2, 8]


def test_a_second_bad_checkpoint_of_the_same_step_does_not_replace_the_first(tmp_path):
    folder = ckpt.checkpoint_dir(tmp_path)
    ckpt.save_checkpoint(tmp_path, 2, {"step": 2}, keep=5)
    warned: list[str] = []
    for content in (b"first damage", b"second damage"):
        ckpt.checkpoint_path(tmp_path, 4).write_bytes(content)
        path, state = ckpt.newest_readable(tmp_path, warned.append)
        assert path.name == "ckpt-000000002.pt" and state["step"] == 2
    assert (folder / "ckpt-000000004.pt.unreadable").read_bytes() == b"first damage"
    assert (folder / "ckpt-000000004-2.pt.unreadable").read_bytes() == b"second damage"
    assert "ckpt-000000004-2.pt.unreadable" in warned[1]


def test_retention_spares_the_checkpoint_named(tmp_path):
    spare = ckpt.save_checkpoint(tmp_path, 10, {"step": 10}, keep=1)
    for step in (20, 30, 40):
        ckpt.save_checkpoint(tmp_path, step, {"step": step}, keep=1, spare=spare)
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [10, 40]
    ckpt.save_checkpoint(tmp_path, 50, {"step": 50}, keep=1)
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [50]


def test_a_log_row_on_a_full_disk_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    log = ckpt.CsvLog(tmp_path, None)
    log.write({"step": 1, "loss": 2.5})
    before = (tmp_path / "train_log.csv").read_bytes()
    real = os.write

    def half_then_full(fd, data):  # the disk fills in the middle of the row
        real(fd, bytes(data)[:len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        log.write({"step": 2, "loss": 2.25})
    assert (tmp_path / "train_log.csv").read_bytes() == before


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to tell the log's writes apart")
def test_train_on_a_full_disk_ends_in_one_line_and_leaves_the_log_as_it_was(tmp_path, capsys, monkeypatch):
    data = chunks(tmp_path / "data", count=2)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 0\n[model]\nblocks = 1\nchannels = 8\n'
                   '[optim]\nbatch_size = 16\n[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 2\n'
                   'export_every = 2\n')
    out = tmp_path / "run"
    args = ["--config", str(cfg), "--out", str(out), "--no-progress"]
    assert train_main([*args, "--steps", "2"]) == 0
    before = (out / "train_log.csv").read_bytes()
    real = os.write

    def full(fd, data):  # the disk fills while the log row is written
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("train_log.csv"):
            return real(fd, data)
        real(fd, bytes(data)[:5])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    capsys.readouterr()
    assert train_main([*args, "--steps", "4", "--resume"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("sayuri-async")]
    assert len(err) == 1 and "No space left on device" in err[0], err
    assert (out / "train_log.csv").read_bytes() == before
    assert [s for s, _ in ckpt.list_checkpoints(out)] == [2]


def test_a_loss_that_goes_non_finite_stops_before_the_update_and_saves_nothing_from_it(tmp_path, capsys):
    data = chunks(tmp_path / "data", count=2)
    out = tmp_path / "run"
    every = {"checkpoint_every": 1, "export_every": 1, "log_every": 1, "keep_checkpoints": 1000}
    train(tiny_config(data, out, run=every, **SMALL), steps=2, say=quiet)
    # a rate far too high: the weights blow up within a few steps
    wild = tiny_config(data, out, run=every, schedule={"rates": [1e9, 1e9]}, **SMALL)
    with pytest.raises(NonFiniteLoss, match=r"the loss became (nan|inf).*the step was not taken") as caught:
        train(wild, steps=200, resume=True, say=quiet)
    message = str(caught.value)
    assert "\n" not in message and "the last checkpoint stands" in message
    steps = [s for s, _ in ckpt.list_checkpoints(out)]
    failed = int(message.split(":")[0].split()[1])  # "step N: ..."
    assert steps[-1] == failed - 1 and failed > 3
    assert str(ckpt.checkpoint_path(out, failed - 1)) in message
    for _, path in ckpt.list_checkpoints(out):  # every checkpoint written holds finite weights
        state = torch.load(path, weights_only=True)
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point()), path.name
    exports = sorted(p.name for p in (out / "weights").glob("net-s*.safetensors"))
    assert exports[-1] == f"net-s{failed - 1:09d}.safetensors"
    assert [int(r["step"]) for r in read_log(out)][-1] == failed - 1


def test_a_nan_that_gets_past_the_chunk_checks_never_reaches_the_optimizer(tmp_path, monkeypatch, capsys):
    from sayuri_async import chunkfile
    from test_poisoned_chunks import poison

    data = chunks(tmp_path / "data", count=2)
    for path in data.iterdir():
        poison(path, "policy", lambda a, full: a.__setitem__(np.nonzero(full)[0], np.nan))
    monkeypatch.setattr(chunkfile, "check_values", lambda *_: None)  # as if a check were missing
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 0\n[model]\nblocks = 1\nchannels = 8\n'
                   '[optim]\nbatch_size = 16\n[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 1\n')
    out = tmp_path / "run"
    assert train_main(["--config", str(cfg), "--out", str(out), "--steps", "3", "--no-progress"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[-1].startswith("sayuri-async train: step 1: the loss became nan (policy nan")
    assert "no checkpoint was written yet" in err[-1]
    assert ckpt.list_checkpoints(out) == [] and not list((out / "weights").glob("*.safetensors"))


def test_the_guard_leaves_weights_and_optimizer_as_they_were(tmp_path):
    from sayuri_async.net.model import Net, NetConfig, init_weights
    from sayuri_async.train.dataset import pack_targets
    from sayuri_async.train.step import build_optimizer, train_step

    cfg = tiny_config(tmp_path, tmp_path / "out")
    net = init_weights(Net(NetConfig.from_dict(cfg.model)), seed=1)
    opt = build_optimizer(net, cfg.optim)
    n, b = 7, 4
    area = n * n
    batch = {"policy": np.full((b, area + 1), 1.0 / (area + 1), np.float32), "policy_mask": np.ones(b),
             "opp_policy": np.zeros((b, area + 1), np.float32), "opp_mask": np.zeros(b),
             "wdl": np.tile(np.float32([1, 0, 0]), (b, 1)), "score": np.full(b, np.inf, np.float32),
             "ownership": np.zeros((b, area), np.float32), "q_avg": np.zeros((b, 4)), "q_avg_mask": np.zeros((b, 4)),
             "score_avg": np.zeros((b, 4)), "score_avg_mask": np.zeros((b, 4)), "ownership_mask": np.ones(b)}
    planes = torch.zeros((b, NetConfig.from_dict(cfg.model).input_planes, n, n), dtype=torch.uint8)
    before = {k: v.detach().clone() for k, v in net.named_parameters()}
    with pytest.raises(TrainError, match="score inf"):
        train_step(net, net, opt, {"planes": planes, "targets": torch.from_numpy(pack_targets(batch, n))}, 0.1, cfg,
                   torch.device("cpu"), False)
    assert all(torch.equal(before[k], v) for k, v in net.named_parameters())
    assert all(p.grad is None for p in net.parameters()) and not opt.state
