"""The glue between GTP commands and the engine: one game, one search, one
batching queue.

Vocabulary
----------
Engine      owns the ``Game``, the ``Search`` (its tree kept between moves
            when the game only moved on), the ``Batcher`` for the current board
            size (batches of the search's ``leaves_per_await`` parallel leaves,
            flushed at once when the search waits on them, or by the timeout)
            and the clocks.
position    what a search looks at: the game itself, or a copy with the other
            colour to move when GTP asks for the colour not on turn (as
            ``genmove w`` with black to move does).
tree reuse  ``Search.sync`` decides: the tree is kept when the position is
            the one it was searched for (side to move included), advanced
            when the colour on turn there played one move and the other
            colour is on turn now, and dropped otherwise (so ``genmove w``
            twice starts the second search afresh).
think       ``Search.think``: playouts until a playout limit, a deadline or
            a stop request (input arrived); reports come at a fixed
            interval. The tree grows up to ``[search] tree_memory_mb`` and
            is then pruned (``tree_memory.py``: at most 1.5 x the budget at
            any moment): an analysis never stops growing its visits.
watchdog    with reports asked for, a task beside the search that writes a
            line whenever ``interval`` passes without one, also while the
            search waits on a slow network. A round's leaves may be out then
            (``RoundWatch``): the line is made with their virtual losses
            taken off the tree for that moment, so its figures are those of
            the finished playouts. Reading input goes on in its own thread
            throughout.
Inbox       what ``think`` polls for "stop on any input": ``pending()``.
RESIGN      the action value ``genmove`` returns to resign (-1): when the
            chosen move's winrate is below ``resign_threshold`` after at
            least ``resign_min_visits`` root visits.
stone status  the dead and seki stones of the game's position
            (``final_status.judge``: Benson's safe areas and the network's
            ownership), judged once per position and kept, so
            ``final_score`` and every ``final_status_list`` agree.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from sayuri_async.encoders import get_encoder
from sayuri_async.go.board import BLACK
from sayuri_async.go.game import Game, Rules
from sayuri_async.infer.batcher import Batcher
from sayuri_async.infer.worker import Worker
from sayuri_async.net.board_sizes import check_board_size
from sayuri_async.search.mcts import Search
from sayuri_async.search.tree import add_virtual_loss, remove_virtual_loss
from sayuri_async.search.value import winrate

from .analysis import MoveInfo, Report, rank_moves, wilson_lcb
from .analyze_args import AnalyzeRequest
from .config import MAX_BOARD, MIN_BOARD, GtpConfig
from .final_status import StoneStatus, judge
from .timecontrol import TimeControl
from .tree_memory import BoundedSearch

RESIGN = -1


class Inbox(Protocol):
    def pending(self) -> bool: ...


class RoundWatch:
    """The batcher as the search sees it, counting the leaves of the round
    that is out (``out``: 0 between rounds; they wait in leaf slots 0 ..
    out - 1, each with a virtual loss on its path)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.out = 0
        self.reserve = inner.reserve
        self.nn_cache = inner.nn_cache
        self.counters = inner.counters

    async def commit(self, count: int = 1, *args, **kw):
        self.out = count
        try:
            return await self.inner.commit(count, *args, **kw)
        finally:
            self.out = 0


async def report_now(search: Search, watch: RoundWatch, fresh: Callable[[], Awaitable[None]]) -> None:
    """``fresh()`` with the virtual losses of the leaves that are out taken
    off the tree meanwhile (``fresh`` must not wait: nothing else may see
    the tree in between)."""
    slots = range(watch.out)
    for k in slots:
        remove_virtual_loss(search.ws, search.nodes, k)
    try:
        await fresh()
    finally:
        for k in slots:
            add_virtual_loss(search.ws, search.nodes, k)


async def watchdog(search: Search, watch: RoundWatch, interval_s: float, last: list[float],
                   fresh: Callable[[], Awaitable[None]]) -> None:
    """Write a line whenever ``interval_s`` passes without one (``last[0]``:
    when the last one was written), between rounds or during one."""
    while True:
        await asyncio.sleep(max(0.0, last[0] + interval_s - time.perf_counter()))
        if time.perf_counter() >= last[0] + interval_s:
            await report_now(search, watch, fresh)


def board_size_range(backend) -> tuple[int, int]:
    """Board sizes GTP accepts: 2..25, narrowed to the range the network
    declares in its config (``board_size_min``/``board_size_max``)."""
    net_cfg = getattr(backend, "config", None)
    lo = max(MIN_BOARD, int(getattr(net_cfg, "board_size_min", MIN_BOARD)))
    hi = min(MAX_BOARD, int(getattr(net_cfg, "board_size_max", MAX_BOARD)))
    return lo, hi


