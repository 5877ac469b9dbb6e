"""Scalars in the precision of an array, for kernels compiled once per precision.

numba types a float literal or a float64 hyper-parameter as float64, and float32 ⊕ float64 as float64: a
float32 kernel whose loops meet such a scalar silently widens every element operation to float64 (and
rounds back on the store). ``like(arr, x)`` is ``x`` rounded to ``arr``'s precision — float32 for a
float32 array, float64 otherwise — so that a kernel written once keeps its loops in its arrays' precision;
for float64 arrays it is the identity, and float64 results keep their bits.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload


def like(arr, x):
    """``x`` as a scalar of ``arr``'s precision (Python callers; compiled code uses the overload)."""
    return arr.dtype.type(x)


@overload(like)
def _like(arr, x):
    if isinstance(arr, types.Array) and arr.dtype == types.float32:
        return lambda arr, x: np.float32(x)
    return lambda arr, x: x
