"""The model ladder of seed 000 on the Voronoi environment (:mod:`dyntools.data.voronoi`).

Shared notation (seed 000): a batch ``X`` (b × D), centers ``𝒞`` (k × D), ``C`` classes. Every rung
scores the centers through the normalized centers ``u_j = c_j / ‖c_j‖₂²``:

    z_j(x) = xᵀu_j − o                                            (o: offset)
    a_j(x) = |z_j|                     rungs 2–4
    a_j(x) = Σ_{i=1,2} ReLU(p_i z_j)   rungs 5–6 (p: the plus–minus pair; = |z_j| at p = (−1, 1))
    π(x)   = softmax_j(−σ a_j(x))                                 (σ: the softmax scale)
    ℓ(x)   = π(x)ᵀ W                                              (W: k × C, the linear layer C_θ)

and is trained on the mean cross-entropy ``J = (1/b) Σ_q [log Σ_c exp ℓ_c(x_q) − ℓ_{y_q}(x_q)]``.

=====  ================  =====================================================================
rung   name              learned                       fixed
=====  ================  =====================================================================
1      ``exact``         nothing: f(x) = label of argmin_j |xᵀu_j − 1|
2      ``center-labels`` W                              o = 1, σ = σ₀, 𝒞 = the environment's
3      ``offset``        W, o                           σ = σ₀, 𝒞
4      ``scale``         W, o, σ                        𝒞
5      ``plus-minus``    W, o, σ, p                     𝒞
6      ``centers``       W, o, σ, p, 𝒞 (k = 2048 in the seed)
=====  ================  =====================================================================

Seed 000 writes rungs 2–3 as ``softmax(−|…|)``; its code multiplies by a fixed ``σ₀ = 10⁴`` there
(softmax of raw distances of order one over ~100 centers is nearly uniform), which is the default
``fixed_scale``. Its compact ``pm_θ * ReLU(…)`` is, in the code, ``Σ_i ReLU(p_i z)``: the form used
here. Initializations follow the study: ``W ~ U(−1/√k, 1/√k)`` (``nn.Linear``'s default), ``o ~ U(0, 1)``,
``σ = 1``, ``p = 0.4·(−1, 1)``, learned centers ``~ N(0, s² I)`` at the box's scale ``s``.

The gradient, with ``δ_c = (softmax(ℓ)_c − 1[c = y]) / b`` and ``g_j = Σ_c W_jc δ_c``:

    ∂J/∂W_jc += π_j δ_c,        ∂J/∂(−σ a_j) = π_j (g_j − Σ_i π_i g_i) =: e_j
    ∂J/∂σ += −Σ_j e_j a_j,      ∂J/∂a_j = −σ e_j =: h_j
    ∂J/∂z_j = h_j sign z_j  (abs)   or   h_j Σ_i p_i 1[p_i z_j > 0]  (ReLU pair),
    ∂J/∂p_i += Σ_j h_j z_j 1[p_i z_j > 0],     ∂J/∂o += −Σ_j ∂J/∂z_j,     ∂J/∂u_j += (∂J/∂z_j) x
    ∂J/∂c_j = (I/‖c‖² − 2 c cᵀ/‖c‖⁴) ∂J/∂u_j     (the Jacobian of c ↦ c/‖c‖², symmetric)

(``sign 0 = 0`` and ``ReLU′(0) = 0``, PyTorch's conventions). Parameter layout of θ: ``W`` (k·C,
stored C × k as PyTorch's ``Linear.weight``) | ``o`` | ``σ`` | ``p`` (2) | ``𝒞`` (k·D, row-major), each
block present from its rung on.
Memory per step is O(k) per example (the kernel keeps one row of scores), O(k·D) for the centers.

**Precision** (``dtype``): ``"float64"`` (default) or ``"float32"``. :func:`dyntools.train` allocates θ, the
data, the optimizer state and the scratch in ``model.dtype``; the kernel is the same source compiled for each
precision: its scalars take the arrays' precision (:func:`dyntools.engine.precision.like`), its softmax exponential is
:func:`softmax_exp` or :func:`softmax_exp32` by type (:func:`softmax_exp_any`), and only the per-batch sums
of the loss and of the offset/scale/plus–minus gradients stay float64. The float32 kernel agrees with the
float64 one to a few float32 roundings relative to ‖g‖∞ where σ ≈ 1, but the rungs with the fixed scale
σ₀ = 10⁴ multiply the rounding of the scores z by σ₀ (about 10⁴·2⁻²⁴ ≈ 6e-4 relative: three digits); see
tests/test_voronoi_float32.py for the stated tolerances.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from dyntools import validation
from dyntools.engine.precision import like
from dyntools.models import voronoi_rules
from dyntools.models.base import Model

DTYPES = ("float64", "float32")      # the precisions the kernel is compiled for
RUNGS = ("exact", "center-labels", "offset", "scale", "plus-minus", "centers")
#: parameter groups (for per-group decay) in layout order
GROUPS = ("logits", "offset", "scale", "plus-minus", "centers")
#: no ``reassoc``: with it the vectorizer may split a reduction differently when a callee is optimized on its
#: own (the compiling process) and when it is linked into its caller's cached library (a later process), and
#: the last bits of the gradient differed between a fresh compile and a cache load. The long sums are
#: written with explicit lanes instead (:func:`_lane_sum`, :func:`_lane_dot`), whose order is fixed by the
#: source: every process, and every vector width, adds in the same order.
FASTMATH = {"contract", "nsz"}
#: lanes of the explicit-lane sums: the partial sums of indices j ≡ l (mod LANES), kept in a small array,
#: then combined by halving (l + LANES/2 into l, …). 32 lanes are four 512-bit float64 vectors (eight
#: 256-bit ones): enough independent additions to hide the adder's latency.
LANES = 32

# iargs layout
_K, _C, _D, _RUNG, _OW, _OO, _OS, _OP, _OC = range(9)


def rung_index(rung: str) -> int:
    """0-based position of ``rung`` in :data:`RUNGS` (``ValueError`` naming the choices otherwise)."""
    return RUNGS.index(validation.one_of("rung", rung, RUNGS))


# ------------------------------------------------------------------------------------ compiled kernel
#
# Storage for speed: W is stored class-major (C × k, PyTorch's ``Linear.weight``) and the normalized
# centers dimension-major (D × k), so that every loop over the k centers reads contiguous memory and
# vectorizes; the exponentials of the softmax go through :func:`softmax_exp`, a vectorizable
# exp for arguments ≤ 0 (the softmax is shifted by its largest score).

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238        # ln 2 split in a high part with 32 bits and the rest
_LN2_LO = 1.9082149292705877e-10
_SHIFT = 6755399441055744.0         # 1.5 · 2^52: adding it rounds to an integer held in the low bits
_BIAS = 1023 << 52
_CUT = -300.0                       # exp(−300) ≈ 5.1e−131: smaller softmax terms are set to 0
_TINY = 5.2e-131                    # just above exp(_CUT)


@njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _exp_parts(a, sigma, m, out, kbuf):
    """First half of :func:`softmax_exp`: ``out = exp(r)`` and the bits of ``2^n`` in ``kbuf``.
    No reassociation may be allowed here: it would fold ``(t + shift) − shift`` to ``t``. ``a``,
    ``out`` and ``kbuf`` must be distinct arrays (overlap would stop the loop from vectorizing)."""
    for j in range(a.shape[0]):
        v = max(-sigma * (a[j] - m), _CUT)
        kd = v * _LOG2E + _SHIFT
        kbuf[j] = kd
        nf = kd - _SHIFT
        r = (v - nf * _LN2_HI) - nf * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        out[j] = p * r + 1.0
    bits = kbuf.view(np.int64)
    for j in range(a.shape[0]):
        bits[j] = (bits[j] << 52) + _BIAS


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _lane_sum(x, n, acc):
    """``Σ_{j<n} x[j]`` in :data:`LANES` explicit lanes (``acc``: scratch of LANES entries, of the sum's
    precision): lane l sums the j ≡ l (mod LANES) in increasing j, then lane l + h is added into lane l for
    h = LANES/2, …, 1. The order is the source's, so no ``reassoc`` is needed for it to vectorize."""
    for lane in range(LANES):
        acc[lane] = 0.0
    full = n - n % LANES
    for j0 in range(0, full, LANES):
        for lane in range(LANES):
            acc[lane] += x[j0 + lane]
    for j in range(full, n):
        acc[j - full] += x[j]
    return _combine_lanes(acc)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _lane_dot(x, w, wo, n, acc):
    """``Σ_{j<n} x[j] w[wo + j]`` in explicit lanes, in the order of :func:`_lane_sum`."""
    for lane in range(LANES):
        acc[lane] = 0.0
    full = n - n % LANES
    for j0 in range(0, full, LANES):
        for lane in range(LANES):
            acc[lane] += x[j0 + lane] * w[wo + j0 + lane]
    for j in range(full, n):
        acc[j - full] += x[j] * w[wo + j]
    return _combine_lanes(acc)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _combine_lanes(acc):
    """Lane l + h added into lane l for h = LANES/2, …, 1; returns lane 0 (the fixed tree of the lanes)."""
    h = LANES // 2
    while h > 0:
        for lane in range(h):
            acc[lane] += acc[lane + h]
        h //= 2
    return acc[0]


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def softmax_exp(a, sigma, m, out, kbuf, acc):
    """``out[j] = exp(−σ (a[j] − m))`` for arguments ≤ 0 (``m`` the shift making the largest score 0),
    vectorizable; returns ``Σ_j out[j]`` (in explicit lanes, :func:`_lane_sum`; ``acc``: LANES entries of
    scratch). ``kbuf`` is scratch of the same length as ``a``.

    ``x = n ln 2 + r`` with ``n = round(x / ln 2)`` (by the 1.5·2^52 shift, whose low bits then
    hold n) and ``|r| ≤ ln 2 / 2``; ``exp r`` by its Taylor polynomial of degree 13 (truncation
    error below 2e-17 relative), and ``2^n`` built from the bits ``(n + 1023) << 52``. Terms with
    arguments below −300 are set to 0: below 5.2e-131 they cannot change a softmax whose largest term
    is 1, and keeping them would feed subnormal numbers (arithmetic ~100× slower) into the gradient
    and Adam's second moment (g² of a gradient of 1e-160 is subnormal)."""
    _exp_parts(a, sigma, m, out, kbuf)
    for j in range(a.shape[0]):
        e = out[j] * kbuf[j]
        out[j] = e if e > _TINY else 0.0
    return _lane_sum(out, a.shape[0], acc)


