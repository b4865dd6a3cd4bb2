"""A search round (several leaves, one commit), its encoding in the
evaluator's thread, the compiled NN cache, the deferred expansion and the
compact board copy the descent uses."""
import asyncio
import threading

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.go.game import Game
from sayuri_async.infer.batcher import Batcher, run_preparations
from sayuri_async.infer.cache import NNCache, capacity_for
from sayuri_async.net.backends import RandomBackend
from sayuri_async.encoders import get_encoder
from sayuri_async.search import mcts
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search
from sayuri_async.infer.cache import cache_key
from sayuri_async.selfplay.config import SelfplayConfig

from helpers_search import InstantEvaluator, check_tree


def random_game(n: int, moves: int, seed: int) -> Game:
    g = Game(n)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = np.flatnonzero(g.legal_actions())
        g.play(int(rng.choice(legal)))
    return g


async def search_with_batcher(bt: Batcher, game: Game, playouts: int, search: Search):
    bt.attach()
    try:
        return await search.run(game, bt, playouts)
    finally:
        bt.detach()


def test_a_repeated_search_is_answered_by_the_cache_and_builds_the_same_tree():
    g = random_game(9, 12, seed=1)
    bt = Batcher(RandomBackend(seed=5), 9, batch_size=8, timeout_ms=1.0, cache_size=50_000)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(0))

    async def twice():
        first = await search_with_batcher(bt, g, 200, s)
        evals = bt.counters.evals
        assert evals > 0 and bt.counters.cache_hits == 0
        s.reset()
        second = await search_with_batcher(bt, g, 200, s)
        return first, second, evals

    first, second, evals = asyncio.run(twice())
    # every leaf of the second search was seen by the first: no new network work
    assert bt.counters.evals == evals
    assert bt.counters.cache_hits > 0
    np.testing.assert_array_equal(first.visits, second.visits)
    np.testing.assert_allclose(first.prior, second.prior)
    bt.close()


def test_without_a_cache_every_leaf_goes_to_the_network():
    g = random_game(9, 6, seed=2)
    bt = Batcher(RandomBackend(seed=5), 9, batch_size=8, timeout_ms=1.0, cache_size=0)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(0))
    asyncio.run(search_with_batcher(bt, g, 100, s))
    assert bt.counters.cache_lookups == 0 and bt.counters.cache_hits == 0
    assert bt.counters.evals == bt.counters.requests > 0
    bt.close()


def test_a_round_commits_its_leaves_as_consecutive_slots():
    g = random_game(9, 4, seed=3)
    seen = []

    class Recording(InstantEvaluator):
        def commit(self, count=1, final=True, prepare=None):
            seen.append(count)
            if prepare is not None:
                run_preparations([prepare], self.buf)
            # each slot holds a distinct leaf position (own + opponent stones differ)
            sigs = {self.buf[i, :2].tobytes() for i in range(count)}
            assert len(sigs) == count
            return super().commit(count, final)

    s = Search(SearchConfig(leaves_per_await=4), "simple-v1", rng=np.random.default_rng(0))
    ev = Recording(9)
    res = asyncio.run(s.run(g, ev, 101))
    assert max(seen) == 4 and sum(seen) == ev.requests
    assert res.playouts == 101 and int(res.visits.sum()) >= 100


def test_children_get_priors_over_the_legal_moves_only():
    g = random_game(7, 10, seed=4)
    legal = g.legal_actions().astype(bool)
    pol = np.random.default_rng(0).random(50).astype(np.float32)

    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(0))
    ev = InstantEvaluator(7, policy_fn=lambda planes: pol)
    asyncio.run(s.run(g, ev, 1))
    visits, q, prior = s.stats(7)
    np.testing.assert_array_equal(prior > 0, legal)  # superko-free position: simple-legal == legal
    np.testing.assert_allclose(prior[legal], pol[legal] / pol[legal].sum(), rtol=1e-5)


def test_a_full_pool_leaves_the_leaf_unexpanded_and_the_search_goes_on():
    g = random_game(9, 3, seed=5)
    s = Search(SearchConfig(edge_capacity=200), "simple-v1", rng=np.random.default_rng(0))
    ev = InstantEvaluator(9)
    res = asyncio.run(s.run(g, ev, 50))
    assert int(s.ws[0]["edges_used"]) <= 200
    assert res.playouts == 50
    assert s.root_visits() >= 50