class Engine:
    def __init__(self, cfg: GtpConfig, backend) -> None:
        self.cfg = cfg
        self.backend = backend
        self.encoder = get_encoder(backend.encoder)
        s = cfg.search
        self.rules = Rules(scoring=cfg.game.scoring, superko=cfg.game.superko)
        self.rng = np.random.default_rng(None if s.seed < 0 else s.seed)
        self.search = BoundedSearch(s, backend.encoder, rng=self.rng)  # [search] is a SearchConfig
        self.time = TimeControl(cfg.time)
        self.worker = Worker(name="infer")
        self.batcher: Batcher | None = None
        self.size_range = board_size_range(backend)
        check_board_size(cfg.net.weights or getattr(backend, "name", "the network"), *self.size_range,
                         cfg.game.board_size, "[game] board_size")
        self.game = Game(cfg.game.board_size, cfg.game.komi, self.rules)
        self._status: tuple[tuple, StoneStatus] | None = None  # (position key, its judgement)
        self.new_game(cfg.game.board_size)

    # ---- the game ------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.game.size

    def new_game(self, size: int | None = None) -> None:
        """An empty board of ``size`` (default: the current size), same komi;
        full clocks."""
        size = self.size if size is None else size
        self.game = Game(size, self.game.komi, self.rules)
        if self.batcher is None or self.batcher.n != size:
            if self.batcher is not None:
                self.batcher.close()
            s = self.cfg.search
            self.batcher = Batcher(self.backend, size, s.leaves_per_await, s.timeout_ms,
                                   cache_size=s.cache_size, worker=self.worker)
            self.batcher.attach()
        self.drop_tree()
        self.time.reset()

    def replace_game(self, game: Game) -> None:
        """Adopt ``game`` (from an SGF file) as the current game."""
        if game.size != self.size:
            self.new_game(game.size)
        self.game = game
        self.drop_tree()

    def set_komi(self, komi: float) -> None:
        self.game.set_komi(komi)
        self.drop_tree()

    def drop_tree(self) -> None:
        self.search.reset()

    def clear_cache(self) -> None:
        """Drop the tree and forget every cached network answer (a zero key
        marks an empty NN cache entry)."""
        self.drop_tree()
        if self.batcher is not None:
            self.batcher.nn_cache.keys.fill(0)

    def set_rules(self, rules: Rules) -> None:
        """Play the current game and the next ones under ``rules``; the
        position stays."""
        self.rules = rules
        self.game.set_rules(rules)
        self.drop_tree()

    def position(self, color: int | None) -> Game:
        """The game, or a copy with ``color`` to move (``Game.with_to_move``)."""
        return self.game if color is None else self.game.with_to_move(color)

    # ---- searching -------------------------------------------------------------
    async def begin_search(self, pos: Game, avoid: set[int] | None = None, allow: set[int] | None = None) -> None:
        """Point the search at ``pos`` (keeping the tree when it may: ``sync``
        closes a kept root's moves into the opponent's safe area), make sure
        its root is expanded, and apply root restrictions."""
        s = self.search
        s.sync(pos)  # keeps the tree when it is this position's or its parent's
        await s.expand_root(self.batcher)
        self.restrict_root(avoid or set(), allow)

    def restrict_root(self, avoid: set[int], allow: set[int] | None) -> None:
        """Never search the root moves in ``avoid`` (or outside ``allow``);
        ignored if it would leave no move. The tree is dropped afterwards."""
        if not avoid and allow is None:
            return
        s = self.search
        acts = s.root_actions()
        banned = {int(a) for a in acts if a in avoid or (allow is not None and a not in allow)}
        if banned:
            s.restrict_root(banned)  # refused when it would leave no move

    async def think(
        self,
        *,
        max_playouts: int | None,
        deadline: float | None,
        inbox: Inbox | None = None,
        interval_s: float | None = None,
        on_report: Callable[[], Awaitable[None]] | None = None,
    ) -> int:
        """``Search.think`` on the prepared position, stopping also when
        ``inbox`` has input. With ``on_report`` (which writes a line and
        must not wait) a line comes at least every ``interval_s`` (module
        docstring, "watchdog"). Returns playouts run."""
        stop = inbox.pending if inbox is not None else None
        if on_report is None or not interval_s:
            return await self.search.think(self.batcher, max_playouts=max_playouts, deadline=deadline, stop=stop,
                                           interval_s=interval_s, on_report=on_report)
        watch = RoundWatch(self.batcher)
        last = [time.perf_counter()]

        async def fresh() -> None:
            await on_report()
            last[0] = time.perf_counter()

        async def when_due() -> None:  # the search's own schedule: skipped just after a watchdog line
            if time.perf_counter() - last[0] >= 0.5 * interval_s:
                await fresh()

        dog = asyncio.ensure_future(watchdog(self.search, watch, interval_s, last, fresh))
        try:
            return await self.search.think(watch, max_playouts=max_playouts, deadline=deadline, stop=stop,
                                           interval_s=interval_s, on_report=when_due)
        finally:
            dog.cancel()
            await asyncio.gather(dog, return_exceptions=True)

    async def root_eval(self, pos: Game) -> tuple[float, np.ndarray]:
        """The network's score lead and ownership (side to move) at ``pos``:
        one evaluation (the NN cache keeps no ownership)."""
        ev = self.batcher
        planes, slot, _ = ev.reserve()
        self.encoder.encode(pos.rec, planes[slot])
        out = await ev.commit()
        return float(out.score[slot]), np.array(out.ownership[slot], dtype=np.float64)

    async def stone_status(self) -> StoneStatus:
        """The game's dead and seki stones (module docstring, "stone
        status")."""
        g = self.game
        key = (g.size, len(g.moves), int(g.history_hashes()[-1]), int(np.count_nonzero(g.stones())))
        if self._status is None or self._status[0] != key:
            _, own = await self.root_eval(g)
            black_view = own if g.to_move == BLACK else -own
            self._status = (key, judge(g.rec, black_view))
        return self._status[1]

    def report(self, pos: Game, req: AnalyzeRequest, root_score: float, ownership: np.ndarray | None) -> Report:
        n = pos.size
        s = self.search
        visits, q, prior = s.stats(n)
        root_wr = winrate(s.root_value())
        z = self.cfg.analysis.lcb_z
        moves = []
        for a in np.flatnonzero((visits > 0) | (prior > 0)):
            a = int(a)
            if a in req.avoid or (req.allow is not None and a not in req.allow):
                continue
            v = int(visits[a])
            wr = winrate(float(q[a])) if v > 0 else root_wr
            moves.append(MoveInfo(a, v, wr, float(prior[a]), wilson_lcb(wr, v, z), root_score, []))
        ranked = rank_moves(moves, req.min_moves, req.max_moves)
        pv_len = self.cfg.analysis.pv_length
        for m in ranked:
            pv, pv_visits = s.pv_line(m.action)
            m.pv, m.pv_visits = pv[:pv_len], pv_visits[:pv_len]
            lead = s.child_score_lead(m.action, self.batcher.nn_cache)
            m.score_lead = root_score if lead is None else lead
        return Report(ranked, s.root_visits(), root_wr, root_score, ownership)

    # ---- genmove ----------------------------------------------------------------
    async def genmove(
        self,
        color: int,
        *,
        interval_s: float | None = None,
        on_report: Callable[[Game], Awaitable[None]] | None = None,
        avoid: set[int] | None = None,
        allow: set[int] | None = None,
    ) -> int:
        """Search for ``color``, play the move on the board and return its
        action (``RESIGN`` to resign: nothing is played then). ``avoid`` and
        ``allow`` restrict the moves searched and chosen, as in analysis
        (``restrict_root``)."""
        t0 = time.perf_counter()
        game = self.game
        pos = self.position(color)
        budget = self.time.budget(color, len(game.moves), game.size)
        deadline = None if budget is None else t0 + budget
        await self.begin_search(pos, avoid, allow)
        report = (lambda: on_report(pos)) if on_report is not None else None
        await self.think(max_playouts=self.cfg.search.playouts, deadline=deadline,
                         interval_s=interval_s, on_report=report)
        if report is not None:  # the final state of the search, before the move
            await report()
        action = self._choose(pos)
        if action != RESIGN:
            game.play(action, color)
        self.time.charge(color, time.perf_counter() - t0)
        return action

    def _choose(self, pos: Game) -> int:
        """``Search.best_move``, or RESIGN when that move's winrate is below
        the threshold after enough visits."""
        s, cfg = self.search, self.cfg.search
        action = s.best_move(pos)
        if cfg.resign_threshold > 0 and s.root_visits() >= cfg.resign_min_visits:
            visits, q, _ = s.stats(pos.size)
            if visits[action] > 0 and winrate(float(q[action])) < cfg.resign_threshold:
                return RESIGN
        return action

    async def warmup(self) -> None:
        """Run the compiled paths of a search, an analysis line and a
        genmove once (numba loads or compiles them), so the first real
        command, often a timed genmove, is not slow; the tree is dropped
        afterwards and the game is unchanged. A network kept for one board
        size (the shipped 9x9 one) runs once at every batch size a search
        sends it (1 .. ``leaves_per_await``): torch prepares each shape on
        its first call, which took seconds off the first 9x9 genmove."""
        self.backend.warmup([self.size])
        self._warm_networks()
        pos = self.game
        await self.begin_search(pos)
        await self.think(max_playouts=4, deadline=None)
        req = AnalyzeRequest(style="lz")
        score, _ = await self.root_eval(pos)
        self.report(pos, req, score, None)
        action = self._choose(pos)  # genmove's choice and move, on a copy
        if action != RESIGN:
            pos.copy().play(action)
        self.drop_tree()

    def _warm_networks(self) -> None:
        """The board-size networks (``BoardSizeBackend.by_size``) at every
        batch size of one search."""
        for n in getattr(self.backend, "by_size", {}):
            for b in range(1, self.cfg.search.leaves_per_await + 1):
                self.backend.run(np.zeros((b, self.backend.planes, n, n), dtype=np.uint8))

    def close(self) -> None:
        if self.batcher is not None:
            self.batcher.close()
        self.worker.shutdown(wait=True)  # the batch in the backend finishes first
