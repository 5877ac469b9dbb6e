"""Built-in SDEs: GBM and OU (with exact solutions), the 1-D quadratic toy, the general
label-noise SDE of any model with a Jacobian, and diagonal linear networks (seed 004).

Label-noise SDE (Andriushchenko et al. 2023, seed 004, eq. "sde-sgd-dynamics")::

    dθ_τ = −∇L(θ_τ) dτ + √(η δ̃) φ_θ(X)ᵀ dB_τ,     B standard Brownian motion in Rⁿ,
    φ_θ(X) = [∇_θ h_θ(x_i)ᵀ]_{i=1..n} ∈ R^{n×p},   L(θ) = (1/2n) Σ_i (h_θ(x_i) − y_i)².

**Label noise δ** is the *standard deviation* of the label noise, the one meaning of every runner
(derived in the docstring of :mod:`dyntools.dynamics.train`, "Label noise δ"). Full-batch GD with
labels ``y_i + δ ξ_{t,i}`` (``ξ ~ N(0, I_n)`` fresh each step) is

    θ_{t+1} = θ_t − η ∇L(θ_t) + (η δ / n) φ_θ(X)ᵀ ξ_t,

with per-step covariance ``(ηδ/n)² φᵀφ``; the SDE over a time ``dτ = η`` has covariance
``η · η δ̃ · φᵀφ``, so the two agree when the SDE's *intensity* is ``δ̃ = δ²/n²``. Every builder here
takes δ and computes δ̃ inside (:func:`sde_intensity`; :func:`label_noise_std` is the inverse, for
callers that state the intensity). Full-batch label-noise GD at step η is then, draw for draw, the
Euler–Maruyama scheme of the SDE at ``h = η``: ``θ_{t+1} = θ_t − η∇L + η√δ̃ φᵀ Z_t``; the SDE at the
time ``τ = tη`` is its small-step limit (Li, Tai & E 2018: weak error O(η) on bounded τ).

**Diagonal linear network** ``h_{u,v}(x) = ⟨u ⊙ v, x⟩``, ``β = u ⊙ v``, ``∇_u h = v ⊙ x``::

    du = −∇_u L dτ + √(ηδ̃) v ⊙ [Xᵀ dB],   dv = −∇_v L dτ + √(ηδ̃) u ⊙ [Xᵀ dB],
    ∇_u L = v ⊙ Xᵀ r / n,  ∇_v L = u ⊙ Xᵀ r / n,  r = X(u ⊙ v) − y.

One EM step shares a single product: with ``z = −(h/n) r + √(ηδ̃) ΔB``, ``u ← u + v ⊙ (Xᵀz)``,
``v ← v + u ⊙ (Xᵀz)`` — two products by X per path-step (2nd multiply-adds, 4nd flops). The default
initialization is the diagonal-network runner's (:class:`dyntools.models.diag_net.DiagNet`):
"paper", ``u₀ = α·1, v₀ = 0`` with α = 0.1.

**Quadratic toy** (:mod:`dyntools.models.quadratic_toy`): ``h_θ(x) = xθ²``, loss
``F(θ) = ¼E(y − xθ²)²``, ``φ_i = 2x_iθ``. Because its loss is ½·(1/2n)Σ(·)², full-batch
label-noise GD with label std δ has noise ``(ηδ/2n) φᵀ ξ`` and matches ``√(ηδ̃)φᵀdB`` iff
``δ̃ = δ²/(4n²)`` (:func:`sde_intensity` with ``scale = ½``). As ``⟨φ, B⟩ = ‖φ‖ W`` in law, the toy
SDE is one-dimensional: ``dθ = E[x²] θ(θ*² − θ²) dτ + 2√(ηδ̃) ‖x‖₂ θ dW`` — geometric-Brownian-like
multiplicative noise.

**Divergence.** The diagonal-network kernel uses the engine's one rule
(:func:`dyntools.engine.guard.beyond`) with the size ``|u_j|`` and ``|v_j|`` of each coordinate, like
:func:`dyntools.dynamics.sde.solve`: ``diverged_at`` is the first step whose state is beyond the
bound (−1: never); the path stops there and its later recordings are NaN.
"""

from __future__ import annotations

import dataclasses
import functools

import numba
import numpy as np
from numba import njit

from dyntools import validation
from dyntools.docstrings import with_sections
from dyntools.dynamics.sde import (
    GBM,
    OU,
    SDE,
    TOY,
    builtin_diffusion,
    builtin_diffusion_dx,
    builtin_drift,
    versions,
)
from dyntools.engine import guard, record, streams, ziggurat
from dyntools.engine.result import RunResult, message, timed
from dyntools.engine.ziggurat import normal_reg
from dyntools.models.base import Model
from dyntools.models.diag_net import INITS, initial_params
from dyntools.models.mlp_gemm import gemm

