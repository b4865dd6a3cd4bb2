"""Command arguments: counts, numbers, colours, vertices, booleans. Every
helper raises GtpError with a message that names the argument and quotes
the bad token (``protocol.shown``).

Vocabulary
----------
integer     ASCII digits with an optional sign. The digits are checked and
            counted before any conversion: more than MAX_INT_DIGITS of them
            (leading zeros aside) is out of range, so no huge string reaches
            ``int()`` (whose 4,300-digit limit raised ValueError).
number      a decimal float in ASCII (``7.5``, ``-0.5``, ``1e3``; no
            ``inf``, ``nan``, underscores or non-ASCII digits, which Python's
            ``float()`` would take), at most MAX_NUMBER_CHARS characters.
range       ``lo`` and ``hi``, both included, when given; a value outside
            raises OutOfRange (a GtpError) saying which range.
colour      ``b``, ``w``, ``black``, ``white`` in any case.
vertex      a GTP vertex (``D4``, any case) or ``pass``; at most four ASCII
            characters are looked at (``Z25``, ``pass``).
"""
from __future__ import annotations

import math
import re

from sayuri_async.go.coords import VertexError, parse_color, vertex_to_action

from .protocol import GtpError, shown

MAX_INT_DIGITS = 18
MAX_NUMBER_CHARS = 64
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class OutOfRange(GtpError):
    """A well-formed number outside the range the argument allows."""


def want_args(args: list[str], lo: int, hi: int | None, usage: str) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        raise GtpError(f"syntax error: usage: {usage}")


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"{_num(lo)}..{_num(hi)}"
    if lo is not None:
        return f"at least {_num(lo)}"
    if hi is not None:
        return f"at most {_num(hi)}"
    return f"at most {MAX_INT_DIGITS} digits"


def _check_range(x: float, text: str, what: str, lo: float | None, hi: float | None) -> None:
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise OutOfRange(f"{what} {shown(text)} is out of range ({_range_text(lo, hi)})")


def parse_int(text: str, what: str, lo: int | None = None, hi: int | None = None) -> int:
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise GtpError(f"syntax error: {what} must be an integer, not {shown(text)}")
    digits = body.lstrip("0") or "0"
    if len(digits) > MAX_INT_DIGITS:
        raise OutOfRange(f"{what} {shown(text)} is out of range ({_range_text(lo, hi)})")
    n = -int(digits) if text[:1] == "-" else int(digits)
    _check_range(n, text, what, lo, hi)
    return n


def parse_float(text: str, what: str, lo: float | None = None, hi: float | None = None) -> float:
    if not _NUMBER.fullmatch(text):
        raise GtpError(f"syntax error: {what} must be a number, not {shown(text)}")
    if len(text) > MAX_NUMBER_CHARS:
        raise OutOfRange(f"{what} {shown(text)} is out of range ({_range_text(lo, hi)}, "
                         f"at most {MAX_NUMBER_CHARS} characters)")
    x = float(text)
    if not math.isfinite(x):
        raise OutOfRange(f"{what} {shown(text)} is out of range ({_range_text(lo, hi)})")
    _check_range(x, text, what, lo, hi)
    return x


def parse_bool(text: str, what: str) -> bool:
    s = text.lower() if text.isascii() else ""
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise GtpError(f"syntax error: {what} must be true or false, not {shown(text)}")


def is_color(text: str) -> bool:
    return text.isascii() and text.lower() in ("b", "w", "black", "white")


def parse_gtp_color(text: str) -> int:
    """BLACK (1) or WHITE (2)."""
    if not is_color(text):
        raise GtpError(f"syntax error: invalid color {shown(text)}")
    return parse_color(text)


def parse_gtp_vertex(text: str, n: int) -> int:
    """The action of a vertex on an ``n`` x ``n`` board (``n * n``: pass)."""
    if len(text) > 4 or not text.isascii() or not text.isalnum():
        raise GtpError(f"syntax error: invalid vertex {shown(text)}")
    try:
        return vertex_to_action(text, n)
    except VertexError as e:
        raise GtpError(f"syntax error: {e}") from None


def parse_vertex_list(text: str, n: int) -> set[int]:
    """``D4,E5,pass``: the actions of a comma-separated vertex list (empty
    parts are skipped; an empty list is an error)."""
    out = {parse_gtp_vertex(part, n) for part in text.split(",") if part}
    if not out:
        raise GtpError("syntax error: empty vertex list")
    return out
