"""SayuriNet: a torch module that runs a Sayuri network (weights versions 3-5).

Vocabulary
----------
SayuriConfig  the architecture read from a Sayuri weights file: tower width
              ``channels``, one ``BlockSpec`` per block, head widths, the
              activation. Plain data (``to_dict``/``from_dict``), stored in
              our weights header when an import is saved.
BlockSpec     ``kind`` ("residual", "bottleneck", "nested-bottleneck"),
              ``inner`` (bottleneck width), ``se`` (squeeze width, 0 = none).
ConvNorm      a convolution followed by its batch norm (``Norm``), one pair
              per ``Convolution`` + ``BatchNorm`` of Sayuri's struct. Sayuri's
              files hold the norm merged (mean and standard deviation with
              gamma and beta folded in); on import ``weights.py`` folds it
              into the convolution, as Sayuri's loader does, and the ``Norm``
              starts as the identity (weight 1, bias 0, running mean 0,
              running variance 1 - eps), so the module computes the file's
              function exactly and still has a batch norm to train.
Norm          ``mode`` "batch": batch statistics in training (running
              averages updated with ``NORM_MOMENTUM``), running statistics in
              eval; "fixed": running statistics always (only the scale and
              shift learn; training reproduces the file exactly).
calibrate     ``calibrate_norms(x)``: fold each norm into its convolution,
              then set it from the statistics of its input on the batch ``x``
              (weight = sqrt(var + eps), bias = mean, running mean and
              variance = the batch's): still the identity in eval, and in
              training on ``x`` too, so fine-tuning starts from the file's
              function instead of from batch-normalised activations.
folded        ``fold_batchnorm()``: an eval copy with every norm merged into
              its convolution and replaced by ``nn.Identity`` (what the engine
              runs and what our import files store).
decode_inputs ``encoders/sayuri_v3_decode.py``: the ``sayuri-v3`` planes into Sayuri's
              real-valued inputs (``Net.forward`` runs it first).
outputs       ``forward`` returns the keys of ``net/model.py``'s Net:
              ``policy``, ``opp_policy`` ([B, N*N+1] logits, pass last; Sayuri's
              policy outputs 0 and 1), ``wdl`` ([B, 3] logits), ``score``
              ([B] points for the side to move: 20 x misc output 8, Sayuri's
              final score), ``ownership`` ([B, N*N], tanh); plus ``misc``
              ([B, 15] raw value outputs) and ``policy_all`` ([B, 5, N*N+1]).
misc          Sayuri's 15 value outputs: win/draw/loss logits (0-2), five Q
              values (3-7: final, current, short, middle, long term; tanh),
              five scores (8-12, same order; x 20 points), the short-term Q
              and score error (13, 14: squared softplus of half the output,
              x 0.25 and x 150). ``value_heads`` splits them.

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

from ..net.model import NORM_MODES, Net
from ..encoders.sayuri_v3 import NAME as ENCODER_NAME
from ..encoders.sayuri_v3 import PLANES
from ..encoders.sayuri_v3_decode import decode_inputs

BLOCK_KINDS = ("residual", "bottleneck", "nested-bottleneck")
ACTIVATIONS = ("identity", "relu", "elu", "selu", "gelu", "mish", "swish", "hardswish")
POLICY_OUTPUTS = 5
VALUE_MISC = 15
SCORE_SCALE = 20.0
MISC_SCORE = 8  # index of the final-score output in the value misc vector
MISC_Q = slice(3, 8)  # Q values: final, current, short, middle, long term
MISC_SCORES = slice(8, 13)  # scores, same order
MISC_ERRORS = slice(13, 15)  # short-term Q error, short-term score error
Q_ERROR_SCALE = 0.25
SCORE_ERROR_SCALE = 150.0
NORM_EPS = 1e-5
NORM_MOMENTUM = 0.01


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
    norm: str = "batch"

    def __post_init__(self) -> None:
        self.blocks = [b if isinstance(b, BlockSpec) else BlockSpec(**b) for b in self.blocks]
        if self.norm not in NORM_MODES:
            raise ValueError(f"norm {self.norm!r} is not one of {NORM_MODES}")
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


class Norm(nn.Module):
    """A batch norm that starts as the identity (see the module doc)."""

    def __init__(self, c: int, mode: str = "batch") -> None:
        super().__init__()
        self.mode = mode
        self.eps = NORM_EPS
        self.momentum = NORM_MOMENTUM
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.full((c,), 1.0 - NORM_EPS))

    def forward(self, x: Tensor) -> Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training and self.mode == "batch", momentum=self.momentum,
                            eps=self.eps)

    def scale_shift(self) -> tuple[Tensor, Tensor]:
        """``(s, t)`` with ``norm(y) = s * y + t`` in eval mode."""
        s = self.weight / torch.sqrt(self.running_var + self.eps)
        return s, self.bias - self.running_mean * s

    @torch.no_grad()
    def reset(self) -> None:
        self.weight.fill_(1.0)
        self.bias.zero_()
        self.running_mean.zero_()
        self.running_var.fill_(1.0 - NORM_EPS)


class ConvNorm(nn.Module):
    """A convolution with bias, then its ``Norm`` (``nn.Identity`` once folded)."""

    def __init__(self, cin: int, cout: int, k: int, mode: str = "batch") -> None:
        super().__init__()
        self.conv = _conv(cin, cout, k)
        self.norm: nn.Module = Norm(cout, mode)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.conv(x))

    @torch.no_grad()
    def merge_norm(self) -> None:
        """Fold the norm's eval-mode affine into the convolution; the norm
        becomes the identity again (weight 1, bias 0, mean 0, variance 1 - eps)."""
        if not isinstance(self.norm, Norm):
            return
        s, t = self.norm.scale_shift()
        self.conv.weight.mul_(s[:, None, None, None])
        self.conv.bias.mul_(s).add_(t)
        self.norm.reset()

    def fold(self) -> None:
        self.merge_norm()
        self.norm = nn.Identity()


class Block(nn.Module):
    """One tower block; ``convs`` in Sayuri's file order."""

    def __init__(self, spec: BlockSpec, c: int, act: str, norm: str = "batch") -> None:
        super().__init__()
        self.kind = spec.kind
        self.act = act
        b = spec.inner
        if spec.kind == "residual":
            shapes = [(c, c, 3), (c, c, 3)]
        elif spec.kind == "bottleneck":
            shapes = [(c, b, 1), (b, b, 3), (b, b, 3), (b, c, 1)]
        else:
            shapes = [(c, b, 1)] + [(b, b, 3)] * 4 + [(b, c, 1)]
        self.convs = nn.ModuleList(ConvNorm(i, o, k, norm) for i, o, k in shapes)
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


