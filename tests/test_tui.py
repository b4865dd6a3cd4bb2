"""The live view rendered with fixed figures, and the tuning keys (without a
terminal, and through a pseudo-terminal for cbreak mode and its restore)."""
from __future__ import annotations

import os
import termios
import time
from dataclasses import replace

import numpy as np
import pytest
from rich.console import Console

from sayuri_async.infer.stats import FLUSH_REASONS, HIST_BINS, Counters
from sayuri_async.net.backends import RandomBackend
from sayuri_async.search.config import SearchConfig
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.engine import Engine
from sayuri_async.selfplay.game import LiveGame
from sayuri_async.selfplay.keys import KeyHandler, KeyReader, step_timeout
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.selfplay.tui import GpuProbe, TuiReporter, histogram_bins, sparkline


ONE_LEAF = SearchConfig(leaves_per_await=1)


def status(t: float, evals_s: float, batch: int, games: int, *, busy: float, loop: float, pid: int = 1,
           waiting: float = 0.0, avg: float | None = None, paused: bool = False) -> Status:
    avg = avg or batch
    batches = evals_s * t / avg
    hist = np.zeros(HIST_BINS, dtype=np.int64)
    hist[int(avg)] = int(batches)
    flush = {"full": int(batches * (1 - waiting)), "waiting": int(batches * waiting), "timeout": 0}
    assert set(flush) == set(FLUSH_REASONS)
    c = Counters(evals=int(evals_s * t), batches=int(batches), flush=flush, busy_s=busy * t,
                 queue_wait_s=0.0015 * evals_s * t, cache_lookups=0, cache_hits=0, requests=int(evals_s * t),
                 playouts=int(evals_s * t), moves=int(evals_s * t / 50), games=int(t / 4),
                 positions=int(evals_s * t / 50), hist=hist, queue_depth=17, in_flight=2)
    return Status(t=500.0 + t, elapsed=t, warm_at=0.0, loop_cpu_s=loop * t, counters=c,
                  settings=EngineSettings(batch_size=batch, parallel_games=games, timeout_ms=5.0, paused=paused,
                                          device="cuda:0"),
                  games=[LiveGame(size=9, move=30 + i, playouts=64, value=0.25 + i / 100) for i in range(6)],
                  finished=11, chunks=1, positions_written=700, pid=pid)


def render(rep: TuiReporter) -> str:
    rep.console.print(rep.view())
    return rep.console.export_text()


def make(cfg: SelfplayConfig | None = None) -> TuiReporter:
    cfg = cfg or SelfplayConfig(num_games=20, batch_size=32, parallel_games=64, search=ONE_LEAF)
    return TuiReporter(cfg, console=Console(record=True, width=160, height=50), interactive=False,
                       probe=GpuProbe(["cpu"]))


def feed(rep: TuiReporter, statuses_at, seconds: float = 6.0) -> None:
    for k in range(1, int(seconds / 0.5) + 1):
        rep.update(statuses_at(k * 0.5))


def test_view_shows_figures_and_cpu_bound_verdict():
    rep = make()
    feed(rep, lambda t: [status(t, 20000, 32, 64, busy=0.33, loop=0.99)])
    text = render(rep)
    assert "device cpu" in text and "board 9x9" in text and "procs 1" in text
    assert "elapsed 0:00:06" in text and "games 11/20 done, 6 live" in text
    # 0.99 s of loop CPU per second over 20,000 requests per second: 49.5 us each
    assert "CPU-bound: loop 99% busy (49.5 us of CPU per request), GPU 33%" in text
    assert "loop CPU per request  49.5 us: at most 20k requests/s per process" in text
    assert "20.0k" in text  # nnEvals/s
    assert "625" in text  # nnBatches/s
    assert "32.0 / 32" in text  # avgBatchSize against batch_size
    assert "backend busy" in text and "33%" in text
    assert "no CUDA device in use" in text  # NVML line degrades
    assert "loop busy p0" in text and "99%" in text
    assert "17 requests, 2 batch(es) in flight" in text and "1.50 ms per request" in text
    assert "rule of thumb         64  = 2 x batch_size" in text
    assert "all waiting" in text and "timeout" in text and "100%" in text
    assert "games in progress (6)" in text and "0.30" in text
    assert "b/B" in text and "pause/resume" in text and "quit" in text


