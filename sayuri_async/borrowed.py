"""Borrowed array views for compiled entry points: no reference counting below them.

Vocabulary
----------
meminfo     numba's reference-counted owner of an array's memory. Every
            array a compiled function gets from Python has one, and so has
            every view made of it (a slice, a row, a reshape); numba adds
            one to its count when a view is made or a function receives
            the array, and takes one away after. Each is an atomic
            instruction (``lock inc``/``lock dec``), which also waits for the
            processor's pending stores: measured in 19x19 self-play with
            the ``sayuri-v3`` encoder, about 45 such pairs a leaf (views of
            the planes in the encoder, the tree's arrays handed to every
            step of the walk, the answers' rows), 6% of the samples in
            ``NRT_incref``/``NRT_decref`` alone.
borrowed    ``borrowed(a)``: the same array (data, shape, strides) with no
            meminfo and no parent object, so that numba's counting on it
            and on every view of it is a test of a null pointer. For the
            entry points Python calls (``search.puct.descend_round`` and
            its kin): the caller holds the arrays for the whole call, and
            nothing compiled keeps a view past it. A borrowed array must
            never be returned to Python or stored where it outlives the call.
borrowed_at ``borrowed_at(like, address)``: an array of ``like``'s type,
            shape and strides whose data is at ``address`` (an int64 from
            ``ndarray.ctypes.data``), borrowed as above: one compiled call
            reaches many arrays of one kind (the workspaces of many
            searches) from an array of their addresses. The caller keeps
            every such array alive for the call, and each has ``like``'s
            shape.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic


def _without_owner(context, builder, array_type, value):
    """The array struct ``value`` with null meminfo and parent."""
    model = context.data_model_manager[array_type]
    for name in ("meminfo", "parent"):
        index = model.get_field_position(name)
        value = builder.insert_value(value, ir.Constant(value.type.elements[index], None), index)
    return value


@intrinsic
def borrowed(typingctx, arr):
    """``arr`` without its meminfo and parent (see the module docstring)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return _without_owner(context, builder, signature.args[0], args[0])

    return arr(arr), codegen


@intrinsic
def borrowed_at(typingctx, like, address):
    """``like`` moved to the data at ``address`` (see the module docstring)."""
    if not isinstance(like, types.Array) or not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = _without_owner(context, builder, signature.args[0], args[0])
        index = context.data_model_manager[signature.args[0]].get_field_position("data")
        data = builder.inttoptr(args[1], value.type.elements[index])
        return builder.insert_value(value, data, index)

    return like(like, address), codegen
