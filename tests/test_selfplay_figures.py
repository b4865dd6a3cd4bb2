"""Self-play's figures as a new user sees them: the device efficiency never
above 100% (a CPU torch net on a board it was not trained on, a start-up
measurement the machine slowed down), "finishing" for a run's last games,
and Ctrl-C / SIGTERM handlers back after self-play."""
from __future__ import annotations

import io
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from sayuri_async.infer.stats import Counters, Rates, add_efficiency, merge
from sayuri_async.net import shipped
from sayuri_async.net.backends import TorchBackend
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.report import (Figures, PlainReporter, aggregate, device_best_of, diagnose, figures,
                                          games_needed, summary_lines)
from sayuri_async.selfplay import runner
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.search.config import SearchConfig

SHIPPED_9X9 = shipped.SHIPPED[9]


def cpu_cfg(out: Path, **kw) -> SelfplayConfig:
    base = dict(board_sizes=[7], komi=7.5, num_games=3, parallel_games=3, batch_size=4, playouts=8,
                reduce_playouts=4, chunk_games=3, out=str(out), seed=5, weights=str(SHIPPED_9X9), device="cpu",
                writer_process=False, search=SearchConfig(edge_capacity=20_000))
    base.update(kw)
    return SelfplayConfig(**base)


def quiet() -> PlainReporter:
    return PlainReporter(every=1e9, stream=io.StringIO())


def slow_start_measurement(monkeypatch, rate: float = 0.5) -> list[int]:
    """The start-up measurement as a loaded machine gave it (a few evals/s):
    the run's own batches must lift the ceiling. Returns the boards measured."""
    measured: list[int] = []

    def measure(self, n: int, batch_size: int) -> dict[int, float]:
        measured.append(n)
        return {1: rate, batch_size: rate}

    monkeypatch.setattr(TorchBackend, "measure_rates", measure)
    return measured


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED_9X9.is_file(), reason="the shipped 9x9 network is not in this checkout")
def test_efficiency_of_a_cpu_net_on_another_board_stays_at_most_100_percent(tmp_path, monkeypatch):
    measured = slow_start_measurement(monkeypatch)
    final = runner.run_inprocess(cpu_cfg(tmp_path, board_sizes=[7, 11], board_size_weights=[1.0, 1.0]), quiet())
    st = final[0]
    assert sorted(set(measured)) == [7, 11]  # every board the run plays, not the net's 9x9
    agg = aggregate(final)
    r = figures(None, agg)
    assert r.nn_evals_s > 0
    # the ceiling itself, not only the capped figure: no more evals/s than the device's best
    assert r.nn_evals_s <= r.device_best * (1 + 1e-9)
    assert st.device_best > 0.5  # the run's fastest batch, not the slowed start-up figure
    assert 0 < r.device_efficiency <= 1.0
    (eff,) = [w for w in summary_lines(agg, r)[1].split("  ") if w.startswith("device efficiency")]
    assert 0 <= int(eff.split()[-1].rstrip("%")) <= 100  # under 0.5% shows 0% on a loaded machine


def test_cpu_rate_measurement_waits_out_slow_first_passes(monkeypatch):
    """The first passes of a CPU backend can be slow (threads, allocation,
    a loaded machine): the measured rate is the warmed-up one."""
    from sayuri_async.net.model import Net, NetConfig

    be = TorchBackend(Net(NetConfig(blocks=1, channels=8)), threads=1, max_batch=4)
    calls = [0]
    real = be.run

    def run(batch):
        calls[0] += 1
        if calls[0] <= 3:
            time.sleep(0.2)
        return real(batch)

    monkeypatch.setattr(be, "run", run)
    rates = be.measure_rates(9, 4)
    assert rates and min(rates.values()) > 50  # 0.2 s a pass would be 5-20 evals/s


