"""Training with data-loader workers, ended from outside: a worker killed as
the out-of-memory killer kills (SIGKILL) ends ``train`` in one line that says
what happened and which checkpoint stands (exit status 1); SIGTERM or SIGINT
to the whole process group ends it in one line with exit status 143 or 130. Never torch's
traceback, and no worker outlives the run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sayuri_async.lifetime import descendant_pids, pid_running
from sayuri_async.train import checkpoint as ckpt
from test_train_loop import chunks

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals to processes and /proc")


def _start(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    data = chunks(tmp_path / "data", count=4, positions=64)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 2\nshuffle_buffer = 64\n'
                   '[model]\nblocks = 1\nchannels = 8\n[optim]\nbatch_size = 16\n'
                   '[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 2\nexport_every = 1000000\n')
    out, err = tmp_path / "run", tmp_path / "stderr.txt"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with open(err, "wb") as f:  # a file, not a pipe: a worker left behind would hold a pipe open
        proc = subprocess.Popen([sys.executable, "-m", "sayuri_async.cli", "train", "--config", str(cfg), "--out",
                                 str(out), "--steps", "1000000", "--no-progress"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=f, start_new_session=True)
    return proc, out, err


def _workers_once_checkpointed(proc: subprocess.Popen, out: Path, timeout: float = 240) -> list[int]:
    """The run's worker processes, once it has written a checkpoint."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, "train ended before its first checkpoint"
        workers = descendant_pids(proc.pid)
        if ckpt.list_checkpoints(out) and len(workers) >= 2:
            return workers
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("no checkpoint in time")


def _finish(proc: subprocess.Popen, workers: list[int], err: Path) -> tuple[int, list[str]]:
    try:
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    end = time.monotonic() + 20
    while any(pid_running(p) for p in workers) and time.monotonic() < end:
        time.sleep(0.1)
    left = [p for p in workers if pid_running(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"workers outlived the run: {left}"
    text = err.read_text(errors="replace")
    assert "Traceback" not in text and "DataLoader worker" not in text, text[-3000:]
    return rc, [line for line in text.splitlines() if line.startswith("sayuri-async")]


@pytest.mark.slow
def test_a_worker_killed_by_sigkill_ends_train_in_one_line(tmp_path):
    proc, out, err = _start(tmp_path)
    workers = _workers_once_checkpointed(proc, out)
    os.kill(workers[0], signal.SIGKILL)
    rc, lines = _finish(proc, workers, err)
    assert rc == 1
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"sayuri-async train: a data-loader worker (pid {workers[0]}) was killed by SIGKILL")
    assert "out-of-memory" in line and "the last checkpoint stands" in line
    newest = ckpt.latest_checkpoint(out)
    assert str(newest) in line
    ckpt.load_checkpoint(newest)  # whole


@pytest.mark.slow
@pytest.mark.parametrize("sig, word", [(signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")],
                         ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_process_group_ends_train_in_one_line(tmp_path, sig, word):
    proc, out, err = _start(tmp_path)
    workers = _workers_once_checkpointed(proc, out)
    time.sleep(1.0)  # well inside the run
    os.killpg(proc.pid, sig)
    rc, lines = _finish(proc, workers, err)
    assert rc == 128 + sig
    assert len(lines) == 1 and word in lines[0], lines
    for _, path in ckpt.list_checkpoints(out):
        ckpt.load_checkpoint(path)
