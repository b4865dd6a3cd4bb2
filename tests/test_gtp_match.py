"""Whole games through the match runner: against GNU Go (skipped without
it), and under a 10 s sudden-death clock on 9x9, which the engine must not
lose on time."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from sgfmill import boards, sgf

from gtp.match import GtpProcess, play_game

GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)


def ours(*extra: str, name: str = "sayuri-async") -> GtpProcess:
    return GtpProcess([sys.executable, "-m", "gtp", *extra], name=name, stderr=subprocess.DEVNULL)


def tromp_taylor(sgf_text: str) -> float:
    """Black minus white area minus komi with sgfmill's own board (an
    independent count of the final position)."""
    game = sgf.Sgf_game.from_string(sgf_text)
    board = boards.Board(game.get_size())
    for node in game.get_main_sequence():
        colour, move = node.get_move()
        if colour is not None and move is not None:
            board.play(move[0], move[1], colour)
    return board.area_score() - game.get_komi()


@pytest.mark.gnugo
@pytest.mark.slow
@pytest.mark.skipif(GNUGO is None, reason="GNU Go is not installed (apt-get install gnugo)")
def test_full_game_against_gnugo():
    engine = ours("--playouts", "32", "--seed", "11")
    gnugo = GtpProcess([GNUGO, "--mode", "gtp", "--chinese-rules", "--positional-superko", "--level", "0"],
                       name="gnugo", stderr=subprocess.DEVNULL)
    try:
        rec = play_game(engine, gnugo, size=9, komi=7.5, max_moves=400)
        # both programs saw the same moves: they must hold the same stones
        # (captures resolved the same way) at the end
        for color in ("black", "white"):
            assert set(engine.send(f"list_stones {color}").split()) == \
                set(gnugo.send(f"list_stones {color}").split())
    finally:
        engine.close()
        gnugo.close()
    # both sides agreed the game was over: it ended on two passes in a row
    assert rec.reason in ("two passes", "resignation"), rec.reason
    if rec.reason == "two passes":
        assert rec.moves[-1][1] == rec.moves[-2][1] == 81
        expected = tromp_taylor(rec.sgf)
        want = "0" if expected == 0 else f"{'B' if expected > 0 else 'W'}+{abs(expected):g}"
        assert rec.result == want
        # our engine counts the same way as the referee
        assert rec.final_scores["sayuri-async"] == want
        assert rec.final_scores["gnugo"][:2] in ("B+", "W+") or rec.final_scores["gnugo"] == "0"
    # the result is recorded in the game record
    assert sgf.Sgf_game.from_string(rec.sgf).get_root().get("RE") == rec.result


@pytest.mark.slow
def test_ten_seconds_sudden_death_on_9x9_is_never_lost_on_time():
    timed = ours("--playouts", "1000000", "--seed", "3", name="timed")
    quick = ours("--playouts", "16", "--seed", "4", name="quick")
    try:
        rec = play_game(timed, quick, size=9, komi=7.5, max_moves=160, main_time={1: 10.0})
    finally:
        timed.close()
        quick.close()
    assert rec.reason != "time" and not rec.result.endswith("+T"), rec
    assert rec.time_used[1] < 10.0
    # it did think: more than the bare overhead, using a good share of its clock
    assert rec.time_used[1] > 3.0
    assert len(rec.moves) >= 40 or rec.reason in ("two passes", "resignation")
