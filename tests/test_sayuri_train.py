"""Training a Sayuri network: the trainable SayuriNet equals the file before any
step (numpy reference), train --init takes a Sayuri file and our import of
one, every head gets a gradient from Sayuri-style targets and nothing from
missing ones, and the Sayuri export reads back to the same outputs in the
struct and parameter order of docs/sayuri.md."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sayuri_async.sayuri import export as sayuri_export
from sayuri_async.sayuri.model import POLICY_OUTPUTS, VALUE_MISC, BlockSpec, Norm, SayuriConfig, SayuriNet
from sayuri_async.sayuri.weights import import_sayuri, layers_for, load_any_weights, save_imported, write_sayuri
from sayuri_async.train.config import LossConfig, from_dict
from sayuri_async.chunkfile import read_chunk
from sayuri_async.train.dataset import StreamSpec, make_batch, training_arrays
from sayuri_async.train.losses import SAYURI_LOSS_NAMES, compute_losses
from sayuri_async.train.trainer import Trainer
from test_sayuri_weights import np_forward, np_inputs, random_planes
from test_train_chunks import make_chunk

CFG = SayuriConfig(version=5, channels=8,
                   blocks=[BlockSpec("residual", 0, 4), BlockSpec("bottleneck", 4, 0),
                           BlockSpec("nested-bottleneck", 4, 2)],
                   policy_channels=4, value_channels=4, activation="mish")
N = 7


def sayuri_file(tmp_path: Path, cfg: SayuriConfig = CFG, binary: bool = False, seed: int = 3):
    layers = layers_for(cfg, np.random.default_rng(seed))
    path = tmp_path / ("net.bin" if binary else "net.txt")
    write_sayuri(path, cfg, layers, binary=binary)
    return path, layers


def planes_batch(rng: np.random.Generator, count: int, n: int = N) -> np.ndarray:
    return np.stack([random_planes(rng, n, int(rng.integers(-15, 16))) for _ in range(count)])


def outputs(net: SayuriNet, x: np.ndarray) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = net(torch.from_numpy(x).float())
    return {k: v.double().numpy() for k, v in out.items()}


def assert_same(a: dict, b: dict, tol: float = 1e-5, keys=("policy_all", "misc", "ownership")) -> None:
    for k in keys:
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=tol, err_msg=k)


@pytest.mark.parametrize("binary", [False, True])
def test_trainable_net_is_the_file_before_the_first_step(tmp_path, binary):
    path, layers = sayuri_file(tmp_path, binary=binary)
    net, _ = import_sayuri(path)
    norms = [m for m in net.modules() if isinstance(m, Norm)]
    assert len(norms) == sum(1 for layer in layers if layer.kind == "BatchNorm")  # one trainable norm per BN
    rng = np.random.default_rng(0)
    x = planes_batch(rng, 6)
    got = outputs(net.eval(), x)
    for i in range(len(x)):  # the numpy reference reads the file's unfolded tensors
        komi = (int(x[i, 39].sum()) - int(x[i, 40].sum())) / 2.0
        ref = np_forward(CFG, layers, np_inputs(x[i], komi))
        np.testing.assert_allclose(got["policy"][i], ref["policy"], atol=1e-5)
        np.testing.assert_allclose(got["wdl"][i], ref["wdl"], atol=1e-5)
        np.testing.assert_allclose(got["ownership"][i], ref["ownership"], atol=1e-5)
    # calibrated on a batch: the eval function stays, and training mode on that batch gives it too
    net.calibrate_norms(torch.from_numpy(x).float())
    assert not all(torch.equal(m.weight, torch.ones_like(m.weight)) for m in norms)
    assert_same(outputs(net.eval(), x), got)
    assert_same(outputs(net.train(), x), got)
    # fixed norms: training mode is the eval function on any batch (and moves no statistics)
    net.set_norm_mode("fixed")
    other = planes_batch(rng, 3)
    assert_same(outputs(net.train(), other), outputs(net.eval(), other))


def sayuri_chunk(path: Path, seed: int, full: bool) -> None:
    """A 7x7 sayuri-v3 chunk; with ``full`` it has the Sayuri targets."""
    make_chunk(path, n=N, positions=64, seed=seed, planes=43, encoder="sayuri-v3")
    if not full:
        return
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    rng = np.random.default_rng(seed)
    m, a = len(arrays["action"]), N * N + 1
    opp = rng.random((m, a)) ** 4
    arrays["opp_policy"] = (opp / opp.sum(axis=1, keepdims=True)).astype(np.float16)
    arrays["q_avg"] = np.tanh(rng.normal(0, 0.5, (m, 4))).astype(np.float32)
    arrays["score_avg"] = rng.normal(0, 5, (m, 4)).astype(np.float32)
    arrays["q_avg"][:5] = np.nan  # unknown rows stay unknown
    arrays["stddev"] = np.abs(rng.normal(0, 1, (m, 2))).astype(np.float32)
    arrays["policy_kld"] = np.abs(rng.normal(0, 1, m)).astype(np.float32)
    np.savez_compressed(path, **arrays)


def batch_of(path: Path, rows: int = 16) -> dict[str, torch.Tensor]:
    arrays = read_chunk(path, N, "sayuri-v3", 43)
    block = training_arrays(arrays, slice(None))
    spec = StreamSpec(files=(), board_size=N, encoder="sayuri-v3", planes=43, batch_size=rows,
                      shuffle_buffer=64, seed=0, world=1, workers=0, symmetries=False)
    return {k: torch.from_numpy(np.asarray(v)) for k, v in make_batch(block, np.arange(rows), None, spec).items()}


def grads(net: SayuriNet, batch: dict[str, torch.Tensor]) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    net.zero_grad()
    targets = {k: v.float() for k, v in batch.items() if k != "planes"}
    total, parts = compute_losses(net.train()(batch["planes"].float()), targets, LossConfig())
    total.backward()
    return {k: float(v.detach()) for k, v in parts.items()}, {n: p.grad for n, p in net.named_parameters()}


def test_every_head_trains_and_missing_targets_stay_masked(tmp_path):
    path, _ = sayuri_file(tmp_path)
    net, _ = import_sayuri(path)
    sayuri_chunk(tmp_path / "full.npz", 1, full=True)
    sayuri_chunk(tmp_path / "old.npz", 2, full=False)
    batch = batch_of(tmp_path / "full.npz")
    parts, g = grads(net, batch)
    assert set(SAYURI_LOSS_NAMES) <= set(parts) and all(np.isfinite(v) for v in parts.values())
    # the soft opponent policy is the target, not a one-hot
    assert (batch["opp_policy"] > 0).sum(dim=1).min() > 1
    for name, grad in g.items():
        assert grad is not None and grad.abs().sum() > 0, name
    out_rows = g["policy_out.weight"].abs().sum(dim=(1, 2, 3))
    misc_rows = g["value_misc.weight"].abs().sum(dim=1)
    assert out_rows.shape == (POLICY_OUTPUTS,) and (out_rows > 0).all()
    assert misc_rows.shape == (VALUE_MISC,) and (misc_rows > 0).all()
    # an older chunk: no averages, so the heads that need them get nothing
    old = batch_of(tmp_path / "old.npz")
    assert float(old["q_avg_mask"].sum()) == 0 and float(old["score_avg_mask"].sum()) == 0
    parts, g = grads(net, old)
    assert parts["score_values"] == 0 and parts["q_error"] == 0 and parts["score_error"] == 0
    assert parts["optimistic_policy"] == 0 and parts["q_values"] > 0  # the result column is always known
    misc_rows = g["value_misc.weight"].abs().sum(dim=1)
    assert (misc_rows[[3]] > 0).all()  # Q output 0: the game result
    assert (misc_rows[4:8] == 0).all() and (misc_rows[9:15] == 0).all()  # averages and errors: no target


def train_config(tmp_path: Path, data: Path, **optim) -> object:
    return from_dict({
        "data": {"dir": str(data), "board_size": N, "workers": 0, "shuffle_buffer": 128,
                 "window_min_positions": 100_000},
        "optim": {"batch_size": 16, **optim},
        "schedule": {"reference_batch": 16, "warmup": 0, "boundaries": [1000], "rates": [0.01, 0.005],
                     "total": 2000},
        "run": {"out": str(tmp_path / "run"), "log_every": 2, "checkpoint_every": 4, "export_every": 4,
                "progress": "off", "device": "cpu"},
    }, "test")


@pytest.mark.parametrize("source", ["file", "import"])
def test_train_init_takes_a_sayuri_net(tmp_path, source):
    path, _ = sayuri_file(tmp_path)
    if source == "import":
        net, meta = import_sayuri(path)
        path = tmp_path / "imported.safetensors"
        save_imported(path, net, meta)
    data = tmp_path / "data"
    for i in range(3):
        sayuri_chunk(data / f"chunk-0-1-{i}.npz", 10 + i, full=i != 1)
    cfg = train_config(tmp_path, data)
    trainer = Trainer(cfg, steps=6, init=str(path), say=lambda _: None)
    file_net, _ = import_sayuri(tmp_path / "net.txt")
    x = planes_batch(np.random.default_rng(5), 4)
    assert_same(outputs(trainer.net.eval(), x), outputs(file_net, x))  # before the first step
    assert trainer.step == 0 and not trainer.optimizer.state  # a fresh optimizer
    result = trainer.run()
    assert result.steps == 6 and np.isfinite(result.losses["loss"])
    assert set(SAYURI_LOSS_NAMES) <= set(result.losses)
    log = (tmp_path / "run" / "train_log.csv").read_text().splitlines()
    assert "q_error" in log[0] and len(log) == 4
    trained, meta = load_any_weights(result.export)
    assert isinstance(trained, SayuriNet) and meta["step"] == 6
    assert trained.config.to_dict() | {"norm": "batch"} == CFG.to_dict() | {"norm": "batch"}
    # it trained: the export differs from the file; resume continues it
    assert float(np.abs(outputs(trained, x)["misc"] - outputs(file_net, x)["misc"]).max()) > 1e-6
    again = Trainer(cfg, steps=8, resume=True, say=lambda _: None).run()
    assert again.steps == 8


def test_fixed_norms_and_a_bad_init_file(tmp_path):
    path, _ = sayuri_file(tmp_path)
    data = tmp_path / "data"
    sayuri_chunk(data / "chunk-0-1-0.npz", 3, full=True)
    trainer = Trainer(train_config(tmp_path, data, norms="fixed"), steps=2, init=str(path), say=lambda _: None)
    assert trainer.net.config.norm == "fixed" and not trainer.calibrate_pending
    bad = tmp_path / "bad.txt"
    bad.write_text("get main\nget info\nVersion 2\nend info\nget parameters\nend parameters\nend main\n")
    from sayuri_async.train.errors import TrainError

    with pytest.raises(TrainError, match="bad.txt: weights version 2"):
        Trainer(train_config(tmp_path / "b", data), steps=2, init=str(bad), say=lambda _: None)


# ------------------------------------------------------------------ export

def parse_text_weights(text: str) -> dict:
    """An independent reading of Sayuri's text format: sections in order,
    then two lines of numbers per struct line, then the end lines."""
    lines = text.split("\n")
    assert lines[0] == "get main" and lines[1] == "get info"
    i = 2
    info = {}
    while lines[i] != "end info":
        key, value = lines[i].split()
        info[key] = value
        i += 1
    assert lines[i + 1] == "get stack"
    i += 2
    stack = []
    while lines[i] != "end stack":
        stack.append(lines[i])
        i += 1
    assert lines[i + 1] == "get struct"
    i += 2
    struct = []
    while lines[i] != "end struct":
        words = lines[i].split()
        struct.append((words[0], tuple(int(w) for w in words[1:])))
        i += 1
    assert lines[i + 1] == "get parameters"
    i += 2
    tensors = []
    for _ in range(2 * len(struct)):
        tensors.append(np.array([float(w) for w in lines[i].split()], np.float32))
        i += 1
    assert lines[i:] == ["end parameters", "end main"]
    return {"info": info, "stack": stack, "struct": struct, "tensors": tensors}


def expected_struct(cfg: SayuriConfig) -> list[tuple[str, tuple[int, ...]]]:
    """docs/sayuri.md's struct order for ``cfg``."""
    c, p, v = cfg.channels, cfg.policy_channels, cfg.value_channels
    out = [("Convolution", (43, c, 3)), ("BatchNorm", (c,))]
    for b in cfg.blocks:
        k = b.inner
        convs = {"residual": [(c, c, 3), (c, c, 3)],
                 "bottleneck": [(c, k, 1), (k, k, 3), (k, k, 3), (k, c, 1)],
                 "nested-bottleneck": [(c, k, 1)] + [(k, k, 3)] * 4 + [(k, c, 1)]}[b.kind]
        for dims in convs:
            out += [("Convolution", dims), ("BatchNorm", (dims[1],))]
        if b.se:
            out += [("FullyConnect", (3 * c, b.se)), ("FullyConnect", (b.se, 2 * c))]
    out += [("Convolution", (c, p, 1)), ("BatchNorm", (p,)), ("FullyConnect", (3 * p, p)),
            ("Convolution", (p, POLICY_OUTPUTS, 1)), ("FullyConnect", (p, POLICY_OUTPUTS)),
            ("Convolution", (c, v, 1)), ("BatchNorm", (v,)), ("FullyConnect", (3 * v, 3 * v)),
            ("Convolution", (v, 1, 1)), ("FullyConnect", (3 * v, VALUE_MISC))]
    return out


