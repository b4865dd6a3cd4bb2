"""Game: positional superko on a real cycle (triple ko), undo, handicap
placement (fixed, against the GTP spec's vertex lists; free), vertices and
illegal-move errors. Expected values come from the diagrams, worked by hand,
and from the GTP specification."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import parse_diagram

from sayuri_async.go import board as B
from sayuri_async.go.coords import (
    VertexError,
    action_to_vertex,
    format_vertex,
    parse_color,
    parse_vertex,
    vertex_to_action,
)
from sayuri_async.go.game import Game, IllegalMove, Rules, handicap_actions
from sayuri_async.go.scoring import area_outcome


def va(vertex: str, n: int = 9) -> int:
    return vertex_to_action(vertex, n)


# ---------------------------------------------------------------- superko

# Three kos stacked on the left edge. K1 (rows 7-9): white holds B8, black
# takes at C8. K2 (rows 4-6): black holds C5, white takes at B5. K3 (rows
# 1-3): white holds B2, black takes at C2. Black to move.
TRIPLE_KO = """
.XO......
XO.O.....
.XO......
.XO......
X.XO.....
.XO......
.XO......
XO.O.....
.XO......
"""
# B C8 (takes K1), W B5 (takes K2), B C2 (takes K3), W B8 (K1), B C5 (K2):
# each a ko capture of one stone, never an immediate retake. White's B2
# (retaking K3) would recreate the start position: the cycle has length 6.
CYCLE = [("C8", B.BLACK), ("B5", B.WHITE), ("C2", B.BLACK), ("B8", B.WHITE), ("C5", B.BLACK)]


def play_cycle(game: Game) -> None:
    for v, c in CYCLE:
        assert game.to_move == c
        assert game.play(va(v)) == 1, v


def test_triple_ko_start_position_is_as_drawn(diagram) -> None:
    g = diagram(TRIPLE_KO)
    _, black, white = parse_diagram(TRIPLE_KO)
    st = g.stones().reshape(-1)
    assert sorted(np.flatnonzero(st == B.BLACK)) == sorted(black)
    assert sorted(np.flatnonzero(st == B.WHITE)) == sorted(white)
    assert len(g.history_hashes()) == 1


def test_triple_ko_cycle_is_superko(diagram) -> None:
    g = diagram(TRIPLE_KO)
    start_hash = g.hash
    play_cycle(g)
    b2 = va("B2")
    # simple ko alone (what GNU Go checks) allows the retake: the ko point
    # is C5's neighbour B5, not B2
    assert int(g.rec["ko"]) == B.action_to_point(9, va("B5"))
    assert B.is_simple_legal(g.rec, B.action_to_point(9, b2))
    # B2 would bring back exactly the start position
    assert int(B.hash_after(g.rec, B.action_to_point(9, b2))) == start_hash
    assert g.why_illegal(b2) == "superko"
    assert g.legal_actions()[b2] == 0
    with pytest.raises(IllegalMove, match="superko"):
        g.play(b2)
    # the other moves stay legal
    assert g.why_illegal(g.pass_action) is None
    assert g.why_illegal(va("H5")) is None


def test_triple_ko_cycle_allowed_without_superko(diagram) -> None:
    g = diagram(TRIPLE_KO, rules=Rules(superko=False))
    start_stones = g.stones()
    start_hash = g.hash
    play_cycle(g)
    b2 = va("B2")
    assert g.why_illegal(b2) is None
    assert g.legal_actions()[b2] == 1
    assert g.play(b2) == 1
    assert np.array_equal(g.stones(), start_stones)
    assert g.hash == start_hash
    # and the repetition is visible in the history
    assert list(g.history_hashes()).count(np.uint64(start_hash)) == 2


def test_superko_depends_on_board_not_ko_point(diagram) -> None:
    # Direct retake is reported as "ko" even with superko on.
    g = diagram(TRIPLE_KO)
    g.play(va("C8"))
    assert g.why_illegal(va("B8")) == "ko"


# ---------------------------------------------------------------- undo

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


def test_undo_restores_exact_record_and_history(diagram) -> None:
    g = diagram(KO)
    seq = ["C4", "H8", "H2", "B4", "pass", "G5", "C4", "pass", "pass"]
    snaps = []
    for v in seq:
        snaps.append((g.arr.tobytes(), g.history_hashes().copy(), list(g.moves)))
        g.play_vertex(v)
    assert len(g.moves) == len(seq) and len(g.comments) == len(seq)
    for arr_bytes, hashes, moves in reversed(snaps):
        assert g.undo()
        assert g.arr.tobytes() == arr_bytes
        assert np.array_equal(g.history_hashes(), hashes)
        assert g.moves == moves
    assert not g.undo()
    assert len(g.comments) == 0


def test_undo_after_capture_restores_stones() -> None:
    g = Game(9)
    for v in ["A2", "A1", "C1", "pass"]:
        g.play_vertex(v)
    before = g.arr.tobytes()
    assert g.play_vertex("B1") == 1  # black captures A1
    assert g.stones()[0, 0] == B.EMPTY
    g.undo()
    assert g.arr.tobytes() == before
    assert g.stones()[0, 0] == B.WHITE


def test_undo_then_replay_gives_same_hash() -> None:
    g = Game(9)
    g.play_vertex("E5")
    h = g.hash
    g.undo()
    assert g.hash == 0
    g.play_vertex("E5")
    assert g.hash == h


# ---------------------------------------------------------------- handicap

# GTP version 2 specification, section 4.1.1 (fixed handicap placement).
GTP_FIXED = {
    19: {
        2: "D4 Q16",
        3: "D4 Q16 D16",
        4: "D4 Q16 D16 Q4",
        5: "D4 Q16 D16 Q4 K10",
        6: "D4 Q16 D16 Q4 D10 Q10",
        7: "D4 Q16 D16 Q4 D10 Q10 K10",
        8: "D4 Q16 D16 Q4 D10 Q10 K4 K16",
        9: "D4 Q16 D16 Q4 D10 Q10 K4 K16 K10",
    },
    13: {
        2: "D4 K10",
        3: "D4 K10 D10",
        4: "D4 K10 D10 K4",
        5: "D4 K10 D10 K4 G7",
        6: "D4 K10 D10 K4 D7 K7",
        7: "D4 K10 D10 K4 D7 K7 G7",
        8: "D4 K10 D10 K4 D7 K7 G4 G10",
        9: "D4 K10 D10 K4 D7 K7 G4 G10 G7",
    },
    9: {
        2: "C3 G7",
        3: "C3 G7 C7",
        4: "C3 G7 C7 G3",
        5: "C3 G7 C7 G3 E5",
        6: "C3 G7 C7 G3 C5 G5",
        7: "C3 G7 C7 G3 C5 G5 E5",
        8: "C3 G7 C7 G3 C5 G5 E3 E7",
        9: "C3 G7 C7 G3 C5 G5 E3 E7 E5",
    },
}


@pytest.mark.parametrize("n", [9, 13, 19])
@pytest.mark.parametrize("stones", range(2, 10))
def test_fixed_handicap_matches_gtp_spec(n: int, stones: int) -> None:
    expected = {va(v, n) for v in GTP_FIXED[n][stones].split()}
    assert set(handicap_actions(n, stones)) == expected
    g = Game(n)
    placed = g.set_fixed_handicap(stones)
    assert set(placed) == expected and set(g.handicap) == expected
    st = g.stones().reshape(-1)
    assert set(np.flatnonzero(st == B.BLACK)) == expected
    assert not np.any(st == B.WHITE)
    assert g.to_move == B.WHITE
    assert not g.moves
    assert g.history_hashes()[0] == g.rec["hash"] == B.full_hash(g.rec)


@pytest.mark.parametrize("n,stones", [(19, 1), (19, 10), (9, 0), (7, 5), (10, 5), (8, 6), (5, 2)])
def test_fixed_handicap_rejects_bad_counts(n: int, stones: int) -> None:
    with pytest.raises(ValueError):
        handicap_actions(n, stones)


@pytest.mark.parametrize("n,stones,last", [(19, 2, "D4"), (19, 3, "D16"), (19, 4, "Q4"), (19, 5, "K10"),
                                            (19, 6, "D10"), (19, 7, "D10"), (19, 8, "K4"), (19, 9, "K4"),
                                            (9, 2, "C3"), (9, 7, "C5")])
def test_fixed_handicap_last_stone_is_sayuris(n: int, stones: int, last: str) -> None:
    # Sayuri places Q16 D4 D16 Q4 [K10] Q10 D10 K16 K4 and counts the last stone as a move
    # in its history planes (docs/sayuri.md)
    assert handicap_actions(n, stones)[-1] == va(last, n)
    g = Game(n)
    g.set_fixed_handicap(stones)
    assert int(g.rec["handicap_last"]) == B.action_to_point(n, va(last, n))


@pytest.mark.parametrize("scoring,score", [("area", 81 - 0.5 - 3), ("territory", 78 - 0.5)])
def test_white_gets_a_point_per_handicap_stone_under_area_scoring(scoring: str, score: float) -> None:
    g = Game(9, komi=0.5, rules=Rules(scoring=scoring))
    g.set_fixed_handicap(3)
    assert g.score() == score


def test_the_search_end_of_game_value_counts_the_compensation() -> None:
    g = Game(9)
    g.set_fixed_handicap(2)
    g.set_komi(79.5)  # black's area 81: +1.5 without the compensation, -0.5 with it
    assert g.score() == -0.5
    assert area_outcome(g.rec) == 1.0  # white to move wins
    g.set_rules(Rules(scoring="territory"))
    assert area_outcome(g.rec) == -1.0  # no compensation: black's 1.5


def test_seven_by_seven_handicap_uses_third_line() -> None:
    # GTP: on 7x7 at most 4 stones, on the 3-3 points
    assert set(handicap_actions(7, 4)) == {va(v, 7) for v in "C3 E5 C5 E3".split()}


def test_free_handicap() -> None:
    g = Game(19)
    acts = [va(v, 19) for v in ("A1", "T19", "K10")]
    g.place_handicap(acts)
    st = g.stones()
    assert st[0, 0] == st[18, 18] == st[9, 9] == B.BLACK
    assert int((st != 0).sum()) == 3
    assert g.handicap == acts and g.to_move == B.WHITE
    g.play_vertex("D4")
    assert g.moves == [(B.WHITE, va("D4", 19))]


def test_handicap_errors() -> None:
    g = Game(9)
    with pytest.raises(IllegalMove):
        g.place_handicap([va("C3"), va("C3")])
    with pytest.raises(IllegalMove):
        g.place_handicap([81])
    g.play_vertex("E5")
    with pytest.raises(IllegalMove):
        g.set_fixed_handicap(2)


# ---------------------------------------------------------------- vertices


@pytest.mark.parametrize(
    "text,n,xy",
    [
        ("A1", 19, (0, 0)),
        ("a1", 19, (0, 0)),
        (" D4 ", 19, (3, 3)),
        ("H8", 9, (7, 7)),
        ("J9", 9, (8, 8)),  # I is skipped: J is the 9th column
        ("T19", 19, (18, 18)),
        ("K10", 19, (9, 9)),
        ("pass", 9, None),
        ("PASS", 19, None),
    ],
)
def test_parse_vertex(text: str, n: int, xy) -> None:
    assert parse_vertex(text, n) == xy


@pytest.mark.parametrize(
    "text,n",
    [
        ("I5", 19),  # no I column in GTP
        ("K1", 9),  # column 10 on a 9x9 board
        ("A10", 9),
        ("A0", 9),
        ("T20", 19),
        ("", 9),
        ("D", 9),
        ("4D", 9),
        ("D-4", 9),
        ("D4.5", 9),
        ("resign", 9),
        ("hello world", 19),
        ("D²", 9),
    ],
)
def test_parse_vertex_errors(text: str, n: int) -> None:
    with pytest.raises(VertexError):
        parse_vertex(text, n)
    with pytest.raises(VertexError):
        vertex_to_action(text, n)


def test_vertex_action_round_trip() -> None:
    assert vertex_to_action("A1", 9) == 0
    assert vertex_to_action("J1", 9) == 8
    assert vertex_to_action("A2", 9) == 9
    assert vertex_to_action("pass", 9) == 81
    assert action_to_vertex(80, 9) == "J9"
    assert action_to_vertex(81, 9) == "pass"
    assert format_vertex((18, 0)) == "T1"
    for n in (7, 9, 13, 19):
        for a in range(n * n + 1):
            assert vertex_to_action(action_to_vertex(a, n), n) == a
    with pytest.raises(VertexError):
        action_to_vertex(82, 9)
    with pytest.raises(VertexError):
        action_to_vertex(-1, 9)


def test_parse_color() -> None:
    assert parse_color("b") == parse_color("Black") == B.BLACK
    assert parse_color("W") == parse_color("white") == B.WHITE
    with pytest.raises(ValueError):
        parse_color("red")


# ---------------------------------------------------------------- moves


def test_illegal_move_errors_name_the_reason() -> None:
    g = Game(9)
    g.play_vertex("E5")
    with pytest.raises(IllegalMove, match="occupied"):
        g.play_vertex("E5")
    assert g.why_illegal(82) is not None
    assert g.why_illegal(-1) is not None
    with pytest.raises(IllegalMove):
        g.play(82)
    assert len(g.moves) == 1  # failed moves leave no trace


def test_explicit_colour_moves_and_passes() -> None:
    g = Game(9)
    g.play_vertex("C3", B.BLACK)
    g.play_vertex("D3", B.BLACK)
    assert g.to_move == B.WHITE
    assert g.moves == [(B.BLACK, va("C3")), (B.BLACK, va("D3"))]
    g.play(g.pass_action)
    assert not g.is_over()
    g.play(g.pass_action)
    assert g.is_over()
    assert g.passes == 2


def test_copy_is_independent() -> None:
    g = Game(9)
    g.play_vertex("E5")
    c = g.copy()
    c.play_vertex("D5")
    c.comments[-1] = "x"
    assert g.stones()[4, 3] == B.EMPTY and c.stones()[4, 3] == B.WHITE
    assert len(g.moves) == 1 and len(c.moves) == 2
    assert len(g.history_hashes()) == 2 and len(c.history_hashes()) == 3
    assert g.comments == [""]
    g.undo()
    assert c.stones()[4, 4] == B.BLACK


def test_display_orientation() -> None:
    g = Game(9)
    g.play_vertex("A9")
    g.play_vertex("J1")
    lines = str(g).splitlines()
    assert lines[1].startswith(" 9 X")
    assert lines[9].startswith(" 1 .") and lines[9].rstrip().endswith("O  1")


def test_a_game_without_an_undo_stack_plays_the_same_and_cannot_undo():
    a, b = Game(9), Game(9, undo_stack=False)
    for v in ["E5", "D4", "E4", "D5", "pass", "C3"]:
        a.play_vertex(v)
        b.play_vertex(v)
    assert a.hash == b.hash and a.moves == b.moves and a.to_move == b.to_move
    assert b.undo() is False and b.moves == a.moves  # nothing taken back
    assert b.copy().undo_stack is False
    assert a.undo() is True


@pytest.mark.parametrize("undo_stack", [True, False])
def test_the_start_record_keeps_the_handicap_stones(undo_stack):
    g = Game(9, undo_stack=undo_stack)
    g.set_fixed_handicap(2)
    stones = g.stones().copy()
    for v in ["E5", "D4", "pass"]:
        g.play_vertex(v)
    start = g.start_record()
    w = 11
    np.testing.assert_array_equal(start["color"][: w * w].reshape(w, w)[1:-1, 1:-1], stones)
    assert int(start["move_num"]) == 0


def test_with_to_move_hands_the_turn_on_a_copy_and_forgets_the_ko() -> None:
    """GTP's ``genmove`` for the colour not on turn searches such a copy:
    the other colour moves, the ko ban (which binds the side that was to
    move) is gone, and the game itself is untouched."""
    g = Game(5, 7.5)
    for v in ("B2", "C2", "A3", "D3", "B4", "C4", "C3", "B3"):  # white B3 captures C3: a ko
        g.play_vertex(v)
    assert int(g.rec["ko"]) != B.NO_KO and g.to_move == B.BLACK
    assert g.with_to_move(B.BLACK) is g
    w = g.with_to_move(B.WHITE)
    assert w is not g and w.to_move == B.WHITE and int(w.rec["ko"]) == B.NO_KO
    assert g.to_move == B.BLACK and int(g.rec["ko"]) != B.NO_KO and w.hash == g.hash