def test_view_starved_and_two_processes():
    rep = make(SelfplayConfig(batch_size=32, parallel_games=24, procs=2, device="cpu", search=ONE_LEAF))
    feed(rep, lambda t: [status(t, 8000, 32, 24, busy=0.2, loop=0.5, pid=1, waiting=1.0, avg=12),
                         status(t, 8000, 32, 24, busy=0.2, loop=0.4, pid=2, waiting=1.0, avg=12)])
    text = render(rep)
    assert "starved" in text and "parallel_games 24 < 2 x batch_size 32 = 64" in text
    assert "loop busy p0" in text and "loop busy p1" in text
    assert "16.0k" in text  # evals/s summed over processes
    assert "12.0 / 32" in text


def test_view_gpu_bound_on_cuda_with_fake_nvml():
    class Probe:
        available = True
        why = ""

        def read(self):
            return [("cuda:0", 0.97, 20.5, 140.0)]

    cfg = SelfplayConfig(batch_size=256, parallel_games=512, device="cuda:0")
    rep = TuiReporter(cfg, console=Console(record=True, width=160, height=50), interactive=False, probe=Probe())
    feed(rep, lambda t: [status(t, 22000, 256, 512, busy=0.98, loop=0.6)])
    text = render(rep)
    assert "GPU-bound: GPU 98% busy" in text
    assert "GPU busy" in text and "cuda:0 driver" in text and "mem 20.5/140 GiB" in text


def test_rule_of_thumb_counts_leaves_per_await():
    cfg = SelfplayConfig(batch_size=32, parallel_games=24, search=SearchConfig(leaves_per_await=4))
    rep = make(cfg)
    feed(rep, lambda t: [status(t, 8000, 32, 24, busy=0.3, loop=0.8)])
    text = render(rep)
    assert "starved" not in text and "rule of thumb         16  = 2 x batch_size / leaves" in text
    assert "leaves_per_await       4" in text
    rep = make(replace(cfg, parallel_games=8))
    feed(rep, lambda t: [status(t, 8000, 32, 8, busy=0.3, loop=0.6, waiting=1.0, avg=20)])
    assert "parallel_games 8 < 2 x batch_size 32 / leaves_per_await 4 = 16: raise parallel_games to 16" in render(rep)
    rep.press("a")
    assert rep.update([status(6.5, 8000, 32, 8, busy=0.3, loop=0.6)]) == [{"parallel_games": 16}]


def test_keys_return_controls_from_update():
    rep = make()
    st = [status(1.0, 10000, 32, 64, busy=0.5, loop=0.5)]
    rep.update(st)
    rep.press("B")
    assert rep.update(st) == [{"batch_size": 64}]
    # the status still says 32: the pending change compounds
    rep.press("BG")
    assert rep.update(st) == [{"batch_size": 128}, {"parallel_games": 128}]
    rep.press("a")
    assert rep.update(st) == [{"parallel_games": 256}]
    rep.press("p")
    assert rep.update(st) == [{"pause": True}]
    assert "PAUSED" in render(rep)
    rep.press("p q")
    assert rep.update(st) == [{"pause": False}, {"pause": True}, {"stop": True}]
    assert rep.update(st) == []


