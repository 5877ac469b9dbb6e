"""Metrics of sparse feature learning, written once and reused by every model.

Model-specific code supplies the matrices (e.g. a Jacobian ``φ_θ(X)``); the functions here only
measure them.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.docstrings import with_sections


def singular_values(matrices: np.ndarray) -> np.ndarray:
    """Singular values (descending) of a matrix ``(n, p)`` or a stack ``(k, n, p)``.

    Parameters
    ----------
    matrices : array_like, shape (n, p) or (k, n, p)
        One matrix or a stack (one SVD call for the stack).

    Returns
    -------
    ndarray, shape (min(n, p),) or (k, min(n, p))
    """
    return np.linalg.svd(np.asarray(matrices, dtype=np.float64), compute_uv=False)


def jacobian_rank(matrices: np.ndarray, rel_threshold: float = 1e-5) -> np.ndarray | int:
    """Numerical rank: the number of singular values ``σ_i > rel_threshold · σ_max``.

    ``matrices`` is one ``(n, p)`` Jacobian ``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` or a stack ``(k, n, p)``
    (e.g. one per recorded step; batched in one LAPACK call). A zero matrix has rank 0.

    Parameters
    ----------
    matrices : array_like, shape (n, p) or (k, n, p)
        The Jacobian(s).
    rel_threshold : float, default 1e-5
        The relative cut, in (0, 1].

    Returns
    -------
    int or ndarray of int64
        One rank, or one per matrix of the stack.
    """
    rel_threshold = validation.in_interval("rel_threshold", rel_threshold, 0.0, 1.0,
                                           closed_low=False, closed_high=True)
    s = singular_values(matrices)
    top = s[..., :1]
    ranks = np.sum(s > rel_threshold * top, axis=-1) * (top[..., 0] > 0)
    return int(ranks) if np.ndim(ranks) == 0 else ranks.astype(np.int64)


#: Levels at which runs summarize the distribution of column norms / per-example gradient norms.
NORM_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


#: the sections of :func:`column_norms` and :func:`example_grad_norms` (``{shape}``: the result's)
_JACOBIAN_NORMS = """Parameters
----------
jacobians : array_like, shape (n, p) or (..., n, p)
    The Jacobian :math:`φ_θ(X)` (rows: examples, columns: parameters), or a stack of them.

Returns
-------
ndarray, shape {shape}
"""


def _l2_norms(jacobians, axis: int) -> np.ndarray:
    """``(Σ x²)^{1/2}`` of ``jacobians`` (as float64) along ``axis``."""
    return np.sqrt(np.sum(np.square(np.asarray(jacobians, dtype=np.float64)), axis=axis))


@with_sections(_JACOBIAN_NORMS, shape="(p,) or (..., p)")
def column_norms(jacobians: np.ndarray) -> np.ndarray:
    """ℓ2 norms of the columns of ``φ_θ(X)`` (n × p, or a stack (..., n, p)): entry ``j`` is
    ``(Σ_i (∂h(x_i)/∂θ_j)²)^{1/2}``, how much parameter ``j`` moves the predictions on X. The
    label-noise conjecture of Andriushchenko et al. (2023) is that SGD's noise drives these down."""
    return _l2_norms(jacobians, -2)


@with_sections(_JACOBIAN_NORMS, shape="(n,) or (..., n)")
def example_grad_norms(jacobians: np.ndarray) -> np.ndarray:
    """Per-example gradient norms ``‖∇_θ h(x_i)‖₂``: the ℓ2 norms of the rows of ``φ_θ(X)``.
    ``Σ_j column_norms² = Σ_i example_grad_norms² = ‖φ_θ(X)‖_F²``."""
    return _l2_norms(jacobians, -1)


def norm_quantiles(values: np.ndarray) -> np.ndarray:
    """The :data:`NORM_QUANTILES` of ``values`` along the last axis (shape (..., len(NORM_QUANTILES))).

    Parameters
    ----------
    values : array_like, shape (..., m)
        Norms (or any values) whose distribution along the last axis is summarized.
    """
    return np.moveaxis(np.quantile(np.asarray(values, dtype=np.float64), NORM_QUANTILES, axis=-1), 0, -1)


#: Below this relative threshold on σ the Gram route (eigenvalues of φφᵀ, i.e. σ²) loses accuracy
#: (σ² is resolved to ~1e-16·σ_max²), so :func:`gram_rank` falls back to an SVD of the factor.
GRAM_MIN_THRESHOLD = 1e-6


def gram_rank(grams: np.ndarray, rel_threshold: float = 1e-5) -> np.ndarray | int:
    """Rank of ``φ`` from its Gram matrix ``φφᵀ`` (one (n, n) or a stack (k, n, n)).

    The singular values of ``φ`` are ``σ_i = √λ_i(φφᵀ)``, so the count is that of eigenvalues
    ``λ_i > rel_threshold² · λ_max`` — the same rule as :func:`jacobian_rank`, at the cost of an
    n × n symmetric eigenproblem instead of an n × p SVD. Valid for ``rel_threshold ≥``
    :data:`GRAM_MIN_THRESHOLD` (σ² is resolved to ~1e-16 relative); smaller thresholds raise.

    Parameters
    ----------
    grams : array_like, shape (n, n) or (k, n, n)
        Symmetric positive semi-definite Gram matrices :math:`φφ^T`.
    rel_threshold : float, default 1e-5
        The relative cut on σ, in [GRAM_MIN_THRESHOLD, 1].

    Raises
    ------
    ValueError
        When ``rel_threshold`` is below :data:`GRAM_MIN_THRESHOLD`.
    """
    rel_threshold = validation.in_interval("rel_threshold", rel_threshold, GRAM_MIN_THRESHOLD, 1.0,
                                           closed_low=True, closed_high=True)
    lam = np.linalg.eigvalsh(np.asarray(grams, dtype=np.float64))
    top = lam[..., -1:]
    ranks = np.sum(lam > rel_threshold**2 * top, axis=-1) * (top[..., 0] > 0)
    return int(ranks) if np.ndim(ranks) == 0 else ranks.astype(np.int64)


def l0(beta: np.ndarray, threshold: float = 1e-3) -> np.ndarray | int:
    """Feature sparsity ``‖β‖₀``: the number of entries with ``|β_j| > threshold`` (last axis).

    Parameters
    ----------
    beta : array_like, shape (..., d)
        Coefficients.
    threshold : float, default 1e-3
        Entries of magnitude above it count (≥ 0).
    """
    threshold = validation.non_negative("l0_threshold", threshold)
    out = np.sum(np.abs(np.asarray(beta)) > threshold, axis=-1)
    return int(out) if np.ndim(out) == 0 else out.astype(np.int64)


def l1(beta: np.ndarray) -> np.ndarray | float:
    """``‖β‖₁`` over the last axis.

    Parameters
    ----------
    beta : array_like, shape (..., d)
        Coefficients.
    """
    out = np.sum(np.abs(np.asarray(beta, dtype=np.float64)), axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def support_recovery(beta: np.ndarray, beta_star: np.ndarray, threshold: float = 1e-3) -> tuple:
    r"""Precision and recall of the estimated support ``{j : |β_j| > threshold}`` against
    ``supp β* = {j : β*_j ≠ 0}`` (last axis; ``beta_star`` broadcasts).

    .. math:: \mathrm{precision} = \frac{|\hat S \cap S^*|}{|\hat S|}, \qquad
              \mathrm{recall} = \frac{|\hat S \cap S^*|}{|S^*|}

    (each 1 when its denominator's set is empty).

    Parameters
    ----------
    beta : array_like, shape (..., d)
        The estimated coefficients :math:`\beta`.
    beta_star : array_like, shape (d,) or (..., d)
        The true coefficients :math:`\beta^*`; broadcast against ``beta``.
    threshold : float, default 1e-3
        A coefficient counts as non-zero when its magnitude exceeds it (≥ 0).

    Returns
    -------
    tuple
        ``(precision, recall)``: floats, or arrays over the leading axes of ``beta``.
    """
    threshold = validation.non_negative("l0_threshold", threshold)
    est = np.abs(np.asarray(beta)) > threshold
    true = np.asarray(beta_star) != 0
    hits = np.sum(est & true, axis=-1)
    n_est = np.sum(est, axis=-1)
    n_true = np.sum(np.broadcast_to(true, est.shape), axis=-1)
    precision = np.where(n_est > 0, hits / np.maximum(n_est, 1), 1.0)
    recall = np.where(n_true > 0, hits / np.maximum(n_true, 1), 1.0)
    if np.ndim(precision) == 0:
        return float(precision), float(recall)
    return precision, recall


def balancedness(u: np.ndarray, v: np.ndarray) -> np.ndarray | float:
    """``‖|u| − |v|‖₂`` over the last axis (0 for a balanced diagonal network; gradient flow
    conserves ``u² − v²`` coordinate-wise, so any drift measures the discreteness/noise of the steps).

    Parameters
    ----------
    u, v : array_like, shape (..., d)
        The two factors of a diagonal network :math:`β = u ⊙ v`.
    """
    out = np.linalg.norm(np.abs(np.asarray(u)) - np.abs(np.asarray(v)), axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def power_iteration(matvec, dim: int, *, iters: int = 200, tol: float = 1e-7, seed: int = 0,
                    shift: float = 0.0) -> tuple[float, int]:
    r"""Dominant eigenvalue (largest ``|λ|``) of the symmetric operator ``x ↦ matvec(x) − shift·x``.

    Returns ``(λ, iterations)`` with λ the Rayleigh quotient ``xᵀAx`` at the last unit vector;
    stops when it changes by less than ``tol·|λ|``. (One operator: :func:`power_iteration_batch`.)

    Parameters
    ----------
    matvec : callable
        ``matvec(x)`` returns :math:`Ax` for a vector ``x`` of length ``dim``.
    dim : int
        The dimension of the operator.
    iters : int, default 200
        The largest number of iterations.
    tol : float, default 1e-7
        The relative change of λ at which it stops.
    seed : int, default 0
        Seed of the random unit start vector.
    shift : float, default 0.0
        Iterate on :math:`A - \mathrm{shift}\, I`.
    """
    lam, used, _ = power_iteration_batch(lambda Z, rows: matvec(Z[0])[None, :], dim, 1, iters=iters, tol=tol,
                                         seed=seed, shift=shift)
    return float(lam[0]), int(used[0])


def start_vectors(batch: int, dim: int, seed: int, groups=None) -> np.ndarray:
    """Random unit start vectors (batch × dim) of :func:`power_iteration_batch`: ``default_rng(seed)``'s, or with
    ``groups`` those of ``default_rng(seed + g)`` for the rows labelled ``g``, in order.

    Parameters
    ----------
    batch : int
        The number of vectors (rows).
    dim : int
        Their dimension.
    seed : int
        Seed of the generator (of group 0's with ``groups``).
    groups : array_like of int, optional
        A label ``g ≥ 0`` per row; the rows of group ``g`` take, in order, the first vectors of
        ``default_rng(seed + g)``: the vectors a batch of that group alone would start from.
    """
    if groups is None:
        Z = np.random.default_rng(seed).standard_normal((batch, dim))
    else:
        groups = np.asarray(groups)
        if groups.shape != (batch,) or (groups < 0).any():
            raise ValueError(f"Invalid groups: expected {batch} labels >= 0, got shape {groups.shape}")
        Z = np.empty((batch, dim))
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            Z[rows] = np.random.default_rng(seed + int(g)).standard_normal((rows.size, dim))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def power_iteration_batch(matvec, dim: int, batch: int, *, iters: int = 200, tol: float = 1e-7, seed: int = 0,
                          shift=0.0, groups=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Power iteration on ``batch`` symmetric operators at once (e.g. one Hessian per recorded step).

    ``matvec(Z, rows)`` returns ``A_r z_r`` for each row ``z_r`` of ``Z`` (k × dim), operator ``r``
    taken from the index array ``rows``; only the operators that have not converged are passed, so a
    batch costs what its slowest member costs, in matrix products rather than a Python loop.
    ``shift`` (scalar or one per operator) iterates on ``A − shift·I``. Each operator stops when its
    Rayleigh quotient changes by less than ``tol·|λ|`` (or its image is 0: λ = 0).

    Returns ``(λ, iterations, converged)`` arrays of length ``batch``; where ``converged`` is False
    the last Rayleigh quotient after ``iters`` iterations is returned.

    Parameters
    ----------
    matvec : callable
        ``matvec(Z, rows)`` returns the products of the operators ``rows`` with the rows of ``Z``.
    dim : int
        The dimension of the operators.
    batch : int
        The number of operators.
    iters : int, default 200
        The largest number of iterations.
    tol : float, default 1e-7
        The relative change of λ at which an operator stops.
    seed : int, default 0
        Seed of the random unit start vectors.
    shift : float or array_like, default 0.0
        One shift for all operators or one per operator.
    groups : array_like of int, optional
        A label ``g ≥ 0`` per operator: the operators of group ``g`` start, in order, from the vectors
        ``default_rng(seed + g)`` draws for them, as a batch of that group alone would with seed ``seed + g``
        (several batches stacked into one call start where each would alone: fewer, larger products).
    """
    dim = validation.count("dim", dim)
    batch = validation.count("batch", batch)
    iters = validation.count("iters", iters)
    shift = np.broadcast_to(np.asarray(shift, dtype=np.float64), (batch,))
    Z = start_vectors(batch, dim, seed, groups)
    lam = np.zeros(batch)
    used = np.full(batch, iters, dtype=np.int64)
    converged = np.zeros(batch, dtype=bool)
    active = np.arange(batch)
    for it in range(1, iters + 1):
        z = Z[active]
        az = matvec(z, active) - shift[active, None] * z
        new = np.einsum("ij,ij->i", z, az)
        norm = np.linalg.norm(az, axis=1)
        zero = norm == 0.0
        stop = zero | ((it > 1) & (np.abs(new - lam[active]) <= tol * np.abs(new)))
        lam[active] = np.where(zero, 0.0, new)
        Z[active] = az / np.where(zero, 1.0, norm)[:, None]
        converged[active[stop]] = True
        used[active[stop]] = it
        active = active[~stop]
        if active.size == 0:
            break
    return lam, used, converged


def sharpness(hvp, dim: int, *, iters: int = 200, tol: float = 1e-7, seed: int = 0) -> float:
    """``λ_max`` (largest algebraic eigenvalue) of a symmetric Hessian given only by its
    Hessian–vector products ``hvp(x)``, by power iteration (no dense matrix).

    Power iteration finds the eigenvalue of largest magnitude ``μ``; if it is negative, a second
    run on ``H − μI`` (whose spectrum is ``λ − μ ≥ 0``) finds ``λ_max − μ``. Compare with ``2/η``:
    GD on a quadratic is stable iff ``η < 2/λ_max``. (Many Hessians at once: :func:`sharpness_batch`.)

    Parameters
    ----------
    hvp : callable
        ``hvp(x)`` returns the Hessian–vector product :math:`Hx`.
    dim : int
        The number of parameters.
    iters : int, default 200
        The largest number of power iterations per run.
    tol : float, default 1e-7
        The relative change of λ at which a run stops.
    seed : int, default 0
        Seed of the random start vector.
    """
    lam, _ = sharpness_batch(lambda Z, rows: hvp(Z[0])[None, :], dim, 1, iters=iters, tol=tol, seed=seed)
    return float(lam[0])


def sharpness_batch(hvp, dim: int, batch: int, *, iters: int = 200, tol: float = 1e-7,
                    seed: int = 0, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """``λ_max`` of ``batch`` symmetric Hessians given by batched products ``hvp(Z, rows)`` (the
    form of :func:`power_iteration_batch`), with the shifted second run of :func:`sharpness` for
    those whose dominant eigenvalue is negative. Returns ``(λ_max, converged)``.

    Parameters
    ----------
    hvp : callable
        ``hvp(Z, rows)``: the products of Hessians ``rows`` with the rows of ``Z``.
    dim : int
        The number of parameters.
    batch : int
        The number of Hessians.
    iters, tol
        As in :func:`sharpness`.
    seed : int, default 0
        Seed of the random start vectors (the shifted run uses ``seed + 1``).
    groups : array_like of int, optional
        As in :func:`power_iteration_batch` (the shifted run takes the labels of its operators).
    """
    mu, _, converged = power_iteration_batch(hvp, dim, batch, iters=iters, tol=tol, seed=seed, groups=groups)
    out = mu.copy()
    neg = np.flatnonzero(mu < 0)
    if neg.size:
        lam, _, conv = power_iteration_batch(lambda Z, rows: hvp(Z, neg[rows]), dim, neg.size, iters=iters,
                                             tol=tol, seed=seed + 1, shift=mu[neg],
                                             groups=None if groups is None else np.asarray(groups)[neg])
        out[neg] = lam + mu[neg]
        converged[neg] &= conv
    return out, converged


# ============================================================================================
# ReLU networks (issue 7, seed 004): feature sparsity coefficient and 1-D kinks
# ============================================================================================

def _threshold(name: str, value: float) -> float:
    return validation.in_interval(name, value, 0.0, 1.0, closed_low=False, closed_high=True)


def merge_correlated(features: np.ndarray, threshold: float = 0.99) -> np.ndarray:
    """Indices of the neurons kept after merging highly correlated ones.

    ``features`` is (n, m): column ``j`` is neuron ``j``'s activation vector over the data. Neurons
    never active (all zero) are dropped. The rest are scanned in order and neuron ``j`` is dropped
    when ``|corr(j, k)| > threshold`` for some other neuron ``k`` still kept, so each group of
    mutually correlated neurons counts once (its last member is kept). Neurons with a constant
    activation vector have no correlation and are never merged.

    Parameters
    ----------
    features : array_like, shape (n, m)
        Activations of ``m`` neurons over ``n`` examples.
    threshold : float, default 0.99
        Correlation above which two neurons merge, in (0, 1].

    Returns
    -------
    ndarray of int
        The indices of the kept neurons, increasing.

    Raises
    ------
    ValueError
        When ``features`` is not two-dimensional or ``threshold`` is outside (0, 1].
    """
    threshold = _threshold("correlation threshold", threshold)
    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError(f"Invalid features: expected an (n, m) array, got shape {F.shape}")
    active = np.flatnonzero(np.any(F != 0.0, axis=0))
    if active.size < 2:
        return active
    C = F[:, active] - F[:, active].mean(axis=0)
    norms = np.linalg.norm(C, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (C.T @ C) / np.outer(norms, norms)
    close = np.abs(np.nan_to_num(corr, nan=0.0)) > threshold
    np.fill_diagonal(close, False)
    alive = np.ones(active.size, dtype=bool)
    for j in range(active.size):
        if np.any(close[j] & alive):
            alive[j] = False
    return active[alive]


def feature_sparsity(features: np.ndarray, threshold: float = 0.99, *, normalize: bool = True) -> float:
    """Feature sparsity coefficient of one hidden layer (Andriushchenko et al. 2023):

        (# non-zero entries of Φ restricted to the distinct neurons) / (n · m),

    where ``Φ`` (n, m) holds the layer's activations over the training set and the *distinct*
    neurons are those left by :func:`merge_correlated` (correlation > ``threshold`` merges).
    With ``normalize`` (the paper's choice) every example's activation vector is scaled to unit
    norm before correlations are taken (zero rows stay zero). In [0, 1]; lower is sparser.

    Parameters
    ----------
    features : array_like, shape (n, m)
        The layer's activations :math:`Φ` over the training set.
    threshold : float, default 0.99
        Correlation above which two neurons merge, in (0, 1].
    normalize : bool, default True
        Scale each example's activation vector to unit norm first (the paper's choice).

    Raises
    ------
    ValueError
        When ``features`` is not a non-empty two-dimensional array.
    """
    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 2 or F.size == 0:
        raise ValueError(f"Invalid features: expected a non-empty (n, m) array, got shape {F.shape}")
    if normalize:
        norms = np.linalg.norm(F, axis=1, keepdims=True)
        F = np.divide(F, norms, out=np.zeros_like(F), where=norms > 0)
    kept = merge_correlated(F, threshold)
    return float(np.count_nonzero(F[:, kept]) / F.size)


def kinks_1d(w, b, a, *, lo: float = -np.inf, hi: float = np.inf, merge_tol: float = 1e-3,
             jump_tol: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    r"""Distinct kinks of the 1-D predictor ``h(x) = Σ_j a_j σ(w_j x + b_j) (+ c)``.

    Neuron ``j`` with ``w_j ≠ 0`` bends ``h`` at ``x_j = −b_j / w_j``, where the slope jumps by
    ``a_j |w_j|``. Kinks in ``[lo, hi]`` closer than ``merge_tol · (span of the kinks, at least 1)``
    are merged (their jumps add up); a merged kink counts when its total jump exceeds
    ``jump_tol · max_j |a_j w_j|``. Returns the kink locations and their slope jumps.

    Parameters
    ----------
    w, b, a : array_like, shape (m,)
        Input weights, biases and output weights of the ``m`` hidden ReLU neurons.
    lo, hi : float, default -inf, inf
        The interval of ``x`` in which kinks are counted.
    merge_tol : float, default 1e-3
        Kinks closer than this fraction of their span merge (> 0).
    jump_tol : float, default 1e-3
        A kink counts when its slope jump exceeds this fraction of :math:`\max_j |a_j w_j|` (> 0).

    Returns
    -------
    locations, jumps : ndarray
        The kinks' positions (increasing) and slope jumps.
    """
    w, b, a = (np.asarray(v, dtype=np.float64).ravel() for v in (w, b, a))
    if not (w.shape == b.shape == a.shape):
        raise ValueError("Invalid kinks_1d input: w, b and a need the same length")
    validation.positive("merge_tol", merge_tol)
    validation.positive("jump_tol", jump_tol)
    nz = w != 0.0
    loc = -b[nz] / w[nz]
    jump = a[nz] * np.abs(w[nz])
    inside = (loc >= lo) & (loc <= hi)
    loc, jump = loc[inside], jump[inside]
    if loc.size == 0:
        return loc, jump
    order = np.argsort(loc)
    loc, jump = loc[order], jump[order]
    span = max(1.0, float(loc[-1] - loc[0]))
    group = np.concatenate([[0], np.cumsum(np.diff(loc) > merge_tol * span)])
    g_loc = np.array([loc[group == g].mean() for g in range(group[-1] + 1)])
    g_jump = np.bincount(group, weights=jump)
    scale = float(np.max(np.abs(a * w))) if a.size else 0.0
    keep = np.abs(g_jump) > jump_tol * scale
    return g_loc[keep], g_jump[keep]


def n_kinks_1d(w, b, a, **kwargs) -> int:
    """The number of distinct kinks (see :func:`kinks_1d`).

    Parameters
    ----------
    w, b, a : array_like, shape (m,)
        Input weights, biases and output weights of the hidden neurons.
    **kwargs
        ``lo``, ``hi``, ``merge_tol``, ``jump_tol`` of :func:`kinks_1d`.
    """
    return int(kinks_1d(w, b, a, **kwargs)[0].size)


def jacobian_rank_gram(matrix: np.ndarray, rel_threshold: float = 1e-5) -> int:
    """:func:`jacobian_rank` of one (n, p) matrix computed through :func:`gram_rank` of its smaller
    Gram matrix (``J Jᵀ`` or ``Jᵀ J``): an eigenproblem of size min(n, p) instead of an SVD, which
    is much faster under a threaded BLAS on a busy machine. Thresholds below
    :data:`GRAM_MIN_THRESHOLD`, which the Gram route cannot resolve, use the SVD. The tests hold
    it equal to :func:`jacobian_rank`.

    Parameters
    ----------
    matrix : array_like, shape (n, p)
        One Jacobian.
    rel_threshold : float, default 1e-5
        The relative cut on the singular values, in (0, 1].
    """
    rel_threshold = validation.in_interval("rel_threshold", rel_threshold, 0.0, 1.0,
                                           closed_low=False, closed_high=True)
    if rel_threshold < GRAM_MIN_THRESHOLD:
        return jacobian_rank(matrix, rel_threshold)
    J = np.asarray(matrix, dtype=np.float64)
    return gram_rank(J @ J.T if J.shape[0] <= J.shape[1] else J.T @ J, rel_threshold)


def network_metrics(model, theta_rec, X, y, X_test=None, y_test=None, *, threshold: float = 0.99,
                    rank_threshold: float = 1e-4, kinks: bool = False, kink_range=None) -> dict[str, np.ndarray]:
    """Metrics of the recorded parameters ``theta_rec`` (R, K, p) of a regression network ``model``
    (:class:`dyntools.models.mlp.MLP`: its ``forward_np``, ``jacobian`` and ``unpack`` hooks):

    * ``train_loss``, ``test_loss`` (R, K): mean squared errors ``mean((h − y)²)``;
    * ``sparsity`` (R, K, L−1): feature sparsity coefficient of each hidden layer on the training
      set (:func:`feature_sparsity`, correlation ``threshold``);
    * ``jac_rank`` (R, K): rank of ``φ_θ(X)`` (n × p) with relative threshold ``rank_threshold``
      (:func:`jacobian_rank_gram`, through the n × n Gram matrix);
    * ``kinks`` (R, K) for a two-layer 1-D network: distinct kinks inside ``kink_range``;
    * ``col_norm_q`` / ``grad_norm_q`` (R, K, Q): the :data:`NORM_QUANTILES` of the p column norms of
      ``φ_θ(X)`` and of the n per-example gradient norms ``‖∇_θ h(x_i)‖`` (the quantity of the
      label-noise conjecture), and ``phi_fro`` (R, K), ``‖φ_θ(X)‖_F``.

    Entries at non-finite parameters (after a divergence) are NaN (−1 for integer metrics).

    Parameters
    ----------
    model : MLP
        A layered regression network (``n_layers``, ``forward_np``, ``jacobian``, ``unpack`` hooks).
    theta_rec : ndarray, shape (R, K, p)
        Recorded parameters: R records of K paths.
    X, y : ndarray
        The training inputs (n, d) and targets (n,).
    X_test, y_test : ndarray, optional
        A test set for ``test_loss`` (NaN without one).
    threshold : float, default 0.99
        The correlation threshold of :func:`feature_sparsity`.
    rank_threshold : float, default 1e-4
        The relative threshold of the Jacobian rank.
    kinks : bool, default False
        Count the kinks of a two-layer 1-D network.
    kink_range : pair of float, optional
        The interval in which kinks are counted (the whole line by default).

    Returns
    -------
    dict of str to ndarray
        The metrics listed above.

    Raises
    ------
    TypeError
        When ``model`` is not a layered network.
    """
    from dyntools import validation

    missing = [hook for hook in ("n_layers", "forward_np", "jacobian", "unpack") if not hasattr(model, hook)]
    if missing:
        raise TypeError(f"network_metrics reads a layered network (MLP); model {getattr(model, 'name', model)!r} has "
                        f"no {', '.join(missing)}: dt.model_metrics measures any model with a jacobian hook")
    threshold = validation.in_interval("correlation threshold", threshold, 0.0, 1.0,
                                       closed_low=False, closed_high=True)
    rank_threshold = validation.in_interval("rank threshold", rank_threshold, 0.0, 1.0,
                                            closed_low=False, closed_high=True)
    R, K, _ = theta_rec.shape
    n_hidden = model.n_layers - 1
    ok = np.all(np.isfinite(theta_rec), axis=-1)
    out = {"train_loss": np.full((R, K), np.nan), "test_loss": np.full((R, K), np.nan),
           "sparsity": np.full((R, K, n_hidden), np.nan), "jac_rank": np.full((R, K), -1, dtype=np.int64),
           "col_norm_q": np.full((R, K, len(NORM_QUANTILES)), np.nan),
           "grad_norm_q": np.full((R, K, len(NORM_QUANTILES)), np.nan), "phi_fro": np.full((R, K), np.nan)}
    if kinks:
        out["kinks"] = np.full((R, K), -1, dtype=np.int64)
    lo, hi = (-np.inf, np.inf) if kink_range is None else kink_range
    for r in range(R):
        for k in range(K):
            if not ok[r, k]:
                continue
            th = theta_rec[r, k]
            with np.errstate(over="ignore", invalid="ignore"):
                h, hidden = model.forward_np(th, X)
                out["train_loss"][r, k] = np.mean((h[..., 0] - y) ** 2)
                if X_test is not None:
                    out["test_loss"][r, k] = np.mean((model.forward_np(th, X_test)[0][..., 0] - y_test) ** 2)
            for l in range(n_hidden):
                out["sparsity"][r, k, l] = feature_sparsity(hidden[l], threshold)
            J = model.jacobian(th, X)
            out["jac_rank"][r, k] = jacobian_rank_gram(J, rank_threshold)
            cols = column_norms(J)
            out["col_norm_q"][r, k] = norm_quantiles(cols)
            out["grad_norm_q"][r, k] = norm_quantiles(example_grad_norms(J))
            out["phi_fro"][r, k] = np.sqrt(np.sum(cols ** 2))
            if kinks:
                (W1, b1), (W2, _) = model.unpack(th)
                out["kinks"][r, k] = n_kinks_1d(W1[:, 0], b1, W2[0], lo=lo, hi=hi)
    return out
