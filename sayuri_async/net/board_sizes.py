"""The board sizes a network declares, and the one refusal of a size outside them.

Vocabulary
----------
declared    ``board_size_min..board_size_max`` of a network's config, kept
            in its weights file's header (``weights.header_of``); Sayuri's
            own format declares none.
refusal     ``check_board_size``: a ``BoardSizeError`` naming the network
            (its file), the sizes it declares and the size asked for with the
            option or key that asked. GTP asks it of its ``[game]
            board_size``, self-play of each of its board sizes and match of
            its ``--board``, all before a game starts
            (``weights.refuse_board_sizes`` reads a file's header only).

No torch here: GTP imports it at start.
"""
from __future__ import annotations

from ..usererror import UserError


class BoardSizeError(ValueError, UserError):
    """A board size the network does not declare (exit status 2)."""


def check_board_size(name: str, lo: int, hi: int, size: int, option: str) -> None:
    """``BoardSizeError`` unless ``size`` (given by ``option``) lies in
    ``lo..hi``, the board sizes the network ``name`` declares."""
    if not lo <= size <= hi:
        raise BoardSizeError(f"{name}: the network declares board sizes {lo}..{hi}, so it cannot play {option} "
                             f"{size}")