def test_key_handler_fields_selection_and_limits():
    k = KeyHandler(max_batch=64)
    s = EngineSettings(batch_size=32, parallel_games=64, timeout_ms=5.0, paused=False)
    assert k.feed("+", s) == [{"batch_size": 64}]
    assert k.feed("+", s) == [] and "limit" in k.message
    assert k.feed("\t-", s) == [{"parallel_games": 32}]
    assert k.feed("\x1b[C", s) == [] and k.selected == "timeout_ms"  # right arrow
    assert k.feed("\x1b[A", s) == [{"timeout_ms": 10.0}]  # up arrow
    assert k.feed("tt", s) == [{"timeout_ms": 5.0}, {"timeout_ms": 2.0}]
    assert k.feed("bbbbbbbbb", s)[-1] == {"batch_size": 1}
    assert k.feed("x?", s) == []
    assert step_timeout(0.0, False) == 0.0 and step_timeout(200.0, True) == 200.0
    capped = KeyHandler(max_batch=32, batch_cap_note="built for 32")
    assert capped.feed("B", EngineSettings(batch_size=32)) == [] and "built for 32" in capped.message


@pytest.mark.slow
def test_keys_change_an_engine_settings(tmp_path):
    cfg = SelfplayConfig(batch_size=16, parallel_games=32, timeout_ms=5.0, out=str(tmp_path), write_sgf=False,
                         search=ONE_LEAF)
    engine = Engine(cfg, RandomBackend())
    try:
        rep = make(cfg)
        rep.update([engine.status()])
        rep.press("BGtp")
        for cmd in rep.update([engine.status()]):
            engine.control(cmd)
        st = engine.status().settings
        assert st == EngineSettings(batch_size=32, parallel_games=64, timeout_ms=2.0, paused=True, device="cpu",
                                    leaves_per_await=1, batches_in_flight=2, max_batch_size=256)
        assert all(b.batch_size == 32 for b in engine.batchers.values())
    finally:
        engine.close()


def test_the_batch_key_cap_follows_max_batch_size():
    """B raises batch_size on a network's backend too, up to max_batch_size
    (default: 4 x batch_size, at least 256), and says why it stops there."""
    rep = make(SelfplayConfig(batch_size=64, parallel_games=128, weights="net.safetensors"))
    rep.update([status(1.0, 1000, 64, 128, busy=0.5, loop=0.5)])
    rep.press("B")
    assert rep.update([status(1.5, 1000, 64, 128, busy=0.5, loop=0.5)]) == [{"batch_size": 128}]
    rep = make(SelfplayConfig(batch_size=16, parallel_games=32, max_batch_size=32, weights="net.safetensors"))
    rep.update([status(1.0, 1000, 16, 32, busy=0.5, loop=0.5)])
    rep.press("B")
    assert rep.update([status(1.5, 1000, 16, 32, busy=0.5, loop=0.5)]) == [{"batch_size": 32}]
    rep.press("B")
    assert rep.update([status(2.0, 1000, 32, 32, busy=0.5, loop=0.5)]) == []
    assert "larger --max-batch-size" in render(rep)


def test_an_engine_never_takes_a_batch_above_max_batch_size(tmp_path):
    cfg = SelfplayConfig(batch_size=16, max_batch_size=64, out=str(tmp_path), write_sgf=False, writer_process=False,
                         search=ONE_LEAF)
    engine = Engine(cfg, RandomBackend())
    try:
        engine.control({"batch_size": 512})
        assert engine.status().settings.batch_size == 64 and engine.status().settings.max_batch_size == 64
        assert all(b.batch_size == 64 and b.max_batch >= 64 for b in engine.batchers.values())
    finally:
        engine.close()


def test_key_reader_cbreak_and_restore():
    master, slave = os.openpty()
    try:
        stream = os.fdopen(slave, "r", closefd=False)
        before = termios.tcgetattr(slave)
        reader = KeyReader(stream)
        assert reader.start()
        during = termios.tcgetattr(slave)
        assert not during[3] & termios.ICANON and not during[3] & termios.ECHO
        assert during[3] & termios.ISIG  # Ctrl-C still interrupts
        os.write(master, b"B+q")
        deadline = time.monotonic() + 2.0
        got = ""
        while len(got) < 3 and time.monotonic() < deadline:
            got += reader.drain()
            time.sleep(0.01)
        assert got == "B+q"
        reader.stop()
        assert termios.tcgetattr(slave) == before
        reader.stop()  # twice is harmless
    finally:
        os.close(master)
        os.close(slave)


