import asyncio
import threading

import numpy as np
import pytest

from helpers_batcher import FakeBackend, request

from sayuri_async.infer.batcher import Batcher
from sayuri_async.net.backends import NetOutput


def test_flush_when_full():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=4, timeout_ms=10_000)
        for _ in range(10):
            bt.attach()
        res = await asyncio.wait_for(asyncio.gather(*[request(bt, i + 1) for i in range(4)]), 5)
        assert res == [1.0, 2.0, 3.0, 4.0]  # each answer is its own request's
        assert bt.counters.flush == {"full": 1, "waiting": 0, "timeout": 0}
        assert be.calls == [4]
        bt.close()

    asyncio.run(main())


def test_flush_when_every_client_waits():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=8, timeout_ms=10_000)
        for _ in range(3):
            bt.attach()
        res = await asyncio.wait_for(asyncio.gather(*[request(bt, i + 7) for i in range(3)]), 5)
        assert res == [7.0, 8.0, 9.0]
        assert bt.counters.flush["waiting"] == 1 and bt.counters.flush["full"] == 0
        assert be.calls == [3]
        bt.close()

    asyncio.run(main())


def test_flush_on_timeout():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=8, timeout_ms=30)
        for _ in range(3):
            bt.attach()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        res = await asyncio.wait_for(request(bt, 5), 5)
        waited = loop.time() - t0
        assert res == 5.0
        assert bt.counters.flush == {"full": 0, "waiting": 0, "timeout": 1}
        assert 0.025 <= waited < 2.0
        bt.close()

    asyncio.run(main())


def test_detach_of_the_last_busy_client_flushes():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=8, timeout_ms=10_000)
        bt.attach()
        bt.attach()
        task = asyncio.ensure_future(request(bt, 3))
        await asyncio.sleep(0.05)
        assert not task.done()  # one of two clients waits: no flush yet
        bt.detach()  # the other leaves: nothing more can arrive
        assert await asyncio.wait_for(task, 5) == 3.0
        assert bt.counters.flush["waiting"] == 1
        bt.close()

    asyncio.run(main())


def test_next_batch_fills_while_one_is_in_flight():
    async def main():
        be = FakeBackend()
        be.release.clear()  # hold the worker
        bt = Batcher(be, 5, batch_size=2, timeout_ms=10_000)
        for _ in range(8):
            bt.attach()
        first = asyncio.ensure_future(asyncio.gather(request(bt, 1), request(bt, 2)))
        await asyncio.sleep(0.02)
        second = asyncio.ensure_future(asyncio.gather(request(bt, 3), request(bt, 4)))
        await asyncio.sleep(0.02)
        # the loop stayed free: the second batch was filled and dispatched
        assert bt.counters.in_flight == 2 and bt.counters.queue_depth == 4
        be.release.set()
        assert await asyncio.wait_for(first, 5) == [1.0, 2.0]
        assert await asyncio.wait_for(second, 5) == [3.0, 4.0]
        assert be.calls == [2, 2]
        bt.close()

    asyncio.run(main())


def test_batch_size_change_applies_at_next_flush():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=2, timeout_ms=10_000)
        for _ in range(10):
            bt.attach()
        bt.batch_size = 4  # larger than the buffers: they are replaced
        res = await asyncio.wait_for(asyncio.gather(*[request(bt, i) for i in range(4)]), 5)
        assert res == [0.0, 1.0, 2.0, 3.0]
        assert be.calls == [4]
        bt.close()

    asyncio.run(main())


def test_cache_returns_copies_of_rows():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=1, timeout_ms=10_000, cache_size=4)
        bt.attach()
        arr, slot, _ = bt.reserve()
        arr[slot, 0, 0, 0] = 9
        out = await bt.commit()
        bt.cache_put(1234, out, slot)
        out.policy[slot] = -1.0  # the batch's arrays may be reused: the cache keeps its own copy
        hit = bt.cache_get(1234)
        assert hit is not None and hit[2] == 9.0
        assert np.all(hit[0] > 0) and abs(float(hit[0].sum()) - 1.0) < 1e-5
        assert bt.cache_get(999) is None
        assert bt.counters.cache_hits == 1 and bt.counters.cache_lookups == 2
        bt.close()

    asyncio.run(main())


