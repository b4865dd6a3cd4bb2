"""Honest counting of rating games (docs/rating.md): dead stones left on the
board at two passes, against GNU Go and with scripted players; the varied
openings of a match; the Elo interval; the ladder script (resumed) and the
cross-check of results with GNU Go's ``final_score``.

The position: black walls column D, white column E, and a lone black stone
sits dead at H5 in white's area. Counted as it stands (Tromp-Taylor) the
stone makes white's area neutral and black wins by 20.5; with H5 removed
white wins by 16.5.
"""
from __future__ import annotations

import asyncio
import math
import os
import shutil

import pytest

from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.rating.match import MatchResult, match_openings
from sayuri_async.rating.referee import GtpPlayer, Player, area_score_without, referee_game

GNUGO = os.environ.get("GNUGO") or shutil.which("gnugo") or "/usr/games/gnugo"
HAS_GNUGO = os.access(GNUGO, os.X_OK)
needs_gnugo = pytest.mark.skipif(not HAS_GNUGO, reason="GNU Go is not installed (apt-get install gnugo)")


def wall_opening() -> list[int]:
    moves = []
    for row in range(1, 10):
        moves += [vertex_to_action(f"D{row}", 9), vertex_to_action(f"E{row}", 9)]
    return moves + [vertex_to_action("H5", 9)]  # black's dead stone; white to move


H5 = vertex_to_action("H5", 9)


class Passer(Player):
    """Always passes; holds ``dead`` dead (None: no opinion)."""

    def __init__(self, dead: list[int] | None = None) -> None:
        self.name, self.dead = "passer", dead

    async def genmove(self, game: Game) -> int:
        return game.pass_action

    async def dead_stones(self, game: Game) -> list[int] | None:
        return self.dead


def play(black: Player, white: Player, scoring: str):
    return asyncio.run(referee_game(black, white, 9, 7.5, opening=wall_opening(), scoring=scoring))


def test_area_score_without_dead_stones():
    g = Game(9, 7.5)
    for a in wall_opening():
        g.play(a)
    assert g.score() == 20.5
    assert area_score_without(g, [H5]) == -16.5


def test_scripted_players_agreeing_on_dead_stones_remove_them():
    rec = play(Passer([H5]), Passer([H5]), "agreed")
    assert (rec.result, rec.reason, rec.dead) == ("W+16.5", "agreed dead stones", [H5])
    rec = play(Passer([H5]), Passer([H5]), "tromp-taylor")
    assert (rec.result, rec.reason) == ("B+20.5", "two passes")


def test_disagreement_plays_on_once_then_counts_the_board():
    rec = play(Passer(None), Passer([H5]), "agreed")
    assert rec.reason == "play-on" and rec.result == "B+20.5"
    # two passes, then play-on: two more passes end it
    assert [a for _, a in rec.moves[-4:]] == [81, 81, 81, 81]


@pytest.mark.slow
@needs_gnugo
def test_gnugo_passes_with_a_dead_stone_and_tromp_taylor_counts_it_alive():
    white = GtpPlayer(f"{GNUGO} --mode gtp --chinese-rules --level 1")
    try:
        rec = play(Passer(None), white, "tromp-taylor")
    finally:
        asyncio.run(white.close())
    assert rec.game.stones().reshape(-1)[H5] == 1  # GNU Go left it there
    assert rec.result.startswith("B+")  # (GNU Go may fill a point of its area first: B+19.5)
    assert area_score_without(rec.game, [H5]) == -16.5


@pytest.mark.slow
@needs_gnugo
def test_gnugo_agrees_on_the_dead_stone():
    white = GtpPlayer(f"{GNUGO} --mode gtp --chinese-rules --level 1")
    try:
        rec = play(Passer([H5]), white, "agreed")
    finally:
        asyncio.run(white.close())
    assert (rec.result, rec.reason, rec.dead) == ("W+16.5", "agreed dead stones", [H5])


@pytest.mark.slow
@needs_gnugo
def test_play_on_makes_gnugo_capture_the_dead_stone():
    white = GtpPlayer(f"{GNUGO} --mode gtp --chinese-rules --capture-all-dead --level 1")
    try:
        rec = play(Passer(None), white, "agreed")
    finally:
        asyncio.run(white.close())
    assert rec.game.stones().reshape(-1)[H5] == 0  # captured
    assert rec.result.startswith("W+") and rec.score == pytest.approx(-16.5)


