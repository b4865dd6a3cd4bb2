"""Input encoders: board record -> uint8 planes for the network.

Vocabulary
----------
encoder   a named, versioned way to turn a board record (``go/board.py``)
          into ``planes`` uint8 planes ``out[C, N, N]`` for the side to
          move. A network records the encoder it was trained with (its
          NetConfig and weights file); engines look it up by name in the
          registry, ``encoders.py``. This module holds ``simple-v1`` and the
          plane kernels other encoders share (``eq_planes``).
encode    the encoder's compiled function ``encode(rec, out)``: ``rec`` is a
          board record (``arr[0]``), ``out`` a C-contiguous ``[C, N, N]``
          uint8 view (usually one row of the batcher's pinned input
          buffer). Every cell of ``out`` is written (no need to clear it).
          Row ``y = 0`` is GTP row 1, column ``x`` is the GTP column, so
          plane cell ``[y, x]`` is action ``y * N + x``. It is a numba
          dispatcher: call it from Python, or pass it as an argument to
          other compiled functions and call it there.
own/opp   colours relative to the side to move at the current position
          (also for the history planes).

``docs/features.md`` lists every plane of every encoder.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .go.board import BLACK, HISTORY, MAX_P, NO_KO

# --------------------------------------------------------------------------
# simple-v1

SIMPLE_V1_PLANES = 2 * HISTORY + 1 + 1 + 1 + 6  # 25
# plane indices (see docs/features.md)
# planes 0 .. 2 * HISTORY - 1: 2k own stones k plies ago, 2k+1 opponent stones k plies ago
P_BLACK_TO_MOVE = 2 * HISTORY  # 16
P_ONES = P_BLACK_TO_MOVE + 1  # 17
P_KO = P_ONES + 1  # 18
P_OWN_LIBS = P_KO + 1  # 19, 20, 21: own strings with 1, 2, 3+ liberties
P_OPP_LIBS = P_OWN_LIBS + 3  # 22, 23, 24: opponent strings with 1, 2, 3+


# --------------------------------------------------------------------------
# vector kernels
#
# A board row is short (7..19 cells), too short for LLVM's loop vectoriser,
# which wants 32 or 64 iterations on AVX2 machines; row-by-row loops ran
# scalar (about 3 us per 19x19 position). These intrinsics emit one
# unaligned vector load, two compares and two stores of ``width`` bytes, so a
# row costs two overlapping vector operations. They read and write raw
# pointers: callers keep every access inside the arrays (see _planes2).


def _make_eq2(width: int):
    @intrinsic
    def eq2(typingctx, src, s, dst, d1, d2, v1, v2):
        """dst[d1 + j] = src[s + j] == v1 and dst[d2 + j] = src[s + j] == v2
        for j < width (uint8 0/1), as vector operations."""
        ok = (
            isinstance(src, types.Array) and src.dtype in (types.int8, types.uint8)
            and isinstance(dst, types.Array) and dst.dtype == types.uint8
            and all(isinstance(t, types.Integer) for t in (s, d1, d2, v1, v2))
        )
        if not ok:
            return None
        sig = types.void(src, s, dst, d1, d2, v1, v2)

        def codegen(context, builder, signature, args):
            srcv, sv, dstv, d1v, d2v, v1v, v2v = args
            sa = context.make_array(signature.args[0])(context, builder, srcv)
            da = context.make_array(signature.args[2])(context, builder, dstv)
            i8, i32 = ir.IntType(8), ir.IntType(32)
            vt = ir.VectorType(i8, width)
            zeros = ir.Constant(ir.VectorType(i32, width), [0] * width)
            x = builder.load(builder.bitcast(builder.gep(sa.data, [sv]), vt.as_pointer()), align=1)
            for val, dv in ((v1v, d1v), (v2v, d2v)):
                b = builder.trunc(val, i8) if val.type.width > 8 else val
                splat = builder.insert_element(ir.Constant(vt, None), b, ir.Constant(i32, 0))
                splat = builder.shuffle_vector(splat, ir.Constant(vt, None), zeros)
                eq = builder.zext(builder.icmp_signed("==", x, splat), vt)
                builder.store(eq, builder.bitcast(builder.gep(da.data, [dv]), vt.as_pointer()), align=1)
            return context.get_dummy_value()

        return sig, codegen

    return eq2


_eq2_4 = _make_eq2(4)
_eq2_8 = _make_eq2(8)
_eq2_16 = _make_eq2(16)


@njit(inline="always")
def _eq2(width, src, s, dst, d1, d2, v1, v2) -> None:
    if width == 16:
        _eq2_16(src, s, dst, d1, d2, v1, v2)
    elif width == 8:
        _eq2_8(src, s, dst, d1, d2, v1, v2)
    else:
        _eq2_4(src, s, dst, d1, d2, v1, v2)


@njit(inline="always")
def _planes2(src, w, n, o, d1, d2, v1, v2) -> None:
    """Two planes at flat offsets d1, d2 of ``o``: cell (y, x) is 1 where the
    padded array ``src[(y + 1) * w + 1 + x]`` equals v1 (resp. v2).

    Each row is covered by two overlapping vector operations of ``half``
    bytes (half <= n <= 2 * half), so nothing outside the row is touched.
    (One wider store spilling into the next row measured 5x slower: the
    partly overlapping stores stall store forwarding.)"""
    if n < 4:
        for y in range(n):
            for x in range(n):
                c = src[(y + 1) * w + 1 + x]
                o[d1 + y * n + x] = np.uint8(c == v1)
                o[d2 + y * n + x] = np.uint8(c == v2)
        return
    half = 4 if n < 8 else (8 if n < 16 else 16)
    t = n - half
    for y in range(n):
        s = (y + 1) * w + 1
        r = y * n
        _eq2(half, src, s, o, d1 + r, d2 + r, v1, v2)
        _eq2(half, src, s + t, o, d1 + r + t, d2 + r + t, v1, v2)


@njit(inline="always")
def eq_planes(src, w, n, o, d1, d2, v1, v2) -> None:
    """Two planes at flat offsets ``d1``, ``d2`` of the flat uint8 array
    ``o``: cell (y, x) is 1 where the padded int8 array
    ``src[(y + 1) * w + 1 + x]`` equals ``v1`` (``v2``), by vector compares
    (the kernel of every encoder's stone planes)."""
    _planes2(src, w, n, o, d1, d2, v1, v2)


@njit(inline="always")
def _fill(o, start, count, v) -> None:
    z = o[start:start + count]  # a slice, so the index is provably >= 0 and the loop vectorises
    for i in range(count):
        z[i] = v


@njit(cache=True)
def encode_simple_v1(rec, out) -> None:
    """AlphaZero-style planes plus ko and liberty planes; 25 planes."""
    n = rec.n
    w = rec.w
    nn = n * n
    own = np.int8(rec.to_move)
    opp = np.int8(3 - rec.to_move)
    o = out.reshape(out.size)  # flat view: plane c starts at c * nn
    hist = rec.hist  # [HISTORY, MAX_P] int8 colours on the padded board
    for k in range(HISTORY):
        d = 2 * k * nn
        if k <= rec.move_num:
            _planes2(hist[(rec.hist_pos - k) % HISTORY], w, n, o, d, d + nn, own, opp)
        else:
            _fill(o, d, 2 * nn, np.uint8(0))
    _fill(o, P_BLACK_TO_MOVE * nn, nn, np.uint8(1) if rec.to_move == BLACK else np.uint8(0))
    _fill(o, P_ONES * nn, nn, np.uint8(1))
    _fill(o, P_KO * nn, nn, np.uint8(0))
    ko = rec.ko
    if ko != NO_KO:
        o[P_KO * nn + (ko // w - 1) * n + ko % w - 1] = 1
    # liberty code per padded point: 0 empty/border, 1..3 own string with
    # 1, 2, 3+ liberties, 5..7 the same for the opponent; then 6 planes by compare
    code = np.empty(MAX_P, np.int8)
    lo = w + 1
    m = n * w + n + 1 - lo  # from the first to the last interior point
    cs = rec.color[lo:lo + m]
    ps = rec.parent[lo:lo + m]
    cd = code[lo:lo + m]
    libs = rec.libs
    for i in range(m):
        c = cs[i]
        lib = np.int8(min(libs[np.uint16(ps[i])], 3))  # unsigned index: no wraparound check
        cd[i] = np.int8(c == own) * lib + np.int8(c == opp) * (lib + np.int8(4))
    b = P_OWN_LIBS * nn
    _planes2(code, w, n, o, b, b + 3 * nn, np.int8(1), np.int8(5))
    _planes2(code, w, n, o, b + nn, b + 4 * nn, np.int8(2), np.int8(6))
    _planes2(code, w, n, o, b + 2 * nn, b + 5 * nn, np.int8(3), np.int8(7))


@njit(cache=True)
def encode_simple_v1_arr(arr, out) -> None:
    """``encode_simple_v1(arr[0], out)`` for Python callers holding ``Game.arr``."""
    encode_simple_v1(arr[0], out)


@njit(cache=True)
def encode_many(encode, recs, idx, out) -> None:
    """``encode(recs[idx[i]], out[i])`` for every i (benchmarks, batch tools).

    ``recs`` is an array of board records, ``out`` ``[len(idx), C, N, N]``.
    A dispatcher argument is slow to pass from Python (about 10 us per
    call), so use this for batches, ``Encoder.encode_into`` for one board."""
    for i in range(idx.shape[0]):
        encode(recs[idx[i]], out[i])
