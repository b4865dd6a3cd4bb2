"""The real program (``python -m gtp``) over pipes, on inputs that once hung
it or got no answer: the same colour asked to move twice on tiny boards, an
analysis after such a move, huge ids and numbers, lines of non-ASCII
whitespace. Every command must be answered within a deadline."""
from __future__ import annotations

import sys

import pytest

from gtp.match import GtpProcess

DEADLINE = 30.0  # seconds for any one answer (the program answers these in milliseconds)


@pytest.fixture(scope="module")
def eng(tmp_path_factory):
    d = tmp_path_factory.mktemp("hangs")
    p = GtpProcess([sys.executable, "-m", "gtp", "--playouts", "50", "--seed", "11"], cwd=str(d))
    p.dir = d  # type: ignore[attr-defined]
    yield p
    p.close()


def raw_answer(p: GtpProcess, line: str) -> list[str]:
    """Write ``line`` and read one whole answer: its lines up to the empty one."""
    p.write_line(line)
    out = [p.read_line(DEADLINE)]
    while out[-1].strip():
        out.append(p.read_line(DEADLINE))
    return out[:-1]


@pytest.mark.parametrize("n,pairs", [(2, 25), (3, 15), (4, 8), (5, 5)])
def test_the_same_colour_moving_twice_is_always_answered(eng, n, pairs):
    # 25 of 100 such pairs hung on 2x2 and 6 of 60 on 3x3 (a black-to-move
    # subtree searched for white played occupied points and suicides)
    eng.send(f"boardsize {n}")
    for k in range(pairs):
        eng.send("clear_board")
        colour = "bw"[k % 2]
        for _ in range(3):
            eng.send(f"genmove {colour}", timeout=DEADLINE)


def test_an_analysis_after_the_same_colour_moved_streams_lines(eng):
    eng.send("boardsize 2")
    for _ in range(5):
        eng.send("clear_board")
        eng.send("genmove w", timeout=DEADLINE)
        eng.write_line("lz-analyze w 1")
        assert eng.read_line(DEADLINE) == "="
        assert eng.read_line(DEADLINE).startswith("info move ")
        eng.write_line("")
        while eng.read_line(DEADLINE).strip():
            pass
    assert eng.send("name") == "sayuri-async"
