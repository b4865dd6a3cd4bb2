"""What the fault-injection tests (tests/test_faults*.py) share: run a
command with a scripted kill (``killpoint``), watch every process it starts,
and check what the kill left.

Vocabulary
----------
Run         ``run_with_kill(cmd, kill_at)``: the command's exit status, its
            stderr, and the processes it had started (``lifetime.descendant_pids``,
            polled while it ran) that outlived it by ``GRACE_S`` (orphans;
            they are then ended so that one failure does not spoil the next
            test).
Step        one link of a chain of runs over the same folder: a kill request
            (``killpoint``: ``PATTERN@N``), the exit statuses it may end with,
            and what must be true after it. ``run_chain`` runs each step,
            then checks: no orphan, every file validates
            (``validate.check_run``), and no file that existed before the
            step changed or went (``validate.overwritten``). The run after a
            kill is the restart of the run before it; a chain ends with a
            run without a kill that must finish (exit status 0) and leave no
            temporary behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sayuri_async.killpoint import ENV
from sayuri_async.lifetime import descendant_pids, pid_running
from sayuri_async.validate import check_run, file_digests, overwritten

ROOT = Path(__file__).resolve().parents[1]
GRACE_S = 20.0  # how long a killed run's processes may take to end (an engine writes its whole games)
KILLED = -signal.SIGKILL


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "sayuri_async.cli", *args]


@dataclass
class Run:
    returncode: int
    stderr: str
    processes: int
    orphans: list[int]


def run_with_kill(cmd: list[str], kill_at: str | None, timeout: float = 300) -> Run:
    env = dict(os.environ)
    env.pop(ENV, None)
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny nets: a second torch thread only spins on a loaded machine
    if kill_at:
        env[ENV] = kill_at
    # stderr to a file, not a pipe: an orphan holding the pipe would keep a reader waiting for ever
    with open(os.devnull, "wb") as devnull, tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=devnull, stderr=err_file)
        family: set[int] = set()
        t0, timed_out = time.time(), False
        while proc.poll() is None:
            family |= set(descendant_pids(proc.pid))
            if time.time() - t0 > timeout:
                proc.kill()
                proc.wait()
                timed_out = True
            time.sleep(0.1)
        t1 = time.time()
        while any(pid_running(p) for p in family) and time.time() - t1 < GRACE_S:
            time.sleep(0.1)
        orphans = [p for p in family if pid_running(p)]
        for p in orphans:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        err_file.seek(0)
        err = err_file.read().decode("utf-8", "replace")
    assert not timed_out, f"{cmd} (kill at {kill_at}) still running after {timeout} s\n{err}"
    return Run(proc.returncode, err, len(family), orphans)


@dataclass
class Step:
    kill_at: str | None  # None: the final run, which must finish
    exits: tuple[int, ...] = (KILLED,)  # the statuses this step may end with
    min_processes: int = 0  # processes it must have started (so that orphans could be seen)


def run_chain(folder: Path, command, steps: list[Step]) -> list[Run]:
    """Run ``command(i)`` for each step in turn over ``folder`` and check
    it (see the vocabulary); returns the runs."""
    runs = []
    for i, step in enumerate(steps):
        before = file_digests(folder) if folder.exists() else {}
        t0 = time.time()
        r = run_with_kill(command(i), step.kill_at)
        what = f"step {i} (kill at {step.kill_at})"
        print(f"{what}: exit {r.returncode}, {r.processes} processes, {time.time() - t0:.1f} s", flush=True)
        assert r.returncode in (step.exits if step.kill_at else (0,)), f"{what}: exit {r.returncode}\n{r.stderr}"
        assert not r.orphans, f"{what}: {len(r.orphans)} of {r.processes} processes outlived the run"
        assert r.processes >= step.min_processes, f"{what}: only {r.processes} processes started"
        bad, checked = check_run(folder)
        assert not bad, f"{what}: files that do not validate: {bad}"
        lost = overwritten(before, file_digests(folder))
        assert not lost, f"{what}: earlier files overwritten: {lost}"
        if step.kill_at is None:
            left = [p for p in folder.rglob(".*.tmp")]
            assert not left, f"{what}: temporaries of killed writes left: {left}"
        runs.append(r)
    return runs