def trained_net(tmp_path: Path) -> SayuriNet:
    """An import whose norms and weights moved away from the file's."""
    path, _ = sayuri_file(tmp_path, seed=11)
    net, _ = import_sayuri(path)
    net.calibrate_norms(torch.from_numpy(planes_batch(np.random.default_rng(2), 8)).float())
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return net.eval()


@pytest.mark.parametrize("fmt", ["text", "bin"])
def test_export_round_trip(tmp_path, fmt, capsys):
    net = trained_net(tmp_path)
    ours = tmp_path / "trained.safetensors"
    save_imported(ours, net, {"step": 5})
    out = tmp_path / f"exported.{fmt}"
    assert sayuri_export.main([str(ours), "-o", str(out), "--format", fmt]) == 0
    assert "largest output difference" in capsys.readouterr().out
    back, meta = import_sayuri(out)
    assert meta["sayuri_float_type"] == ("float32bin" if fmt == "bin" else "float32")
    x = planes_batch(np.random.default_rng(9), 5)
    assert_same(outputs(back, x), outputs(net, x))
    assert_same(outputs(back, planes_batch(np.random.default_rng(9), 2, n=19)),
                outputs(net, planes_batch(np.random.default_rng(9), 2, n=19)))
    again = tmp_path / "again.safetensors"  # imported again into our format: still the same
    save_imported(again, back, meta)
    assert_same(outputs(load_any_weights(again)[0], x), outputs(net, x))


