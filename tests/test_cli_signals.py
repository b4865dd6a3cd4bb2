"""One exit rule after a signal, for every command (``usererror``'s
"signals"): 128 + the signal's number, 130 for SIGINT (Ctrl-C) and 143 for
SIGTERM, with one last line and no traceback, whether the command stops at
once (KeyboardInterrupt, ``Terminated``) or first finishes its files (self-play
and tune call ``stopped_by``). A process forked from a command ends on
SIGTERM as by default."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sayuri_async.usererror import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, answered, stopped_by

ROOT = Path(__file__).resolve().parents[1]
STATUS = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}


# ---- the rule itself, in this process ----------------------------------------------------------------------
def test_the_exit_statuses_are_128_plus_the_signal():
    assert (EXIT_INTERRUPTED, EXIT_TERMINATED) == (130, 143)


def test_an_interrupt_is_130_and_one_line(capsys):
    @answered("demo")
    def main(argv=None):
        raise KeyboardInterrupt

    assert main() == 130
    assert capsys.readouterr().err.strip() == "sayuri-async demo: interrupted"


def test_sigterm_unwinds_the_command_and_is_143(capsys):
    unwound = []
    before = signal.getsignal(signal.SIGTERM)

    @answered("demo")
    def main(argv=None):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        finally:
            unwound.append(True)  # temporaries are removed in blocks like this one
        return 0

    t0 = time.monotonic()
    assert main() == 143
    assert time.monotonic() - t0 < 5 and unwound == [True]
    assert capsys.readouterr().err.strip() == "sayuri-async demo: terminated (SIGTERM)"
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is the command's only
    assert issubclass(Terminated, SystemExit) and not issubclass(Terminated, Exception)


@pytest.mark.parametrize("signum,returned", [(signal.SIGINT, 0), (signal.SIGTERM, 0), (signal.SIGINT, 1)])
def test_a_clean_stop_on_a_signal_exits_with_the_signal_status(signum, returned, capsys):
    @answered("demo")
    def main(argv=None):
        stopped_by(signum)  # what self-play's handler calls when it has finished its files
        return returned

    assert main() == 128 + signum
    assert capsys.readouterr().err.strip() == f"sayuri-async demo: stopped by {signal.Signals(signum).name}"

    @answered("demo")
    def again(argv=None):
        return 0

    assert again() == 0  # the next command starts with no signal noted


def test_a_forked_child_ends_on_sigterm_as_by_default():
    result = {}

    @answered("demo")
    def main(argv=None):
        pid = os.fork()
        if pid == 0:  # a data-loader worker, say
            try:
                time.sleep(30)
            finally:
                os._exit(3)  # reached only if SIGTERM raised here instead of ending the process
        time.sleep(0.2)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        result["status"] = status
        return 0

    assert main() == 0
    assert os.WIFSIGNALED(result["status"]) and os.WTERMSIG(result["status"]) == signal.SIGTERM


# ---- the real commands ---------------------------------------------------------------------------------------
class Running:
    """A command of the real program, its output read as it comes."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sayuri_async.cli", *argv], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")), daemon=True).start()

    def wait_for(self, marker: str, timeout: float = 900.0) -> None:  # a first start compiles for minutes
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(marker in line for line in self.out + self.err):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(f"no {marker!r} within {timeout} s:\n{''.join(self.out)}\n{''.join(self.err)}")

    def finish(self, timeout: float = 300.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            time.sleep(0.2)  # the readers take the last lines


def train_setup(tmp: Path) -> list[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_train_chunks import make_chunk

    for i in range(2):
        make_chunk(tmp / "data" / f"chunk-000001-t-{i:06d}.npz", n=7, positions=64, seed=i)
    cfg = tmp / "t.toml"
    cfg.write_text(f'[data]\ndir = "{tmp / "data"}"\nboard_size = 7\nwindow_min_positions = 10\nworkers = 0\n'
                   f'[model]\nblocks = 1\nchannels = 8\n[optim]\nbatch_size = 8\n'
                   f'[run]\nout = "{tmp / "run"}"\ndevice = "cpu"\nlog_every = 1\n')
    return ["train", "--config", str(cfg), "--steps", "1000000", "--no-progress"]


COMMANDS = {
    # (argv, the line that says it runs, seconds to let it run further)
    "selfplay": (lambda tmp: ["selfplay", "--no-tui", "--board-size", "7", "--playouts", "2", "--parallel-games",
                              "2", "--batch-size", "2", "--num-games", "0", "--out", str(tmp / "sp")],
                 "self-play:", 3.0),
    "match": (lambda tmp: ["match", "random", "random", "--games", "2000", "--board", "7", "--playouts", "2",
                           "--concurrency", "2"], "game ", 0.5),
    "gtp": (lambda tmp: ["gtp", "--weights", "random"], "= sayuri-async", 0.5),  # the answer to `name`
    "train": (train_setup, "step ", 0.5),
    "tune": (lambda tmp: ["tune", "--board-size", "7", "--playouts", "2", "--batch", "2", "--warmup", "600",
                          "--out", str(tmp / "tune")], "tune:", 3.0),
}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_exits_128_plus_the_signal(command, signum, tmp_path):
    make, marker, settle = COMMANDS[command]
    run = Running(make(tmp_path), ROOT)
    if command == "gtp":  # its answer shows the engine is up (warm-up and compiling done)
        run.proc.stdin.write("name\n")
        run.proc.stdin.flush()
    run.wait_for(marker)
    time.sleep(settle)
    run.proc.send_signal(signum)
    status = run.finish()
    err = "".join(run.err)
    assert status == STATUS[signum], f"{command}: status {status} after {signum.name}\n{err}"
    assert "Traceback" not in err, err
    last = [line for line in run.err if line.strip()][-1]
    prefixes = (f"sayuri-async {command}: ",) + (("sayuri-async: ",) if command == "gtp" else ())  # GTP's log lines
    assert last.startswith(prefixes), err
    words = ("interrupted", "stopped by SIGINT") if signum == signal.SIGINT else ("terminated", "SIGTERM")
    assert any(w in last for w in words), last


def test_a_task_a_signal_ended_leaves_no_log_of_an_unretrieved_exception(capfd):
    """A signal's exception raised inside a running task ends asyncio.run;
    the task's own copy of it is not reported again at exit."""
    import asyncio
    import gc

    from sayuri_async.usererror import Terminated

    async def game() -> None:
        await asyncio.sleep(0)
        raise Terminated()  # as the SIGTERM handler raises it while a game's task runs

    async def body() -> None:
        await asyncio.gather(game(), asyncio.sleep(5))

    with pytest.raises(Terminated):
        asyncio.run(body())
    gc.collect()
    err = capfd.readouterr().err
    assert "never retrieved" not in err and "Traceback" not in err, err
