"""SayuriNet: a torch module that runs a Sayuri network (weights versions 3-5).

Vocabulary
----------
SayuriConfig  the architecture read from a Sayuri weights file: tower width
              ``channels``, one ``BlockSpec`` per block, head widths, the
              activation. Plain data (``to_dict``/``from_dict``), stored in
              our weights header when an import is saved.
BlockSpec     ``kind`` ("residual", "bottleneck", "nested-bottleneck"),
              ``inner`` (bottleneck width), ``se`` (squeeze width, 0 = none).
folded        every convolution carries its batch norm already (Sayuri's
              files hold mean and standard deviation only; ``weights.py``
              folds them on import exactly as Sayuri's loader does), so the
              module has no BatchNorm layers and ``fold_batchnorm`` is a copy.
decode_inputs turns the ``sayuri-v3`` planes (``encoder.py``: komi written
              as a count of set cells) into Sayuri's real-valued inputs:
              wave, komi/20, -komi/20, N*N/361. Runs on the device, inside
              CUDA graphs (no host sync).
outputs       ``forward`` returns the keys of ``net/model.py``'s Net:
              ``policy``, ``opp_policy`` ([B, N*N+1] logits, pass last; Sayuri's
              policy outputs 0 and 1), ``wdl`` ([B, 3] logits), ``score``
              ([B] points for the side to move: 20 x misc output 8, Sayuri's
              final score), ``ownership`` ([B, N*N], tanh); plus ``misc``
              ([B, 15] raw value outputs) and ``policy_all`` ([B, 5, N*N+1]).

The computation follows Sayuri's CPU forward pass (``src/neural/blas/``):
pooling for SE units and the policy head is (mean, mean*(N-14)/10, max), for
the value head (mean, mean*(N-14)/10, mean*((N-14)^2/100 - 0.1)); the SE unit
output ``sigmoid(g) * x + b`` is added to the skip before the activation; the
policy head adds its pooled intermediate vector to every point before the
output convolution and computes pass logits from the same vector.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..net.model import Net
from .encoder import NAME as ENCODER_NAME
from .encoder import P_KOMI, P_NEG_KOMI, P_RULE, P_SIZE, P_WAVE, PLANES

BLOCK_KINDS = ("residual", "bottleneck", "nested-bottleneck")
ACTIVATIONS = ("identity", "relu", "elu", "selu", "gelu", "mish", "swish", "hardswish")
POLICY_OUTPUTS = 5
VALUE_MISC = 15
SCORE_SCALE = 20.0
MISC_SCORE = 8  # index of the final-score output in the value misc vector


@dataclass
class BlockSpec:
    kind: str = "residual"
    inner: int = 0
    se: int = 0


@dataclass
class SayuriConfig:
    version: int = 5
    channels: int = 256
    blocks: list[BlockSpec] = field(default_factory=list)
    policy_channels: int = 32
    value_channels: int = 32
    activation: str = "relu"
    input_planes: int = PLANES
    encoder: str = ENCODER_NAME
    board_size_min: int = 2
    board_size_max: int = 25
    architecture: str = "sayuri"

    def __post_init__(self) -> None:
        self.blocks = [b if isinstance(b, BlockSpec) else BlockSpec(**b) for b in self.blocks]
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {ACTIVATIONS}")
        for i, b in enumerate(self.blocks):
            if b.kind not in BLOCK_KINDS:
                raise ValueError(f"block {i}: kind {b.kind!r} is not one of {BLOCK_KINDS}")

    @property
    def short_name(self) -> str:
        return f"{len(self.blocks)}b{self.channels}c"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "SayuriConfig":
        return cls(**d)


def activation(name: str, x: Tensor) -> Tensor:
    if name == "relu":
        return F.relu(x)
    if name == "identity":
        return x
    if name == "elu":
        return F.elu(x)
    if name == "selu":
        return F.selu(x)
    if name == "gelu":
        return F.gelu(x, approximate="tanh")
    if name == "mish":
        return F.mish(x)
    if name == "swish":
        return F.silu(x)
    if name == "hardswish":
        return F.hardswish(x)
    raise ValueError(f"unknown activation {name!r}")


def pool_policy(x: Tensor) -> Tensor:
    """(mean, mean * (N - 14) / 10, max) -> ``[B, 3C]``."""
    n = x.shape[-1]
    mean = x.mean(dim=(2, 3))
    return torch.cat([mean, mean * ((n - 14) / 10.0), x.amax(dim=(2, 3))], dim=1)


def pool_value(x: Tensor) -> Tensor:
    """(mean, mean * (N - 14) / 10, mean * ((N - 14)^2 / 100 - 0.1)) -> ``[B, 3C]``."""
    n = x.shape[-1]
    mean = x.mean(dim=(2, 3))
    d = n - 14
    return torch.cat([mean, mean * (d / 10.0), mean * (d * d / 100.0 - 0.1)], dim=1)


def wave(komi: Tensor, n: int) -> Tensor:
    """Sayuri's wave input for the side to move's komi (area rules)."""
    if (n * n) % 2 == 0:
        floor = torch.floor(komi / 2.0) * 2.0
    else:
        floor = torch.floor((komi - 1.0) / 2.0) * 2.0 + 1.0
    delta = (komi - floor).clamp(0.0, 2.0)
    return torch.where(delta < 0.5, delta, torch.where(delta < 1.5, 1.0 - delta, delta - 2.0))


def decode_inputs(x: Tensor) -> Tensor:
    """``sayuri-v3`` planes (float, ``[B, 43, N, N]``) -> Sayuri's inputs."""
    b, _, n, _ = x.shape
    komi = (x[:, P_KOMI].sum(dim=(1, 2)) - x[:, P_NEG_KOMI].sum(dim=(1, 2))) * 0.5
    territory = x[:, P_RULE].amax(dim=(1, 2)) > 0.5
    wv = torch.where(territory, torch.zeros_like(komi), wave(komi, n))

    def plane(v: Tensor) -> Tensor:
        return v.to(x.dtype)[:, None, None, None].expand(b, 1, n, n)

    size = torch.full((b,), n * n / 361.0, dtype=x.dtype, device=x.device)
    return torch.cat([x[:, :P_WAVE], plane(wv), plane(komi / 20.0), plane(-komi / 20.0),
                      plane(size), x[:, P_SIZE + 1:]], dim=1)


