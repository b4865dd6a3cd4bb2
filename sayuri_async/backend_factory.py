"""Which backend a command gets: ``make_backend``, the one place that chooses.

Vocabulary
----------
device model  ``device = "model"`` or ``"model:K"``: ``device_model.py``'s
              stand-in for a GPU running a given net (it answers as the
              random network, so it takes no weights).
random        no weights: ``backends.RandomBackend`` (near-uniform policy,
              neutral value), cheap enough to run inline on the event loop.
torch         a weights file of either architecture, ours or Sayuri's
              (``sayuri.weights.load_any_weights``), run by
              ``net.backends.TorchBackend`` on ``device``.

This module sits above both ``net/`` and ``sayuri/``: the backends know our
networks only, and a weights file may be Sayuri's.
"""
from __future__ import annotations

from pathlib import Path

from .encoders import DEFAULT_ENCODER
from .net.backends import Backend, RandomBackend, TorchBackend
from .net.device_model import DeviceModelBackend, DeviceModelError, device_index


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
    from .sayuri.weights import load_any_weights  # torch: loaded only when a weights file is given

    net, meta = load_any_weights(weights)  # ours, or a Sayuri network file
    return TorchBackend(net, device=device, name=str(meta.get("name") or Path(weights).stem), meta=meta, **kw)
