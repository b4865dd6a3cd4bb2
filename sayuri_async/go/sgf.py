"""SGF (FF[4], GM[1]) reading and writing for ``Game``, through sgfmill.

Vocabulary
----------
SGF text    one game record, ``(;FF[4]GM[1]SZ[19]KM[7.5];B[pd];W[dp]...)``.
            Only the main line (first variation) is read.
set-up      ``AB``/``AW`` stones in the root node: placed without captures
            (all at once, as the SGF spec says); ``HA[n]`` marks the ``AB``
            stones as handicap stones. Set-up in later nodes is unsupported.
SgfInfo     what a ``Game`` does not hold: player names, the result string
            (``RE``), the root comment, the date, the rules name as written.
            Per-move comments live in ``Game.comments`` (aligned with
            ``Game.moves``).
SgfError    a malformed or unsupported record (bad syntax, board size outside
            7..19 or not square, an illegal move, set-up on an occupied point,
            a set-up group without liberties...). Its message names the file,
            when there is one, and the problem.
limits      what a record can make us hold: at most ``MAX_SGF_BYTES`` (2 MiB),
            at most ``MAX_SGF_NODES`` nodes counted as ``;`` before parsing
            (sgfmill keeps about 1 KB a node), at most ``MAX_SGF_MOVES`` moves
            in the main line (each costs a board record of about 14 KB in the
            Game); larger records are an SgfError naming the limit.

Coordinates: sgfmill's ``(row, col)`` has row 0 at the bottom, like GTP, so
``action = row * N + col`` (see ``go/board.py``). Passes are written ``tt``
(sgfmill's choice for boards up to 19), and ``tt`` or an empty value read as
passes. Rules: ``RU`` naming Japanese or Korean rules loads as territory
scoring, anything else as area scoring; area games are written ``RU[Chinese]``
and territory games ``RU[Japanese]``. A record without ``KM`` gets
``default_komi``.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass

import numpy as np
from sgfmill import sgf, sgf_grammar
from sgfmill.sgf_properties import interpret_go_point

from . import board as B
from .coords import action_to_vertex
from ..fileio import write_text_atomic  # noqa: F401  (re-exported for callers of this module)
from .game import Game, IllegalMove, Rules
from ..usererror import UserError

MIN_SGF_SIZE, MAX_SGF_SIZE = 7, 19
MAX_SGF_BYTES = 2 << 20
MAX_SGF_NODES = 20_000
MAX_SGF_MOVES = 2_500
_TERRITORY_RULES = ("japanese", "korean")


class SgfError(ValueError, UserError):
    """A malformed or unsupported SGF record; the message says where and why."""


@dataclass
class SgfInfo:
    """Game-record metadata kept beside a ``Game``."""

    black: str = ""  # PB
    white: str = ""  # PW
    result: str = ""  # RE, e.g. "B+3.5", "W+R", "0"
    comment: str = ""  # C of the root node (game comment)
    date: str = ""  # DT
    rules: str = ""  # RU as written
    handicap: int = 0  # HA (0 when absent)


# --------------------------------------------------------------------------
# set-up positions


def set_up_position(
    game: Game, black: list[int], white: list[int], to_move: int | None = None
) -> None:
    """Put set-up stones (actions) on the empty start board of ``game``.

    The stones appear all at once: nothing is captured, and a position where
    some group has no liberty is rejected. The result becomes the game's start
    position (its hash is the first of the superko history). ``to_move``
    defaults to black. Raises IllegalMove for a repeated or overlapping point,
    a point off the board, a group without liberties, or a game that is not at
    its empty start.
    """
    n = game.size
    if game.moves or game.handicap or np.any(game.stones()):
        raise IllegalMove("set-up stones need an empty board at the start of the game")
    colour = np.zeros(n * n, dtype=np.int8)
    for stones, c in ((black, B.BLACK), (white, B.WHITE)):
        for a in stones:
            if not 0 <= a < n * n:
                raise IllegalMove(f"set-up stone {a} is not a point of the {n}x{n} board")
            if colour[a] != B.EMPTY:
                raise IllegalMove(f"set-up stone on occupied point {action_to_vertex(a, n)}")
            colour[a] = c
    order = _placement_order(colour, n)
    rec = game.rec
    for a in order:
        B.place_stone(rec, B.action_to_point(n, a), int(colour[a]))
    rec["to_move"] = B.BLACK if to_move is None else to_move
    rec["ko"] = B.NO_KO
    game.mark_start()  # the set-up position is the start: the superko history begins here


def _neighbours(a: int, n: int) -> list[int]:
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


def _placement_order(colour: np.ndarray, n: int) -> list[int]:
    """An order of the stones such that placing them one by one never leaves
    a group without liberties, so nothing is ever captured: each group grows
    breadth-first from a stone next to one of its final liberties, which stays
    empty throughout."""
    seen = np.zeros(n * n, dtype=bool)
    order: list[int] = []
    for a in range(n * n):
        c = colour[a]
        if c == B.EMPTY or seen[a]:
            continue
        group = [a]
        seen[a] = True
        i = 0
        root = -1
        while i < len(group):
            s = group[i]
            i += 1
            for q in _neighbours(s, n):
                if colour[q] == B.EMPTY and root < 0:
                    root = s
                if colour[q] == c and not seen[q]:
                    seen[q] = True
                    group.append(q)
        if root < 0:
            raise IllegalMove(
                f"set-up group at {action_to_vertex(a, n)} has no liberties"
            )
        members = set(group)
        placed = {root}
        queue = deque([root])
        while queue:
            s = queue.popleft()
            order.append(s)
            for q in _neighbours(s, n):
                if q in members and q not in placed:
                    placed.add(q)
                    queue.append(q)
    return order


# --------------------------------------------------------------------------
# reading


def load_sgf(
    data: str | bytes, *, source: str | None = None, default_komi: float = 7.5,
    sizes: tuple[int, int] = (MIN_SGF_SIZE, MAX_SGF_SIZE),
) -> tuple[Game, SgfInfo]:
    """Parse one SGF record (text or bytes) into a ``Game`` and ``SgfInfo``.

    ``source`` names the file in error messages; ``sizes`` is the range of
    board sizes taken (the importer's 7..19 by default; GTP's ``loadsgf``
    takes what the engine plays). Raises SgfError."""
    where = f"{source}: " if source else ""
    try:
        return _load(data, default_komi, sizes)
    except SgfError as e:
        raise SgfError(f"{where}{e}") from e
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise SgfError(f"{where}malformed SGF: {e or type(e).__name__}") from e


def load_sgf_file(path: str | os.PathLike, *, default_komi: float = 7.5,
                  sizes: tuple[int, int] = (MIN_SGF_SIZE, MAX_SGF_SIZE)) -> tuple[Game, SgfInfo]:
    """Read an SGF file (``sizes`` as in ``load_sgf``); errors (also
    unreadable files) are SgfError naming it."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SGF_BYTES + 1)
    except OSError as e:
        raise SgfError(f"{path}: cannot read: {e.strerror or e}") from e
    return load_sgf(data, source=str(path), default_komi=default_komi, sizes=sizes)