def test_exported_text_follows_the_documented_layout(tmp_path):
    net = trained_net(tmp_path)
    path = tmp_path / "net.txt"
    sayuri_export.export_sayuri(net, path)
    doc = parse_text_weights(path.read_text())
    info = doc["info"]
    assert [info[k] for k in ("Version", "FloatType", "InputChannels", "ResidualChannels", "ResidualBlocks",
                              "PolicyHeadChannels", "ValueHeadChannels", "ValueMisc", "PolicyHeadType",
                              "ActivationFunction")] == ["5", "float32", "43", "8", "3", "4", "4", "15",
                                                         "Normal", "mish"]
    assert doc["stack"] == ["ResidualBlock-SE", "BottleneckBlock", "NestedBottleneckBlock-SE"]
    assert doc["struct"] == expected_struct(CFG)
    sizes = {"Convolution": lambda d: (d[0] * d[1] * d[2] * d[2], d[1]), "BatchNorm": lambda d: (d[0], d[0]),
             "FullyConnect": lambda d: (d[0] * d[1], d[1])}
    for k, (kind, dims) in enumerate(doc["struct"]):
        assert (len(doc["tensors"][2 * k]), len(doc["tensors"][2 * k + 1])) == sizes[kind](dims)
        if kind == "BatchNorm":  # the norm is folded into the convolution before it
            assert not doc["tensors"][2 * k].any() and (doc["tensors"][2 * k + 1] == 1).all()
    # the input convolution's numbers are the folded network's, weights [out, in, k, k] then biases
    folded = net.fold_batchnorm()
    np.testing.assert_array_equal(doc["tensors"][0], folded.input_conv.conv.weight.detach().numpy().ravel())
    np.testing.assert_array_equal(doc["tensors"][1], folded.input_conv.conv.bias.detach().numpy())
    # the binary file: the same header but FloatType, then the same numbers, each tensor ending ff ff ff ff
    bin_path = tmp_path / "net.bin"
    sayuri_export.export_sayuri(net, bin_path, binary=True)
    raw = bin_path.read_bytes()
    head, _, body = raw.partition(b"get parameters\n")
    assert head.decode() == path.read_text().partition("get parameters\n")[0].replace("float32\n", "float32bin\n", 1)
    assert body.endswith(b"end parameters\nend main")
    values = np.frombuffer(body[:len(body) - len(b"end parameters\nend main")], "<f4")
    sentinel = np.frombuffer(b"\xff\xff\xff\xff", "<f4")[0]
    flat = np.concatenate([np.r_[t, np.float32(0)] for t in doc["tensors"]])
    marks = np.cumsum([len(t) + 1 for t in doc["tensors"]]) - 1
    assert len(values) == len(flat)
    assert np.isnan(values[marks]).all() and values[marks].view(np.uint32).tolist() == [sentinel.view(np.uint32)] * len(marks)
    keep = np.ones(len(values), bool)
    keep[marks] = False
    np.testing.assert_array_equal(values[keep], flat[keep])