def value_heads(misc: Tensor) -> dict[str, Tensor]:
    """Sayuri's 15 raw value outputs as its trainer reads them (see ``misc``)."""
    errors = F.softplus(0.5 * misc[:, MISC_ERRORS]).square()
    return {
        "q_values": torch.tanh(misc[:, MISC_Q]),
        "score_values": misc[:, MISC_SCORES] * SCORE_SCALE,
        "q_error": errors[:, 0] * Q_ERROR_SCALE,
        "score_error": errors[:, 1] * SCORE_ERROR_SCALE,
    }


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
        m = config.norm
        self.input_conv = ConvNorm(config.input_planes, c, 3, m)
        self.blocks = nn.ModuleList(Block(s, c, config.activation, m) for s in config.blocks)
        self.policy_conv = ConvNorm(c, p, 1, m)
        self.policy_inter = nn.Linear(3 * p, p)
        self.policy_out = _conv(p, POLICY_OUTPUTS, 1)
        self.policy_pass = nn.Linear(p, POLICY_OUTPUTS)
        self.value_conv = ConvNorm(c, v, 1, m)
        self.value_inter = nn.Linear(3 * v, 3 * v)
        self.ownership_conv = _conv(v, 1, 1)
        self.value_misc = nn.Linear(3 * v, VALUE_MISC)

    def conv_norms(self) -> list[ConvNorm]:
        """Every convolution with a norm, in Sayuri's file order."""
        return [m for m in self.modules() if isinstance(m, ConvNorm)]

    def set_norm_mode(self, mode: str) -> None:
        if mode not in NORM_MODES:
            raise ValueError(f"norm {mode!r} is not one of {NORM_MODES}")
        self.norm_mode = mode
        self.config.norm = mode
        for cn in self.conv_norms():
            if isinstance(cn.norm, Norm):
                cn.norm.mode = mode

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

    @torch.no_grad()
    def calibrate_norms(self, x: Tensor) -> None:
        """Set every norm from its input's statistics on ``x`` without changing
        the eval-mode function (see ``calibrate`` in the module doc)."""
        cns = [cn for cn in self.conv_norms() if isinstance(cn.norm, Norm)]
        for cn in cns:
            cn.merge_norm()
        stats: dict[int, tuple[Tensor, Tensor]] = {}

        def hook(i: int):
            def record(_: nn.Module, inputs: tuple[Tensor, ...]) -> None:
                y = inputs[0].float()
                stats[i] = (y.mean(dim=(0, 2, 3)), y.var(dim=(0, 2, 3), unbiased=False))
            return record

        handles = [cn.norm.register_forward_pre_hook(hook(i)) for i, cn in enumerate(cns)]
        was_training = self.training
        try:
            self.eval()
            self(x)
        finally:
            for h in handles:
                h.remove()
            self.train(was_training)
        for i, cn in enumerate(cns):
            mean, var = stats[i]
            norm = cn.norm
            norm.running_mean.copy_(mean)
            norm.running_var.copy_(var)
            norm.weight.copy_(torch.sqrt(var + norm.eps))
            norm.bias.copy_(mean)

    def fold_batchnorm(self) -> "SayuriNet":
        """An eval-mode copy with every norm merged into its convolution."""
        net = copy.deepcopy(self).eval()
        for cn in net.conv_norms():
            cn.fold()
        return net

    def num_parameters(self) -> int:
        return sum(t.numel() for t in self.parameters())