# float32: the same construction with the single-precision layout (8 exponent bits, bias 127, 23
# fraction bits): shift 1.5·2^23, ln 2 split in 16 + 24 bits, degree 7 (truncation below 6e-9 relative,
# under float32's rounding of 6e-8); arguments cut at −40: terms below e^−40 ≈ 4.2e-18 of the largest (1)
# sum to < 1e-14 over k ≤ 10⁴ centers, nothing at float32's precision, and with them gone the products
# π_j δ_c and π_j (g_j − Σπg) of the gradient stay above the smallest normal float32 (1.2e-38). Cut at
# −80 instead, they did not: the float32 kernel at the trained θ of `dyntools bench voronoi` took
# 0.58–0.59 ms per call (float64: 0.62–0.64) against 0.46–0.49 ms with this cut.
_LOG2E_32 = np.float32(1.4426950408889634)
_LN2_HI_32 = np.float32(0.693145751953125)      # 0x3f317200: its product with n ≤ 2^7 is exact
_LN2_LO_32 = np.float32(1.4286068203094172e-06)
_SHIFT_32 = np.float32(12582912.0)                # 1.5 · 2^23
_BIAS_32 = 127 << 23
_CUT_32 = np.float32(-40.0)
_TINY_32 = np.float32(4.25e-18)                   # just above exp(_CUT_32)
_TAYLOR_32 = tuple(np.float32(1.0 / f) for f in (5040.0, 720.0, 120.0, 24.0, 6.0, 2.0, 1.0, 1.0))


@njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _exp_parts32(a, sigma, m, out, kbuf):
    """:func:`_exp_parts` for float32 arrays (``out = exp(r)``, ``kbuf`` the bits of ``2^n``)."""
    c7, c6, c5, c4, c3, c2, c1, c0 = _TAYLOR_32
    for j in range(a.shape[0]):
        v = np.float32(max(-sigma * (a[j] - m), _CUT_32))
        kd = v * _LOG2E_32 + _SHIFT_32
        kbuf[j] = kd
        nf = kd - _SHIFT_32
        r = (v - nf * _LN2_HI_32) - nf * _LN2_LO_32
        p = c7 * r + c6
        p = p * r + c5
        p = p * r + c4
        p = p * r + c3
        p = p * r + c2
        p = p * r + c1
        out[j] = p * r + c0
    bits = kbuf.view(np.int32)
    for j in range(a.shape[0]):
        bits[j] = (bits[j] << 23) + _BIAS_32


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def softmax_exp32(a, sigma, m, out, kbuf, acc):
    """:func:`softmax_exp` on float32 arrays (``out``, ``kbuf``, ``acc`` float32); returns the float32 sum."""
    _exp_parts32(a, sigma, m, out, kbuf)
    for j in range(a.shape[0]):
        e = out[j] * kbuf[j]
        out[j] = e if e > _TINY_32 else np.float32(0.0)
    return _lane_sum(out, a.shape[0], acc)


def softmax_exp_any(a, sigma, m, out, kbuf, acc):
    """:func:`softmax_exp` or :func:`softmax_exp32`, chosen by the precision of ``out`` (in compiled code
    when the kernel is compiled; here for Python callers)."""
    return (softmax_exp32 if out.dtype == np.float32 else softmax_exp)(a, sigma, m, out, kbuf, acc)


@overload(softmax_exp_any, inline="always", jit_options={"cache": True, "fastmath": FASTMATH, "error_model": "numpy"})
def _softmax_exp_any_typed(a, sigma, m, out, kbuf, acc):
    if out.dtype == types.float32:
        return lambda a, sigma, m, out, kbuf, acc: softmax_exp32(a, sigma, m, out, kbuf, acc)
    return lambda a, sigma, m, out, kbuf, acc: softmax_exp(a, sigma, m, out, kbuf, acc)


