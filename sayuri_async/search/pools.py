"""The tree's pools: how large they are, how they grow, and what is pruned
when they may grow no more. The one home of pool sizing.

Vocabulary
----------
edge pool    ``[edge capacity]`` records of ``tree.EDGE_DTYPE`` (EDGE_BYTES
             each): the children of expanded positions.
node pool    ``[node records]`` records of ``tree.NODE_DTYPE`` (NODE_BYTES
             each): the positions a descent went into.
fixed pools  ``tree_memory_mb = 0`` (self-play, matches): both pools keep the
             size ``size_pools`` gives them; a kept tree is dropped before a
             search when fewer than ``edge_room`` edges (or the same share of
             node records) are free, and a full pool ends the tree's growth
             (see ``tree.py``, "capacities").
budget       ``tree_memory_mb > 0`` (GTP): the pools start small and double
             on demand (``make_room``, before every round of a search) while
             the two together stay within the budget; a kept tree is never
             dropped for lack of room.
pruning      when the budget stops a pool from growing, the tree is copied
             into fresh pools of the same sizes keeping what the root can
             reach (the siblings of played moves and the blocks that
             ``tree.widen`` left behind are dropped) and, if that is still
             over half the budget, only the edges of positions with at least
             ``T`` visits (``T`` the smallest power of two that fits; the
             root always keeps its edges). A pruned position keeps its visits
             and value and is expanded again when a descent next reaches it,
             so the search goes on and its visits keep growing. The fresh
             pools are touched only where written: while copying, the memory
             in use is the old pools plus what is kept (at most half the
             budget).
root room    a round adds at most ``leaves_per_await`` node records and
             ``leaves_per_await x (N*N + 1)`` edges; ``make_room`` makes that
             much free before each round, so with a budget no expansion is
             ever refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .tree import EDGE_DTYPE, NODE_DTYPE

EDGE_BYTES = EDGE_DTYPE.itemsize  # 12
NODE_BYTES = NODE_DTYPE.itemsize  # 24
DEFAULT_EDGE_CAPACITY = 200_000  # edges of a fixed pool that no one sized
EDGES_PER_NODE_RECORD = 32  # a fixed node pool holds one record per this many edges
MIN_NODE_RECORDS = 256
SELFPLAY_MIN_EDGES = 20_000
START_EDGES = 1 << 18  # first size of pools under a budget (3 MB of edges, 0.75 MB of records)
START_NODE_RECORDS = 1 << 15
MB = 1 << 20
BUCKETS = 32  # visit counts grouped by floor(log2(visits))


@dataclass(frozen=True)
class PoolSizes:
    """A search's pools: their first sizes, the room a kept tree needs
    (fixed pools only; 0 with a budget) and the budget in bytes (0: fixed)."""

    edges: int
    node_records: int
    edge_room: int
    node_room: int
    budget_bytes: int


def size_pools(edge_capacity: int, search_edges: int, node_records: int, tree_memory_mb: float) -> PoolSizes:
    """The pools of one ``Search`` from its settings (``SearchConfig``):
    with a budget (``tree_memory_mb > 0``) small pools that grow up to it;
    else ``edge_capacity`` edges (DEFAULT_EDGE_CAPACITY when 0),
    ``node_records`` records (when 0: one per EDGES_PER_NODE_RECORD edges,
    at least MIN_NODE_RECORDS) and the room a kept tree needs:
    ``search_edges`` edges (0: half the pool) and the same share of the
    records."""
    if tree_memory_mb > 0:
        budget = int(tree_memory_mb * MB)
        edges = max(1024, min(START_EDGES, budget // 2 // EDGE_BYTES))
        nodes = max(MIN_NODE_RECORDS, min(START_NODE_RECORDS, budget // 4 // NODE_BYTES))
        return PoolSizes(edges, nodes, 0, 0, budget)
    edges = edge_capacity or DEFAULT_EDGE_CAPACITY
    nodes = node_records or max(edges // EDGES_PER_NODE_RECORD, MIN_NODE_RECORDS)
    edge_room = min(search_edges or edges // 2, edges)
    node_room = -(-edge_room * nodes // edges)
    return PoolSizes(edges, nodes, edge_room, node_room, 0)


def selfplay_edges(playouts: int, largest_board: int) -> tuple[int, int]:
    """``(edge_capacity, search_edges)`` of a self-play game's fixed pool: a
    search adds at most ``room = (playouts + 1) x (N*N + 1)`` edges on the
    largest board; the pool holds three times that (at least
    SELFPLAY_MIN_EDGES), so a search never runs out and a kept tree stays
    while it takes up to two thirds. The records (one per 32 edges) scale
    alike, and a search adds at most playouts + 1 of them, far less than
    ``room / 32`` from 7x7 up. Small pools stay in the CPU caches; 64 games
    of 200,000 edges would touch about 160 MB."""
    room = (playouts + 1) * (largest_board * largest_board + 1)
    return max(3 * room, SELFPLAY_MIN_EDGES), room


def match_edges(playouts: int) -> int:
    """The fixed edge pool of a match game's search (``rating/match.py``): 400 edges
    per playout (an expansion on 19x19 is 362), at least 50,000; the tree
    is dropped before a search that might not fit (half the pool)."""
    return max(50_000, playouts * 400)


def _grown(capacity: int, needed: int, item_bytes: int, free_bytes: int) -> int:
    """The new size of a pool of ``capacity`` that needs ``needed`` items:
    double (or ``needed`` if more) within ``free_bytes`` more; ``capacity``
    when not even ``needed`` fits."""
    want = max(2 * capacity, needed)
    most = capacity + free_bytes // item_bytes
    size = min(want, most)
    return size if size >= needed else capacity


def _grow_pool(pool: np.ndarray, used: int, needed: int, free_bytes: int) -> np.ndarray:
    """``pool`` with its first ``used`` items, in an array grown by
    ``_grown`` to hold ``needed`` (the same array when it holds them or
    cannot grow)."""
    cap = pool.shape[0]
    if needed <= cap:
        return pool
    size = _grown(cap, needed, pool.dtype.itemsize, free_bytes)
    if size == cap:
        return pool
    grown = np.zeros(size, dtype=pool.dtype)
    grown[:used] = pool[:used]
    return grown


@njit(cache=True)
def visit_histogram(ws, nodes, edges, hist_edges, hist_records) -> None:
    """For the positions the root reaches, by ``b = floor(log2(visits))``:
    ``hist_edges[b]`` their edges and ``hist_records[b]`` their children's
    records (what pruning at ``T <= 2**b`` keeps)."""
    w = ws[0]
    stack = np.empty(w.nodes_used, dtype=np.int32)
    stack[0] = w.root_node
    top = 1
    while top > 0:
        top -= 1
        nd = nodes[stack[top]]
        v = max(nd.visits, 1)
        b = 0
        while v > 1:
            v >>= 1
            b += 1
        hist_edges[b] += nd.nchild
        for i in range(nd.first, nd.first + nd.nchild):
            c = edges[i].child
            if c >= 0:
                hist_records[b] += 1
                stack[top] = c
                top += 1


@njit(cache=True)
def compact(ws, nodes, edges, out_nodes, out_edges, min_visits: int) -> None:
    """Copy the tree the root reaches into ``out_nodes`` / ``out_edges``,
    breadth first from the root (record 0); positions with fewer than
    ``min_visits`` visits keep their record (visits, value) but not their
    edges, so their subtrees go. The root keeps its edges. Call between
    rounds (no leaf waiting on the network)."""
    w = ws[0]
    old_of = np.empty(w.nodes_used, dtype=np.int32)
    old_of[0] = w.root_node
    n_out = 1
    e_out = 0
    head = 0
    while head < n_out:
        src = nodes[old_of[head]]
        dst = out_nodes[head]
        dst.visits = src.visits
        dst.wsum = src.wsum
        dst.state = 0
        if src.nchild > 0 and (head == 0 or src.visits >= min_visits):
            dst.first = e_out
            dst.nchild = src.nchild
            dst.ordered = src.ordered
            for j in range(src.nchild):
                e = edges[src.first + j]
                d = out_edges[e_out + j]
                d.action = e.action
                d.prior = e.prior
                if e.child >= 0:
                    d.child = n_out
                    old_of[n_out] = e.child
                    n_out += 1
                else:
                    d.child = -1
            e_out += src.nchild
        else:
            dst.first = -1
            dst.nchild = 0
            dst.ordered = 0
        head += 1
    w.root_node = 0
    w.nodes_used = n_out
    w.edges_used = e_out


def prune_threshold(ws, nodes, edges, edge_target: int, record_target: int) -> int:
    """The smallest power-of-two ``T`` whose pruning keeps at most
    ``edge_target`` edges and ``record_target`` records (1: keep everything
    reachable); ``2**BUCKETS`` (only the root keeps its edges) when none
    does."""
    hist_e = np.zeros(BUCKETS, dtype=np.int64)
    hist_n = np.zeros(BUCKETS, dtype=np.int64)
    visit_histogram(ws, nodes, edges, hist_e, hist_n)
    kept_e = np.cumsum(hist_e[::-1])[::-1]  # kept_e[t]: edges of positions with visits >= 2**t
    kept_n = np.cumsum(hist_n[::-1])[::-1] + 1
    for t in range(BUCKETS):
        if kept_e[t] <= edge_target and kept_n[t] <= record_target:
            return 1 << t
    return 1 << BUCKETS


def make_room(ws, nodes: np.ndarray, edges: np.ndarray, need_edges: int, need_records: int,
              budget_bytes: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Pools with ``need_edges`` edges and ``need_records`` records free:
    the same arrays when they have them, else grown (doubled, within
    ``budget_bytes`` for both pools together), else pruned (see the module
    docstring). Returns ``(nodes, edges, pruned)``; indices into the old
    arrays stay valid after growth, not after pruning (the root becomes
    record 0)."""
    w = ws[0]
    e_used, n_used = int(w["edges_used"]), int(w["nodes_used"])
    e_cap, n_cap = edges.shape[0], nodes.shape[0]
    if e_used + need_edges <= e_cap and n_used + need_records <= n_cap:
        return nodes, edges, False
    edges = _grow_pool(edges, e_used, e_used + need_edges, budget_bytes - edges.nbytes - nodes.nbytes)
    nodes = _grow_pool(nodes, n_used, n_used + need_records, budget_bytes - edges.nbytes - nodes.nbytes)
    e_cap, n_cap = edges.shape[0], nodes.shape[0]
    if e_used + need_edges <= e_cap and n_used + need_records <= n_cap:
        return nodes, edges, False
    # the budget is reached: keep at most half of each pool
    t = prune_threshold(ws, nodes, edges, e_cap // 2 - need_edges, n_cap // 2 - need_records)
    out_nodes = np.zeros(n_cap, dtype=NODE_DTYPE)
    out_edges = np.zeros(e_cap, dtype=EDGE_DTYPE)
    compact(ws, nodes, edges, out_nodes, out_edges, t)
    return out_nodes, out_edges, True