MODELS = ("gbm", "ou", "toy", "diag-net")
#: initializations of :func:`simulate_diag_net`: the diagonal-network runner's, and "balanced" u₀ = v₀ = α·1
DIAG_NET_INITS = INITS + ("balanced",)
#: loss scale of the quadratic toy: its loss is ½ · (1/2n) Σ (·)² (module docstring)
TOY_SCALE = 0.5


def sde_intensity(delta: float, n: int, scale: float = 1.0) -> float:
    """The SDE's noise intensity ``δ̃ = (scale · δ / n)²`` of label noise of standard deviation ``δ``
    on ``n`` samples, for a loss ``scale · (1/2n) Σ (h − y)²`` (module docstring).

    Parameters
    ----------
    delta : float
        The label noise's standard deviation δ.
    n : int
        The number of samples.
    scale : float, default 1.0
        The loss's factor.
    """
    delta = validation.non_negative("delta", delta)
    n = validation.count("n", n)
    return (scale * delta / n) ** 2


def label_noise_std(intensity: float, n: int, scale: float = 1.0) -> float:
    r"""The inverse of :func:`sde_intensity`: the label-noise standard deviation ``δ = n √δ̃ / scale``
    whose SDE has intensity ``δ̃``.

    Parameters
    ----------
    intensity : float
        The SDE's noise intensity :math:`\tilde δ`.
    n, scale
        As in :func:`sde_intensity`.
    """
    intensity = validation.non_negative("intensity", intensity)
    n = validation.count("n", n)
    return n * float(np.sqrt(intensity)) / scale


# --------------------------------------------------------------------------- GBM, OU and the toy

def gbm(mu: float = 2.0, sigma: float = 1.0, dim: int = 1) -> SDE:
    """Geometric Brownian motion ``dX = μX dt + σX dW`` (diagonal noise, elementwise in x).

    Parameters
    ----------
    mu : float, default 2.0
        The drift rate μ.
    sigma : float, default 1.0
        The volatility σ.
    dim : int, default 1
        The number of independent coordinates.
    """
    mu, sigma = validation.finite("mu", mu), validation.non_negative("sigma", sigma)
    return SDE(builtin_drift, builtin_diffusion, dim, dim, "diagonal", builtin_diffusion_dx,
               [GBM, mu, sigma], "gbm", builtin=True)


def gbm_exact(x0, mu: float, sigma: float, t, w) -> np.ndarray:
    """``X_t = x0 exp((μ − σ²/2) t + σ W_t)`` on the same Brownian path.

    Parameters
    ----------
    x0 : float or ndarray
        The start.
    mu, sigma : float
        Drift rate and volatility.
    t : float or ndarray
        The times.
    w : float or ndarray
        The Brownian path's values at ``t``.
    """
    return x0 * np.exp((mu - 0.5 * sigma * sigma) * t + sigma * w)


def gbm_moments(x0: float, mu: float, sigma: float, t) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``x0 e^{μt}`` and variance ``x0² e^{2μt}(e^{σ²t} − 1)``.

    Parameters
    ----------
    x0 : float
        The start.
    mu, sigma : float
        Drift rate and volatility.
    t : float or ndarray
        The times.
    """
    t = np.asarray(t, dtype=float)
    return x0 * np.exp(mu * t), x0 * x0 * np.exp(2 * mu * t) * np.expm1(sigma * sigma * t)


def ou(theta: float = 1.0, mu: float = 0.0, sigma: float = 0.5, dim: int = 1) -> SDE:
    """Ornstein–Uhlenbeck ``dX = θ(μ − X) dt + σ dW`` (additive, diagonal noise).

    Parameters
    ----------
    theta : float, default 1.0
        The mean-reversion rate θ.
    mu : float, default 0.0
        The long-run mean μ.
    sigma : float, default 0.5
        The noise level σ.
    dim : int, default 1
        The number of independent coordinates.
    """
    theta = validation.positive("theta", theta)
    mu, sigma = validation.finite("mu", mu), validation.non_negative("sigma", sigma)
    return SDE(builtin_drift, builtin_diffusion, dim, dim, "diagonal", builtin_diffusion_dx,
               [OU, theta, mu, sigma], "ou", builtin=True)


def ou_pathwise(x0: float, theta: float, mu: float, sigma: float, t: np.ndarray, W: np.ndarray) -> np.ndarray:
    """OU solution at ``t[-1]`` on given Brownian paths ``W`` (paths, len(t)) sampled on the grid ``t``:

        X_T = μ + (x0 − μ) e^{−θT} + σ ∫₀ᵀ e^{−θ(T−s)} dW_s,

    with the Itô integral evaluated by the midpoint rule on the grid,
    ``Σ_k e^{−θ(T − (t_k + t_{k+1})/2)} (W_{t_{k+1}} − W_{t_k})``. Its strong error is
    ``σθ·max Δt·√(T/12)`` at most (the integrand is Lipschitz in s), so on a grid much finer than
    the schemes under test it serves as the exact solution for strong-error measurements.

    Parameters
    ----------
    x0 : float
        The start.
    theta, mu, sigma : float
        Rate, mean and noise level.
    t : ndarray, shape (K,)
        The grid, from 0.
    W : ndarray, shape (paths, K)
        The Brownian paths on the grid.
    """
    t = np.asarray(t, dtype=float)
    T = t[-1]
    weights = np.exp(-theta * (T - 0.5 * (t[1:] + t[:-1])))
    integral = np.diff(W, axis=1) @ weights
    return mu + (x0 - mu) * np.exp(-theta * T) + sigma * integral


def ou_moments(x0: float, theta: float, mu: float, sigma: float, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact law ``X_t ~ N(μ + (x0 − μ)e^{−θt}, σ²(1 − e^{−2θt})/(2θ))``.

    Parameters
    ----------
    x0, theta, mu, sigma
        As in :func:`ou_pathwise`.
    t : float or ndarray
        The times.
    """
    t = np.asarray(t, dtype=float)
    return mu + (x0 - mu) * np.exp(-theta * t), sigma * sigma * -np.expm1(-2 * theta * t) / (2 * theta)


