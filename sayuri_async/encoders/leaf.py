"""The compiled leaf dispatch: a search's leaf encoded by the encoder its workspace names.

Vocabulary
----------
ident       the number the compiled search knows an encoder by
            (``Encoder.ident``, the search workspace's ``encoder`` field):
            ``SIMPLE_V1``, ``SAYURI_V3``.
scratch     an encoder's working memory across a search's leaves, an array
            the encoder allocates (``Encoder.new_scratch``) and the search
            keeps beside its workspace. Every encoder's scratch has the one
            type ``SCRATCH_DTYPE`` (the compiled search is compiled once for
            all encoders): one record for ``sayuri-v3``
            (``sayuri_v3.new_scratch``), none for an encoder that keeps
            nothing (``no_scratch``).
root serial the search's count of ``set_root`` calls: an encoder that keeps
            read-outs of the root (``sayuri-v3``'s ladders) makes them anew
            when the count it holds is not the search's.
idle points the side to move's points where no move can gain anything
            (``benson.pass_alive_idle``) and the opponent's safe area
            (``benson.opponent_safe_points``): the search leaves them out of
            a leaf's moves where they are known (``search/tree.py``).

``encode_leaf`` names every encoder: a numba function passed as an argument
costs microseconds per call, and a closure over one cannot be cached on
disk. Adding an encoder: its module, its ident and branch here, and its line
in the registry (``encoders/__init__.py``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .benson import opponent_safe_from, opponent_safe_points, pass_alive_idle
from .ladder import ladder_map_keep
from .sayuri_v3 import SCRATCH_DTYPE, encode_sayuri_v3_reuse
from .simple_v1 import encode_simple_v1

SIMPLE_V1 = 0
SAYURI_V3 = 1


def no_scratch() -> np.ndarray:
    """The scratch of an encoder that keeps nothing between leaves."""
    return np.zeros(0, SCRATCH_DTYPE)


@njit(cache=True)
def encode_leaf(encoder: int, scratch, root, root_serial: int, rec, out, depth: int, idle) -> int:
    """Encode the leaf ``rec`` into ``out`` with the encoder ``encoder``
    (an ident) and its ``scratch``, and write its idle points into ``idle``
    (``[N*N + 1]`` uint8) where they are known: from the ``sayuri-v3``
    encoder's own safe areas, and at the search's root ``root`` (``depth``
    0) for any encoder. Returns how many (0: none, or not looked for).

    ``sayuri-v3`` reads its ladders with the root's read-outs
    (``ladder.ladder_map_reuse``), made at the first leaf after the root
    changed (``root_serial``); the planes are those of ``encode_sayuri_v3``."""
    if encoder == SAYURI_V3:
        leaf = scratch[0]
        if leaf.ladders.ready == 0 or leaf.root_serial != root_serial:
            ladder_map_keep(root, leaf.lad[:root.n * root.n], leaf.ladders)
            leaf.root_serial = root_serial
        k = encode_sayuri_v3_reuse(rec, out, leaf, idle)
        if rec.scoring != 1:  # under territory scoring its planes have no safe areas
            n2 = rec.n * rec.n
            return k + opponent_safe_from(rec, rec.to_move, leaf.safe[:n2], leaf.owner[:n2], idle)
        if depth > 0:
            return k
    else:
        encode_simple_v1(rec, out)
        if depth > 0:
            return 0
    return pass_alive_idle(rec, rec.to_move, idle) + opponent_safe_points(rec, rec.to_move, idle)
