"""Board core: captures, liberties, suicide, simple ko and the ko point field,
coordinates of the flat record. Expected values are worked out by hand from
the diagrams."""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game

EMPTY9 = "\n".join(["........."] * 9)


def pt(game: Game, vertex: str) -> int:
    return B.action_to_point(game.size, vertex_to_action(vertex, game.size))


def color_at(game: Game, vertex: str) -> int:
    return int(game.rec["color"][pt(game, vertex)])


def libs(game: Game, vertex: str) -> int:
    rec = game.rec
    return int(rec["libs"][rec["parent"][pt(game, vertex)]])


def size(game: Game, vertex: str) -> int:
    rec = game.rec
    return int(rec["size"][rec["parent"][pt(game, vertex)]])


def play(game: Game, vertex: str, color: int | None = None) -> int:
    return game.play(vertex_to_action(vertex, game.size), color)


def check_hash(game: Game) -> None:
    assert int(game.rec["hash"]) == int(B.full_hash(game.rec))


# ---------------------------------------------------------------- coordinates


def test_point_layout_matches_docstring() -> None:
    # p = (y + 1) * (N + 2) + (x + 1); a = y * N + x
    assert B.action_to_point(9, 0) == 1 * 11 + 1  # A1
    assert B.action_to_point(9, 8) == 1 * 11 + 9  # J1
    assert B.action_to_point(9, 9) == 2 * 11 + 1  # A2
    assert B.action_to_point(19, 3 * 19 + 3) == 4 * 21 + 4  # D4
    assert B.action_to_point(9, 81) == B.PASS
    for n in (7, 9, 13, 19):
        for a in range(n * n + 1):
            assert B.point_to_action(n, B.action_to_point(n, a)) == a


def test_new_board_is_empty_with_border() -> None:
    arr = B.new_board(9, 6.5)
    rec = arr[0]
    w = 11
    color = rec["color"][: w * w].reshape(w, w)
    assert np.all(color[1:-1, 1:-1] == B.EMPTY)
    assert np.all(color[0, :] == B.BORDER) and np.all(color[-1, :] == B.BORDER)
    assert np.all(color[:, 0] == B.BORDER) and np.all(color[:, -1] == B.BORDER)
    assert rec["to_move"] == B.BLACK and rec["n"] == 9 and rec["w"] == 11
    assert rec["komi"] == pytest.approx(6.5)
    assert rec["ko"] == B.NO_KO and rec["hash"] == 0


@pytest.mark.parametrize("n", [0, 1, 26, 100])
def test_new_board_rejects_bad_sizes(n: int) -> None:
    with pytest.raises(ValueError):
        B.new_board(n)


def test_empty_board_all_legal() -> None:
    for n in (7, 9, 19):
        arr = B.new_board(n)
        mask = np.zeros(n * n + 1, dtype=np.uint8)
        assert B.legal_actions(arr[0], mask) == n * n + 1
        assert mask.all()


def test_stone_on_the_vertex_it_names() -> None:
    g = Game(9)
    play(g, "C7")  # column C = x 2, row 7 = y 6
    st = g.stones()
    assert st[6, 2] == B.BLACK and int(st.sum()) == B.BLACK
    assert g.moves == [(B.BLACK, 6 * 9 + 2)]


# ---------------------------------------------------------------- liberties


def test_liberties_and_sizes_by_hand(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        ...XX....
        ...XO....
        .........
        .........
        X........
        """
    )
    # black D5 E5 D4: liberties C5 C4 D6 E6 F5 D3 = 6
    assert libs(g, "D5") == 6 and size(g, "D5") == 3
    assert libs(g, "D4") == 6 and size(g, "E5") == 3
    # white E4: F4 E3 = 2
    assert libs(g, "E4") == 2 and size(g, "E4") == 1
    # corner A1: B1 A2
    assert libs(g, "A1") == 2
    # joining: black F4 touches E4 (white) -> white 1 liberty, black merges
    # nothing (F4 is not adjacent to the black group: F5 is empty)
    play(g, "F4")
    assert libs(g, "E4") == 1
    assert libs(g, "F4") == 3  # F5 F3 G4
    play(g, "F5", B.BLACK)  # joins D5-E5 group with F4
    assert size(g, "F5") == 5
    # D5 E5 D4 F5 F4: C5 C4 D6 E6 F6 G5 G4 F3 D3 = 9
    assert libs(g, "D4") == 9
    check_hash(g)


# ---------------------------------------------------------------- captures


def test_single_stone_capture(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .........
        ..XO.X...
        ...X.....
        .........
        .........
        """
    )
    assert libs(g, "D4") == 2  # D5 E4
    play(g, "E4", B.BLACK)
    assert libs(g, "D4") == 1
    captured = play(g, "D5", B.BLACK)
    assert captured == 1
    assert color_at(g, "D4") == B.EMPTY
    assert int(g.rec["captures"][B.BLACK]) == 1 and int(g.rec["captures"][B.WHITE]) == 0
    assert libs(g, "D5") == 4  # C5 E5 D6 D4
    assert libs(g, "C4") == 4  # B4 C5 C3 D4
    assert libs(g, "E4") == 6  # E4-F4 joined: D4 E5 E3 F5 F3 G4
    assert size(g, "E4") == 2
    assert g.rec["ko"] == B.NO_KO  # the capturing stone has 4 liberties
    check_hash(g)


