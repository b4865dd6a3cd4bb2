"""The plane kernels every encoder shares, and encoding a batch of boards.

Vocabulary
----------
flat planes  an encoder's output ``out[C, N, N]`` seen as one flat uint8
             array ``o`` (``out.reshape(out.size)``): plane ``c`` starts at
             ``c * N * N``, cell ``(y, x)`` of it at ``c * N * N + y * N + x``.
padded array a board array indexed by point, ``(y + 1) * w + 1 + x``
             (``go/board.py``), as the board's colours and history are.
eq_planes    two planes at once: where a padded array equals one value,
             and where it equals another (the stone planes of every
             encoder), by vector compares.
fill         a run of cells set to one value.
encode_many  one encoder over a batch of boards (benchmarks, batch tools).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

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
def fill(o, start, count, v) -> None:
    """``o[start:start + count] = v`` for the flat plane array ``o``."""
    z = o[start:start + count]  # a slice, so the index is provably >= 0 and the loop vectorises
    for i in range(count):
        z[i] = v


@njit(cache=True)
def encode_many(encode, recs, idx, out) -> None:
    """``encode(recs[idx[i]], out[i])`` for every i (benchmarks, batch tools).

    ``recs`` is an array of board records, ``out`` ``[len(idx), C, N, N]``.
    A dispatcher argument is slow to pass from Python (about 10 us per
    call), so use this for batches, ``Encoder.encode_into`` for one board."""
    for i in range(idx.shape[0]):
        encode(recs[idx[i]], out[i])
