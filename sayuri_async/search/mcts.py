"""The search coroutine: one game's MCTS over the batching queue.

Vocabulary
----------
SearchConfig   PUCT, noise, Gumbel and tree-size settings (``config.py``;
               the TOML configs fill it).
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
evaluator      where the leaves go: ``evaluator.Evaluator`` (the Batcher).
the API        what self-play, match and GTP call: ``sync`` (point at a
               position, keeping the tree when it may), ``expand_root``,
               ``restrict_root``, ``run`` (a whole search and its move: self-
               play and match), ``think`` (playouts until a count, a deadline
               or a stop request, with reports: GTP), ``best_move`` (the move
               after ``think``), and the read-outs ``stats``, ``pv_line``,
               ``root_visits``, ``root_value``, ``child_score_lead``.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from ..encoders import get_encoder
from ..go import board as B
from ..go.game import Game
from ..infer.cache import NNCache, cache_key
from . import gumbel as G
from . import tree
from .config import SearchConfig
from .evaluator import Evaluator
from .pools import make_room, size_pools
from .puct import descend_round, encode_rounds, finish_round
from .root import (
    advance,
    ban_root_actions,
    child_index,
    choose_by_visits,
    close_barred_root_edges,
    mix_root_noise,
    principal_variation,
    root_actions,
    root_choices,
    root_complete,
    root_stats,
    root_summary,
)
from .tree import new_edges, new_leaf_boards, new_nodes, new_workspace, set_root, tree_reset


MAX_ADVANCE = 16  # moves ``sync`` follows down a kept tree (analysis after a few plays)
THINK_CHUNK_SECONDS = 0.005  # ``think``: playouts run between checks of the clock and the stop request
THINK_MAX_CHUNK = 64


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
NO_FORCED = np.empty(0, dtype=np.int64)  # [0]: every playout's root child is chosen by selection


def encode_leaf_rounds(rounds: list[tuple], planes: np.ndarray) -> None:
    """An evaluator's preparation of a batch's rows (``evaluator.py``):
    encode the waiting leaves of the searches' ``rounds`` (``(workspace
    address, leaf boards' address, scratch address, slot, leaves,
    workspace, leaf boards, scratch)`` each, as ``Search.playouts`` commits
    them) into ``planes``, in one compiled call that releases the GIL
    (``puct.encode_rounds``). The compiled call reads memory at the
    addresses unchecked, so a round whose leaves overrun its leaf boards,
    whose rows overrun ``planes``, or whose scratch is not laid out as the
    first round's, raises ValueError first."""
    rows = planes.shape[0]
    first = rounds[0]
    for _, _, _, slot, leaves, _, boards, scratch in rounds:
        if leaves > boards.shape[0] or not 0 <= slot <= rows - leaves:
            raise ValueError(f"a search round of {leaves} leaves at row {slot} does not fit its "
                             f"{boards.shape[0]} leaf boards and the batch's {rows} rows")
        if scratch.shape != first[7].shape or scratch.dtype != first[7].dtype:
            raise ValueError("a batch's search rounds do not share one encoder's scratch layout")
    jobs = np.array([r[:5] for r in rounds], dtype=np.int64)  # [R, 5]
    encode_rounds(first[5], first[6][:1], first[7], jobs, planes)


