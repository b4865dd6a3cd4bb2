"""Figures from statuses, the verdict for constructed figures of each kind,
and the plain reporter."""
from __future__ import annotations

import io
from dataclasses import fields, replace

import numpy as np
import pytest

from sayuri_async.infer.stats import FLUSH_REASONS, HIST_BINS, Counters
from sayuri_async.selfplay.game import LiveGame
from sayuri_async.selfplay.report import (
    KINDS, Figures, PlainReporter, Window, aggregate, diagnose, figures, summary_lines, verdict,
)
from sayuri_async.selfplay.status import EngineSettings, Status

# a figure's JSON name (``nnEvals/s``, ...) -> its field
FIELD = {f.metadata.get("key", f.name): f.name for f in fields(Figures)}


def make_status(t: float, evals_s: float, batch: int, games: int, *, busy: float = 0.3, loop: float = 0.5,
                pid: int = 1, flush: dict | None = None, avg: float | None = None, paused: bool = False,
                evals: float | None = None) -> Status:
    """A status after ``t`` seconds at constant rates (``evals``: the total instead)."""
    avg = avg or batch
    evals = evals_s * t if evals is None else evals
    batches = evals / avg
    hist = np.zeros(HIST_BINS, dtype=np.int64)
    hist[int(avg)] = int(batches)
    share = flush or {"full": 1.0, "waiting": 0.0, "timeout": 0.0}
    c = Counters(evals=int(evals), batches=int(batches),
                 flush={k: int(batches * share[k]) for k in FLUSH_REASONS}, busy_s=busy * t,
                 queue_wait_s=0.002 * evals_s * t, cache_lookups=0, cache_hits=0, requests=int(evals_s * t),
                 playouts=int(evals_s * t), moves=int(evals_s * t / 64), games=int(t / 2),
                 positions=int(evals_s * t / 64), hist=hist, queue_depth=7, in_flight=1)
    return Status(t=1000.0 + t, elapsed=t, warm_at=0.0, loop_cpu_s=loop * t, counters=c,
                  settings=EngineSettings(batch_size=batch, parallel_games=games, timeout_ms=5.0, paused=paused),
                  games=[LiveGame(size=9, move=10 + i, playouts=64, value=0.5) for i in range(5)],
                  finished=int(t / 2), chunks=0, positions_written=0, pid=pid)


def fig(**kw) -> Figures:
    """Figures given by their JSON names; ``loop_busy_max`` is ``loop_busy``
    unless given (one process)."""
    base = {"nnEvals/s": 10000.0, "avgBatchSize": 32.0, "gpu_busy": 0.5, "loop_busy": 0.5,
            "flush_share": {"full": 1.0, "waiting": 0.0, "timeout": 0.0}}
    base.update(kw)
    base.setdefault("loop_busy_max", base["loop_busy"])
    return Figures(**{FIELD[k]: v for k, v in base.items()})


S = EngineSettings(batch_size=32, parallel_games=64, timeout_ms=5.0, paused=False, device="cuda:0")


def with_(settings: EngineSettings, **kw) -> EngineSettings:
    return replace(settings, **kw)


RATES = {"16": 5000.0, "32": 10000.0, "64": 20000.0}  # a device that does twice as much per doubling


