"""The training loop end to end on tiny nets and synthetic chunks (7x7, 2 blocks x 16 channels)."""
from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import pytest
import torch

from sayuri_async.train.cli import main as train_main
from sayuri_async.train.config import TrainConfig, from_dict
from sayuri_async.train.trainer import train
from test_train_chunks import make_chunk


def tiny_config(data_dir: Path, out_dir: Path, **sections) -> TrainConfig:
    raw = {
        "data": {"dir": str(data_dir), "board_size": 7, "workers": 0, "shuffle_buffer": 256,
                 "window_min_positions": 100_000},
        "model": {"blocks": 2, "channels": 16, "policy_channels": 8, "value_channels": 8, "value_hidden": 16},
        "optim": {"batch_size": 32},
        "schedule": {"reference_batch": 32, "warmup": 0, "boundaries": [1000], "rates": [0.02, 0.01],
                     "total": 2000},
        "run": {"out": str(out_dir), "log_every": 5, "checkpoint_every": 10, "export_every": 10,
                "progress": "off", "device": "cpu"},
    }
    for section, values in sections.items():
        raw.setdefault(section, {}).update(values)
    return from_dict(raw, "test")


def chunks(folder: Path, count: int = 4, positions: int = 96) -> Path:
    for i in range(count):
        make_chunk(folder / f"chunk-{i}-1-0.npz", n=7, positions=positions, seed=100 + i)
    return folder


def read_log(out: Path) -> list[dict[str, float]]:
    with open(out / "train_log.csv", newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def quiet(_: str) -> None:
    pass


@pytest.mark.slow
def test_loss_decreases_on_synthetic_data(tmp_path):
    data = chunks(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "out", run={"log_every": 10, "checkpoint_every": 1000})
    result = train(cfg, steps=80, say=quiet)
    rows = read_log(tmp_path / "out")
    assert [r["step"] for r in rows] == [10, 20, 30, 40, 50, 60, 70, 80]
    first, last = rows[0], rows[-1]
    # the targets are functions of the input planes, so every head can learn
    assert last["loss"] < 0.7 * first["loss"]
    assert last["policy"] < first["policy"] - 0.2
    assert last["ownership"] < first["ownership"] - 0.05
    assert all(torch.isfinite(torch.tensor(list(r.values()))).all() for r in rows)
    assert result.steps == 80 and result.samples == 80 * 32


def _positions_differ(a: dict, b: dict) -> float:
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path):
    data = chunks(tmp_path / "data", count=5, positions=80)
    # batch 32 at reference batch 16 (linear: rates x2); warm-up 4 ref steps = 64 samples = 2 steps;
    # boundary 16 ref steps = 256 samples = step 8
    kw = dict(data={"workers": 2, "shuffle_buffer": 160},
              schedule={"reference_batch": 16, "warmup": 4, "boundaries": [16], "rates": [0.02, 0.01]},
              run={"log_every": 1, "checkpoint_every": 5})
    whole = tmp_path / "whole"
    train(tiny_config(data, whole, **kw), steps=12, say=quiet)
    split = tmp_path / "split"
    train(tiny_config(data, split, **kw), steps=5, say=quiet)
    train(tiny_config(data, split, **kw), steps=12, resume=True, say=quiet)
    a = torch.load(whole / "checkpoints" / "ckpt-000000012.pt", weights_only=True)
    b = torch.load(split / "checkpoints" / "ckpt-000000012.pt", weights_only=True)
    assert _positions_differ(a["model"], b["model"]) < 1e-6
    assert _positions_differ(a["average"]["state"], b["average"]["state"]) < 1e-6
    momentum_a = [s["momentum_buffer"] for s in a["optimizer"]["state"].values()]
    momentum_b = [s["momentum_buffer"] for s in b["optimizer"]["state"].values()]
    assert max((x - y).abs().max().item() for x, y in zip(momentum_a, momentum_b)) < 1e-6
    assert a["ranks"][0]["positions"] == b["ranks"][0]["positions"]
    # the learning rate of every step, worked out by hand (row k holds step k-1's rate)
    expected = {1: 0.02, 2: 0.04, 3: 0.04, 8: 0.04, 9: 0.02, 12: 0.02}
    for out in (whole, split):
        rows = {int(r["step"]): r for r in read_log(out)}
        assert sorted(rows) == list(range(1, 13))
        for step, lr in expected.items():
            assert rows[step]["lr"] == pytest.approx(lr)
    rows_a, rows_b = read_log(whole), read_log(split)
    for ra, rb in zip(rows_a, rows_b):
        assert ra["loss"] == pytest.approx(rb["loss"], rel=1e-5)


