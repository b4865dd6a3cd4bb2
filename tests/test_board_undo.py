"""``go/board_undo.py``: a move played with an undo record is the move
``play_position`` plays, and undoing a stack of them gives back every
board on the way, field for field (captures, merges, ko and the hash
included)."""
from __future__ import annotations

import numpy as np

from sayuri_async.go import board as B
from sayuri_async.go.board_undo import UNDO_LEN, play_undoable, undo_play

FIELDS = ("color", "parent", "nxt", "libs", "size")
SCALARS = ("hash", "ko", "to_move", "passes", "move_num", "last_move")


def _same(a, b) -> bool:
    m = int(a["w"]) ** 2
    return (all(np.array_equal(a[f][:m], b[f][:m]) for f in FIELDS)
            and all(a[s] == b[s] for s in SCALARS)
            and np.array_equal(a["captures"], b["captures"]))


def _random_move(rec, rng) -> int:
    n = int(rec["n"])
    mask = np.zeros(n * n + 1, np.uint8)
    B.legal_actions(rec, mask)
    legal = np.flatnonzero(mask)
    return B.action_to_point(n, int(rng.choice(legal)))


def test_a_stack_of_undoable_moves_plays_like_play_and_undoes_to_every_board():
    rng = np.random.default_rng(7)
    captures = 0
    merges = 0
    for n in (5, 9, 13):
        for _game in range(6):
            arr = B.new_board(n)
            rec = arr[0]
            undo = np.zeros((60, UNDO_LEN), np.int64)
            for _ in range(int(rng.integers(n * n // 2, 2 * n * n))):  # some position
                B.play_position(rec, _random_move(rec, rng))
            boards = [arr.copy()]
            for k in range(60):  # a stack of moves played undoably on rec ...
                p = _random_move(rec, rng)
                want = arr.copy()
                got = play_undoable(rec, p, undo[k])
                assert got == B.play_position(want[0], p)
                assert _same(rec, want[0])
                assert B.full_hash(rec) == rec["hash"]
                captures += got
                merges += int(undo[k][26])
                boards.append(arr.copy())
            for k in range(59, -1, -1):  # ... taken back one by one
                undo_play(rec, undo[k])
                assert _same(rec, boards[k][0])
    assert captures > 50 and merges > 50  # the walk met both
