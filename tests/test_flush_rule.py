"""The flush rule when the device is the slow side (docs/engine.md, "The
flush rule"): full batches, a bounded number handed to the device, partial
batches only into an idle slot, groups of games merging, and the device
model's shared clock. Each of these failed under the old "flush whenever
every game waits" rule."""
import asyncio
import json
import multiprocessing as mp
import uuid

import numpy as np
import pytest
from helpers_batcher import FakeBackend, request

from sayuri_async.infer.batcher import Batcher
from sayuri_async.infer.flush import Event, QueueState, flush_reason
from sayuri_async.net.device_model import DeviceModelBackend


# ---- the rule as a table (infer/flush.py) ------------------------------------

F, B, P, R, T = Event.FILLED, Event.BLOCKED, Event.POLLED, Event.RETURNED, Event.TIMER
#  event, queued, batch_size, clients, waiting, age_s, timeout_s, idle_slot, device_empty -> reason
RULE = [
    ((F, 0, 4, 1, 1, 9.0, 0.005, True, True), None),  # nothing queued: nothing leaves, at any event
    ((T, 0, 4, 1, 1, 9.0, 0.005, True, True), None),
    ((F, 4, 4, 9, 0, 0.0, 0.005, False, False), "full"),  # full leaves even with no idle slot
    ((B, 4, 4, 9, 9, 0.0, 0.005, False, False), "full"),
    ((F, 5, 4, 9, 0, 0.0, None, False, False), "full"),  # batch_size lowered below what is queued
    ((P, 1, 1, 0, 0, 0.0, None, True, True), "full"),  # batch_size 1: every request is a batch
    ((F, 3, 4, 3, 3, 9.0, 0.005, True, True), None),  # a commit alone never sends a partial buffer
    ((B, 3, 4, 3, 3, 0.0, 0.005, True, True), "waiting"),  # every client waits, device idle
    ((B, 3, 4, 3, 3, 0.0, 0.005, False, False), None),  # ... but no idle slot: keep filling
    ((B, 3, 4, 4, 3, 9.0, 0.005, True, True), None),  # a block never sends on the timeout
    ((B, 3, 4, 0, 0, 0.0, None, True, True), "waiting"),  # no client attached counts as all waiting
    ((P, 3, 4, 2, 2, 0.0, 0.005, True, False), "waiting"),  # a client detached, the rest wait
    ((R, 3, 4, 2, 2, 0.0, 0.005, True, False), "waiting"),  # a batch returned, every client waits
    ((P, 3, 4, 4, 3, 0.005, 0.005, True, False), "timeout"),  # the oldest request waited timeout_s
    ((P, 3, 4, 4, 3, 0.004, 0.005, True, False), None),  # not yet
    ((P, 3, 4, 4, 3, 9.0, None, True, True), None),  # no timeout set
    ((P, 3, 4, 4, 3, 9.0, 0.005, False, False), None),  # timed out, but no idle slot
    ((R, 3, 4, 4, 3, 9.0, 0.005, True, False), None),  # just returned: its games are about to join
    ((R, 3, 4, 4, 3, 9.0, 0.005, True, True), "timeout"),  # ... unless the device is empty
    ((T, 3, 4, 4, 3, 0.0, 0.005, True, False), "timeout"),  # the timer ran out into an idle slot
    ((T, 3, 4, 3, 3, 0.0, 0.005, True, False), "timeout"),  # (the timer's reason even when all wait)
    ((T, 3, 4, 4, 3, 9.0, 0.005, False, False), None),  # held behind the device's work
]


@pytest.mark.parametrize("state, reason", RULE, ids=[f"{i}-{r}" for i, (_, r) in enumerate(RULE)])
def test_the_flush_rule(state, reason):
    assert flush_reason(*QueueState(*state)) == reason


async def client(bt: Batcher, tags: list[int]) -> list[float]:
    """A game: attached, one request per tag in turn, then gone."""
    bt.attach()
    try:
        return [await request(bt, t) for t in tags]
    finally:
        bt.detach()