def toy_sde(toy, eta: float, delta: float) -> SDE:
    """The label-noise SDE of the quadratic toy with label noise of standard deviation ``delta``
    (module docstring): ``dθ = E[x²] θ(θ*² − θ²) dτ + 2√(ηδ̃)‖x‖₂ θ dW``, ``δ̃ = δ²/(4n²)``, built from
    the toy's own loss constants.

    Parameters
    ----------
    toy : QuadraticToy
        The toy (its samples and constants).
    eta : float
        The SGD step η.
    delta : float
        The label noise's standard deviation δ.
    """
    eta = validation.non_negative("eta", eta)
    intensity = sde_intensity(delta, np.size(toy.x), TOY_SCALE)
    c = 2.0 * np.sqrt(eta * intensity) * float(np.linalg.norm(toy.x))
    return SDE(builtin_drift, builtin_diffusion, 1, 1, "diagonal", builtin_diffusion_dx,
               [TOY, toy.second_moment, toy.theta_star**2, c], "toy", builtin=True)


# ----------------------------------------------------------------- (a) general label-noise SDE

def label_noise_sde(model, X, y, dim: int, eta: float, delta: float | None = None, name: str = "label-noise", *,
                    scale: float = 1.0) -> SDE:
    """The label-noise SDE of any model given as a numba-jitted ``model(theta, X, h_out, J_out)``
    that writes ``h_θ(X)`` (n,) and the Jacobian ``φ_θ(X)`` (n, p), for label noise of standard
    deviation ``delta`` and the loss ``scale · (1/2n) Σ (h − y)²`` (scale 2: the mean square).
    General noise, m = n::

        b(θ) = −(scale/n) φᵀ(h − y),     σ(θ) = √(ηδ̃) φᵀ   (p × n),   δ̃ = (scale · δ/n)².

    ``X`` and ``y`` travel in ``args`` (flattened), so the terms stay plain numba functions.

    A :class:`~dyntools.models.symbolic.SymbolicModel` (one output, square loss ``s (h − y)²``) is called
    as ``label_noise_sde(model, X, y, eta, delta)``: its generated ``predict_jacobian`` is the model,
    ``dim`` its parameter count and ``scale = 2s``, so the drift is exactly ``−∇L`` of its loss.

    **Milstein, where it applies.** The noise is general (p × n); Milstein (strong order 1) applies exactly
    when it is *commutative*, ``L^a σ^b = L^b σ^a`` for all columns a, b, i.e. ``∇²h(x_b)∇h(x_a) =
    ∇²h(x_a)∇h(x_b)`` identically in θ (one data point; additive noise; the diagonal networks
    ``Σ_j u_j v_j (w_j …) x_j``; not the ReLU net, nor ``tanh(θx)`` on two distinct inputs). For a symbolic
    model, ``dt.solve(sde, …, scheme="milstein")`` decides this exactly with sympy
    (:meth:`~dyntools.models.symbolic.SymbolicModel.noise_commutativity`) and, when it holds, integrates
    with the generated correction ``½ Σ_{a,b}(L^aσ^b)(ΔW_aΔW_b − δ_ab h) = ½ c² Σ_i ∇²h(x_i)(ΔW_i φᵀΔW −
    h ∇h(x_i))``, ``c = √(ηδ̃)`` (:mod:`dyntools.codegen.milstein`); otherwise it raises one ``ValueError``
    naming a pair of columns where the noise does not commute. ``scheme="em"`` never asks the question.

    Parameters
    ----------
    model : callable or SymbolicModel
        The numba-jitted ``model(theta, X, h_out, J_out)``, or a symbolic model.
    X, y : ndarray
        The inputs (n, d) and labels (n,).
    dim : int
        The number of parameters p (a symbolic model: pass ``eta`` here, see above).
    eta : float
        The step η.
    delta : float, optional
        The label noise's standard deviation δ.
    name : str, default "label-noise"
        The SDE's name in results.
    scale : float, default 1.0
        The loss's factor.
    """
    if isinstance(model, Model):                        # a dyntools model: (model, X, y, eta, delta)
        if delta is not None:
            raise TypeError("label_noise_sde(model, X, y, eta, delta): a model object takes no dim")
        eta, delta = dim, eta
        jitted, dim, scale = model.sde_terms()
        model.check_data(X, y)
        sde = label_noise_sde(jitted, X, y, dim, eta, delta, name=f"{name}:{model.name}", scale=scale)
        if model.milstein_correction is not None:
            sde.milstein_form = functools.cache(functools.partial(_milstein_form, model, sde, X))
        return sde
    if delta is None:
        raise TypeError("label_noise_sde: missing delta")
    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    n, d = X.shape
    if y.shape[0] != n:
        raise ValueError(f"Invalid y: length {y.shape[0]} does not match X with {n} rows")
    eta = validation.non_negative("eta", eta)
    scale = validation.positive("scale", scale)
    intensity = sde_intensity(delta, n, scale)
    p = validation.count("dim", dim)
    args = np.concatenate([[np.sqrt(eta * intensity)], X.ravel(), y])

    @njit
    def _eval(x, args):
        Xm = args[1:1 + n * d].reshape((n, d))
        h = np.empty(n)
        J = np.empty((n, p))
        model(x, Xm, h, J)
        return h, J

    @njit
    def drift(t, x, args, out):
        h, J = _eval(x, args)
        yv = args[1 + n * d:]
        for k in range(p):
            acc = 0.0
            for i in range(n):
                acc += J[i, k] * (h[i] - yv[i])
            out[k] = -scale * acc / n

    @njit
    def diffusion(t, x, args, out):
        _, J = _eval(x, args)
        for k in range(p):
            for i in range(n):
                out[k, i] = args[0] * J[i, k]

    return SDE(drift, diffusion, p, n, "general", None, args, name)


