"""The one divergence rule.

A path *diverges* at the first step ``t`` whose parameters are non-finite or whose size is beyond
the run's ``bound``. Step ``t`` is the iterate after ``t`` updates (step 0 is the initial point), so
an update made in loop iteration ``t`` (``θ_t → θ_{t+1}``) that blows up reports ``diverged_at =
t + 1``; :data:`NEVER` (−1) means the path never diverged. Every runner records this convention
in an ``int64`` array ``diverged_at`` (one entry per path) and stops the path there: its later
recordings stay NaN.

The *size* is what each model states in its docstring (``|θ|`` for the quadratic toy,
``‖u‖₁ + ‖v‖₁`` for diagonal networks, ``‖θ‖₁`` for MLPs, ``|x_i|`` for SDEs); the trainer's ``‖θ‖₁`` is
:func:`l1_size` (four interleaved partial sums), decided through :func:`checked_size` (a vectorized sum
in any order, and :func:`l1_size` itself only where the two could decide differently); the test is
always ``not size <= bound``, which is also true for NaN (a NaN size fails every comparison), so
non-finite parameters are caught by the same test without a separate ``isfinite``.

:func:`default_bound` is the one default: ``factor`` (10⁶) times the size at the start, floored at
``factor`` itself (a run starting at 0 still has a finite bound).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``diverged_at`` of a path that never diverged.
NEVER = -1
#: Default ratio of the bound to the starting size.
FACTOR = 1e6


@njit(inline="always")
def beyond(size, bound):
    """True when ``size`` is NaN or larger than ``bound`` (compiled; see the module docstring)."""
    return not size <= bound


@njit(inline="always")
def _four_chain_l1(theta, grad, clear):
    """``(s₀ + s₁) + (s₂ + s₃)``, ``s_k`` the running sum of ``|θ_j|`` over ``j ≡ k (mod 4)`` (the last ``p mod 4``
    entries go to ``s₀``); with ``clear`` (a constant at each call site, so the compiler drops the stores where it
    is False) ``grad[j] = 0`` in the same pass."""
    n = theta.shape[0]
    n4 = n - n % 4
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, n4, 4):
        s0 += abs(theta[j])
        s1 += abs(theta[j + 1])
        s2 += abs(theta[j + 2])
        s3 += abs(theta[j + 3])
        if clear:
            grad[j] = 0.0
            grad[j + 1] = 0.0
            grad[j + 2] = 0.0
            grad[j + 3] = 0.0
    for j in range(n4, n):
        s0 += abs(theta[j])
        if clear:
            grad[j] = 0.0
    return (s0 + s1) + (s2 + s3)


@njit(inline="always")
def l1_size(theta):
    """``‖θ‖₁`` summed as ``(s₀ + s₁) + (s₂ + s₃)``, ``s_k`` the running sum of ``|θ_j|`` over
    ``j ≡ k (mod 4)`` (the last ``p mod 4`` entries go to ``s₀``): four independent chains of additions
    instead of one. NaN propagates."""
    return _four_chain_l1(theta, theta, False)


#: unit roundoff of the float64 accumulators of the sums of ``|θ_j|``
_U = 2.0**-53


@njit(cache=True, nogil=True)
def l1_estimate(theta):
    """``‖θ‖₁`` in eight lanes (``j mod 8``, the last ``p mod 8`` entries in lane 0) combined pairwise:
    a fixed order that vectorizes without reassociation (so the bits do not depend on how or where
    the function was compiled), within a factor ``1 ± γ`` of the exact sum as every order of a sum of
    non-negative terms (NaN propagates)."""
    n = theta.shape[0]
    n8 = n - n % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for j in range(0, n8, 8):
        s0 += abs(theta[j])
        s1 += abs(theta[j + 1])
        s2 += abs(theta[j + 2])
        s3 += abs(theta[j + 3])
        s4 += abs(theta[j + 4])
        s5 += abs(theta[j + 5])
        s6 += abs(theta[j + 6])
        s7 += abs(theta[j + 7])
    for j in range(n8, n):
        s0 += abs(theta[j])
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(inline="always")
def checked_size(theta, bound):
    """A size of ``θ`` whose :func:`beyond` decision is exactly that of :func:`l1_size`, computed only as
    far as that decision needs it.

    :func:`l1_size` runs four chains of additions; :func:`l1_estimate` sums in any order (vectorized) to
    ``S̃``. Both are sums of p non-negative terms, each within a factor ``1 ± γ`` of the exact value
    (``γ = (p−1)u/(1 − (p−1)u)``, u the unit roundoff of the float64 accumulators), so
    ``l1_size ≤ S̃ (1 + γ)/(1 − γ) ≤ S̃ (1 + 4pu)`` for ``pu ≤ 0.01`` (p below 10¹³): when
    ``S̃ (1 + 4pu) ≤ bound`` the guard's sum is within the bound too and ``S̃`` is returned; otherwise
    (near or beyond the bound, inf, NaN) :func:`l1_size` itself."""
    estimate = l1_estimate(theta)
    if estimate * (1.0 + 4.0 * theta.shape[0] * _U) <= bound:
        return estimate
    return l1_size(theta)


@njit(inline="always")
def l1_size_clearing(theta, grad):
    """:func:`l1_size` (the same additions in the same order: one function computes both) that also sets ``grad``
    to zero in the same pass: a loop that accumulates a fresh gradient every step saves a pass over the
    parameters."""
    return _four_chain_l1(theta, grad, True)


def l1_size_np(theta) -> float:
    """NumPy twin of :func:`l1_size` (the same additions in the same order, so the same bits)."""
    a = np.abs(np.asarray(theta, dtype=np.float64))
    n4 = a.size - a.size % 4
    s0, s1, s2, s3 = np.cumsum(a[:n4].reshape(-1, 4), axis=0)[-1].tolist() if n4 else (0.0, 0.0, 0.0, 0.0)
    for x in a[n4:].tolist():                    # cumsum along axis 0 adds row after row: the same order
        s0 += x
    return (s0 + s1) + (s2 + s3)


def beyond_np(size, bound) -> np.ndarray:
    """NumPy twin of :func:`beyond`, elementwise (a Python float gives a bool, without NumPy's overhead)."""
    if isinstance(size, float):
        return not size <= bound
    with np.errstate(invalid="ignore"):
        return ~(np.asarray(size) <= bound)


def default_bound(start_size: float, factor: float = FACTOR) -> float:
    """``factor · max(start_size, 1)``: the bound a runner uses when none is given."""
    start_size = float(start_size)
    if not np.isfinite(start_size):
        raise ValueError(f"Invalid start: the initial parameters have a non-finite size ({start_size})")
    return factor * max(start_size, 1.0)


def alive(diverged_at: np.ndarray) -> np.ndarray:
    """Mask of the paths that never diverged."""
    return np.asarray(diverged_at) == NEVER


def summary(diverged_at: np.ndarray) -> dict:
    """``{"diverged": count, "first": earliest step or None}`` over all paths."""
    div = np.asarray(diverged_at)
    bad = div[div != NEVER]
    return {"diverged": int(bad.size), "first": int(bad.min()) if bad.size else None}


def cause(state_at_divergence, bound: float, *, where: str = "") -> str:
    """The reason a path stopped, from its state at the divergence: non-finite (NaN or ±inf, produced
    by the dynamics, e.g. √ or log of a negative value) or finite but beyond the bound; "" when the state
    given is neither (then it is not the state at the divergence and no cause is claimed)."""
    state = np.asarray(state_at_divergence, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(state))
    if bad.size:
        return (f"the first became non-finite{where}, not large (coordinate {bad[0]} = {state[bad[0]]}: produced "
                f"by the dynamics, e.g. the square root or log of a negative value, or an overflow)")
    if np.abs(state).sum() > bound or np.abs(state).max() > bound:
        return f"the first grew beyond the bound {bound:g}{where}, still finite"
    return ""  # not the state at the divergence (a loop that does not keep it): no cause claimed
