"""tools/swap_norm_stats.py: one network's weights with another's batch-norm statistics."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("swap_norm_stats", ROOT / "tools" / "swap_norm_stats.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _net(path: Path, seed: int, channels: int = 8):
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    torch.manual_seed(seed)
    net = Net(NetConfig(blocks=1, channels=channels, policy_channels=4, value_channels=4, value_hidden=8))
    with torch.no_grad():
        for p in net.parameters():
            p.normal_()
        for name, b in net.named_buffers():
            if name.endswith(("running_mean", "running_var")):
                b.uniform_(0.5, 2.0)
    save_weights(path, net, {"name": f"seed{seed}"})
    return net


def test_weights_kept_statistics_taken(tmp_path):
    from sayuri_async.net.weights import load_weights

    a, b = _net(tmp_path / "a.safetensors", 1), _net(tmp_path / "b.safetensors", 2)
    assert _tool().main([str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors"),
                         str(tmp_path / "out.safetensors")]) == 0
    got, _ = load_weights(tmp_path / "out.safetensors")
    sa, sb, so = a.state_dict(), b.state_dict(), got.state_dict()
    stats = [k for k in so if k.endswith(("running_mean", "running_var"))]
    assert stats
    for k in so:
        want = sb[k] if k.endswith(("running_mean", "running_var", "num_batches_tracked")) else sa[k]
        assert torch.equal(so[k], want), k


def test_different_architectures_or_junk_exit_2(tmp_path, capsys):
    _net(tmp_path / "a.safetensors", 1)
    _net(tmp_path / "c.safetensors", 1, channels=12)
    (tmp_path / "junk.safetensors").write_bytes(b"junk")
    tool = _tool()
    assert tool.main([str(tmp_path / "a.safetensors"), str(tmp_path / "c.safetensors"), str(tmp_path / "o")]) == 2
    assert tool.main([str(tmp_path / "junk.safetensors"), str(tmp_path / "a.safetensors"), str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("swap_norm_stats: ") for line in err)
