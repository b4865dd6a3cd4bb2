"""``sayuri-async train --nnodes 2``: one training job over two machines, tried
as two "machines" on the loopback address of one, with gloo on CPU.

Every run here happens inside a network namespace that has only ``lo``
(``unshare -n``, as root): torchrun's c10d rendezvous listens on every
interface, and nothing may reach past this machine. Without the namespace
the tests skip, saying why.

* Two machines of one process each log the same losses, step by step, as one
  machine of two processes (``--nproc 2``): the same world size, the same
  ranks' shares.
* Then one machine dies mid-run (every process of it killed at once, as a power
  cut would); the other's launcher starts the job again, the machine comes
  back with the same command, and the job resumes from the last checkpoint
  and ends with the same network as a run never interrupted.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from helpers_netns import in_namespace, namespace_problem
from test_train_launch import write_config

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
# Steps of each job: enough that the job is far from its end when a machine
# dies after the checkpoint at step 4 (a step takes tens of milliseconds).
STEPS = 40
FIGURES = ("step", "samples", "lr", "loss", "policy", "opp_policy", "wdl", "score", "ownership")


NAMESPACE_PROBLEM = namespace_problem()
needs_namespace = pytest.mark.skipif(NAMESPACE_PROBLEM is not None, reason=str(NAMESPACE_PROBLEM))

# Runs inside the namespace: the machines of one job, and optionally the
# death of one of them (all its processes, SIGKILL) once a checkpoint
# exists, and its return with the same command. Prints the exit statuses.
DRIVER = textwrap.dedent('''\
    import json, os, signal, subprocess, sys, time
    from pathlib import Path

    config, out, steps, kill = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "kill"
    base = [sys.executable, "-m", "sayuri_async", "train", "--config", config, "--out", str(out),
            "--steps", steps, "--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:29517", "--no-progress"]

    def machine(name):
        tmp = out.parent / f"{out.name}-{name}-tmp"
        tmp.mkdir(exist_ok=True)
        log = open(out.parent / f"{out.name}-{name}.log", "a")
        return subprocess.Popen(base, env={**os.environ, "TMPDIR": str(tmp)}, stdout=log, stderr=log,
                                start_new_session=True)

    def processes_of(name):  # the machine's launcher, agent and workers (the job folders are under its TMPDIR)
        tmp = str(out.parent / f"{out.name}-{name}-tmp")
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
                env = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if tmp in cmd or f"TMPDIR={tmp}" in env:
                found.append(int(pid))
        return found

    def kill_all(pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    a = machine("a")
    time.sleep(1.0)
    b = machine("b")
    late = False
    if kill:
        # b's processes are listed while waiting, so that the kill follows the
        # checkpoint at once: the job's last steps take only a second or so.
        deadline = time.monotonic() + 400
        while True:
            known = processes_of("b")
            if any((out / "checkpoints").glob("ckpt-000000004.pt")):
                break
            assert time.monotonic() < deadline, "no checkpoint at step 4"
            assert a.poll() is None and b.poll() is None, "a machine ended before the kill"
            time.sleep(0.05)
        kill_all(known)
        kill_all(processes_of("b"))  # any started since the listing
        late = any((out / "checkpoints").glob(f"ckpt-{int(steps):09d}.pt"))
        b.wait()
        time.sleep(3.0)
        b = machine("b")
    print(json.dumps({"a": a.wait(timeout=600), "b": b.wait(timeout=600), "late": late}))
    ''')


def _two_machines(tmp_path: Path, out: Path, steps: int, kill: bool = False) -> dict:
    config = write_config(tmp_path, out, checkpoint_every=4)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    cmd = in_namespace(sys.executable, str(driver), str(config), str(out), str(steps), "kill" if kill else "run")
    proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    # The whole logs to search (a killed machine's peers print long error
    # traces after the restart message), their tails to show on a failure.
    texts = [p.read_text() for p in sorted(tmp_path.glob(f"{out.name}-*.log"))]
    logs, tails = "".join(texts), "".join(t[-2000:] for t in texts)
    assert proc.returncode == 0, proc.stderr[-3000:] + tails
    return json.loads(proc.stdout.strip().splitlines()[-1]) | {"logs": logs, "tails": tails}


def _rows(run: Path) -> list[dict[str, str]]:
    with open(run / "train_log.csv", newline="") as f:
        return list(csv.DictReader(f))


def _final(run: Path, steps: int) -> dict[str, torch.Tensor]:
    return load_file(run / "weights" / f"net-s{steps:09d}.safetensors")


@pytest.mark.slow
@needs_namespace
def test_two_machines_train_as_one_and_a_machine_that_dies_rejoins(tmp_path):
    """One job, three ways: one machine of two processes; two machines of
    one process each (the same losses, step by step); and two machines of
    which one dies after the first checkpoint and comes back (the same
    network at the end as the run never interrupted)."""
    one = tmp_path / "one"
    proc = subprocess.run([sys.executable, "-m", "sayuri_async", "train", "--config",
                           str(write_config(tmp_path, one, checkpoint_every=4)), "--steps", str(STEPS), "--nproc", "2",
                           "--no-progress"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

    whole = tmp_path / "whole"
    ended = _two_machines(tmp_path, whole, STEPS)
    assert (ended["a"], ended["b"]) == (0, 0), ended["tails"]
    assert f"done: step {STEPS}" in ended["logs"] and "this machine's ranks finished" in ended["logs"]
    state = torch.load(whole / "checkpoints" / f"ckpt-{STEPS:09d}.pt", weights_only=True)
    assert state["data"]["world"] == 2
    want, got = _rows(one), _rows(whole)
    assert [int(r["step"]) for r in got] == list(range(2, STEPS + 1, 2))
    for a, b in zip(want, got):
        assert {k: float(b[k]) for k in FIGURES} == {k: pytest.approx(float(a[k]), rel=1e-4) for k in FIGURES}

    cut = tmp_path / "cut"
    ended = _two_machines(tmp_path, cut, STEPS, kill=True)
    assert not ended["late"], "the kill came after the job's last checkpoint: nothing was cut"
    assert (ended["a"], ended["b"]) == (0, 0), ended["tails"]
    assert "starting it again from the last checkpoint" in ended["logs"], ended["tails"]
    want, got = _final(whole, STEPS), _final(cut, STEPS)
    assert want.keys() == got.keys()
    for k in want:
        assert torch.allclose(got[k].float(), want[k].float(), rtol=1e-4, atol=1e-6), k
    steps = [int(r["step"]) for r in _rows(cut)]
    assert steps[-1] == STEPS and steps == sorted(set(steps))  # no step logged twice

@pytest.mark.parametrize("options, says", [
    (["--nnodes", "2"], "--nnodes 2: give --rdzv-endpoint HOST:PORT"),
    (["--nnodes", "2", "--rdzv-endpoint", "node0"], "--rdzv-endpoint 'node0': expected HOST:PORT"),
    (["--nnodes", "2", "--rdzv-endpoint", "node0:99999"], "with a port 1..65535"),
    (["--nnodes", "2", "--rdzv-endpoint", "node0:29400", "--rdzv-id", "a b"], "--rdzv-id 'a b': letters"),
    (["--rdzv-endpoint", "node0:29400"], "--rdzv-endpoint: only with --nnodes 2 or more"),
])
def test_rendezvous_options_are_checked_before_anything_starts(tmp_path, capsys, options, says):
    from sayuri_async.train.cli import main

    out = tmp_path / "run"
    assert main(["--config", str(write_config(tmp_path, out)), "--steps", "2", *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not (out / "checkpoints").exists()