def test_a_client_with_several_requests_counts_once_when_it_blocks():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=16, timeout_ms=10_000)
        bt.attach()
        bt.attach()
        futs = []
        for tag in (1, 2, 3):  # client A: three leaves, then it blocks
            arr, slot, _ = bt.reserve()
            arr[slot, 0, 0, 0] = tag
            futs.append(bt.commit(final=False))
        bt.block()
        await asyncio.sleep(0.02)
        assert be.calls == []  # client B has not blocked: no flush yet
        arr, slot, _ = bt.reserve()
        arr[slot, 0, 0, 0] = 4
        last = bt.commit()  # client B's single request: now both wait
        res = await asyncio.wait_for(asyncio.gather(*futs, last), 5)
        assert all(o is res[0] for o in res)  # one batch, one answer
        assert [float(x) for x in res[0].score] == [1.0, 2.0, 3.0, 4.0]
        assert be.calls == [4] and bt.counters.flush["waiting"] == 1
        assert bt.waiting == 0
        bt.close()

    asyncio.run(main())


def test_commits_of_consecutive_slots_are_answered_at_their_slots():
    async def main():
        be = FakeBackend()
        bt = Batcher(be, 5, batch_size=8, timeout_ms=10_000)
        bt.attach()
        bt.attach()
        arr, slot, room = bt.reserve()
        assert (slot, room) == (0, 8)
        arr[0:3, 0, 0, 0] = (5, 6, 7)
        a = bt.commit(3)  # client A: a round of three leaves, then it blocks
        arr, slot, room = bt.reserve()
        assert (slot, room) == (3, 5)
        arr[slot, 0, 0, 0] = 8
        b = bt.commit(1)  # client B: now every client waits
        out_a, out_b = await asyncio.wait_for(asyncio.gather(a, b), 5)
        assert [float(out_a.score[i]) for i in range(3)] == [5.0, 6.0, 7.0]
        assert float(out_b.score[3]) == 8.0
        assert be.calls == [4] and bt.counters.evals == 4 and bt.waiting == 0
        assert bt.counters.queue_depth == 0
        bt.close()

    asyncio.run(main())


def test_a_commit_larger_than_the_batch_is_refused():
    async def main():
        bt = Batcher(FakeBackend(), 5, batch_size=4, timeout_ms=10_000)
        bt.attach()
        with pytest.raises(ValueError, match="overflows"):
            bt.commit(5)
        bt.close()

    asyncio.run(main())


def test_inline_batcher_runs_the_backend_on_the_loop_thread_and_keeps_the_flush_rules():
    async def main():
        be = FakeBackend()
        threads = []
        run = be.run
        be.run = lambda batch: (threads.append(threading.current_thread()), run(batch))[1]
        bt = Batcher(be, 5, batch_size=2, timeout_ms=10_000, inline=True)
        assert bt.worker is None
        bt.attach()
        bt.attach()
        bt.attach()
        full = await asyncio.wait_for(asyncio.gather(request(bt, 1), request(bt, 2)), 5)  # batch_size reached
        assert full == [1.0, 2.0] and bt.counters.flush["full"] == 1
        bt.detach()
        bt.detach()
        alone = await asyncio.wait_for(request(bt, 3), 5)  # the only client waits
        assert alone == 3.0 and bt.counters.flush["waiting"] == 1
        assert threads == [threading.main_thread()] * 2
        assert bt.waiting == 0 and bt.counters.queue_depth == 0
        bt.close()

    asyncio.run(main())


async def one_failing_batch(bt: Batcher, size: int) -> list:
    """``size`` clients each send one request (a full batch); their answers
    or errors, in order."""
    for _ in range(size):
        bt.attach()
    return await asyncio.wait_for(
        asyncio.gather(*[request(bt, i + 1) for i in range(size)], return_exceptions=True), 5)


