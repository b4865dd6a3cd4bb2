"""The ``info`` lines Sabaki, Lizzie and KataGo's clients read.

Vocabulary
----------
style        ``lz`` (``lz-analyze``: winrate, prior and lcb as integers
             0-10000), ``kata`` (``kata-analyze``: floats in [0, 1], score
             keys, optional sections), ``sabaki`` (``analyze``: floats, with
             ``scoreLead``). The request is ``analyze_args.AnalyzeRequest``.
MoveInfo     one candidate move at the root: visits, winrate (side to move
             at the root, [0, 1]), prior, lcb, order, principal variation and
             the visits of the position after each of its moves.
Report       what one output line shows: the candidates in ``order``, the
             root's visits, winrate and score, and optionally ownership.
block        ``info move V visits n ... order k pv V V ...``; in ``lz`` and
             ``sabaki`` lines ``pv`` is always the last key of a block
             (Lizzie reads everything after it); ``kata`` blocks may go on,
             when asked, with ``pvVisits n ..`` and ``pvEdgeVisits n ..``
             (one count per pv move) and ``movesOwnership f ..`` (N*N
             values). Blocks are joined by single spaces on one line.
sections     ``kata`` lines end, when asked, with ``rootInfo ...``,
             ``ownership f ..`` and ``ownershipStdev f ..``. Ownership values
             run row by row from the top-left vertex (A19 on 19x19), +1
             meaning the side to move owns the point.
pv visits    this tree has one path per position (no graph search), so the
             visits of the position after a pv move (``pvVisits``) and of the
             edge into it (``pvEdgeVisits``) are the same numbers.
ownership stdev  the spread of ownership over the search tree; the search
             keeps no ownership per node, so every value is 0.
moves ownership  per move, the ownership after it; the search keeps none per
             child, so every move shows the root's ownership.
lcb          the Wilson score lower bound of the winrate over the move's
             visits (``z`` from the config, 1.96 by default); 0 unvisited.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sayuri_async.go.coords import action_to_vertex

from .analyze_args import AnalyzeRequest


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
    pv_visits: list[int] = field(default_factory=list)  # visits of the position after each pv move


@dataclass
class Report:
    moves: list[MoveInfo]
    root_visits: int
    root_winrate: float
    root_score: float
    ownership: np.ndarray | None = None  # [N*N], row 0 = GTP row 1, side to move +1


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


def _own_text(values: np.ndarray, n: int) -> str:
    """N*N values from the top-left vertex, row by row (``values`` run from
    A1, row 0 first)."""
    own = np.asarray(values, dtype=np.float64).reshape(n, n)[::-1].reshape(-1)
    return " ".join(f"{v:.4f}" for v in own)


def _kata_block(m: MoveInfo, n: int, req: AnalyzeRequest, moves_own: str) -> str:
    parts = [
        f"info move {action_to_vertex(m.action, n)} visits {m.visits} utility {_f(2 * m.winrate - 1)} "
        f"winrate {_f(m.winrate)} scoreMean {m.score_lead:.3f} scoreLead {m.score_lead:.3f} "
        f"prior {_f(m.prior)} lcb {_f(m.lcb)} order {m.order} pv {_pv(m.pv, n)}"
    ]
    counts = " ".join(str(v) for v in m.pv_visits)
    if req.pv_visits:
        parts.append(f"pvVisits {counts}")
    if req.pv_edge_visits:
        parts.append(f"pvEdgeVisits {counts}")
    if moves_own:
        parts.append(f"movesOwnership {moves_own}")
    return " ".join(parts)


def format_kata(report: Report, n: int, req: AnalyzeRequest | None = None) -> str:
    req = req or AnalyzeRequest(style="kata")
    root_own = _own_text(report.ownership, n) if report.ownership is not None else ""
    if req.moves_ownership and not root_own:
        root_own = _own_text(np.zeros(n * n), n)
    moves_own = root_own if req.moves_ownership else ""
    blocks = [_kata_block(m, n, req, moves_own) for m in report.moves]
    if req.root_info:
        blocks.append(
            f"rootInfo visits {report.root_visits} utility {_f(2 * report.root_winrate - 1)} "
            f"winrate {_f(report.root_winrate)} scoreMean {report.root_score:.3f} scoreLead {report.root_score:.3f}"
        )
    if req.ownership and root_own:
        blocks.append("ownership " + root_own)
    if req.ownership_stdev:
        blocks.append("ownershipStdev " + _own_text(np.zeros(n * n), n))
    return " ".join(blocks)


def format_report(report: Report, n: int, req: AnalyzeRequest) -> str:
    if req.style == "lz":
        return format_lz(report, n)
    if req.style == "kata":
        return format_kata(report, n, req)
    return format_sabaki(report, n)
