"""The network: a residual tower with global pooling, and its heads.

Vocabulary
----------
NetConfig    the architecture as plain data (``to_dict``/``from_dict``; it is
             stored in the weights file, see ``net/weights.py``).
trunk        stem convolution, then ``blocks`` blocks of ``channels`` channels.
block        ``"residual"``: two 3x3 convolutions and a skip; or
             ``"nested-bottleneck"`` (KataGo style): 1x1 down to
             ``bottleneck_channels``, ``nested_blocks`` inner residual blocks
             of two 3x3 convolutions each, 1x1 back up, skip around it all.
activation   ``"post"``: conv-BN-ReLU, the skip added before the last ReLU
order        (BN folds into every convolution); ``"pre"``: BN-ReLU-conv
             (only the BN right after a convolution folds).
global pool  every ``global_pool_every``-th block ends its residual branch
             with an SE-style unit: the branch output is pooled over the board
             (mean, mean scaled by board size, max: KataGo's three
             statistics), squeezed through a small MLP to ``2 * C`` numbers
             giving a per-channel scale (sigmoid) and bias.
heads        policy (own next move) and opp_policy (the opponent's reply),
             per-point logits from 1x1 convolutions plus a pass logit from
             pooled features; value: wdl logits (win/draw/loss for the side
             to move) and score lead in points; ownership per point (tanh,
             +1 = the side to move owns it).

Shapes: input ``x`` is ``[B, C_in, N, N]`` float (one board size per call;
N may change between calls), actions ``A = N*N + 1`` with pass last.
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, fields

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..encoders.sayuri_v3_decode import decode_inputs

BLOCK_KINDS = ("residual", "nested-bottleneck")
ACTIVATION_ORDERS = ("post", "pre")
OUTPUT_KEYS = ("policy", "opp_policy", "wdl", "score", "ownership")


NORM_MODES = ("batch", "fixed")  # how batch norms train: ``Net.set_norm_mode``, ``[optim] norms``


@dataclass
class NetConfig:
    blocks: int = 6
    channels: int = 96
    input_planes: int = 25  # simple-v1's plane count
    board_size_min: int = 7
    board_size_max: int = 19
    block_kind: str = "residual"
    activation_order: str = "post"
    global_pool_every: int = 3  # every k-th block (k-1, 2k-1, ...) pools; 0: none
    se_ratio: int = 4  # SE squeeze width = channels // se_ratio
    bottleneck_channels: int = 0  # nested-bottleneck inner width; 0: channels // 2
    nested_blocks: int = 2  # inner residual blocks per nested-bottleneck block
    policy_channels: int = 32
    value_channels: int = 32
    value_hidden: int = 128
    score_scale: float = 20.0  # score head output is multiplied by this (points)
    encoder: str = "simple-v1"

    def __post_init__(self) -> None:
        if self.block_kind not in BLOCK_KINDS:
            raise ValueError(f"block_kind {self.block_kind!r} is not one of {BLOCK_KINDS}")
        if self.activation_order not in ACTIVATION_ORDERS:
            raise ValueError(f"activation_order {self.activation_order!r} is not one of {ACTIVATION_ORDERS}")
        for name in ("blocks", "channels", "input_planes", "policy_channels", "value_channels", "value_hidden"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 2 <= self.board_size_min <= self.board_size_max:
            raise ValueError(f"board sizes {self.board_size_min}..{self.board_size_max} are not a range")

    @property
    def bottleneck(self) -> int:
        return self.bottleneck_channels or max(1, self.channels // 2)

    @property
    def short_name(self) -> str:
        """``6b96c``-style name."""
        return f"{self.blocks}b{self.channels}c"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "NetConfig":
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"unknown NetConfig keys {unknown}")
        kw = {}
        for k, v in d.items():
            t = type(getattr(cls(), k))
            kw[k] = t(v)
        return cls(**kw)


# --------------------------------------------------------------------------
# building blocks


class ConvBN(nn.Module):
    """A bias-free convolution followed by batch norm; ``fold()`` merges them."""

    def __init__(self, cin: int, cout: int, k: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.bn: nn.Module = nn.BatchNorm2d(cout)

    def forward(self, x: Tensor) -> Tensor:
        return self.bn(self.conv(x))

    @torch.no_grad()
    def fold(self) -> None:
        bn = self.bn
        if not isinstance(bn, nn.BatchNorm2d):
            return
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)  # [Cout]
        conv = nn.Conv2d(
            self.conv.in_channels, self.conv.out_channels, self.conv.kernel_size,
            padding=self.conv.padding, bias=True,
        ).to(self.conv.weight)
        conv.weight.copy_(self.conv.weight * scale[:, None, None, None])
        conv.bias.copy_(bn.bias - bn.running_mean * scale)
        self.conv = conv
        self.bn = nn.Identity()


def pool_features(x: Tensor) -> Tensor:
    """KataGo's global pooling: mean, mean * (N - 14) / 10, max -> ``[B, 3C]``."""
    n = x.shape[-1]
    mean = x.mean(dim=(2, 3))  # [B, C]
    mx = x.amax(dim=(2, 3))  # [B, C]
    return torch.cat([mean, mean * ((n - 14) / 10.0), mx], dim=1)


