"""The two-layer sigmoid network of the universal approximation theorem, as a model ``dyntools.train`` trains.

For ``x ∈ R^d`` and width ``n``,

    g_θ(x) = A + Σ_{i=1}^{n} v_i σ(w_iᵀ x + b_i),      σ(z) = 1 / (1 + e^{−z}),

the form of Cybenko's theorem as seed 002 states it. Both layers are parameters. **Layout**:
``θ = [W (n × d, row i = w_i), b (n), v (n), A]``, ``p = n(d + 2) + 1``.

**Loss** (regression head): the mean squared error without ½, as the MLP's,
``L(θ) = (1/B) Σ_{q∈B} r_q²`` with ``r_q = g_θ(x_q) − y_q − noise_q``, and its gradient

    ∂L/∂A = (2/B) Σ_q r_q,   ∂L/∂v_i = (2/B) Σ_q r_q s_{qi},
    ∂L/∂b_i = (2/B) Σ_q r_q v_i s_{qi}(1 − s_{qi}),   ∂L/∂w_i = (2/B) Σ_q r_q v_i s_{qi}(1 − s_{qi}) x_q,

with ``s_{qi} = σ(w_iᵀ x_q + b_i)`` (``σ' = σ(1 − σ)``). :func:`loss_grad` is the compiled kernel (one
example at a time: the hidden activations in the scratch ``ws``, then the backward pass) and
:func:`loss_grad_np` its NumPy twin (whole-batch products); the tests hold them equal and both against
finite differences.

**Initialization** (:meth:`SigmoidNet.init`, :func:`switching_layer`): the hidden layer of the universal
approximation study — direction ``u_i`` uniform on the sphere, slope ``k = slope · n^{1/d}``, ``w_i = k u_i``,
``b_i = −w_iᵀ c_i`` with ``c_i`` uniform in [0, 1]^d (every unit switches inside the cube) — and the output
layer ``v = 0, A = 0``, drawn from the ``universal.features`` stream.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from dyntools import validation
from dyntools.engine import streams
from dyntools.models.base import Model


def sigmoid_np(z: np.ndarray) -> np.ndarray:
    """The logistic σ(z) = 1/(1 + e^{−z}) on an array, without overflow (e^{−z} only for z ≥ 0)."""
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


#: σ(z) is exactly 1.0 in float64 for z ≥ SATURATED (e^{−z} < 2^{−53}: 1 + e^{−z} rounds to 1) and exactly 0.0
#: for z ≤ −UNDERFLOW (e^{z} underflows to 0): there the kernel skips the exponential and, as σ' = σ(1 − σ) = 0,
#: the unit's share of the backward pass — the same bits as computing them.
SATURATED = 37.0
UNDERFLOW = 746.0


@njit(cache=True, inline="always")
def _sigmoid(z):
    if z >= SATURATED:
        return 1.0
    if z <= -UNDERFLOW:
        return 0.0
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """``(1/b) Σ_q r_q²`` and its gradient (module docstring) over the examples ``idx[:b]``; ``iargs = [d, n]``,
    ``ws`` holds the ``n`` hidden activations of the current example. A saturated unit (σ exactly 0 or 1,
    :data:`SATURATED`) adds nothing to ``∂L/∂w_i, ∂L/∂b_i`` and is skipped there."""
    d, n = iargs[0], iargs[1]
    ob, ov, oa = n * d, n * d + n, n * d + 2 * n
    for j in range(grad.shape[0]):
        grad[j] = 0.0
    total = 0.0
    for q in range(b):
        i = idx[q]
        g = theta[oa]
        for u in range(n):
            z = theta[ob + u]
            for k in range(d):
                z += theta[u * d + k] * X[i, k]
            s = _sigmoid(z)
            ws[u] = s
            g += theta[ov + u] * s
        r = g - y[i] - noise[q]
        total += r * r
        grad[oa] += r
        for u in range(n):
            s = ws[u]
            if s == 0.0:
                continue
            grad[ov + u] += r * s
            if s == 1.0:
                continue
            dz = r * theta[ov + u] * s * (1.0 - s)
            grad[ob + u] += dz
            for k in range(d):
                grad[u * d + k] += dz * X[i, k]
    c = 2.0 / b
    for j in range(grad.shape[0]):
        grad[j] *= c
    return total / b


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad` (whole-batch products)."""
    d, n = int(iargs[0]), int(iargs[1])
    W, bias, v, A = unpack(theta, d, n)
    i = np.asarray(idx[:b])
    S = sigmoid_np(X[i] @ W.T + bias)                     # (b, n)
    r = S @ v + A - y[i] - noise[:b]
    dZ = (r[:, None] * v) * S * (1.0 - S)
    c = 2.0 / b
    grad[:n * d] = c * (dZ.T @ X[i]).ravel()
    grad[n * d:n * d + n] = c * dZ.sum(axis=0)
    grad[n * d + n:n * d + 2 * n] = c * (S.T @ r)
    grad[-1] = c * r.sum()
    return float(r @ r / b)


