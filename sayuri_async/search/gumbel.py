"""Gumbel root search: sequential halving and completed-Q policy targets
(Danihelka et al., "Policy improvement by planning with Gumbel", 2022).

Vocabulary
----------
g           Gumbel(0, 1) noise per root action, drawn once per search.
logits      log prior of the root's children (legal actions only).
considered  the top-k actions by ``g + logits``; sequential halving keeps the
            better half by ``g + logits + sigma(q)`` after each phase until one
            is left, spending exactly the playout budget.
visit plan  the phases' (candidates, visits), drawn up once per search
            (``visit_plan``); a phase's visits go round its candidates, and
            the search hands them to the descent as one sequence of forced
            root children, batched like PUCT's playouts.
sigma(q)    ``(c_visit + max_b N(b)) * c_scale * q`` with q in [0, 1].
completed Q Q of visited actions; unvisited ones get ``v_mix`` (the network's
            root value mixed with the visited children's Q, weighted by prior).
improved policy  ``softmax(logits + sigma(completed Q))`` over legal actions:
            the training target of a Gumbel search.
All arrays are ``[A]`` over actions (pass last); illegal actions carry
``-inf`` logits. Values here are in [-1, 1] and mapped to [0, 1] for sigma.
"""
from __future__ import annotations

import math

import numpy as np

from .value import winrate


def phase_sizes(k: int) -> list[int]:
    """How many actions remain in each phase: k, ceil(k/2), ... down to 2."""
    sizes = [k]
    while sizes[-1] > 2:
        sizes.append(math.ceil(sizes[-1] / 2))
    return sizes if k > 1 else [1]


def visit_plan(k: int, budget: int) -> list[tuple[int, int]]:
    """Sequential halving's visits, drawn up once per search: for each
    phase, (candidates left, visits it spends), the visits going round the
    candidates in turn. Every phase but the last gets
    ``max(1, budget // (phases * size)) * size`` of what is left; the last
    takes the rest, so the plan spends exactly ``budget``."""
    sizes = phase_sizes(k)
    plan: list[tuple[int, int]] = []
    left = budget
    for i, size in enumerate(sizes):
        if left <= 0:
            break
        n = left if i == len(sizes) - 1 else min(max(1, budget // (len(sizes) * size)) * size, left)
        plan.append((size, n))
        left -= n
    return plan


def sigma(q01: np.ndarray, max_visits: int, c_visit: float, c_scale: float) -> np.ndarray:
    return (c_visit + max_visits) * c_scale * q01


def completed_q(q: np.ndarray, visits: np.ndarray, prior: np.ndarray, root_value: float) -> np.ndarray:
    """Q in [-1, 1] for every action; unvisited ones get v_mix."""
    visited = visits > 0
    n_sum = float(visits.sum())
    if n_sum > 0 and prior[visited].sum() > 0:
        weighted = float((prior[visited] * q[visited]).sum() / prior[visited].sum())
        v_mix = (root_value + n_sum * weighted) / (1.0 + n_sum)
    else:
        v_mix = root_value
    return np.where(visited, q, v_mix)


def improved_policy(
    logits: np.ndarray,
    q: np.ndarray,
    visits: np.ndarray,
    prior: np.ndarray,
    root_value: float,
    c_visit: float,
    c_scale: float,
) -> np.ndarray:
    """``softmax(logits + sigma(completed Q))``; zero where logits are -inf."""
    cq = completed_q(q, visits, prior, root_value)
    z = logits + sigma(winrate(cq), int(visits.max(initial=0)), c_visit, c_scale)
    finite = np.isfinite(z)
    out = np.zeros_like(z, dtype=np.float64)
    if finite.any():
        zz = z[finite] - z[finite].max()
        e = np.exp(zz)
        out[finite] = e / e.sum()
    return out


def score_actions(
    g: np.ndarray, logits: np.ndarray, q: np.ndarray, visits: np.ndarray, c_visit: float, c_scale: float
) -> np.ndarray:
    """``g + logits + sigma(q)`` used to rank considered actions."""
    return g + logits + sigma(winrate(q), int(visits.max(initial=0)), c_visit, c_scale)
