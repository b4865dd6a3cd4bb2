"""GTP's search tree under a memory budget that holds at every moment.

Vocabulary
----------
budget      ``[search] tree_memory_mb`` (B bytes). Between rounds the pools
            (edges and node records, ``search/pools.py``) hold at most B,
            counting each record at 10/9 of its size (FOOTPRINT): the share
            of the pruning's scratch set aside. While they grow or are
            pruned, the tree holds at most 1.5 x B: the bound is on what is
            allocated, so it holds for what is touched too.
growth      a pool that lacks room for the next round doubles (or grows to
            what the round needs, if more), only when the doubled pools fit
            the budget: the old pool, the new one (its copied part and the
            rest) and the other pool then stay within 1.5 x B.
pruning     when doubling would not fit: the tree the root reaches is copied
            into pools of half the size, keeping the edges of the positions
            with at least T visits (``pools.prune_threshold``: T the smallest
            power of two that fits half the pools less one round's room;
            ``pools.compact``). Old pools (at most B) plus the new halves
            (at most B / 2) plus ``compact``'s scratch (4 bytes a record in
            use, within the records' 10/9) stay within 1.5 x B. The visits
            and values of pruned positions stay; they are expanded again
            when a descent reaches them, and the halves grow back by
            doubling.
BoundedSearch  ``search.mcts.Search`` with this ``make_room``.

``pools.make_room`` (the search's own rule) keeps full-size pools when it
prunes and may grow one pool and then prune in the same call, holding the
old, the grown and the pruned pools at once: up to about twice the budget.
"""
from __future__ import annotations

import numpy as np

from sayuri_async.search.mcts import Search
from sayuri_async.search.pools import EDGE_BYTES, NODE_BYTES, compact, prune_threshold
from sayuri_async.search.tree import EDGE_DTYPE, NODE_DTYPE

PEAK_FACTOR = 1.5  # the most the tree holds, in budgets, while it grows or is pruned
COMPACT_SCRATCH = 4  # bytes per record in use that pruning's ``compact`` allocates (an int32 map)


def footprint(edges: int, records: int) -> int:
    """Bytes that pools of ``edges`` edges and ``records`` records count
    against the budget: each record at 10/9 of its size, so that pruning's
    scratch (COMPACT_SCRATCH bytes a record, held beside 1.5 x the pools)
    stays within PEAK_FACTOR x the budget."""
    return edges * EDGE_BYTES + records * NODE_BYTES * 10 // 9


def _wanted(capacity: int, needed: int) -> int:
    """A pool's size for ``needed`` items: unchanged when they fit, else
    doubled (or ``needed``, if more)."""
    return capacity if needed <= capacity else max(2 * capacity, needed)


def _resized(pool: np.ndarray, used: int, size: int) -> np.ndarray:
    """``pool`` with its first ``used`` items in an array of ``size``."""
    if size == pool.shape[0]:
        return pool
    out = np.zeros(size, dtype=pool.dtype)
    out[:used] = pool[:used]
    return out


def bounded_make_room(ws, nodes: np.ndarray, edges: np.ndarray, need_edges: int, need_records: int,
                      budget_bytes: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Pools with ``need_edges`` edges and ``need_records`` records free,
    grown or pruned within the budget (module docstring). Returns
    ``(nodes, edges, pruned)``; after pruning the root is record 0."""
    w = ws[0]
    e_used, n_used = int(w["edges_used"]), int(w["nodes_used"])
    e_size = _wanted(edges.shape[0], e_used + need_edges)
    n_size = _wanted(nodes.shape[0], n_used + need_records)
    if e_size == edges.shape[0] and n_size == nodes.shape[0]:
        return nodes, edges, False
    if footprint(e_size, n_size) <= budget_bytes:
        return _resized(nodes, n_used, n_size), _resized(edges, e_used, e_size), False
    e_half, n_half = edges.shape[0] // 2, nodes.shape[0] // 2
    t = prune_threshold(ws, nodes, edges, e_half - need_edges, n_half - need_records)
    out_nodes = np.zeros(n_half, dtype=NODE_DTYPE)
    out_edges = np.zeros(e_half, dtype=EDGE_DTYPE)
    compact(ws, nodes, edges, out_nodes, out_edges, t)
    return out_nodes, out_edges, True


class BoundedSearch(Search):
    """The search with GTP's memory rule (module docstring)."""

    def make_room(self) -> None:
        self.nodes, self.edges, pruned = bounded_make_room(self.ws, self.nodes, self.edges, self._round_edges,
                                                           self._leaves, self.budget_bytes)
        self.prunes += pruned