def test_group_capture(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        ..XOX....
        ..XOX....
        ...X.....
        .........
        .........
        """
    )
    assert size(g, "D5") == 2 and libs(g, "D4") == 1  # only D6
    captured = play(g, "D6")
    assert captured == 2
    assert color_at(g, "D5") == B.EMPTY and color_at(g, "D4") == B.EMPTY
    assert int(g.rec["captures"][B.BLACK]) == 2
    assert g.rec["ko"] == B.NO_KO
    # D6 now: C6 E6 D7 D5 = 4 liberties
    assert libs(g, "D6") == 4
    # C5-C4 group: B5 B4 C6 C3 D5 D4 = 6
    assert libs(g, "C5") == 6
    check_hash(g)


def test_capture_three_groups_at_once(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        ....X....
        ...XOX...
        ..XO.OX..
        ...X.X...
        .........
        .........
        """
    )
    # white D4, F4, E5 each in atari on E4
    for v in ("D4", "F4", "E5"):
        assert libs(g, v) == 1
    captured = play(g, "E4")
    assert captured == 3
    for v in ("D4", "F4", "E5"):
        assert color_at(g, v) == B.EMPTY
    assert libs(g, "E4") == 4  # D4 F4 E5 E3
    assert libs(g, "D5") == 4  # C5 D6 E5 D4
    assert g.rec["ko"] == B.NO_KO  # 3 stones captured: no ko
    assert int(g.rec["captures"][B.BLACK]) == 3
    check_hash(g)


def test_corner_capture_and_recapture_shape(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .........
        .........
        .........
        .........
        OX.......
        """
    )
    assert libs(g, "A1") == 1  # A2
    assert play(g, "A2") == 1
    assert color_at(g, "A1") == B.EMPTY
    assert libs(g, "A2") == 3  # A1 A3 B2
    check_hash(g)


def test_capture_gives_liberties_to_the_capturer_and_neighbours(diagram) -> None:
    # Black E5 is in atari; white captures the two-stone black group and the
    # surrounding white groups gain the emptied points as liberties.
    g = diagram(
        """
        .........
        .........
        .........
        ....O....
        ...OXO...
        ...OXO...
        .........
        .........
        .........
        """,
        to_move=B.WHITE,
    )
    assert libs(g, "E5") == 1  # E3
    assert play(g, "E3") == 2
    assert libs(g, "E6") == 4  # D6 F6 E7 E5
    assert libs(g, "D5") == 6  # C5 C4 D6 D3 E5 E4
    assert libs(g, "E3") == 4  # D3 F3 E2 E4
    check_hash(g)


# ---------------------------------------------------------------- suicide


def test_single_stone_suicide(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .........
        .........
        .........
        X........
        .X.......
        """,
        to_move=B.WHITE,
    )
    a1 = vertex_to_action("A1", 9)
    assert not B.is_simple_legal(g.rec, pt(g, "A1"))
    assert g.why_illegal(a1) == "suicide"
    assert g.why_illegal(a1, B.BLACK) is None  # filling its own eye is legal
    mask = g.legal_actions()
    assert mask[a1] == 0 and mask.sum() == 81 + 1 - 2 - 1


