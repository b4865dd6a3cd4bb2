"""Synchronised batch norms (``[optim] sync_norms``, ``train/syncnorm.py``): two
gloo ranks on the CPU, each with half of a batch, compute what one process
computes with the whole batch: the outputs, the gradients after DDP's
averaging, and the running statistics, for our network (``nn.BatchNorm2d``)
and a Sayuri network (its own ``Norm``). Without the option the ranks'
figures differ from the whole batch's (the check can fail). Then a whole
training run under two ranks with ``sync_norms = true``: the ranks' running
statistics stay identical, which per-rank batch norms never give.

The ranks are spawned processes given torchrun's environment variables, as in
``test_train_ddp.py``.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

from test_train_chunks import make_chunk

ROWS = 8  # the whole batch; each of 2 ranks takes 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _net(kind: str) -> nn.Module:
    torch.manual_seed(3)
    if kind == "ours":
        from sayuri_async.net.model import Net, NetConfig, init_weights

        return init_weights(Net(NetConfig(blocks=2, channels=8, policy_channels=4, value_channels=4,
                                          value_hidden=8)), seed=3)
    from sayuri_async.sayuri.weights import config_from_dict, new_net
    from sayuri_async.train.config import SayuriModelConfig

    return new_net(config_from_dict(SayuriModelConfig(blocks=2, channels=8, policy_channels=4,
                                                      value_channels=4).network_config()))


def _inputs(kind: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(11)
    planes = 25 if kind == "ours" else 43
    return (torch.rand(ROWS, planes, 7, 7, generator=g) < 0.3).float()


def _loss(out: dict[str, torch.Tensor]) -> torch.Tensor:
    """A mean over the rows of every output: the ranks' mean is the whole batch's."""
    return sum((v.float() ** 2).reshape(len(v), -1).mean(1).mean() for v in out.values())


def _figures(net: nn.Module, model: nn.Module, x: torch.Tensor) -> dict:
    net.train()
    out = model(x)
    _loss(out).backward()
    return {"out": {k: v.detach() for k, v in out.items()},
            "grads": {k: p.grad.detach().clone() for k, p in net.named_parameters() if p.grad is not None},
            "buffers": {k: v.clone() for k, v in net.state_dict().items() if "running" in k}}


def _rank(rank: int, world: int, port: int, kind: str, sync: bool, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    import torch.distributed as dist

    from sayuri_async.train.syncnorm import synchronise_norms

    dist.init_process_group("gloo")
    net = _net(kind)
    if sync:
        assert synchronise_norms(net) > 0
    model = nn.parallel.DistributedDataParallel(net)
    half = ROWS // world
    torch.save(_figures(net, model, _inputs(kind)[rank * half:(rank + 1) * half]), Path(out) / f"rank{rank}.pt")
    dist.destroy_process_group()


def _run_ranks(tmp_path: Path, kind: str, sync: bool) -> list[dict]:
    out = tmp_path / f"{kind}-{sync}"
    out.mkdir()
    mp.start_processes(_rank, args=(2, _free_port(), kind, sync, str(out)), nprocs=2, join=True,
                       start_method="spawn")
    return [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(2)]


def _close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    """Equal to float32 rounding: within 1e-5 of the largest magnitude among them
    (a bias just before a norm has a gradient of rounding noise only)."""
    scale = max(float(v.abs().max()) for v in b.values())
    return a.keys() == b.keys() and all(float((a[k] - b[k]).abs().max()) <= 1e-5 * scale for k in a)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ours", "sayuri"])
def test_two_synchronised_ranks_compute_what_one_process_does_with_the_whole_batch(tmp_path, kind):
    net = _net(kind)
    whole = _figures(net, net, _inputs(kind))
    assert whole["buffers"]
    for sync in (True, False):
        ranks = _run_ranks(tmp_path, kind, sync)
        outputs = {k: torch.cat([r["out"][k] for r in ranks]) for k in whole["out"]}
        matches = (_close(outputs, whole["out"]) and _close(ranks[0]["grads"], whole["grads"])
                   and _close(ranks[1]["grads"], whole["grads"])
                   and _close(ranks[0]["buffers"], whole["buffers"])
                   and _close(ranks[1]["buffers"], whole["buffers"]))
        assert matches == sync, f"sync_norms={sync}: the whole batch's figures {'not ' if sync else ''}matched"


def test_the_conversion_keeps_state_and_the_fixed_mode(tmp_path):
    from sayuri_async.sayuri.model import Norm
    from sayuri_async.train.syncnorm import SyncBatchNorm2d, SyncNorm, synchronise_norms

    for kind, cls, base in (("ours", SyncBatchNorm2d, nn.BatchNorm2d), ("sayuri", SyncNorm, Norm)):
        net = _net(kind)
        keys = list(net.state_dict())
        params = [id(p) for p in net.parameters()]
        layers = synchronise_norms(net)
        assert layers == sum(isinstance(m, cls) for m in net.modules()) > 0
        assert all(isinstance(m, base) for m in net.modules() if isinstance(m, cls))
        assert list(net.state_dict()) == keys and [id(p) for p in net.parameters()] == params
        # one process: exactly what the plain modules compute
        x = _inputs(kind)
        plain = _net(kind)
        net.train(), plain.train()
        a, b = net(x), plain(x)
        assert all(torch.equal(a[k], b[k]) for k in a)
    ours = _net("ours")
    synchronise_norms(ours)
    ours.set_norm_mode("fixed")
    ours.train()
    assert not any(m.training for m in ours.modules() if isinstance(m, nn.BatchNorm2d))


def _train_rank(rank: int, world: int, port: int, data: str, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    import torch.distributed as dist

    from sayuri_async.train.config import from_dict
    from sayuri_async.train.trainer import Trainer

    cfg = from_dict({
        "data": {"dir": data, "board_size": 7, "workers": 0, "shuffle_buffer": 64},
        "model": {"blocks": 1, "channels": 8, "policy_channels": 4, "value_channels": 4, "value_hidden": 8},
        "optim": {"batch_size": 16, "sync_norms": True},
        "schedule": {"reference_batch": 16, "warmup": 0, "boundaries": [1000], "rates": [0.02, 0.01]},
        "run": {"out": out, "log_every": 2, "checkpoint_every": 100, "export_every": 100, "progress": "off",
                "device": "cpu", "backend": "gloo"},
    }, "sync-test")
    said: list[str] = []
    trainer = Trainer(cfg, steps=4, say=said.append)
    trainer.run()
    stats = {k: v.tolist() for k, v in trainer.net.state_dict().items() if "running" in k}
    (Path(out) / f"rank{rank}.json").write_text(json.dumps({"stats": stats, "said": said}))
    dist.destroy_process_group()


@pytest.mark.slow
def test_a_training_run_with_sync_norms_keeps_the_ranks_statistics_identical(tmp_path):
    data = tmp_path / "data"
    for i in range(2):
        make_chunk(data / f"chunk-{i}-1-0.npz", n=7, positions=64, seed=i)
    out = tmp_path / "out"
    out.mkdir()
    mp.start_processes(_train_rank, args=(2, _free_port(), str(data), str(out)), nprocs=2, join=True,
                       start_method="spawn")
    r0, r1 = (json.loads((out / f"rank{r}.json").read_text()) for r in range(2))
    assert any(line.startswith("synchronised batch norms: ") and "over 2 ranks" in line for line in r0["said"])
    assert r0["stats"] and r0["stats"] == r1["stats"]
