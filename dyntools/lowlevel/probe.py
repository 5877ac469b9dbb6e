"""One small compiled function that exercises every LLVM-vector building block; importing this module
and calling :func:`check` fails (raises) where they cannot be compiled or give wrong numbers."""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.lowlevel import fma_block
from dyntools.lowlevel.flat_views import borrowed, matrix
from dyntools.lowlevel.vector_transpose import transpose

_PANEL = fma_block.panel(2, 1)
_RELU = fma_block.EPILOGUES["relu"]


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _exercise(flat, out, init, C, In, T):
    view = matrix(borrowed(flat), 1, 2, 3)
    view[1, 2] = -1.0
    _PANEL(out, init, C, In, 0, 0, C.shape[1], False, _RELU, out)
    transpose(T, In, In.shape[0], In.shape[1])
    return view[0, 0]


def check(dtype=np.float64) -> None:
    """Run the building blocks on small arrays in precision ``dtype`` and compare with NumPy (each precision is
    its own compiled specialisation of :func:`_exercise`: a float64 run never compiles the float32 one)."""
    dtype = np.dtype(dtype).type
    w = fma_block.lanes(np.dtype(dtype).itemsize)
    rng = np.random.default_rng(0)
    C = rng.integers(-3, 4, (2, 3)).astype(dtype)               # small integers: exact in any order
    In = rng.integers(-3, 4, (3, w)).astype(dtype)
    init = rng.integers(-3, 4, w).astype(dtype)
    flat, out, T = np.arange(8.0, dtype=dtype), np.zeros((2, w), dtype), np.zeros((w, 3), dtype)
    first = _exercise(flat, out, init, C, In, T)
    want = np.maximum(init + C @ In, 0)
    if first != 1.0 or flat[6] != -1.0 or not np.array_equal(out, want) or not np.array_equal(T, In.T):
        raise RuntimeError(f"the compiled building blocks gave wrong values ({np.dtype(dtype).name})")