def test_group_suicide_and_capture_instead(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .........
        .........
        .........
        XXX......
        OO.X.....
        """,
        to_move=B.WHITE,
    )
    c1 = vertex_to_action("C1", 9)
    assert g.why_illegal(c1) == "suicide"  # A1 B1 C1 would have no liberty
    assert g.why_illegal(c1, B.BLACK) is None
    assert play(g, "C1", B.BLACK) == 2
    assert color_at(g, "A1") == B.EMPTY and color_at(g, "B1") == B.EMPTY


def test_filling_last_liberty_that_captures_is_not_suicide(diagram) -> None:
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .........
        .........
        O........
        XO.......
        .XO......
        """,
        to_move=B.WHITE,
    )
    # A1 has no empty neighbour, but black A2 and B1 each have A1 as their
    # only liberty, so white A1 captures both.
    assert libs(g, "A2") == 1 and libs(g, "B1") == 1
    assert g.why_illegal(vertex_to_action("A1", 9)) is None
    assert play(g, "A1") == 2
    assert libs(g, "A1") == 2  # A2 B1


# ---------------------------------------------------------------- ko

KO = """
.........
.........
.........
.........
.XO......
XO.O.....
.XO......
.........
.........
"""


def test_simple_ko_point_set_and_retake_forbidden(diagram) -> None:
    g = diagram(KO)
    assert libs(g, "B4") == 1
    assert play(g, "C4") == 1  # black takes the ko
    assert color_at(g, "B4") == B.EMPTY
    assert int(g.rec["ko"]) == pt(g, "B4")
    assert libs(g, "C4") == 1 and size(g, "C4") == 1
    b4 = vertex_to_action("B4", 9)
    assert not B.is_simple_legal(g.rec, pt(g, "B4"))
    assert g.why_illegal(b4) == "ko"
    # white plays elsewhere: the ko point is cleared after that move
    play(g, "H8")
    assert g.rec["ko"] == B.NO_KO
    play(g, "H2")  # black answers elsewhere
    assert g.rec["ko"] == B.NO_KO
    assert g.why_illegal(b4) is None
    assert play(g, "B4") == 1  # white retakes
    assert color_at(g, "C4") == B.EMPTY
    assert int(g.rec["ko"]) == pt(g, "C4")
    assert g.why_illegal(vertex_to_action("C4", 9)) == "ko"
    check_hash(g)


def test_pass_clears_ko(diagram) -> None:
    g = diagram(KO)
    play(g, "C4")
    play(g, "pass")
    assert g.rec["ko"] == B.NO_KO


def test_ko_point_for_other_colour_is_ignored(diagram) -> None:
    g = diagram(KO)
    play(g, "C4")
    # black to move again (explicit colour): the ko only binds white
    assert g.why_illegal(vertex_to_action("B4", 9), B.BLACK) is None


def test_single_capture_without_ko(diagram) -> None:
    # capturing one stone with a stone that then has two liberties: no ko
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .XO......
        XO.......
        .XO......
        .........
        .........
        """
    )
    assert play(g, "C4") == 1
    assert libs(g, "C4") == 2  # B4 D4
    assert g.rec["ko"] == B.NO_KO


def test_capture_by_joining_stone_is_not_ko(diagram) -> None:
    # C4 captures B4 and joins D4: one stone captured and one liberty left
    # (B4), but the capturing group has two stones, so no ko; white may
    # capture the two stones back at once.
    g = diagram(
        """
        .........
        .........
        .........
        .........
        .XOO.....
        XO.XO....
        .XOO.....
        .........
        .........
        """
    )
    assert libs(g, "D4") == 1 and libs(g, "B4") == 1
    assert play(g, "C4") == 1
    assert size(g, "C4") == 2 and libs(g, "C4") == 1
    assert g.rec["ko"] == B.NO_KO
    assert g.why_illegal(vertex_to_action("B4", 9)) is None
    assert play(g, "B4") == 2
    assert color_at(g, "C4") == B.EMPTY and color_at(g, "D4") == B.EMPTY
    assert g.rec["ko"] == B.NO_KO
    check_hash(g)


def test_the_listed_legal_actions_are_the_legal_mask():
    rng = np.random.default_rng(5)
    for n in (7, 9, 19):
        arr = B.new_board(n)
        for _ in range(3 * n * n):
            mask = np.zeros(n * n + 1, np.uint8)
            B.legal_actions(arr[0], mask)
            listed = np.zeros(n * n + 1, np.int16)
            k = B.list_legal_actions(arr[0], listed)
            np.testing.assert_array_equal(listed[:k], np.flatnonzero(mask))
            B.play(arr[0], B.action_to_point(n, int(rng.choice(np.flatnonzero(mask)))))