def _load(data: str | bytes, default_komi: float, sizes: tuple[int, int]) -> tuple[Game, SgfInfo]:
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_SGF_BYTES:
        raise SgfError(f"larger than the limit of {MAX_SGF_BYTES:,} bytes for one record")
    if raw.count(b";") > MAX_SGF_NODES:
        raise SgfError(f"more than the limit of {MAX_SGF_NODES:,} nodes")
    try:
        coarse = sgf_grammar.parse_sgf_game(raw)
    except ValueError as e:
        raise SgfError(f"bad SGF syntax: {e}") from e
    root_props = coarse.sequence[0]
    n = _board_size(root_props, sizes)
    encoding = None
    if isinstance(data, str):
        encoding = "UTF-8"
    elif "CA" not in root_props:
        try:
            raw.decode("utf-8")
            encoding = "UTF-8"
        except UnicodeDecodeError:
            encoding = None  # sgfmill's default, ISO-8859-1
    sg = sgf.Sgf_game.from_coarse_game_tree(coarse, override_encoding=encoding)
    root = sg.get_root()
    if root.has_property("GM") and root.get("GM") != 1:
        raise SgfError(f"GM[{root.get('GM')}] is not a Go record (GM[1])")

    info = SgfInfo(
        black=_text(root, "PB"),
        white=_text(root, "PW"),
        result=_text(root, "RE"),
        comment=_text(root, "C"),
        date=_text(root, "DT"),
        rules=_text(root, "RU"),
        handicap=_handicap(root),
    )
    komi = _komi(root, default_komi)
    scoring = "territory" if info.rules.strip().lower() in _TERRITORY_RULES else "area"
    game = Game(size=n, komi=komi, rules=Rules(scoring=scoring))

    black, white, empty = _setup_points(root, n)
    if empty:
        raise SgfError("AE in the root node is unsupported")
    to_move = None
    if root.has_property("PL"):
        to_move = B.BLACK if root.get("PL") == "b" else B.WHITE
    elif info.handicap >= 2 and black and not white:
        to_move = B.WHITE
    if black or white:
        try:
            set_up_position(game, black, white, to_move)
        except IllegalMove as e:
            raise SgfError(str(e)) from e
        if info.handicap >= 2 and not white:
            game.mark_handicap(list(black))
    elif to_move is not None:
        game.rec["to_move"] = to_move

    main_line = sg.get_main_sequence()
    if len(main_line) > MAX_SGF_MOVES + 1:
        raise SgfError(f"{len(main_line) - 1:,} nodes in the main line, over the limit of {MAX_SGF_MOVES:,} moves")
    for k, node in enumerate(main_line):
        if k > 0 and node.has_setup_stones():
            raise SgfError(f"node {k}: set-up stones (AB/AW/AE) after the root node are unsupported")
        comment = _text(node, "C")
        if node.has_property("B") and node.has_property("W"):
            raise SgfError(f"node {k}: both B and W in one node")
        colour, move = node.get_raw_move()
        if colour is None:
            if k > 0 and comment:
                _append_comment(game, info, comment)
            continue
        _play(game, k, colour, move, n)
        game.comments[-1] = comment
    return game, info


