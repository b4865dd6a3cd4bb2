"""Whole games through the match runner (``gtp/match.py``, the synchronous
face of ``sayuri_async/rating/referee.py``): against GNU Go (skipped without it), and
under a 10 s sudden-death clock on 9x9, which the engine must not lose on
time."""
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
        dead = engine.send("final_status_list dead", timeout=120).split()
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
        # our engine counts the same way as the referee once its dead stones are off
        if not dead:
            assert rec.final_scores["sayuri-async"] == want
        assert rec.final_scores["gnugo"][:2] in ("B+", "W+") or rec.final_scores["gnugo"] == "0"
    # the result is recorded in the game record
    assert sgf.Sgf_game.from_string(rec.sgf).get_root().get("RE") == rec.result


def ready(engine: GtpProcess) -> None:
    """Wait out the engine's start: importing torch and, when the numba cache
    is cold (a source file changed since it was written), compiling, which
    took 40-60 s on a loaded 2-core machine, past the 60 s a GTP answer gets
    by default. Not what the clock test is about, so it happens first."""
    engine.send("name", timeout=600)


def warm_up_timed_search(engine: GtpProcess) -> None:
    """One timed move on a scratch board, off the referee's clock: with a cold
    numba cache the first timed ``genmove`` compiles (0.8 s where its budget
    is 0.24 s). It ends untimed (``time_settings 0 1 0``), so the clock in
    the game is the one ``play_game`` sets."""
    for cmd in ("boardsize 9", "clear_board", "time_settings 10 0 0", "genmove b", "time_settings 0 1 0"):
        engine.send(cmd, timeout=600)


@pytest.mark.slow
def test_ten_seconds_sudden_death_on_9x9_is_never_lost_on_time():
    timed = ours("--playouts", "1000000", "--seed", "3", name="timed")
    quick = ours("--playouts", "16", "--seed", "4", name="quick")
    try:
        ready(timed)
        ready(quick)
        warm_up_timed_search(timed)
        rec = play_game(timed, quick, size=9, komi=7.5, max_moves=160, main_time={1: 10.0})
    finally:
        timed.close()
        quick.close()
    black_moves = sum(1 for color, _ in rec.moves if color == 1)
    seen = (f"{rec.result} by {rec.reason} after {len(rec.moves)} moves; black used "
            f"{rec.time_used[1]:.2f} s, longest move {rec.max_move_time[1]:.2f} s")
    # the game ended on the board, not on the clock (nor by a forfeit)
    assert rec.reason in ("two passes", "resignation", "move limit"), seen
    assert rec.time_used[1] < 10.0, seen
    # it listened to the clock: 1,000,000 playouts would take minutes, and the
    # engine never gives one move more than a quarter of what is left
    assert rec.max_move_time[1] < 3.0, seen
    # it did think: its first moves get about 0.24 s each, far above the bare
    # overhead, so it spends a good share of its clock (a short game, ended
    # early by two passes, spends less)
    assert rec.max_move_time[1] > 0.15, seen
    assert rec.time_used[1] > min(3.0, 0.1 * black_moves), seen
    assert len(rec.moves) >= 40 or rec.reason in ("two passes", "resignation"), seen