def test_match_openings_are_distinct_legal_and_seeded():
    ops = match_openings(40, 9, moves=2, seed=3)
    assert len(ops) == 40 and len({tuple(o) for o in ops}) == 40
    assert ops == match_openings(40, 9, moves=2, seed=3)
    assert ops != match_openings(40, 9, moves=2, seed=4)
    for o in ops:
        g = Game(9)
        for a in o:
            g.play(a)
    # more openings than two moves can give: the openings grow longer, still distinct
    many = match_openings(30, 5, moves=1, seed=0)
    assert len({tuple(o) for o in many}) == 30


def test_elo_interval_from_the_wilson_bounds():
    r = MatchResult("a", "b", wins=7, losses=3)
    lo, hi = r.elo_interval()
    lo_p, hi_p = r.wilson()
    assert lo == pytest.approx(-400 * math.log10(1 / lo_p - 1))
    assert hi == pytest.approx(-400 * math.log10(1 / hi_p - 1))
    assert lo < r.elo()[0] < hi
    zero = MatchResult("a", "b", losses=10)
    lo, hi = zero.elo_interval()
    assert lo == -math.inf and math.isfinite(hi) and hi < 0


@pytest.mark.slow
@needs_gnugo
def test_ladder_script_writes_markdown_and_json(tmp_path):
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import rate_gnugo

    out = tmp_path / "rating"
    assert rate_gnugo.main(["--weights", "random", "--levels", "1", "--games", "2", "--board", "7",
                            "--playouts", "4", "--out", str(out), "--gnugo", GNUGO]) == 0
    table = json.loads(out.with_suffix(".json").read_text())
    row = table["levels"][0]
    assert row["level"] == 1 and row["games"] == 2 and row["wins"] + row["losses"] + row["draws"] == 2
    assert len(row["wilson95"]) == 2 and row["seconds_per_move"] > 0
    md = out.with_suffix(".md").read_text()
    assert "| 1 | 2 |" in md and "Wilson" in md
    # the same command with more games resumes: the two games are counted, not played again
    assert rate_gnugo.main(["--weights", "random", "--levels", "1", "--games", "3", "--board", "7",
                            "--playouts", "4", "--out", str(out), "--gnugo", GNUGO]) == 0
    again = json.loads(out.with_suffix(".json").read_text())["levels"][0]
    assert again["games"] == 3 and again["complete"]
    assert {k: again["per_game"][k] for k in ("0", "1")} == row["per_game"]
    # other settings over the table: refused
    assert rate_gnugo.main(["--weights", "random", "--levels", "1", "--games", "3", "--board", "7",
                            "--playouts", "5", "--out", str(out), "--gnugo", GNUGO]) == 2
    assert rate_gnugo.main(["--weights", str(tmp_path / "nope"), "--out", str(out)]) == 2


def test_a_forked_gtp_player_keeps_its_name():
    g = GtpPlayer("/usr/games/gnugo --mode gtp --level 5")
    g.name = "gnugo-l5"
    f = g.fork()
    assert f.name == "gnugo-l5" and f.command == g.command and f.proc is None


@pytest.mark.slow
@needs_gnugo
def test_crosscheck_compares_recorded_results_with_gnugo_final_score(tmp_path, capsys):
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import crosscheck_gnugo

    # black walls column E, white column F: black 45 points, white 36 + 7.5 komi: B+1.5
    moves = "".join(f";B[e{c}];W[f{c}]" for c in "abcdefghi")
    for name, result in (("right.sgf", "B+1.5"), ("wrong.sgf", "W+3.5")):
        (tmp_path / name).write_text(f"(;FF[4]GM[1]SZ[9]KM[7.5]RU[Chinese]RE[{result}]{moves})")
    assert crosscheck_gnugo.main([str(tmp_path), "--gnugo", GNUGO]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert out["games"] == 2 and out["same_winner"] == 1 and out["same_result"] == 1
    assert len(out["differ"]) == 1 and "wrong.sgf" in out["differ"][0]
    assert crosscheck_gnugo.main([str(tmp_path / "none"), "--gnugo", GNUGO]) == 2
