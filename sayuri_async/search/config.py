"""The search's settings: ``SearchConfig``, the ``[search]`` table of every
config (self-play, loop, GTP, match, rate), range-checked on construction.

Vocabulary
----------
PUCT          ``c_init`` and ``c_base`` (the exploration weight grows with
              the parent's visits), ``fpu_reduction`` / ``fpu_root`` (the
              value an unvisited child starts from, below its parent's).
noise         Dirichlet noise at the root of self-play searches:
              ``dirichlet_epsilon`` of the prior, alpha ``dirichlet_alpha_scale``
              over the legal moves.
Gumbel        ``gumbel_considered_moves`` root moves sampled, then halved;
              ``gumbel_c_visit`` and ``gumbel_c_scale`` weigh the completed Q.
tree size     ``edge_capacity`` edges, ``node_records`` records and
              ``search_edges`` room for fixed pools, or a memory budget
              ``tree_memory_mb`` the pools grow up to (``pools.py`` sizes
              them); ``edges_per_expansion`` edges written per expanded
              position (``tree.expand``).
params        the numbers the compiled descent reads (``tree.P_*``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..configfile import at_least, between, require, within
from .pools import DEFAULT_EDGE_CAPACITY
from .tree import (MAX_ACTIONS, MAX_LEAVES, N_PARAMS, P_C_BASE, P_C_INIT, P_EDGES_PER_EXPANSION, P_FPU_REDUCTION,
                   P_FPU_ROOT, P_RANDOM_SYMMETRY)

MAX_POOL_ENTRIES = 1 << 30  # edges or node records of one tree (12 GB of edges)
MAX_TREE_MEMORY_MB = 1 << 20  # a tree's memory budget (1 TiB: pools grow on demand up to it)


@dataclass
class SearchConfig:
    c_init: float = 1.25
    c_base: float = 19652.0
    fpu_reduction: float = 0.25
    fpu_root: float = 0.0  # root FPU reduction (0: unvisited root moves get the root's Q)
    dirichlet_epsilon: float = 0.25
    dirichlet_alpha_scale: float = 0.03 * 361  # alpha = scale / legal moves
    gumbel_considered_moves: int = 16
    gumbel_c_visit: float = 50.0
    gumbel_c_scale: float = 1.0
    # A tree is an edge pool (12 bytes per child of an expanded node, written
    # when the node's network answer arrives) and a node pool (24 bytes per
    # position a descent went into: one per playout at most); see pools.py.
    edge_capacity: int = DEFAULT_EDGE_CAPACITY  # edges a game's tree may hold; 0: the caller sizes it
    search_edges: int = 0  # edges one search may add: a kept tree is dropped when fewer are free; 0: half the pool
    node_records: int = 0  # node records a tree may hold; 0: edge_capacity / 32, at least 256
    tree_memory_mb: float = 0.0  # > 0: pools grow on demand up to this many MB, then prune (the three above unused)
    edges_per_expansion: int = 0  # edges a non-root position gets at first (more as it is searched); 0: all
    max_moves_factor: float = 2.0  # a game is scored after factor * N*N moves
    reuse_tree: bool = True
    leaves_per_await: int = 4  # playouts of one search waiting on the network together (virtual loss)
    random_symmetry: bool = False  # show each leaf to the network in a random one of the 8 symmetries

    # keys of older configs: refused by name, never read with another meaning
    RENAMED_KEYS: ClassVar[dict[str, str]] = {"node_capacity": "edge_capacity", "search_nodes": "search_edges"}

    def __post_init__(self) -> None:
        at_least(self, 0, "edge_capacity", "search_edges", "node_records", "tree_memory_mb", "edges_per_expansion")
        if self.tree_memory_mb:
            at_least(self, 1, "tree_memory_mb")
        # upper bounds: no setting asks for unbounded memory (pools of 12 and 24 bytes an entry, per game)
        between(self, 0, MAX_POOL_ENTRIES, "edge_capacity", "search_edges", "node_records")
        between(self, 0, MAX_TREE_MEMORY_MB, "tree_memory_mb")
        within(self, f"[0, {MAX_ACTIONS}]", "edges_per_expansion")
        within(self, f"[1, {MAX_ACTIONS}]", "gumbel_considered_moves")
        between(self, 0, 100, "c_init")
        within(self, "(0, 1e12]", "c_base")
        between(self, -10, 10, "fpu_reduction", "fpu_root")
        between(self, 0, 1, "dirichlet_epsilon")
        within(self, "(0, 1e6]", "dirichlet_alpha_scale")
        within(self, "[0, 1e6]", "gumbel_c_visit", "gumbel_c_scale")
        within(self, "(0, 10]", "max_moves_factor")
        at_least(self, 1, "leaves_per_await")
        require(self.leaves_per_await <= MAX_LEAVES, "leaves_per_await",
                f"must be at most {MAX_LEAVES}, not {self.leaves_per_await}")

    def params(self) -> np.ndarray:
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_C_INIT] = self.c_init
        p[P_C_BASE] = self.c_base
        p[P_FPU_REDUCTION] = self.fpu_reduction
        p[P_FPU_ROOT] = self.fpu_root
        p[P_RANDOM_SYMMETRY] = 1.0 if self.random_symmetry else 0.0
        p[P_EDGES_PER_EXPANSION] = self.edges_per_expansion
        return p
