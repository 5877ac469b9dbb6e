"""Diagonal linear networks (Andriushchenko et al. 2023, seed 004, "Sparse Feature Learning").

The predictor is a two-layer linear network with diagonal connections,

    h_{u,v}(x) = ⟨u, v ⊙ x⟩ = ⟨u ⊙ v, x⟩,        β := u ⊙ v ∈ R^d,

trained on the square loss of n samples (rows of X, n × d)

    L(u, v) = (1/2n) ‖X(u ⊙ v) − y‖².

With the residual r = Xβ − y and g = Xᵀr / n:

    ∇_u L = v ⊙ g,     ∇_v L = u ⊙ g,                                   (gradients)
    φ(X) = [∇_θ h(x_i)ᵀ]_i = [X ⊙ v, X ⊙ u]  ∈ R^{n × 2d}                 (Jacobian; columns
                                                                          scaled by v, then u)
    ∇²L [du; dv] = [dv ⊙ g + v ⊙ q ; du ⊙ g + u ⊙ q],
        q = Xᵀ X (du ⊙ v + u ⊙ dv) / n                                   (Hessian–vector product)

so ∇²L = φᵀφ / n + [[0, diag g], [diag g, 0]] — the Gauss–Newton part plus the residual part,
which vanishes at an interpolating point.

The singular values of φ are those of X·diag(√(u² + v²)) because
φφᵀ = Σ_j (u_j² + v_j²) x_j x_jᵀ (x_j the j-th column of X); :func:`jacobian_gram` returns this
n × n matrix, which is how :mod:`dyntools.metrics` computes the rank at hundreds of recordings
cheaply.

Everything here is plain NumPy on one parameter vector (or, where stated, on stacks of them);
the compiled training loops live in :mod:`dyntools.dynamics.diag_net_sgd`.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation

INITS = ("paper", "gaussian")


def predict(u, v, X) -> np.ndarray:
    """``h_{u,v}(X) = X (u ⊙ v)``."""
    return np.asarray(X) @ (np.asarray(u) * np.asarray(v))


def loss(u, v, X, y) -> float:
    """``L(u, v) = ‖X(u ⊙ v) − y‖² / (2n)``; stacks ``u, v`` of shape (k, d) give k losses."""
    X = np.asarray(X)
    beta = np.asarray(u) * np.asarray(v)
    res = beta @ X.T - np.asarray(y)
    out = 0.5 * np.mean(res * res, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def loss_factor(X, y) -> tuple[np.ndarray, np.ndarray, float]:
    """``(R, z, c)`` with ``‖Xβ − y‖²/m = ‖Rβ − z‖² + c`` for every β (X is m × d).

    From the reduced QR ``X/√m = QR`` (R upper trapezoidal, k × d, k = min(m, d)): ``z = Qᵀy/√m``
    and ``c = ‖y/√m − Qz‖²`` (the part of y no β can fit). Evaluating the loss then costs about
    ``k·d − k²/2`` multiply–adds instead of ``m·d`` — for the 1000-point test set with d = 200,
    a fifth — with no cancellation (both terms are sums of squares).
    """
    from threadpoolctl import threadpool_limits

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    scale = 1.0 / np.sqrt(X.shape[0])
    # one BLAS thread: the factor does not depend on the thread count (2000 × 300 differed in the last bits),
    # and a threaded QR only fights a busy machine (``dyntools bench cold-start``'s DiagNet row: docs/performance)
    with threadpool_limits(1):
        Q, R = np.linalg.qr(X * scale, mode="reduced")
        z = Q.T @ (y * scale)
        c = float(np.sum((y * scale - Q @ z) ** 2))
    return np.triu(R), z, c


def gradients(u, v, X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(∇_u L, ∇_v L) = (v ⊙ g, u ⊙ g)`` with ``g = Xᵀ(X(u ⊙ v) − y) / n``."""
    X = np.asarray(X)
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    g = X.T @ (X @ (u * v) - y) / X.shape[0]
    return v * g, u * g


def jacobian(u, v, X) -> np.ndarray:
    """``φ(X) = [X ⊙ v, X ⊙ u]`` (n × 2d): row i is ``∇_{(u,v)} h(x_i)``."""
    X = np.asarray(X)
    return np.hstack([X * np.asarray(v), X * np.asarray(u)])


def column_norms(u, v, X) -> np.ndarray:
    """Column norms of ``φ = [X ⊙ v, X ⊙ u]`` in closed form: ``[|v_j|·‖X_{:,j}‖, |u_j|·‖X_{:,j}‖]``
    (length 2d; ``u, v`` of shape (..., d) give (..., 2d))."""
    c = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=0)
    return np.concatenate([np.abs(v) * c, np.abs(u) * c], axis=-1)


