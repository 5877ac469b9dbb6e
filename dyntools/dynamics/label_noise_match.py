"""SGD ≈ GD with label noise: the matching noise level, and the label-noise SDE of the MLP
(Andriushchenko et al. 2023, seed 004, the conjecture of the "loss stabilization" section).

**The conjecture.** During loss stabilization, SGD with step η behaves like full-batch GD with label
noise of a *constant* intensity δ: ``θ ← θ − η ∇L(θ) + noise`` with the noise of the label-noise step.

**The matching δ** (label noise δ is the *standard deviation* per label, the one meaning of
:mod:`dyntools.dynamics.train` and :mod:`dyntools.dynamics.sde_models`). Write the loss
``L = (c/2n) Σ_i r_i²`` with residuals ``r_i = h_θ(x_i) − y_i`` (``c = 1``: the diagonal network's
½-mean square; ``c = 2``: the MLP's mean square ``(1/n) Σ r_i²``), ``φ = [∇_θ h_θ(x_i)]_i`` (n × p).

* SGD with a batch ``B`` of ``b`` examples drawn uniformly: ``g = (c/b) Σ_{i∈B} r_i ∇h_i``. Its noise
  ``g − ∇L`` has covariance ``(c²/b) [(1/n) Σ_i r_i² ∇h_i ∇h_iᵀ − (1/c²) ∇L ∇Lᵀ]`` (with replacement;
  without it, the finite-population factor ``(n − b)/(n − 1)`` multiplies it, 1 at b = 1).
  During stabilization ∇L is small beside the per-example terms, and if the squared residuals are
  not correlated with the per-example gradient directions, ``Σ_i r_i² ∇h_i∇h_iᵀ ≈ r̄² φᵀφ`` with
  ``r̄² = (1/n) Σ r_i²`` the mean squared residual, so ``Cov_SGD ≈ (c² r̄² / (b n)) φᵀφ``.
* GD with labels ``y_i + δ ξ_i`` (ξ ~ N(0, I_n) fresh): ``g = (c/n) Σ_i (r_i − δ ξ_i) ∇h_i``, noise
  ``−(c δ/n) φᵀ ξ`` with covariance ``(c² δ²/n²) φᵀφ``.

Equating the two: ``δ² = n r̄² / b``, i.e. ``δ = √(n r̄² / b)`` for both losses (c cancels), with
``r̄² = 2L/c`` read off the stabilized loss level L: ``δ = √(2nL)`` for the diagonal network at b = 1,
``δ = √(nL)`` for the MLP. :func:`matching_delta` is this formula; :func:`stabilized_level` reads L as
the mean recorded train loss in a window of the run. The approximation is the seed's own (its noise
covariance is "proportional to φᵀφ" with the loss as factor); where SGD's residuals are uneven, the
directions of its noise differ from label noise even at the matched level, which is part of what
the experiment measures.

**The label-noise SDE of the MLP** (:func:`mlp_label_noise_sde`). For the MLP's mean square loss
``L = (1/n) Σ r_i²``, ``∇L = (2/n) φᵀ r``; label-noise GD at step η is
``θ ← θ − η (2/n) φᵀ r + η (2δ/n) φᵀ ξ``, the Euler–Maruyama step at ``h = η`` of

    dθ = −(2/n) φ_θ(X)ᵀ (h_θ(X) − y) dτ + √(η δ̃) φ_θ(X)ᵀ dB_τ,   δ̃ = (2δ/n)²,   τ = t η,

(:func:`dyntools.dynamics.sde_models.sde_intensity` with ``scale = 2``). Its terms are module-level
numba functions reading the network and the data from ``args``, so they compile once per process
(the general :func:`~dyntools.dynamics.sde_models.label_noise_sde` builds new closures per call and
its drift is that of a ½-loss).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.models.mlp import jacobian_kernel, predict_kernel

#: loss factor c of ``L = (c/2n) Σ r²``: diagonal networks (½-mean square) and the MLP (mean square)
LOSS_FACTOR = {"diag-net": 1.0, "mlp": 2.0}


def matching_delta(mean_sq_residual, n: int, batch: int = 1):
    r"""The label-noise standard deviation ``δ = √(n r̄² / b)`` whose full-batch GD noise has the
    covariance of SGD's with batch ``b`` at mean squared residual ``r̄²`` (module docstring).
    Accepts an array of ``r̄²`` (NaN stays NaN).

    Parameters
    ----------
    mean_sq_residual : float or array_like
        The mean squared residual :math:`\bar r^2` (NaN allowed).
    n : int
        The number of training points.
    batch : int, default 1
        SGD's batch size b.
    """
    n = validation.count("n", n)
    batch = validation.count("batch", batch)
    if batch > n:
        raise ValueError(f"Invalid batch: {batch} (must be <= n = {n})")
    r2 = np.asarray(mean_sq_residual, dtype=np.float64)
    if np.any(r2 < 0):
        raise ValueError("Invalid mean_sq_residual: must be >= 0")
    out = np.sqrt(n * r2 / batch)
    return float(out) if out.ndim == 0 else out


def stabilized_level(steps, train_loss, window=(0.1, 0.5), total: int | None = None) -> np.ndarray:
    """Mean recorded train loss over the recordings with ``window[0]·T ≤ step ≤ window[1]·T``
    (``T = total`` or the last recorded step), per row of ``train_loss`` (…, K); NaN where a row
    has a non-finite value in the window (a diverged run has no stabilized level).

    Parameters
    ----------
    steps : array_like of int, shape (K,)
        The recorded steps.
    train_loss : ndarray, shape (..., K)
        The recorded training losses.
    window : pair of float, default (0.1, 0.5)
        The fractions of T that bound the averaging window.
    total : int, optional
        T (the last recorded step by default).
    """
    steps = np.asarray(steps)
    a, b = (validation.in_interval("window", float(w), 0.0, 1.0, closed_high=True) for w in window)
    if not a < b:
        raise ValueError(f"Invalid window: ({a:g}, {b:g}) (the start must be below the end)")
    T = int(steps[-1]) if total is None else total
    sel = (steps >= a * T) & (steps <= b * T)
    if not sel.any():
        raise ValueError(f"Invalid window: ({a:g}, {b:g}) holds no recording (record more often)")
    vals = np.asarray(train_loss, dtype=np.float64)[..., sel]
    with np.errstate(invalid="ignore"):
        return np.where(np.all(np.isfinite(vals), axis=-1), vals.mean(axis=-1), np.nan)


# ------------------------------------------------------------------ the MLP's label-noise SDE

def mlp_label_noise_sde(layout, X, y, *, eta: float, delta: float):
    """The label-noise SDE of the regression MLP ``layout`` on ``(X, y)`` for step ``eta`` and
    label noise of standard deviation ``delta`` (module docstring; time τ = tη).

    Parameters
    ----------
    layout : MLP
        The regression MLP.
    X, y : ndarray
        The inputs (n, d) and labels (n,).
    eta : float
        The step η.
    delta : float
        The label noise's standard deviation δ.
    """
    from dyntools.dynamics.sde_models import label_noise_sde

    if layout.head != "regression":
        raise ValueError("Invalid layout: the label-noise SDE needs the regression head")
    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    if X.shape != (X.shape[0], layout.widths[0]) or y.shape[0] != X.shape[0]:
        raise ValueError(f"Invalid X: expected ({y.shape[0]}, {layout.widths[0]}) inputs for {y.shape[0]} labels")
    eta = validation.positive("eta", eta)
    delta = validation.non_negative("delta", delta)
    widths, w_off, b_off = layout.arrays()

    @njit
    def model(theta, Xm, h_out, J_out):
        h_out[:] = predict_kernel(theta, Xm, widths, w_off, b_off)
        J_out[:, :] = jacobian_kernel(theta, Xm, widths, w_off, b_off)

    # the general builder, with the MLP's mean-square loss: b = −(2/n) φᵀ(h − y), σ = √(ηδ̃) φᵀ, δ̃ = (2δ/n)²
    return label_noise_sde(model, X, y, layout.n_params, eta, delta, "mlp-label-noise", scale=LOSS_FACTOR["mlp"])


def mlp_drift_np(layout, theta, X, y) -> np.ndarray:
    """NumPy twin of the drift of :func:`mlp_label_noise_sde` (the Jacobian by
    :meth:`~dyntools.models.mlp.MLP.jacobian_np`).

    Parameters
    ----------
    layout : MLP
        The regression MLP.
    theta : ndarray, shape (p,)
        The parameters.
    X, y : ndarray
        The inputs (n, d) and labels (n,).
    """
    J = layout.jacobian_np(theta, X)
    return -2.0 / X.shape[0] * J.T @ (layout.predict(theta, X) - y)
