"""``[optim] norms`` on our own networks: "fixed" keeps the batch norms'
running statistics through training (their scale and shift still learn),
"batch" lets them follow the batches."""
from __future__ import annotations

import torch

from sayuri_async.net.model import Net, NetConfig
from sayuri_async.train.config import from_dict
from sayuri_async.train.trainer import Trainer
from test_train_chunks import make_chunk


def _stats(net: Net) -> torch.Tensor:
    return torch.cat([m.running_mean for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)])


def test_fixed_norms_stay_in_train_mode():
    torch.manual_seed(0)
    net = Net(NetConfig(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8))
    net.set_norm_mode("fixed")
    net.train()
    before = _stats(net).clone()
    net(torch.rand(4, net.config.input_planes, 7, 7) * 3)
    assert torch.equal(_stats(net), before)
    net.set_norm_mode("batch")
    assert net.training and all(m.training for m in net.modules())
    net(torch.rand(4, net.config.input_planes, 7, 7) * 3)
    assert not torch.equal(_stats(net), before)


def _train(tmp_path, norms: str, name: str) -> tuple[Net, Net]:
    data = tmp_path / "data"
    if not data.exists():
        for i in range(2):
            make_chunk(data / f"chunk-{i}-1-0.npz", n=7, positions=64, seed=i)
    cfg = from_dict({
        "data": {"dir": str(data), "board_size": 7, "workers": 0, "shuffle_buffer": 64},
        "model": {"blocks": 1, "channels": 8, "policy_channels": 4, "value_channels": 4, "value_hidden": 8},
        "optim": {"batch_size": 32, "norms": norms},
        "schedule": {"reference_batch": 32, "warmup": 0, "boundaries": [1000], "rates": [0.02, 0.01]},
        "run": {"out": str(tmp_path / name), "log_every": 2, "checkpoint_every": 100, "export_every": 100,
                "progress": "off", "device": "cpu", "seed": 3},
    }, name)
    trainer = Trainer(cfg, steps=4, say=lambda _: None)
    start = Net(trainer.net.config)
    start.load_state_dict(trainer.net.state_dict())
    trainer.run()
    return start, trainer.net


def test_the_trainer_keeps_fixed_norms_and_trains_the_rest(tmp_path):
    start, end = _train(tmp_path, "fixed", "fixed")
    assert torch.equal(_stats(end), _stats(start))
    assert not torch.equal(end.stem.conv.weight, start.stem.conv.weight)
    start, end = _train(tmp_path, "batch", "batch")
    assert not torch.equal(_stats(end), _stats(start))