def exp_nonpositive(x, out, kbuf) -> float:
    """``out = exp(x)`` for ``x ≤ 0`` by :func:`softmax_exp` (:func:`softmax_exp32` for float32 ``out``;
    for tests); returns the sum."""
    return softmax_exp_any(x, -1.0, 0.0, out, kbuf, np.empty(LANES, dtype=out.dtype))


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _prepare(theta, iargs, fargs, U, nrm2):
    """Normalized centers ``U`` (D × k, flat) and, for learned centers, ‖c_j‖² (``nrm2``)."""
    k, D = iargs[_K], iargs[_D]
    oc = iargs[_OC]
    if oc < 0:
        for j in range(k * D):
            U[j] = fargs[j]
    else:
        for j in range(k):
            s = 0.0
            for d in range(D):
                s += theta[oc + j * D + d] * theta[oc + j * D + d]
            nrm2[j] = s
            inv = 1.0 / s
            for d in range(D):
                U[d * k + j] = theta[oc + j * D + d] * inv


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _scalars(theta, iargs, fargs):
    """(o, σ, p₀, p₁, uses_relu) of θ (fixed values where the rung does not learn them)."""
    k, D = iargs[_K], iargs[_D]
    o = like(theta, theta[iargs[_OO]] if iargs[_OO] >= 0 else 1.0)
    sigma = like(theta, theta[iargs[_OS]] if iargs[_OS] >= 0 else fargs[k * D])
    if iargs[_OP] >= 0:
        return o, sigma, theta[iargs[_OP]], theta[iargs[_OP] + 1], True
    return o, sigma, like(theta, -1.0), like(theta, 1.0), False


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _extreme(a, k, smallest):
    """``min a[:k]`` (or ``max``) in four independent lanes, so that the reduction vectorizes. The maximum is
    ``−min(−a)``: negation is exact and numba's ``min``/``max`` (Python's rule: keep the running value unless the
    new one compares smaller/larger) mirror each other under it, NaN and signed zeros included, so one loop gives
    both, bit for bit."""
    sign = like(a, 1.0 if smallest else -1.0)
    m0 = m1 = m2 = m3 = like(a, np.inf)
    for j in range(0, k - 3, 4):
        m0 = min(m0, sign * a[j])
        m1 = min(m1, sign * a[j + 1])
        m2 = min(m2, sign * a[j + 2])
        m3 = min(m3, sign * a[j + 3])
    for j in range(k - k % 4, k):
        m0 = min(m0, sign * a[j])
    return sign * min(min(m0, m1), min(m2, m3))


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _forward(x, theta, iargs, U, o, sigma, p0, p1, relu, z, a, pi, kbuf, acc, logits):
    """Scores of one example: fills ``z, a, π`` (length k) and ``logits`` (C); the sums over the k centers in
    explicit lanes (``acc``: LANES entries of scratch)."""
    k, C, D = iargs[_K], iargs[_C], iargs[_D]
    ow = iargs[_OW]
    for j in range(k):
        z[j] = -o
    for d in range(D):
        xd = x[d]
        for j in range(k):
            z[j] += xd * U[d * k + j]
    if relu:
        zero = like(a, 0.0)
        for j in range(k):
            zj = z[j]
            a[j] = max(p0 * zj, zero) + max(p1 * zj, zero)
    else:
        for j in range(k):
            a[j] = abs(z[j])
    # softmax(−σ a) shifted by its largest score: −σ·min a when σ ≥ 0, −σ·max a otherwise
    m = _extreme(a, k, sigma >= 0.0)
    inv = like(pi, 1.0) / softmax_exp_any(a, sigma, m, pi, kbuf, acc)
    for j in range(k):
        pi[j] *= inv
    for c in range(C):
        logits[c] = _lane_dot(pi, theta, ow + c * k, k, acc)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _cross_entropy(logits, y, delta):
    """``log Σ exp ℓ − ℓ_y``; writes softmax(ℓ) − onehot(y) into ``delta``."""
    C = logits.shape[0]
    m = logits[0]
    for c in range(1, C):
        m = max(m, logits[c])
    tot = 0.0
    for c in range(C):
        delta[c] = np.exp(logits[c] - m)
        tot += delta[c]
    for c in range(C):
        delta[c] /= tot
    delta[y] -= 1.0
    return np.log(tot) + m - logits[y]


