"""A controller that leaves during streamed analysis: the real program
(``python -m gtp``) over pipes, its stdout closed by the client after the
first ``info`` line. Nothing went wrong on the engine's side, so it ends
quietly: exit status 0, no "internal error", no traceback, no broken-pipe
message on stderr."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the engine as a subprocess
DEADLINE = 60.0


@pytest.mark.parametrize("close_stdin", [False, True])
def test_closing_the_pipe_during_kata_analyze_ends_quietly(tmp_path, close_stdin):
    proc = subprocess.Popen([sys.executable, "-m", "gtp", "--weights", "random", "--seed", "3"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(b"boardsize 9\nkata-analyze b 5 ownership true\n")
        proc.stdin.flush()
        seen = []
        while not any(line.startswith(b"info move") for line in seen):
            line = proc.stdout.readline()
            assert line, f"the engine stopped before analysing: {proc.stderr.read().decode()}"
            seen.append(line)
        proc.stdout.close()  # the client goes away while lines keep coming
        if close_stdin:
            proc.stdin.close()
        rc = proc.wait(DEADLINE)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0, err
    for word in ("internal error", "Traceback", "Broken pipe", "OutputClosed"):
        assert word not in err, err
