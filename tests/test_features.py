"""Feature planes against hand-built positions and an independent Python
reference (flood-fill liberties, stone snapshots for history)."""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.encoders import DEFAULT_ENCODER, ENCODERS, get_encoder
from sayuri_async.encoders.planes import encode_many
from sayuri_async.encoders.simple_v1 import P_BLACK_TO_MOVE, P_KO, P_ONES, P_OPP_LIBS, P_OWN_LIBS
from sayuri_async.go.board import BLACK
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game

ENC = get_encoder(DEFAULT_ENCODER)


def yx(vertex: str, n: int) -> tuple[int, int]:
    a = vertex_to_action(vertex, n)
    return a // n, a % n


def plane_of(vertices: list[str], n: int) -> np.ndarray:
    p = np.zeros((n, n), dtype=np.uint8)
    for v in vertices:
        p[yx(v, n)] = 1
    return p


def test_registry() -> None:
    assert DEFAULT_ENCODER == "simple-v1"
    assert ENCODERS["simple-v1"].planes == 25
    assert get_encoder("simple-v1") is ENCODERS["simple-v1"]
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("nope")


@pytest.mark.parametrize("n", range(7, 20))
def test_shapes_empty_board(n: int) -> None:
    g = Game(n)
    x = ENC(g.arr)
    assert x.shape == (25, n, n) and x.dtype == np.uint8
    assert x[:16].sum() == 0
    assert (x[P_BLACK_TO_MOVE] == 1).all() and (x[P_ONES] == 1).all()
    assert x[P_KO:].sum() == 0
    g.play(n * n)  # pass: white to move, one history step
    x = ENC(g.arr)
    assert (x[P_BLACK_TO_MOVE] == 0).all() and (x[P_ONES] == 1).all()


def test_writes_every_cell() -> None:
    g = Game(9)
    out = np.full((25, 9, 9), 7, dtype=np.uint8)
    ENC.encode(g.rec, out)
    assert set(np.unique(out)) <= {0, 1}


def test_history_by_hand() -> None:
    n = 9
    g = Game(n)
    for v in ["D4", "E5", "C3"]:
        g.play_vertex(v)
    x = ENC(g.arr)  # white to move: own = white
    assert (x[0] == plane_of(["E5"], n)).all()  # own now
    assert (x[1] == plane_of(["D4", "C3"], n)).all()  # opponent now
    assert (x[2] == plane_of(["E5"], n)).all()  # one ply ago (before C3)
    assert (x[3] == plane_of(["D4"], n)).all()
    assert (x[4] == 0).all() and (x[5] == plane_of(["D4"], n)).all()  # two plies ago
    assert x[6].sum() == 0 and x[7].sum() == 0  # three plies ago: empty board (valid)
    assert x[8:16].sum() == 0  # beyond the start: zero
    assert (x[P_BLACK_TO_MOVE] == 0).all()


def test_ko_and_liberties_by_hand() -> None:
    n = 9
    g = Game(n)
    for v in ["D5", "E5", "C4", "F4", "D3", "E3", "E4"]:
        g.play_vertex(v)
    assert g.play_vertex("D4") == 1  # white captures E4: ko at E4
    x = ENC(g.arr)  # black to move
    assert (x[P_BLACK_TO_MOVE] == 1).all()
    assert (x[P_KO] == plane_of(["E4"], n)).all()
    assert x[P_OWN_LIBS].sum() == 0  # own strings with 1 liberty
    assert (x[P_OWN_LIBS + 1] == plane_of(["D5", "D3"], n)).all()
    assert (x[P_OWN_LIBS + 2] == plane_of(["C4"], n)).all()
    assert (x[P_OPP_LIBS] == plane_of(["D4"], n)).all()
    assert x[P_OPP_LIBS + 1].sum() == 0
    assert (x[P_OPP_LIBS + 2] == plane_of(["E5", "F4", "E3"], n)).all()
    # the capture shows in history: one ply ago E4 was black, D4 empty
    assert (x[2] == plane_of(["D5", "C4", "D3", "E4"], n)).all()
    assert (x[3] == plane_of(["E5", "F4", "E3"], n)).all()
    g.play_vertex("A9")
    x = ENC(g.arr)
    assert x[P_KO].sum() == 0


def test_chain_liberties_by_hand() -> None:
    n = 7
    g = Game(n)
    for v in ["A1", "A2", "B1"]:
        g.play_vertex(v)
    x = ENC(g.arr)  # white to move
    # white A2: A3, B2 -> 2 liberties; black A1+B1: C1, B2 -> 2 liberties
    assert (x[P_OWN_LIBS + 1] == plane_of(["A2"], n)).all()
    assert (x[P_OPP_LIBS + 1] == plane_of(["A1", "B1"], n)).all()
    assert x[P_OWN_LIBS].sum() + x[P_OWN_LIBS + 2].sum() == 0
    assert x[P_OPP_LIBS].sum() + x[P_OPP_LIBS + 2].sum() == 0


def test_handicap_start() -> None:
    g = Game(9)
    g.set_fixed_handicap(2)
    x = ENC(g.arr)  # white to move, move_num 0: only the current position
    assert x[1].sum() == 2 and x[0].sum() == 0
    assert x[2:16].sum() == 0
    assert (x[P_BLACK_TO_MOVE] == 0).all()


# --------------------------------------------------------------------------
# independent reference


