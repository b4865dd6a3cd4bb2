"""Analysis requests and the ``info`` lines Sabaki and Lizzie read.

Vocabulary
----------
style        ``lz`` (``lz-analyze``: winrate, prior and lcb as integers
             0-10000), ``kata`` (``kata-analyze``: floats in [0, 1], score
             keys, optional ``rootInfo`` and ``ownership`` sections), ``sabaki``
             (``analyze``: floats, with ``scoreLead``).
AnalyzeRequest  the parsed arguments: ``[color] [interval] [interval N]
             [minmoves N] [maxmoves N] [avoid C V,V,.. D] [allow C V,V,.. D]
             [ownership B] [rootInfo B]``; the interval is in centiseconds.
MoveInfo     one candidate move at the root: visits, winrate (side to move
             at the root, [0, 1]), prior, lcb, order, principal variation.
Report       what one output line shows: the candidates in ``order``, the
             root's visits, winrate and score, and optionally ownership.
block        ``info move V visits n ... order k pv V V ...``; ``pv`` is always
             the last key of a block (Lizzie reads everything after it), and
             blocks are joined by single spaces on one line. ``kata`` lines
             end with ``rootInfo ...`` and ``ownership ...`` when asked; the
             ownership values run row by row from the top-left vertex (A19 on
             19x19), +1 meaning the side to move owns the point.
lcb          the Wilson score lower bound of the winrate over the move's
             visits (``z`` from the config, 1.96 by default); 0 unvisited.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sayuri_async.go.coords import VertexError, action_to_vertex, parse_color, vertex_to_action

from .protocol import GtpError, parse_bool, parse_int

STYLES = ("lz", "kata", "sabaki")


@dataclass
class AnalyzeRequest:
    style: str
    color: int | None = None
    interval_cs: int = 10
    min_moves: int = 0
    max_moves: int = 20
    ownership: bool = False
    root_info: bool = False
    avoid: set[int] = field(default_factory=set)  # root actions never searched
    allow: set[int] | None = None  # when set, the only root actions searched


@dataclass
class MoveInfo:
    action: int
    visits: int
    winrate: float
    prior: float
    lcb: float
    score_lead: float
    pv: list[int]
    order: int = 0


@dataclass
class Report:
    moves: list[MoveInfo]
    root_visits: int
    root_winrate: float
    root_score: float
    ownership: np.ndarray | None = None  # [N*N], row 0 = GTP row 1, side to move +1


def _is_color(tok: str) -> bool:
    return tok.lower() in ("b", "w", "black", "white")


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
    if i < len(args) and _is_color(args[i]):
        req.color = parse_color(args[i])
        i += 1
    if i < len(args) and args[i].lstrip("+-").isdigit():
        req.interval_cs = _interval(args[i], default_interval_cs)
        i += 1

    def need(k: int, key: str) -> list[str]:
        if i + k >= len(args):
            raise GtpError(f"syntax error: {key} needs {k} value{'s' if k > 1 else ''}")
        return args[i + 1 : i + 1 + k]

    while i < len(args):
        key = args[i].lower()
        if key == "interval":
            req.interval_cs = _interval(need(1, key)[0], default_interval_cs)
            i += 2
        elif key in ("minmoves", "maxmoves"):
            v = parse_int(need(1, key)[0], key)
            if v < 0:
                raise GtpError(f"syntax error: {key} must not be negative")
            if key == "minmoves":
                req.min_moves = v
            else:
                req.max_moves = v if v > 0 else default_max_moves
            i += 2
        elif key in ("avoid", "allow"):
            color_tok, verts, depth_tok = need(3, key)
            color = _color(color_tok)
            depth = parse_int(depth_tok, f"{key} depth")
            if depth < 1:
                raise GtpError(f"syntax error: {key} depth must be at least 1")
            acts = _vertex_list(verts, n)
            # Only the root move is restricted: moves of the side to move at
            # the root (later plies of the variation are not).
            if color == (req.color or to_move):
                if key == "avoid":
                    req.avoid |= acts
                else:
                    req.allow = acts if req.allow is None else (req.allow | acts)
            i += 4
        elif key in ("ownership", "rootinfo"):
            v = parse_bool(need(1, key)[0], key)
            if key == "ownership":
                req.ownership = v
            else:
                req.root_info = v
            i += 2
        else:
            raise GtpError(f"syntax error: unknown analysis argument {args[i]!r}")
    if (req.ownership or req.root_info) and style != "kata":
        raise GtpError("syntax error: ownership and rootInfo are kata-analyze options")
    return req


def _interval(tok: str, default: int) -> int:
    v = parse_int(tok, "interval")
    if v < 0:
        raise GtpError("syntax error: interval must not be negative")
    return v if v > 0 else default


def _color(tok: str) -> int:
    try:
        return parse_color(tok)
    except ValueError:
        raise GtpError(f"syntax error: invalid color {tok!r}") from None


def _vertex_list(text: str, n: int) -> set[int]:
    out = set()
    for part in text.split(","):
        if not part:
            continue
        try:
            out.add(vertex_to_action(part, n))
        except VertexError as e:
            raise GtpError(f"syntax error: {e}") from None
    if not out:
        raise GtpError("syntax error: empty vertex list")
    return out


# ---- numbers ---------------------------------------------------------------


def wilson_lcb(winrate: float, visits: int, z: float) -> float:
    """Lower end of the Wilson score interval for ``winrate`` over ``visits``."""
    if visits <= 0:
        return 0.0
    w = min(1.0, max(0.0, winrate))
    z2 = z * z
    centre = w + z2 / (2 * visits)
    spread = z * math.sqrt(w * (1 - w) / visits + z2 / (4 * visits * visits))
    return max(0.0, (centre - spread) / (1 + z2 / visits))


def rank_moves(moves: list[MoveInfo], min_moves: int, max_moves: int) -> list[MoveInfo]:
    """Visited moves by visits, then winrate, then prior; unvisited moves (by
    prior) only to reach ``min_moves``; at most ``max_moves`` (at least
    ``min_moves``); ``order`` set to the rank."""
    visited = sorted((m for m in moves if m.visits > 0), key=lambda m: (-m.visits, -m.winrate, -m.prior, m.action))
    rest = sorted((m for m in moves if m.visits == 0), key=lambda m: (-m.prior, m.action))
    out = visited[: max(max_moves, min_moves)]
    if len(out) < min_moves:
        out += rest[: min_moves - len(out)]
    for k, m in enumerate(out):
        m.order = k
    return out


def _i10k(x: float) -> int:
    return int(min(10000, max(0, round(x * 10000))))


def _f(x: float) -> str:
    return f"{x:.6f}"


def _pv(pv: list[int], n: int) -> str:
    return " ".join(action_to_vertex(a, n) for a in pv)


# ---- lines -----------------------------------------------------------------


def format_lz(report: Report, n: int) -> str:
    blocks = [
        f"info move {action_to_vertex(m.action, n)} visits {m.visits} winrate {_i10k(m.winrate)} "
        f"prior {_i10k(m.prior)} lcb {_i10k(m.lcb)} order {m.order} pv {_pv(m.pv, n)}"
        for m in report.moves
    ]
    return " ".join(blocks)


def format_sabaki(report: Report, n: int) -> str:
    blocks = [
        f"info move {action_to_vertex(m.action, n)} visits {m.visits} winrate {_f(m.winrate)} "
        f"scoreLead {m.score_lead:.3f} prior {_f(m.prior)} lcb {_f(m.lcb)} order {m.order} pv {_pv(m.pv, n)}"
        for m in report.moves
    ]
    return " ".join(blocks)


def format_kata(report: Report, n: int, root_info: bool = False) -> str:
    blocks = [
        f"info move {action_to_vertex(m.action, n)} visits {m.visits} utility {_f(2 * m.winrate - 1)} "
        f"winrate {_f(m.winrate)} scoreMean {m.score_lead:.3f} scoreLead {m.score_lead:.3f} "
        f"prior {_f(m.prior)} lcb {_f(m.lcb)} order {m.order} pv {_pv(m.pv, n)}"
        for m in report.moves
    ]
    if root_info:
        blocks.append(
            f"rootInfo visits {report.root_visits} utility {_f(2 * report.root_winrate - 1)} "
            f"winrate {_f(report.root_winrate)} scoreMean {report.root_score:.3f} scoreLead {report.root_score:.3f}"
        )
    if report.ownership is not None:
        own = np.asarray(report.ownership, dtype=np.float64).reshape(n, n)[::-1].reshape(-1)
        blocks.append("ownership " + " ".join(f"{v:.4f}" for v in own))
    return " ".join(blocks)


def format_report(report: Report, n: int, req: AnalyzeRequest) -> str:
    if req.style == "lz":
        return format_lz(report, n)
    if req.style == "kata":
        return format_kata(report, n, req.root_info)
    return format_sabaki(report, n)
