"""Input encoders: board record -> uint8 planes for the network, and their registry.

Vocabulary
----------
encoder          a named, versioned way to turn a board record
                 (``go/board.py``) into ``planes`` uint8 planes
                 ``out[C, N, N]`` for the side to move. A network records
                 the encoder it was trained with (its NetConfig and weights
                 file); engines look it up by name here.
encode           the encoder's compiled function ``encode(rec, out)``:
                 ``rec`` is a board record (``arr[0]``), ``out`` a
                 C-contiguous ``[C, N, N]`` uint8 view (usually one row of
                 the batcher's pinned input buffer). Every cell of ``out``
                 is written (no need to clear it). Row ``y = 0`` is GTP row
                 1, column ``x`` is the GTP column, so plane cell ``[y, x]``
                 is action ``y * N + x``. It is a numba dispatcher: call it
                 from Python, or pass it as an argument to other compiled
                 functions and call it there.
Encoder          a name, its number of planes and its compiled functions
                 (``encode``; ``encode_arr(arr, out)`` for Python callers
                 holding ``Game.arr``), ``ident``, the number the compiled
                 search knows it by (``leaf.py``), ``new_scratch``, which
                 allocates the working memory a search keeps for it
                 (``leaf.py``, "scratch"), and ``off_loop``: whether a
                 search's leaves are encoded in the inference worker's
                 thread rather than on the event loop (``search/puct.py``,
                 "encoding a leaf").
ENCODERS         name -> Encoder: ``simple-v1`` (``simple_v1.py``, the
                 default) and ``sayuri-v3`` (``sayuri_v3.py``).
get_encoder      the one lookup; an unknown name is a ValueError naming the
                 known ones.

The package's modules: ``simple_v1.py`` and ``sayuri_v3.py`` (the
encoders; ``sayuri_v3_decode.py`` turns the latter's komi code into
Sayuri's real-valued inputs on the device, with torch), ``planes.py`` (the plane kernels they share), ``ladder.py``,
``ladder_reader.py`` and ``ladder_footprint.py`` (ladder reading),
``benson.py`` (safe areas), ``score_area.py`` (the score area and the area
planes), ``pointset.py`` (point sets as bit words) and
``leaf.py`` (the compiled search's leaf dispatch).
``docs/features.md`` lists every plane of every encoder.

Adding an encoder: its module (planes and compiled functions), a line here,
and its ident and branch in ``leaf.encode_leaf`` (a compiled call cannot
take the function as a value without costing microseconds a leaf).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import leaf, sayuri_v3, simple_v1

DEFAULT_ENCODER = "simple-v1"


@dataclass(frozen=True)
class Encoder:
    name: str
    planes: int
    encode: Any  # numba dispatcher: encode(rec, out[C, N, N] uint8) -> None
    # the same taking the board's (1,)-shaped record array: from Python this
    # costs about 1 us per call against about 5 us for a record argument
    encode_arr: Any = None
    # the compiled search's number for this encoder (``leaf.encode_leaf``)
    ident: int = leaf.SIMPLE_V1
    # allocates the working memory a search keeps for this encoder (``leaf.py``, "scratch")
    new_scratch: Callable[[], np.ndarray] = leaf.no_scratch
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
    "simple-v1": Encoder("simple-v1", simple_v1.SIMPLE_V1_PLANES, simple_v1.encode_simple_v1,
                         simple_v1.encode_simple_v1_arr, ident=leaf.SIMPLE_V1),
    sayuri_v3.NAME: Encoder(sayuri_v3.NAME, sayuri_v3.PLANES, sayuri_v3.encode_sayuri_v3, sayuri_v3.encode_sayuri_v3_arr,
                            ident=leaf.SAYURI_V3, new_scratch=sayuri_v3.new_scratch, off_loop=True),
}


def get_encoder(name: str = DEFAULT_ENCODER) -> Encoder:
    try:
        return ENCODERS[name]
    except KeyError:
        raise ValueError(f"unknown encoder {name!r}; known: {sorted(ENCODERS)}") from None
