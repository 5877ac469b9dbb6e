"""Register-blocked panels of a matrix product, written as LLVM vector code.

:func:`panel` makes a compiled function ``block(out, init, C, In, i0, j0, kdim)`` that computes the
``R × (V·w)`` block of rows ``i0 … i0+R−1`` and columns ``j0 … j0+V·w−1`` of

    out[i, j] = init[j] + Σ_{g<kdim} C[i, g] · In[g, j],

each entry one chain of fused multiply–adds in the order of ``g`` starting at ``init[j]``:

    acc ← init[j];   acc ← fma(C[i, g], In[g, j], acc)  for g = 0, 1, …, kdim − 1.

``w`` is the number of entries of a 512-bit vector (8 float64, 16 float32). The ``R·V`` accumulators
stay in vector registers for the whole contraction: per ``g`` the block loads ``V`` vectors of the row
``In[g, j0:]`` and ``R`` scalars ``C[i, g]`` (broadcast), and issues ``R·V`` vector fma. numba's loop
vectorizer does not keep accumulators in registers across the contraction (it loads and stores the
output rows), nor does it use 512-bit vectors on processors that prefer 256-bit ones; written this way
the products of the cross-entropy MLP run at 2–2.5× the rate of the same loops vectorized by numba,
with the same bits (the chain is the same; only where its terms live changed).

Requirements (the caller checks them): ``out``, ``init`` and the rows of ``In`` are contiguous along
``j``; ``C`` may have any strides (it is read one scalar at a time); the block lies inside the arrays.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: bits of the vectors the panels are written in
VECTOR_BITS = 512


def lanes(itemsize: int) -> int:
    """Entries of one vector for a float of ``itemsize`` bytes (8 float64, 16 float32)."""
    return VECTOR_BITS // (8 * itemsize)


def panel(rows: int, vectors: int, row_starts: bool = False):
    """The compiled block of ``rows`` rows and ``vectors`` vectors of columns (see the module docstring).
    With ``row_starts`` each chain starts at ``init[i]`` (one start per row: a bias of the rows, as in a
    transposed product ``Zᵀ = W Aᵀ + b 1ᵀ``) instead of ``init[j]``."""
    if rows < 1 or vectors < 1:
        raise ValueError(f"Invalid panel: {rows} rows × {vectors} vectors (both must be >= 1)")

    @intrinsic
    def block(typingctx, out, init, C, In, i0, j0, kdim):
        arrays = (out, init, C, In)
        if not all(isinstance(a, types.Array) for a in arrays) or len({a.dtype for a in arrays}) != 1 \
                or out.dtype not in (types.float64, types.float32):
            return None
        sig = types.void(out, init, C, In, types.intp, types.intp, types.intp)
        return sig, _codegen(rows, vectors, row_starts)

    start = "init[i0:…, None]" if row_starts else "init[j0:…]"
    block.__doc__ = (f"``out[i0:i0+{rows}, j0:j0+{vectors}·w] = {start} + C[i0:…, :kdim] @ In[:kdim, j0:…]`` "
                     "as register-resident fma chains (see :mod:`dyntools.engine.fma_block`).")
    return block


def _codegen(R: int, V: int, row_starts: bool):
    def codegen(context, builder, signature, args):
        out_t, init_t, c_t, in_t = signature.args[:4]
        out, init, c, x = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:4], args[:4]))
        i0, j0, kdim = args[4:]
        fty = context.get_value_type(out_t.dtype)
        size = context.get_abi_sizeof(fty)
        w = lanes(size)
        vty = ir.VectorType(fty, w)
        idx = ir.IntType(64)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty] * 3),
                                             f"llvm.fma.v{w}{'f64' if size == 8 else 'f32'}")

        def const(v):
            return ir.Constant(idx, v)

        def stride(arr, ndim, dim):                  # in elements
            return builder.sdiv(cgutils.unpack_tuple(builder, arr.strides, ndim)[dim], const(size))

        def vector_at(base, offset):
            return builder.bitcast(builder.gep(base, [offset]), vty.as_pointer())

        out_row, init_step = stride(out, 2, 0), stride(init, 1, 0)
        c_row, c_col, x_row = stride(c, 2, 0), stride(c, 2, 1), stride(x, 2, 0)
        undef = ir.Constant(vty, ir.Undefined)
        splat = ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w)

        def broadcast(scalar):
            return builder.shuffle_vector(builder.insert_element(undef, scalar, ir.Constant(ir.IntType(32), 0)),
                                          undef, splat)

        if row_starts:                               # starts[r][v] = init[i0 + r] in every lane
            starts = [[broadcast(builder.load(builder.gep(init.data, [builder.mul(builder.add(i0, const(r)),
                                                                                   init_step)])))] * V
                      for r in range(R)]
        else:                                        # starts[r][v] = init[j0 + v·w : …]
            row = [builder.load(vector_at(init.data, builder.mul(builder.add(j0, const(v * w)), init_step)), align=1)
                   for v in range(V)]
            starts = [row] * R
        rows_at = [builder.mul(builder.add(i0, const(r)), c_row) for r in range(R)]

        entry = builder.block
        head = builder.append_basic_block("fma_block.head")
        body = builder.append_basic_block("fma_block.body")
        done = builder.append_basic_block("fma_block.done")
        builder.branch(head)

        builder.position_at_end(head)
        g = builder.phi(idx)
        g.add_incoming(const(0), entry)
        acc = [[builder.phi(vty) for _ in range(V)] for _ in range(R)]
        for r in range(R):
            for v in range(V):
                acc[r][v].add_incoming(starts[r][v], entry)
        builder.cbranch(builder.icmp_signed("<", g, kdim), body, done)

        builder.position_at_end(body)
        x_at = builder.add(builder.mul(g, x_row), j0)
        xs = [builder.load(vector_at(x.data, builder.add(x_at, const(v * w))), align=1) for v in range(V)]
        g_col = builder.mul(g, c_col)
        for r in range(R):
            bc = broadcast(builder.load(builder.gep(c.data, [builder.add(rows_at[r], g_col)])))
            for v in range(V):
                acc[r][v].add_incoming(builder.call(fma, [bc, xs[v], acc[r][v]]), body)
        g.add_incoming(builder.add(g, const(1)), body)
        builder.branch(head)

        builder.position_at_end(done)
        for r in range(R):
            row = builder.add(builder.mul(builder.add(i0, const(r)), out_row), j0)
            for v in range(V):
                builder.store(acc[r][v], vector_at(out.data, builder.add(row, const(v * w))), align=1)
        return context.get_dummy_value()

    return codegen
