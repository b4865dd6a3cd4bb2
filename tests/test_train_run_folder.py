"""The trainer's run folder: a fresh start does not write over an earlier run,
an unreadable checkpoint falls back to an older one, a run at its target
still hands back its export, and killed writes leave nothing behind."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from sayuri_async import fileio
from sayuri_async.net.weights import load_weights
from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.cli import main as train_main
from sayuri_async.train.errors import RunFolderInUse
from sayuri_async.train.trainer import train
from test_train_loop import chunks, quiet, read_log, tiny_config


def _files(folder) -> dict:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def _cli_config(tmp_path, data) -> str:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 0\n[model]\nblocks = 1\nchannels = 8\n'
                   '[optim]\nbatch_size = 16\n[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 2\n'
                   'export_every = 2\nkeep_checkpoints = 1\n')
    return str(cfg)


@pytest.mark.slow
def test_a_fresh_start_into_a_run_folder_is_refused_and_changes_nothing(tmp_path, capsys):
    data = chunks(tmp_path / "data", count=2)
    cfg = _cli_config(tmp_path, data)
    out = tmp_path / "run"
    assert train_main(["--config", cfg, "--out", str(out), "--steps", "4", "--no-progress"]) == 0
    before = _files(out)
    capsys.readouterr()
    assert train_main(["--config", cfg, "--out", str(out), "--steps", "2", "--no-progress"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and str(out) in err[0] and "--resume" in err[0] and "--out" in err[0], err
    assert _files(out) == before  # log, exports and checkpoints untouched
    assert train_main(["--config", cfg, "--out", str(out), "--steps", "6", "--resume", "--no-progress"]) == 0
    assert [int(r["step"]) for r in read_log(out)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_auto_resume_without_a_checkpoint_starts_afresh_over_a_log_and_says_so(tmp_path):
    data = chunks(tmp_path / "data", count=2)
    out = tmp_path / "run"
    cfg = tiny_config(data, out, run={"log_every": 1, "checkpoint_every": 100, "export_every": 100})
    train(cfg, steps=2, say=quiet)  # a first start killed before its first checkpoint, but for its last
    for _, p in ckpt.list_checkpoints(out):
        p.unlink()
    for p in (out / "weights").iterdir():
        p.unlink()
    with pytest.raises(RunFolderInUse, match="--auto-resume"):
        train(cfg, steps=2, say=quiet)
    said = []
    train(cfg, steps=3, resume="auto", say=said.append)
    assert any("starting afresh" in s for s in said)
    assert [int(r["step"]) for r in read_log(out)] == [1, 2, 3]


@pytest.mark.slow
def test_an_unreadable_newest_checkpoint_falls_back_to_the_older_one(tmp_path, capfd):
    data = chunks(tmp_path / "data")
    out = tmp_path / "run"
    kw = dict(run={"checkpoint_every": 2, "keep_checkpoints": 2, "log_every": 1})
    train(tiny_config(data, out, **kw), steps=4, say=quiet)
    newest = ckpt.checkpoint_path(out, 4)
    newest.write_bytes(newest.read_bytes()[:1000])  # a damaged disk block
    capfd.readouterr()
    said = []
    result = train(tiny_config(data, out, **kw), steps=6, resume=True, say=said.append)
    err = capfd.readouterr().err
    assert "ckpt-000000004.pt" in err and "older checkpoint" in err
    assert any("resumed" in s and "ckpt-000000002.pt" in s for s in said)
    assert result.steps == 6
    assert (out / "checkpoints" / "ckpt-000000004.pt.unreadable").is_file()  # kept to look at
    # the rotation holds readable ones only, and spares step 2, the one resumed from
    assert [s for s, _ in ckpt.list_checkpoints(out)] == [2, 4, 6]
    assert torch.load(ckpt.checkpoint_path(out, 4), weights_only=True)["step"] == 4


@pytest.mark.slow
def test_a_resumed_run_at_its_target_hands_back_that_steps_export(tmp_path):
    data = chunks(tmp_path / "data")
    out = tmp_path / "run"
    cfg = tiny_config(data, out, run={"checkpoint_every": 4, "export_every": 100})
    first = train(cfg, steps=4, say=quiet)
    again = train(cfg, steps=4, resume=True, say=quiet)
    assert again.export == first.export and again.losses == pytest.approx(first.losses)
    a, _ = load_weights(first.export)
    exported = {k: v.clone() for k, v in a.state_dict().items()}
    (out / "weights" / "net-s000000004.safetensors").unlink()  # killed between checkpoint and export
    made = train(cfg, steps=4, resume=True, say=quiet)
    b, meta = load_weights(made.export)
    assert meta["step"] == 4
    assert all(torch.equal(exported[k], v) for k, v in b.state_dict().items())


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.slow
def test_a_start_removes_the_temporaries_of_killed_writes(tmp_path):
    data = chunks(tmp_path / "data", count=2)
    out = tmp_path / "run"
    dead = _dead_pid()
    left = [out / "checkpoints" / f".ckpt-000000010.pt.{dead}-{fileio.HOST}-00000000.tmp",
            out / "weights" / f".net-s000000010.safetensors.{dead}-{fileio.HOST}-00000001.tmp",
            out / f".train_log.csv.{dead}-{fileio.HOST}-00000002.tmp"]
    for p in left:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half a file")
    alive = out / "weights" / f".net-s000000020.safetensors.{fileio.os.getpid()}-{fileio.HOST}-00000003.tmp"
    alive.write_bytes(b"being written")
    train(tiny_config(data, out), steps=1, resume="auto", say=quiet)
    assert not any(p.exists() for p in left)
    assert alive.exists()
