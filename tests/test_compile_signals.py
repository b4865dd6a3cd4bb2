"""SIGTERM and Ctrl-C while numba compiles end the command at once, with
its one line and 143 or 130; self-play's clean stop used to wait for the
compile and for the games after it. The signal is sent from inside a
compile (a numba compile listener that starts before the command's own),
so it lands there every time."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sayuri_async import compile_signals

ROOT = Path(__file__).resolve().parents[1]

# sends ``SIG`` to this process when a compile starts inside another one (by
# then the outermost has begun, and with it the command's handler), once an
# event loop runs where ``IN_LOOP`` asks for one
KILL_IN_COMPILE = """
import asyncio, os, signal, sys
from numba.core import event

depth = [0]
fired = [False]


class Kill(event.Listener):
    def on_start(self, ev):
        depth[0] += 1
        if depth[0] >= 2 and not fired[0] and (not IN_LOOP or asyncio._get_running_loop() is not None):
            fired[0] = True
            os.kill(os.getpid(), SIG)

    def on_end(self, ev):
        depth[0] -= 1


event.register("numba:compile", Kill())
"""

TOY = KILL_IN_COMPILE + """
import numpy as np
from numba import njit
from sayuri_async.compile_signals import end_on_signals_while_compiling

stopped = []
signal.signal(signal.SIGTERM, lambda s, f: stopped.append(s))  # a clean stop's handler: it only notes the signal
end_on_signals_while_compiling("toy")


@njit
def inner(x):
    return x * 2


@njit
def outer(x):
    return inner(x) + 1


print(outer(np.int64(20)), stopped)
"""


def run_toy(sig: int) -> subprocess.CompletedProcess:
    code = f"IN_LOOP = False\nSIG = {int(sig)}\n" + TOY
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("sig, status, line", [(signal.SIGTERM, 143, "sayuri-async toy: terminated (SIGTERM)"),
                                               (signal.SIGINT, 130, "sayuri-async toy: interrupted")],
                         ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_a_compile_ends_the_process_there(sig, status, line):
    out = run_toy(sig)
    assert out.returncode == status, (out.stdout, out.stderr)
    assert out.stderr.strip() == line and out.stdout == ""  # the compile never finished, nothing after it ran


def test_outside_a_compile_the_handlers_found_stay(monkeypatch):
    seen = []

    def clean_stop(signum, frame):
        seen.append(signum)

    monkeypatch.setitem(compile_signals._state, "pid", os.getpid())
    monkeypatch.setitem(compile_signals._state, "depth", 0)
    monkeypatch.setitem(compile_signals._state, "saved", {})
    old_term = signal.signal(signal.SIGTERM, clean_stop)
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # an engine process leaves Ctrl-C to its parent
    try:
        compile_signals.compile_started()
        compile_signals.compile_started()  # nested
        assert signal.getsignal(signal.SIGTERM) is compile_signals._end_now
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        compile_signals.compile_ended()
        assert signal.getsignal(signal.SIGTERM) is compile_signals._end_now  # the outer compile goes on
        compile_signals.compile_ended()
        assert signal.getsignal(signal.SIGTERM) is clean_stop
        compile_signals.compile_ended()  # an end without a start changes nothing
        assert signal.getsignal(signal.SIGTERM) is clean_stop
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)


@pytest.mark.slow
def test_selfplay_ends_at_once_on_sigterm_during_its_first_compile(tmp_path):
    """The command itself, on a copy of the package with no compiled code
    cached: SIGTERM arrives while the first search compiles inside the
    event loop, where self-play's clean stop waits for the loop."""
    install = tmp_path / "install"
    shutil.copytree(ROOT / "sayuri_async", install / "sayuri_async",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out_dir = tmp_path / "sp"
    code = (f"import sys\nsys.path.insert(0, {str(install)!r})\nIN_LOOP = True\nSIG = {int(signal.SIGTERM)}\n"
            + KILL_IN_COMPILE
            + "from sayuri_async.cli import main\n"
            + f"sys.argv = ['sayuri-async', 'selfplay', '--no-tui', '--board-size', '7', '--num-games', '50', "
              f"'--out', {str(out_dir)!r}]\n"
            + "sys.exit(main())\n")  # as the program runs it: cli.main reads sys.argv
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=1800)
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert out.returncode == 143, out.stderr
    assert lines[-1] == "sayuri-async selfplay: terminated (SIGTERM)", out.stderr
    assert "Traceback" not in out.stderr
    assert not list(out_dir.rglob("*.npz"))  # stopped before any game ended


def _start_selfplay(install: Path | None, out_dir: Path, *extra: str) -> subprocess.Popen:
    """``sayuri-async selfplay`` as the program runs it, from the package
    copy ``install`` (None: this checkout)."""
    path = f"sys.path.insert(0, {str(install)!r})\n" if install is not None else ""
    argv = ["sayuri-async", "selfplay", "--no-tui", "--board-size", "7", "--out", str(out_dir), *extra]
    code = f"import sys\n{path}sys.argv = {argv!r}\nfrom sayuri_async.cli import main\nsys.exit(main())\n"
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK")}
    return subprocess.Popen([sys.executable, "-c", code], cwd=install.parent if install else ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(found, proc: subprocess.Popen, limit: float = 600) -> None:
    import time

    t0 = time.monotonic()
    while not found():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < limit
        time.sleep(0.2)


@pytest.mark.slow
def test_engine_processes_that_compile_end_at_once_and_the_run_stops_as_asked(tmp_path):
    """Two engine processes compile on a cold cache: the parent's SIGTERM
    reaches them as a signal too, they end at once (where their stop
    request waited for the whole compile), and the run stops cleanly (143,
    "stopped by SIGTERM", no failure) with no game played."""
    install = tmp_path / "install"
    shutil.copytree(ROOT / "sayuri_async", install / "sayuri_async",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out_dir = tmp_path / "sp"
    proc = _start_selfplay(install, out_dir, "--procs", "2", "--num-games", "50", "--parallel-games", "2")
    _wait_for(lambda: list(install.rglob("*.nbi")), proc)  # the engines compile (and cache what is done)
    proc.send_signal(signal.SIGTERM)
    try:  # the whole compile takes minutes here (the stop that waited for it: 391 s)
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("SIGTERM was not honoured within 120 s: the engines went on compiling")
    lines = [x for x in err.splitlines() if x.strip()]
    assert proc.returncode == 143, err
    assert lines[-1] == "sayuri-async selfplay: stopped by SIGTERM" and "failed" not in err, err
    assert "Traceback" not in err
    assert not list(out_dir.rglob("*.npz"))


@pytest.mark.slow
def test_engine_processes_that_play_still_stop_cleanly(tmp_path):
    out_dir = tmp_path / "sp"
    proc = _start_selfplay(None, out_dir, "--procs", "2", "--num-games", "0", "--parallel-games", "2",
                           "--playouts", "8", "--batch-size", "2")
    _wait_for(lambda: {p.name.split("-")[-2] for p in (out_dir / "data").glob("chunk-*.npz")} >= {"p0", "p1"},
              proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err and "failed" not in err and "Traceback" not in err, err
    assert not list(out_dir.rglob(".*.tmp"))