def test_cache_keys_are_odd_and_depend_on_side_to_move():
    g = random_game(9, 5, seed=6)
    k1 = int(cache_key(g.rec))
    assert k1 & 1 == 1
    h = g.copy()
    h.play(81)  # a pass: same stones, other side to move
    assert int(cache_key(h.rec)) != k1


def test_nn_cache_rounds_capacity_up_and_replaces_in_place():
    assert capacity_for(0) == 0 and capacity_for(1) == 1 and capacity_for(20_000) == 32_768
    c = NNCache(4, 5)
    pol = np.arange(2 * 26, dtype=np.float32).reshape(2, 26)
    wdl = np.ones((2, 3), np.float32)
    score = np.array([1.5, -2.5], np.float32)
    c.put(5, pol, wdl, score, 0)
    assert c.get(5)[2] == 1.5 and c.get(9) is None
    c.put(9, pol, wdl, score, 1)  # same slot (9 & 3 == 5 & 3): replaces key 5
    assert c.get(5) is None and c.get(9)[2] == -2.5
    np.testing.assert_array_equal(c.get(9)[0], pol[1])


@pytest.mark.parametrize("n,moves,start", [(9, 30, 19), (19, 60, 9), (7, 20, 13), (13, 40, 13)])
def test_copy_board_copies_every_field_a_board_uses(n, moves, start):
    src = random_game(n, moves, seed=n).arr
    dst = B.new_board(start)  # a record that held another board size: stale data past W*W
    dst[0]["hist"][:] = 5
    B.copy_board(dst[0], src[0])
    m = (n + 2) ** 2
    for name in B.BOARD_DTYPE.names:
        a, b = src[0][name], dst[0][name]
        if name == "hist":
            np.testing.assert_array_equal(a[:, :m], b[:, :m], err_msg=name)
        elif np.ndim(a) == 1 and a.shape[0] == B.MAX_P:
            np.testing.assert_array_equal(a[:m], b[:m], err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)
    # and it plays on exactly like the original
    rng = np.random.default_rng(0)
    for _ in range(15):
        mask = np.zeros(n * n + 1, np.uint8)
        B.legal_actions(src[0], mask)
        a = int(rng.choice(np.flatnonzero(mask)))
        p = B.action_to_point(n, a)
        assert B.play(src[0], p) == B.play(dst[0], p)
        assert src[0]["hash"] == dst[0]["hash"]


def test_selfplay_sizes_the_tree_pool_from_playouts_and_board():
    cfg = SelfplayConfig(board_sizes=[9, 19], playouts=100, search=SearchConfig(edge_capacity=0))
    assert cfg.search_config().edge_capacity == 3 * 101 * 362  # three searches' worst case on 19x19
    assert cfg.search_config().search_edges == 101 * 362
    small = SelfplayConfig(board_sizes=[7], playouts=10, search=SearchConfig(edge_capacity=0))
    assert small.search_config().edge_capacity == 20_000
    fixed = SelfplayConfig(search=SearchConfig(edge_capacity=12345))
    assert fixed.search_config().edge_capacity == 12345


def test_a_sized_pool_always_has_room_for_the_next_search_and_still_keeps_trees():
    playouts = 30
    cfg = SelfplayConfig(board_sizes=[9], playouts=playouts, search=SearchConfig(edge_capacity=0))
    sc = cfg.search_config()
    sc = SearchConfig(edge_capacity=sc.search_edges * 3, search_edges=sc.search_edges)  # no 20,000 floor
    s = Search(sc, "simple-v1", rng=np.random.default_rng(1))
    ev = InstantEvaluator(9)
    g = Game(9)
    kept = 0
    for _ in range(40):
        s.sync(g)
        used, records = int(s.ws[0]["edges_used"]), int(s.ws[0]["nodes_used"])
        assert sc.edge_capacity - used >= sc.search_edges  # the next search's edges fit
        assert s.nodes.shape[0] - records >= playouts + 1  # and so do its node records
        kept += s.root_visits() > 0
        res = asyncio.run(s.run(g, ev, playouts))
        assert int(s.ws[0]["edges_used"]) <= sc.edge_capacity
        assert int(s.ws[0]["nodes_used"]) - records <= playouts + 1  # a record per playout at most (+ the root)
        assert res.playouts == playouts and int(res.visits.sum()) >= playouts - 1  # (one may expand the root)
        g.play(res.action)
    assert kept >= 20  # most moves reuse the subtree of the move played