def _milstein_form(model, sde: SDE, X) -> SDE:
    """The commutative-noise form of a symbolic model's label-noise SDE ``sde`` with its Milstein term
    ``c² · model.milstein_correction`` (``c = args[0]``); ``ValueError`` when the noise does not commute."""
    correction = model.milstein_correction(X)
    n, d = np.shape(X)

    @njit
    def milstein(t, x, args, dw, h, out):
        correction(x, args[1:1 + n * d].reshape((n, d)), dw, h, out)
        c2 = args[0] * args[0]
        for k in range(out.shape[0]):
            out[k] *= c2

    return dataclasses.replace(sde, noise="commutative", milstein=milstein, milstein_form=None)


@njit
def diag_net_model(theta, X, h_out, J_out):
    """``h = X(u ⊙ v)`` and ``φ = [X diag(v), X diag(u)]`` for ``θ = (u, v)`` (length 2d)."""
    n, d = X.shape
    for i in range(n):
        acc = 0.0
        for j in range(d):
            acc += X[i, j] * theta[j] * theta[d + j]
            J_out[i, j] = X[i, j] * theta[d + j]
            J_out[i, d + j] = X[i, j] * theta[j]
        h_out[i] = acc


def diag_net_jacobian(u: np.ndarray, v: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``φ_{u,v}(X) = [X diag(v), X diag(u)]`` for a stack of parameters (…, d) → (…, n, 2d).

    Parameters
    ----------
    u, v : ndarray, shape (..., d)
        The diagonal network's factors.
    X : ndarray, shape (n, d)
        The inputs.
    """
    return np.concatenate([X * v[..., None, :], X * u[..., None, :]], axis=-1)


# --------------------------------------------------------------- (b) diagonal-network kernel

_BLOCK = 4   # paths advanced together: each row of X is loaded once per block, not once per path


@njit(nogil=True, cache=True, fastmath={"contract"})
def _diag_net_blocks(first, last, U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                     u_out, v_out, loss_out, diverged_at):
    """``n_steps`` steps of ``z = −a_t (X(u⊙v) − y) + g_t N(0, I_n)``; ``u ← u + v ⊙ Xᵀz``,
    ``v ← v + u ⊙ Xᵀz`` for all paths (rows of U, V: float64[P, d]) in place.

    EM for the SDE: ``a = h/n``, ``g = √(ηδ̃h)``. Label-noise GD: ``a = η/n``, ``g = η√δ̃ = ηδ/n``
    (module docstring; δ the label-noise std, δ̃ = δ²/n² the SDE's intensity).
    ``a_coefs``/``g_coefs`` have length 1 (constant) or n_steps (e.g. a step decay).
    ``substeps = r``: the normal is ``r^{-1/2} Σ_s Z_s`` over r fine increments (fine step outer, data
    index inner), so a GD step of size η sees the same Brownian path as r SDE steps of size η/r.
    The blocks ``first … last − 1`` of ``_BLOCK`` paths each (paths ``_BLOCK·first …``) run one after another
    through all steps, so there is no per-step synchronization and X stays in cache; :func:`diag_net_kernel` runs
    contiguous ranges of blocks on threads (``nogil``). Compiled without numba's ``parallel`` (``prange``): the same
    bits, ~2 instead of ~7 seconds of compiling with empty caches (AMD EPYC Zen 4). The two products by X,
    ``R = β Xᵀ`` (4 × n) and ``G = Z X`` (4 × d), are :func:`dyntools.models.mlp_gemm.gemm`: register-resident panels of
    vector fma chains (512-bit with AVX-512, 256-bit otherwise; plain loops under the low-level fallback), each
    entry one chain in the order of the contraction starting at 0 — the chain of a scalar loop, so the bits are
    those of the scalar code it replaced on any target, a fresh compile gives the bits of a cache load, and they may
    still differ from the NumPy twin's BLAS in the last bits. (As scalar loops — numba runs LLVM without its SLP
    vectorizer — this kernel reached 25 GFLOP/s on an AMD EPYC Zen 4 core pair, 16 for AVX2 code; as panels 72 and
    65.)
    A path whose ``|u_j|`` or ``|v_j|`` is beyond ``bound`` (:func:`dyntools.engine.guard.beyond`) stops:
    ``diverged_at`` gets its step and its later recordings stay NaN (its parameters are left as they
    were; only its own rows of the block products see them).
    The number of paths is a multiple of ``_BLOCK`` (:func:`simulate_diag_net` pads with extra paths of their
    own streams and drops them), which keeps one code path to compile.
    """
    d = U.shape[1]
    n = X.shape[0]
    rec_params = u_out.shape[0] > 0
    nb = _BLOCK
    for blk in range(first, last):
        p0 = blk * _BLOCK
        beta = np.empty((_BLOCK, d))
        grad = np.empty((_BLOCK, d))
        r = np.empty((_BLOCK, n))
        z = np.empty((_BLOCK, n))
        zeros_n = np.zeros(n)
        zeros_d = np.zeros(d)
        alive = np.empty(_BLOCK, dtype=np.bool_)
        for b in range(nb):
            alive[b] = diverged_at[p0 + b] == guard.NEVER
        k = 0
        for t in range(n_steps + 1):
            for b in range(nb):
                for j in range(d):
                    beta[b, j] = U[p0 + b, j] * V[p0 + b, j]
            # r = X β − y for the four paths: r = 0 + β Xᵀ as register-resident vector fma chains
            gemm(r, zeros_n, beta, XT, _BLOCK, d, n)
            for b in range(nb):
                for i in range(n):
                    r[b, i] = r[b, i] - y[i]
            if record.due(save_steps, k, t):
                for b in range(nb):
                    if alive[b]:
                        acc = 0.0
                        for i in range(n):
                            acc += r[b, i] * r[b, i]
                        loss_out[p0 + b, k] = 0.5 * acc / n
                        if rec_params:
                            for j in range(d):
                                u_out[p0 + b, k, j] = U[p0 + b, j]
                                v_out[p0 + b, k, j] = V[p0 + b, j]
                k += 1
            if t == n_steps:
                break
            a = a_coefs[0] if a_coefs.shape[0] == 1 else a_coefs[t]
            g = g_coefs[0] if g_coefs.shape[0] == 1 else g_coefs[t]
            gs = g / np.sqrt(substeps)
            for b in range(nb):
                if alive[b]:
                    for i in range(n):
                        z[b, i] = -a * r[b, i]
                    # the path's generator state in locals for its n·substeps draws of this step
                    q0 = state[p0 + b, 0]
                    q1 = state[p0 + b, 1]
                    q2 = state[p0 + b, 2]
                    q3 = state[p0 + b, 3]
                    for _ in range(substeps):      # fine increments: fine step outer, data inner
                        for i in range(n):
                            e, q0, q1, q2, q3 = normal_reg(q0, q1, q2, q3)
                            z[b, i] += gs * e
                    state[p0 + b, 0] = q0
                    state[p0 + b, 1] = q1
                    state[p0 + b, 2] = q2
                    state[p0 + b, 3] = q3
            # (Xᵀz)ᵀ = 0 + z X, the same way
            gemm(grad, zeros_d, z, X, _BLOCK, n, d)
            for b in range(nb):
                if not alive[b]:
                    continue
                bad = False
                for j in range(d):
                    u = U[p0 + b, j]
                    U[p0 + b, j] = u + V[p0 + b, j] * grad[b, j]
                    V[p0 + b, j] = V[p0 + b, j] + u * grad[b, j]
                    if guard.beyond(abs(U[p0 + b, j]), bound) or guard.beyond(abs(V[p0 + b, j]), bound):
                        bad = True
                if bad:
                    alive[b] = False
                    diverged_at[p0 + b] = t + 1


#: the arguments of :func:`diag_net_kernel` and its twin :func:`diag_net_numpy`
_DIAG_NET_SECTIONS = r"""Parameters
----------
U, V : ndarray, shape (P, d)
    The paths' parameters, advanced in place.
X, XT : ndarray
    The inputs (n, d) and their transpose (contiguous).
y : ndarray, shape (n,)
    The labels.
a_coefs, g_coefs : ndarray
    Per-step drift and noise coefficients (the step and :math:`\sqrt{η\tilde δ}` of each step).
n_steps : int
    The number of steps.
substeps : int
    Fine Brownian increments aggregated per step.
state : ndarray
    The per-path xoshiro generator states.
save_steps : ndarray of int
    The steps recorded, increasing.
bound : float
    A path whose parameters exceed it in magnitude has diverged.
u_out, v_out, loss_out : ndarray
    The recordings, written in place.
diverged_at : ndarray of int, shape (P,)
    The first step beyond ``bound`` per path (−1: never), written in place.
"""


@with_sections(_DIAG_NET_SECTIONS)
def diag_net_kernel(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                    u_out, v_out, loss_out, diverged_at):
    r"""See :func:`_diag_net_blocks`: the paths' blocks in one contiguous range per thread, numba's thread count of
    them (numba's own split of a short ``prange`` could be uneven: 3 + 1 blocks for 4 blocks on 2 threads)."""
    P = U.shape[0]
    if P % _BLOCK != 0:
        raise ValueError("diag_net_kernel: the number of paths must be a multiple of _BLOCK (pad)")
    n_blocks = P // _BLOCK
    n_chunks = max(1, min(n_blocks, numba.get_num_threads()))
    per_chunk = -(-n_blocks // n_chunks)
    args = (U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound, u_out, v_out, loss_out,
            diverged_at)
    ranges = [(c * per_chunk, min(n_blocks, (c + 1) * per_chunk)) for c in range(n_chunks)]
    if len(ranges) == 1:
        _diag_net_blocks(*ranges[0], *args)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(ranges)) as pool:
        for job in [pool.submit(_diag_net_blocks, first, last, *args) for first, last in ranges]:
            job.result()


@with_sections(_DIAG_NET_SECTIONS)
def diag_net_numpy(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                   u_out, v_out, loss_out, diverged_at):
    r"""NumPy twin of :func:`diag_net_kernel` (same draws; products by NumPy's BLAS, so equal to
    rounding rather than bitwise)."""
    with np.errstate(invalid="ignore", over="ignore"):       # diverged paths keep their non-finite values
        _diag_net_numpy(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                        u_out, v_out, loss_out, diverged_at)


def _diag_net_numpy(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                    u_out, v_out, loss_out, diverged_at):
    n = X.shape[0]
    alive = guard.alive(diverged_at)
    k = 0
    for t in range(n_steps + 1):
        R = (U * V) @ XT
        if record.due_np(save_steps, k, t):
            if u_out.shape[0]:
                u_out[alive, k] = U[alive]
                v_out[alive, k] = V[alive]
            loss_out[alive, k] = 0.5 * np.sum((R[alive] - y) ** 2, axis=1) / n
            k += 1
        if t == n_steps:
            break
        a = a_coefs[0] if a_coefs.shape[0] == 1 else a_coefs[t]
        g = g_coefs[0] if g_coefs.shape[0] == 1 else g_coefs[t]
        idx = np.flatnonzero(alive)
        sub = state[idx]
        Z = -a * (R - y)
        gs = g / np.sqrt(substeps)
        for _ in range(substeps):
            for i in range(n):
                Z[idx, i] += gs * ziggurat.normal_np(sub)
        state[idx] = sub
        Z[~alive] = 0.0
        G = Z @ X
        U_new, V_new = U + V * G, V + U * G
        U[alive], V[alive] = U_new[alive], V_new[alive]
        bad = alive & np.any(guard.beyond_np(np.abs(U), bound) | guard.beyond_np(np.abs(V), bound), axis=1)
        diverged_at[bad] = t + 1
        alive &= ~bad


def diag_net_numpy_baseline(U, V, X, y, a: float, g: float, n_steps: int, rng: np.random.Generator):
    """The benchmark baseline: the same EM step vectorized over paths with NumPy (BLAS products,
    NumPy's own ziggurat normals), no recording, no blow-up checks.

    Parameters
    ----------
    U, V : ndarray, shape (P, d)
        The paths' parameters, advanced in place.
    X, y : ndarray
        The inputs (n, d) and labels (n,).
    a, g : float
        The drift coefficient (the step) and the noise coefficient of every step.
    n_steps : int
        The number of steps.
    rng : numpy.random.Generator
        The generator of the normals.
    """
    n = X.shape[0]
    XT = X.T.copy()
    for _ in range(n_steps):
        Z = -a * ((U * V) @ XT - y) + g * rng.standard_normal((U.shape[0], n))
        G = Z @ X
        U, V = U + V * G, V + U * G
    return U, V


def simulate_diag_net(data, *, eta: float, delta: float, tau: float, h: float | None = None,
                      method: str = "sde", paths: int = 16, init: str = "paper", alpha: float = 0.1,
                      init_scale: float = 0.1, seed: int = 0, records: int = 101, record_params: bool = True,
                      bound: float = 1e6, eta_after: float | None = None, switch_tau: float | None = None,
                      substeps: int = 1, save_tau=None, kernel: str = "numba",
                      stream_key: tuple[int, ...] = ()) -> RunResult:
    """Label-noise dynamics of a diagonal linear network on ``data`` (a
    :class:`dyntools.data.RegressionData`) up to SDE time ``tau``, label noise of standard deviation
    ``delta`` (module docstring: the SDE's intensity is ``δ̃ = δ²/n²``).

    method "sde": EM for the SDE with step ``h`` (default η/10); method "sgd": full-batch
    label-noise GD with step η, ``tau/η`` steps.
    ``init``: "paper" ``u₀ = α·1, v₀ = 0`` (the default, as :class:`~dyntools.models.diag_net.DiagNet`),
    "gaussian" (u₀, v₀ i.i.d. N(0, init_scale²), path i drawn as DiagNet's seed i), or "balanced"
    ``u₀ = v₀ = α·1``.
    ``substeps = r`` aggregates r fine Brownian increments per step; both methods draw from the
    same per-path streams (``SeedSequence(seed, (KEYS["sde.label-noise"], *stream_key, i))``), so GD
    at η with r sub-steps and the SDE at h = η/r share one Brownian path (coupled comparison: the
    difference of the means then has small Monte-Carlo noise).
    ``save_tau``: the SDE times to save (each saved at the first step at or after it); default
    ``records`` even times.
    ``eta_after``/``switch_tau``: from SDE time ``switch_tau`` on, the step (and with it the noise
    level ηδ̃) becomes ``eta_after`` — "decreasing the step afterwards". For the SDE the time step
    stays h; for GD the step becomes ``eta_after`` (so the number of steps grows).

    Returns a RunResult of kind ``"sde-diag-net"``: arrays ``tau`` (K,), ``loss`` (P, K),
    ``u``/``v`` (P, K, d) when ``record_params``, ``beta_star``, ``diverged_at`` (P,) (the first step
    beyond ``bound``, −1: never; later recordings NaN).

    Parameters
    ----------
    data : RegressionData
        The training set (``X``, ``y``, ``beta_star``).
    eta : float
        The SGD step η (> 0), which sets the noise level.
    delta : float
        The label noise's standard deviation δ (≥ 0).
    tau : float
        The SDE time to reach (> 0).
    h : float, optional
        The SDE's time step (η/10 by default).
    method : {"sde", "sgd"}, default "sde"
        Integrate the SDE or run label-noise GD.
    paths : int, default 16
        Independent paths.
    init : {"paper", "gaussian", "balanced"}, default "paper"
        The initialization.
    alpha : float, default 0.1
        The scale α of the "paper" and "balanced" inits (> 0).
    init_scale : float, default 0.1
        The standard deviation of the "gaussian" init.
    seed : int, default 0
        The root seed.
    records : int, default 101
        The number of saved times (without ``save_tau``).
    record_params : bool, default True
        Record ``u`` and ``v``.
    bound : float, default 1e6
        A path beyond it has diverged (> 0).
    eta_after : float, optional
        The step from ``switch_tau`` on.
    switch_tau : float, optional
        The SDE time of the switch to ``eta_after``, in [0, tau].
    substeps : int, default 1
        Fine Brownian increments per step.
    save_tau : sequence of float, optional
        The SDE times to save.
    kernel : {"numba", "numpy"}, default "numba"
        The compiled kernel or its NumPy twin.
    stream_key : tuple of int, default ()
        Integers appended to the streams' key.
    """
    timings: dict[str, float] = {}
    eta = validation.positive("eta", eta)
    delta = validation.non_negative("delta", delta)
    tau = validation.positive("tau", tau)
    method = validation.one_of("method", method, ("sde", "sgd"))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    init = validation.one_of("init", init, DIAG_NET_INITS)
    paths = validation.count("paths", paths)
    alpha = validation.positive("alpha", alpha)
    bound = validation.positive("bound", bound)
    X = np.ascontiguousarray(data.X, dtype=np.float64)
    y = np.ascontiguousarray(data.y, dtype=np.float64)
    n, d = X.shape
    intensity = sde_intensity(delta, n)
    switch = tau if switch_tau is None else validation.in_interval("switch_tau", switch_tau, 0.0, tau,
                                                                    closed_high=True)
    eta2 = eta if eta_after is None else validation.positive("eta_after", eta_after)
    if method == "sde":
        h = eta / 10 if h is None else validation.positive("h", h)
        n1 = int(round(switch / h))
        n_steps = int(round(tau / h))
        if n_steps < 1:
            raise ValueError(f"Invalid h: {h} (larger than tau = {tau})")
        a = np.full(1, h / n)
        g = np.array([np.sqrt(eta * intensity * h)]) if n1 >= n_steps else \
            np.concatenate([np.full(n1, np.sqrt(eta * intensity * h)),
                            np.full(n_steps - n1, np.sqrt(eta2 * intensity * h))])
        step_tau = np.arange(n_steps + 1) * h
    else:
        n1 = int(round(switch / eta))
        n2 = int(round((tau - n1 * eta) / eta2))
        n_steps = n1 + n2
        if n_steps < 1:
            raise ValueError(f"Invalid eta: {eta} (larger than tau = {tau})")
        etas = np.concatenate([np.full(n1, eta), np.full(n2, eta2)])
        a = etas / n
        g = etas * np.sqrt(intensity)
        step_tau = np.concatenate([[0.0], np.cumsum(etas)])
    if save_tau is None:
        targets = np.linspace(0, step_tau[-1], validation.count("records", records, 2))
    else:
        targets = validation.finite_array("save_tau", save_tau, ndim=1)
    save_steps = np.unique(np.searchsorted(step_tau, targets - 1e-9 * max(1.0, step_tau[-1])))
    save_steps = np.minimum(save_steps, n_steps).astype(np.int64)
    save_steps = np.unique(save_steps)
    padded = -(-paths // _BLOCK) * _BLOCK       # rows beyond `paths`: extra streams, dropped below
    U, V = _initial_uv(init, padded, d, alpha, init_scale, seed)
    substeps = validation.count("substeps", substeps)
    state = streams.path_states(seed, padded, streams.key("sde.label-noise"), *stream_key)
    K = save_steps.size
    shape = (padded, K, d) if record_params else (0, 0, 0)
    u_out, v_out = np.full(shape, np.nan), np.full(shape, np.nan)
    loss_out = np.full((padded, K), np.nan)
    diverged_at = np.full(padded, guard.NEVER, dtype=np.int64)
    fn = diag_net_kernel if kernel == "numba" else diag_net_numpy
    with timed(timings, "simulate"):
        fn(U, V, X, X.T.copy(), y, np.ascontiguousarray(a), np.ascontiguousarray(g), n_steps, substeps, state,
           save_steps, bound, u_out, v_out, loss_out, diverged_at)
    diverged_at, loss_out = diverged_at[:paths], loss_out[:paths]
    if record_params:
        u_out, v_out = u_out[:paths], v_out[:paths]
    bad = guard.summary(diverged_at)
    n_bad = bad["diverged"]
    if n_bad:
        status = "diverged"
        text = message(status, diverged=n_bad, paths=paths, first=bad["first"],
                       detail=f"|u_j| or |v_j| beyond {bound:g} at tau = {step_tau[bad['first']]:g}")
    else:
        status = "completed"
        text = message(status, paths=paths, what=f"{method.upper()} paths",
                       detail=f"tau = {step_tau[-1]:g} ({n_steps} steps)")
    arrays = {"tau": step_tau[save_steps], "loss": loss_out, "diverged_at": diverged_at,
              "beta_star": data.beta_star, "X": X, "y": y}
    if record_params:
        arrays["u"], arrays["v"] = u_out, v_out
    config = {"model": "diag-net", "method": method, "eta": eta, "delta": delta, "delta_sde": intensity,
              "tau": tau, "h": h if method == "sde" else eta, "paths": paths, "init": init, "alpha": alpha,
              "init_scale": init_scale, "n": n, "d": d, "eta_after": eta_after, "switch_tau": switch_tau,
              "bound": bound, "kernel": kernel, "substeps": substeps}
    summary = {"paths": paths, "steps": n_steps, "diverged": n_bad,
               "final_loss_median": float(np.nanmedian(loss_out[:, -1])) if n_bad < paths else None}
    return RunResult("sde-diag-net", config, arrays, status, text, seed=seed, summary=summary,
                     timings=timings, versions=versions())


def _initial_uv(init: str, paths: int, d: int, alpha: float, init_scale: float, seed: int):
    """``(U, V)`` float64[paths, d]: row i is the initial point of path i — the diagonal-network
    runner's (:func:`dyntools.models.diag_net.initial_params`; "gaussian" from path i's
    ``diag-net.init`` generator, as ``DiagNet.init(seed, i)``), or ``u₀ = v₀ = α·1`` for "balanced"."""
    if init == "balanced":
        return np.full((paths, d), alpha), np.full((paths, d), alpha)
    gens = streams.path_generators(seed, paths, streams.key("diag-net.init")) if init == "gaussian" else \
        [None] * paths
    pairs = [initial_params(d, init, alpha=alpha, scale=init_scale, rng=gen) for gen in gens]
    return np.array([u for u, _ in pairs]), np.array([v for _, v in pairs])