@njit(cache=True, parallel=True)
def forward(theta, X, d, n, out):
    """``out[i] = g_θ(X[i])`` for every row of ``X`` (in parallel over the rows; saturated units skip the
    exponential as in :func:`loss_grad`)."""
    ob, ov, oa = n * d, n * d + n, n * d + 2 * n
    for i in prange(X.shape[0]):
        g = theta[oa]
        for u in range(n):
            z = theta[ob + u]
            for k in range(d):
                z += theta[u * d + k] * X[i, k]
            g += theta[ov + u] * _sigmoid(z)
        out[i] = g


def forward_np(theta, X, d, n, out):
    """NumPy twin of :func:`forward`."""
    W, b, v, A = unpack(theta, d, n)
    out[:] = sigmoid_np(X @ W.T + b) @ v + A


def unpack(theta: np.ndarray, d: int, n: int):
    """Views ``(W (n, d), b (n,), v (n,), A)`` of a flat parameter vector."""
    theta = np.asarray(theta)
    return (theta[:n * d].reshape(n, d), theta[n * d:n * d + n], theta[n * d + n:n * d + 2 * n],
            float(theta[n * d + 2 * n]))


def pack(W: np.ndarray, b: np.ndarray, v: np.ndarray, A: float) -> np.ndarray:
    """The flat vector of :func:`unpack`'s pieces."""
    return np.concatenate([np.asarray(W, dtype=np.float64).ravel(), b, v, [float(A)]])


def switching_layer(d: int, n: int, rng: np.random.Generator, slope: float) -> tuple[np.ndarray, np.ndarray]:
    """A random hidden layer whose units switch inside [0, 1]^d (module docstring): ``W (n, d)``, ``b (n,)``;
    draws ``n × d`` normals, then ``n × d`` uniforms, from ``rng``."""
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    W = slope * n ** (1.0 / d) * u
    c = rng.uniform(0.0, 1.0, size=(n, d))
    return W, -np.sum(W * c, axis=1)


class SigmoidNet(Model):
    """``g_θ(x) = A + Σ v_i σ(w_iᵀx + b_i)`` with ``d`` inputs and ``width`` hidden units (module docstring)."""

    name = "sigmoid-net"
    head = "regression"
    init_stream = "universal.features"
    sampling_stream = "mlp.sampling"    # the MLP's purpose, kept so that earlier results replay
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, d: int, width: int, *, slope: float = 4.0):
        self.d = validation.count("d", d)
        self.width = validation.count("width", width)
        self.slope = validation.positive("slope", slope)

    @property
    def n_params(self) -> int:
        return self.width * (self.d + 2) + 1

    def kernel_args(self):
        return np.array([self.d, self.width], dtype=np.int64), np.zeros(0)

    def workspace_size(self, batch: int) -> int:
        return self.width

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """:func:`switching_layer` from stream ``index`` of ``(universal.features, d, width)``, output layer 0."""
        rng = streams.path_generators(seed, index + 1, streams.key(self.init_stream), self.d, self.width)[index]
        W, b = switching_layer(self.d, self.width, rng, self.slope)
        return pack(W, b, np.zeros(self.width), 0.0)

    def config(self) -> dict:
        return {"name": self.name, "d": self.d, "width": self.width, "slope": self.slope}

    def predict(self, theta, X, *, kernel: str = "numba") -> np.ndarray:
        """``g_θ(X)`` for the rows of ``X`` (m, d): :func:`forward`, or its twin with ``kernel="numpy"``."""
        X = np.ascontiguousarray(X, dtype=np.float64).reshape(-1, self.d)
        out = np.empty(X.shape[0])
        fn = forward if validation.one_of("kernel", kernel, ("numba", "numpy")) == "numba" else forward_np
        fn(np.ascontiguousarray(theta, dtype=np.float64), X, self.d, self.width, out)
        return out

    def loss(self, theta, X, y) -> float:
        r = self.predict(theta, X) - np.asarray(y)
        return float(r @ r / r.size)
