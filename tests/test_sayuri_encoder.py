"""sayuri-v3 planes on hand-built positions: a ladder that works and one a
stone breaks, a pass-alive group, a ko, history and last moves, liberties,
the komi code and its decoding. (The planes were also compared with Sayuri's
own ``sayuri-planes`` output on random games while this was written; see
docs/sayuri.md.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sayuri_async import encoders
from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.encoders.sayuri_v3 import (P_AREA, P_KO, P_KOMI, P_LADDER, P_LIBS, P_NEG_KOMI, P_ONES,
                                        PLANES)
from sayuri_async.encoders.sayuri_v3_decode import decode_inputs, wave

ENCODER = encoders.get_encoder("sayuri-v3")

DEATH, ESCAPABLE, ATARI, TAKE = (P_LADDER + i for i in range(4))


def setup(n: int, black: str, white: str, to_move: int = B.BLACK, komi: float = 7.5) -> np.ndarray:
    arr = B.new_board(n, komi)
    rec = arr[0]
    for color, verts in ((B.BLACK, black), (B.WHITE, white)):
        for v in verts.split():
            B.place_stone(rec, B.action_to_point(n, vertex_to_action(v, n)), color)
    rec["to_move"] = to_move
    return arr


def cells(plane: np.ndarray) -> set[str]:
    """GTP vertices of the set cells of a [N, N] plane."""
    cols = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
    return {f"{cols[x]}{y + 1}" for y, x in zip(*np.nonzero(plane))}


# White C4 with liberties D4 and C5, hemmed in by black B4, C3, D3; black E7
# (or nothing) on the ladder's path to the upper right.
LADDER_BLACK = "B4 C3 D3"


def test_registered_and_shape():
    assert encoders.get_encoder("sayuri-v3") is ENCODER and ENCODER.planes == PLANES
    x = ENCODER(B.new_board(9))
    assert x.shape == (PLANES, 9, 9) and x.dtype == np.uint8
    assert x[P_ONES].all() and not x[:P_KOMI].any()


def test_two_liberty_ladder_that_works():
    x = ENCODER(setup(9, LADDER_BLACK, "C4"))
    assert cells(x[ESCAPABLE]) == {"C4"}
    assert cells(x[ATARI]) == {"C5"}  # atari from above; D4 lets it run into open space
    assert not x[DEATH].any() and not x[TAKE].any()


def test_ladder_in_atari_dies_and_capture_point():
    x = ENCODER(setup(9, LADDER_BLACK + " C5", "C4", to_move=B.WHITE))
    assert cells(x[DEATH]) == {"C4"} and cells(x[TAKE]) == {"D4"}
    assert cells(x[P_LIBS]) == {"C4"}  # the only string with one liberty


def test_ladder_breaker():
    # a white stone on the diagonal the ladder runs along lets the prey out
    for breaker in ("F7", "G8"):
        x = ENCODER(setup(9, LADDER_BLACK + " C5", "C4 " + breaker, to_move=B.WHITE))
        assert not x[P_LADDER:P_LADDER + 4].any(), breaker
    # a black stone there instead does not help the prey
    x = ENCODER(setup(9, LADDER_BLACK + " C5 F7", "C4", to_move=B.WHITE))
    assert cells(x[DEATH]) == {"C4"}


def test_pass_alive_group_and_area():
    # black corner group with eyes at A1 and C1, white stones elsewhere
    x = ENCODER(setup(9, "B1 A2 B2 C2 D2 D1", "F6 G6"))
    group = {"B1", "A2", "B2", "C2", "D2", "D1", "A1", "C1"}
    assert cells(x[P_AREA]) == group  # safe area of the side to move (black)
    assert not x[P_AREA + 1].any()
    own, opp = cells(x[P_AREA + 2]), cells(x[P_AREA + 3])
    assert group <= own and {"F6", "G6"} <= opp and not own & opp
    # the same seen by white: the planes swap
    y = ENCODER(setup(9, "B1 A2 B2 C2 D2 D1", "F6 G6", to_move=B.WHITE))
    assert cells(y[P_AREA + 1]) == group and not y[P_AREA].any()
    # one eye only: not pass-alive
    z = ENCODER(setup(9, "B1 A2 B2 C2 C1", "F6"))
    assert not z[P_AREA].any()


def test_opponent_stone_in_an_eye_is_safe_area():
    # black lives with eyes {A1, B1, C1} (holding white B1) and {E1}
    x = ENCODER(setup(9, "A2 B2 C2 D2 E2 F2 F1 D1", "B1 H8"))
    assert cells(x[P_AREA]) == {"A2", "B2", "C2", "D2", "E2", "F2", "F1", "D1", "A1", "B1", "C1", "E1"}
    assert "B1" in cells(x[P_AREA + 2]) and "B1" not in cells(x[P_AREA + 3])
    assert "B1" in cells(x[P_LIBS + 1])  # the white stone has two liberties, A1 and C1


def test_ko_plane():
    arr = setup(9, "C2 B3 C4", "D2 E3 D4 C3", to_move=B.BLACK)
    rec = arr[0]
    B.play(rec, B.action_to_point(9, vertex_to_action("D3", 9)))  # black captures C3: ko
    x = ENCODER(arr)
    assert cells(x[P_KO]) == {"C3"}
    assert not ENCODER(setup(9, "C2", "D2"))[P_KO].any()


def test_history_and_last_moves():
    g = Game(9, 7.5)
    moves = ["E5", "C3", "G7", "pass", "D4"]
    for v in moves:
        g.play(vertex_to_action(v, 9))
    x = ENCODER(g.arr)  # white to move
    assert cells(x[0]) == {"C3"} and cells(x[1]) == {"E5", "G7", "D4"} and cells(x[2]) == {"D4"}
    assert cells(x[3]) == {"C3"} and cells(x[4]) == {"E5", "G7"} and not x[5].any()  # after the pass
    assert cells(x[8]) == {"G7"}  # two plies ago G7 was the last move
    assert cells(x[11]) == {"C3"} and cells(x[14]) == {"E5"}
    assert cells(x[15]) == set() and cells(x[16]) == set() and not x[17].any()  # the empty start
    assert not x[18:24].any()  # before the game began


@pytest.mark.parametrize("extra", [0, 1, 2, 5])
def test_every_history_step_marks_the_move_that_led_to_it(extra):
    """Step k's move plane marks the move played k plies ago (moves[-1 - k]),
    empty for a pass; step 7 (plane 23) comes from the board's move ring,
    the others from consecutive positions, and both must agree with the
    game's own move list."""
    g = Game(9, 7.5)
    seq = ["E5", "C3", "G7", "pass", "D4", "F6", "B2", "H8", "pass", "A1", "J9", "C7", "G3"][: 8 + extra]
    for v in seq:
        g.play(vertex_to_action(v, 9))
    x = ENCODER(g.arr)
    for k in range(8):
        played = seq[-1 - k]
        want = set() if played == "pass" else {played}
        assert cells(x[3 * k + 2]) == want, f"history step {k} (plane {3 * k + 2})"


