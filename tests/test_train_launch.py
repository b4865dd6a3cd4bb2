"""``train.launch.train``: a training job in ``[run] processes`` processes under
torchrun, called from one process as the RL loop calls ``trainer.train``.

With 2 CPU processes (gloo): a job launched to step 4 and resumed to step 8
logs the same losses, step by step, as ``torchrun --nproc_per_node 2 -m
sayuri_async.train`` run straight to step 8 (to float rounding: a resume
reloads the state), and hands back rank 0's result
(steps, samples, losses, export). Killed with SIGKILL or interrupted with
SIGINT, the launcher leaves no agent or worker behind. What a rank raised
comes back as the same error kind, in one line.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sayuri_async.lifetime import descendant_pids, pid_running
from sayuri_async.train import launch
from sayuri_async.train.config import ConfigError, load_config
from sayuri_async.train.errors import NothingToResume, TrainError
from sayuri_async.train.trainer import TrainResult
from test_train_chunks import make_chunk

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def write_config(tmp_path: Path, out: Path, **run: object) -> Path:
    data = tmp_path / "data"
    if not data.is_dir():
        for i in range(4):
            make_chunk(data / f"chunk-{i}-1-0.npz", n=7, positions=64, seed=i)
    keys = {"out": str(out), "device": "cpu", "log_every": 2, "checkpoint_every": 4, "progress": "off", **run}
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    cfg = tmp_path / f"{out.name}.toml"
    cfg.write_text(textwrap.dedent(f"""\
        [data]
        dir = "{data}"
        board_size = 7
        workers = 0
        shuffle_buffer = 64
        [model]
        blocks = 1
        channels = 8
        [optim]
        batch_size = 16
        [schedule]
        reference_batch = 16
        warmup = 0
        boundaries = [6]
        rates = [0.02, 0.01]
        [run]
        """) + table)
    return cfg


def rows(run: Path) -> list[dict[str, str]]:
    with open(run / "train_log.csv", newline="") as f:
        return list(csv.DictReader(f))


FIGURES = ("step", "samples", "lr", "loss", "policy", "opp_policy", "wdl", "score", "ownership")


@pytest.mark.slow
def test_launched_job_and_its_resume_match_torchrun(tmp_path, monkeypatch):
    direct = tmp_path / "direct"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "sayuri_async.train", "--config", str(write_config(tmp_path, direct)),
                           "--steps", "8"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    launched = tmp_path / "launched"
    cfg = load_config(write_config(tmp_path, launched, processes=2))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    said: list[str] = []
    first = launch.train(cfg, steps=4, say=said.append)
    assert said == ["training in 2 processes under torchrun (device cpu, 8 positions of the batch each)"]
    assert (first.steps, first.samples) == (4, 64)
    assert first.export == str(launched / "weights" / "net-s000000004.safetensors")
    second = launch.train(cfg, steps=8, resume=True)
    assert (second.steps, second.samples) == (8, 128) and Path(second.export).is_file()

    want, got = rows(direct), rows(launched)
    assert [r["step"] for r in got] == ["2", "4", "6", "8"]
    for a, b in zip(want, got):
        assert {k: float(b[k]) for k in FIGURES} == {k: pytest.approx(float(a[k]), rel=1e-4) for k in FIGURES}
    assert second.losses == pytest.approx({k: float(got[-1][k]) for k in second.losses}, rel=1e-5)  # 6 digits
    assert set(second.losses) == {"loss", "policy", "opp_policy", "wdl", "score", "ownership"}


def _launcher(tmp_path: Path) -> subprocess.Popen:
    """A process that launches a long 2-process job (as the loop would)."""
    cfg = write_config(tmp_path, tmp_path / "long", processes=2, checkpoint_every=1000, log_every=1)
    script = textwrap.dedent(f"""\
        import sys
        from sayuri_async.train.config import load_config
        from sayuri_async.train.launch import train
        try:
            train(load_config({str(cfg)!r}), steps=100000)
        except KeyboardInterrupt:
            sys.exit(130)
        """)
    return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _training_tree(parent: subprocess.Popen, log: Path) -> list[int]:
    """The launcher's agent and workers, once the workers log their first step."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert parent.poll() is None, parent.stderr.read()[-3000:]
        pids = descendant_pids(parent.pid)
        workers = [p for p in pids if b"launch\x00worker" in _cmdline(p)]
        if len(workers) == 2 and log.is_file() and len(log.read_text().splitlines()) > 1:
            return pids
        time.sleep(0.2)
    raise AssertionError("the workers never started training")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _all_end(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if pid_running(p)]
        if not alive:
            return []
        time.sleep(0.2)
    return [p for p in pids if pid_running(p)]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree in /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_no_worker_outlives_its_launcher(tmp_path, how):
    parent = _launcher(tmp_path)
    tree = _training_tree(parent, tmp_path / "long" / "train_log.csv")
    assert len(tree) >= 3  # the agent (torchrun) and two workers
    os.kill(parent.pid, getattr(signal, how))
    status = parent.wait(timeout=90)
    assert status == (-signal.SIGKILL if how == "SIGKILL" else 130)
    assert _all_end(tree, 90) == []


