"""Scoring: Tromp-Taylor area with komi, territory with prisoners, result
strings and ownership, on positions whose counts are worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game, Rules
from sayuri_async.go.scoring import area_map, area_score, ownership, result_string, territory_score

# Black wall on column E, white wall on column F (9x9).
# Area: black A-E = 5 * 9 = 45, white F-J = 4 * 9 = 36.
# Territory: black A-D = 36, white G-J = 3 * 9 = 27.
WALLS = "\n".join(["....XO..."] * 9)

# Black wall on D, white wall on F, column E empty between them (dame).
DAME = "\n".join(["...X.O..."] * 9)

# White wall on E and one black stone at H5 inside white's side.
# Left region A-D (36 points) touches white only: white's.
# Right region F-J minus H5 (35 points) touches both: neutral.
# Black: 1 stone. White: 9 stones + 36.
INVADER = "\n".join(["....O...."] * 4 + ["....O..X."] + ["....O...."] * 4)


def test_area_score_with_komi(diagram) -> None:
    g = diagram(WALLS, komi=7.5)
    assert g.score() == pytest.approx(45 - 36 - 7.5)
    assert g.result() == "B+1.5"
    g = diagram(WALLS, komi=9.5)
    assert g.result() == "W+0.5"
    g = diagram(WALLS, komi=9.0)
    assert g.score() == 0.0 and g.result() == "0"
    g = diagram(WALLS, komi=0.0)
    assert g.result() == "B+9"


def test_dame_is_nobodys(diagram) -> None:
    g = diagram(DAME, komi=0.0)
    assert g.score() == 0.0 and g.result() == "0"
    g = diagram(DAME, komi=0.5)
    assert g.result() == "W+0.5"
    own = ownership(g.rec).reshape(9, 9)
    assert np.all(own[:, :4] == 1) and np.all(own[:, 4] == 0) and np.all(own[:, 5:] == -1)


def test_region_touching_both_colours_is_neutral(diagram) -> None:
    g = diagram(INVADER, komi=7.5)
    assert g.score() == pytest.approx(1 - 45 - 7.5)
    assert g.result() == "W+51.5"
    out = np.zeros(81, dtype=np.int8)
    area_map(g.rec, out)
    a = lambda v: vertex_to_action(v, 9)  # noqa: E731
    assert out[a("A1")] == B.WHITE and out[a("D9")] == B.WHITE
    assert out[a("E5")] == B.WHITE  # a white stone
    assert out[a("H5")] == B.BLACK  # the black stone itself
    assert out[a("J1")] == 0 and out[a("F5")] == 0


def test_empty_board_is_komi_only() -> None:
    for n in (7, 9, 13, 19):
        g = Game(n, komi=7.5)
        assert g.score() == -7.5 and g.result() == "W+7.5"
        assert not ownership(g.rec).any()


def test_single_stone_owns_the_board() -> None:
    g = Game(19, komi=6.5)
    g.play_vertex("K10")
    assert g.score() == pytest.approx(361 - 6.5)
    assert g.result() == "B+354.5"
    assert np.all(ownership(g.rec) == 1)


def test_territory_scoring_counts_prisoners(diagram) -> None:
    g = diagram(WALLS, komi=6.5, rules=Rules(scoring="territory"))
    assert g.score() == pytest.approx(36 - 27 - 6.5)
    assert g.result() == "B+2.5"
    # White invades at B5; black surrounds and captures it with 4 stones.
    g.play_vertex("B5", B.WHITE)
    for v in ("A5", "B4", "B6"):
        g.play_vertex(v, B.BLACK)
    assert g.play_vertex("C5", B.BLACK) == 1
    # Black territory: 36 - 4 black stones (B5 is empty and black's again)
    # = 32, plus 1 prisoner; white territory 27, no prisoners.
    assert g.score() == pytest.approx(32 + 1 - 27 - 6.5)
    assert g.result() == "W+0.5"
    # Area scoring of the same board: the stones inside count, prisoners
    # do not: 45 - 36 - 6.5.
    assert area_score(g.rec, 6.5) == pytest.approx(2.5)
    caps = g.rec["captures"]
    assert territory_score(g.rec, 6.5, int(caps[B.BLACK]), int(caps[B.WHITE])) == pytest.approx(-0.5)


def test_territory_scoring_white_prisoners(diagram) -> None:
    g = diagram(WALLS, komi=0.0, rules=Rules(scoring="territory"))
    g.play_vertex("H5", B.BLACK)
    for v in ("G5", "H4", "J5"):
        g.play_vertex(v, B.WHITE)
    assert g.play_vertex("H6", B.WHITE) == 1
    # white territory 27 - 4 stones = 23, prisoners 1; black 36
    assert g.score() == pytest.approx(36 - (23 + 1))
    assert g.result() == "B+12"


@pytest.mark.parametrize(
    "score,text",
    [(3.5, "B+3.5"), (0.5, "B+0.5"), (-0.5, "W+0.5"), (-7.5, "W+7.5"), (0.0, "0"), (12.0, "B+12"), (-1.0, "W+1")],
)
def test_result_strings(score: float, text: str) -> None:
    assert result_string(score) == text


def test_unknown_scoring_rule_rejected() -> None:
    with pytest.raises(ValueError):
        Rules(scoring="stone")