def test_liberty_planes_both_colours():
    x = ENCODER(setup(9, "A1 E5", "B1 J9 H9"))
    assert cells(x[P_LIBS]) == {"A1"} and cells(x[P_LIBS + 1]) == {"B1"}
    assert cells(x[P_LIBS + 2]) == {"J9", "H9"} and cells(x[P_LIBS + 3]) == {"E5"}


@pytest.mark.parametrize("n,komi,to_move", [(19, 7.5, B.BLACK), (19, 7.5, B.WHITE), (9, -3.0, B.BLACK), (8, 6.5, B.WHITE)])
def test_komi_code_decodes_to_sayuri_floats(n, komi, to_move):
    arr = B.new_board(n, komi)
    arr[0]["to_move"] = to_move
    x = ENCODER(arr)
    k = komi if to_move == B.BLACK else -komi
    assert x[P_KOMI].sum() == max(0, round(2 * k)) and x[P_NEG_KOMI].sum() == max(0, round(-2 * k))
    d = decode_inputs(torch.from_numpy(x).float()[None])[0]
    assert torch.allclose(d[39], torch.full((n, n), k / 20)) and torch.allclose(d[40], torch.full((n, n), -k / 20))
    assert torch.allclose(d[41], torch.full((n, n), n * n / 361))
    assert torch.equal(d[:38], torch.from_numpy(x[:38]).float()) and torch.equal(d[42], torch.ones(n, n))


def test_wave_values():
    # odd board area: drawable komi are odd, so 7 is a draw komi (wave 0)
    assert torch.allclose(wave(torch.tensor([7.5, 7.0, 8.0, -7.5]), 19), torch.tensor([0.5, 0.0, 0.0, -0.5]))
    assert torch.allclose(wave(torch.tensor([7.5, 6.0, 6.5]), 8), torch.tensor([-0.5, 0.0, 0.5]))


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 13, 19, 25])
def test_every_cell_written_inside_its_block(n):
    rng = np.random.default_rng(n)
    g = Game(n, 7.5)
    buf = np.full((3, PLANES, n, n), 7, np.uint8)
    for _ in range(3 * n * n // 2):
        ENCODER.encode(g.arr[0], buf[1])
        assert set(np.unique(buf[1])) <= {0, 1}
        assert (buf[0] == 7).all() and (buf[2] == 7).all()
        legal = np.nonzero(g.legal_actions())[0]
        g.play(int(rng.choice(legal)))
