"""The search coroutine: one game's MCTS over the batching queue.

Vocabulary
----------
SearchConfig   PUCT, noise, Gumbel and tree-size settings (a dataclass; the
               TOML configs fill it).
Search         one game's searcher: a workspace, an edge pool and a node pool
               (see ``tree.py``) that the compiled rounds of ``puct.py`` work on
               (the workspace names the encoder for the leaves), and
               ``await search.run(game, playouts, ...)`` which returns a
               SearchResult. It keeps its tree between moves (``advance``).
playout        one descent to a leaf plus its backup; a leaf costs one network
               request (or a cache hit); the end of the game costs none.
round          up to ``leaves_per_await`` playouts whose leaves wait on the
               network together (see ``puct.py``).
SearchResult   per-action visits, Q and prior of the root, the policy target
               (visit distribution, or the Gumbel improved policy), the root
               value, the chosen action and whether it was a full search.
evaluator      anything with ``reserve()``, ``commit(count)`` (a future of the
               batch's NetOutput: a leaf's row is its slot), ``counters`` and
               optionally ``nn_cache`` (the Batcher; see its docstring).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..features import get_encoder
from ..go.game import Game
from ..infer.cache import NNCache
from . import gumbel as G
from . import tree
from .puct import descend_round, finish_round
from .root import (
    advance,
    ban_root_actions,
    child_index,
    choose_by_visits,
    mix_root_noise,
    principal_variation,
    root_actions,
    root_choices,
    root_stats,
    root_summary,
)
from .tree import (
    N_PARAMS,
    P_C_BASE,
    P_C_INIT,
    P_FPU_REDUCTION,
    P_FPU_ROOT,
    MAX_LEAVES,
    derived_node_capacity,
    new_edges,
    new_nodes,
    new_workspace,
    set_root,
    tree_reset,
)


DEFAULT_NODE_CAPACITY = 200_000


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
    # position a descent went into: one per playout at most).
    node_capacity: int = DEFAULT_NODE_CAPACITY  # edges (children) a game's tree may hold; 0: the caller sizes it
    search_nodes: int = 0  # edges one search may add: a kept tree is dropped when fewer are free; 0: half the pool
    node_records: int = 0  # node records a tree may hold; 0: node_capacity / 32, at least 256
    max_moves_factor: float = 2.0  # a game is scored after factor * N*N moves
    reuse_tree: bool = True
    leaves_per_await: int = 4  # playouts of one search waiting on the network together (virtual loss)
    random_symmetry: bool = False  # show each leaf to the network in a random one of the 8 symmetries

    def params(self) -> np.ndarray:
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_C_INIT] = self.c_init
        p[P_C_BASE] = self.c_base
        p[P_FPU_REDUCTION] = self.fpu_reduction
        p[P_FPU_ROOT] = self.fpu_root
        p[tree.P_RANDOM_SYMMETRY] = 1.0 if self.random_symmetry else 0.0
        return p


@dataclass
class SearchResult:
    action: int
    visits: np.ndarray  # [A] int32
    q: np.ndarray  # [A] float64, root player's view, 0 where unvisited
    prior: np.ndarray  # [A] float32
    policy: np.ndarray  # [A] float32 training target (sums to 1 over legal)
    value: float  # root value for the side to move, [-1, 1]
    playouts: int  # playouts spent by this call
    full_search: bool
    gumbel: bool


_NO_CACHE = NNCache(0, 1)  # no slots: the compiled search skips it


class Search:
    def __init__(self, config: SearchConfig, encoder: str, rng: np.random.Generator | None = None) -> None:
        self.cfg = config
        self.rng = rng or np.random.default_rng()
        self.ws = new_workspace()
        self.ws[0]["params"] = config.params()
        self.ws[0]["encoder"] = get_encoder(encoder).ident
        edge_capacity = config.node_capacity or DEFAULT_NODE_CAPACITY
        self.edges = new_edges(edge_capacity)
        self.nodes = new_nodes(config.node_records or derived_node_capacity(edge_capacity))
        # what the next search may add, edges and records: set_root keeps a
        # tree only when both are free; records in the same share of their pool
        self._edge_room = min(config.search_nodes or edge_capacity // 2, edge_capacity)
        self._node_room = -(-self._edge_room * self.nodes.shape[0] // edge_capacity)
        self._actions = np.zeros(tree.MAX_ACTIONS, dtype=np.int16)
        self._leaves = max(1, min(int(config.leaves_per_await), MAX_LEAVES))
        self._root_key: tuple | None = None
        self._root_ko = 0  # the root position's ko point (a board point; 0: none)
        self._restricted = False  # restrict_root banned root moves: sync drops the tree
        self._pv = np.zeros(64, dtype=np.int16)
        self._pv_visits = np.zeros(64, dtype=np.int32)
        self._pass: np.ndarray | None = None
        self._sym_n = 0  # board size of the workspace's symmetry maps
        tree_reset(self.ws, self.nodes)

    # ---- game synchronisation -------------------------------------------
    @staticmethod
    def _position_key(game: Game, hashes: np.ndarray, back: int = 0) -> tuple:
        """What identifies a position for tree reuse: move count, stones
        (hash), side to move, the start position (set-up and handicap
        stones), komi, size and rules; ``back = 1`` describes the position
        before the last move, whose side to move is the colour that played
        it. ``hashes``: ``game.history_hashes()``. (The ko point is compared
        apart: see ``sync``.)"""
        to_move = game.to_move if back == 0 else game.moves[-1][0]
        return (len(game.moves) - back, int(hashes[len(hashes) - 1 - back]), to_move, int(hashes[0]),
                game.komi, game.size, game.rules)

    def _is_root_child(self, game: Game, hashes: np.ndarray) -> bool:
        """Whether ``game``'s position is the tree root's child for the last
        move: the position before it is the root's, with the colour that
        played on turn there, and the other colour is on turn now, as at that
        child. (GTP may ask for the colour that just played, ``genmove w``
        twice: that position has the child's stones but not its side to move,
        and the child's subtree holds the other side's moves.)"""
        if not game.moves:
            return False
        mover = game.moves[-1][0]
        return game.to_move == 3 - mover and self._position_key(game, hashes, 1) == self._root_key

    def sync(self, game: Game) -> None:
        """Point the workspace at ``game``'s current position. The tree is
        kept when it is this position's (same stones, side to move, ko
        point, komi and move count), advanced when the game went on by one
        move from it and the other colour is on turn (``_is_root_child``),
        and dropped otherwise (undo, a new game, set-up stones, other rules,
        the same colour asked to move again) or after ``restrict_root`` (its
        bans belong to one search). Self-play calls this every move: the
        work is one compiled call (``set_root``)."""
        hashes = game.history_hashes()
        key = self._position_key(game, hashes)
        ko = int(game.rec["ko"])
        reused = False
        if self._restricted:
            self._restricted = False
            self._root_key = None
        if self.cfg.reuse_tree and self._root_key is not None:
            if key == self._root_key and ko == self._root_ko:
                reused = True
            elif self._is_root_child(game, hashes):
                reused = advance(self.ws, self.nodes, self.edges, game.moves[-1][1])
        n = game.size
        if n != self._sym_n:
            from ..symmetry import action_map

            w = self.ws[0]
            for k in range(8):
                w["sym_map"][k, : n * n + 1] = action_map(k, n)
            w["sym_n"] = self._sym_n = n
        set_root(self.ws, self.nodes, self.edges, game.arr, hashes, int(self.cfg.max_moves_factor * n * n), reused,
                 self._edge_room, self._node_room)
        self._root_key = key
        self._root_ko = ko

    def reset(self) -> None:
        tree_reset(self.ws, self.nodes)
        self._root_key = None
        self._restricted = False

    def restrict_root(self, actions: set[int]) -> bool:
        """Never search the root moves in ``actions`` (analysis avoid/allow);
        refused (False) when that would leave no open move. Lasts for this
        search: the next ``sync`` starts a fresh tree."""
        banned = np.fromiter(actions, dtype=np.int64, count=len(actions))
        if not ban_root_actions(self.ws, self.nodes, self.edges, banned):
            return False
        self._restricted = True
        return True

    # ---- playouts ------------------------------------------------------
    async def playout(self, ev, forced: int = -1) -> int:
        """One descent + evaluation + backup."""
        return await self.playouts(ev, 1, forced)

    async def playouts(self, ev, count: int, forced: int = -1) -> int:
        """``count`` playouts (all through root child ``forced`` when >= 0),
        in rounds of up to ``leaves_per_await`` descents whose leaves wait on
        the network together (one commit, one await, one compiled call each
        way). This loop is the Python side of the hot path: keep it lean."""
        ws, nodes, edges = self.ws, self.nodes, self.edges
        reserve, commit = ev.reserve, ev.commit
        cache = getattr(ev, "nn_cache", None)
        if cache is None:
            cache = _NO_CACHE
        c_keys, c_policy, c_wdl, c_score = cache.keys, cache.policy, cache.wdl, cache.score
        use_cache = c_keys.shape[0] > 0
        k_max = self._leaves
        done = requests = hits_total = 0
        try:
            while done < count:
                planes, slot, room = reserve()
                want = min(k_max, count - done, room)
                leaves, completed, hits = descend_round(ws, nodes, edges, planes, slot, want, forced,
                                                        c_keys, c_policy, c_wdl)
                done += completed
                requests += leaves + hits
                hits_total += hits
                if not leaves:
                    if not completed:
                        break  # nothing to descend into (every move pruned)
                    continue
                out = await commit(leaves)
                finish_round(ws, nodes, edges, leaves, out.policy, out.wdl, out.score, slot,
                             c_keys, c_policy, c_wdl, c_score)
                done += leaves
        finally:
            # the live figures need no finer grain than a call: count once
            counters = ev.counters
            counters.playouts += done
            counters.requests += requests
            if use_cache:
                counters.cache_lookups += requests
                counters.cache_hits += hits_total
        return done

    def root_node(self) -> int:
        return int(self.ws[0]["root_node"])

    def root_children(self) -> int:
        """Children of the root (0: not expanded yet)."""
        return int(root_summary(self.ws, self.nodes)[0])

    def root_actions(self) -> np.ndarray:
        """The actions of the root's children (int64)."""
        k = root_actions(self.ws, self.nodes, self.edges, self._actions)
        return self._actions[:k].astype(np.int64)

    def pool_full(self, n: int) -> bool:
        """Whether the tree can no longer grow on an N x N board: less than
        one expansion's edges or no node record is free."""
        w = self.ws[0]
        return (int(w["edges_used"]) + n * n + 1 > self.edges.shape[0]
                or int(w["nodes_used"]) >= self.nodes.shape[0])

    def pool_bytes(self) -> int:
        """Memory of the tree pools (edges and node records)."""
        return self.edges.nbytes + self.nodes.nbytes

    def root_visits(self) -> int:
        return int(root_summary(self.ws, self.nodes)[1])

    def root_value(self) -> float:
        """The root's value for the side to move, [-1, 1] (0 unvisited)."""
        return float(root_summary(self.ws, self.nodes)[2])

    def add_dirichlet_noise(self) -> None:
        """Mix Dirichlet(alpha) noise into the open root children's priors,
        alpha = dirichlet_alpha_scale / their number (drawn as normalised
        Gamma(alpha) variates)."""
        k = root_choices(self.ws, self.nodes, self.edges)
        if k == 0:
            return
        gammas = self.rng.standard_gamma(self.cfg.dirichlet_alpha_scale / k, size=k)
        mix_root_noise(self.ws, self.nodes, self.edges, gammas, float(self.cfg.dirichlet_epsilon))

    def stats(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = n * n + 1
        visits = np.zeros(a, dtype=np.int32)
        q = np.zeros(a, dtype=np.float64)
        prior = np.zeros(a, dtype=np.float32)
        root_stats(self.ws, self.nodes, self.edges, visits, q, prior)
        return visits, q, prior

    def pv(self, action: int) -> list[int]:
        """Principal variation starting with root child ``action``."""
        return self.pv_line(action)[0]

    def pv_line(self, action: int) -> tuple[list[int], list[int]]:
        """The principal variation starting with root child ``action`` and
        the visits of the position each of its moves leads to (the first:
        the child's own visits; 0 for an unvisited child)."""
        i = child_index(self.ws, self.nodes, self.edges, action)
        if i < 0:
            return [action], [0]
        k = principal_variation(self.nodes, self.edges, i, self._pv, self._pv_visits)
        return ([action] + [int(x) for x in self._pv[:k]],
                [int(self.nodes[i]["visits"])] + [int(x) for x in self._pv_visits[:k]])

    # ---- whole searches --------------------------------------------------
    async def run(
        self,
        game: Game,
        ev,
        playouts: int,
        *,
        noise: bool = False,
        use_gumbel: bool = False,
        temperature: float = 0.0,
        full_search: bool = True,
        allow_pass: bool = True,
    ) -> SearchResult:
        """Search ``game``'s position with ``playouts`` new playouts and pick a
        move. PUCT picks by visits (sampled with ``temperature`` > 0); Gumbel
        picks the sequential-halving winner (or, should that be a superko
        move no playout visited, the most visited legal one): the move is
        always legal. ``allow_pass=False`` keeps pass
        out of the root's choices (self-play's opening), unless it is the
        only legal move."""
        self.sync(game)
        n = game.size
        spent = 0
        if self.root_children() == 0:
            await self.playout(ev)
            spent += 1
        if not allow_pass:
            ban_root_actions(self.ws, self.nodes, self.edges, self._pass_action(n))
        if use_gumbel:
            spent += await self._gumbel(ev, playouts - spent, n)
        else:
            if noise:
                self.add_dirichlet_noise()
            await self.playouts(ev, playouts - spent)
            spent = max(spent, playouts)
        visits, q, prior = self.stats(n)
        policy = np.empty(visits.shape[0], dtype=np.float32)
        # restricted root moves keep visits from a reused tree: they lose them here
        action = choose_by_visits(visits, prior, temperature, self.rng.random(), policy)
        if use_gumbel:
            action, gumbel_policy = self._gumbel_result
            policy = gumbel_policy.astype(np.float32)
            if not game.is_legal(int(action)):  # an unvisited superko move: the best legal one
                legal = game.legal_actions().astype(bool)
                action = int(np.argmax(np.where(legal, visits + prior, -1.0)))
        return SearchResult(int(action), visits, q, prior, policy, self.root_value(), spent, full_search, use_gumbel)

    def _pass_action(self, n: int) -> np.ndarray:
        """``[pass]`` as the int64 array ``ban_root_actions`` takes (kept)."""
        if self._pass is None or self._pass[0] != n * n:
            self._pass = np.array([n * n], dtype=np.int64)
        return self._pass

    async def _gumbel(self, ev, budget: int, n: int) -> int:
        """Sequential halving at the root; spends exactly ``budget`` playouts
        (fewer only if every considered move runs out). Sets
        ``self._gumbel_result`` to (action, improved policy)."""
        cfg = self.cfg
        r = self.nodes[self.root_node()]
        first, k = int(r["first"]), int(r["nchild"])
        a_count = n * n + 1
        logits = np.full(a_count, -np.inf)
        child_of = np.full(a_count, -1, dtype=np.int64)  # [A] root edge of each action
        kids = self.edges[first : first + k]
        ok = kids["prior"] > 0
        acts = kids["action"].astype(np.int64)
        logits[acts[ok]] = np.log(kids["prior"][ok])
        child_of[acts] = np.arange(first, first + k)
        # forced visits: no prefix order at the root (its edges stay where they are)
        self.nodes[self.root_node()]["ordered"] = -1
        g = self.rng.gumbel(size=a_count)
        legal = np.isfinite(logits)
        m = min(cfg.gumbel_considered_moves, int(legal.sum()))
        spent = 0
        if m == 0:
            self._gumbel_result = (n * n, np.eye(a_count, dtype=np.float64)[n * n])
            return 0
        order = np.argsort(-(np.where(legal, g + logits, -np.inf)))
        cand = order[:m]
        sizes = G.phase_sizes(m)
        phases = len(sizes)
        for pi, size in enumerate(sizes):
            if budget - spent <= 0:
                break
            if pi > 0:
                visits, q, _ = self.stats(n)
                score = G.score_actions(g, logits, q, visits, cfg.gumbel_c_visit, cfg.gumbel_c_scale)
                cand = cand[np.argsort(-score[cand], kind="stable")][:size]
            if pi == phases - 1:
                per_total = budget - spent
            else:
                per_total = min(max(1, budget // (phases * size)) * size, budget - spent)
            for j in range(per_total):
                await self.playouts(ev, 1, int(child_of[cand[j % len(cand)]]))
                spent += 1
        visits, q, prior = self.stats(n)
        score = G.score_actions(g, logits, q, visits, cfg.gumbel_c_visit, cfg.gumbel_c_scale)
        best = int(cand[np.argmax(score[cand])])
        policy = G.improved_policy(logits, q, visits, prior, self.root_value(), cfg.gumbel_c_visit, cfg.gumbel_c_scale)
        self._gumbel_result = (best, policy)
        return spent
