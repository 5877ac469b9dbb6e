"""Linear least squares ``F(β) = ‖Xβ − y‖²`` as a model: GD on a quadratic (seed 004's textbook facts).

With this convention (no ½, a sum over the examples) the Hessian is ``H = 2XᵀX`` and the gradient
``∇F = 2Xᵀ(Xβ − y)``; GD ``β ← β − η∇F`` is stable iff ``η < 2/λ_max(H)`` (see
:func:`dyntools.dynamics.quadratic_gd.classify_gd`). On a mini-batch ``B`` the loss is
``Σ_{i∈B} (⟨x_i, β⟩ − y_i − noise_i)²`` (``reduction="sum"``) or that sum over ``|B|`` (``"mean"``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.models.base import Model


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """``c Σ_q r_q²`` and ``2c Σ_q r_q x_i`` with ``r_q = ⟨x_i, β⟩ − y_i − noise_q``, ``c = fargs[0]``."""
    d = theta.shape[0]
    for j in range(d):
        grad[j] = 0.0
    tot = 0.0
    for q in range(b):
        i = idx[q]
        r = -y[i] - noise[q]
        for j in range(d):
            r += X[i, j] * theta[j]
        tot += r * r
        for j in range(d):
            grad[j] += r * X[i, j]
    c = fargs[0]
    for j in range(d):
        grad[j] *= 2.0 * c
    return c * tot


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad`."""
    i = np.asarray(idx[:b])
    r = X[i] @ theta - y[i] - noise[:b]
    grad[:] = 2.0 * fargs[0] * (X[i].T @ r)
    return float(fargs[0] * (r @ r))


class LeastSquares(Model):
    """``h(x) = ⟨β, x⟩`` with the square loss of the module docstring; ``init`` is β = 0."""

    name = "least-squares"
    head = "regression"
    sampling_stream = "mlp.sampling"    # the MLP's purpose, kept so that earlier results replay (init draws nothing)
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, d: int, *, reduction: str = "sum", batch: int = 1):
        self.d = validation.count("d", d)
        self.reduction = validation.one_of("reduction", reduction, ("sum", "mean"))
        self.batch = validation.count("batch", batch)

    @property
    def n_params(self) -> int:
        return self.d

    def kernel_args(self):
        return np.zeros(0, dtype=np.int64), np.array([1.0 if self.reduction == "sum" else 1.0 / self.batch])

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        return np.zeros(self.d)

    def config(self) -> dict:
        return {"name": self.name, "d": self.d, "reduction": self.reduction}

    def loss(self, theta, X, y) -> float:
        r = np.asarray(X) @ np.asarray(theta) - np.asarray(y)
        scale = 1.0 if self.reduction == "sum" else 1.0 / self.batch
        return float(scale * (r @ r))

    def predict(self, theta, X):
        return np.asarray(X) @ np.asarray(theta)

    def jacobian(self, theta, X):
        return np.asarray(X, dtype=np.float64).copy()