def _job(folder: Path, *reports: dict, agent: dict | None = None) -> Path:
    job = folder / f"job{len(list(folder.glob('job*')))}"
    job.mkdir()
    for r in reports:
        (job / f"error-{r['rank']}.json").write_text(json.dumps(r))
    if agent is not None:
        (job / "agent.json").write_text(json.dumps(agent))
    return job


def test_a_ranks_error_comes_back_as_its_kind(tmp_path):
    job = _job(tmp_path, {"rank": 1, "kind": "Terminated", "message": "terminated (SIGTERM)", "status": 143},
               {"rank": 0, "kind": "NothingToResume", "message": "--resume: no checkpoint in x", "status": 2})
    with pytest.raises(NothingToResume, match=r"^--resume: no checkpoint in x$"):
        launch._outcome(job, 1)


def test_a_rank_stopped_by_a_signal_or_killed_says_so(tmp_path):
    job = _job(tmp_path, {"rank": 1, "kind": "Terminated", "message": "terminated (SIGTERM)", "status": 143})
    with pytest.raises(TrainError, match=r"rank 1 was stopped by a signal .*last checkpoint stands"):
        launch._outcome(job, 1)
    killed = _job(tmp_path, agent={"failures": {"1": -9}})
    with pytest.raises(TrainError, match=r"training rank 1 was killed by SIGKILL"):
        launch._outcome(killed, 1)
    # torchrun's SIGTERM to the other ranks is a consequence: the rank that aborted is the one named
    aborted = _job(tmp_path, agent={"failures": {"0": -15, "1": -6}})
    with pytest.raises(TrainError, match=r"training rank 1 was killed by SIGABRT"):
        launch._outcome(aborted, 1)
    bug = _job(tmp_path, {"rank": 0, "kind": "ValueError", "message": "ValueError: x", "status": 1, "bug": True})
    with pytest.raises(TrainError, match=r"^internal error: ValueError: x \(its traceback is above\)$"):
        launch._outcome(bug, 1)


def test_a_result_comes_back_whole(tmp_path):
    job = _job(tmp_path)
    (job / "result.json").write_text(json.dumps({"steps": 8, "samples": 128, "losses": {"loss": 1.5},
                                                 "export": "w.safetensors", "lr": 0.01}))
    assert launch._outcome(job, 0) == TrainResult(8, 128, {"loss": 1.5}, lr=0.01, export="w.safetensors")


def test_the_config_crosses_to_the_workers_unchanged(tmp_path):
    for name in ("train-9x9.toml", "sayuri-train-19x19.toml"):
        cfg = load_config(ROOT / "configs" / name)
        cfg.run.export_every = 12345  # what the loop changes in memory
        back = launch.config_from_spec(json.loads(json.dumps(cfg.to_dict())), cfg.source)
        assert back == cfg


def test_layouts_torchrun_cannot_run_are_refused_before_it_starts(tmp_path):
    cfg = load_config(write_config(tmp_path, tmp_path / "x", processes=3))
    with pytest.raises(ConfigError, match=r"\[optim\] batch_size 16 is not divisible by \[run\] processes 3"):
        launch.train(cfg, steps=1)
    with pytest.raises(ConfigError, match=r"\[run\] processes: is 2 but device 'cuda:1' names one GPU"):
        load_config(write_config(tmp_path, tmp_path / "y", processes=2, device="cuda:1"))
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    cfg = load_config(write_config(tmp_path, tmp_path / "z", processes=gpus + 2, device="cuda"))
    cfg.optim.batch_size = 16 * (gpus + 2)
    with pytest.raises(ConfigError, match=rf"\[run\] processes {gpus + 2} needs {gpus + 2} GPUs .* torch sees {gpus}"):
        launch.train(cfg, steps=1)
    assert not (tmp_path / "z").exists()  # refused before anything started


def test_one_process_trains_in_the_caller(tmp_path, monkeypatch):
    from sayuri_async.train import trainer

    cfg = load_config(write_config(tmp_path, tmp_path / "one"))
    seen = {}
    monkeypatch.setattr(trainer, "train", lambda c, **kw: seen.update(kw, pid=os.getpid()) or TrainResult(3, 48))
    assert launch.train(cfg, steps=3, resume="auto") == TrainResult(3, 48)
    assert seen["pid"] == os.getpid() and seen["steps"] == 3 and seen["resume"] == "auto"
