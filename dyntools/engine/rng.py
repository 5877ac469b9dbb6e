"""A small counter-free PRNG usable inside numba kernels, one state per path.

xoshiro256** (Blackman & Vigna, 2018): a 256-bit state ``s[0..3]`` advanced by shifts, xors and
a rotation; output ``rotl(s1 * 5, 7) * 9``. It is the generator NumPy documents as a good
general-purpose choice for simulation (``numpy.random.SFC64``/``PCG64`` are not callable from
numba on a per-path state array, which is what ``prange`` ensembles need).

Each path owns one row of a ``uint64[P, 4]`` state array, seeded from that path's
``SeedSequence`` (:func:`dyntools.engine.streams.path_states`), so a path's draws do not depend on
which thread ran it. The NumPy twins (``*_np``) advance many states at once with the same
arithmetic and produce bitwise-identical streams; the tests hold the two together.

Derived draws:

* ``uniform01``: the top 53 bits, ``(x >> 11) * 2**-53`` in [0, 1).
* ``randbelow(n)``: ``floor(uniform01 * n)``; the bias is below ``n / 2**53`` per draw.
* ``normal``: Box–Muller on two uniforms (the cosine branch only, so one normal costs two
  uniforms and the stream position after ``k`` normals is always ``2k`` draws).

The integer streams, uniforms and ``randbelow`` of kernel and twin are bitwise identical. The
normals agree to about one ulp only: NumPy evaluates ``log``/``cos`` with its own SIMD routines,
numba with the C library's, and the two may round differently in the last bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U64 = np.uint64
_TWO_PI = 2.0 * np.pi
_INV_2_53 = 1.0 / 9007199254740992.0


@njit(inline="always")
def _rotl(x, k):
    return (x << _U64(k)) | (x >> _U64(64 - k))


def _transition(s0, s1, s2, s3):
    """xoshiro256**'s state transition ``(s0, s1, s2, s3) → (s0 ⊕ s3 ⊕ s1, s1 ⊕ s2 ⊕ s0, s2 ⊕ s0 ⊕ (s1 ≪ 17),
    rotl(s3 ⊕ s1, 45))`` (the xors in sequence), written once for both sides: on four uint64 scalars in a kernel
    (:func:`xoshiro_next`), on four uint64 arrays, changed in place, in the NumPy twin (:func:`next_u64_np`)."""
    t = s1 << _U64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _U64(45)) | (s3 >> _U64(19))
    return s0, s1, s2, s3


_transition_nb = njit(inline="always")(_transition)


@njit(inline="always")
def next_u64(state, row):
    """Advance ``state[row]`` by one xoshiro256** step and return the 64-bit output."""
    result, s0, s1, s2, s3 = xoshiro_next(state[row, 0], state[row, 1], state[row, 2], state[row, 3])
    store_row(state, row, s0, s1, s2, s3)
    return result


@njit(inline="always")
def store_row(state, row, s0, s1, s2, s3):
    """Write a generator's four words, held in locals while it ran, back to ``state[row]``."""
    state[row, 0] = s0
    state[row, 1] = s1
    state[row, 2] = s2
    state[row, 3] = s3


@njit(inline="always")
def xoshiro_next(s0, s1, s2, s3):
    """Register form of :func:`next_u64`: ``(output, s0, s1, s2, s3)`` from a state held in locals.

    Hot loops load a path's state once (``state[row, j]``), iterate on locals, and store it back,
    which keeps the generator out of memory traffic.
    """
    result = _rotl(s1 * _U64(5), 7) * _U64(9)
    s0, s1, s2, s3 = _transition_nb(s0, s1, s2, s3)
    return result, s0, s1, s2, s3


@njit(inline="always")
def u64_to_unit(r):
    """Top 53 bits of ``r`` as a float64 in [0, 1)."""
    return float(r >> _U64(11)) * _INV_2_53


@njit(inline="always")
def uniform01(state, row):
    """A float64 uniform on [0, 1) with 53 random bits."""
    return u64_to_unit(next_u64(state, row))


@njit(inline="always")
def randbelow(state, row, n):
    """An integer uniform on {0, …, n−1} (``floor(u * n)``)."""
    return int(uniform01(state, row) * n)


@njit(inline="always")
def normal(state, row):
    """A standard normal by Box–Muller: ``sqrt(-2 log(1-u1)) cos(2π u2)``."""
    u1 = uniform01(state, row)
    u2 = uniform01(state, row)
    return np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(_TWO_PI * u2)


# ---------------------------------------------------------------- NumPy twins (vectorized over rows)

def _rotl_np(x: np.ndarray, k: int) -> np.ndarray:
    return (x << _U64(k)) | (x >> _U64(64 - k))


def next_u64_np(state: np.ndarray) -> np.ndarray:
    """Advance every row of ``state`` (``uint64[P, 4]``, modified in place); return ``uint64[P]``."""
    s0, s1, s2, s3 = (state[:, j].copy() for j in range(4))
    with np.errstate(over="ignore"):
        result = _rotl_np(s1 * _U64(5), 7) * _U64(9)
    state[:, 0], state[:, 1], state[:, 2], state[:, 3] = _transition(s0, s1, s2, s3)
    return result


def uniform01_np(state: np.ndarray) -> np.ndarray:
    return (next_u64_np(state) >> _U64(11)).astype(np.float64) * _INV_2_53


def randbelow_np(state: np.ndarray, n: int) -> np.ndarray:
    return (uniform01_np(state) * n).astype(np.int64)


def normal_np(state: np.ndarray) -> np.ndarray:
    u1 = uniform01_np(state)
    u2 = uniform01_np(state)
    return np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(_TWO_PI * u2)
