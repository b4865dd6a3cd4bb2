"""GTP vertices: ``A1`` .. ``T19`` (no ``I``), case-insensitive, and ``pass``.

Vocabulary: a *vertex* is GTP text; ``(x, y)`` are 0-based column and row with
``y = 0`` the bottom row (GTP row 1); *actions* and *points* are defined in
``go/board.py``.
"""
from __future__ import annotations

from .board import MAX_N

COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP skips I
assert len(COLUMNS) >= MAX_N


class VertexError(ValueError):
    """A vertex that is not valid GTP for the board size."""


def parse_vertex(text: str, n: int) -> tuple[int, int] | None:
    """``"D4"`` -> ``(3, 3)``; ``"pass"`` -> ``None``. Raises VertexError."""
    s = text.strip().upper()
    if s == "PASS":
        return None
    digits = s[1:]
    if len(s) < 2 or not (digits.isascii() and digits.isdigit()) or s[0] not in COLUMNS:
        raise VertexError(f"invalid vertex {text!r}")
    x = COLUMNS.index(s[0])
    y = int(s[1:]) - 1
    if not (0 <= x < n and 0 <= y < n):
        raise VertexError(f"vertex {text!r} is off the {n}x{n} board")
    return x, y


def format_vertex(xy: tuple[int, int] | None) -> str:
    """``(3, 3)`` -> ``"D4"``; ``None`` -> ``"pass"``."""
    if xy is None:
        return "pass"
    x, y = xy
    return f"{COLUMNS[x]}{y + 1}"


def vertex_to_action(text: str, n: int) -> int:
    xy = parse_vertex(text, n)
    return n * n if xy is None else xy[1] * n + xy[0]


def action_to_vertex(a: int, n: int) -> str:
    if a == n * n:
        return "pass"
    if not 0 <= a < n * n:
        raise VertexError(f"action {a} is off the {n}x{n} board")
    return format_vertex((a % n, a // n))


def parse_color(text: str) -> int:
    """``b``/``black`` -> 1, ``w``/``white`` -> 2 (board.BLACK/WHITE)."""
    s = text.strip().lower()
    if s in ("b", "black"):
        return 1
    if s in ("w", "white"):
        return 2
    raise ValueError(f"invalid color {text!r}")
