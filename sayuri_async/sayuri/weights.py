"""Sayuri weights files: reader, importer onto ``SayuriNet``, and a writer.

Vocabulary
----------
weights file  Sayuri's format (``train/torch/network.py`` writes it,
              ``src/neural/loader.cc`` reads it): text sections ``get main``,
              ``get info`` (``Key value`` lines: Version, InputChannels,
              ResidualChannels, ResidualBlocks, PolicyHeadChannels /
              ValueHeadChannels (version 5) or PolicyExtract / ValueExtract
              (3-4), PolicyHeadType, ActivationFunction, FloatType...),
              ``get stack`` (one block name per line, e.g.
              ``ResidualBlock-SE``; absent in old files: then residual
              blocks, SE where the struct says so), ``get struct`` (one layer
              shape per line: ``Convolution in out k``, ``BatchNorm c``,
              ``FullyConnect in out``), ``get parameters``, ``end`` lines.
parameters    two tensors per struct line, in order: conv weights ``[out,
              in, k, k]`` and biases; BN means and standard deviations (gamma
              and beta merged in); FC weights ``[out, in]`` and biases. Text:
              one line of numbers per tensor. ``FloatType float32bin``:
              little-endian float32 values, each tensor ended by the bytes
              ``ff ff ff ff``.
fold          conv + BN -> conv with bias: ``w / std``, ``(b - mean) / std``,
              as Sayuri's loader does.
Layer         one struct line with its two tensors (``kind``, ``dims``,
              ``tensors``); ``SayuriFile`` is a parsed file.
ours          an import saved in our safetensors format: the header is
              ``net/weights.py``'s plus ``architecture = "sayuri"`` and the
              ``SayuriConfig``; ``load_any_weights`` reads it back, as well as
              Sayuri files and our own Net files.

checked before allocating
              the network is built only once its size is within bounds
              (``net.weights.MAX_BLOCKS``, ``MAX_WIDTH``) and the file's struct
              (which its tensors were checked against) is exactly the layer
              list the info and stack describe (``struct_of``); a safetensors
              import's header tensor table is checked against the network
              built on torch's ``meta`` device (``net.weights``). An info
              claiming 10^6 channels is refused in one line, allocating
              nothing.

Supported: versions 3, 4 and 5 (43 input planes); residual, bottleneck and
nested-bottleneck blocks, each with or without SE; the normal policy head;
every activation Sayuri knows. Rejected with a message naming the cause:
versions 1-2 (38 planes) and 6+, MixerBlock, the RepLK policy head.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..fileio import atomic_path, write_safetensors
from ..net.model import Net, NetConfig
from ..net.weights import (WeightsError, check_tensor_table, expected_shapes, header_of, load_weights, read_header,
                           read_meta, read_tensors, size_problem, tensor_table)
from .model import (ACTIVATIONS, POLICY_OUTPUTS, VALUE_MISC, BlockSpec, SayuriConfig,
                    SayuriNet)

SUPPORTED_VERSIONS = (3, 4, 5)
SENTINEL = b"\xff\xff\xff\xff"
_FLOAT_TEXT = "{:.9g}"
_KIND_NAMES = {"ResidualBlock": "residual", "BottleneckBlock": "bottleneck",
               "NestedBottleneckBlock": "nested-bottleneck"}
_NAME_OF_KIND = {v: k for k, v in _KIND_NAMES.items()}
_LAYER_DIMS = {"Convolution": 3, "BatchNorm": 1, "FullyConnect": 2, "DepthwiseConvolution": 3}


class SayuriWeightsError(WeightsError):
    """A Sayuri weights file that cannot be read or is not supported."""


@dataclass
class Layer:
    kind: str
    dims: tuple[int, ...]
    tensors: list[np.ndarray] = field(default_factory=list)

    def sizes(self) -> tuple[int, int]:
        d = self.dims
        if self.kind in ("Convolution", "DepthwiseConvolution"):
            return d[0] * d[1] * d[2] * d[2], d[1]
        if self.kind == "BatchNorm":
            return d[0], d[0]
        return d[0] * d[1], d[1]


@dataclass
class SayuriFile:
    info: dict[str, str]
    stack: list[str]
    layers: list[Layer]
    binary: bool

    @property
    def version(self) -> int:
        return int(self.info.get("Version", "1"))


# ------------------------------------------------------------------ reading

def _section(lines: list[str], i: int, path: str) -> tuple[list[str], int]:
    out = []
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if s.startswith("end"):
            return out, i
        if s and not s.startswith("#"):
            out.append(s)
    raise SayuriWeightsError(f"{path}: a section is not closed by 'end'")


def read_sayuri(path: str | os.PathLike) -> SayuriFile:
    """Parse a Sayuri weights file (text or float32bin) without interpreting it."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise SayuriWeightsError(f"{path}: cannot read: {e}") from e
    if not data.startswith(b"get main"):
        raise SayuriWeightsError(f"{path}: not a Sayuri weights file (does not start with 'get main')")
    mark = data.find(b"get parameters")
    if mark < 0:
        raise SayuriWeightsError(f"{path}: no 'get parameters' section")
    nl = data.find(b"\n", mark)
    head = data[:mark].decode("utf-8", "replace").splitlines()
    info: dict[str, str] = {}
    stack: list[str] = []
    struct: list[Layer] = []
    i = 1
    while i < len(head):
        words = head[i].split()
        i += 1
        if len(words) >= 2 and words[0] == "get":
            body, i = _section(head, i, path)
            if words[1] == "info":
                for s in body:
                    kv = s.split()
                    if len(kv) >= 2:
                        info[kv[0]] = kv[1]
            elif words[1] == "stack":
                stack = [s.split()[0] for s in body]
            elif words[1] == "struct":
                for s in body:
                    kv = s.split()
                    if kv[0] not in _LAYER_DIMS:
                        raise SayuriWeightsError(f"{path}: unknown layer type {kv[0]!r} in struct")
                    try:
                        dims = tuple(int(v) for v in kv[1:])
                    except ValueError:
                        raise SayuriWeightsError(f"{path}: bad layer shape {s!r}") from None
                    if len(dims) != _LAYER_DIMS[kv[0]] or min(dims) < 1:
                        raise SayuriWeightsError(f"{path}: bad layer shape {s!r}")
                    struct.append(Layer(kv[0], dims))
    binary = info.get("FloatType", "float32") == "float32bin"
    body_start = nl + 1 if nl >= 0 else len(data)
    want = 2 * len(struct)
    if binary:
        tensors, rest = _binary_tensors(data, body_start, want, path)
    else:
        tensors, rest = _text_tensors(data, body_start, want, path)
    if not rest.lstrip().startswith(b"end"):
        raise SayuriWeightsError(f"{path}: parameters are not followed by 'end' "
                                 f"(more tensors than the struct's {len(struct)} layers?)")
    for k, layer in enumerate(struct):
        layer.tensors = tensors[2 * k:2 * k + 2]
        for j, (got, need) in enumerate(zip((t.size for t in layer.tensors), layer.sizes())):
            if got != need:
                raise SayuriWeightsError(
                    f"{path}: layer {k} ({layer.kind} {' '.join(map(str, layer.dims))}) tensor {j} "
                    f"has {got} values, expected {need}")
    return SayuriFile(info, stack, struct, binary)