class SEUnit(nn.Module):
    def __init__(self, c: int, size: int, act: str) -> None:
        super().__init__()
        self.squeeze = nn.Linear(3 * c, size)
        self.excite = nn.Linear(size, 2 * c)
        self.act = act

    def forward(self, x: Tensor) -> Tensor:
        g = self.excite(activation(self.act, self.squeeze(pool_policy(x))))
        gamma, beta = g.chunk(2, dim=1)
        return torch.sigmoid(gamma)[:, :, None, None] * x + beta[:, :, None, None]


def _conv(cin: int, cout: int, k: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, k, padding=k // 2, bias=True)


class Block(nn.Module):
    """One tower block; ``convs`` in Sayuri's file order."""

    def __init__(self, spec: BlockSpec, c: int, act: str) -> None:
        super().__init__()
        self.kind = spec.kind
        self.act = act
        b = spec.inner
        if spec.kind == "residual":
            convs = [_conv(c, c, 3), _conv(c, c, 3)]
        elif spec.kind == "bottleneck":
            convs = [_conv(c, b, 1), _conv(b, b, 3), _conv(b, b, 3), _conv(b, c, 1)]
        else:
            convs = [_conv(c, b, 1)] + [_conv(b, b, 3) for _ in range(4)] + [_conv(b, c, 1)]
        self.convs = nn.ModuleList(convs)
        self.se = SEUnit(c, spec.se, act) if spec.se else None

    def forward(self, x: Tensor) -> Tensor:
        a = self.act
        cv = self.convs
        if self.kind == "residual":
            h = cv[1](activation(a, cv[0](x)))
        elif self.kind == "bottleneck":
            h = activation(a, cv[0](x))
            h = activation(a, cv[1](h))
            h = activation(a, cv[2](h))
            h = cv[3](h)
        else:
            h = activation(a, cv[0](x))
            for i in (1, 3):
                r = h
                h = activation(a, cv[i](h))
                h = activation(a, cv[i + 1](h) + r)
            h = cv[5](h)
        if self.se is not None:
            h = self.se(h)
        return activation(a, h + x)


class SayuriNet(Net):
    """``forward(x [B, 43, N, N] sayuri-v3 planes) -> dict`` (see module doc).

    A subclass of ``Net`` only so that code written for our nets (the torch
    backend, which reads ``config.encoder``, ``config.input_planes``,
    ``config.short_name`` and calls ``fold_batchnorm``) takes it as it is; it
    shares none of Net's layers (``Net.__init__`` is not run)."""

    def __init__(self, config: SayuriConfig) -> None:
        nn.Module.__init__(self)
        self.config = config
        c, p, v = config.channels, config.policy_channels, config.value_channels
        self.input_conv = _conv(config.input_planes, c, 3)
        self.blocks = nn.ModuleList(Block(s, c, config.activation) for s in config.blocks)
        self.policy_conv = _conv(c, p, 1)
        self.policy_inter = nn.Linear(3 * p, p)
        self.policy_out = _conv(p, POLICY_OUTPUTS, 1)
        self.policy_pass = nn.Linear(p, POLICY_OUTPUTS)
        self.value_conv = _conv(c, v, 1)
        self.value_inter = nn.Linear(3 * v, 3 * v)
        self.ownership_conv = _conv(v, 1, 1)
        self.value_misc = nn.Linear(3 * v, VALUE_MISC)

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        a = self.config.activation
        h = activation(a, self.input_conv(decode_inputs(x)))
        for blk in self.blocks:
            h = blk(h)
        pol = activation(a, self.policy_conv(h))
        inter = activation(a, self.policy_inter(pool_policy(pol)))
        pol = pol + inter[:, :, None, None]
        pts = self.policy_out(pol).flatten(2)  # [B, 5, N*N]
        pas = self.policy_pass(inter)  # [B, 5]
        logits = torch.cat([pts, pas[:, :, None]], dim=2)  # [B, 5, A]
        val = activation(a, self.value_conv(h))
        vinter = activation(a, self.value_inter(pool_value(val)))
        ownership = torch.tanh(self.ownership_conv(val).flatten(1))
        misc = self.value_misc(vinter)
        return {
            "policy": logits[:, 0],
            "opp_policy": logits[:, 1],
            "wdl": misc[:, :3],
            "score": misc[:, MISC_SCORE] * SCORE_SCALE,
            "ownership": ownership,
            "misc": misc,
            "policy_all": logits,
        }

    def fold_batchnorm(self) -> "SayuriNet":
        """An eval-mode copy (the batch norms are folded already)."""
        return copy.deepcopy(self).eval()

    def num_parameters(self) -> int:
        return sum(t.numel() for t in self.parameters())
