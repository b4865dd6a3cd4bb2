"""Shared test helpers: build a ``Game`` from a text diagram.

A diagram lists the rows from the top (row N) down to row 1, one row per
line; ``X`` is black, ``O`` white, ``.`` empty; spaces are ignored. The stones
become the set-up start position (``sgf.set_up_position``), so the superko
history starts from that position.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

from sayuri_async.go import board as B
from sayuri_async.go.game import Game, Rules
from sayuri_async.go.sgf import set_up_position


def parse_diagram(text: str) -> tuple[int, list[int], list[int]]:
    """(size, black actions, white actions) of a diagram."""
    rows = [r.replace(" ", "") for r in text.strip().splitlines()]
    n = len(rows)
    assert all(len(r) == n for r in rows), "diagram must be square"
    black, white = [], []
    for i, row in enumerate(rows):
        y = n - 1 - i
        for x, ch in enumerate(row):
            assert ch in ".XO", f"bad diagram character {ch!r}"
            if ch == "X":
                black.append(y * n + x)
            elif ch == "O":
                white.append(y * n + x)
    return n, black, white


def build_game(
    text: str, to_move: int = B.BLACK, komi: float = 7.5, rules: Rules | None = None
) -> Game:
    n, black, white = parse_diagram(text)
    game = Game(size=n, komi=komi, rules=rules or Rules())
    set_up_position(game, black, white, to_move)
    return game


@pytest.fixture
def diagram() -> Callable[..., Game]:
    """``diagram(text, to_move=BLACK, komi=7.5, rules=None) -> Game``."""
    return build_game
