"""Sayuri weights: our writer -> importer -> SayuriNet, checked against an
independent numpy forward pass of the unfolded weights; our-format round
trip; malformed files rejected with the promised messages; the CLI."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from sayuri_async.net.weights import WeightsError
from sayuri_async.sayuri import cli
from sayuri_async.sayuri.model import BlockSpec, SayuriConfig
from sayuri_async.sayuri.weights import (SayuriWeightsError, import_sayuri, layers_for, load_any_weights,
                                         read_sayuri, save_imported, write_sayuri)

# ------------------------------------------------------------ numpy reference

ACT = {
    "relu": lambda x: np.maximum(x, 0.0),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "swish": lambda x: x / (1.0 + np.exp(-x)),
    "identity": lambda x: x,
}


def np_conv(x: np.ndarray, layers, i: int, bn: bool = True) -> tuple[np.ndarray, int]:
    """Convolution (zero padding) then, if ``bn``, Sayuri's (x - mean) / std."""
    cin, cout, k = layers[i].dims
    w = layers[i].tensors[0].reshape(cout, cin, k, k).astype(np.float64)
    b = layers[i].tensors[1].astype(np.float64)
    n = x.shape[-1]
    pad = k // 2
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((cout, n, n))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("oi,iyx->oyx", w[:, :, dy, dx], xp[:, dy:dy + n, dx:dx + n])
    out += b[:, None, None]
    if bn:
        mean, std = layers[i + 1].tensors
        out = (out - mean[:, None, None]) / std[:, None, None]
        return out, i + 2
    return out, i + 1


def np_fc(v: np.ndarray, layers, i: int) -> tuple[np.ndarray, int]:
    nin, nout = layers[i].dims
    return layers[i].tensors[0].reshape(nout, nin).astype(np.float64) @ v + layers[i].tensors[1], i + 1


def np_pool(x: np.ndarray, value: bool) -> np.ndarray:
    n = x.shape[-1]
    mean = x.mean(axis=(1, 2))
    third = mean * ((n - 14) ** 2 / 100.0 - 0.1) if value else x.max(axis=(1, 2))
    return np.concatenate([mean, mean * (n - 14) / 10.0, third])


def np_inputs(planes: np.ndarray, komi: float) -> np.ndarray:
    """Sayuri's float inputs written directly (not through decode_inputs)."""
    x = planes.astype(np.float64).copy()
    n = x.shape[-1]
    odd = (n * n) % 2 == 1
    floor = np.floor((komi - 1) / 2) * 2 + 1 if odd else np.floor(komi / 2) * 2
    d = min(max(komi - floor, 0.0), 2.0)
    x[38] = d if d < 0.5 else (1 - d if d < 1.5 else d - 2)
    x[39], x[40], x[41] = komi / 20, -komi / 20, n * n / 361
    return x


def np_forward(cfg: SayuriConfig, layers, x: np.ndarray) -> dict[str, np.ndarray]:
    act = ACT[cfg.activation]
    h, i = np_conv(x, layers, 0)
    h = act(h)
    for spec in cfg.blocks:
        skip = h
        if spec.kind == "residual":
            t, i = np_conv(h, layers, i)
            t, i = np_conv(act(t), layers, i)
        elif spec.kind == "bottleneck":
            t, i = np_conv(h, layers, i)
            for _ in range(2):
                t, i = np_conv(act(t), layers, i)
            t, i = np_conv(act(t), layers, i)
        else:
            t, i = np_conv(h, layers, i)
            t = act(t)
            for _ in range(2):
                r = t
                u, i = np_conv(t, layers, i)
                u, i = np_conv(act(u), layers, i)
                t = act(u + r)
            t, i = np_conv(t, layers, i)
        if spec.se:
            s, i = np_fc(np_pool(t, False), layers, i)
            s, i = np_fc(act(s), layers, i)
            c = cfg.channels
            t = t / (1 + np.exp(-s[:c]))[:, None, None] + s[c:][:, None, None]
        h = act(t + skip)
    p, i = np_conv(h, layers, i)
    p = act(p)
    inter, i = np_fc(np_pool(p, False), layers, i)
    inter = act(inter)
    p = p + inter[:, None, None]
    prob, i = np_conv(p, layers, i, bn=False)
    pas, i = np_fc(inter, layers, i)
    v, i = np_conv(h, layers, i)
    v = act(v)
    vi, i = np_fc(np_pool(v, True), layers, i)
    own, i = np_conv(v, layers, i, bn=False)
    misc, i = np_fc(act(vi), layers, i)
    assert i == len(layers)
    return {"policy": np.concatenate([prob[0].ravel(), pas[:1]]), "opp_policy": np.concatenate([prob[1].ravel(), pas[1:2]]),
            "wdl": misc[:3], "score": 20 * misc[8], "ownership": np.tanh(own[0].ravel())}


