"""Property tests (hypothesis) of the board core against a pure-Python
reference: random legal games on 7x7..19x19.

Checked after every move: the stones equal the reference's (captures), no
group has zero liberties, every group's ``parent``/``size``/``libs``/``nxt``
agree with a flood fill, the incremental hash equals ``board.full_hash`` and
a Zobrist sum over the stones, the history planes hold the earlier positions,
the legal-move mask equals the reference's (suicide and positional superko
by board comparison). Undo restores every earlier record; ``Game.copy()`` is
independent of its source.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sayuri_async.go import board as B
from sayuri_async.go.game import Game

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- reference


def neighbours(n: int, a: int) -> list[int]:
    x, y = a % n, a // n
    out = []
    if x > 0:
        out.append(a - 1)
    if x < n - 1:
        out.append(a + 1)
    if y > 0:
        out.append(a - n)
    if y < n - 1:
        out.append(a + n)
    return out


def flood(n: int, board: list[int], a: int) -> tuple[set[int], set[int]]:
    """(stones, liberties) of the group at ``a``."""
    c = board[a]
    stones, libs, todo = {a}, set(), [a]
    while todo:
        s = todo.pop()
        for q in neighbours(n, s):
            if board[q] == B.EMPTY:
                libs.add(q)
            elif board[q] == c and q not in stones:
                stones.add(q)
                todo.append(q)
    return stones, libs


def ref_play(n: int, board: list[int], a: int, c: int) -> list[int] | None:
    """The board after colour ``c`` plays ``a``, or None for suicide."""
    new = list(board)
    new[a] = c
    for q in neighbours(n, a):
        if new[q] == 3 - c:
            stones, libs = flood(n, new, q)
            if not libs:
                for s in stones:
                    new[s] = B.EMPTY
    if not flood(n, new, a)[1]:
        return None
    return new


def ref_legal(n: int, board: list[int], c: int, seen: set[tuple[int, ...]]) -> np.ndarray:
    mask = np.zeros(n * n + 1, dtype=np.uint8)
    mask[n * n] = 1
    for a in range(n * n):
        if board[a] != B.EMPTY:
            continue
        after = ref_play(n, board, a, c)
        if after is not None and tuple(after) not in seen:
            mask[a] = 1
    return mask


# ---------------------------------------------------------------- checks


def check_groups(game: Game) -> None:
    n = game.size
    rec = game.rec
    board = [int(v) for v in game.stones().reshape(-1)]
    done: set[int] = set()
    for a in range(n * n):
        if board[a] == B.EMPTY or a in done:
            continue
        stones, libs = flood(n, board, a)
        done |= stones
        assert libs, "a group without liberties"
        pts = {B.action_to_point(n, s) for s in stones}
        head = int(rec["parent"][B.action_to_point(n, a)])
        assert head in pts
        assert all(int(rec["parent"][p]) == head for p in pts)
        assert int(rec["size"][head]) == len(stones)
        assert int(rec["libs"][head]) == len(libs)
        ring, p = set(), head
        for _ in range(len(stones)):
            ring.add(p)
            p = int(rec["nxt"][p])
        assert p == head and ring == pts


def check_hash(game: Game) -> None:
    rec = game.rec
    n = game.size
    h = np.uint64(0)
    for a, c in enumerate(game.stones().reshape(-1)):
        if c:
            h ^= B.ZOBRIST[int(c), B.action_to_point(n, a)]
    assert rec["hash"] == h == B.full_hash(rec)
    assert game.history_hashes()[-1] == rec["hash"]


def check_history_planes(game: Game, past: list[np.ndarray]) -> None:
    """``hist[(hist_pos - k) % HISTORY]`` is the colour array k plies ago."""
    rec = game.rec
    w = game.size + 2
    for k in range(min(B.HISTORY, len(past))):
        plane = rec["hist"][(int(rec["hist_pos"]) - k) % B.HISTORY][: w * w]
        assert np.array_equal(plane, past[-1 - k])


def random_game(
    n: int, choices: list[int], pass_every: int, check_legal: bool
) -> tuple[Game, list[bytes]]:
    """Play a random legal game; check every position; return the game and
    the record bytes before each move."""
    g = Game(n)
    board = [B.EMPTY] * (n * n)
    seen = {tuple(board)}
    past = [g.rec["color"][: (n + 2) ** 2].copy()]
    snaps: list[bytes] = []
    for i, r in enumerate(choices):
        mask = g.legal_actions()
        if check_legal:
            assert np.array_equal(mask, ref_legal(n, board, g.to_move, seen))
        legal = np.flatnonzero(mask[:-1])
        a = n * n if (len(legal) == 0 or (pass_every and i % pass_every == 0)) else int(legal[r % len(legal)])
        snaps.append(g.arr.tobytes())
        mover = g.to_move
        captured = g.play(a)
        if a != n * n:
            after = ref_play(n, board, a, mover)
            assert after is not None
            assert captured == sum(1 for u, v in zip(board, after) if u and not v)
            board = after
        seen.add(tuple(board))
        assert [int(v) for v in g.stones().reshape(-1)] == board
        past.append(g.rec["color"][: (n + 2) ** 2].copy())
        check_groups(g)
        check_hash(g)
        check_history_planes(g, past)
    return g, snaps


@st.composite
def move_choices(draw, min_len: int = 1, max_len: int = 150) -> list[int]:
    """Random choices (each picks one legal move); long games come from a
    seed so that every example reaches captures, kos and full boards."""
    length = draw(st.integers(min_len, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    return [int(v) for v in np.random.default_rng(seed).integers(0, 10**6, size=length)]


moves = move_choices()


@pytest.mark.slow
@SETTINGS
@given(n=st.sampled_from([7, 9]), choices=moves, pass_every=st.sampled_from([0, 0, 7, 23]))
def test_random_games_small_boards_match_reference(n: int, choices: list[int], pass_every: int) -> None:
    random_game(n, choices, pass_every, check_legal=True)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([13, 19]), choices=move_choices(50, 200))
def test_random_games_large_boards_groups_and_hash(n: int, choices: list[int]) -> None:
    random_game(n, choices, 0, check_legal=False)


@pytest.mark.slow
@SETTINGS
@given(n=st.sampled_from([7, 9, 13]), choices=moves)
def test_undo_restores_every_previous_record(n: int, choices: list[int]) -> None:
    g, snaps = random_game(n, choices, 0, check_legal=False)
    hashes = [int(h) for h in g.history_hashes()]
    for k in range(len(snaps) - 1, -1, -1):
        assert g.undo()
        assert g.arr.tobytes() == snaps[k]
        assert [int(h) for h in g.history_hashes()] == hashes[: k + 1]
        check_groups(g)
    assert not g.undo()


@pytest.mark.slow
@SETTINGS
@given(
    n=st.sampled_from([7, 9, 13]),
    choices=moves,
    more=st.lists(st.integers(0, 10**6), min_size=1, max_size=30),
)
def test_copy_is_independent(n: int, choices: list[int], more: list[int]) -> None:
    g, _ = random_game(n, choices, 0, check_legal=False)
    c = g.copy()
    frozen = (g.arr.tobytes(), list(g.moves), [int(h) for h in g.history_hashes()])
    for r in more:  # play on the copy only
        legal = np.flatnonzero(c.legal_actions())
        c.play(int(legal[r % len(legal)]))
    assert (g.arr.tobytes(), list(g.moves), [int(h) for h in g.history_hashes()]) == frozen
    c_state = (c.arr.tobytes(), list(c.moves))
    while g.undo():  # and undo the original entirely
        pass
    assert (c.arr.tobytes(), list(c.moves)) == c_state
    check_groups(c)
    check_hash(c)
