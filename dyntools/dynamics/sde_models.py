"""Built-in SDEs: GBM and OU (with exact solutions), the 1-D quadratic toy, the general
label-noise SDE of any model with a Jacobian, and diagonal linear networks (seed 004).

Label-noise SDE (Andriushchenko et al. 2023, seed 004, eq. "sde-sgd-dynamics")::

    dθ_τ = −∇L(θ_τ) dτ + √(ηδ) φ_θ(X)ᵀ dB_τ,     B standard Brownian motion in Rⁿ,
    φ_θ(X) = [∇_θ h_θ(x_i)ᵀ]_{i=1..n} ∈ R^{n×p},   L(θ) = (1/2n) Σ_i (h_θ(x_i) − y_i)².

**Normalization (checked against the seed).** The seed writes the SDE without fixing the
normalization of L or of the label noise. Full-batch label-noise GD on the loss above,

    θ_{t+1} = θ_t − η ∇_θ (1/2n) Σ_i (h_θ(x_i) − y_i − ε_{t,i})²,   ε_{t,i} ~ N(0, s²) i.i.d.,
            = θ_t − η ∇L(θ_t) + (η/n) φ_θ(X)ᵀ ε_t,

has per-step noise covariance ``η² s²/n² φᵀφ``. The SDE over one step ``dτ = η`` has covariance
``η · ηδ φᵀφ``. They agree iff **δ = s²/n²**, i.e. label noise of standard deviation ``s = n√δ``
per label. (With the un-normalized loss ½‖h − y‖² instead, δ = s² — the seed's δ is the label
variance only in that normalization.) dyntools keeps the seed's SDE verbatim with
``L = (1/2n)‖h − y‖²`` and its label-noise GD uses ``s = n√δ``, so one δ means the same in both.
With that choice full-batch label-noise GD at step η is, draw for draw, the Euler–Maruyama scheme
of the SDE at ``h = η``: ``θ_{t+1} = θ_t − η∇L + η√δ φᵀ Z_t``, ``Z_t ~ N(0, I_n)``; the SDE at the
time ``τ = tη`` is its small-step limit (Li, Tai & E 2018: weak error O(η) on bounded τ).

**Diagonal linear network** ``h_{u,v}(x) = ⟨u ⊙ v, x⟩``, ``β = u ⊙ v``, ``∇_u h = v ⊙ x``::

    du = −∇_u L dτ + √(ηδ) v ⊙ [Xᵀ dB],   dv = −∇_v L dτ + √(ηδ) u ⊙ [Xᵀ dB],
    ∇_u L = v ⊙ Xᵀ r / n,  ∇_v L = u ⊙ Xᵀ r / n,  r = X(u ⊙ v) − y.

One EM step shares a single product: with ``z = −(h/n) r + √(ηδ) ΔB``, ``u ← u + v ⊙ (Xᵀz)``,
``v ← v + u ⊙ (Xᵀz)`` — two products by X per path-step (2nd multiply-adds, 4nd flops).

**Quadratic toy** (:mod:`dyntools.models.quadratic_toy`): ``h_θ(x) = xθ²``, loss
``F(θ) = ¼E(y − xθ²)²``, ``φ_i = 2x_iθ``. Because its loss is ½·(1/2n)Σ(·)², full-batch
label-noise GD with label std ``s`` has noise ``(η/2n) φᵀ ε`` and matches ``√(ηδ)φᵀdB`` iff
δ = s²/(4n²). As ``⟨φ, B⟩ = ‖φ‖ W`` in law, the toy SDE is one-dimensional:
``dθ = E[x²] θ(θ*² − θ²) dτ + 2√(ηδ) ‖x‖₂ θ dW`` — geometric-Brownian-like multiplicative noise.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from dyntools import validation
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
from dyntools.engine import streams, ziggurat
from dyntools.engine.result import RunResult, timed
from dyntools.engine.ziggurat import normal_reg

MODELS = ("gbm", "ou", "toy", "diag-net")


# --------------------------------------------------------------------------- GBM, OU and the toy

def gbm(mu: float = 2.0, sigma: float = 1.0, dim: int = 1) -> SDE:
    """Geometric Brownian motion ``dX = μX dt + σX dW`` (diagonal noise, elementwise in x)."""
    mu, sigma = validation.finite("mu", mu), validation.non_negative("sigma", sigma)
    return SDE(builtin_drift, builtin_diffusion, dim, dim, "diagonal", builtin_diffusion_dx,
               [GBM, mu, sigma], "gbm", builtin=True)


def gbm_exact(x0, mu: float, sigma: float, t, w) -> np.ndarray:
    """``X_t = x0 exp((μ − σ²/2) t + σ W_t)`` on the same Brownian path."""
    return x0 * np.exp((mu - 0.5 * sigma * sigma) * t + sigma * w)


def gbm_moments(x0: float, mu: float, sigma: float, t) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``x0 e^{μt}`` and variance ``x0² e^{2μt}(e^{σ²t} − 1)``."""
    t = np.asarray(t, dtype=float)
    return x0 * np.exp(mu * t), x0 * x0 * np.exp(2 * mu * t) * np.expm1(sigma * sigma * t)


