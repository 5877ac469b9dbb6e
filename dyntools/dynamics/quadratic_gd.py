"""Gradient descent on a quadratic, the textbook facts of seed 004's "toy model" section.

For ``F(β) = ‖Xβ − y‖²`` the Hessian is ``H = 2XᵀX`` (this convention: no ½ in F, so the
Hessian carries the factor 2). GD ``β ← β − η∇F(β)`` moves the error ``e = β − β̂`` by
``e ← (I − ηH) e``; along an eigenvector with eigenvalue λ the factor is ``1 − ηλ``. Hence

* ``η < 2/λ_max``: every factor is in (−1, 1) → converges;
* ``η = 2/λ_max``: the top factor is exactly −1 → a period-2 bounce of constant amplitude;
* ``η > 2/λ_max``: ``|1 − ηλ_max| > 1`` → diverges.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation


def hessian_lambda_max(X: np.ndarray) -> float:
    """``λ_max(2XᵀX) = 2 σ_max(X)²``."""
    return 2.0 * float(np.linalg.norm(np.asarray(X, dtype=np.float64), 2) ** 2)


def gd_quadratic(X, y, eta: float, steps: int, beta0=None):
    """GD on ``‖Xβ − y‖²`` through :func:`dyntools.train` (model
    :class:`~dyntools.models.least_squares.LeastSquares`, full batch, plain SGD at step η).

    Returns the :class:`~dyntools.engine.result.RunResult`; ``result["train_loss"][0, 0]`` is the loss
    at every step 0 … ``steps`` (NaN after a divergence, reported in ``diverged_at``)."""
    from dyntools.dynamics.train import train
    from dyntools.models.least_squares import LeastSquares
    from dyntools.optim import optimizers as O

    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"Invalid y: length {y.shape[0]} does not match X's {X.shape[0]} rows")
    eta = validation.positive("eta", eta)
    steps = validation.count("steps", steps)
    return train(LeastSquares(X.shape[1]), _Data(X, y), O.sgd(eta), steps=steps, sampler="full",
                 record_steps=np.arange(steps + 1), theta0=beta0)


class _Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


def classify_gd(X, y, factors=(0.5, 0.9, 1.0, 1.1), steps: int = 400) -> list[dict]:
    """Run GD at ``η = factor · 2/λ_max`` and classify each run from its excess loss.

    The excess loss ``F(β_t) − min F`` decays geometrically (converges), settles at a positive
    constant with the two interleaved subsequences equal (period-2 bounce), or grows (diverges).
    """
    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    lam = hessian_lambda_max(X)
    beta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    f_min = float(np.sum((X @ beta_hat - y) ** 2))
    rows = []
    for factor in factors:
        eta = float(factor) * 2.0 / lam
        losses = gd_quadratic(X, y, eta, steps)["train_loss"][0, 0]
        excess = losses - f_min
        first, last = excess[0], excess[-1]
        if not np.isfinite(last) or last > 10 * max(first, 1e-300):
            verdict = "diverges"
        elif last < 1e-10 * max(first, 1e-300):
            verdict = "converges"
        elif abs(excess[-1] - excess[-3]) <= 1e-6 * excess[-1]:
            verdict = "period-2 bounce"
        else:
            verdict = "undecided"
        rows.append({"eta_over_2_div_lambda_max": float(factor), "eta": eta, "lambda_max": lam,
                     "excess_loss_start": float(first), "excess_loss_end": float(last), "verdict": verdict})
    return rows