def test_a_group_left_behind_merges_with_the_next_group_that_comes_back():
    """Three groups: 4 and 4 fill two batches (the device's two slots), the
    third group's 2 requests wait; when the first batch returns, its games
    commit again, and the next batch holds both groups."""
    async def main():
        be = FakeBackend()
        be.release.clear()  # the device is slow: nothing comes back until released
        bt = Batcher(be, 5, batch_size=4, timeout_ms=10_000)
        bt.attach()  # a game still searching: "every client waits" cannot fire
        g1 = [asyncio.ensure_future(client(bt, [1, 4])) for _ in range(4)]
        await asyncio.sleep(0.01)
        g2 = [asyncio.ensure_future(client(bt, [2])) for _ in range(4)]
        await asyncio.sleep(0.01)
        g3 = [asyncio.ensure_future(client(bt, [3])) for _ in range(2)]
        await asyncio.sleep(0.05)
        assert bt.dispatch.handed == 2 and bt.reserve()[1] == 2  # both slots taken: the 2 wait
        be.release.set()
        await asyncio.wait_for(asyncio.gather(*g2, *g3), 5)
        assert be.calls == [4, 4, 4]  # the third: group 3's two and two of group 1's second requests
        assert [t.result() for t in g3] == [[3.0], [3.0]]
        bt.detach()  # the searching game ends: the last two of group 1 leave
        await asyncio.wait_for(asyncio.gather(*g1), 5)
        assert be.calls == [4, 4, 4, 2]
        bt.close()

    asyncio.run(main())


def test_no_more_batches_are_handed_to_the_device_than_the_bound():
    async def main():
        be = FakeBackend()
        be.release.clear()
        bt = Batcher(be, 5, batch_size=2, timeout_ms=1.0)
        for _ in range(12):
            bt.attach()
        tasks = asyncio.ensure_future(asyncio.gather(*[request(bt, i) for i in range(12)]))
        await asyncio.sleep(0.05)
        assert bt.dispatch.handed == 2 and len(bt.dispatch.ready) == 4  # full batches queue behind
        be.release.set()
        await asyncio.wait_for(tasks, 5)
        assert bt.dispatch.most_handed == 2 and be.calls == [2] * 6
        bt.close()

    asyncio.run(main())


def test_a_partial_batch_leaves_when_the_device_goes_idle():
    async def main():
        be = FakeBackend()
        be.release.clear()
        bt = Batcher(be, 5, batch_size=4, timeout_ms=10_000)
        for _ in range(9):
            bt.attach()
        full = asyncio.ensure_future(asyncio.gather(*[request(bt, 1) for _ in range(8)]))
        await asyncio.sleep(0.02)
        part = asyncio.ensure_future(request(bt, 9))  # every client now waits
        await asyncio.sleep(0.05)
        assert not part.done() and be.calls == [] and bt.reserve()[1] == 1

        async def answered_then_leave(t):
            await t
            for _ in range(8):
                bt.detach()

        be.release.set()
        await asyncio.wait_for(asyncio.gather(answered_then_leave(full), part), 5)
        assert be.calls == [4, 4, 1] and bt.counters.flush["waiting"] == 1
        bt.close()

    asyncio.run(main())


def test_a_timeout_does_not_send_a_partial_batch_while_a_full_one_is_ready_behind_the_running_one():
    async def main():
        be = FakeBackend()
        be.release.clear()
        bt = Batcher(be, 5, batch_size=4, timeout_ms=2.0)
        for _ in range(20):  # many clients: "every client waits" never fires
            bt.attach()
        full = asyncio.ensure_future(asyncio.gather(*[request(bt, 1) for _ in range(8)]))
        await asyncio.sleep(0.01)
        part = asyncio.ensure_future(request(bt, 7))
        await asyncio.sleep(0.1)  # fifty timeouts' worth
        assert not part.done() and bt.counters.flush["timeout"] == 0 and bt.reserve()[1] == 1
        be.release.set()
        await asyncio.wait_for(asyncio.gather(full, part), 5)
        assert be.calls == [4, 4, 1] and bt.counters.flush["timeout"] == 1
        bt.close()

    asyncio.run(main())


def test_one_game_keeps_its_latency():
    """GTP's case: one client, one request at a time; each leaves at once."""
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=8, timeout_ms=10_000)
        bt.attach()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for i in range(20):
            assert await asyncio.wait_for(request(bt, i), 5) == float(i)
        assert loop.time() - t0 < 1.0 and bt.counters.flush["waiting"] == 20
        bt.close()

    asyncio.run(main())