def _damage_data(path: Path) -> None:
    """Zero bytes inside the compressed policy array: the zip opens, the data fails."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("policy.npy")
    start = info.header_offset + 30 + len(info.filename) + 20
    raw[start:start + 40] = bytes(40)
    path.write_bytes(bytes(raw))


@pytest.mark.slow
def test_corrupt_chunks_are_skipped_with_a_warning(tmp_path, capfd):
    data = chunks(tmp_path / "data", count=4)
    truncated = data / "chunk-1-1-0.npz"
    truncated.write_bytes(truncated.read_bytes()[:300])
    _damage_data(data / "chunk-2-1-0.npz")
    cfg = tiny_config(data, tmp_path / "out")
    result = train(cfg, steps=12)
    err = capfd.readouterr().err
    assert "chunk-1-1-0.npz" in err and "chunk-2-1-0.npz" in err
    assert result.steps == 12
    assert torch.isfinite(torch.tensor(result.losses["loss"]))


@pytest.mark.slow
def test_every_export_loads_and_holds_the_averaged_weights(tmp_path):
    from sayuri_async.net.weights import load_weights

    data = chunks(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "out", run={"export_every": 4, "checkpoint_every": 8})
    train(cfg, steps=8, say=quiet)
    weights = sorted((tmp_path / "out" / "weights").glob("net-s*.safetensors"))
    assert [w.name for w in weights] == ["net-s000000004.safetensors", "net-s000000008.safetensors"]
    for w, step in zip(weights, (4, 8)):
        net, meta = load_weights(w)
        assert meta["step"] == step and meta["averaging"] == "ema"
        out = net(torch.zeros(2, 25, 7, 7))
        assert out["policy"].shape == (2, 50)
    state = torch.load(tmp_path / "out" / "checkpoints" / "ckpt-000000008.pt", weights_only=True)
    net, _ = load_weights(weights[-1])
    exported = net.state_dict()
    assert _positions_differ({k: exported[k] for k in state["average"]["state"]}, state["average"]["state"]) == 0
    assert _positions_differ(state["average"]["state"], state["model"]) > 0  # the average is not the raw weights


@pytest.mark.slow
def test_init_from_exported_weights(tmp_path):
    from sayuri_async.net.weights import load_weights

    data = chunks(tmp_path / "data")
    first = tmp_path / "first"
    train(tiny_config(data, first, average={"mode": "none"}), steps=5, say=quiet)
    start = first / "weights" / "net-latest.safetensors"
    second = tmp_path / "second"
    cfg = tiny_config(data, second, average={"mode": "none"}, optim={"momentum": 0.0, "nesterov": False},
                      schedule={"rates": [1e-12, 1e-12]})
    train(cfg, steps=1, init=str(start), say=quiet)
    a, _ = load_weights(start)
    b, _ = load_weights(second / "weights" / "net-latest.safetensors")
    params_a = dict(a.named_parameters())
    assert max((p - params_a[k]).abs().max().item() for k, p in b.named_parameters()) < 1e-6


def test_cli_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[optim]\nbatch = 3\n")
    assert train_main(["--config", str(bad)]) == 2
    assert "bad.toml: [optim] batch: unknown key" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text(f'[data]\ndir = "{tmp_path / "empty"}"\nworkers = 0\n[run]\ndevice = "cpu"\n')
    assert train_main(["--config", str(good), "--out", str(tmp_path / "o"), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "[data] dir" in err and "no such folder" in err  # a usage error (usererror)
    (tmp_path / "empty").mkdir()
    assert train_main(["--config", str(good), "--out", str(tmp_path / "o"), "--steps", "1"]) == 2
    assert "no training chunks" in capsys.readouterr().err
    assert train_main(["--config", str(good), "--out", str(tmp_path / "o"), "--resume"]) == 2
    assert "no checkpoint" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_trains_and_auto_resumes(tmp_path, capsys):
    data = chunks(tmp_path / "data", count=2)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[data]
dir = "{data}"
board_size = 7
workers = 0
[model]
blocks = 1
channels = 8
[optim]
batch_size = 16
[run]
device = "cpu"
log_every = 1
checkpoint_every = 2
""")
    out = tmp_path / "out"
    args = ["--config", str(cfg), "--out", str(out), "--auto-resume", "--no-progress"]
    assert train_main([*args, "--steps", "2"]) == 0  # nothing to resume: starts afresh
    assert train_main([*args, "--steps", "4"]) == 0
    err = capsys.readouterr().err
    assert "resumed" in err and "ckpt-000000002.pt" in err
    assert [int(r["step"]) for r in read_log(out)] == [1, 2, 3, 4]
    assert (out / "weights" / "net-s000000004.safetensors").exists()


@pytest.mark.slow
def test_a_window_of_only_bad_chunks_stops_with_a_clear_error(tmp_path):
    from sayuri_async.train.errors import TrainError

    data = chunks(tmp_path / "data", count=2)
    for p in data.iterdir():
        _damage_data(p)
    cfg = tiny_config(data, tmp_path / "out", data={"workers": 1})
    with pytest.raises(TrainError, match="could be read.*chunk-0-1-0.npz"):
        train(cfg, steps=3, say=quiet)


@pytest.mark.slow
def test_refresh_window_keeps_the_model_and_takes_the_newest_data(tmp_path):
    data = chunks(tmp_path / "data", count=2)  # chunk-0 and chunk-1, 96 positions each
    out = tmp_path / "out"
    kw = dict(data={"window_min_positions": 96, "window_max_positions": 96}, run={"checkpoint_every": 4})
    train(tiny_config(data, out, **kw), steps=4, say=quiet)
    first = torch.load(out / "checkpoints" / "ckpt-000000004.pt", weights_only=True)
    assert [Path(p).name for p, _ in first["data"]["window"]] == ["chunk-1-1-0.npz"]
    make_chunk(data / "chunk-2-1-0.npz", n=7, positions=96, seed=7)  # the next generation's games
    train(tiny_config(data, out, **kw), steps=8, resume=True, refresh_window=True, say=quiet)
    second = torch.load(out / "checkpoints" / "ckpt-000000008.pt", weights_only=True)
    assert [Path(p).name for p, _ in second["data"]["window"]] == ["chunk-2-1-0.npz"]
    assert second["step"] == 8 and second["samples"] == 8 * 32
    assert [int(r["step"]) for r in read_log(out)] == [4, 5, 8]  # log rows continue the same run
    assert second["data"]["seed"] != first["data"]["seed"]
