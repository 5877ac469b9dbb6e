"""The low-level kernels as plain numba loops: what runs when the LLVM-vector code cannot be compiled.

Each function here has the call signature and the results of its fast twin
(:func:`dyntools.lowlevel.fma_block.panel`, :func:`dyntools.lowlevel.vector_transpose.transpose`,
:func:`dyntools.lowlevel.flat_views.matrix` and ``borrowed``), written with nothing but numba's public
language:

* a panel computes each entry as the same chain ``acc ← init;  acc ← acc + C[i, g]·In[g, j]`` for
  g = 0, 1, …, kdim − 1, compiled with fast-math ``contract`` only, so LLVM fuses each multiply–add into
  one fma — the fast panel's chain, the same bits — on processors with fma instructions. On a processor
  without them (``NUMBA_CPU_NAME=nehalem``) the product and the sum are rounded apart: the chains differ,
  and so may the last bits (the fast panels' ``llvm.fma`` would be a library call there, still fused);
* a transpose copies entries one at a time (copies: the same bits);
* a matrix view is ``flat[start : start + rows·cols].reshape((rows, cols))`` (numba's runtime helper
  builds it; it never copies here, since a 1-D slice always has a 2-D view);
* ``borrowed`` returns the array itself (reference counted as usual).

Slower (the cross-entropy MLP's step by roughly the factors measured in the fast modules' docstrings),
the same numbers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.lowlevel.width import VECTOR_BYTES

#: what a panel does to each finished entry before storing it (the ``epilogue`` argument's codes)
EPILOGUES = {"none": 0, "relu": 1, "mask": 2}
_RELU, _MASK = EPILOGUES["relu"], EPILOGUES["mask"]


def panel(rows: int, vectors: int):
    """The block of ``rows`` rows and ``vectors`` vectors of columns, called as
    ``block(out, init, C, In, i0, j0, kdim, by_row, epilogue, aux)`` (see
    :func:`dyntools.lowlevel.fma_block.panel` for the arguments), as loops (:func:`block_loops`)."""
    if rows < 1 or vectors < 1:
        raise ValueError(f"Invalid panel: {rows} rows × {vectors} vectors (both must be >= 1)")

    @njit(inline="always")
    def block(out, init, C, In, i0, j0, kdim, by_row, epilogue, aux):
        # np.int64(): run-time integers. A constant (the panel's shape, or a caller's first ``i = 0``) would be
        # typed as its literal value and compile block_loops once per value: 13 times for one float64 gemm, which
        # took 7.7 s to compile instead of 2.4 s (AMD EPYC Zen 4, empty numba cache)
        block_loops(out, init, C, In, np.int64(i0), np.int64(j0), kdim, by_row, epilogue, aux, np.int64(rows),
                    np.int64(vectors))

    return block


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def block_loops(out, init, C, In, i0, j0, kdim, by_row, epilogue, aux, rows, vectors):
    """Rows ``i0 … i0+rows−1`` and columns ``j0 …`` (``vectors`` vectors of them) of the product, each
    entry one chain in the order of ``g``, then the epilogue (one compiled function for every panel
    shape: the fallback's callers stay small to compile)."""
    j1 = j0 + vectors * (VECTOR_BYTES // out.itemsize)
    for i in range(i0, i0 + rows):
        for j in range(j0, j1):
            out[i, j] = init[i] if by_row else init[j]
        for g in range(kdim):
            c = C[i, g]
            for j in range(j0, j1):
                out[i, j] = out[i, j] + c * In[g, j]               # contracted: fma(c, In[g, j], acc)
        if epilogue == _RELU:
            for j in range(j0, j1):
                z = out[i, j]
                out[i, j] = z if z > 0.0 else 0.0                  # NaN and −0 give +0, as the select
        elif epilogue == _MASK:
            for j in range(j0, j1):
                out[i, j] = out[i, j] if aux[i, j] > 0.0 else 0.0


@njit(cache=True)
def transpose(dst, src, rows, cols):
    """``dst[:cols, :rows] = src[:rows, :cols]ᵀ``, one entry at a time (rows of ``dst`` written
    contiguously)."""
    for j in range(cols):
        for i in range(rows):
            dst[j, i] = src[i, j]


@njit(inline="always")
def matrix(flat, start, rows, cols):
    """The ``rows × cols`` matrix stored row after row in ``flat[start : start + rows·cols]`` (a view)."""
    return flat[start:start + rows * cols].reshape((rows, cols))


@njit(inline="always")
def borrowed(arr):
    """``arr`` itself (the fast version drops its reference counting; here it is kept)."""
    return arr