def workspace(k: int, C: int, D: int) -> int:
    """Length of the kernel's scratch array: U, ‖c‖², ∂J/∂U (k·D, k, k·D), z, a, π, g, exp scratch (5k), ℓ, δ (2C),
    the lanes of the sums (LANES)."""
    return 2 * k * D + 6 * k + 2 * C + LANES


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Mean cross-entropy of the examples ``idx[:b]`` and its gradient (the module docstring's
    equations); ``noise`` is unused (classification head).

    Summation order (fixed by the source, see :data:`FASTMATH`): sums over the k centers of one example in
    explicit lanes; the offset, scale and plus–minus gradients accumulate per center over the batch (float64,
    elementwise) and are summed over the centers once per batch, in explicit lanes."""
    k, C, D = iargs[_K], iargs[_C], iargs[_D]
    ow, oo, os_, op, oc = iargs[_OW], iargs[_OO], iargs[_OS], iargs[_OP], iargs[_OC]
    U = ws[0:k * D]
    nrm2 = ws[k * D:k * D + k]
    gU = ws[k * D + k:2 * k * D + k]
    base = 2 * k * D + k
    z = ws[base:base + k]
    a = ws[base + k:base + 2 * k]
    pi = ws[base + 2 * k:base + 3 * k]
    gj = ws[base + 3 * k:base + 4 * k]
    kbuf = ws[base + 4 * k:base + 5 * k]
    logits = ws[base + 5 * k:base + 5 * k + C]
    delta = ws[base + 5 * k + C:base + 5 * k + 2 * C]
    acc = ws[base + 5 * k + 2 * C:base + 5 * k + 2 * C + LANES]
    # per-center float64 accumulators of −∂J/∂o, −∂J/∂σ, ∂J/∂p₀, ∂J/∂p₁ (summed over the batch)
    G = np.zeros((4, k))
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    _prepare(theta, iargs, fargs, U, nrm2)
    if oc >= 0:
        for i in range(k * D):
            gU[i] = 0.0
    o, sigma, p0, p1, relu = _scalars(theta, iargs, fargs)
    inv_b = like(ws, 1.0 / b)
    one, zero = like(ws, 1.0), like(ws, 0.0)
    tot = 0.0
    for q in range(b):
        x = X[idx[q]]
        _forward(x, theta, iargs, U, o, sigma, p0, p1, relu, z, a, pi, kbuf, acc, logits)
        tot += _cross_entropy(logits, y[idx[q]], delta)
        # g_j = Σ_c W_cj δ_c / b, and Σ_j π_j g_j = Σ_c ℓ_c δ_c / b (no extra pass)
        mean = zero
        d0 = delta[0] * inv_b
        mean += logits[0] * d0
        for j in range(k):
            grad[ow + j] += pi[j] * d0
            gj[j] = theta[ow + j] * d0
        for c in range(1, C):
            dc = delta[c] * inv_b
            mean += logits[c] * dc
            for j in range(k):
                grad[ow + c * k + j] += pi[j] * dc
                gj[j] += theta[ow + c * k + j] * dc
        if relu:
            for j in range(k):
                e = pi[j] * (gj[j] - mean)
                h = -sigma * e
                zj = z[j]
                on0 = one if p0 * zj > zero else zero
                on1 = one if p1 * zj > zero else zero
                gz = h * (p0 * on0 + p1 * on1)
                G[0, j] += gz
                G[1, j] += e * a[j]
                G[2, j] += h * zj * on0
                G[3, j] += h * zj * on1
                gj[j] = gz
        else:
            for j in range(k):
                e = pi[j] * (gj[j] - mean)
                gz = -sigma * e * np.sign(z[j])
                G[0, j] += gz
                G[1, j] += e * a[j]
                gj[j] = gz
        if oc >= 0:
            for d in range(D):
                xd = x[d]
                for j in range(k):
                    gU[d * k + j] += gj[j] * xd
    acc64 = np.empty(LANES)
    if oo >= 0:
        grad[oo] = -_lane_sum(G[0], k, acc64)
    if os_ >= 0:
        grad[os_] = -_lane_sum(G[1], k, acc64)
    if op >= 0:
        grad[op] = _lane_sum(G[2], k, acc64)
        grad[op + 1] = _lane_sum(G[3], k, acc64)
    if oc >= 0:
        for j in range(k):
            inv = 1.0 / nrm2[j]
            cg = 0.0
            for d in range(D):
                cg += theta[oc + j * D + d] * gU[d * k + j]
            f = 2.0 * cg * inv * inv
            for d in range(D):
                grad[oc + j * D + d] = gU[d * k + j] * inv - f * theta[oc + j * D + d]
    return tot * inv_b


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def evaluate(theta, X, y, iargs, fargs):
    """``(mean cross-entropy, accuracy)`` of θ on all of ``(X, y)`` (argmax of the logits; ties → lowest class)."""
    k, C, D = iargs[_K], iargs[_C], iargs[_D]
    U = np.empty(k * D)
    nrm2 = np.empty(k)
    z, a, pi, kbuf, acc = np.empty(k), np.empty(k), np.empty(k), np.empty(k), np.empty(LANES)
    logits, delta = np.empty(C), np.empty(C)
    _prepare(theta, iargs, fargs, U, nrm2)
    o, sigma, p0, p1, relu = _scalars(theta, iargs, fargs)
    tot = 0.0
    hits = 0
    n = X.shape[0]
    for i in range(n):
        _forward(X[i], theta, iargs, U, o, sigma, p0, p1, relu, z, a, pi, kbuf, acc, logits)
        tot += _cross_entropy(logits, y[i], delta)
        best = 0
        for c in range(1, C):
            if logits[c] > logits[best]:
                best = c
        hits += best == y[i]
    return tot / n, hits / n


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def predict_classes(theta, X, iargs, fargs):
    """Predicted class (argmax of the logits) of every row of ``X``."""
    k, C, D = iargs[_K], iargs[_C], iargs[_D]
    U = np.empty(k * D)
    nrm2 = np.empty(k)
    z, a, pi, kbuf, acc = np.empty(k), np.empty(k), np.empty(k), np.empty(k), np.empty(LANES)
    logits = np.empty(C)
    _prepare(theta, iargs, fargs, U, nrm2)
    o, sigma, p0, p1, relu = _scalars(theta, iargs, fargs)
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        _forward(X[i], theta, iargs, U, o, sigma, p0, p1, relu, z, a, pi, kbuf, acc, logits)
        best = 0
        for c in range(1, C):
            if logits[c] > logits[best]:
                best = c
        out[i] = best
    return out


@njit(cache=True)
def evaluate_records(theta_rec, X, y, iargs, fargs):
    """:func:`evaluate` at every recording ``theta_rec[p, r]``: arrays (P, R) of loss and accuracy
    (NaN where the recording is not finite)."""
    P, R, _ = theta_rec.shape
    loss = np.full((P, R), np.nan)
    acc = np.full((P, R), np.nan)
    for p in range(P):
        for r in range(R):
            if np.all(np.isfinite(theta_rec[p, r])):
                loss[p, r], acc[p, r] = evaluate(theta_rec[p, r], X, y, iargs, fargs)
    return loss, acc


# ------------------------------------------------------------------------------------ NumPy twin

def _unpack_np(theta, iargs, fargs):
    """The blocks of θ; fixed values (o = 1, σ₀) as scalars of θ's precision."""
    k, C, D = int(iargs[_K]), int(iargs[_C]), int(iargs[_D])
    ow, oo, os_, op, oc = (int(v) for v in iargs[_OW:_OC + 1])
    scalar = theta.dtype.type
    W = theta[ow:ow + k * C].reshape(C, k).T
    o = theta[oo] if oo >= 0 else scalar(1.0)
    sigma = theta[os_] if os_ >= 0 else scalar(fargs[k * D])
    p = theta[op:op + 2] if op >= 0 else None
    cent = theta[oc:oc + k * D].reshape(k, D) if oc >= 0 else None
    return W, o, sigma, p, cent


