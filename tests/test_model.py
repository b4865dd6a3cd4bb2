"""Net shapes for every board size, heads' ranges, config round trip, and
folded batch norm equal to the unfolded net."""
from __future__ import annotations

import pytest
import torch

from sayuri_async.net.model import OUTPUT_KEYS, Net, NetConfig, init_weights

TINY = dict(blocks=2, channels=16, policy_channels=8, value_channels=8, value_hidden=16, global_pool_every=1)
KINDS = [(k, o) for k in ("residual", "nested-bottleneck") for o in ("post", "pre")]


def randomise_bn(net: Net, seed: int) -> Net:
    """Non-trivial BN statistics and affine parameters, so folding is tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.5)
                m.running_var.copy_(torch.rand(c, generator=g) * 2 + 0.2)
                m.weight.copy_(torch.randn(c, generator=g) * 0.5 + 1)
                m.bias.copy_(torch.randn(c, generator=g) * 0.3)
    return net


def tiny(kind: str = "residual", order: str = "post", seed: int = 0) -> Net:
    torch.manual_seed(seed)
    net = Net(NetConfig(block_kind=kind, activation_order=order, **TINY))
    return randomise_bn(init_weights(net, seed), seed).eval()


@pytest.mark.parametrize("n", range(7, 20))
def test_shapes_every_size(n: int) -> None:
    net = tiny()
    x = torch.randint(0, 2, (3, 25, n, n)).float()
    with torch.no_grad():
        out = net(x)
    assert set(out) == set(OUTPUT_KEYS)
    a = n * n + 1
    assert out["policy"].shape == (3, a) and out["opp_policy"].shape == (3, a)
    assert out["wdl"].shape == (3, 3) and out["score"].shape == (3,)
    assert out["ownership"].shape == (3, n * n)
    for v in out.values():
        assert v.dtype == torch.float32 and torch.isfinite(v).all()
    assert out["ownership"].abs().max() <= 1


@pytest.mark.parametrize("kind,order", KINDS)
def test_fold_batchnorm_matches(kind: str, order: str) -> None:
    net = tiny(kind, order, seed=3)
    folded = net.fold_batchnorm()
    n_bn = sum(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules())
    n_bn_folded = sum(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    assert n_bn_folded < n_bn
    if order == "post":
        assert n_bn_folded == 0
    for n in (7, 19):
        x = torch.randint(0, 2, (4, 25, n, n)).float()
        with torch.no_grad():
            a, b = net(x), folded(x)
        for k in OUTPUT_KEYS:
            scale = max(1.0, a[k].abs().max().item())
            assert (a[k] - b[k]).abs().max().item() <= 1e-5 * scale, k
    # the original is untouched
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules()) == n_bn


@pytest.mark.parametrize("kind,order", KINDS)
def test_trains(kind: str, order: str) -> None:
    net = Net(NetConfig(block_kind=kind, activation_order=order, **TINY)).train()
    x = torch.randint(0, 2, (4, 25, 9, 9)).float()
    out = net(x)
    loss = sum(v.float().square().mean() for v in out.values())
    loss.backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_global_pool_placement() -> None:
    cfg = NetConfig(blocks=6, channels=16, global_pool_every=3)
    net = Net(cfg)
    pools = [i for i, b in enumerate(net.blocks) if b.branch.se is not None]
    assert pools == [2, 5]
    net = Net(NetConfig(blocks=4, channels=16, global_pool_every=0))
    assert all(b.branch.se is None for b in net.blocks)


def test_config_round_trip_and_validation() -> None:
    cfg = NetConfig(blocks=3, channels=32, block_kind="nested-bottleneck", activation_order="pre", score_scale=10.0)
    d = cfg.to_dict()
    assert NetConfig.from_dict(d) == cfg
    assert cfg.short_name == "3b32c"
    with pytest.raises(ValueError):
        NetConfig(block_kind="dense")
    with pytest.raises(ValueError):
        NetConfig(activation_order="middle")
    with pytest.raises(ValueError, match="unknown NetConfig keys"):
        NetConfig.from_dict({**d, "colour": 1})


def test_side_to_move_perspective_is_per_sample() -> None:
    """Rows of a batch are independent (padding rows cannot leak in eval mode)."""
    net = tiny()
    x = torch.randint(0, 2, (5, 25, 9, 9)).float()
    with torch.no_grad():
        full = net(x)
        one = net(x[2:3])
    for k in OUTPUT_KEYS:
        # batched and single-row kernels round differently; score is in points (x score_scale)
        atol = 1e-5 * (net.config.score_scale if k == "score" else 1.0)
        assert torch.allclose(full[k][2:3], one[k], atol=atol), k
