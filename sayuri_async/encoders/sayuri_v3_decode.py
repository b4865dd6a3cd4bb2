"""The ``sayuri-v3`` planes into the real-valued inputs Sayuri's networks take (torch).

Vocabulary
----------
komi code      ``sayuri_v3.py`` writes the side to move's komi as a count of
               set cells (plane ``P_KOMI`` for a positive komi, ``P_NEG_KOMI``
               for a negative one, in half points): chunks store planes as
               bits.
decode_inputs  ``[B, 43, N, N]`` float planes -> the same with Sayuri's
               values in planes 38-41: wave (0 under territory rules),
               komi/20, -komi/20, N*N/361. Runs on the device, inside CUDA
               graphs (no host sync); ``net/model.Net.forward`` calls it
               first for a ``sayuri-v3`` network.
wave           Sayuri's wave input for the side to move's komi (area rules).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .sayuri_v3 import P_KOMI, P_NEG_KOMI, P_RULE, P_SIZE, P_WAVE


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