def ou(theta: float = 1.0, mu: float = 0.0, sigma: float = 0.5, dim: int = 1) -> SDE:
    """Ornstein–Uhlenbeck ``dX = θ(μ − X) dt + σ dW`` (additive, diagonal noise)."""
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
    """
    t = np.asarray(t, dtype=float)
    T = t[-1]
    weights = np.exp(-theta * (T - 0.5 * (t[1:] + t[:-1])))
    integral = np.diff(W, axis=1) @ weights
    return mu + (x0 - mu) * np.exp(-theta * T) + sigma * integral


def ou_moments(x0: float, theta: float, mu: float, sigma: float, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact law ``X_t ~ N(μ + (x0 − μ)e^{−θt}, σ²(1 − e^{−2θt})/(2θ))``."""
    t = np.asarray(t, dtype=float)
    return mu + (x0 - mu) * np.exp(-theta * t), sigma * sigma * -np.expm1(-2 * theta * t) / (2 * theta)


def toy_sde(toy, eta: float, delta: float) -> SDE:
    """The label-noise SDE of the quadratic toy (module docstring):
    ``dθ = E[x²] θ(θ*² − θ²) dτ + 2√(ηδ)‖x‖₂ θ dW``, built from the toy's own loss constants."""
    eta = validation.non_negative("eta", eta)
    delta = validation.non_negative("delta", delta)
    c = 2.0 * np.sqrt(eta * delta) * float(np.linalg.norm(toy.x))
    return SDE(builtin_drift, builtin_diffusion, 1, 1, "diagonal", builtin_diffusion_dx,
               [TOY, toy.second_moment, toy.theta_star**2, c], "toy", builtin=True)


# ----------------------------------------------------------------- (a) general label-noise SDE

def label_noise_sde(model, X, y, dim: int, eta: float, delta: float, name: str = "label-noise") -> SDE:
    """The label-noise SDE of any model given as a numba-jitted ``model(theta, X, h_out, J_out)``
    that writes ``h_θ(X)`` (n,) and the Jacobian ``φ_θ(X)`` (n, p). General noise, m = n::

        b(θ) = −(1/n) φᵀ(h − y),     σ(θ) = √(ηδ) φᵀ   (p × n).

    ``X`` and ``y`` travel in ``args`` (flattened), so the terms stay plain numba functions.
    """
    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    n, d = X.shape
    if y.shape[0] != n:
        raise ValueError(f"Invalid y: length {y.shape[0]} does not match X with {n} rows")
    eta = validation.non_negative("eta", eta)
    delta = validation.non_negative("delta", delta)
    p = validation.count("dim", dim)
    args = np.concatenate([[np.sqrt(eta * delta)], X.ravel(), y])

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
            out[k] = -acc / n

    @njit
    def diffusion(t, x, args, out):
        _, J = _eval(x, args)
        for k in range(p):
            for i in range(n):
                out[k, i] = args[0] * J[i, k]

    return SDE(drift, diffusion, p, n, "general", None, args, name)


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
    """``φ_{u,v}(X) = [X diag(v), X diag(u)]`` for a stack of parameters (…, d) → (…, n, 2d)."""
    return np.concatenate([X * v[..., None, :], X * u[..., None, :]], axis=-1)