@pytest.mark.parametrize("r, settings, kind, advice", [
    (None, S, "warming up", {}),
    (Figures(warming=True, elapsed=3.0), S, "warming up", {}),
    (fig(), with_(S, paused=True), "paused", {}),
    (fig(loop_busy=0.99, gpu_busy=0.33, procs=1, cores=2), S, "CPU-bound", {"procs": 2}),
    (fig(loop_busy_max=0.97, loop_busy=0.6, gpu_busy=0.2, procs=2, cores=2), S, "CPU-bound", {}),
    (fig(loop_busy=0.99, gpu_busy=0.33, procs=4, cores=16), S, "CPU-bound", {"procs": 8}),
    (fig(loop_busy=0.5, encode_busy=0.95, gpu_busy=0.4, procs=1, cores=4), S, "CPU-bound", {"procs": 2}),
    (fig(avgBatchSize=12.0, loop_busy=0.4, gpu_busy=0.4), with_(S, parallel_games=24), "starved",
     {"parallel_games": 64}),
    (fig(avgBatchSize=10.0, gpu_busy=0.95), with_(S, parallel_games=24), "starved", {"parallel_games": 64}),
    (fig(avgBatchSize=10.0, gpu_busy=0.95), with_(S, batches_in_flight=4), "fragmented", {"batches_in_flight": 2}),
    (fig(avgBatchSize=10.0, gpu_busy=0.95), S, "fragmented", {"parallel_games": 128}),
    (fig(**{"nnEvals/s": 9700.0}, gpu_busy=0.97, loop_busy=0.3, device_rates=RATES), S, "batch too small",
     {"batch_size": 64, "parallel_games": 128}),
    (fig(**{"nnEvals/s": 9700.0}, gpu_busy=0.97, loop_busy=0.6, device_rates=RATES), S, "device-bound", {}),
    (fig(gpu_busy=0.97, loop_busy=0.3, device_rates={"32": 10000.0, "64": 10500.0}), S, "device-bound", {}),
    (fig(gpu_busy=0.97, loop_busy=0.6, avgBatchSize=250.0), with_(S, batch_size=256, parallel_games=512),
     "device-bound", {}),
    (fig(loop_busy=0.3, gpu_busy=0.2, host_load=2.5, cores=2, procs=1), S, "contended", {}),
    (fig(loop_busy=0.3, gpu_busy=0.2, host_load=2.5, cores=2, procs=2), S, "latency-bound", {"parallel_games": 128}),
    (fig(loop_busy=0.3, gpu_busy=0.2), S, "latency-bound", {"parallel_games": 128}),
    (fig(loop_busy=0.8, gpu_busy=0.75), S, "balanced", {}),
])
def test_verdict_kinds(r, settings, kind, advice):
    v = diagnose(r, settings)
    assert v.kind == kind and v.kind in KINDS
    assert v.advice == advice
    assert verdict(r, settings) == v.text


def test_rates_give_the_loop_cpu_per_request():
    from sayuri_async.infer.stats import rates
    a, b = Counters(requests=1000), Counters(requests=51000)
    r = rates(a, b, 2.0, loop_cpu_s=0.6)  # 0.6 s of loop CPU for 50,000 requests
    assert r.loop_us_per_request == pytest.approx(12.0)
    assert rates(a, a, 2.0, loop_cpu_s=0.6).loop_us_per_request == 0.0  # no requests: no figure


def test_verdict_names_the_backend_when_the_network_runs_on_the_cpu():
    on_cpu = diagnose(fig(loop_busy=1.0, gpu_busy=0.33), with_(S, device="cpu")).text
    assert "backend 33%" in on_cpu and "GPU" not in on_cpu
    on_gpu = diagnose(fig(gpu_busy=0.97, loop_busy=0.6, avgBatchSize=250.0),
                      with_(S, batch_size=256, parallel_games=512, device="cuda:0"))
    assert on_gpu.kind == "device-bound" and on_gpu.text.startswith("GPU-bound: GPU 97%")
    model = diagnose(fig(gpu_busy=0.97, loop_busy=0.6, avgBatchSize=250.0),
                     with_(S, batch_size=256, parallel_games=512, device="model:0"))
    assert model.text.startswith("GPU-bound: GPU 97%")
    bound = diagnose(fig(gpu_busy=0.97, loop_busy=0.6, avgBatchSize=250.0),
                     with_(S, batch_size=256, parallel_games=512, device="cpu"))
    assert bound.text.startswith("backend-bound: backend 97%") and "GPU" not in bound.text