def _text_tensors(data: bytes, start: int, want: int, path: str) -> tuple[list[np.ndarray], bytes]:
    out: list[np.ndarray] = []
    pos = start
    while len(out) < want:
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        line = data[pos:end]
        pos = end + 1
        if not line.strip():
            if end >= len(data):
                break
            continue
        words = line.split()
        if words[0] == b"end":
            break
        try:
            out.append(np.array([float(v) for v in words], dtype=np.float32))
        except ValueError:
            raise SayuriWeightsError(f"{path}: tensor {len(out)} holds a non-number") from None
    if len(out) < want:
        raise SayuriWeightsError(f"{path}: {len(out)} parameter tensors, the struct needs {want} (truncated?)")
    return out, data[pos:]


def _binary_tensors(data: bytes, start: int, want: int, path: str) -> tuple[list[np.ndarray], bytes]:
    out: list[np.ndarray] = []
    pos = start
    while len(out) < want:
        # the sentinel is aligned to the tensor's start
        end = pos
        while True:
            end = data.find(SENTINEL, end)
            if end < 0:
                raise SayuriWeightsError(
                    f"{path}: {len(out)} parameter tensors, the struct needs {want} (truncated?)")
            if (end - pos) % 4 == 0:
                break
            end += 1
        out.append(np.frombuffer(data, dtype="<f4", count=(end - pos) // 4, offset=pos).astype(np.float32))
        pos = end + 4
    return out, data[pos:]


# ------------------------------------------------------------ interpretation

def _int_info(sf: SayuriFile, key: str, path: str) -> int:
    try:
        return int(sf.info[key])
    except KeyError:
        raise SayuriWeightsError(f"{path}: info has no {key}") from None
    except ValueError:
        raise SayuriWeightsError(f"{path}: info {key} {sf.info[key]!r} is not an integer") from None


def _infer_stack(sf: SayuriFile, blocks: int, path: str) -> list[str]:
    stack, k = [], 2
    for _ in range(blocks):
        name = "ResidualBlock"
        k += 4
        if k < len(sf.layers) and sf.layers[k].kind == "FullyConnect":
            name += "-SE"
            k += 2
        stack.append(name)
    if len(sf.layers) != k + 10:
        raise SayuriWeightsError(f"{path}: no stack section and the struct is not a residual tower")
    return stack


def config_of(sf: SayuriFile, path: str = "") -> SayuriConfig:
    """The architecture, or SayuriWeightsError naming what is unsupported."""
    v = sf.version
    if v in (1, 2):
        raise SayuriWeightsError(f"{path}: weights version {v} (38 input planes, Sayuri's first encoder) "
                                 f"is not supported; versions {SUPPORTED_VERSIONS} are")
    if v not in SUPPORTED_VERSIONS:
        raise SayuriWeightsError(f"{path}: unknown weights version {v}; supported: {SUPPORTED_VERSIONS}")
    head = sf.info.get("PolicyHeadType", "Normal")
    if head.lower() != "normal":
        raise SayuriWeightsError(f"{path}: policy head type {head!r} is not supported (only 'Normal')")
    act = sf.info.get("ActivationFunction", "relu").lower()
    if act not in ACTIVATIONS:
        raise SayuriWeightsError(f"{path}: unknown activation function {act!r}")
    planes = _int_info(sf, "InputChannels", path)
    if planes != 43:
        raise SayuriWeightsError(f"{path}: {planes} input channels; version {v} networks take 43")
    channels = _int_info(sf, "ResidualChannels", path)
    nblocks = _int_info(sf, "ResidualBlocks", path)
    pkey, vkey = ("PolicyHeadChannels", "ValueHeadChannels") if v >= 5 else ("PolicyExtract", "ValueExtract")
    stack = sf.stack or _infer_stack(sf, nblocks, path)
    if len(stack) != nblocks:
        raise SayuriWeightsError(f"{path}: stack lists {len(stack)} blocks, ResidualBlocks says {nblocks}")
    specs = []
    k = 2
    for i, name in enumerate(stack):
        parts = name.split("-")
        kinds = [p for p in parts if p in _KIND_NAMES]
        for p in parts:
            if p in _KIND_NAMES or p in ("SE", "FixUp"):
                continue
            what = "is not supported" if p.startswith("MixerBlock") else "is unknown"
            raise SayuriWeightsError(f"{path}: block {i} kind {p!r} {what} (block {name!r})")
        if len(kinds) != 1:
            raise SayuriWeightsError(f"{path}: block {i} ({name!r}) names no single basic block")
        kind = _KIND_NAMES[kinds[0]]
        nconv = {"residual": 2, "bottleneck": 4, "nested-bottleneck": 6}[kind]
        inner = 0
        if kind != "residual" and k < len(sf.layers):
            inner = sf.layers[k].dims[1]
        k += 2 * nconv
        se = 0
        if "SE" in parts:
            if k >= len(sf.layers):
                raise SayuriWeightsError(f"{path}: struct ends inside block {i}")
            se = sf.layers[k].dims[1]
            k += 2
        specs.append(BlockSpec(kind, inner, se))
    return SayuriConfig(version=v, channels=channels, blocks=specs,
                        policy_channels=_int_info(sf, pkey, path), value_channels=_int_info(sf, vkey, path),
                        activation=act)


def _take(layers: list[Layer], k: int, kind: str, dims: tuple[int, ...], what: str, path: str) -> Layer:
    if k >= len(layers):
        raise SayuriWeightsError(f"{path}: struct ends before {what}")
    layer = layers[k]
    if layer.kind != kind or layer.dims != dims:
        raise SayuriWeightsError(f"{path}: layer {k} ({what}) is {layer.kind} {layer.dims}, expected {kind} {dims}")
    return layer


def _fold(conv: Layer, bn: Layer | None) -> tuple[torch.Tensor, torch.Tensor]:
    cin, cout, k = conv.dims
    w = conv.tensors[0].astype(np.float64).reshape(cout, cin, k, k)
    b = conv.tensors[1].astype(np.float64)
    if bn is not None:
        mean, std = bn.tensors[0].astype(np.float64), bn.tensors[1].astype(np.float64)
        w = w / std[:, None, None, None]
        b = (b - mean) / std
    return torch.from_numpy(w.astype(np.float32)), torch.from_numpy(b.astype(np.float32))


def sayuri_size_problem(cfg: SayuriConfig) -> str | None:
    """Why the network ``cfg`` describes is too large to build (or its widths
    are not whole numbers), or None: ``net.weights.size_problem``."""
    widths = {"channels": cfg.channels, "policy channels": cfg.policy_channels,
              "value channels": cfg.value_channels, "input planes": cfg.input_planes}
    problem = size_problem(widths, len(cfg.blocks))
    if problem is None:
        for i, b in enumerate(cfg.blocks):
            problem = problem or size_problem({f"block {i} inner channels": b.inner, f"block {i} SE channels": b.se}, 0)
    return problem


def struct_of(cfg: SayuriConfig) -> list[tuple[str, tuple[int, ...]]]:
    """The struct lines (kind, dims) of a file holding ``cfg``, in file
    order: the layers ``layers_for`` makes and ``build_net`` takes."""
    out: list[tuple[str, tuple[int, ...]]] = []

    def conv(cin: int, cout: int, k: int, bn: bool = True) -> None:
        out.append(("Convolution", (cin, cout, k)))
        if bn:
            out.append(("BatchNorm", (cout,)))

    def fc(nin: int, nout: int) -> None:
        out.append(("FullyConnect", (nin, nout)))

    c = cfg.channels
    conv(cfg.input_planes, c, 3)
    for spec in cfg.blocks:
        b = spec.inner
        if spec.kind == "residual":
            conv(c, c, 3), conv(c, c, 3)
        elif spec.kind == "bottleneck":
            conv(c, b, 1), conv(b, b, 3), conv(b, b, 3), conv(b, c, 1)
        else:
            conv(c, b, 1)
            for _ in range(4):
                conv(b, b, 3)
            conv(b, c, 1)
        if spec.se:
            fc(3 * c, spec.se), fc(spec.se, 2 * c)
    p, v = cfg.policy_channels, cfg.value_channels
    conv(c, p, 1), fc(3 * p, p), conv(p, POLICY_OUTPUTS, 1, bn=False), fc(p, POLICY_OUTPUTS)
    conv(c, v, 1), fc(3 * v, 3 * v), conv(v, 1, 1, bn=False), fc(3 * v, VALUE_MISC)
    return out


def check_struct(sf: SayuriFile, cfg: SayuriConfig, path: str = "") -> None:
    """SayuriWeightsError unless ``cfg`` (from the info and stack) is within
    bounds and its layers are the file's struct, one for one: checked before
    the network is allocated."""
    too_large = sayuri_size_problem(cfg)
    if too_large:
        raise SayuriWeightsError(f"{path}: the info describes a network of {too_large}")
    want = struct_of(cfg)
    got = [(layer.kind, layer.dims) for layer in sf.layers]
    for k, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise SayuriWeightsError(f"{path}: layer {k} is {g[0]} {g[1]}, expected {w[0]} {w[1]} "
                                     f"(the info and stack describe {cfg.short_name})")
    if len(got) < len(want):
        raise SayuriWeightsError(f"{path}: struct ends at layer {len(got)}; the info and stack describe "
                                 f"{cfg.short_name}, {len(want)} layers")
    if len(got) > len(want):
        raise SayuriWeightsError(f"{path}: {len(got) - len(want)} struct layers left over after the value head")


def build_net(sf: SayuriFile, path: str = "") -> SayuriNet:
    """A SayuriNet (eval mode) holding the file's weights, each batch norm
    folded into its convolution and its ``Norm`` at the identity."""
    cfg = config_of(sf, path)
    check_struct(sf, cfg, path)
    net = SayuriNet(cfg)
    L = sf.layers
    c = cfg.channels
    k = 0

    def conv_bn(mod: torch.nn.Conv2d, cin: int, cout: int, ks: int, what: str, bn: bool = True) -> None:
        nonlocal k
        conv = _take(L, k, "Convolution", (cin, cout, ks), what, path)
        norm = _take(L, k + 1, "BatchNorm", (cout,), what + " batch norm", path) if bn else None
        k += 2 if bn else 1
        w, b = _fold(conv, norm)
        with torch.no_grad():
            mod.weight.copy_(w)
            mod.bias.copy_(b)

    def fc(mod: torch.nn.Linear, nin: int, nout: int, what: str) -> None:
        nonlocal k
        layer = _take(L, k, "FullyConnect", (nin, nout), what, path)
        k += 1
        with torch.no_grad():
            mod.weight.copy_(torch.from_numpy(layer.tensors[0].reshape(nout, nin)))
            mod.bias.copy_(torch.from_numpy(layer.tensors[1]))

    conv_bn(net.input_conv.conv, cfg.input_planes, c, 3, "the input convolution")
    for i, (spec, blk) in enumerate(zip(cfg.blocks, net.blocks)):
        for j, cn in enumerate(blk.convs):
            conv = cn.conv
            conv_bn(conv, conv.in_channels, conv.out_channels, conv.kernel_size[0], f"block {i} convolution {j}")
        if blk.se is not None:
            fc(blk.se.squeeze, 3 * c, spec.se, f"block {i} SE squeeze")
            fc(blk.se.excite, spec.se, 2 * c, f"block {i} SE excite")
    p, v = cfg.policy_channels, cfg.value_channels
    conv_bn(net.policy_conv.conv, c, p, 1, "the policy head convolution")
    fc(net.policy_inter, 3 * p, p, "the policy intermediate layer")
    conv_bn(net.policy_out, p, POLICY_OUTPUTS, 1, "the policy output convolution", bn=False)
    fc(net.policy_pass, p, POLICY_OUTPUTS, "the pass output layer")
    conv_bn(net.value_conv.conv, c, v, 1, "the value head convolution")
    fc(net.value_inter, 3 * v, 3 * v, "the value intermediate layer")
    conv_bn(net.ownership_conv, v, 1, 1, "the ownership convolution", bn=False)
    fc(net.value_misc, 3 * v, VALUE_MISC, "the value misc layer")
    if k != len(L):
        raise SayuriWeightsError(f"{path}: {len(L) - k} struct layers left over after the value head")
    for name, t in net.state_dict().items():
        if not torch.isfinite(t).all():
            raise SayuriWeightsError(f"{path}: {name} holds NaN or infinity after folding")
    return net.eval()


def import_sayuri(path: str | os.PathLike) -> tuple[SayuriNet, dict[str, Any]]:
    """Read and convert a Sayuri weights file: ``(net, meta)``."""
    sf = read_sayuri(path)
    net = build_net(sf, str(path))
    meta = {"name": Path(path).stem, "source": "sayuri", "sayuri_version": sf.version,
            "sayuri_float_type": "float32bin" if sf.binary else "float32",
            "encoder": net.config.encoder}
    return net, meta


# --------------------------------------------------------- our file format

def save_imported(path: str | os.PathLike, net: SayuriNet, meta: dict[str, Any] | None = None) -> None:
    """Save a Sayuri net in our safetensors format (atomic), its norms folded
    into the convolutions (``SayuriNet.fold_batchnorm``): the same function,
    the tensors of an import."""
    meta = dict(meta or {})
    folded = net.fold_batchnorm() if isinstance(net, SayuriNet) else net
    header = header_of(folded, meta)  # reads only config.to_dict/encoder/sizes/short_name
    header["architecture"] = "sayuri"
    tensors = {k: t.detach().to("cpu", torch.float32).contiguous() for k, t in folded.state_dict().items()}
    write_safetensors(path, tensors, header)


def _our_key(key: str, want: dict[str, torch.Tensor]) -> str:
    """The current name of a tensor key: files written before the norms came
    name a convolution ``X.weight`` where it is now ``X.conv.weight``."""
    if key in want:
        return key
    stem, _, leaf = key.rpartition(".")
    moved = f"{stem}.conv.{leaf}"
    return moved if moved in want else key


def _load_imported(path: str, md: dict[str, str]) -> tuple[SayuriNet, dict[str, Any]]:
    """An import (or a trained export) in our format. Its norms may be stored
    (a checkpoint's full state) or folded away (then they start at the
    identity); older imports without norms load the same way."""
    try:
        cfg = SayuriConfig.from_dict(json.loads(md["config"]))
    except (KeyError, TypeError, ValueError, RecursionError) as e:
        raise WeightsError(f"{path}: config does not describe a Sayuri net: {e}") from e
    too_large = sayuri_size_problem(cfg)
    if too_large:
        raise WeightsError(f"{path}: the header's config describes a network of {too_large}")
    shapes = expected_shapes(lambda: SayuriNet(cfg))  # on the meta device: nothing allocated yet
    check_tensor_table(path, tensor_table(path), shapes, f"the {cfg.short_name} Sayuri net",
                       optional={k for k in shapes if ".norm." in k}, rename=lambda k: _our_key(k, shapes))
    net = SayuriNet(cfg)
    want = net.state_dict()
    net.load_state_dict(read_tensors(path, want, f"the {cfg.short_name} Sayuri net",
                                     optional={k for k in want if ".norm." in k},
                                     rename=lambda k: _our_key(k, want)), strict=False)
    meta = read_meta(path, md)
    meta.update(name=md.get("name", cfg.short_name), encoder=cfg.encoder, config=cfg.to_dict())
    return net.eval(), meta


def is_sayuri_file(path: str | os.PathLike) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"get main"
    except OSError:
        return False


def load_any_weights(path: str | os.PathLike, device: str = "cpu") -> tuple[torch.nn.Module, dict[str, Any]]:
    """``(module in eval mode, meta)`` from a Sayuri file (text or binary), an
    imported Sayuri net in our format, or one of our own Net files."""
    path = str(path)
    if is_sayuri_file(path):
        net, meta = import_sayuri(path)
        return net.to(device), meta
    md = read_header(path)
    if md.get("architecture") == "sayuri":
        net, meta = _load_imported(path, md)
        return net.to(device), meta
    return load_weights(path, device=device)


def config_from_dict(d: dict[str, Any]) -> Any:
    """A ``SayuriConfig`` for a Sayuri architecture's dict, else a ``NetConfig``."""
    if d.get("architecture") == "sayuri":
        return SayuriConfig.from_dict(d)
    return NetConfig.from_dict(d)


def new_net(cfg: Any) -> torch.nn.Module:
    """An untrained module for a config of either architecture."""
    return SayuriNet(cfg) if isinstance(cfg, SayuriConfig) else Net(cfg)


# ------------------------------------------------------------------ writing

def layers_for(cfg: SayuriConfig, rng: np.random.Generator) -> list[Layer]:
    """Random layers (with batch-norm means and deviations) in file order for
    ``cfg`` (``struct_of``'s lines): test nets and fixtures."""
    out: list[Layer] = []
    for kind, dims in struct_of(cfg):
        if kind == "Convolution":
            cin, cout, k = dims
            tensors = [rng.normal(0, np.sqrt(1.0 / (cin * k * k)), (cout, cin, k, k)), rng.normal(0, 0.05, cout)]
        elif kind == "BatchNorm":
            tensors = [rng.normal(0, 0.1, dims[0]), rng.uniform(0.5, 1.5, dims[0])]
        else:  # FullyConnect
            nin, nout = dims
            tensors = [rng.normal(0, np.sqrt(1.0 / nin), (nout, nin)), rng.normal(0, 0.05, nout)]
        out.append(Layer(kind, dims, tensors))
    for layer in out:
        layer.tensors = [np.asarray(t, np.float32).ravel() for t in layer.tensors]
    return out


def stack_names(cfg: SayuriConfig) -> list[str]:
    return [_NAME_OF_KIND[b.kind] + ("-SE" if b.se else "") for b in cfg.blocks]


def write_sayuri(path: str | os.PathLike, cfg: SayuriConfig, layers: list[Layer], binary: bool = False,
                 with_stack: bool = True) -> None:
    """Write a Sayuri weights file (text, or ``float32bin`` when ``binary``)
    through ``fileio.atomic_path``. Text numbers have 9 significant digits,
    which give every float32 back exactly."""
    v = cfg.version
    pkey, vkey = ("PolicyHeadChannels", "ValueHeadChannels") if v >= 5 else ("PolicyExtract", "ValueExtract")
    head = ["get main", "get info", "NNType Residual", f"Version {v}",
            f"FloatType {'float32bin' if binary else 'float32'}", f"InputChannels {cfg.input_planes}",
            f"ResidualChannels {cfg.channels}", f"ResidualBlocks {len(cfg.blocks)}",
            f"{pkey} {cfg.policy_channels}", f"{vkey} {cfg.value_channels}", f"ValueMisc {VALUE_MISC}",
            "PolicyHeadType Normal", f"ActivationFunction {cfg.activation}", "end info"]
    if with_stack:
        head += ["get stack", *stack_names(cfg), "end stack"]
    head += ["get struct", *[f"{x.kind} {' '.join(map(str, x.dims))}" for x in layers], "end struct",
             "get parameters"]
    parts = [("\n".join(head) + "\n").encode()]
    for layer in layers:
        for t in layer.tensors:
            t = np.asarray(t, np.float32).ravel()
            if binary:
                parts.append(t.astype("<f4").tobytes() + SENTINEL)
            else:
                parts.append((" ".join(map(_FLOAT_TEXT.format, t.tolist())) + "\n").encode())
    parts.append(b"end parameters\nend main")
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(b"".join(parts))