CONFIGS = {
    "v5-mixed": SayuriConfig(version=5, channels=12, blocks=[BlockSpec("residual", 0, 4), BlockSpec("bottleneck", 6, 0),
                                                             BlockSpec("nested-bottleneck", 6, 3), BlockSpec("residual")],
                             policy_channels=6, value_channels=5),
    "v4-mish-se": SayuriConfig(version=4, channels=8, blocks=[BlockSpec("residual", 0, 2)] * 2, policy_channels=4,
                               value_channels=4, activation="mish"),
    "v3-swish": SayuriConfig(version=3, channels=8, blocks=[BlockSpec("residual"), BlockSpec("residual", 0, 4)],
                             policy_channels=4, value_channels=4, activation="swish"),
}


def random_planes(rng: np.random.Generator, n: int, komi_code: int) -> np.ndarray:
    x = (rng.random((43, n, n)) < 0.3).astype(np.uint8)
    x[37:42] = 0
    x[42] = 1
    flat = x.reshape(43, -1)
    if komi_code >= 0:
        flat[39, :komi_code] = 1
    else:
        flat[40, :-komi_code] = 1
    return x


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("binary", [False, True])
def test_import_matches_numpy_reference(tmp_path, name, binary):
    cfg = CONFIGS[name]
    layers = layers_for(cfg, np.random.default_rng(7))
    path = tmp_path / "net.txt"
    write_sayuri(path, cfg, layers, binary=binary, with_stack=name != "v3-swish")  # old files lack a stack
    net, meta = import_sayuri(path)
    assert meta["sayuri_version"] == cfg.version and meta["encoder"] == "sayuri-v3"
    rng = np.random.default_rng(1)
    for n, code in ((9, 15), (7, -13), (19, 0), (8, 15)):
        planes = random_planes(rng, n, code)
        with torch.no_grad():
            out = net(torch.from_numpy(planes).float()[None])
        ref = np_forward(cfg, layers, np_inputs(planes, code / 2.0))
        for key, want in ref.items():
            got = out[key][0].double().numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{name} {key} N={n}")


def test_our_format_round_trip_and_load_any(tmp_path):
    cfg = CONFIGS["v5-mixed"]
    src = tmp_path / "sayuri.bin"
    write_sayuri(src, cfg, layers_for(cfg, np.random.default_rng(3)), binary=True)
    direct, meta = load_any_weights(src)  # a Sayuri file directly
    save_imported(tmp_path / "ours.safetensors", direct, meta)
    back, meta2 = load_any_weights(tmp_path / "ours.safetensors")
    assert meta2["encoder"] == "sayuri-v3" and back.config == direct.config
    x = torch.from_numpy(random_planes(np.random.default_rng(0), 9, 15)).float()[None]
    with torch.no_grad():
        a, b = direct(x), back(x)
    for k in ("policy", "wdl", "score", "ownership"):
        assert torch.equal(a[k], b[k])
    assert back.fold_batchnorm() is not back


def test_load_any_reads_our_own_nets(tmp_path):
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    net = Net(NetConfig(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8))
    save_weights(tmp_path / "own.safetensors", net, {"name": "own"})
    got, meta = load_any_weights(tmp_path / "own.safetensors")
    assert isinstance(got, Net) and meta["name"] == "own"


