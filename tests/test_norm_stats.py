"""Batch-norm statistics at export: recomputed on fresh positions
(``train/norm_stats.py``), or kept as training left them; the loop's
exported candidate carries the mode its config names."""
import json

import numpy as np
import pytest
import torch
from torch import nn

from sayuri_async.loop.driver import Loop
from sayuri_async.net.model import Net, NetConfig, init_weights
from sayuri_async.net.weights import load_weights, save_weights
from sayuri_async.train.norm_stats import batch_norms, random_symmetries, recompute_running_stats

from test_loop import write_cfg
from test_train_chunks import make_chunk

TINY_NET = dict(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8)


def test_recompute_averages_the_batches_statistics():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
    net = nn.Sequential(conv, nn.BatchNorm2d(4))
    planes = np.random.default_rng(0).normal(2.0, 3.0, size=(64, 3, 5, 5)).astype(np.float32)
    assert recompute_running_stats(net, planes, batch=16) == 64
    with torch.no_grad():
        y = conv(torch.from_numpy(planes))  # [64, 4, 5, 5]
    means = torch.stack([y[i:i + 16].mean(dim=(0, 2, 3)) for i in range(0, 64, 16)]).mean(0)
    vars_ = torch.stack([y[i:i + 16].var(dim=(0, 2, 3), unbiased=True) for i in range(0, 64, 16)]).mean(0)
    bn = net[1]
    assert torch.allclose(bn.running_mean, means, atol=1e-5) and torch.allclose(bn.running_var, vars_, rtol=1e-4)
    assert bn.momentum == 0.1 and not net.training  # torch's default momentum back, evaluation mode


def test_random_symmetries_keep_each_position_up_to_symmetry():
    planes = np.random.default_rng(1).random((40, 2, 5, 5)).astype(np.float32)
    out = random_symmetries(planes, seed=3)
    for a, b in zip(planes, out):
        variants = [np.rot90(a, k, axes=(1, 2)) for k in range(4)]
        variants += [np.flip(v, axis=2) for v in variants]
        assert any(np.array_equal(v, b) for v in variants)
    assert not np.array_equal(out, planes)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["as_trained", "recompute"])
def test_the_loop_exports_with_its_norm_mode(tmp_path, mode):
    """Norms fixed in training: "as_trained" exports the starting network's
    statistics unchanged; "recompute" exports statistics of the generation's
    positions, and says so in the weights' meta and the summary."""
    text = open(write_cfg(tmp_path, 1)).read()
    text = text.replace("[loop]\n", f"[loop]\nexport_norms = \"{mode}\"\nnorm_positions = 64\n")
    text = text.replace("[optim]\n", "[optim]\nnorms = \"fixed\"\n").replace("eval_games = 2", "eval_games = 0")
    cfg = tmp_path / f"{mode}.toml"
    cfg.write_text(text)
    init = tmp_path / "init.safetensors"
    start = init_weights(Net(NetConfig(**TINY_NET, board_size_min=7, board_size_max=7)), seed=5)
    for m in batch_norms(start):  # statistics no 7x7 self-play would give
        m.running_mean.fill_(3.0)
        m.running_var.fill_(7.0)
    save_weights(init, start, {"step": 0})
    ws = tmp_path / "ws"
    loop = Loop(str(cfg), str(ws))
    loop.init_from(str(init))
    assert loop.run() == 0
    net, meta = load_weights(ws / "weights" / "gen-000001.safetensors")
    means = torch.cat([m.running_mean for m in batch_norms(net)])
    summary = json.loads((ws / "state.json").read_text())["summaries"][0]
    assert summary["export_norms"] == mode
    if mode == "as_trained":
        assert torch.all(means == 3.0) and "norms" not in meta
    else:
        assert not torch.any(means == 3.0) and meta["norms"] == "recomputed"
        # up to 64 positions: two games can be shorter than that
        assert summary["norm_positions"] == min(64, summary["positions"]) > 0
        assert summary["norm_mean_shift"] > 0