def test_best_rate_is_a_peak_that_merge_keeps():
    a, b = Counters(), Counters()
    a.add_batch(8, "full", 0.01)  # 800 evals/s
    a.add_batch(2, "waiting", 0.01)  # 200: the peak stays
    b.add_batch(4, "full", 0.002)  # 2000
    assert a.best_rate == pytest.approx(800)
    assert merge([a.snapshot(), b.snapshot()]).best_rate == pytest.approx(2000)


def test_efficiency_is_capped_as_a_last_guard():
    r = add_efficiency(Rates(nn_evals_s=3000.0, avg_batch_size=8.0), 1000.0, 8)
    assert r.device_efficiency == 1.0 and r.device_best == 1000.0
    assert add_efficiency(Rates(nn_evals_s=3000.0, avg_batch_size=8.0), 0.0, 8).device_efficiency is None


def test_device_best_adds_cpu_shares_and_takes_the_largest_gpu_measurement():
    def st(device: str, best: float) -> Status:
        return Status(t=0.0, elapsed=0.0, loop_cpu_s=0.0, counters=Counters(), settings=EngineSettings(device=device),
                      device_best=best)

    assert device_best_of([st("cpu", 300.0), st("cpu", 200.0)]) == 500.0  # each process its own cores
    assert device_best_of([st("cuda:0", 9000.0), st("cuda:0", 10000.0)]) == 10000.0  # one device, measured twice
    assert device_best_of([]) == 0.0


def draining_figures(live: int, **kw) -> Figures:
    base = dict(nn_evals_s=800.0, avg_batch_size=7.0, gpu_busy=0.98, loop_busy=0.04, loop_busy_max=0.04,
                flush_share={"full": 0.0, "waiting": 1.0, "timeout": 0.0}, games_live=live, draining=True,
                procs=1, cores=2)
    base.update(kw)
    return Figures(**base)


SETTINGS = EngineSettings(batch_size=16, parallel_games=32, timeout_ms=5.0, paused=False, leaves_per_await=4,
                          device="cpu")


def test_the_last_games_of_a_run_are_finishing_not_fragmented():
    assert games_needed(16, 4) == 8
    v = diagnose(draining_figures(2), SETTINGS)
    assert v.kind == "finishing" and v.advice == {}
    assert "2 game(s) left" in v.text and "parallel_games" not in v.text
    running = diagnose(draining_figures(2, draining=False), SETTINGS)
    assert running.kind == "fragmented"  # the same figures mid-run: the settings are at fault


def test_a_draining_run_never_advises_more_games():
    """24 games asked with parallel_games 32: every game runs from the start;
    more parallel games cannot help."""
    many = diagnose(draining_figures(24, gpu_busy=0.3, loop_busy=0.2, loop_busy_max=0.2), SETTINGS)
    assert many.kind == "finishing" and "parallel_games" not in many.advice
    bound = diagnose(draining_figures(24, avg_batch_size=16.0), SETTINGS)
    assert bound.kind == "device-bound"  # a verdict without more games stands


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED_9X9.is_file(), reason="the shipped 9x9 network is not in this checkout")
def test_a_finished_run_reports_draining(tmp_path):
    final = runner.run_inprocess(cpu_cfg(tmp_path, num_games=2, parallel_games=4), quiet())
    assert final[0].draining is True
    agg = aggregate(final)
    assert agg.draining and figures(None, agg).draining


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_signal_handlers_are_back_after_selfplay(tmp_path):
    """uvloop leaves its handler in place after its loop closes: the RL loop's
    training would then ignore Ctrl-C and SIGTERM."""
    def mine(signum, frame) -> None:
        raise AssertionError("not called")

    old = {sig: signal.signal(sig, mine) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        runner.run_inprocess(cpu_cfg(tmp_path, weights="", num_games=2, parallel_games=2), quiet())
        assert signal.getsignal(signal.SIGINT) is mine
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
    runner.run_inprocess(cpu_cfg(tmp_path / "b", weights="", num_games=2, parallel_games=2), quiet())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)