def test_key_reader_without_terminal(tmp_path):
    with open(tmp_path / "f", "w+") as f:
        r = KeyReader(f)
        assert not r.start() and not r.active and r.drain() == ""
        r.stop()


def test_helpers():
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "▁▁"
    line = sparkline([1, 2, 3, 4, 5, 6, 7, 8] * 10, width=16)
    assert len(line) == 16
    assert sparkline([0, 1]) == "▁█"
    bins = histogram_bins(np.bincount([32] * 5 + [10] * 3, minlength=HIST_BINS), 32)
    assert bins[-1] == ("29-32", 5) and sum(n for _, n in bins) == 8
    assert histogram_bins(np.zeros(HIST_BINS), 1) == [("1", 0)]


def test_gpu_probe_degrades():
    p = GpuProbe(["cpu"])
    assert not p.available and p.why == "no CUDA device in use" and p.read() == []
    try:
        import pynvml  # noqa: F401
    except ImportError:
        p = GpuProbe(["cuda:0"])
        assert not p.available and p.why == "nvidia-ml-py not installed"


def test_the_live_view_and_the_plain_line_give_the_same_verdict():
    """Fed the same statuses, the TUI's verdict and the plain line's are one
    text, warming up included (a status before the first move has no
    ``warm_at``: no rate is shown while numba loads and games open)."""
    import io

    from sayuri_async.selfplay.report import PlainReporter, diagnose

    cfg = SelfplayConfig(num_games=20, batch_size=32, parallel_games=64, search=SearchConfig(leaves_per_await=4))
    for loop, busy, warm in ((0.99, 0.2, True), (0.3, 0.1, True), (0.5, 0.5, False)):
        rep, out = make(cfg), io.StringIO()
        plain = PlainReporter(every=0.0, stream=out, leaves_per_await=4)
        for k in range(1, 13):
            st = status(k * 0.5, 20000, 32, 64, busy=busy, loop=loop)
            if not warm:
                st.warm_at = None
            rep.update([st])
            plain.update([st])
        tui_text = diagnose(rep.recent, rep.settings()).text
        assert tui_text in out.getvalue().splitlines()[-1]
        if not warm:
            assert tui_text.startswith("warming up") and "evals/s" not in out.getvalue()


CURVE = {1: 900.0, 2: 1700.0, 4: 3200.0, 8: 6000.0, 16: 11000.0, 32: 20500.0, 64: 26000.0, 128: 27000.0,
         256: 27100.0}


def with_curve(t: float, rates: dict | None = None) -> list[Status]:
    """A device busy on full batches of 32 whose curve promises more at 64."""
    s = status(t, 20000, 32, 64, busy=0.9, loop=0.5)
    s.device_rates = dict(CURVE if rates is None else rates)
    s.device_best = max(s.device_rates.values(), default=0.0)
    return [s]


def curve_rows(text: str) -> dict[int, str]:
    """The curve panel's rows by bucket, from the rendered view: each row is
    '<bucket> <bar> <rate>[ ◀ mark]', found by its eighth-block bar."""
    import re

    rows = {}
    for line in text.splitlines():
        for m in re.finditer(r"(?<!\d)(\d+) ([█▏▎▍▌▋▊▉]*·*) +([\d.]+k?)( ◀ \w+(?: \d+)?)?", line):
            if m.group(2) and (m.group(4) or m.group(3) in {"900", "1.7k", "3.2k", "6.0k", "11k", "20k", "26k", "27k"}):
                rows[int(m.group(1))] = m.group(0)
    return rows


