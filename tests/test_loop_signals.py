"""Ctrl-C while the RL loop trains: SIGINT to the loop's process, or to its
whole process group (what Ctrl-C sends), ends it within seconds with exit
status 130 and the one line that says the next start continues from the last
finished step, and no process of the loop is left.

The loop starts with SIGINT ignored, as a script's background job does (``cmd
&`` without job control): its self-play phase set a handler of its own and
honoured Ctrl-C while the training phase after it, with the ignored
disposition put back, trained on."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sayuri_async.lifetime import descendant_pids, pid_running
from test_loop import TINY

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals to process groups and /proc")
LINE = "sayuri-async loop: interrupted; the next start continues from the last finished step"


def _ignore_sigint() -> None:  # as a shell without job control starts a background job
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _training(proc: subprocess.Popen, out: Path, timeout: float = 600) -> list[int]:
    """The loop's processes once it is well into its training phase."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, out.read_text(errors="replace")[-3000:]
        text = out.read_text(errors="replace")
        if "train to step" in text and text.count("\nstep ") >= 2:
            return [proc.pid, *descendant_pids(proc.pid)]
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("the loop did not reach its training phase in time")


@pytest.mark.slow
@pytest.mark.parametrize("to_group", [False, True], ids=["process", "group"])
def test_ctrl_c_ends_the_loop_while_it_trains(tmp_path, to_group):
    cfg = tmp_path / "loop.toml"
    cfg.write_text(TINY.format(generations=1).replace("steps_per_generation = 4", "steps_per_generation = 100000")
                   .replace("workers = 0", "workers = 1"))
    out = tmp_path / "out.txt"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with open(out, "wb") as f:  # a file, not a pipe: a process left behind would hold a pipe open
        proc = subprocess.Popen([sys.executable, "-m", "sayuri_async.cli", "loop", "--config", str(cfg),
                                 "--workspace", str(tmp_path / "ws")], cwd=ROOT, env=env, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_ignore_sigint)
    pids = _training(proc, out)
    if to_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = out.read_text(errors="replace")
    assert rc == 130, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert [line for line in text.splitlines() if line.startswith("sayuri-async")] == [LINE], text[-3000:]
    end = time.monotonic() + 20
    while any(pid_running(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.1)
    assert not [p for p in pids if pid_running(p)], "processes of the loop outlived it"