def forward_np(theta, X, iargs, fargs):
    """Readable forward pass on a batch: ``(z, a, π, ℓ, U)`` with shapes (b, k), (b, k), (b, k), (b, C), (k, D),
    in θ's precision (float64 or float32: the environment's normalized centers are rounded to it)."""
    k, D = int(iargs[_K]), int(iargs[_D])
    W, o, sigma, p, cent = _unpack_np(theta, iargs, fargs)
    U = (fargs[:k * D].reshape(D, k).T.astype(theta.dtype) if cent is None
         else cent / np.sum(cent * cent, axis=1, keepdims=True))
    z = X @ U.T - o
    a = np.abs(z) if p is None else np.maximum(p[0] * z, 0.0) + np.maximum(p[1] * z, 0.0)
    s = -sigma * a
    s = s - s.max(axis=1, keepdims=True)
    pi = np.exp(s)
    pi /= pi.sum(axis=1, keepdims=True)
    return z, a, pi, pi @ W, U


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad` (the same equations on whole (b × k) arrays, in θ's precision)."""
    k, C, D = int(iargs[_K]), int(iargs[_C]), int(iargs[_D])
    ow, oo, os_, op, oc = (int(v) for v in iargs[_OW:_OC + 1])
    i = np.asarray(idx[:b])
    Xb, yb = X[i], y[i]
    W, o, sigma, p, cent = _unpack_np(theta, iargs, fargs)
    z, a, pi, logits, U = forward_np(theta, Xb, iargs, fargs)
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    loss = float(np.mean(lse - logits[np.arange(b), yb]))
    delta = np.exp(logits - lse[:, None])
    delta[np.arange(b), yb] -= 1.0
    delta /= b
    grad[:] = 0.0
    grad[ow:ow + k * C] = (delta.T @ pi).ravel()
    g = delta @ W.T
    e = pi * (g - np.sum(pi * g, axis=1, keepdims=True))
    h = -sigma * e
    if p is None:
        gz = h * np.sign(z)
    else:
        on0, on1 = p[0] * z > 0.0, p[1] * z > 0.0
        gz = h * (p[0] * on0 + p[1] * on1)
    if oo >= 0:
        grad[oo] = -gz.sum()
    if os_ >= 0:
        grad[os_] = -np.sum(e * a)
    if op >= 0:
        grad[op] = np.sum(h * z * on0)
        grad[op + 1] = np.sum(h * z * on1)
    if oc >= 0:
        gU = gz.T @ Xb
        n2 = np.sum(cent * cent, axis=1, keepdims=True)
        gc = gU / n2 - 2.0 * cent * np.sum(cent * gU, axis=1, keepdims=True) / n2 ** 2
        grad[oc:oc + k * D] = gc.ravel()
    return loss


# ------------------------------------------------------------------------------------ the model

class VoronoiLadder(Model):
    r"""One rung of the ladder as a :class:`~dyntools.models.base.Model` (see the module docstring).

    Parameters
    ----------
    rung : str
        One of :data:`RUNGS`.
    centers, center_labels : arrays, optional
        The environment's (rungs 1–5 need the centers; rung 1 the labels too).
    classes, dim : int
        C ≥ 2; D (taken from ``centers`` when given).
    n_centers : int
        k of the learned centers (rung 6; the seed: 2048).
    box : float
        s, the scale of the learned centers' initialization :math:`\mathcal N(0, s^2)`.
    fixed_scale, scale_init : float
        σ₀ of rungs 2–3 (the study's code: 10⁴); σ at the start of rungs 4–6.
    dtype : {"float64", "float32"}
        The precision :func:`dyntools.train` trains in (parameters, data, optimizer state, the kernel's
        scratch; the kernel compiled for it, its softmax by :func:`softmax_exp32` in float32).
        Initializations are drawn in float64 and rounded; the metric hooks (:meth:`loss`, :meth:`predict`,
        :meth:`evaluate_records`) compute in float64 from the given θ.
    """

    head = "cross-entropy"
    init_stream = "voronoi.init"
    sampling_stream = "voronoi.sampling"
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, rung: str, *, centers=None, center_labels=None, classes: int = 2, dim: int | None = None,
                 n_centers: int = 2048, box: float = 100.0, fixed_scale: float = 1e4, scale_init: float = 1.0,
                 dtype: str = "float64"):
        self.rung = validation.one_of("rung", rung, RUNGS)
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        self.dtype = np.dtype(validation.one_of("dtype", name, DTYPES))
        self.level = RUNGS.index(rung)
        self.classes = validation.count("classes (C)", classes, minimum=2)
        self.box = validation.positive("box (s)", box)
        self.fixed_scale = validation.finite("fixed_scale", fixed_scale)
        self.scale_init = validation.finite("scale_init", scale_init)
        if self.level < 5:
            if centers is None:
                raise ValueError(f"Invalid centers: rung {rung!r} needs the environment's centers")
            self.centers = validation.finite_array("centers", centers, ndim=2)
            if np.any(np.sum(self.centers ** 2, axis=1) == 0):
                raise ValueError("Invalid centers: a center at the origin has no normalized direction c/‖c‖²")
            self.k, self.dim = self.centers.shape
            if dim is not None and validation.count("dim (D)", dim) != self.dim:
                raise ValueError(f"Invalid dim (D): {dim} (the centers have D = {self.dim})")
        else:
            self.centers = None
            self.k = validation.count("n_centers", n_centers)
            if dim is None:
                raise ValueError("Invalid dim (D): rung 'centers' needs the dimension D")
            self.dim = validation.count("dim (D)", dim)
        if self.level == 0:
            if center_labels is None:
                raise ValueError("Invalid center_labels: rung 'exact' needs the labels of the centers")
            self.center_labels = np.asarray(center_labels, dtype=np.int64)
            if self.center_labels.shape != (self.k,) or self.center_labels.min() < 0 \
                    or self.center_labels.max() >= self.classes:
                raise ValueError(f"Invalid center_labels: need {self.k} labels in 0..{self.classes - 1}")
        self.name = f"voronoi-{rung}"
        # layout
        k, C, D = self.k, self.classes, self.dim
        off = 0
        self.slices: dict[str, slice] = {}
        if self.level >= 1:
            self.slices["logits"] = slice(off, off + k * C)
            off += k * C
        for name, size, lvl in (("offset", 1, 2), ("scale", 1, 3), ("plus-minus", 2, 4), ("centers", k * D, 5)):
            if self.level >= lvl:
                self.slices[name] = slice(off, off + size)
                off += size
        self._n = off

    # -------------------------------------------------------------- protocol
    @property
    def n_params(self) -> int:
        return self._n

    def kernel_args(self):
        k, D = self.k, self.dim

        def start(name):
            return self.slices[name].start if name in self.slices else -1

        iargs = np.array([k, self.classes, D, self.level, start("logits"), start("offset"), start("scale"),
                          start("plus-minus"), start("centers")], dtype=np.int64)
        fargs = np.zeros(k * D + 1)
        if self.centers is not None:
            fargs[:k * D] = (self.centers / np.sum(self.centers ** 2, axis=1, keepdims=True)).T.ravel()
        fargs[k * D] = self.fixed_scale
        return iargs, fargs

    def workspace_size(self, batch: int) -> int:
        return workspace(self.k, self.classes, self.dim)

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """The study's initialization (module docstring) from stream ``voronoi.init`` of ``seed``, path ``index``."""
        from dyntools.engine import streams

        gen = streams.path_generators(seed, index + 1, streams.key(self.init_stream))[index]
        theta = np.empty(self._n)
        sl = self.slices
        if "logits" in sl:
            bound = 1.0 / np.sqrt(self.k)
            theta[sl["logits"]] = gen.uniform(-bound, bound, self.k * self.classes)
        if "offset" in sl:
            theta[sl["offset"]] = gen.uniform(0.0, 1.0)
        if "scale" in sl:
            theta[sl["scale"]] = self.scale_init
        if "plus-minus" in sl:
            theta[sl["plus-minus"]] = (-0.4, 0.4)
        if "centers" in sl:
            theta[sl["centers"]] = self.box * gen.standard_normal(self.k * self.dim)
        return theta

    def config(self) -> dict:
        return {"name": self.name, "rung": self.rung, "k": self.k, "classes": self.classes, "dim": self.dim,
                "n_params": self.n_params, "box": self.box, "fixed_scale": self.fixed_scale,
                "scale_init": self.scale_init, "dtype": self.dtype.name}

    # -------------------------------------------------------------- groups and views
    def group_of(self) -> np.ndarray:
        """Index into :data:`GROUPS` of every parameter (for per-group decay)."""
        out = np.empty(self._n, dtype=np.int64)
        for name, sl in self.slices.items():
            out[sl] = GROUPS.index(name)
        return out

    def decay_mask(self, exclude=()) -> np.ndarray:
        """1.0 for the parameters whose group is not in ``exclude``, else 0.0."""
        for g in exclude:
            validation.one_of("decay exclusion", g, GROUPS)
        return np.array([0.0 if GROUPS[i] in exclude else 1.0 for i in self.group_of()])

    def parts(self, theta) -> dict:
        """The named blocks of θ (``W`` reshaped to C × k, ``centers`` to k × D)."""
        theta = np.asarray(theta)
        out = {}
        for name, sl in self.slices.items():
            v = theta[..., sl]
            if name == "logits":
                v = v.reshape(theta.shape[:-1] + (self.classes, self.k))
            elif name == "centers":
                v = v.reshape(theta.shape[:-1] + (self.k, self.dim))
            out[name] = v
        return out

    def current_centers(self, theta) -> np.ndarray:
        return self.centers if self.centers is not None else self.parts(theta)["centers"]

    # -------------------------------------------------------------- metric hooks
    def predict(self, theta, X) -> np.ndarray:
        """Predicted classes of the rows of ``X`` (rung 1: the label of argmin_j |xᵀu_j − 1|)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self.level == 0:
            return self.center_labels[voronoi_rules.cells(X, self.centers, "projection")]
        iargs, fargs = self.kernel_args()
        return predict_classes(np.ascontiguousarray(theta, dtype=np.float64), X, iargs, fargs)

    def loss(self, theta, X, y) -> float:
        if self.level == 0:
            return float("nan")
        iargs, fargs = self.kernel_args()
        return float(evaluate(np.ascontiguousarray(theta, dtype=np.float64), np.ascontiguousarray(X, np.float64),
                              np.asarray(y, dtype=np.int64), iargs, fargs)[0])

    def accuracy(self, theta, X, y) -> float:
        return float(np.mean(self.predict(theta, X) == np.asarray(y)))

    def evaluate_records(self, theta_rec, X, y) -> tuple[np.ndarray, np.ndarray]:
        """(loss, accuracy) arrays of shape ``theta_rec.shape[:-1]`` on ``(X, y)``."""
        iargs, fargs = self.kernel_args()
        shape = theta_rec.shape[:-1]
        flat = np.ascontiguousarray(theta_rec.reshape((-1, 1, theta_rec.shape[-1])), dtype=np.float64)
        loss, acc = evaluate_records(flat, np.ascontiguousarray(X, np.float64), np.asarray(y, dtype=np.int64),
                                     iargs, fargs)
        return loss.reshape(shape), acc.reshape(shape)

    def recorded_loss(self, theta_rec, Xs, ys, data_of):
        out = np.full(theta_rec.shape[:2], np.nan)
        for p in range(theta_rec.shape[0]):
            out[p] = self.evaluate_records(theta_rec[p], Xs[data_of[p]], ys[data_of[p]])[0]
        return out