def test_export_refuses_our_own_nets(tmp_path, capsys):
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    path = tmp_path / "ours.safetensors"
    save_weights(path, Net(NetConfig(blocks=1, channels=8)))
    from sayuri_async.cli import main as top

    assert top(["export", str(path), "-o", str(tmp_path / "x.txt")]) == 2  # through the command's dispatcher
    assert "not a Sayuri network" in capsys.readouterr().err
    assert sayuri_export.main([str(tmp_path / "missing"), "-o", str(tmp_path / "x.txt")]) == 2
    assert not (tmp_path / "x.txt").exists()


def test_term_averages_and_self_play_chunks_carry_them():
    from sayuri_async.go import board as B
    from sayuri_async.sayuri.targets import term_averages
    from sayuri_async.selfplay.game import GameRecord
    from sayuri_async.selfplay.writer import records_to_arrays

    values = np.array([0.5, -0.2, 0.3, 0.9])
    to_move = np.array([1, 2, 1, 2])
    n = 3
    got = term_averages(values, to_move, n)
    for i in range(4):  # Sayuri's loop, written out
        for j, f in enumerate((0.18, 0.06, 0.02)):
            lam = 1.0 / (1.0 + 9 * f)
            want = sum((1 - lam) * lam ** h * (1 if to_move[min(i + h, 3)] == to_move[i] else -1)
                       * values[min(i + h, 3)] for h in range(4))
            assert got[i, j] == pytest.approx(want, abs=1e-12)
    rec = GameRecord(size=n, komi=7.5)
    for i, v in enumerate((0.75, 0.4, 0.65, 0.95)):
        rec.planes.append(np.zeros((25, 2), np.uint8))
        rec.policy.append(np.full(10, 0.1, np.float32))
        rec.action.append(i)
        rec.to_move.append(B.BLACK if i % 2 == 0 else B.WHITE)
        rec.full_search.append(True)
        rec.after_resign.append(False)
        rec.root_value.append(v)
    rec.ownership = np.zeros(9)
    arrays = records_to_arrays([rec], 25)
    q = 2 * np.array(rec.root_value) - 1
    np.testing.assert_allclose(arrays["q_avg"][:, 0], q, rtol=1e-6)
    np.testing.assert_allclose(arrays["q_avg"][:, 1:], term_averages(q, np.array(rec.to_move), n), rtol=1e-5)