def _board_size(root_props: dict, sizes: tuple[int, int]) -> int:
    if "SZ" not in root_props:
        return 19
    text = root_props["SZ"][0].decode("ascii", "replace").strip()
    if ":" in text:
        raise SgfError(f"SZ[{text}]: non-square boards are unsupported")
    try:
        n = int(text)
    except ValueError:
        raise SgfError(f"SZ[{text}] is not a board size") from None
    lo, hi = sizes
    if not lo <= n <= hi:
        raise SgfError(f"SZ[{n}]: board size outside {lo}..{hi}")
    return n


def _text(node, ident: str) -> str:
    if not node.has_property(ident):
        return ""
    return str(node.get(ident))


def _komi(root, default: float) -> float:
    if not root.has_property("KM"):
        return default
    try:
        return float(root.get("KM"))
    except ValueError:
        raise SgfError(f"KM[{root.get_raw('KM').decode('ascii', 'replace')}] is not a number") from None


def _handicap(root) -> int:
    if not root.has_property("HA"):
        return 0
    text = root.get_raw("HA").decode("ascii", "replace").strip()
    try:
        ha = int(text)
    except ValueError:
        raise SgfError(f"HA[{text}] is not a number") from None
    if ha < 0:
        raise SgfError(f"HA[{ha}] is negative")
    return ha