class Search:
    def __init__(self, config: SearchConfig, encoder: str, rng: np.random.Generator | None = None) -> None:
        self.cfg = config
        self.rng = rng or np.random.default_rng()
        self._encoder = get_encoder(encoder)
        self._leaves = int(config.leaves_per_await)
        self._set_workspace(*self._new_workspace())
        sizes = size_pools(config.edge_capacity, config.search_edges, config.node_records, config.tree_memory_mb)
        self.edges = new_edges(sizes.edges)
        self.nodes = new_nodes(sizes.node_records)
        # what the next search may add, edges and records: set_root keeps a
        # tree only when both are free (fixed pools; a budget makes room instead)
        self._edge_room, self._node_room = sizes.edge_room, sizes.node_room
        self.budget_bytes = sizes.budget_bytes
        self.prunes = 0  # times the budget made the pools drop subtrees
        self._actions = np.zeros(tree.MAX_ACTIONS, dtype=np.int16)
        self._root_key: tuple | None = None
        self._root_ko = 0  # the root position's ko point (a board point; 0: none)
        self._restricted = False  # restrict_root banned root moves: sync drops the tree
        self._pv = np.zeros(64, dtype=np.int16)
        self._pv_visits = np.zeros(64, dtype=np.int32)
        self._pass: np.ndarray | None = None
        self._sym_n = 0  # board size of the workspace's symmetry maps
        self._round_edges = self._leaves * tree.MAX_ACTIONS  # edges one round may add (set by sync)
        tree_reset(self.ws, self.nodes)

    # ---- game synchronisation -------------------------------------------
    @staticmethod
    def _position_key(game: Game, hashes: np.ndarray, back: int = 0) -> tuple:
        """What identifies a position for tree reuse: move count, stones
        (hash), side to move, the start position (set-up and handicap
        stones), komi, size and rules; ``back = k`` describes the position
        ``k`` moves ago, whose side to move is the colour that played the
        move from it. ``hashes``: ``game.history_hashes()``. (The ko point is
        compared apart: see ``sync``.)"""
        to_move = game.to_move if back == 0 else game.moves[-back][0]
        return (len(game.moves) - back, int(hashes[len(hashes) - 1 - back]), to_move, int(hashes[0]),
                game.komi, game.size, game.rules)

    def _moves_from_root(self, game: Game, hashes: np.ndarray) -> list[int] | None:
        """The actions that lead from the tree root's position to ``game``'s
        (1 to MAX_ADVANCE moves), or None when it is not a descendant: a
        position ``k`` moves back is the root's, with the colour that played
        from there on turn there, and every later move was played by the
        colour on turn (the other one each time) up to the side to move now.
        (GTP may ask for the colour that just played, ``genmove w`` twice:
        that position has a child's stones but not its side to move, and the
        child's subtree holds the other side's moves.)"""
        moves = game.moves
        for k in range(1, min(MAX_ADVANCE, len(moves)) + 1):
            colours = [c for c, _ in moves[-k:]] + [game.to_move]
            if any(colours[i + 1] != 3 - colours[i] for i in range(k)):
                return None
            if self._position_key(game, hashes, k) == self._root_key:
                return [a for _, a in moves[-k:]]
        return None

    def sync(self, game: Game) -> None:
        """Point the workspace at ``game``'s current position. The tree is
        kept when it is this position's (same stones, side to move, ko
        point, komi and move count), advanced when the game went on from it
        by up to MAX_ADVANCE moves, each by the colour on turn
        (``_moves_from_root``), and dropped otherwise (undo, a new game,
        set-up stones, other rules, the same colour asked to move again) or
        after ``restrict_root`` (its bans belong to one search). A kept
        root's edges into the opponent's pass-alive area are closed
        (``root.close_barred_root_edges``: expanded before that area was
        safe); a fresh root never has them. Self-play calls this every move:
        the work is one or two compiled calls."""
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
            else:
                path = self._moves_from_root(game, hashes)
                if path is not None:
                    for action in path:
                        reused = advance(self.ws, self.nodes, self.edges, action)
                        if not reused:
                            break
        n = game.size
        if n != self._sym_n:
            from ..symmetry import action_map

            w = self.ws[0]
            for k in range(8):
                w["sym_map"][k, : n * n + 1] = action_map(k, n)
            w["sym_n"] = self._sym_n = n
        set_root(self.ws, self.nodes, self.edges, game.arr, hashes, int(self.cfg.max_moves_factor * n * n), reused,
                 self._edge_room, self._node_room)
        if reused:
            close_barred_root_edges(self.ws, self.nodes, self.edges)
        self._root_key = key
        self._root_ko = ko
        self._round_edges = self._leaves * (n * n + 1)

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
    async def playout(self, ev: Evaluator) -> int:
        """One descent + evaluation + backup."""
        return await self.playouts(ev, 1)

    async def expand_root(self, ev: Evaluator) -> int:
        """Make sure the root has an edge for every legal move (one playout
        when it has not); returns the playouts spent (0 or 1)."""
        if self.root_expanded():
            return 0
        return await self.playout(ev)

    async def playouts(self, ev: Evaluator, count: int, forced: np.ndarray = NO_FORCED) -> int:
        """``count`` playouts (the j-th through the root child at place
        ``forced[j]`` among the root's edges, when ``forced`` [count] int64
        is given: Gumbel's visit plan), in rounds of up to
        ``leaves_per_await`` descents whose leaves wait on
        the network together (one commit, one await, one compiled call each
        way; with an ``off_loop`` encoder the leaves are encoded by the
        evaluator, off the event loop, before the batch runs). This loop is
        the Python side of the hot path: keep it lean."""
        reserve, commit = ev.reserve, ev.commit
        nn_cache = ev.nn_cache
        if nn_cache is None:
            nn_cache = _NO_CACHE
        cache = nn_cache.arrays
        use_cache = nn_cache.capacity > 0
        k_max = self._leaves
        budget = self.budget_bytes
        handle = self.tree_handle()
        ws, boards, scratch = self.ws, self.boards, self.scratch
        address, boards_address, scratch_address = self._addresses
        off_loop = self._encoder.off_loop
        done = requests = hits_total = 0
        try:
            while done < count:
                if budget:
                    self.make_room()
                    handle = self.tree_handle()
                planes, slot, room = reserve()
                want = min(k_max, count - done, room)
                leaves, completed, hits = descend_round(handle, planes, slot, want,
                                                        forced[done:] if forced.shape[0] else forced, cache)
                done += completed
                requests += leaves + hits
                hits_total += hits
                if not leaves:
                    if not completed:
                        break  # nothing to descend into (every move pruned)
                    continue
                try:
                    out = await commit(leaves, prepare=(encode_leaf_rounds,
                                                        (address, boards_address, scratch_address, slot,
                                                         leaves, ws, boards, scratch))
                                       if off_loop else None)
                except asyncio.CancelledError:
                    self._abandon_workspace()
                    raise
                finish_round(handle, leaves, (out.policy, out.wdl, out.score), slot, cache)
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

    def _new_workspace(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A workspace for this search's settings, its leaf boards
        (``tree.py``, "leaf boards") and its encoder's scratch
        (``encoders/leaf.py``)."""
        ws = new_workspace()
        ws[0]["params"] = self.cfg.params()
        ws[0]["encoder"] = self._encoder.ident
        ws[0]["encode_off_loop"] = self._encoder.off_loop
        return ws, new_leaf_boards(self._leaves if self._encoder.off_loop else 1), self._encoder.new_scratch()

    def _set_workspace(self, ws: np.ndarray, boards: np.ndarray, scratch: np.ndarray) -> None:
        self.ws, self.boards, self.scratch = ws, boards, scratch
        # (ctypes.data costs a microsecond)
        self._addresses = (ws.ctypes.data, boards.ctypes.data, scratch.ctypes.data)

    def _abandon_workspace(self) -> None:
        """The await of a round was cancelled: its leaves may still be
        encoded into the workspace, in the evaluator's thread, at any time
        (the batch they are in still leaves). The search takes a fresh
        workspace, leaf boards, scratch and tree; the old ones stay with
        that batch's round."""
        self._set_workspace(*self._new_workspace())
        self._sym_n = 0
        self.reset()

    def tree_handle(self) -> tuple:
        """The compiled round's tree handle ``(ws, nodes, edges, boards,
        scratch)`` (``puct.py``, "handles"); ``make_room`` may replace the
        pools, so take it again after that."""
        return self.ws, self.nodes, self.edges, self.boards, self.scratch

    def make_room(self) -> None:
        """With a memory budget: pools with one round's edges and records
        free, grown or pruned (``pools.make_room``)."""
        self.nodes, self.edges, pruned = make_room(self.ws, self.nodes, self.edges, self._round_edges,
                                                   self._leaves, self.budget_bytes)
        self.prunes += pruned

    def root_node(self) -> int:
        return int(self.ws[0]["root_node"])

    def root_expanded(self) -> bool:
        """Whether the root has an edge for every legal move (a kept child
        may have only some: the next playout gives it the rest)."""
        return bool(root_complete(self.ws, self.nodes, self.edges))

    def root_children(self) -> int:
        """Edges of the root (0: not expanded yet): its children once it is
        complete (``root_expanded``; a kept child may end with a tail edge
        until the next playout)."""
        return int(root_summary(self.ws, self.nodes)[0])

    def root_actions(self) -> np.ndarray:
        """The actions of the root's children (int64)."""
        k = root_actions(self.ws, self.nodes, self.edges, self._actions)
        return self._actions[:k].astype(np.int64)

    def pool_full(self, n: int) -> bool:
        """Whether the tree can no longer grow on an N x N board: less than
        one expansion's edges or no node record is free (with a budget: until
        the next round makes room)."""
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

    def best_move(self, game: Game) -> int:
        """The move after an open-ended search (``think``), ``game`` being
        the searched position: the most visited legal open root move (ties:
        better Q, then higher prior); by prior when nothing was visited;
        pass when no move qualifies. Legality is checked against ``game``,
        so a superko move the descent never met is not chosen."""
        n = game.size
        visits, q, prior = self.stats(n)
        for a in np.lexsort((-prior, -q, -visits)):
            a = int(a)
            if prior[a] < 0:
                continue  # restricted, or found to repeat a position
            if visits[a] == 0 and prior[a] <= 0:
                break  # the rest have neither visits nor prior
            if game.is_legal(a):
                return a
        return n * n

    def child_score_lead(self, action: int, cache: NNCache | None) -> float | None:
        """The score lead for the root's player after root move ``action``:
        the network's answer for that child position when ``cache`` holds
        it (a leaf the search sent), else None."""
        if cache is None or cache.capacity == 0:
            return None
        arr = self.ws["root"].copy()  # [1] board record of the root position
        n = int(arr[0]["n"])
        B.play(arr[0], B.action_to_point(n, action))
        hit = cache.get(int(cache_key(arr[0])))
        return None if hit is None else -hit[2]

    async def think(
        self,
        ev: Evaluator,
        *,
        max_playouts: int | None,
        deadline: float | None,
        stop: Callable[[], bool] | None = None,
        interval_s: float | None = None,
        on_report: Callable[[], Awaitable[None]] | None = None,
    ) -> int:
        """Playouts on the synced position until ``max_playouts`` new ones,
        ``deadline`` (``time.perf_counter``) or ``stop()`` returns True;
        ``on_report`` is awaited every ``interval_s``. Playouts run in chunks
        of about THINK_CHUNK_SECONDS between checks, and the loop yields to
        the event loop after each chunk. Returns the playouts run."""
        spent = 0
        chunk = 1
        next_report = time.perf_counter() + interval_s if interval_s else None
        while True:
            now = time.perf_counter()
            if max_playouts is not None and spent >= max_playouts:
                break
            if deadline is not None and now >= deadline:
                break
            if stop is not None and stop():
                break
            if next_report is not None and now >= next_report:
                if on_report is not None:
                    await on_report()
                next_report = max(next_report + interval_s, now + interval_s * 0.5)
            k = chunk
            if max_playouts is not None:
                k = min(k, max_playouts - spent)
            t = time.perf_counter()
            before = self.root_visits()
            await self.playouts(ev, k)
            spent += max(1, self.root_visits() - before)  # collisions may end a round early
            per = (time.perf_counter() - t) / k
            chunk = max(1, min(THINK_MAX_CHUNK, int(THINK_CHUNK_SECONDS / max(per, 1e-7))))
            await asyncio.sleep(0)
        return spent

    # ---- whole searches --------------------------------------------------
    async def run(
        self,
        game: Game,
        ev: Evaluator,
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
        spent = await self.expand_root(ev)
        if not allow_pass:
            ban_root_actions(self.ws, self.nodes, self.edges, self._pass_action(n))
        if use_gumbel:
            gumbel_action, gumbel_policy, gumbel_spent = await self._gumbel(ev, playouts - spent, n)
            spent += gumbel_spent
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
            action, policy = gumbel_action, gumbel_policy.astype(np.float32)
            if not game.is_legal(int(action)):  # an unvisited superko move: the best legal one
                action = self.best_move(game)
        return SearchResult(int(action), visits, q, prior, policy, self.root_value(), spent, full_search, use_gumbel)

    def _pass_action(self, n: int) -> np.ndarray:
        """``[pass]`` as the int64 array ``ban_root_actions`` takes (kept)."""
        if self._pass is None or self._pass[0] != n * n:
            self._pass = np.array([n * n], dtype=np.int64)
        return self._pass

    async def _gumbel(self, ev: Evaluator, budget: int, n: int) -> tuple[int, np.ndarray, int]:
        """Sequential halving at the root over the visit plan
        (``gumbel.visit_plan``, drawn up once for the search): each phase's
        visits go round its candidates in one ``playouts`` call, so its
        rounds batch ``leaves_per_await`` leaves as PUCT's do. Spends
        ``budget`` playouts (fewer only if every considered move runs out).
        Returns (action, improved policy [A], playouts spent)."""
        cfg = self.cfg
        r = self.nodes[self.root_node()]
        first, k = int(r["first"]), int(r["nchild"])
        a_count = n * n + 1
        logits = np.full(a_count, -np.inf)  # [A]
        child_of = np.full(a_count, -1, dtype=np.int64)  # [A] root edge of each action
        kids = self.edges[first : first + k]
        ok = kids["prior"] > 0
        acts = kids["action"].astype(np.int64)
        logits[acts[ok]] = np.log(kids["prior"][ok])
        child_of[acts] = np.arange(k)  # forced playouts name a root child by its place
        # forced visits: no prefix order at the root (its edges stay where they are)
        self.nodes[self.root_node()]["ordered"] = -1
        g = self.rng.gumbel(size=a_count)  # [A]
        legal = np.isfinite(logits)
        m = min(cfg.gumbel_considered_moves, int(legal.sum()))
        if m == 0:
            return n * n, np.eye(a_count, dtype=np.float64)[n * n], 0
        cand = np.argsort(-(np.where(legal, g + logits, -np.inf)))[:m]  # [m] actions, best first
        spent = 0
        for phase, (size, visits_in_phase) in enumerate(G.visit_plan(m, budget)):
            if phase > 0:
                visits, q, _ = self.stats(n)
                score = G.score_actions(g, logits, q, visits, cfg.gumbel_c_visit, cfg.gumbel_c_scale)
                cand = cand[np.argsort(-score[cand], kind="stable")][:size]
            forced = child_of[cand[np.arange(visits_in_phase) % len(cand)]]  # [visits_in_phase] root edges
            spent += await self.playouts(ev, visits_in_phase, forced)
        visits, q, prior = self.stats(n)
        score = G.score_actions(g, logits, q, visits, cfg.gumbel_c_visit, cfg.gumbel_c_scale)
        best = int(cand[np.argmax(score[cand])])
        policy = G.improved_policy(logits, q, visits, prior, self.root_value(), cfg.gumbel_c_visit, cfg.gumbel_c_scale)
        return best, policy, spent
