"""Gaussian increments for the SDE engine: a ziggurat normal on the per-path xoshiro streams.

Why not :func:`dyntools.engine.rng.normal`?  Box–Muller costs a ``log``, a ``sqrt`` and a ``cos`` per
normal (measured ≈ 45 ns per normal per core here), which makes drawing increments slower than
NumPy's own ziggurat and the engine slower than a vectorized NumPy Euler–Maruyama. This module
draws standard normals by the ziggurat method of Marsaglia & Tsang (2000, "The ziggurat method
for generating random variables", J. Stat. Softw. 5(8)) with 256 layers, on the same
xoshiro256** per-path streams (:func:`dyntools.engine.rng.next_u64`):

* one 64-bit draw ``u``: layer ``i = u & 255``, sign bit ``(u >> 8) & 1``, and a 53-bit uniform
  ``U = (u >> 11) 2⁻⁵³``; the candidate is ``z = U x_i``;
* accept at once if ``z < x_{i+1}`` (≈ 98.8 % of draws; the box lies under the density);
* layer 0 with ``z ≥ R``: a draw from the tail ``|Z| > R`` by Marsaglia's exponential method
  (two uniforms per attempt: ``a = −log(1−U₁)/R``, ``b = −log(1−U₂)``, accept if ``2b > a²``,
  return ``R + a``);
* other layers: accept if ``f(x_{i+1}) + U₂ (f(x_i) − f(x_{i+1})) < f(z)``, ``f(x) = exp(−x²/2)``,
  else start again with a new 64-bit draw.

Table: ``R = 3.6541528853610088``, layer area ``V = 4.92867323399e-3``, ``x₀ = V/f(R)``,
``x₁ = R``, ``x_{i+1} = sqrt(−2 log(V/x_i + f(x_i)))``, ``x₂₅₆ = 0``.

The number of 64-bit draws a normal consumes varies (≥ 1), so a path's stream position depends
only on how many normals that path drew — still one stream per path, independent of threads.
:func:`normal_np` is the NumPy twin (vectorized over rows with masks for the rare retries); the
tests check that both give bitwise-identical streams.

Brownian increments that stay consistent under refinement: a solver step of size ``h`` made of
``r`` *fine* steps draws ``r·m`` normals in fine-step order (fine step outer, noise dimension
inner) and uses ``ΔW = sqrt(h/r) Σ_s Z_s``. A run at step ``h`` with ``r`` sub-steps therefore sees
the same fine Brownian path as a run at step ``h/r`` with one sub-step: the increment over ``2h``
is the sum of the two increments over ``h`` (up to floating-point rounding of the sum).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import rng

ZIG_R = 3.6541528853610088
ZIG_V = 4.92867323399e-3
_N_LAYERS = 256
_INV_2_53 = 1.0 / 9007199254740992.0
_U64 = np.uint64


def _tables() -> tuple[np.ndarray, np.ndarray]:
    f = lambda x: np.exp(-0.5 * x * x)
    x = np.empty(_N_LAYERS + 1)
    x[0] = ZIG_V / f(ZIG_R)
    x[1] = ZIG_R
    for i in range(1, _N_LAYERS - 1):
        x[i + 1] = np.sqrt(-2.0 * np.log(ZIG_V / x[i] + f(x[i])))
    x[_N_LAYERS] = 0.0
    return x, f(x)


ZIG_X, ZIG_F = _tables()
# ``x_i 2⁻⁵³``: scaling by a power of two is exact, so ``float(u >> 11) * ZIG_XS[i]`` is the same
# number as ``float(u >> 11) * 2⁻⁵³ * ZIG_X[i]`` (one rounding either way) with one multiply less
ZIG_XS = ZIG_X * _INV_2_53


@njit(inline="always")
def normal_reg(s0, s1, s2, s3):
    """Register form of :func:`normal`: ``(z, s0, s1, s2, s3)`` from a xoshiro256** state held in
    local variables (see :func:`dyntools.engine.rng.xoshiro_next`). The common case (≈ 98.8 %: one 64-bit
    draw, ``z < x_{i+1}``) is inlined into the caller's loop; the rest goes to :func:`_normal_slow`,
    which continues the same stream, so the draws are those of :func:`normal`."""
    u, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
    i = int(u & _U64(255))
    z = float(u >> _U64(11)) * ZIG_XS[i]
    if z < ZIG_X[i + 1]:
        return (-z if (u >> _U64(8)) & _U64(1) else z), s0, s1, s2, s3
    return _normal_slow(u, s0, s1, s2, s3)


@njit(cache=True)
def _normal_slow(u, s0, s1, s2, s3):
    """The ziggurat's rare branches (tail, wedge, retry) after a first draw ``u`` that was not
    accepted at once; returns ``(z, s0, s1, s2, s3)``."""
    while True:
        i = int(u & _U64(255))
        negative = (u >> _U64(8)) & _U64(1)
        z = float(u >> _U64(11)) * _INV_2_53 * ZIG_X[i]
        if z < ZIG_X[i + 1]:
            return (-z if negative else z), s0, s1, s2, s3
        if i == 0:
            while True:
                r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
                a = -np.log(1.0 - rng.u64_to_unit(r)) / ZIG_R
                r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
                b = -np.log(1.0 - rng.u64_to_unit(r))
                if 2.0 * b > a * a:
                    z = ZIG_R + a
                    return (-z if negative else z), s0, s1, s2, s3
        r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
        y = ZIG_F[i + 1] + rng.u64_to_unit(r) * (ZIG_F[i] - ZIG_F[i + 1])
        if y < np.exp(-0.5 * z * z):
            return (-z if negative else z), s0, s1, s2, s3
        u, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)


@njit(inline="always")
def normal(state, row):
    """A standard normal from ``state[row]`` by the 256-layer ziggurat (see the module docstring).
    Loads and stores the state row; hot loops should hold the state in locals and call
    :func:`normal_reg` instead."""
    z, s0, s1, s2, s3 = normal_reg(state[row, 0], state[row, 1], state[row, 2], state[row, 3])
    rng.store_row(state, row, s0, s1, s2, s3)
    return z


def normal_np(state: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`normal`: one normal per row of ``state`` (advanced in place)."""
    out = np.empty(state.shape[0])
    todo = np.arange(state.shape[0])
    while todo.size:
        sub = state[todo]
        u = rng.next_u64_np(sub)
        i = (u & _U64(255)).astype(np.int64)
        negative = ((u >> _U64(8)) & _U64(1)).astype(bool)
        z = (u >> _U64(11)).astype(np.float64) * _INV_2_53 * ZIG_X[i]
        done = z < ZIG_X[i + 1]
        tail = ~done & (i == 0)
        wedge = ~done & (i != 0)
        if tail.any():
            rows = np.flatnonzero(tail)
            pending = rows.copy()
            while pending.size:
                st = sub[pending]
                a = -np.log(1.0 - rng.uniform01_np(st)) / ZIG_R
                b = -np.log(1.0 - rng.uniform01_np(st))
                sub[pending] = st
                ok = 2.0 * b > a * a
                z[pending[ok]] = ZIG_R + a[ok]
                pending = pending[~ok]
            done |= tail
        if wedge.any():
            rows = np.flatnonzero(wedge)
            st = sub[rows]
            y = ZIG_F[i[rows] + 1] + rng.uniform01_np(st) * (ZIG_F[i[rows]] - ZIG_F[i[rows] + 1])
            sub[rows] = st
            done[rows] = y < np.exp(-0.5 * z[rows] ** 2)
        state[todo] = sub
        val = np.where(negative, -z, z)
        out[todo[done]] = val[done]
        todo = todo[~done]
    return out