def test_view_shows_the_device_curve_with_the_batch_and_the_advice_marked():
    rep = make()  # 160 x 50
    feed(rep, with_curve)
    text = render(rep)
    assert "raise batch_size to 64" in text
    assert "device evals/s per batch (1 more)" in text  # 9 buckets, 8 rows: the smallest left out
    rows = curve_rows(text)
    assert sorted(rows) == [2, 4, 8, 16, 32, 64, 128, 256]
    assert rows[32].endswith("20k ◀ now") and rows[64].endswith("26k ◀ advised")
    assert "◀" not in rows[128] + rows[16]
    bars = {b: row.split(" ")[1] for b, row in rows.items()}
    assert bars[256] == "█" * 20  # scaled to the best rate
    assert bars[32].startswith("█" * 15) and not bars[32].startswith("█" * 16)  # 20.5k / 27.1k of 20 cells
    assert "flush reasons" in text and "settings (per process)" in text  # still there, under the settings

    # an 80 x 24 terminal: the curve beside throughput, and the keys still at the bottom
    small = TuiReporter(rep.cfg, console=Console(record=True, width=80, height=24), interactive=False,
                        probe=GpuProbe(["cpu"]))
    feed(small, with_curve)
    small.console.print(small.view(), no_wrap=True, overflow="crop")  # as the live display draws it
    text = small.console.export_text()
    lines = text.splitlines()
    assert len(lines) <= 24 and "selected:" in lines[-1]
    assert all(len(line) <= 80 for line in lines)
    rows = curve_rows(text)
    assert rows[32].endswith("◀ now") and rows[64].endswith("◀ advised") and len(rows) == 7
    assert any(line.startswith("nnEvals/s") and "   4 █" in line for line in lines)  # side by side


def test_the_curve_marks_a_batch_between_buckets_and_is_absent_without_rates():
    rep = make()
    feed(rep, lambda t: with_curve(t, {8: 6000.0, 16: 11000.0, 32: 20500.0}))
    rep.press("b")  # 32 -> 16: a bucket of its own
    rep.update(with_curve(6.5, {8: 6000.0, 16: 11000.0, 32: 20500.0}))
    assert curve_rows(render(rep))[16].endswith("◀ now")
    rep = make()
    for k in range(1, 13):
        st = with_curve(k * 0.5, {8: 6000.0, 32: 20500.0})
        st[0].settings.batch_size = 24
        rep.update(st)
    rows = curve_rows(render(rep))
    assert sorted(rows) == [8, 32] and rows[32].endswith("◀ now 24")
    rep = make()
    feed(rep, lambda t: with_curve(t, {}))  # the random network measures nothing
    text = render(rep)
    assert "device evals/s per batch" not in text and "flush reasons" in text


def test_curve_lines_pick_rows_from_the_current_bucket_up():
    from sayuri_async.selfplay.curve_view import bucket_of, curve_lines, fine_bar, shown_buckets

    buckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert shown_buckets(buckets, 16, 4) == [16, 32, 64, 128]
    assert shown_buckets(buckets, 512, 4) == [128, 256, 512, 1024]  # as far below as the rows above run out
    assert shown_buckets(buckets[:3], 1, 4) == [1, 2, 4]
    assert bucket_of({8: 1.0, 32: 1.0}, 9) == 32 and bucket_of({8: 1.0}, 9) is None
    assert fine_bar(1.0, 4) == "████" and fine_bar(0.0, 4) == "····"
    assert fine_bar(0.5 + 1 / 16, 4) == "██▎·"  # 2 cells and 2 eighths
    assert curve_lines({}, 32, 40) == [] and curve_lines({8: 0.0}, 32, 40) == []
    lines = [t.plain for t in curve_lines({8: 100.0, 16: 200.0}, 16, 40, advised=16)]
    assert lines[2].endswith("◀ now") and "advised" not in " ".join(lines)  # the advice is the batch itself