class GlobalPoolSE(nn.Module):
    """SE-style scale and bias from pooled board statistics."""

    def __init__(self, c: int, ratio: int) -> None:
        super().__init__()
        mid = max(4, c // ratio)
        self.fc1 = nn.Linear(3 * c, mid)
        self.fc2 = nn.Linear(mid, 2 * c)

    def forward(self, x: Tensor) -> Tensor:
        g = self.fc2(F.relu(self.fc1(pool_features(x))))  # [B, 2C]
        gamma, beta = g.chunk(2, dim=1)
        return x * torch.sigmoid(gamma)[:, :, None, None] + beta[:, :, None, None]


class ResBranch(nn.Module):
    """Two 3x3 convolutions (the residual branch, without the skip)."""

    def __init__(self, c: int, pre: bool, se: GlobalPoolSE | None) -> None:
        super().__init__()
        self.pre = pre
        if pre:
            self.bn0 = nn.BatchNorm2d(c)
            self.c1 = ConvBN(c, c, 3)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        else:
            self.c1 = ConvBN(c, c, 3)
            self.c2 = ConvBN(c, c, 3)
        self.se = se

    def forward(self, x: Tensor) -> Tensor:
        if self.pre:
            y = self.conv2(F.relu(self.c1(F.relu(self.bn0(x)))))
        else:
            y = self.c2(F.relu(self.c1(x)))
        return self.se(y) if self.se is not None else y


class ResidualBlock(nn.Module):
    def __init__(self, c: int, pre: bool, se: GlobalPoolSE | None) -> None:
        super().__init__()
        self.pre = pre
        self.branch = ResBranch(c, pre, se)

    def forward(self, x: Tensor) -> Tensor:
        y = x + self.branch(x)
        return y if self.pre else F.relu(y)


class NestedBottleneckBlock(nn.Module):
    """1x1 down, inner residual blocks, 1x1 up, skip around it all."""

    def __init__(self, c: int, b: int, inner: int, pre: bool, se: GlobalPoolSE | None) -> None:
        super().__init__()
        self.pre = pre
        if pre:
            self.bn0 = nn.BatchNorm2d(c)
            self.down = ConvBN(c, b, 1)
            self.inner = nn.ModuleList(ResidualBlock(b, True, None) for _ in range(inner))
            self.bn_up = nn.BatchNorm2d(b)
            self.up = nn.Conv2d(b, c, 1, bias=False)
        else:
            self.down = ConvBN(c, b, 1)
            self.inner = nn.ModuleList(ResidualBlock(b, False, None) for _ in range(inner))
            self.up_bn = ConvBN(b, c, 1)
        self.se = se

    def forward(self, x: Tensor) -> Tensor:
        if self.pre:
            y = self.down(F.relu(self.bn0(x)))
            for blk in self.inner:
                y = blk(y)
            y = self.up(F.relu(self.bn_up(y)))
        else:
            y = F.relu(self.down(x))
            for blk in self.inner:
                y = blk(y)
            y = self.up_bn(y)
        if self.se is not None:
            y = self.se(y)
        y = x + y
        return y if self.pre else F.relu(y)


# --------------------------------------------------------------------------
# heads


class PolicyHead(nn.Module):
    """Per-point logits for own and opponent policy, pass from pooled features."""

    def __init__(self, c: int, p: int) -> None:
        super().__init__()
        self.conv = ConvBN(c, p, 1)
        self.out = nn.Conv2d(p, 2, 1)
        self.pass_fc = nn.Linear(3 * p, 2)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.conv(x))  # [B, P, N, N]
        pts = self.out(h).flatten(2)  # [B, 2, N*N]
        pas = self.pass_fc(pool_features(h))  # [B, 2]
        logits = torch.cat([pts, pas[:, :, None]], dim=2)  # [B, 2, A]
        return logits[:, 0], logits[:, 1]


