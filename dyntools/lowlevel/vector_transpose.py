"""Matrix transposes in vector registers.

:func:`transpose` writes ``dst[:cols, :rows] = src[:rows, :cols]ᵀ``. Square blocks of ``w × w`` entries
(``w`` = the entries of a vector, :data:`dyntools.lowlevel.fma_block.VECTOR_BITS`: 8 float64 or 16
float32 with AVX-512) go through registers: the ``w`` rows
of the block are loaded as vectors, exchanged in ``log₂ w`` rounds of two-vector shuffles, and stored
as the ``w`` rows of the transposed block. Round ``h = w/2, w/4, …, 1`` pairs row ``r`` with row
``r + h`` (``r mod 2h < h``) and, in every group of ``2h`` lanes, keeps the first halves in row ``r``
and the second halves in row ``r + h``:

    r'     = [r₀…r_{h−1}, (r+h)₀…(r+h)_{h−1}]        per group of 2h lanes
    (r+h)' = [r_h…r_{2h−1}, (r+h)_h…(r+h)_{2h−1}]

— the block transpose ``[[A, B], [C, D]]ᵀ = [[Aᵀ, Cᵀ], [Bᵀ, Dᵀ]]`` applied at every scale. A scalar
copy stores one entry at a time (``w²`` stores per block); this takes ``w`` loads, ``w log₂ w``
shuffles and ``w`` stores. Entries outside the whole blocks are copied one at a time. Only copies:
the values are unchanged bit for bit.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from dyntools.lowlevel.fma_block import VECTOR_BYTES, element_stride, lanes, vector_pointer


def _round_masks(w: int, h: int) -> tuple[list[int], list[int]]:
    """Shuffle masks of round ``h`` (lanes of the second operand numbered ``w … 2w−1``)."""
    low, high = [], []
    for s in range(0, w, 2 * h):
        low += list(range(s, s + h)) + list(range(w + s, w + s + h))
        high += list(range(s + h, s + 2 * h)) + list(range(w + s + h, w + s + 2 * h))
    return low, high


@intrinsic
def transpose_block(typingctx, dst, src, i0, j0):
    """``dst[j0:j0+w, i0:i0+w] = src[i0:i0+w, j0:j0+w]ᵀ`` in registers (see the module docstring; both
    arrays contiguous along their rows, the block inside both)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.ndim == src.ndim == 2
            and dst.dtype == src.dtype and dst.dtype in (types.float64, types.float32)):
        return None

    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[1])(context, builder, args[1])
        i0, j0 = args[2], args[3]
        fty = context.get_value_type(signature.args[0].dtype)
        size = context.get_abi_sizeof(fty)
        w = lanes(size)
        vty = ir.VectorType(fty, w)
        idx = ir.IntType(64)

        def at(arr, stride, row, col):                # pointer to the vector arr[row, col : col + w]
            return vector_pointer(builder, arr.data, builder.add(builder.mul(row, stride), col), vty)

        s_row, d_row = element_stride(builder, s, 2, 0, size), element_stride(builder, d, 2, 0, size)
        rows = [builder.load(at(s, s_row, builder.add(i0, ir.Constant(idx, r)), j0), align=1) for r in range(w)]
        h = w // 2
        while h >= 1:
            low, high = _round_masks(w, h)
            low_mask = ir.Constant(ir.VectorType(ir.IntType(32), w), low)
            high_mask = ir.Constant(ir.VectorType(ir.IntType(32), w), high)
            for r in range(w):
                if r % (2 * h) < h:
                    a, b = rows[r], rows[r + h]
                    rows[r] = builder.shuffle_vector(a, b, low_mask)
                    rows[r + h] = builder.shuffle_vector(a, b, high_mask)
            h //= 2
        for r in range(w):
            builder.store(rows[r], at(d, d_row, builder.add(j0, ir.Constant(idx, r)), i0), align=1)
        return context.get_dummy_value()

    return types.void(dst, src, types.intp, types.intp), codegen


@njit(cache=True)
def transpose(dst, src, rows, cols):
    """``dst[:cols, :rows] = src[:rows, :cols]ᵀ``: whole ``w × w`` blocks in registers
    (:func:`transpose_block`) when both arrays are contiguous along their rows, the rest one entry at a
    time (rows of ``dst`` written contiguously)."""
    w = VECTOR_BYTES // src.itemsize
    rw = rows - rows % w if src.strides[1] == src.itemsize and dst.strides[1] == dst.itemsize else 0
    cw = cols - cols % w if rw > 0 else 0
    for i in range(0, rw, w):
        for j in range(0, cw, w):
            transpose_block(dst, src, i, j)
    for j in range(cols):                             # the entries outside the whole blocks
        first = rw if j < cw else 0
        for i in range(first, rows):
            dst[j, i] = src[i, j]