def _setup_points(root, n: int) -> tuple[list[int], list[int], list[int]]:
    out = []
    for ident in ("AB", "AW", "AE"):
        if not root.has_property(ident):
            out.append([])
            continue
        try:
            pts = root.get(ident)
        except ValueError:
            raise SgfError(f"{ident}: malformed or off-board point") from None
        out.append(sorted(r * n + c for r, c in pts))
    black, white, empty = out
    both = set(black) & set(white)
    if both:
        v = action_to_vertex(min(both), n)
        raise SgfError(f"AB and AW on the same point {v}: set-up on an occupied point")
    return black, white, empty


def _play(game: Game, k: int, colour: str, raw: bytes, n: int) -> None:
    who = B.BLACK if colour == "b" else B.WHITE
    label = f"{colour.upper()}[{raw.decode('ascii', 'replace')}]"
    try:
        pt = interpret_go_point(raw, n)
    except ValueError:
        raise SgfError(f"node {k}: {label} is not a point of the {n}x{n} board") from None
    action = n * n if pt is None else pt[0] * n + pt[1]
    why = game.why_illegal(action, who)
    if why is not None:
        vertex = action_to_vertex(action, n)
        raise SgfError(f"node {k}: illegal move {label} ({vertex}): {why}")
    game.play(action, who)


def _append_comment(game: Game, info: SgfInfo, text: str) -> None:
    """A comment on a node without a move joins the previous move's comment
    (or the game comment before the first move)."""
    if game.comments:
        prev = game.comments[-1]
        game.comments[-1] = f"{prev}\n\n{text}" if prev else text
    else:
        info.comment = f"{info.comment}\n\n{text}" if info.comment else text


# --------------------------------------------------------------------------
# writing


def _start_record(game: Game):
    """The record of the start position (after set-up, before any move)."""
    return game.start_record()


def dump_sgf(game: Game, info: SgfInfo | None = None, *, result: str | None = None) -> str:
    """The game as SGF text: size, komi, rules, set-up/handicap stones, moves
    with their comments, and the result (``result``, else ``info.result``,
    else the score when the game is over)."""
    info = info or SgfInfo()
    n = game.size
    sg = sgf.Sgf_game(n)
    root = sg.get_root()
    root.set("KM", float(game.komi))
    root.set("RU", "Japanese" if game.rules.scoring == "territory" else "Chinese")
    if result is None:
        result = info.result or (game.result() if game.is_over() else "")
    if result:
        root.set("RE", result)
    if info.black:
        root.set("PB", info.black)
    if info.white:
        root.set("PW", info.white)
    if info.date:
        root.set("DT", info.date)
    if info.comment:
        root.set("C", info.comment)
    start = _start_record(game)
    w = n + 2
    colour = start["color"][: w * w].reshape(w, w)[1:-1, 1:-1]
    black = [(int(r), int(c)) for r, c in zip(*np.nonzero(colour == B.BLACK))]
    white = [(int(r), int(c)) for r, c in zip(*np.nonzero(colour == B.WHITE))]
    if black or white:
        root.set_setup_stones(black, white)
    if len(game.handicap) >= 2:
        root.set("HA", len(game.handicap))
    start_to_move = int(start["to_move"])
    first = game.moves[0][0] if game.moves else B.BLACK
    if black or white or start_to_move != first:
        root.set("PL", "b" if start_to_move == B.BLACK else "w")
    for (who, action), comment in zip(game.moves, game.comments):
        node = sg.extend_main_sequence()
        move = None if action == n * n else (action // n, action % n)
        node.set_move("b" if who == B.BLACK else "w", move)
        if comment:
            node.set("C", comment)
    return sg.serialise().decode("utf-8")


def save_sgf_file(
    path: str | os.PathLike, game: Game, info: SgfInfo | None = None, *, result: str | None = None,
    replace: bool = True,
) -> None:
    """Write the game to ``path`` atomically (see ``dump_sgf``); with
    ``replace=False`` an existing file stays and ``fileio.NameTaken`` is raised."""
    write_text_atomic(path, dump_sgf(game, info, result=result), replace=replace)
