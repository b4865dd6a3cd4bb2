"""Which backend a command gets: ``make_backend``, the one place that chooses.

Vocabulary
----------
device model  ``device = "model"`` or ``"model:K"``: ``device_model.py``'s
              stand-in for a GPU running a given net (it answers as the
              random network, so it takes no weights).
random        no weights: ``backends.RandomBackend`` (near-uniform policy,
              neutral value), cheap enough to run inline on the event loop.
torch         a weights file: ``backends.TorchBackend`` on ``device``.
"""
from __future__ import annotations

from ..encoders import DEFAULT_ENCODER
from .backends import Backend, RandomBackend, TorchBackend
from .device_model import DeviceModelBackend, DeviceModelError, device_index


def make_backend(weights: str | None, device: str = "cpu", encoder: str = DEFAULT_ENCODER,
                 seed: int | None = None, device_model: str = "", device_table: str = "", **kw) -> Backend:
    """``DeviceModelBackend`` when ``device`` is ``model`` or ``model:K``
    (net ``device_model`` in ``device_table``), ``RandomBackend`` when
    ``weights`` is None, else ``TorchBackend`` (``kw``: dtype, max_batch,
    use_cuda_graphs, threads, buckets)."""
    if device_index(device) is not None:
        if weights:
            raise DeviceModelError(f"device {device} models a GPU and answers as the random network: "
                                   f"it takes no weights ({weights})")
        return DeviceModelBackend(device_model or "20b256c", device_table or None, device=device, encoder=encoder,
                                  seed=seed, max_batch=kw.get("max_batch", 256))
    if weights is None:
        rkw = {k: v for k, v in kw.items() if k in ("noise", "pool", "max_batch")}
        return RandomBackend(encoder=encoder, seed=seed, **rkw)
    return TorchBackend(weights, device=device, **kw)
