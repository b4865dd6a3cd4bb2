"""The root's children: statistics, the move choice, restrictions, noise,
tree reuse and the principal variation.

Vocabulary
----------
root        ``ws.root_node``: the node record of the searched position; its
            children are its edges ``first .. first + nchild`` (see
            ``tree.py``), in no fixed order (selection reorders them).
open child  a root edge with prior >= 0: not restricted by the caller
            (``ban_root_actions``), not found to repeat a position (superko).
complete    a root with an edge for every legal move. A root kept from a
            child may still end with a tail edge (``tree.py``, "partial"):
            the next descent completes it, and these functions skip it.
``[A]``     arrays over actions (points, pass last) that the root's
            children are reported into; actions without a child read 0.
barred      a root move into the opponent's safe area (``encoders/benson.py``:
            its pass-alive strings' vital regions and the regions where the
            mover cannot make two eyes): no stone can live there. The root's
            first expansion leaves them out, as it leaves out the mover's
            own idle points (``encoders.leaf.encode_leaf``); ``close_barred_root_edges``
            closes them in a root kept from a child, whose edges were written
            below an earlier root (with ``sayuri-v3`` they are left out there
            too; with ``simple-v1`` they are not).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..encoders.benson import opponent_safe_points
from .tree import TAIL, close_root_edges_at, tree_reset


@njit(cache=True)
def root_stats(ws, nodes, edges, visits, q, prior) -> None:
    """Write per-action visits, Q (root player's view; 0 unvisited) and prior
    of the root's children into ``[A]`` arrays; actions without a child get
    visits 0 and prior 0."""
    w = ws[0]
    root = nodes[w.root_node]
    for a in range(visits.shape[0]):
        visits[a] = 0
        q[a] = 0.0
        prior[a] = 0.0
    for i in range(root.first, root.first + root.nchild):
        e = edges[i]
        a = e.action
        if a == TAIL:
            continue
        prior[a] = e.prior
        if e.child >= 0:
            c = nodes[e.child]
            visits[a] = c.visits
            if c.visits > 0:
                q[a] = c.wsum / c.visits


@njit(cache=True)
def root_summary(ws, nodes):
    """``(children, visits, value)`` of the root: its number of children, its
    visits and its value for the side to move in [-1, 1] (0 unvisited)."""
    w = ws[0]
    r = nodes[w.root_node]
    value = -r.wsum / r.visits if r.visits > 0 else 0.0
    return r.nchild, r.visits, value


@njit(cache=True)
def root_actions(ws, nodes, edges, out) -> int:
    """Write the actions of the root's children into ``out`` (``[A]``);
    returns how many."""
    w = ws[0]
    root = nodes[w.root_node]
    k = 0
    for j in range(root.nchild):
        a = edges[root.first + j].action
        if a != TAIL:
            out[k] = a
            k += 1
    return k


@njit(cache=True)
def root_complete(ws, nodes, edges) -> bool:
    """Whether the root is expanded with an edge for every legal move."""
    w = ws[0]
    root = nodes[w.root_node]
    return root.nchild > 0 and edges[root.first + root.nchild - 1].action != TAIL


@njit(cache=True)
def choose_by_visits(visits, prior, temperature: float, u: float, policy) -> int:
    """The move of a search from the root's ``[A]`` visits and priors:
    restricted root moves (prior < 0) lose their visits first (in place),
    ``policy`` gets the visit distribution (float32, zero when there is no
    visit), and the answer is the most visited action (ties broken by the
    uniform draw ``u`` in [0, 1)) or, with ``temperature`` > 0, an action
    drawn with weight visits^(1/temperature) by ``u``. No visit at all:
    pass (the last action)."""
    a_count = visits.shape[0]
    total = 0
    best = 0
    ties = 0
    for a in range(a_count):
        if prior[a] < 0.0:
            visits[a] = 0
        v = visits[a]
        total += v
        if v > best:
            best = v
            ties = 1
        elif v == best and v > 0:
            ties += 1
    inv = 1.0 / total if total > 0 else 0.0
    for a in range(a_count):
        policy[a] = visits[a] * inv
    if total == 0:
        return a_count - 1
    if temperature > 0.0:
        e = 1.0 / temperature
        weight = 0.0
        for a in range(a_count):
            if visits[a] > 0:
                weight += (visits[a] / best) ** e  # scaled by the largest: no overflow
        r = u * weight
        last = -1
        for a in range(a_count):
            if visits[a] > 0:
                last = a
                r -= (visits[a] / best) ** e
                if r < 0.0:
                    return a
        return last
    k = min(int(u * ties), ties - 1)
    for a in range(a_count):
        if visits[a] == best:
            if k == 0:
                return a
            k -= 1
    return a_count - 1


@njit(cache=True)
def ban_root_actions(ws, nodes, edges, actions) -> bool:
    """Give the root children for ``actions`` prior -1 (never searched, not
    a choice). Refused (False, nothing changed) when that would leave no
    open child."""
    w = ws[0]
    root = nodes[w.root_node]
    first = root.first
    end = first + root.nchild
    left = 0
    for i in range(first, end):
        if edges[i].prior < 0.0 or edges[i].action == TAIL:
            continue
        banned = False
        for j in range(actions.shape[0]):
            if edges[i].action == actions[j]:
                banned = True
                break
        if not banned:
            left += 1
    if left == 0:
        return False
    for i in range(first, end):
        for j in range(actions.shape[0]):
            if edges[i].action == actions[j]:
                edges[i].prior = -1.0
                break
    if root.ordered > 0:
        root.ordered = 0
    return True


@njit(cache=True)
def close_barred_root_edges(ws, nodes, edges) -> int:
    """Give the root's edges into the opponent's safe area (barred moves,
    module docstring) prior -1. Returns how many it closed."""
    w = ws[0]
    root = nodes[w.root_node]
    if root.nchild == 0:
        return 0
    rec = w.root
    nn = rec.n * rec.n
    barred = np.zeros(nn, np.uint8)
    if opponent_safe_points(rec, rec.to_move, barred) == 0:
        return 0
    return close_root_edges_at(nodes, edges, w.root_node, barred, nn)


@njit(cache=True)
def root_choices(ws, nodes, edges) -> int:
    """Root children still open to search (prior >= 0: not restricted, not
    found to repeat a position)."""
    w = ws[0]
    root = nodes[w.root_node]
    k = 0
    for i in range(root.first, root.first + root.nchild):
        if edges[i].prior >= 0.0 and edges[i].action != TAIL:
            k += 1
    return k


@njit(cache=True)
def mix_root_noise(ws, nodes, edges, gammas, eps: float) -> None:
    """Dirichlet noise at the root: ``gammas[j]`` ~ Gamma(alpha) for the j-th
    open root child (``root_choices`` of them), normalised into a Dirichlet
    draw and mixed in with weight ``eps``. The root's children are reordered
    lazily afterwards (their priors changed)."""
    w = ws[0]
    root = nodes[w.root_node]
    total = 0.0
    for j in range(gammas.shape[0]):
        total += gammas[j]
    if total <= 0.0:
        return  # every draw underflowed: no noise this time
    j = 0
    for i in range(root.first, root.first + root.nchild):
        e = edges[i]
        if e.prior >= 0.0 and e.action != TAIL and j < gammas.shape[0]:
            e.prior = (1.0 - eps) * e.prior + eps * gammas[j] / total
            j += 1
    if root.ordered > 0:
        root.ordered = 0


@njit(cache=True)
def advance(ws, nodes, edges, action: int) -> bool:
    """Make the root's child for ``action`` the new root (tree reuse).
    Returns False (and resets the tree) when that child is not expanded."""
    w = ws[0]
    c = child_index(ws, nodes, edges, action)
    if c >= 0 and nodes[c].nchild > 0:
        w.root_node = c
        return True
    tree_reset(ws, nodes)
    return False


@njit(cache=True)
def child_index(ws, nodes, edges, action: int) -> int:
    """Node record of the root's child for ``action``; -1 when there is no
    such child or it was never visited."""
    w = ws[0]
    root = nodes[w.root_node]
    for i in range(root.first, root.first + root.nchild):
        if edges[i].action == action:
            return edges[i].child
    return -1


@njit(cache=True)
def principal_variation(nodes, edges, start: int, out, visits) -> int:
    """Follow the most visited child from node ``start``; writes the actions
    into ``out`` and the visits of the child each one leads to into
    ``visits``, and returns how many."""
    k = 0
    node = start
    while k < out.shape[0]:
        nd = nodes[node]
        if nd.nchild == 0:
            break
        best = -1
        bv = 0
        for i in range(nd.first, nd.first + nd.nchild):
            c = edges[i].child
            if c >= 0 and nodes[c].visits > bv:
                bv = nodes[c].visits
                best = i
        if best < 0:
            break
        out[k] = edges[best].action
        visits[k] = bv
        k += 1
        node = edges[best].child
    return k
