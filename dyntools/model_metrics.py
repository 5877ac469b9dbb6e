"""Metrics of any model at a parameter vector, through the model protocol's hooks only.

Hooks read (model-agnostic: a built-in model, a user's :class:`~dyntools.models.base.Model`, or a
model compiled from sympy expose the same ones):

* ``jacobian(θ, X)`` → ``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` (n × p) — required for the Jacobian metrics;
* ``features(θ, X)`` → a list of (n × width) hidden activations — optional (feature ranks);
* ``hvp(θ, X, y, v)`` → ``∇²L(θ) v`` — optional; without it the Hessian–vector product is the central
  difference of the gradient kernel, ``(∇L(θ + εv) − ∇L(θ − εv)) / 2ε`` with ``ε = 1e-4 (1 + ‖θ‖) / ‖v‖``
  (exact for a quadratic loss up to rounding; O(ε²) otherwise), the gradient ``∇L`` being the model's
  ``loss_grad_np`` on the whole data set.

:func:`model_metrics` returns the rank of ``φ_θ(X)`` (singular values above ``rank_threshold`` × the
largest), the ℓ0 of a chosen parameter block (``|θ_j| > l0_threshold``), the p column norms of
``φ_θ(X)``, the feature ranks, and the sharpness ``λ_max(∇²L(θ))`` by Lanczos (:func:`lanczos_max`):
``k`` steps of the symmetric Lanczos recurrence with full reorthogonalization, λ_max the largest
Ritz value of the k × k tridiagonal matrix (exact once k reaches the number of distinct eigenvalues).
"""

from __future__ import annotations

import numpy as np

from dyntools import metrics, validation


def gradient(model, theta, X, y) -> np.ndarray:
    """``∇L(θ)`` on the whole data set through the model's NumPy kernel (no label noise)."""
    n = X.shape[0]
    iargs, fargs = model.kernel_args()
    grad = np.empty(model.n_params)
    model.loss_grad_np(np.asarray(theta, dtype=np.float64), X, y, np.arange(n), n, np.zeros(n), grad,
                       np.zeros(model.workspace_size(n)), iargs, fargs)
    return grad


def hessian_vector_product(model, theta, X, y):
    """``v ↦ ∇²L(θ) v``: the model's ``hvp`` hook, else central differences of :func:`gradient`."""
    theta = np.asarray(theta, dtype=np.float64)
    if hasattr(model, "hvp") and callable(model.hvp):
        return lambda v: np.asarray(model.hvp(theta, X, y, v), dtype=np.float64)

    def hvp(v):
        size = np.linalg.norm(v)
        if size == 0.0:
            return np.zeros_like(theta)
        eps = 1e-4 * (1.0 + np.linalg.norm(theta)) / size
        return (gradient(model, theta + eps * v, X, y) - gradient(model, theta - eps * v, X, y)) / (2.0 * eps)

    return hvp


def lanczos_max(matvec, dim: int, *, steps: int = 40, seed: int = 0) -> float:
    """Largest eigenvalue of a symmetric operator from ``steps`` Lanczos steps (full reorthogonalization)."""
    dim = validation.count("dim", dim)
    steps = min(validation.count("steps", steps), dim)
    q = np.random.default_rng(seed).standard_normal(dim)
    Q = np.zeros((steps, dim))
    Q[0] = q / np.linalg.norm(q)
    alpha, beta = np.zeros(steps), np.zeros(steps)
    k = steps
    for j in range(steps):
        w = matvec(Q[j])
        alpha[j] = Q[j] @ w
        w = w - Q[:j + 1].T @ (Q[:j + 1] @ w)        # full reorthogonalization (twice is enough)
        w = w - Q[:j + 1].T @ (Q[:j + 1] @ w)
        if j + 1 == steps:
            break
        beta[j] = np.linalg.norm(w)
        if beta[j] <= 1e-12 * max(1.0, abs(alpha[j])):  # an invariant subspace: the Ritz values are exact
            k = j + 1
            break
        Q[j + 1] = w / beta[j]
    T = np.diag(alpha[:k]) + np.diag(beta[:k - 1], 1) + np.diag(beta[:k - 1], -1)
    return float(np.linalg.eigvalsh(T)[-1])


def model_metrics(model, theta, X, y, *, block: slice | np.ndarray | None = None, l0_threshold: float = 1e-3,
                  rank_threshold: float = 1e-5, lanczos_steps: int = 40, seed: int = 0) -> dict:
    """Metrics of ``model`` at ``theta`` on ``(X, y)`` (see the module docstring). ``block`` selects the
    parameters whose ℓ0 is counted (a slice or index array; default all). Keys: ``jacobian_rank``,
    ``l0``, ``column_norms`` (p,), ``feature_ranks`` (when the model has a features hook), ``sharpness``.

    Parameters
    ----------
    model : Model
        A model with a ``jacobian`` hook (and optionally ``hvp`` and ``features``).
    theta : ndarray, shape (p,)
        The parameters.
    X, y : ndarray
        The data.
    block : slice or ndarray of int, optional
        The parameters whose ℓ0 is counted (all by default).
    l0_threshold : float, default 1e-3
        An entry counts as non-zero above it.
    rank_threshold : float, default 1e-5
        The relative threshold of the ranks.
    lanczos_steps : int, default 40
        Lanczos steps of the sharpness estimate.
    seed : int, default 0
        The seed of the Lanczos start vector.

    Returns
    -------
    dict
        The metrics by name.

    Raises
    ------
    ValueError
        When ``theta`` does not have the model's length.
    """
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (model.n_params,):
        raise ValueError(f"Invalid theta: shape {theta.shape} (expected ({model.n_params},) for model "
                         f"{getattr(model, 'name', type(model).__name__)!r})")
    X = np.asarray(X, dtype=np.float64)
    out: dict = {}
    try:
        J = np.asarray(model.jacobian(theta, X), dtype=np.float64)
    except NotImplementedError:
        J = None
    if J is not None:
        out["jacobian_rank"] = int(metrics.jacobian_rank(J, rel_threshold=rank_threshold))
        out["column_norms"] = metrics.column_norms(J)
    part = theta if block is None else theta[block]
    out["l0"] = int(metrics.l0(part, threshold=l0_threshold))
    try:
        feats = model.features(theta, X)
    except (NotImplementedError, AttributeError):
        feats = None
    if feats is not None:
        out["feature_ranks"] = [int(metrics.jacobian_rank(np.asarray(F), rel_threshold=rank_threshold))
                                for F in feats]
    if getattr(model, "loss_grad_np", None) is not None or hasattr(model, "hvp"):
        out["sharpness"] = lanczos_max(hessian_vector_product(model, theta, X, y), model.n_params,
                                       steps=lanczos_steps, seed=seed)
    return out