def example_grad_norms(u, v, X) -> np.ndarray:
    """``‖∇_{(u,v)} h(x_i)‖ = (Σ_j x_ij² (u_j² + v_j²))^{1/2}`` for every row of X
    (``u, v`` of shape (..., d) give (..., n))."""
    w = np.square(np.asarray(u, dtype=np.float64)) + np.square(np.asarray(v, dtype=np.float64))
    return np.sqrt(np.maximum(w @ np.square(np.asarray(X, dtype=np.float64)).T, 0.0))


def jacobian_gram(u, v, X) -> np.ndarray:
    """``φφᵀ = X diag(u² + v²) Xᵀ`` (n × n), or a stack (k, n, n) for ``u, v`` of shape (k, d)."""
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(u, dtype=np.float64) ** 2 + np.asarray(v, dtype=np.float64) ** 2
    return np.matmul(X * w[..., None, :], X.T)


def hvp(u, v, X, y, du, dv) -> tuple[np.ndarray, np.ndarray]:
    """Hessian–vector product ``∇²L (du, dv)`` without forming the 2d × 2d Hessian::

        q = Xᵀ X (du ⊙ v + u ⊙ dv) / n,   g = Xᵀ(X(u ⊙ v) − y) / n
        H(du, dv) = (dv ⊙ g + v ⊙ q,  du ⊙ g + u ⊙ q)

    Every argument but ``X`` and ``y`` may carry leading batch axes ``(…, d)``: a stack of points
    (u, v), each with its own direction, is done in two matrix products.
    """
    d = np.shape(u)[-1]
    out = hvp_operator(u, v, X, y)(np.concatenate(np.broadcast_arrays(du, dv), axis=-1))
    return out[..., :d], out[..., d:]


def hvp_operator(u, v, X, y):
    """``z ↦ ∇²L(u, v) z`` on stacked directions ``z = (du, dv)`` of length 2d, for one point
    (u, v: (d,)) or a stack of K points (u, v: (K, d)); the gradient ``g`` is computed once.

    The returned ``matvec(Z, rows=None)`` takes ``Z`` of shape (k, 2d) and the indices ``rows`` of
    the points its rows belong to (all K points when ``rows`` is None): the form
    :func:`dyntools.metrics.sharpness_batch` expects.
    """
    X = np.asarray(X)
    n, d = X.shape
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    g = ((u * v) @ X.T - y) @ X / n

    def matvec(Z, rows=None):
        uu, vv, gg = (u, v, g) if rows is None else (u[rows], v[rows], g[rows])
        du, dv = Z[..., :d], Z[..., d:]
        q = ((du * vv + uu * dv) @ X.T) @ X / n
        return np.concatenate([dv * gg + vv * q, du * gg + uu * q], axis=-1)

    return matvec


def hessian(u, v, X, y) -> np.ndarray:
    """The dense 2d × 2d Hessian (for tests and small problems only)::

        ∇²L = [[V G V, V G U + diag g], [U G V + diag g, U G U]],   G = XᵀX / n, U = diag u, V = diag v
    """
    X = np.asarray(X)
    n, d = X.shape
    G = X.T @ X / n
    g = X.T @ (X @ (u * v) - y) / n
    H = np.empty((2 * d, 2 * d))
    H[:d, :d] = v[:, None] * G * v[None, :]
    H[:d, d:] = v[:, None] * G * u[None, :] + np.diag(g)
    H[d:, :d] = H[:d, d:].T
    H[d:, d:] = u[:, None] * G * u[None, :]
    return H