def test_a_failing_backend_answers_every_request_of_its_batch_with_the_error():
    async def main():
        be = FakeBackend()

        def broken(batch):
            raise RuntimeError("device lost")

        be.run = broken
        bt = Batcher(be, 5, batch_size=3, timeout_ms=10_000)
        res = await one_failing_batch(bt, 3)
        assert [str(r) for r in res] == ["device lost"] * 3
        assert bt.waiting == 0 and bt.counters.queue_depth == 0 and bt.counters.in_flight == 0
        bt.close()

    asyncio.run(main())


def test_requests_flushed_to_a_shut_down_worker_fail_instead_of_waiting_forever():
    async def main():
        bt = Batcher(FakeBackend(), 5, batch_size=2, timeout_ms=10_000)
        bt.worker.shutdown(wait=True)
        res = await one_failing_batch(bt, 2)
        assert all(isinstance(r, RuntimeError) and "shut down" in str(r) for r in res)
        assert bt.waiting == 0 and bt.counters.in_flight == 0
        bt.close()

    asyncio.run(main())


def test_a_failure_of_the_worker_outside_the_backend_still_answers_the_batch():
    async def main():
        bt = Batcher(FakeBackend(), 5, batch_size=2, timeout_ms=10_000)

        def broken_run(arr, count, preparations):
            raise MemoryError("no room for the batch")

        bt._launch = broken_run  # fails in the worker thread, around the backend call
        res = await one_failing_batch(bt, 2)
        assert all(isinstance(r, MemoryError) for r in res)
        bt.close()

    asyncio.run(main())


def test_preparations_write_the_rows_in_the_worker_thread_before_the_backend_one_call_per_kind():
    async def main():
        be = FakeBackend()
        seen = []
        run = be.run
        be.run = lambda batch: (seen.append(("backend", batch[:, 0, 0, 0].tolist())), run(batch))[1]

        def tags(items, planes):  # item: (slot, tag)
            seen.append(("tags", threading.current_thread() is threading.main_thread(), list(items)))
            for slot, tag in items:
                planes[slot, 0, 0, 0] = tag

        def other(items, planes):
            seen.append(("other", list(items)))
            for slot in items:
                planes[slot, 0, 0, 0] = 9

        bt = Batcher(be, 5, batch_size=4, timeout_ms=10_000)
        for _ in range(3):
            bt.attach()
        arr, slot, _ = bt.reserve()
        a = bt.commit(2, prepare=(tags, (0, 5)))  # rows 0 and 1: the preparation writes row 0 only
        arr[1, 0, 0, 0] = 6  # a client may also write a row itself
        b = bt.commit(1, prepare=(tags, (2, 7)))
        c = bt.commit(1, prepare=(other, 3))  # full: the batch leaves
        outs = await asyncio.wait_for(asyncio.gather(a, b, c), 5)
        assert seen == [("tags", False, [(0, 5), (2, 7)]), ("other", [3]), ("backend", [5.0, 6.0, 7.0, 9.0])]
        assert [float(x) for x in outs[0].score] == [5.0, 6.0, 7.0, 9.0]
        assert bt.counters.encode_s > 0.0
        bt.close()

    asyncio.run(main())


def test_a_failing_preparation_answers_its_batch_with_the_error_and_the_next_batch_runs():
    async def main():
        be = FakeBackend()

        def broken(items, planes):
            raise IndexError("row out of range")

        bt = Batcher(be, 5, batch_size=1, timeout_ms=10_000)
        bt.attach()
        with pytest.raises(IndexError, match="row out of range"):
            await asyncio.wait_for(bt.commit(1, prepare=(broken, None)), 5)
        assert be.calls == [] and bt.waiting == 0 and bt.counters.in_flight == 0
        assert await asyncio.wait_for(request(bt, 4), 5) == 4.0
        bt.close()

    asyncio.run(main())
