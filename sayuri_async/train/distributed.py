"""Processes of a training run: the process group, what crosses it, RNG states.

Vocabulary:
  DistInfo      this process's rank, the world size and its local rank, from
                ``torchrun``'s ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` (one
                process alone without them).
  broadcast     rank 0's object, on every rank; ``gather``: every rank's
                object, on every rank (both plain pass-through alone).
  rng state     torch's, Python's and (where present) CUDA's generators, saved
                per rank in checkpoints so a resumed run draws the same numbers.
  device        ``pick_device``: ``run.device`` for this process ("auto": CUDA
                when torch sees a GPU; "cuda": the GPU of its local rank).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from sayuri_async.train.errors import TrainError


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def setup_distributed(backend: str, device: torch.device) -> DistInfo:
    """Join the process group when launched by torchrun (``WORLD_SIZE`` > 1)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    info = DistInfo(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        if backend == "auto":
            backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend=backend)
    return info


def broadcast(obj: Any, info: DistInfo) -> Any:
    if not info.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(obj: Any, info: DistInfo) -> list[Any]:
    if not info.enabled:
        return [obj]
    out: list[Any] = [None] * info.world
    dist.all_gather_object(out, obj)
    return out


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def pick_device(name: str, local_rank: int) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        name = f"cuda:{local_rank}"
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise TrainError("run.device asks for CUDA but torch sees no GPU")
        torch.cuda.set_device(device)
    return device
