"""The arguments of the analysis commands (``lz-analyze``, ``kata-analyze``,
``analyze`` and their ``*genmove_analyze`` forms).

Vocabulary
----------
AnalyzeRequest  the parsed arguments: ``[color] [interval] [interval N]
             [minmoves N] [maxmoves N] [avoid C V,V,.. D] [allow C V,V,.. D]``
             and, for ``kata`` style only, ``[ownership B] [ownershipStdev B]
             [movesOwnership B] [rootInfo B] [pvVisits B] [pvEdgeVisits B]``
             (keys in any case, any order).
interval     centiseconds between output lines, INTERVAL_RANGE (0: the
             config's default).
moves range  ``minmoves`` and ``maxmoves``: MOVES_RANGE (``maxmoves 0``: the
             config's default).
depth        the last number of ``avoid``/``allow``: DEPTH_RANGE. Only the
             root move is restricted, whatever the depth.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .args import is_color, parse_bool, parse_gtp_color, parse_int, parse_vertex_list
from .protocol import GtpError, shown

INTERVAL_RANGE = (0, 360_000)  # centiseconds: up to an hour between lines
MOVES_RANGE = (0, 1000)  # more than the 626 moves of a 25x25 board
DEPTH_RANGE = (1, 1_000_000)
KATA_FLAGS = {  # kata-analyze's true/false keys (lower case) -> AnalyzeRequest field
    "ownership": "ownership",
    "ownershipstdev": "ownership_stdev",
    "movesownership": "moves_ownership",
    "rootinfo": "root_info",
    "pvvisits": "pv_visits",
    "pvedgevisits": "pv_edge_visits",
}


@dataclass
class AnalyzeRequest:
    style: str
    color: int | None = None
    interval_cs: int = 10
    min_moves: int = 0
    max_moves: int = 20
    ownership: bool = False
    ownership_stdev: bool = False
    moves_ownership: bool = False
    root_info: bool = False
    pv_visits: bool = False
    pv_edge_visits: bool = False
    avoid: set[int] = field(default_factory=set)  # root actions never searched
    allow: set[int] | None = None  # when set, the only root actions searched

    @property
    def wants_ownership(self) -> bool:
        """Whether a line shows the root's ownership in some section."""
        return self.ownership or self.moves_ownership


def _is_integer(tok: str) -> bool:
    body = tok[1:] if tok[:1] in ("+", "-") else tok
    return bool(body) and body.isascii() and body.isdigit()


def parse_analyze_args(
    args: list[str],
    n: int,
    style: str,
    default_interval_cs: int,
    default_max_moves: int,
    to_move: int,
) -> AnalyzeRequest:
    """Parse analysis arguments; raises GtpError naming the bad token."""
    req = AnalyzeRequest(style=style, interval_cs=default_interval_cs, max_moves=default_max_moves)
    i = 0
    if i < len(args) and is_color(args[i]):
        req.color = parse_gtp_color(args[i])
        i += 1
    if i < len(args) and _is_integer(args[i]):
        req.interval_cs = _interval(args[i], default_interval_cs)
        i += 1

    def need(k: int, key: str) -> list[str]:
        if i + k >= len(args):
            raise GtpError(f"syntax error: {key} needs {k} value{'s' if k > 1 else ''}")
        return args[i + 1 : i + 1 + k]

    kata_keys: list[str] = []
    while i < len(args):
        key = args[i].lower() if args[i].isascii() else ""
        if key == "interval":
            req.interval_cs = _interval(need(1, key)[0], default_interval_cs)
            i += 2
        elif key in ("minmoves", "maxmoves"):
            v = parse_int(need(1, key)[0], key, *MOVES_RANGE)
            if key == "minmoves":
                req.min_moves = v
            else:
                req.max_moves = v if v > 0 else default_max_moves
            i += 2
        elif key in ("avoid", "allow"):
            color_tok, verts, depth_tok = need(3, key)
            color = parse_gtp_color(color_tok)
            acts = parse_vertex_list(verts, n)
            parse_int(depth_tok, f"{key} depth", *DEPTH_RANGE)
            # Only the root move is restricted: moves of the side to move at
            # the root (later plies of the variation are not).
            if color == (req.color or to_move):
                if key == "avoid":
                    req.avoid |= acts
                else:
                    req.allow = acts if req.allow is None else (req.allow | acts)
            i += 4
        elif key in KATA_FLAGS:
            setattr(req, KATA_FLAGS[key], parse_bool(need(1, key)[0], args[i]))
            kata_keys.append(args[i])
            i += 2
        else:
            raise GtpError(f"syntax error: unknown analysis argument {shown(args[i])}")
    if kata_keys and style != "kata":
        raise GtpError(f"syntax error: {kata_keys[0]} is a kata-analyze option "
                       "(ownership, ownershipStdev, movesOwnership, rootInfo, pvVisits, pvEdgeVisits)")
    return req


def _interval(tok: str, default: int) -> int:
    v = parse_int(tok, "interval", *INTERVAL_RANGE)
    return v if v > 0 else default