def test_verdict_texts_carry_the_numbers():
    cpu = diagnose(fig(loop_busy=1.0, gpu_busy=0.33, procs=1, cores=2), S).text
    assert "loop 100% busy" in cpu and "GPU 33%" in cpu and "--procs 2" in cpu
    encoding = diagnose(fig(loop_busy=0.5, encode_busy=0.95, encode_us_per_request=20.0, gpu_busy=0.4, procs=1,
                            cores=2), S).text
    assert "leaf encoding 95% busy (20.0 us per request)" in encoding and "--procs 2" in encoding
    starved = diagnose(fig(avgBatchSize=12.0), with_(S, parallel_games=24)).text
    assert "parallel_games 24 < 2 x batch_size 32 = 64" in starved
    small = diagnose(fig(**{"nnEvals/s": 9700.0}, gpu_busy=0.97, loop_busy=0.3, device_rates=RATES,
                         device_efficiency=0.49), S).text
    assert "49% of the device's best" in small and "raise batch_size to 64" in small


def test_no_verdict_advises_more_processes_than_cores():
    for procs in (1, 2, 3):
        v = diagnose(fig(loop_busy=1.0, gpu_busy=0.1, procs=procs, cores=2), S)
        assert v.advice.get("procs", 0) <= 2


def test_figures_between_two_aggregates():
    a = aggregate([make_status(10, 20000, 32, 64, busy=0.4, loop=0.9)])
    b = aggregate([make_status(20, 20000, 32, 64, busy=0.4, loop=0.9)])
    r = figures(a, b)
    assert r.nn_evals_s == pytest.approx(20000, rel=1e-3)
    assert r.avg_batch_size == pytest.approx(32, rel=1e-2)
    assert r.gpu_busy == pytest.approx(0.4)
    assert r.loop_busy == pytest.approx(0.9)
    assert r.loop_busy_procs == [pytest.approx(0.9)]
    assert r.games_live == 5 and r.queue_wait_ms == pytest.approx(2.0)


def test_figures_per_process_and_per_device():
    def two(t):
        return aggregate([make_status(t, 10000, 32, 64, busy=0.6, loop=0.95, pid=1),
                          make_status(t, 10000, 32, 64, busy=0.6, loop=0.45, pid=2)])
    r = figures(two(10), two(20), devices=1)
    assert r.nn_evals_s == pytest.approx(20000, rel=1e-3)
    assert r.gpu_busy == 1.0  # two processes sharing one device: capped
    assert sorted(r.loop_busy_procs) == [pytest.approx(0.45), pytest.approx(0.95)]
    assert r.loop_busy_max == pytest.approx(0.95)
    assert figures(two(10), two(20), devices=2).gpu_busy == pytest.approx(0.6)


def test_window_keeps_recent_seconds():
    w = Window(seconds=5)
    for k in range(1, 41):
        t = k * 0.5
        w.push(aggregate([make_status(t, 0, 8, 16, evals=1000 * min(t, 10) + 3000 * max(t - 10, 0))]))
    assert w.recent().nn_evals_s == pytest.approx(3000, rel=0.02)
    assert 1000 < w.overall().nn_evals_s < 3000


def test_plain_reporter_lines_and_summary():
    out = io.StringIO()
    rep = PlainReporter(every=0.0, stream=out)
    assert rep.update([make_status(1.0, 5000, 16, 32, loop=0.99, busy=0.1)]) == []
    rep.update([make_status(2.0, 5000, 16, 32, loop=0.99, busy=0.1)])
    rep.close([make_status(3.0, 5000, 16, 32, loop=0.99, busy=0.1)])
    text = out.getvalue()
    assert "evals/s     5000" in text and "CPU-bound" in text
    assert "nnEvals/s 5000" in text
    assert summary_lines(None, None) == ["no figures"]


def test_figures_keep_their_json_names():
    """The names the benchmarks' JSON lines carry (``Rates.as_json``): a
    renamed figure fails here instead of reading as 0 somewhere."""
    from sayuri_async.infer.stats import Rates
    assert list(Rates().as_json()) == [
        "nnEvals/s", "nnBatches/s", "avgBatchSize", "gpu_busy", "loop_busy", "encode_busy", "encode_us_per_request",
        "queue_wait_ms", "loop_us_per_request", "cache_hit_rate", "requests/s", "playouts/s", "moves/s", "games/s",
        "positions/s", "flush_share", "queue_depth", "in_flight", "device_best", "device_efficiency", "batch_fill"]
    with pytest.raises(TypeError):
        Figures(nnEvals_s=1.0)  # a record takes only its own fields
