"""Test helpers: an evaluator that answers at once from a value function of
the encoded planes (simple-v1: plane 0 own stones, plane 1 opponent stones),
and the tree's invariants (``check_tree``)."""
from __future__ import annotations

import asyncio

import numpy as np

from sayuri_async.infer.batcher import run_preparations
from sayuri_async.infer.stats import Counters
from sayuri_async.net.backends import NetOutput


class InstantEvaluator:
    """A ``search.evaluator.Evaluator`` without an NN cache."""

    nn_cache = None

    def __init__(self, n: int, planes: int = 25, value_fn=None, policy_fn=None) -> None:
        self.n = n
        self.buf = np.zeros((16, planes, n, n), dtype=np.uint8)
        self.counters = Counters()
        self.value_fn = value_fn or (lambda p: 0.0)
        self.policy_fn = policy_fn
        self.requests = 0

    def reserve(self):
        return self.buf, 0, self.buf.shape[0]

    def commit(self, count: int = 1, final: bool = True, prepare=None):
        """Write slots ``0 .. count - 1`` (``prepare``) and answer them at once."""
        if prepare is not None:
            run_preparations([prepare], self.buf)
        self.requests += count
        a = self.n * self.n + 1
        pol = np.empty((count, a), dtype=np.float32)
        wdl = np.empty((count, 3), dtype=np.float32)
        for i in range(count):
            planes = self.buf[i]
            v = float(np.clip(self.value_fn(planes), -1.0, 1.0))
            pol[i] = 1.0 / a if self.policy_fn is None else self.policy_fn(planes)
            wdl[i] = ((1 + v) / 2, 0.0, (1 - v) / 2)
        out = NetOutput(pol, wdl, np.zeros(count, np.float32), np.zeros((count, self.n * self.n), np.float32))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(out)
        return fut


def material(planes) -> float:
    """Own stones minus opponent stones, squashed: a trivial value function."""
    return float(np.tanh((int(planes[0].sum()) - int(planes[1].sum())) / 3.0))


def check_tree(s) -> int:
    """The invariants of the tree the root reaches: every record but the
    root is the child of exactly one edge and has a visit; a node's visits
    are its children's plus its own evaluations (at least its children's);
    visited children come first among a node's open edges unless the node
    is unordered; a partly expanded node's tail edge (action -1) is its last
    edge, unvisited, and no prior of an open unvisited edge is below it. Returns the number
    of edges that have a record."""
    w = s.ws[0]
    nodes, edges = s.nodes[: int(w["nodes_used"])], s.edges[: int(w["edges_used"])]
    root = int(w["root_node"])
    owners = np.zeros(nodes.shape[0], dtype=np.int64)
    with_record = 0
    stack = [root]
    while stack:
        nd = nodes[stack.pop()]
        first, k = int(nd["first"]), int(nd["nchild"])
        if k == 0:
            continue
        kids = edges[first : first + k]
        child = kids["child"]
        visited = child >= 0
        with_record += int(visited.sum())
        owners[child[visited]] += 1
        stack.extend(int(c) for c in child[visited])
        assert (nodes["visits"][child[visited]] > 0).all()
        assert int(nodes["visits"][child[visited]].sum()) <= int(nd["visits"])
        if int(nd["ordered"]) >= 0:
            considered = visited | (kids["prior"] >= 0)  # superko or banned edges may sit anywhere
            seq = visited[considered]
            assert not (seq[1:] & ~seq[:-1]).any(), "a visited edge after an unvisited one"
        tails = kids["action"] == -1
        assert not tails[:-1].any() and not (tails & visited).any()
        if tails[-1]:
            open_unvisited = kids["prior"][:-1][~visited[:-1] & (kids["prior"][:-1] >= 0)]
            assert (open_unvisited >= kids["prior"][-1]).all()
    assert owners[root] == 0 and (owners <= 1).all()
    return with_record
