"""Weights files: save -> load gives the same outputs; anything wrong is a
WeightsError that names the file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from sayuri_async.net.model import OUTPUT_KEYS, Net, NetConfig, init_weights
from sayuri_async.net.weights import WeightsError, load_weights, read_header, save_weights

TINY = dict(blocks=2, channels=16, policy_channels=8, value_channels=8, value_hidden=16)


def make_net(**kw) -> Net:
    net = init_weights(Net(NetConfig(**{**TINY, **kw})), seed=1)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2)
    return net.eval()


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Net]:
    net = make_net()
    path = tmp_path / "net.safetensors"
    save_weights(path, net, {"step": 1234, "name": "tiny-test", "run": {"id": 7}})
    return path, net


@pytest.mark.slow
def test_round_trip(saved: tuple[Path, Net]) -> None:
    path, net = saved
    loaded, meta = load_weights(path)
    assert loaded.config == net.config
    assert meta["step"] == 1234 and meta["name"] == "tiny-test" and meta["run"] == {"id": 7}
    assert meta["encoder"] == "simple-v1" and meta["board_size_min"] == 7 and meta["board_size_max"] == 19
    assert not loaded.training
    for n in (7, 19):
        x = torch.randint(0, 2, (3, 25, n, n)).float()
        with torch.no_grad():
            a, b = net(x), loaded(x)
        for k in OUTPUT_KEYS:
            assert torch.equal(a[k], b[k]), k
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_header_is_readable_strings(saved: tuple[Path, Net]) -> None:
    path, net = saved
    md = read_header(path)
    assert md["format"] == "sayuri-async-weights" and md["format_version"] == "1"
    assert all(isinstance(v, str) for v in md.values())
    assert json.loads(md["config"])["channels"] == 16
    assert md["step"] == "1234" and md["encoder"] == "simple-v1" and md["planes"] == "25"


def test_overwrite_is_atomic_replace(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    other = make_net(channels=8)
    save_weights(path, other, {"step": 2})
    net, meta = load_weights(path)
    assert net.config.channels == 8 and meta["step"] == 2


def rewrite(path: Path, tensors=None, **md_changes) -> None:
    md = read_header(path)
    tensors = tensors if tensors is not None else load_file(str(path))
    for k, v in md_changes.items():
        if v is None:
            md.pop(k, None)
        else:
            md[k] = v
    save_file(tensors, str(path), metadata=md)


def expect_error(path: Path, match: str) -> None:
    with pytest.raises(WeightsError) as e:
        load_weights(path)
    assert str(path) in str(e.value)
    assert match in str(e.value), str(e.value)


@pytest.mark.parametrize("keep", [0, 5, 8, 100, -10])
def test_truncated(saved: tuple[Path, Net], keep: int) -> None:
    path, _ = saved
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep])
    with pytest.raises(WeightsError) as e:
        load_weights(path)
    assert str(path) in str(e.value)


def test_not_a_weights_file(tmp_path: Path) -> None:
    p = tmp_path / "junk.bin"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    expect_error(p, "not JSON")
    expect_error(tmp_path / "missing.safetensors", "cannot read")
    q = tmp_path / "plain.safetensors"
    save_file({"a": torch.zeros(2)}, str(q))
    expect_error(q, "metadata")


def test_wrong_metadata(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    rewrite(path, format="something-else")
    expect_error(path, "format")


def test_wrong_config_json(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    rewrite(path, config="{not json")
    expect_error(path, "config")


def test_unknown_encoder(saved: tuple[Path, Net]) -> None:
    path, net = saved
    cfg = net.config.to_dict() | {"encoder": "fancy-v9"}
    rewrite(path, config=json.dumps(cfg), encoder="fancy-v9")
    expect_error(path, "fancy-v9")


def test_header_disagrees_with_config(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    rewrite(path, board_size_max="25")
    expect_error(path, "board_size_max")


def test_shape_mismatch(saved: tuple[Path, Net]) -> None:
    path, net = saved
    cfg = net.config.to_dict() | {"value_hidden": 32}  # fc shapes no longer fit
    rewrite(path, config=json.dumps(cfg))
    expect_error(path, "shape")


def test_missing_and_extra_tensors(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    t = load_file(str(path))
    t.pop("value_head.fc2.bias")
    t["bogus"] = torch.zeros(3)
    rewrite(path, tensors=t)
    expect_error(path, "value_head.fc2.bias")


def test_blocks_mismatch(saved: tuple[Path, Net]) -> None:
    path, net = saved
    rewrite(path, config=json.dumps(net.config.to_dict() | {"blocks": 3}))
    expect_error(path, "missing")


def test_nan_rejected(saved: tuple[Path, Net]) -> None:
    path, _ = saved
    t = load_file(str(path))
    t["value_head.fc2.bias"][0] = float("nan")
    rewrite(path, tensors=t)
    expect_error(path, "NaN")