def ref_libs(stones: np.ndarray) -> np.ndarray:
    """Liberty count of each stone's string by flood fill; 0 for empty."""
    n = stones.shape[0]
    out = np.zeros((n, n), dtype=np.int64)
    seen = np.zeros((n, n), dtype=bool)
    for y in range(n):
        for x in range(n):
            if stones[y, x] == 0 or seen[y, x]:
                continue
            c = stones[y, x]
            group, libs, todo = [], set(), [(y, x)]
            seen[y, x] = True
            while todo:
                cy, cx = todo.pop()
                group.append((cy, cx))
                for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    ny, nx = cy + dy, cx + dx
                    if 0 <= ny < n and 0 <= nx < n:
                        if stones[ny, nx] == 0:
                            libs.add((ny, nx))
                        elif stones[ny, nx] == c and not seen[ny, nx]:
                            seen[ny, nx] = True
                            todo.append((ny, nx))
            for p in group:
                out[p] = len(libs)
    return out


def ref_encode(snaps: list[np.ndarray], to_move: int, ko: tuple[int, int] | None) -> np.ndarray:
    n = snaps[-1].shape[0]
    own, opp = to_move, 3 - to_move
    x = np.zeros((25, n, n), dtype=np.uint8)
    for k in range(8):
        if k < len(snaps):
            s = snaps[-1 - k]
            x[2 * k] = s == own
            x[2 * k + 1] = s == opp
    x[16] = 1 if to_move == BLACK else 0
    x[17] = 1
    if ko is not None:
        x[18][ko] = 1
    s = snaps[-1]
    libs = ref_libs(s)
    for i, c in enumerate((own, opp)):
        x[19 + 3 * i] = (s == c) & (libs == 1)
        x[20 + 3 * i] = (s == c) & (libs == 2)
        x[21 + 3 * i] = (s == c) & (libs >= 3)
    return x


def ref_ko(prev: np.ndarray, cur: np.ndarray, action: int, n: int) -> tuple[int, int] | None:
    """Simple ko: the move captured exactly one stone and the mover's stone
    stands alone with one liberty; the ko point is the captured stone."""
    if action == n * n:
        return None
    y, x = divmod(action, n)
    mover = cur[y, x]
    gone = np.argwhere((prev == 3 - mover) & (cur == 0))
    if len(gone) != 1:
        return None
    same = sum(1 for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1))
               if 0 <= y + dy < n and 0 <= x + dx < n and cur[y + dy, x + dx] == mover)
    if same or ref_libs(cur)[y, x] != 1:
        return None
    return int(gone[0][0]), int(gone[0][1])


@pytest.mark.parametrize("n,seed", [(7, 1), (7, 2), (9, 3), (13, 4), (19, 5)])
def test_random_games_match_reference(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = Game(n)
    snaps = [g.stones()]
    kos = 0
    for _ in range(120 if n < 13 else 60):
        legal = np.flatnonzero(g.legal_actions())
        board_moves = legal[legal < n * n]
        a = int(rng.choice(board_moves)) if len(board_moves) and rng.random() > 0.03 else n * n
        prev = snaps[-1]
        g.play(a)
        snaps.append(g.stones())
        ko = ref_ko(prev, snaps[-1], a, n)
        kos += ko is not None
        got = ENC(g.arr)
        want = ref_encode(snaps, g.to_move, ko)
        bad = [i for i in range(25) if not (got[i] == want[i]).all()]
        assert not bad, f"planes {bad} differ after {len(g.moves)} moves"
        if g.is_over():
            break


def test_callable_from_compiled_code() -> None:
    g = Game(9)
    for v in ["C3", "D4", "E5"]:
        g.play_vertex(v)
    recs = np.concatenate([Game(9).arr, g.arr])
    out = np.zeros((3, 25, 9, 9), dtype=np.uint8)
    encode_many(ENC.encode, recs, np.array([1, 0, 1]), out)
    assert (out[0] == ENC(g.arr)).all() and (out[2] == out[0]).all()
    assert (out[1] == ENC(Game(9).arr)).all()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 15, 16, 17, 25])
def test_other_sizes_match_reference_and_stay_inside(n: int) -> None:
    """Sizes the vector kernels treat differently (n < 4 scalar, 4/8/16-byte
    halves); every plane matches the reference and nothing is written
    outside the position's own [C, N, N] block."""
    rng = np.random.default_rng(n)
    g = Game(n)
    snaps = [g.stones()]
    buf = np.full((3, 25, n, n), 9, dtype=np.uint8)
    for _ in range(3 * n):
        legal = np.flatnonzero(g.legal_actions())
        board_moves = legal[legal < n * n]
        a = int(rng.choice(board_moves)) if len(board_moves) else n * n
        prev = snaps[-1]
        g.play(a)
        snaps.append(g.stones())
        buf[1] = 9
        ENC.encode(g.rec, buf[1])
        want = ref_encode(snaps, g.to_move, ref_ko(prev, snaps[-1], a, n))
        assert np.array_equal(buf[1], want)
        assert (buf[0] == 9).all() and (buf[2] == 9).all()


def test_encode_into_matches_record_call() -> None:
    g = Game(13)
    for v in ["C3", "D4", "E5", "F6"]:
        g.play_vertex(v)
    a = np.zeros((25, 13, 13), dtype=np.uint8)
    b = np.zeros((25, 13, 13), dtype=np.uint8)
    ENC.encode_into(g.arr, a)
    ENC.encode(g.rec, b)
    assert np.array_equal(a, b) and np.array_equal(ENC(g.arr), a) and np.array_equal(ENC(g.rec), a)