def initial_params(d: int, init: str = "paper", *, alpha: float = 0.1, scale: float = 0.1,
                   rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Initial ``(u₀, v₀)``: ``"paper"`` is ``u₀ = α·1, v₀ = 0`` (β₀ = 0, the paper's choice);
    ``"gaussian"`` draws both i.i.d. ``N(0, scale²)`` from ``rng``."""
    d = validation.count("d", d)
    validation.one_of("init", init, INITS)
    if init == "paper":
        return np.full(d, validation.finite("alpha", alpha)), np.zeros(d)
    scale = validation.positive("init_scale", scale)
    if rng is None:
        raise ValueError("Invalid rng: the gaussian init needs a numpy Generator")
    return scale * rng.standard_normal(d), scale * rng.standard_normal(d)


# ------------------------------------------------------------------------------ the model protocol

from numba import njit  # noqa: E402

from dyntools.models.base import Model  # noqa: E402

# No "reassoc": with it the vectorizer may split a sum differently each time a function is optimized
# (standalone when compiled in this process, again inside its caller's library when loaded from the
# cache), so a fresh compile and a cache load could differ in the last bits. The reductions are written
# with explicit lanes instead (:func:`weighted_dot`), which vectorize without it. No nnan/ninf either
# (divergence checks need NaN).
FASTMATH = {"contract", "nsz"}


@njit(inline="always", fastmath=FASTMATH)
def weighted_dot(X, i, a, oa, b, ob, d):
    """``Σ_j X[i, j] · (a[oa + j] · b[ob + j])`` for ``j < d``, in four lanes: lane ``l`` sums the terms
    with ``j ≡ l (mod 4)`` in increasing j (the last ``d mod 4`` terms go to lane 0) and the result is
    ``(s₀ + s₁) + (s₂ + s₃)`` — a fixed order on every machine, which the compiler vectorizes without
    reassociating."""
    d4 = d - d % 4
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, d4, 4):
        s0 += X[i, j] * (a[oa + j] * b[ob + j])
        s1 += X[i, j + 1] * (a[oa + j + 1] * b[ob + j + 1])
        s2 += X[i, j + 2] * (a[oa + j + 2] * b[ob + j + 2])
        s3 += X[i, j + 3] * (a[oa + j + 3] * b[ob + j + 3])
    for j in range(d4, d):
        s0 += X[i, j] * (a[oa + j] * b[ob + j])
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, fastmath=FASTMATH)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Mini-batch loss ``(1/2b) Σ_q r_q²`` and its gradient, ``θ = [u; v]`` (``p = 2d``):

        r_q = ⟨x_i, u ⊙ v⟩ − (y_i + noise_q),   c = (1/b) Σ_q r_q x_i,   ∇_u = c ⊙ v,   ∇_v = c ⊙ u

    for ``i = idx[q]``. ``ws`` holds ``c`` (length d). The residual is ``(−y_i − noise_q) + ⟨x_i, u ⊙ v⟩``
    with the dot product in the fixed lanes of :func:`weighted_dot`, and ``c`` is ``(Σ_q r_q x_i) · (1/b)``."""
    d = iargs[0]
    for j in range(d):
        ws[j] = 0.0
    tot = 0.0
    for q in range(b):
        i = idx[q]
        r = -y[i]
        if noise[q] != 0.0:
            r -= noise[q]
        r += weighted_dot(X, i, theta, 0, theta, d, d)
        for j in range(d):
            ws[j] += r * X[i, j]
        tot += r * r
    inv_b = 1.0 / b
    for j in range(d):
        c = ws[j] * inv_b
        grad[j] = c * theta[d + j]
        grad[d + j] = c * theta[j]
    return 0.5 * tot * inv_b


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad`."""
    d = int(iargs[0])
    u, v = theta[:d], theta[d:]
    i = np.asarray(idx[:b])
    with np.errstate(over="ignore", invalid="ignore"):
        r = X[i] @ (u * v) - y[i] - noise[:b]
        c = X[i].T @ r / b
    grad[:d] = c * v
    grad[d:] = c * u
    return 0.5 * float(r @ r) / b


class DiagNet(Model):
    """The diagonal network ``h(x) = ⟨u ⊙ v, x⟩`` as a :class:`~dyntools.models.base.Model`: ``θ = [u; v]``.

    ``init`` is ``"paper"`` (u₀ = α·1, v₀ = 0) or ``"gaussian"`` (both N(0, init_scale²) from the
    ``diag-net.init`` stream of the seed). The guard's size ``‖θ‖₁ = ‖u‖₁ + ‖v‖₁``.

    Parameters
    ----------
    d : int
        The input dimension (p = 2d parameters).
    init : {"paper", "gaussian"}, default "paper"
        The initialization.
    alpha : float, default 0.1
        α of the "paper" init.
    init_scale : float, default 0.1
        The standard deviation of the "gaussian" init (> 0).
    """

    name = "diag-net"
    head = "regression"
    init_stream = "diag-net.init"
    sampling_stream = "diag-net.sampling"
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, d: int, *, init: str = "paper", alpha: float = 0.1, init_scale: float = 0.1):
        self.d = validation.count("d", d)
        self.init_name = validation.one_of("init", init, INITS)
        self.alpha = validation.finite("alpha", alpha)
        self.init_scale = validation.positive("init_scale", init_scale)

    @property
    def n_params(self) -> int:
        return 2 * self.d

    def kernel_args(self):
        return np.array([self.d], dtype=np.int64), np.zeros(0)

    def workspace_size(self, batch: int) -> int:
        return self.d

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        from dyntools.engine import streams

        gen = streams.path_generators(seed, index + 1, streams.key(self.init_stream))[index]
        u, v = initial_params(self.d, self.init_name, alpha=self.alpha, scale=self.init_scale, rng=gen)
        return np.concatenate([u, v])

    def config(self) -> dict:
        return {"name": self.name, "d": self.d, "init": self.init_name, "alpha": self.alpha,
                "init_scale": self.init_scale}

    def loss(self, theta, X, y) -> float:
        return loss(theta[:self.d], theta[self.d:], X, y)

    def predict(self, theta, X):
        return predict(theta[:self.d], theta[self.d:], X)

    def jacobian(self, theta, X):
        return jacobian(theta[:self.d], theta[self.d:], X)

    def column_norms(self, theta, X):
        return column_norms(theta[..., :self.d], theta[..., self.d:], X)

    def example_grad_norms(self, theta, X):
        return example_grad_norms(theta[..., :self.d], theta[..., self.d:], X)

    def recorded_loss(self, theta_rec, Xs, ys, data_of):
        """The loss at every recording, in the factored form of :func:`loss_factor` (compiled)."""
        return factored_losses(theta_rec, *stacked_factors(zip(Xs, ys)), np.asarray(data_of, dtype=np.int64))


#: :func:`loss_factor` of the data sets seen last, keyed by :func:`_content_key` (most recent last)
_FACTORS: dict[tuple, tuple] = {}
_FACTORS_KEPT = 8


def _content_key(X, y) -> tuple:
    """The shapes, dtypes and a BLAKE2 digest of the bytes of ``X`` and ``y``: equal keys mean equal data, so a
    factor found under it is the one :func:`loss_factor` would compute (an array changed in place gets a new key)."""
    import hashlib

    parts = []
    for a in (np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)):
        parts += [a.shape, hashlib.blake2b(a.view(np.uint8).ravel(), digest_size=16).hexdigest()]
    return tuple(parts)


def cached_loss_factor(X, y) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`loss_factor` computed once per data set and process (the QR of a 1000 × 200 test set costs far
    more than hashing it); the arrays returned are read-only and bitwise those of :func:`loss_factor`."""
    key = _content_key(X, y)
    hit = _FACTORS.pop(key, None)
    if hit is None:
        R, z, c = loss_factor(X, y)
        R.setflags(write=False)
        z.setflags(write=False)
        hit = (R, z, c)
    _FACTORS[key] = hit
    while len(_FACTORS) > _FACTORS_KEPT:
        del _FACTORS[next(iter(_FACTORS))]
    return hit


def stacked_factors(pairs):
    """``(Rᵀ, z, c)`` of :func:`loss_factor` for each ``(X, y)``, stacked (R transposed: the layout the
    column-wise loss evaluation of :func:`factored_loss` reads contiguously). Each factor is computed once
    per data set (:func:`cached_loss_factor`) and only here, i.e. only when the loss is recorded."""
    fac = [cached_loss_factor(X, y) for X, y in pairs]
    return (np.ascontiguousarray(np.stack([f[0].T for f in fac])),
            np.ascontiguousarray(np.stack([f[1] for f in fac])), np.array([f[2] for f in fac]))


@njit(cache=True, fastmath=FASTMATH)
def factored_loss(RT, z, c, beta):
    """``½(‖Rβ − z‖² + c)`` with ``RT = Rᵀ`` (d × k, R upper trapezoidal): the loss ``‖Xβ − y‖²/(2m)``
    of :func:`loss_factor` in about k·d − k²/2 multiply–adds, accumulated column by column
    (``q += β_j R[:, j]``, contiguous in ``RT``) so that the loop vectorizes."""
    d, k = RT.shape
    q = np.empty(k)
    for i in range(k):
        q[i] = -z[i]
    for j in range(d):
        bj = beta[j]
        for i in range(min(j + 1, k)):
            q[i] += RT[j, i] * bj
    tot = 0.0
    for i in range(k):
        tot += q[i] * q[i]
    return 0.5 * (tot + c)


@njit(cache=True, fastmath=FASTMATH)
def factored_losses(theta_rec, RT, z, c, data_of):
    """:func:`factored_loss` at every recording ``theta_rec[p, k] = [u; v]`` (NaN rows stay NaN)."""
    P, K, p2 = theta_rec.shape
    d = p2 // 2
    out = np.full((P, K), np.nan)
    beta = np.empty(d)
    for p in range(P):
        s = data_of[p]
        for k in range(K):
            if not np.isfinite(theta_rec[p, k, 0]):
                continue
            for j in range(d):
                beta[j] = theta_rec[p, k, j] * theta_rec[p, k, d + j]
            out[p, k] = factored_loss(RT[s], z[s], c[s], beta)
    return out
