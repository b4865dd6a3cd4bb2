"""Backends: the random backend's outputs, the torch backend on CPU against
the net itself, and (where CUDA exists) graphs against eager."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sayuri_async.encoders import get_encoder
from sayuri_async.go.game import Game
from sayuri_async.net.backends import Backend, NetOutput, RandomBackend, TorchBackend, default_buckets
from sayuri_async.backend_factory import make_backend
from sayuri_async.net.model import Net, NetConfig, init_weights
from sayuri_async.net.weights import save_weights

TINY = dict(blocks=2, channels=16, policy_channels=8, value_channels=8, value_hidden=16, global_pool_every=1)
CUDA = torch.cuda.is_available()


def encoded_batch(backend: Backend, n: int, b: int, seed: int = 0) -> tuple[np.ndarray, list[Game]]:
    enc = get_encoder(backend.encoder)
    buf = backend.alloc_input(max(b, 1), n)
    rng = np.random.default_rng(seed)
    games = []
    for i in range(b):
        g = Game(n)
        for _ in range(int(rng.integers(0, 30))):
            legal = np.flatnonzero(g.legal_actions())
            g.play(int(rng.choice(legal[legal < n * n])))
        enc.encode(g.rec, buf[i])
        games.append(g)
    return buf[:b], games


def check_output(out: NetOutput, b: int, n: int) -> None:
    a = n * n + 1
    assert out.policy.shape == (b, a) and out.policy.dtype == np.float32
    assert out.wdl.shape == (b, 3) and out.wdl.dtype == np.float32
    assert out.score.shape == (b,) and out.score.dtype == np.float32
    assert out.ownership.shape == (b, n * n) and out.ownership.dtype == np.float32
    assert (out.policy >= 0).all() and np.allclose(out.policy.sum(1), 1, atol=1e-4)
    assert (out.wdl >= 0).all() and np.allclose(out.wdl.sum(1), 1, atol=1e-4)
    assert np.abs(out.ownership).max() <= 1 and np.isfinite(out.score).all()


@pytest.mark.parametrize("n", range(7, 20))
def test_random_backend_shapes(n: int) -> None:
    be = RandomBackend(seed=1)
    assert be.encoder == "simple-v1" and be.planes == 25 and be.name == "random" and be.device == "cpu"
    for b in (1, 5):
        batch, games = encoded_batch(be, n, b, seed=n)
        out = be.run(batch)
        check_output(out, b, n)
        assert (out.wdl == np.array([0.5, 0.0, 0.5], dtype=np.float32)).all()
        assert (out.score == 0).all() and (out.ownership == 0).all()
        for i, g in enumerate(games):  # legal probabilities after masking
            mask = g.legal_actions().astype(bool)
            p = np.where(mask, out.policy[i], 0)
            p /= p.sum()
            assert np.isclose(p.sum(), 1) and (p[~mask] == 0).all() and (p[mask] > 0).all()


def test_random_backend_noise_and_seed() -> None:
    batch = np.zeros((64, 25, 9, 9), dtype=np.uint8)
    a, b = RandomBackend(seed=3).run(batch), RandomBackend(seed=3).run(batch)
    assert np.array_equal(a.policy, b.policy)
    assert np.abs(a.policy - 1 / 82).max() < 0.01  # near uniform
    assert len({int(np.argmax(r)) for r in a.policy}) > 10  # ties break differently
    c = RandomBackend(seed=3)
    out1 = c.run(batch[:2])
    out1.policy[:] = 0  # results are fresh arrays
    assert c.run(batch[:2]).policy.sum() > 0


def test_random_backend_rejects_wrong_shape() -> None:
    with pytest.raises(ValueError, match="planes|N, N"):
        RandomBackend().run(np.zeros((2, 18, 9, 9), dtype=np.uint8))


def tiny_net(seed: int = 0) -> Net:
    net = init_weights(Net(NetConfig(**TINY)), seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
    return net.eval()


def reference(net: Net, batch: np.ndarray) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = net(torch.from_numpy(batch).float())
    return {
        "policy": torch.softmax(out["policy"], 1).numpy(),
        "wdl": torch.softmax(out["wdl"], 1).numpy(),
        "score": out["score"].numpy(),
        "ownership": out["ownership"].numpy(),
    }


@pytest.mark.parametrize("n", [7, 9, 19])
def test_torch_cpu_matches_net(n: int) -> None:
    net = tiny_net()
    be = TorchBackend(net, device="cpu", max_batch=16, threads=1)
    assert be.encoder == "simple-v1" and be.planes == 25 and be.device == "cpu"
    batch, _ = encoded_batch(be, n, 6, seed=n)
    out = be.run(batch)
    check_output(out, 6, n)
    ref = reference(net, batch)
    for k, v in ref.items():
        # the score head is scaled to points (x score_scale), and so is its
        # float32 rounding after batch norm is folded
        atol = 1e-5 * (net.config.score_scale if k == "score" else 1.0)
        assert np.allclose(getattr(out, k), v, atol=atol, rtol=1e-4), k
    one = be.run(batch[2:3])
    assert np.allclose(one.policy, out.policy[2:3], atol=1e-6)
    big = be.run(np.zeros((17, 25, n, n), dtype=np.uint8))  # max_batch is a hint, not a limit
    check_output(big, 17, n)


def test_make_backend(tmp_path: Path) -> None:
    be = make_backend(None, "cpu", seed=1)
    assert isinstance(be, RandomBackend)
    path = tmp_path / "tiny.safetensors"
    net = tiny_net(2)
    save_weights(path, net, {"name": "tiny", "step": 9})
    tb = make_backend(str(path), "cpu", max_batch=8)
    assert isinstance(tb, TorchBackend) and tb.name == "tiny" and tb.meta["step"] == 9
    batch, _ = encoded_batch(tb, 9, 3)
    ref = reference(net, batch)
    assert np.allclose(tb.run(batch).policy, ref["policy"], atol=1e-5)


def test_warmup_and_random_max_batch() -> None:
    tb = TorchBackend(tiny_net(), max_batch=8)
    tb.warmup([9, 19])
    rb = make_backend(None, "cpu", seed=0, max_batch=4)
    check_output(rb.run(np.zeros((6, 25, 9, 9), dtype=np.uint8)), 6, 9)


def test_bad_dtype_and_device() -> None:
    with pytest.raises(ValueError, match="dtype"):
        TorchBackend(tiny_net(), dtype="int7")
    if not CUDA:
        with pytest.raises(RuntimeError, match="CUDA"):
            TorchBackend(tiny_net(), device="cuda:0")


def test_buckets() -> None:
    assert default_buckets(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert default_buckets(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    be = TorchBackend(tiny_net(), max_batch=100)
    assert be.bucket(1) == 1 and be.bucket(33) == 64 and be.bucket(65) == 100
    assert be.bucket(101) == 128 and be.buckets[-1] == 128


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("n", [9, 19])
def test_cuda_graph_matches_eager_and_cpu(n: int) -> None:
    net = tiny_net(4)
    graph = TorchBackend(net, device="cuda:0", max_batch=64, use_cuda_graphs=True)
    eager = TorchBackend(net, device="cuda:0", max_batch=64, use_cuda_graphs=False)
    fp32 = TorchBackend(net, device="cuda:0", max_batch=64, use_cuda_graphs=True, dtype=torch.float32)
    buf = graph.alloc_input(64, n)
    assert buf.shape == (64, 25, n, n) and buf.dtype == np.uint8
    batch, _ = encoded_batch(graph, n, 37, seed=5)
    buf[:37] = batch
    ref = reference(net, np.ascontiguousarray(batch))
    g1 = graph.run(buf[:37])
    g2 = graph.run(buf[:37])  # replay gives the same again
    e = eager.run(buf[:37])
    f = fp32.run(buf[:37])
    check_output(g1, 37, n)
    assert np.array_equal(g1.policy, g2.policy)
    assert np.allclose(g1.policy, e.policy, atol=2e-3)
    assert np.allclose(f.policy, ref["policy"], atol=1e-4)
    assert np.allclose(g1.wdl, ref["wdl"], atol=3e-2)  # bf16
    small = graph.run(buf[:3])  # another bucket
    assert np.allclose(small.policy, g1.policy[:3], atol=2e-3)


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("graphs", [True, False])
def test_cuda_launches_queue_on_the_stream_and_collect_in_order(graphs: bool) -> None:
    """Three batches of one bucket launched before any is collected (as the
    worker's launcher thread does) give each its own answer, the same as
    run() one at a time, and each reports its device time."""
    net = tiny_net(4)
    be = TorchBackend(net, device="cuda:0", max_batch=16, use_cuda_graphs=graphs)
    batches = [encoded_batch(be, 9, 16, seed=s)[0] for s in (1, 2, 3)]
    alone = [be.run(np.ascontiguousarray(b)) for b in batches]
    collects = [be.launch(np.ascontiguousarray(b)) for b in batches]
    queued = [c() for c in collects]
    for a, q in zip(alone, queued):
        assert np.array_equal(a.policy, q.policy) and np.array_equal(a.wdl, q.wdl)
        assert q.device_s is not None and q.device_s > 0


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_cuda_measure_rates_times_each_bucket() -> None:
    be = TorchBackend(tiny_net(4), device="cuda:0", max_batch=32)
    rates = be.measure_rates(9, 32)
    assert set(rates) == {1, 2, 4, 8, 16, 32} and all(v > 0 for v in rates.values())  # up to max_batch
