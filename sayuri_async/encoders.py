"""The encoder registry: every input encoder by name, and the default.

Vocabulary
----------
Encoder          a name, its number of planes and its compiled functions
                 (``encode(rec, out)``; ``encode_arr(arr, out)`` for Python
                 callers holding ``Game.arr``), and ``ident``, the number the
                 compiled search knows it by (``search.puct.encode_leaf``),
                 and ``off_loop``: whether a search's leaves are encoded in
                 the inference worker's thread rather than on the event
                 loop (``search/puct.py``, "encoding a leaf").
ENCODERS         name -> Encoder: ``simple-v1`` (``features.py``, the
                 default) and ``sayuri-v3`` (``sayuri/encoder.py``).
get_encoder      the one lookup; an unknown name is a ValueError naming the
                 known ones.

Adding an encoder: its module (planes and compiled functions), a line here,
and a branch in ``search.puct.encode_leaf`` (a compiled call cannot take the
function as a value without costing microseconds a leaf).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import features
from .sayuri import encoder as sayuri_encoder

DEFAULT_ENCODER = "simple-v1"


@dataclass(frozen=True)
class Encoder:
    name: str
    planes: int
    encode: Any  # numba dispatcher: encode(rec, out[C, N, N] uint8) -> None
    # the same taking the board's (1,)-shaped record array: from Python this
    # costs about 1 us per call against about 5 us for a record argument
    encode_arr: Any = None
    # the compiled search's number for this encoder (``search.puct.encode_leaf``)
    ident: int = 0
    # encode the search's leaves in the inference worker's thread: worth it
    # where a leaf costs far more than moving it between threads. Measured
    # in self-play with the random network in the worker (2-core machine):
    # sayuri-v3 (ladder read-outs, Benson; ~20 us a leaf) loop CPU per request
    # 34 -> 14 us on 19x19 and 31 -> 11 us on 9x9, throughput +32% / +15%;
    # simple-v1 (~1-2 us a leaf with its legal moves) 9x9 loop 9.2 -> 10.8
    # us and throughput -25%: the two threads' traffic costs more than it moves
    off_loop: bool = False

    def alloc(self, n: int, batch: int | None = None) -> np.ndarray:
        """A zeroed ``[C, n, n]`` (or ``[batch, C, n, n]``) uint8 buffer."""
        shape = (self.planes, n, n) if batch is None else (batch, self.planes, n, n)
        return np.zeros(shape, dtype=np.uint8)

    def encode_into(self, arr: np.ndarray, out: np.ndarray) -> None:
        """Encode the board array ``arr`` (shape (1,), as ``Game.arr``) into
        ``out[C, N, N]``: the fast way to call the encoder from Python."""
        if self.encode_arr is not None and arr.ndim == 1:
            self.encode_arr(arr, out)
        else:
            self.encode(arr[0], out)

    def __call__(self, arr: np.ndarray) -> np.ndarray:
        """Encode one board (a record array of shape (1,) or a record) into
        a fresh ``[C, N, N]`` array. Convenience for tests and tools."""
        if isinstance(arr, np.ndarray) and arr.shape == (1,):
            out = self.alloc(int(arr[0]["n"]))
            self.encode_into(arr, out)
        else:
            out = self.alloc(int(arr["n"]))
            self.encode(arr, out)
        return out


ENCODERS: dict[str, Encoder] = {
    "simple-v1": Encoder("simple-v1", features.SIMPLE_V1_PLANES, features.encode_simple_v1,
                         features.encode_simple_v1_arr, ident=0),
    sayuri_encoder.NAME: Encoder(sayuri_encoder.NAME, sayuri_encoder.PLANES, sayuri_encoder.encode_sayuri_v3,
                                 sayuri_encoder.encode_sayuri_v3_arr, ident=sayuri_encoder.IDENT, off_loop=True),
}


def get_encoder(name: str = DEFAULT_ENCODER) -> Encoder:
    try:
        return ENCODERS[name]
    except KeyError:
        raise ValueError(f"unknown encoder {name!r}; known: {sorted(ENCODERS)}") from None