class ValueHead(nn.Module):
    """wdl logits, score lead (points) and ownership (tanh)."""

    def __init__(self, c: int, v: int, hidden: int, score_scale: float) -> None:
        super().__init__()
        self.conv = ConvBN(c, v, 1)
        self.own = nn.Conv2d(v, 1, 1)
        self.fc1 = nn.Linear(3 * v, hidden)
        self.fc2 = nn.Linear(hidden, 4)
        self.score_scale = score_scale

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = F.relu(self.conv(x))  # [B, V, N, N]
        ownership = torch.tanh(self.own(h).flatten(1))  # [B, N*N]
        g = self.fc2(F.relu(self.fc1(pool_features(h))))  # [B, 4]
        return g[:, :3], g[:, 3] * self.score_scale, ownership


# --------------------------------------------------------------------------
# the net


class Net(nn.Module):
    """``forward(x [B, C_in, N, N]) -> {"policy", "opp_policy", "wdl", "score", "ownership"}``."""

    def __init__(self, config: NetConfig | None = None) -> None:
        super().__init__()
        cfg = config or NetConfig()
        self.config = cfg
        c = cfg.channels
        pre = cfg.activation_order == "pre"
        self.stem = ConvBN(cfg.input_planes, c, 3) if not pre else None
        self.stem_conv = nn.Conv2d(cfg.input_planes, c, 3, padding=1, bias=False) if pre else None
        blocks: list[nn.Module] = []
        for i in range(cfg.blocks):
            pools = cfg.global_pool_every > 0 and (i + 1) % cfg.global_pool_every == 0
            se = GlobalPoolSE(c, cfg.se_ratio) if pools else None
            if cfg.block_kind == "residual":
                blocks.append(ResidualBlock(c, pre, se))
            else:
                blocks.append(NestedBottleneckBlock(c, cfg.bottleneck, cfg.nested_blocks, pre, se))
        self.blocks = nn.ModuleList(blocks)
        self.trunk_bn = nn.BatchNorm2d(c) if pre else None
        self.policy_head = PolicyHead(c, cfg.policy_channels)
        self.value_head = ValueHead(c, cfg.value_channels, cfg.value_hidden, cfg.score_scale)
        # sayuri-v3 stores komi, wave and board size as counts of set cells
        # (the planes are bits); turn them back into Sayuri's real values.
        self._decode = None
        if cfg.encoder == "sayuri-v3":
            self._decode = decode_inputs

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        if self._decode is not None:
            x = self._decode(x)
        if self.stem is not None:
            h = F.relu(self.stem(x))
        else:
            h = self.stem_conv(x)
        for blk in self.blocks:
            h = blk(h)
        if self.trunk_bn is not None:
            h = F.relu(self.trunk_bn(h))
        policy, opp_policy = self.policy_head(h)
        wdl, score, ownership = self.value_head(h)
        return {
            "policy": policy,  # [B, A] logits
            "opp_policy": opp_policy,  # [B, A] logits
            "wdl": wdl,  # [B, 3] logits
            "score": score,  # [B] points
            "ownership": ownership,  # [B, N*N] in [-1, 1]
        }

    norm_mode = "batch"  # one of NORM_MODES: how the batch norms train (``set_norm_mode``)

    def set_norm_mode(self, mode: str) -> None:
        """``"batch"``: the batch norms normalise by batch statistics in
        training and update their running statistics (torch's default).
        ``"fixed"``: they keep their running statistics and normalise by
        them in training too, while their scale and shift still learn
        (fine-tuning a trained network on a small or shifted data set, whose
        batches would re-estimate the statistics the network plays with)."""
        if mode not in NORM_MODES:
            raise ValueError(f"norm {mode!r} is not one of {NORM_MODES}")
        self.norm_mode = mode
        self.train(self.training)

    def train(self, mode: bool = True) -> "Net":
        super().train(mode)
        if mode and self.norm_mode == "fixed":
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        return self

    def fold_batchnorm(self) -> "Net":
        """An eval-mode copy with every BN that follows a convolution folded
        into it (all of them in post-activation; in pre-activation the BN
        that opens a branch stays)."""
        net = copy.deepcopy(self).eval()
        for m in net.modules():
            if isinstance(m, ConvBN):
                m.fold()
        return net

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def fold_batchnorm(net: Net) -> Net:
    return net.fold_batchnorm()


def init_weights(net: Net, seed: int | None = None) -> Net:
    """Re-initialise every convolution and linear layer of ``net`` (He normal
    weights, zero biases) from ``seed``: reproducible random nets."""
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            with torch.no_grad():
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) * math.sqrt(2.0 / fan_in))
                if m.bias is not None:
                    m.bias.zero_()
    return net
