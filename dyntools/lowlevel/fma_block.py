"""Register-blocked panels of a matrix product, written as LLVM vector code.

:func:`panel` makes a compiled function ``block(out, init, C, In, i0, j0, kdim, by_row, epilogue, aux)``
that computes the ``R × (V·w)`` block of rows ``i0 … i0+R−1`` and columns ``j0 … j0+V·w−1`` of

    out[i, j] = init[j] + Σ_{g<kdim} C[i, g] · In[g, j],

each entry one chain of fused multiply–adds in the order of ``g`` starting at ``init[j]`` (or, with
``by_row``, at ``init[i]``):

    acc ← init[j];   acc ← fma(C[i, g], In[g, j], acc)  for g = 0, 1, …, kdim − 1.

``w`` is the number of entries of a vector (:data:`~dyntools.lowlevel.width.VECTOR_BITS`: 512 bits where
the processor has AVX-512, 8 float64 or 16 float32; 256 bits elsewhere). The ``R·V`` accumulators stay in vector
registers for the whole contraction: per ``g`` the block loads ``V`` vectors of the row ``In[g, j0:]``
and ``R`` scalars ``C[i, g]`` (broadcast), and issues ``R·V`` vector fma. numba's loop vectorizer does
not keep accumulators in registers across the contraction (it loads and stores the output rows), nor
does it use 512-bit vectors on processors that prefer 256-bit ones; written this way the products of
the cross-entropy MLP run at 2–2.5× the rate of the same loops vectorized by numba, with the same bits
(the chain is the same; only where its terms live changed).

An epilogue may act on each finished entry before it is stored (:func:`panel`): the ReLU of a hidden
layer, or the mask ``1[A > 0]`` of a ReLU layer's error — a pass over the output fewer.

Requirements (the caller checks them): ``out``, ``init``, the rows of ``In`` (and of a mask) are
contiguous along ``j``; ``C`` may have any strides (it is read one scalar at a time); the block lies
inside the arrays.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from dyntools.lowlevel.width import VECTOR_BITS, VECTOR_BYTES, lanes  # noqa: F401 (re-exported)


def element_stride(builder, arr, ndim: int, dim: int, itemsize: int):
    """IR: the stride of axis ``dim`` of the array struct ``arr`` (``ndim`` axes), in entries."""
    strides = cgutils.unpack_tuple(builder, arr.strides, ndim)
    return builder.sdiv(strides[dim], ir.Constant(ir.IntType(64), itemsize))


def vector_pointer(builder, base, offset, vty):
    """IR: ``base + offset`` entries, as a pointer to the vector type ``vty`` (loads and stores of it
    are given ``align=1``: rows need not be aligned)."""
    return builder.bitcast(builder.gep(base, [offset]), vty.as_pointer())


#: what a panel does to each finished entry before storing it (the ``epilogue`` argument's codes)
EPILOGUES = {"none": 0, "relu": 1, "mask": 2}


def panel(rows: int, vectors: int):
    """The compiled block of ``rows`` rows and ``vectors`` vectors of columns (see the module docstring),
    called as ``block(out, init, C, In, i0, j0, kdim, by_row, epilogue, aux)``.

    With ``by_row`` each chain starts at ``init[i]`` (one start per row: a bias of the rows, as in a
    transposed product ``Zᵀ = W Aᵀ + b 1ᵀ``) instead of ``init[j]``. ``epilogue`` (a code of
    :data:`EPILOGUES`) acts on each finished entry ``z`` before it is stored: ``relu`` stores
    ``z if z > 0 else 0`` (a hidden layer's activation), ``mask`` stores ``z if aux[i, j] > 0 else 0``
    (the error of a ReLU layer, ``aux`` its activations), both as compare-and-select, so a NaN or −0
    gives +0 as the scalar code's ``if`` does; ``none`` stores ``z``. ``aux`` is laid out as ``out``
    (pass ``out`` itself when there is no mask). Flags given as constants cost nothing: once the block
    is inlined, the branches not taken are removed; given at run time, a branch per block."""
    if rows < 1 or vectors < 1:
        raise ValueError(f"Invalid panel: {rows} rows × {vectors} vectors (both must be >= 1)")

    @intrinsic
    def block(typingctx, out, init, C, In, i0, j0, kdim, by_row, epilogue, aux):
        arrays = (out, init, C, In, aux)
        if not all(isinstance(a, types.Array) for a in arrays) or len({a.dtype for a in arrays}) != 1 \
                or out.dtype not in (types.float64, types.float32):
            return None
        sig = types.void(out, init, C, In, types.intp, types.intp, types.intp, types.boolean, types.intp, aux)
        return sig, _codegen(rows, vectors)

    block.__doc__ = (f"``out[i0:i0+{rows}, j0:j0+{vectors}·w] = epilogue(init + C[i0:…, :kdim] @ In[:kdim, j0:…])`` "
                     "as register-resident fma chains (see :func:`dyntools.lowlevel.fma_block.panel`).")
    return block


def _codegen(R: int, V: int):
    def codegen(context, builder, signature, args):
        out_t = signature.args[0]
        out, init, c, x = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:4], args[:4]))
        aux = context.make_array(signature.args[9])(context, builder, args[9])
        i0, j0, kdim, by_row, epilogue = args[4:9]
        fty = context.get_value_type(out_t.dtype)
        size = context.get_abi_sizeof(fty)
        w = lanes(size)
        vty = ir.VectorType(fty, w)
        idx = ir.IntType(64)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty] * 3),
                                             f"llvm.fma.v{w}{'f64' if size == 8 else 'f32'}")

        def const(v):
            return ir.Constant(idx, v)

        def stride(arr, ndim, dim):
            return element_stride(builder, arr, ndim, dim, size)

        def vector_at(base, offset):
            return vector_pointer(builder, base, offset, vty)

        out_row, init_step = stride(out, 2, 0), stride(init, 1, 0)
        c_row, c_col, x_row = stride(c, 2, 0), stride(c, 2, 1), stride(x, 2, 0)
        undef = ir.Constant(vty, ir.Undefined)
        splat = ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w)

        def broadcast(scalar):
            return builder.shuffle_vector(builder.insert_element(undef, scalar, ir.Constant(ir.IntType(32), 0)),
                                          undef, splat)

        with builder.if_else(by_row) as (per_row, per_column):
            with per_row:                            # init[i0 + r] in every lane
                by_rows = [broadcast(builder.load(builder.gep(init.data, [builder.mul(builder.add(i0, const(r)),
                                                                                       init_step)])))
                           for r in range(R)]
                row_block = builder.block
            with per_column:                         # init[j0 + v·w : …]
                by_columns = [builder.load(vector_at(init.data, builder.mul(builder.add(j0, const(v * w)),
                                                                            init_step)), align=1)
                              for v in range(V)]
                column_block = builder.block
        starts = [[None] * V for _ in range(R)]
        for r in range(R):
            for v in range(V):
                starts[r][v] = builder.phi(vty)
                starts[r][v].add_incoming(by_rows[r], row_block)
                starts[r][v].add_incoming(by_columns[v], column_block)
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
        zero = ir.Constant(vty, None)                 # +0 in every lane
        aux_row = stride(aux, 2, 0)
        relu = builder.icmp_signed("==", epilogue, const(EPILOGUES["relu"]))
        mask = builder.icmp_signed("==", epilogue, const(EPILOGUES["mask"]))

        def store_all(finish):
            """Store every accumulator, ``finish(z, r, v)`` of it."""
            for r in range(R):
                row = builder.add(builder.mul(builder.add(i0, const(r)), out_row), j0)
                for v in range(V):
                    builder.store(finish(acc[r][v], r, v), vector_at(out.data, builder.add(row, const(v * w))),
                                  align=1)

        def positive(z, r, v):                        # ordered: NaN → +0
            return builder.select(builder.fcmp_ordered(">", z, zero), z, zero)

        def masked(z, r, v):
            a_row = builder.add(builder.mul(builder.add(i0, const(r)), aux_row), j0)
            keep = builder.load(vector_at(aux.data, builder.add(a_row, const(v * w))), align=1)
            return builder.select(builder.fcmp_ordered(">", keep, zero), z, zero)

        # one branch per block, not a select per vector: a run-time ``epilogue`` (one compiled product for all
        # three, :func:`dyntools.models.mlp_gemm.product`) costs a compare, a constant one nothing
        with builder.if_else(relu) as (is_relu, not_relu):
            with is_relu:
                store_all(positive)
            with not_relu:
                with builder.if_else(mask) as (is_mask, plain):
                    with is_mask:
                        store_all(masked)
                    with plain:
                        store_all(lambda z, r, v: z)
        return context.get_dummy_value()

    return codegen