def _write(tmp_path, cfg=None, **edits) -> str:
    cfg = cfg or CONFIGS["v4-mish-se"]
    path = tmp_path / "bad.txt"
    write_sayuri(path, cfg, layers_for(cfg, np.random.default_rng(0)))
    text = path.read_text()
    for old, new in edits.items():
        text = text.replace(old.replace("_", " "), new)
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("edit,message", [
    ({"Version_4": "Version 7"}, "unknown weights version 7"),
    ({"Version_4": "Version 2"}, "weights version 2"),
    ({"ResidualBlock-SE\n": "MixerBlock-SE\n"}, "'MixerBlock' is not supported"),
    ({"ResidualBlock-SE\n": "FancyBlock-SE\n"}, "'FancyBlock' is unknown"),
    ({"PolicyHeadType_Normal": "PolicyHeadType RepLK"}, "policy head type 'RepLK'"),
    ({"ActivationFunction_mish": "ActivationFunction tanhish"}, "unknown activation function"),
    ({"get_main": "hello"}, "not a Sayuri weights file"),
])
def test_malformed_files_name_the_cause(tmp_path, edit, message):
    path = _write(tmp_path, **edit)
    with pytest.raises(SayuriWeightsError, match=message):
        import_sayuri(path)


def test_truncated_and_wrong_sizes(tmp_path):
    cfg = CONFIGS["v4-mish-se"]
    layers = layers_for(cfg, np.random.default_rng(0))
    for binary in (False, True):
        path = tmp_path / f"t{binary}"
        write_sayuri(path, cfg, layers, binary=binary)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(SayuriWeightsError, match="truncated|values"):
            read_sayuri(path)
    layers[3].tensors[0] = layers[3].tensors[0][:-1]
    write_sayuri(tmp_path / "short", cfg, layers)
    with pytest.raises(SayuriWeightsError, match="layer 3 .* expected"):
        read_sayuri(tmp_path / "short")
    assert issubclass(SayuriWeightsError, WeightsError)


def test_cli_import_weights(tmp_path, capsys):
    cfg = CONFIGS["v3-swish"]
    src = tmp_path / "net.txt"
    write_sayuri(src, cfg, layers_for(cfg, np.random.default_rng(5)))
    out = tmp_path / "out" / "net.safetensors"
    assert cli.main([str(src), "-o", str(out), "--check"]) == 0
    printed = capsys.readouterr().out
    assert "version 3" in printed
    assert re.search(r"top policy [A-HJ-T]\d{1,2} 0\.\d{3}, [A-HJ-T]\d{1,2} 0\.\d{3}, [A-HJ-T]\d{1,2} 0\.\d{3}$",
                     printed.splitlines()[1]), printed  # vertices, not action indices
    net, meta = load_any_weights(out)
    assert meta["name"] == "net" and len(net.config.blocks) == 2
    bad = _write(tmp_path, **{"Version_4": "Version 9"})
    assert cli.main([bad, "-o", str(tmp_path / "x")]) == 2  # a rejected input file (usererror)
    assert "version 9" in capsys.readouterr().err


def test_torch_backend_runs_an_imported_net(tmp_path):
    from sayuri_async.go.board import new_board
    from sayuri_async.net.backends import TorchBackend
    from sayuri_async.encoders import get_encoder

    ENCODER = get_encoder("sayuri-v3")

    cfg = CONFIGS["v5-mixed"]
    path = tmp_path / "net.txt"
    write_sayuri(path, cfg, layers_for(cfg, np.random.default_rng(11)))
    net, _ = import_sayuri(path)
    be = TorchBackend(net, device="cpu", max_batch=4)
    assert be.encoder == "sayuri-v3" and be.planes == 43
    batch = np.stack([ENCODER(new_board(9)), ENCODER(new_board(9, komi=-4.0))])
    out = be.run(batch)
    with torch.no_grad():
        ref = net(torch.from_numpy(batch).float())
    np.testing.assert_allclose(out.policy, torch.softmax(ref["policy"], 1).numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.score, ref["score"].numpy(), rtol=1e-5, atol=1e-5)
    assert not np.allclose(out.wdl[0], out.wdl[1])  # komi reaches the net
