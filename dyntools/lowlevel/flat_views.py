"""Matrices viewed inside flat scratch arrays, without a call per view.

A compiled kernel that keeps its layers, activations and errors one after the other in a flat array
takes 2-D views of it many times a step. numba's ``flat[a:a + r·c].reshape((r, c))`` computes each view
through a helper call of its runtime (it may have to copy); on a small network the ~45 views of one
forward/backward pass of the cross-entropy MLP cost 1.7 µs a step — about a seventh of the step,
measured before this module. :func:`matrix` builds the same view directly: the data pointer moved by
``start`` entries, shape ``(rows, cols)``, row stride ``cols`` entries.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


@intrinsic
def matrix(typingctx, flat, start, rows, cols):
    """The ``rows × cols`` matrix stored row after row in ``flat[start : start + rows·cols]`` (a view, with
    ``flat``'s own step between entries; the caller keeps it inside ``flat``: nothing is checked)."""
    if not isinstance(flat, types.Array) or flat.ndim != 1:
        return None
    result = types.Array(flat.dtype, 2, "C" if flat.layout == "C" else "A")
    sig = result(flat, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        dst = context.make_array(signature.return_type)(context, builder)
        first, n_rows, n_cols = args[1:]
        step = cgutils.unpack_tuple(builder, src.strides, 1)[0]         # bytes between entries of ``flat``
        if signature.args[0].layout == "C":           # contiguous: an element offset (keeps alias analysis)
            data = builder.gep(src.data, [first])
        else:
            data = cgutils.pointer_add(builder, src.data, builder.mul(first, step))
        context.populate_array(dst, data=data,
                               shape=cgutils.pack_array(builder, [n_rows, n_cols]),
                               strides=cgutils.pack_array(builder, [builder.mul(n_cols, step), step]),
                               itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, signature.return_type, dst._getvalue())

    return sig, codegen


@intrinsic
def borrowed(typingctx, arr):
    """``arr`` itself (same data, shape and strides) without the reference to the owner of its memory.

    Every view numba takes of an array (a slice, a transpose, :func:`matrix`) and every array passed to
    a compiled function is counted in and out of its owner's reference count, one atomic instruction
    each; a forward/backward pass of the cross-entropy MLP did ~250 of them a step (a sixth of its
    time). Views of a borrowed array count nothing. For use inside a compiled function only, while the
    caller holds ``arr``: a borrowed array must not be returned or stored."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        null = context.get_constant_null(types.MemInfoPointer(types.voidptr))
        src.meminfo = null
        src.parent = cgutils.get_null_value(src.parent.type)
        return src._getvalue()

    return arr(arr), codegen