# --------------------------------------------------------------- (b) diagonal-network kernel

_BLOCK = 4   # paths advanced together: each row of X is loaded once per block, not once per path


@njit(inline="always")
def _block_products(A, B, out):
    """``out[b, i] = Σ_j A[i, j] B[b, j]`` for the ``_BLOCK`` = 4 rows ``b`` of ``B``: four rows of ``A``
    at a time against the four rows of ``B`` (sixteen accumulators), so each loaded ``A[i, j]`` feeds
    four products and each ``B[b, j]`` four — 8 loads per 16 multiply-adds instead of 5 per 4, which
    keeps the loop bound by multiply-add throughput rather than by loads. Leftover rows (m mod 4)
    one at a time."""
    m, k = A.shape
    m4 = m - m % 4
    for i in range(0, m4, 4):
        c00 = 0.0
        c01 = 0.0
        c02 = 0.0
        c03 = 0.0
        c10 = 0.0
        c11 = 0.0
        c12 = 0.0
        c13 = 0.0
        c20 = 0.0
        c21 = 0.0
        c22 = 0.0
        c23 = 0.0
        c30 = 0.0
        c31 = 0.0
        c32 = 0.0
        c33 = 0.0
        for j in range(k):
            x0 = A[i + 0, j]
            x1 = A[i + 1, j]
            x2 = A[i + 2, j]
            x3 = A[i + 3, j]
            b0 = B[0, j]
            b1 = B[1, j]
            b2 = B[2, j]
            b3 = B[3, j]
            c00 += x0 * b0
            c01 += x0 * b1
            c02 += x0 * b2
            c03 += x0 * b3
            c10 += x1 * b0
            c11 += x1 * b1
            c12 += x1 * b2
            c13 += x1 * b3
            c20 += x2 * b0
            c21 += x2 * b1
            c22 += x2 * b2
            c23 += x2 * b3
            c30 += x3 * b0
            c31 += x3 * b1
            c32 += x3 * b2
            c33 += x3 * b3
        out[0, i + 0] = c00
        out[1, i + 0] = c01
        out[2, i + 0] = c02
        out[3, i + 0] = c03
        out[0, i + 1] = c10
        out[1, i + 1] = c11
        out[2, i + 1] = c12
        out[3, i + 1] = c13
        out[0, i + 2] = c20
        out[1, i + 2] = c21
        out[2, i + 2] = c22
        out[3, i + 2] = c23
        out[0, i + 3] = c30
        out[1, i + 3] = c31
        out[2, i + 3] = c32
        out[3, i + 3] = c33
    for i in range(m4, m):
        c00 = 0.0
        c01 = 0.0
        c02 = 0.0
        c03 = 0.0
        for j in range(k):
            x0 = A[i, j]
            c00 += x0 * B[0, j]
            c01 += x0 * B[1, j]
            c02 += x0 * B[2, j]
            c03 += x0 * B[3, j]
        out[0, i] = c00
        out[1, i] = c01
        out[2, i] = c02
        out[3, i] = c03


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract"})
def _diag_net_kernel(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                     u_out, v_out, loss_out, stopped, n_workers):
    """``n_steps`` steps of ``z = −a_t (X(u⊙v) − y) + g_t N(0, I_n)``; ``u ← u + v ⊙ Xᵀz``,
    ``v ← v + u ⊙ Xᵀz`` for all paths (rows of U, V: float64[P, d]) in place.

    EM for the SDE: ``a = h/n``, ``g = √(ηδh)``. Label-noise GD: ``a = η/n``, ``g = η√δ`` (module
    docstring). ``a_coefs``/``g_coefs`` have length 1 (constant) or n_steps (e.g. a step decay).
    ``substeps = r``: the normal is ``r^{-1/2} Σ_s Z_s`` over r fine increments (fine step outer, data
    index inner), so a GD step of size η sees the same Brownian path as r SDE steps of size η/r.
    Blocks of ``_BLOCK`` paths run independently (``prange``) through all steps, so there is no
    per-step synchronization and X stays in cache; the two products by X are plain loops
    (reassociation allowed, so sums may differ from the NumPy twin in the last bits).
    A path leaving ``|u_j|, |v_j| <= bound`` (or NaN) is stopped and frozen; ``stopped`` gets its step.
    The number of paths must be a multiple of ``_BLOCK`` (:func:`simulate_diag_net` pads with
    extra paths of their own streams and drops them), which keeps one code path to compile.
    """
    P, d = U.shape
    n = X.shape[0]
    n_save = save_steps.shape[0]
    rec_params = u_out.shape[0] > 0
    if P % _BLOCK != 0:
        raise ValueError("diag_net_kernel: the number of paths must be a multiple of _BLOCK (pad)")
    n_blocks = P // _BLOCK
    nb = _BLOCK
    # one contiguous range of blocks per worker: numba's own split of a short prange can be
    # uneven (e.g. 3 + 1 blocks for 4 blocks on 2 threads)
    n_chunks = max(1, min(n_blocks, n_workers))
    per_chunk = -(-n_blocks // n_chunks)
    for chunk in prange(n_chunks):
        for blk in range(chunk * per_chunk, min(n_blocks, (chunk + 1) * per_chunk)):
            p0 = blk * _BLOCK
            beta = np.empty((_BLOCK, d))
            grad = np.empty((_BLOCK, d))
            r = np.empty((_BLOCK, n))
            z = np.empty((_BLOCK, n))
            alive = np.empty(_BLOCK, dtype=np.bool_)
            for b in range(nb):
                alive[b] = stopped[p0 + b] < 0
            k = 0
            for t in range(n_steps + 1):
                for b in range(nb):
                    for j in range(d):
                        beta[b, j] = U[p0 + b, j] * V[p0 + b, j]
                # r = X β − y for the four paths (register-blocked products, see _block_products)
                _block_products(X, beta, r)
                for b in range(nb):
                    for i in range(n):
                        r[b, i] = r[b, i] - y[i]
                while k < n_save and save_steps[k] == t:
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
                # Xᵀz as d dot products over rows of Xᵀ: loads only, no stores inside
                _block_products(XT, z, grad)
                for b in range(nb):
                    if not alive[b]:
                        continue
                    bad = False
                    for j in range(d):
                        u = U[p0 + b, j]
                        U[p0 + b, j] = u + V[p0 + b, j] * grad[b, j]
                        V[p0 + b, j] = V[p0 + b, j] + u * grad[b, j]
                        if not (abs(U[p0 + b, j]) <= bound and abs(V[p0 + b, j]) <= bound):
                            bad = True
                    if bad:
                        alive[b] = False
                        stopped[p0 + b] = t + 1
                        for j in range(d):
                            U[p0 + b, j] = 0.0
                            V[p0 + b, j] = 0.0


def diag_net_kernel(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                    u_out, v_out, loss_out, stopped):
    """See :func:`_diag_net_kernel` (this passes numba's thread count; reading it inside the compiled
    kernel would stop numba from caching the compilation)."""
    _diag_net_kernel(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound, u_out,
                     v_out, loss_out, stopped, numba.get_num_threads())


def diag_net_numpy(U, V, X, XT, y, a_coefs, g_coefs, n_steps, substeps, state, save_steps, bound,
                   u_out, v_out, loss_out, stopped):
    """NumPy twin of :func:`diag_net_kernel` (same draws; products by NumPy's BLAS, so equal to
    rounding rather than bitwise)."""
    n = X.shape[0]
    alive = stopped < 0
    rec = {int(s): j for j, s in enumerate(save_steps)}
    for t in range(n_steps + 1):
        R = (U * V) @ XT
        if t in rec:
            k = rec[t]
            if u_out.shape[0]:
                u_out[alive, k] = U[alive]
                v_out[alive, k] = V[alive]
            loss_out[alive, k] = 0.5 * np.sum((R[alive] - y) ** 2, axis=1) / n
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
        bad = alive & ~np.all((np.abs(U) <= bound) & (np.abs(V) <= bound), axis=1)
        stopped[bad] = t + 1
        U[bad], V[bad] = 0.0, 0.0
        alive &= ~bad


def diag_net_numpy_baseline(U, V, X, y, a: float, g: float, n_steps: int, rng: np.random.Generator):
    """The benchmark baseline: the same EM step vectorized over paths with NumPy (BLAS products,
    NumPy's own ziggurat normals), no recording, no blow-up checks."""
    n = X.shape[0]
    XT = X.T.copy()
    for _ in range(n_steps):
        Z = -a * ((U * V) @ XT - y) + g * rng.standard_normal((U.shape[0], n))
        G = Z @ X
        U, V = U + V * G, V + U * G
    return U, V


def simulate_diag_net(data, *, eta: float, delta: float, tau: float, h: float | None = None,
                      method: str = "sde", paths: int = 16, alpha: float = 0.1, seed: int = 0,
                      records: int = 101, record_params: bool = True, bound: float = 1e6,
                      eta_after: float | None = None, switch_tau: float | None = None, substeps: int = 1,
                      save_tau=None,
                      kernel: str = "numba", stream_key: tuple[int, ...] = ()) -> RunResult:
    """Label-noise dynamics of a diagonal linear network on ``data`` (a
    :class:`dyntools.data.RegressionData`) from ``u = v = α·1`` up to SDE time ``tau``.

    method "sde": EM for the SDE with step ``h`` (default η/10); method "sgd": full-batch
    label-noise GD with step η, label noise std ``n√δ`` (module docstring), ``tau/η`` steps.
    ``substeps = r`` aggregates r fine Brownian increments per step; both methods draw from the
    same per-path streams, so GD at η with r sub-steps and the SDE at h = η/r share one Brownian
    path (coupled comparison: the difference of the means then has small Monte-Carlo noise).
    ``save_tau``: the SDE times to save (each saved at the first step at or after it); default
    ``records`` even times.
    ``eta_after``/``switch_tau``: from SDE time ``switch_tau`` on, the step (and with it the noise
    level ηδ) becomes ``eta_after`` — "decreasing the step afterwards". For the SDE the time step
    stays h; for GD the step becomes ``eta_after`` (so the number of steps grows).

    Returns a RunResult of kind ``"sde-diag-net"``: arrays ``tau`` (K,), ``loss`` (P, K),
    ``u``/``v`` (P, K, d) when ``record_params``, ``beta_star``, ``stopped_at`` (P,).
    """
    timings: dict[str, float] = {}
    eta = validation.positive("eta", eta)
    delta = validation.non_negative("delta", delta)
    tau = validation.positive("tau", tau)
    method = validation.one_of("method", method, ("sde", "sgd"))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    paths = validation.count("paths", paths)
    alpha = validation.positive("alpha", alpha)
    bound = validation.positive("bound", bound)
    X = np.ascontiguousarray(data.X, dtype=np.float64)
    y = np.ascontiguousarray(data.y, dtype=np.float64)
    n, d = X.shape
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
        g = np.array([np.sqrt(eta * delta * h)]) if n1 >= n_steps else \
            np.concatenate([np.full(n1, np.sqrt(eta * delta * h)), np.full(n_steps - n1,
                                                                           np.sqrt(eta2 * delta * h))])
        step_tau = np.arange(n_steps + 1) * h
    else:
        n1 = int(round(switch / eta))
        n2 = int(round((tau - n1 * eta) / eta2))
        n_steps = n1 + n2
        if n_steps < 1:
            raise ValueError(f"Invalid eta: {eta} (larger than tau = {tau})")
        etas = np.concatenate([np.full(n1, eta), np.full(n2, eta2)])
        a = etas / n
        g = etas * np.sqrt(delta)
        step_tau = np.concatenate([[0.0], np.cumsum(etas)])
    if save_tau is None:
        targets = np.linspace(0, step_tau[-1], validation.count("records", records, 2))
    else:
        targets = validation.finite_array("save_tau", save_tau, ndim=1)
    save_steps = np.unique(np.searchsorted(step_tau, targets - 1e-9 * max(1.0, step_tau[-1])))
    save_steps = np.minimum(save_steps, n_steps).astype(np.int64)
    save_steps = np.unique(save_steps)
    padded = -(-paths // _BLOCK) * _BLOCK       # rows beyond `paths`: extra streams, dropped below
    U = np.full((padded, d), alpha)
    V = np.full((padded, d), alpha)
    substeps = validation.count("substeps", substeps)
    state = streams.path_states(seed, padded, 0xD1A6, *stream_key)
    K = save_steps.size
    shape = (padded, K, d) if record_params else (0, 0, 0)
    u_out, v_out = np.full(shape, np.nan), np.full(shape, np.nan)
    loss_out = np.full((padded, K), np.nan)
    stopped = np.full(padded, -1, dtype=np.int64)
    fn = diag_net_kernel if kernel == "numba" else diag_net_numpy
    with timed(timings, "simulate"):
        fn(U, V, X, X.T.copy(), y, np.ascontiguousarray(a), np.ascontiguousarray(g), n_steps, substeps, state,
           save_steps, bound, u_out, v_out, loss_out, stopped)
    stopped, loss_out = stopped[:paths], loss_out[:paths]
    if record_params:
        u_out, v_out = u_out[:paths], v_out[:paths]
    n_bad = int((stopped >= 0).sum())
    if n_bad:
        first = float(step_tau[stopped[stopped >= 0].min()])
        status, message = "diverged", (f"{n_bad} of {paths} paths blew up (|u|, |v| > {bound:g}; first at "
                                       f"tau = {first:g}); they were stopped")
    else:
        status, message = "completed", f"{paths} {method.upper()} paths to tau = {step_tau[-1]:g} ({n_steps} steps)"
    arrays = {"tau": step_tau[save_steps], "loss": loss_out, "stopped_at": stopped,
              "beta_star": data.beta_star, "X": X, "y": y}
    if record_params:
        arrays["u"], arrays["v"] = u_out, v_out
    config = {"model": "diag-net", "method": method, "eta": eta, "delta": delta, "tau": tau,
              "h": h if method == "sde" else eta, "paths": paths, "alpha": alpha, "n": n, "d": d,
              "eta_after": eta_after, "switch_tau": switch_tau, "bound": bound, "kernel": kernel,
              "substeps": substeps,
              "label_noise_std": n * np.sqrt(delta)}
    summary = {"paths": paths, "steps": n_steps, "diverged": n_bad,
               "final_loss_median": float(np.nanmedian(loss_out[:, -1])) if n_bad < paths else None}
    return RunResult("sde-diag-net", config, arrays, status, message, seed=seed, summary=summary,
                     timings=timings, versions=versions())
