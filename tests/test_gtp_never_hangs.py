"""The real program (``python -m gtp``) over pipes, on inputs that once hung
it or got no answer: the same colour asked to move twice on tiny boards, an
analysis after such a move, huge ids and numbers, lines of non-ASCII
whitespace. Every command must be answered within a deadline."""
from __future__ import annotations

import sys

import pytest

from gtp.match import GtpProcess

pytestmark = pytest.mark.slow  # one engine subprocess (``eng``, conftest.py)
GTP_ARGS = ("--playouts", "50", "--seed", "11")
DEADLINE = 30.0  # seconds for any one answer (the program answers these in milliseconds)


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


def test_a_huge_command_id_is_refused_and_the_program_goes_on(eng):
    # 5,000 digits: over Python's int-string limit, which once killed the
    # program with ValueError
    answer = raw_answer(eng, "9" * 5000 + " name")
    assert len(answer) == 1 and answer[0].startswith("? syntax error: command id ")
    assert "longer than 18 digits" in answer[0] and len(answer[0]) < 200
    assert raw_answer(eng, "0" * 5000 + "7 name") == ["=7 sayuri-async"]  # leading zeros are no digits
    assert raw_answer(eng, "999999999999999999 name") == ["=999999999999999999 sayuri-async"]


@pytest.mark.parametrize("command", ["boardsize {}", "fixed_handicap {}", "place_free_handicap {}",
                                     "loadsgf x.sgf {}", "time_settings 1 1 {}", "komi {}",
                                     "lz-analyze b {}", "kata-analyze b interval {}", "lz-analyze b maxmoves {}",
                                     "lz-genmove_analyze b {}", "kata-genmove_analyze {}",
                                     "lz-analyze b avoid b D4 {}", "rectangular_boardsize {} 9"])
@pytest.mark.parametrize("digits", [400, 5000])
def test_absurd_numbers_get_a_reason(eng, command, digits):
    eng.send("boardsize 9")
    answer = raw_answer(eng, "31 " + command.format("7" * digits))
    assert len(answer) == 1 and answer[0].startswith("?31 ")
    assert "internal error" not in answer[0] and len(answer[0]) < 300
    assert "range" in answer[0] or "unacceptable size" in answer[0], answer[0]
    assert stones_on_board(eng) == 0  # nothing was played


def stones_on_board(p: GtpProcess) -> int:
    return len(p.send("list_stones black").split()) + len(p.send("list_stones white").split())


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2028", "\u0085", "\u2003\u00a0"])
def test_non_ascii_whitespace_is_no_separator_and_gets_an_answer(eng, space):
    eng.send("boardsize 9")
    eng.send("clear_board")
    assert raw_answer(eng, space)[0].startswith("? unknown command ")
    assert raw_answer(eng, f"41 {space}")[0].startswith("?41 unknown command ")
    assert raw_answer(eng, f"42 genmove{space}b")[0].startswith("?42 unknown command ")
    assert raw_answer(eng, f"43 play b{space}D4")[0].startswith("?43 syntax error: usage")
    assert raw_answer(eng, f"44 play b D4{space}")[0].startswith("?44 syntax error: invalid vertex")
    assert stones_on_board(eng) == 0
    assert raw_answer(eng, f"45 name \t # {space}") == ["=45 sayuri-async"]


def rss_bytes(p: GtpProcess) -> int:
    with open(f"/proc/{p.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_line_over_a_mebibyte_is_refused_and_memory_stays_bounded(eng):
    before = rss_bytes(eng)
    answer = raw_answer(eng, "51 play b " + "x" * (32 << 20))  # 32 MiB: only the first MiB is kept
    assert answer == [f"?51 syntax error: line longer than {1 << 20} bytes"]
    assert rss_bytes(eng) - before < 16 << 20
    eng.write_line("# " + "y" * (2 << 20))  # a long comment: no answer
    assert raw_answer(eng, "53 name") == ["=53 sayuri-async"]