def test_dirichlet_noise_mixes_a_distribution_into_the_open_root_moves_only():
    g = random_game(9, 6, seed=7)
    cfg = SearchConfig(dirichlet_epsilon=0.25, dirichlet_alpha_scale=0.03 * 361)
    s = Search(cfg, "simple-v1", rng=np.random.default_rng(0))
    ev = InstantEvaluator(9)
    asyncio.run(s.run(g, ev, 1))  # expand the root: uniform priors
    assert s.restrict_root({81})  # pass is not open
    _, _, before = s.stats(9)
    open_ = before > 0
    draws = []
    for _ in range(400):
        r = s.nodes[s.root_node()]
        kids = s.edges[int(r["first"]) : int(r["first"]) + int(r["nchild"])]
        saved = kids["prior"].copy()
        s.add_dirichlet_noise()
        _, _, after = s.stats(9)
        assert after[81] == -1.0  # the restricted move stays out
        # the noise is a distribution over the open moves: its weight eps is added
        assert abs(float(after[open_].sum()) - (0.75 * float(before[open_].sum()) + 0.25)) < 1e-5
        assert not np.allclose(after[open_], before[open_])
        draws.append((after[open_] - 0.75 * before[open_]) / 0.25)  # the noise itself
        kids["prior"] = saved
    noise = np.array(draws)
    assert np.all(noise >= -1e-6)
    np.testing.assert_allclose(noise.sum(axis=1), 1.0, atol=1e-4)
    # Dirichlet with equal alphas: each move's mean share is 1 / moves
    np.testing.assert_allclose(noise.mean(axis=0).mean(), 1.0 / open_.sum(), rtol=1e-3)
    assert noise.max(axis=1).mean() > 5.0 / open_.sum()  # small alpha: spiky draws, not uniform


@pytest.mark.parametrize("encoder", ["simple-v1", "sayuri-v3"])
def test_an_off_loop_encoders_leaves_are_encoded_in_the_worker_thread_as_the_encoder_writes_them(encoder, monkeypatch):
    """``sayuri-v3`` (``Encoder.off_loop``): each row the batcher's worker
    writes holds the full encoding of the leaf that waits at that slot
    (read from the round's workspace before the encoding runs), and no
    encoding runs on the event loop. ``simple-v1``: the descent encodes
    its leaves itself, nothing is left for the worker."""
    enc = get_encoder(encoder)
    encode = mcts.encode_leaf_rounds
    calls = []

    def checked(rounds, planes):
        leaves = [(slot, boards[:k].copy()) for _, _, _, slot, k, _, boards, _ in rounds]
        encode(rounds, planes)
        for slot, boards in leaves:
            for i in range(boards.shape[0]):
                np.testing.assert_array_equal(planes[slot + i], enc(boards[i:i + 1]))
        calls.append((threading.current_thread() is threading.main_thread(), sum(b.shape[0] for _, b in leaves)))

    monkeypatch.setattr(mcts, "encode_leaf_rounds", checked)
    g = random_game(9, 14, seed=7)
    bt = Batcher(RandomBackend(encoder, seed=1), 9, batch_size=4, timeout_ms=1.0)
    s = Search(SearchConfig(leaves_per_await=3), encoder, rng=np.random.default_rng(0))
    res = asyncio.run(search_with_batcher(bt, g, 80, s))
    bt.close()
    assert res.playouts == 80 and bt.counters.evals == bt.counters.requests > 0
    if enc.off_loop:
        assert calls and not any(on_loop for on_loop, _ in calls)
        assert sum(k for _, k in calls) == bt.counters.evals
    else:
        assert calls == [] and bt.counters.encode_s == 0.0


@pytest.mark.parametrize("slot, leaves", [(0, 4), (6, 3), (-1, 1)])
def test_a_round_that_overruns_its_leaf_boards_or_rows_is_refused_before_any_encoding(slot, leaves):
    """The compiled encoding reads the round's leaf boards at raw addresses:
    a round of more leaves than its search has boards, or with rows outside
    the batch, raises instead of reading or writing past the arrays."""
    s = Search(SearchConfig(leaves_per_await=3), "sayuri-v3", rng=np.random.default_rng(0))
    assert s.boards.shape[0] == 3
    planes = np.zeros((8, get_encoder("sayuri-v3").planes, 9, 9), dtype=np.uint8)
    round_ = (s.ws.ctypes.data, s.boards.ctypes.data, s.scratch.ctypes.data, slot, leaves, s.ws, s.boards, s.scratch)
    with pytest.raises(ValueError, match="does not fit"):
        mcts.encode_leaf_rounds([round_], planes)
    assert not planes.any()