# ---- the device model -------------------------------------------------------


def small_table(tmp_path, ms: dict[int, float], device: str | None = None) -> str:
    rows = [{"net": "t", "board": 9, "mode": "bf16graph", "batch": b, "ms": v} for b, v in ms.items()]
    p = tmp_path / "table.json"
    p.write_text(json.dumps({"device": device or f"test-{uuid.uuid4().hex[:8]}", "nets": rows}))
    return str(p)


def test_selfplay_on_a_slow_device_keeps_its_batches_full(tmp_path):
    """64 games of 9x9 at batch 32, a device of 3 ms a batch: after warm-up
    the average batch is at least 0.9 x batch_size (the old rule sent
    fragments of a few games)."""
    from sayuri_async.search.config import SearchConfig
    from sayuri_async.selfplay.config import SelfplayConfig
    from sayuri_async.selfplay.engine import Engine
    from sayuri_async.selfplay.runner import make_engine_backend

    cfg = SelfplayConfig(board_sizes=[9], num_games=0, parallel_games=64, batch_size=32, playouts=32,
                         out=str(tmp_path / "out"), write_sgf=False, writer_process=False, device="model",
                         device_model="t", device_table=small_table(tmp_path, {1: 2.0, 32: 3.0, 64: 4.0}),
                         search=SearchConfig(leaves_per_await=4))
    backend = make_engine_backend(cfg, cfg.device)

    async def main():
        engine = Engine(cfg, backend)
        run = asyncio.ensure_future(engine.run())
        await asyncio.sleep(1.0)
        s0 = engine.status()
        await asyncio.sleep(1.5)
        s1 = engine.status()
        engine.stop()
        await run
        engine.close()
        return s0, s1

    s0, s1 = asyncio.run(main())
    backend.close()
    evals = s1.counters.evals - s0.counters.evals
    batches = s1.counters.batches - s0.counters.batches
    assert batches > 50
    assert evals / batches >= 0.9 * 32
    # the curve's best: up to max_batch_size 256, past the table's last row extrapolated (10 ms at 256)
    assert s1.device_best == pytest.approx(256 / 0.010)


def _book(table: str, lock_dir: str, n: int, q) -> None:
    be = DeviceModelBackend("t", table, device="model:0", lock_dir=lock_dir, max_batch=8)
    be.intervals = []
    x = np.zeros((8, be.planes, 9, 9), dtype=np.uint8)
    for _ in range(n):
        be.run(x)
    q.put(be.intervals)


@pytest.mark.slow
def test_two_processes_on_one_modeled_device_never_overlap_their_batches(tmp_path):
    table = small_table(tmp_path, {8: 2.0})
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_book, args=(table, str(tmp_path), 25, q)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    ivs = sorted(iv for g in got for iv in g)
    assert len(ivs) == 50
    for (s0, e0), (s1, e1) in zip(ivs, ivs[1:]):
        assert s1 >= e0 - 1e-9  # the next batch starts after the last one ended
    span = ivs[-1][1] - ivs[0][0]
    assert span >= 50 * 0.002 - 1e-6  # the two processes' batches queued one after another


def test_the_device_model_pads_to_the_bucket_and_interpolates(tmp_path):
    be = DeviceModelBackend("t", small_table(tmp_path, {1: 1.0, 8: 2.0, 32: 5.0}), max_batch=32,
                            lock_dir=str(tmp_path))
    t = be.table
    assert t.forward_s(8) == pytest.approx(0.002) and t.forward_s(20) == pytest.approx(0.0035)
    assert t.forward_s(64) == pytest.approx(0.009)  # past the last row: the last two rows' slope
    assert be.bucket(5) == 8 and be.bucket(17) == 32
    out = be.run(np.zeros((5, be.planes, 9, 9), dtype=np.uint8))
    assert out.device_s == pytest.approx(0.002) and out.policy.shape == (5, 82)  # padded to 8
    rates = be.measure_rates(9, 32)
    assert rates[32] == pytest.approx(32 / 0.005) and max(rates.values()) == pytest.approx(32 / 0.005)