def test_a_batch_whose_rounds_have_different_scratch_layouts_is_refused():
    """The compiled encoding reads every round's scratch laid out as the
    first round's: a ``sayuri-v3`` round after a ``simple-v1`` one (whose
    scratch is empty) raises instead of reading past it."""
    simple = Search(SearchConfig(leaves_per_await=2), "simple-v1", rng=np.random.default_rng(0))
    sayuri = Search(SearchConfig(leaves_per_await=2), "sayuri-v3", rng=np.random.default_rng(0))
    planes = np.zeros((4, get_encoder("sayuri-v3").planes, 9, 9), dtype=np.uint8)
    rounds = [(s.ws.ctypes.data, s.boards.ctypes.data, s.scratch.ctypes.data, 2 * i, 1, s.ws, s.boards, s.scratch)
              for i, s in enumerate((simple, sayuri))]
    with pytest.raises(ValueError, match="scratch layout"):
        mcts.encode_leaf_rounds(rounds, planes)
    assert not planes.any()


def test_a_simple_v1_search_keeps_no_sayuri_v3_scratch():
    """The workspace holds no encoder's working memory: a ``simple-v1``
    search's workspace and scratch together stay within 160 KB, while a
    ``sayuri-v3`` search gets the encoder's own scratch (its ladder
    caches), which a search on a later root makes its read-outs anew in."""
    simple = Search(SearchConfig(), "simple-v1")
    assert simple.ws.nbytes + simple.scratch.nbytes <= 160 * 1024
    assert simple.scratch.shape == (0,)
    sayuri = Search(SearchConfig(), "sayuri-v3")
    assert sayuri.ws.nbytes == simple.ws.nbytes and sayuri.scratch.shape == (1,)
    assert sayuri.scratch.nbytes > 400 * 1024  # the ladder cache: the memory a simple-v1 game no longer carries
    g = random_game(9, 12, seed=3)
    ev = InstantEvaluator(9, planes=43)
    asyncio.run(sayuri.run(g, ev, 30))
    first = int(sayuri.scratch[0]["root_serial"])
    assert first == int(sayuri.ws[0]["root_serial"]) > 0 and sayuri.scratch[0]["ladders"]["ready"] == 1
    g.play(int(np.flatnonzero(g.legal_actions())[0]))
    asyncio.run(sayuri.run(g, ev, 30))
    assert int(sayuri.scratch[0]["root_serial"]) == int(sayuri.ws[0]["root_serial"]) > first


def test_a_search_cancelled_while_its_round_waits_takes_a_fresh_workspace():
    """The cancelled round's batch still leaves later and encodes its leaves
    into the workspace the search had; the search has a new one by then
    and searches on undisturbed."""
    async def main():
        g = random_game(9, 10, seed=8)
        bt = Batcher(RandomBackend("sayuri-v3", seed=2), 9, batch_size=64, timeout_ms=None)
        s = Search(SearchConfig(), "sayuri-v3", rng=np.random.default_rng(0))
        bt.attach()
        bt.attach()  # a client that never commits: the round waits until the batch is made to leave
        task = asyncio.ensure_future(s.run(g, bt, 50))
        for _ in range(100):
            await asyncio.sleep(0.001)
            if bt.counters.queue_depth:
                break
        old, old_boards, old_scratch = s.ws, s.boards, s.scratch
        assert bt.counters.queue_depth == 1 and old[0]["leaf_nmoves"][0] == 0  # the root waits, unencoded
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert s.ws is not old and s.boards is not old_boards and s.scratch is not old_scratch
        res = await s.run(g, InstantEvaluator(9, planes=43), 40)
        assert res.playouts == 40 and check_tree(s) > 0
        bt.batch_size = 1  # the old batch leaves now
        for _ in range(1000):
            await asyncio.sleep(0.001)
            if not bt.counters.queue_depth:
                break
        assert old[0]["leaf_nmoves"][0] == len(np.flatnonzero(g.legal_actions()))  # encoded there
        res = await s.run(g, InstantEvaluator(9, planes=43), 40)
        assert res.playouts == 40 and check_tree(s) > 0
        bt.close()

    asyncio.run(main())
