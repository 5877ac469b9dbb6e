"""Diagonal linear networks (:mod:`dyntools.models.diag_net`) trained over schedules and seeds, with
the paper's metrics at every recording.

:func:`train_diag_net` is the diagonal-network runner on the engine: it builds the model
(:class:`~dyntools.models.diag_net.DiagNet`, ``θ = [u; v]``), one ``dyntools.optim.sgd`` optimizer per
compared run (step η, heavy-ball momentum μ, coupled L2 weight decay λ — PyTorch's SGD) with its
schedule, and trains every (run, seed) path with :func:`dyntools.dynamics.train.train`:

    g_t = (1/|B_t|) Σ_{i∈B_t} (⟨x_i, β_t⟩ − y_i − δ ξ_{t,i}) x_i               (ξ ~ N(0,1) fresh)
    d_u = v_t ⊙ g_t + λ u_t,          d_v = u_t ⊙ g_t + λ v_t                  (weight decay λ)
    m_u ← μ m_u + d_u  (m_u = d_u at t = 0),  likewise m_v                      (heavy ball, PyTorch)
    u_{t+1} = u_t − η_t m_u,          v_{t+1} = v_t − η_t m_v                   (μ = 0: m = d)

the gradient of the mini-batch loss ``(1/2|B|) Σ_i (⟨x_i, β⟩ − y_i)²``: full batch (``method="gd"``) is
GD on ``L = ‖X(u⊙v) − y‖²/(2n)``; ``|B| = 1`` is the paper's SGD (the trainer then takes the fused
loop of :mod:`dyntools.dynamics.fast.diag_net`); δ > 0 is label-noise SGD. Batches are drawn with
replacement, without (epoch shuffling with ``drop_last``), or replayed (:mod:`dyntools.engine.samplers`).
A path stops at the first step whose ``‖u‖₁ + ‖v‖₁`` is non-finite or above ``bound``
(:mod:`dyntools.engine.guard`). After the run it evaluates, at every recording, the train and test
losses (factored form), the Jacobian rank, ‖β‖₀, ‖β‖₁, balancedness, support recovery and the sharpness.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.models.diag_net import FASTMATH


def decay_starts(schedule, steps: int) -> list[int]:
    """The first step of each decay of ``schedule`` over ``steps`` steps (through a warm-up's ``inner``): the
    figures mark them exactly although the run keeps its step sizes at the recorded steps only."""
    while not hasattr(schedule, "starts") and hasattr(schedule, "inner"):
        schedule = schedule.inner
    if not hasattr(schedule, "starts"):
        return []
    return [int(t) for t, f in zip(schedule.starts(steps), schedule.factors) if f > 1.01]   # not a ramp-like nudge

MODES = {"gd": "full", "sgd": "with-replacement", "sgd-noreplace": "epoch"}

# The metrics' kernels compile with the models' flags (no "reassoc": see dyntools.models.diag_net).
_FASTMATH = FASTMATH


def sgd_reference_loop(X, y, X_test, y_test, u0, v0, eta_steps, record_steps, indices=None, seed=0):
    """The straightforward NumPy loop of the paper's SGD run (batch 1): the benchmark's baseline.

    Each step draws its sample with ``numpy.random.Generator.integers`` (or reads ``indices``),
    then ``u ← u − η (⟨x_i, u⊙v⟩ − y_i) x_i ⊙ v``, ``v ← v − η (…) x_i ⊙ u``; at the recorded steps it
    evaluates both losses directly. Returns (train_loss, test_loss, u, v, indices used).
    """
    u, v = u0.copy(), v0.copy()
    n, m = X.shape[0], X_test.shape[0]
    steps = eta_steps.shape[0]
    rec = set(int(s) for s in record_steps)
    gen = np.random.default_rng(seed)
    used = np.empty(steps, dtype=np.int64)
    train, test = [], []
    for t in range(steps):
        if t in rec:
            beta = u * v
            train.append(np.sum((X @ beta - y) ** 2) / (2 * n))
            test.append(np.sum((X_test @ beta - y_test) ** 2) / (2 * m))
        i = gen.integers(n) if indices is None else indices[t]
        used[t] = i
        err = X[i] @ (u * v) - y[i]
        gu, gv = err * X[i] * v, err * X[i] * u
        u = u - eta_steps[t] * gu
        v = v - eta_steps[t] * gv
    return np.array(train), np.array(test), u, v, used


@njit(cache=True)
def _tridiagonalize(A, diag, off):
    """Householder reduction of the symmetric ``A`` (overwritten) to tridiagonal ``(diag, off)``
    with the same eigenvalues: ``A ← H A H``, ``H = I − 2wwᵀ/wᵀw`` zeroing column k below k+1."""
    n = A.shape[0]
    p = np.empty(n)
    for k in range(n - 2):
        m = n - k - 1
        alpha = 0.0
        for i in range(m):
            alpha += A[k + 1 + i, k] * A[k + 1 + i, k]
        alpha = np.sqrt(alpha)
        diag[k] = A[k, k]
        if alpha == 0.0:
            off[k] = 0.0
            continue
        if A[k + 1, k] > 0:
            alpha = -alpha
        w = A[k + 1:, k].copy()
        w[0] -= alpha
        ww = 0.0
        for i in range(m):
            ww += w[i] * w[i]
        off[k] = alpha
        if ww == 0.0:
            continue
        beta = 2.0 / ww
        K = 0.0
        for i in range(m):
            acc = 0.0
            for j in range(m):
                acc += A[k + 1 + i, k + 1 + j] * w[j]
            p[i] = beta * acc
            K += w[i] * p[i]
        K *= 0.5 * beta
        for i in range(m):
            p[i] -= K * w[i]
        for i in range(m):
            for j in range(m):
                A[k + 1 + i, k + 1 + j] -= w[i] * p[j] + p[i] * w[j]
    if n >= 2:
        diag[n - 2] = A[n - 2, n - 2]
        off[n - 2] = A[n - 1, n - 2]
    diag[n - 1] = A[n - 1, n - 1]


@njit(cache=True)
def _count_below(diag, off, x):
    """Sturm count: the number of eigenvalues ``< x`` of the symmetric tridiagonal (diag, off)."""
    n = diag.shape[0]
    cnt = 0
    q = diag[0] - x
    for i in range(n):
        if i > 0:
            q = diag[i] - x - off[i - 1] * off[i - 1] / q
        if q == 0.0:
            q = -1e-300
        if q < 0.0:
            cnt += 1
    return cnt


@njit(cache=True)
def _top_eigenvalue(diag, off):
    """``λ_max`` of the tridiagonal by bisection on Sturm counts (relative accuracy ~1e-13)."""
    n = diag.shape[0]
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        r = (abs(off[i - 1]) if i > 0 else 0.0) + (abs(off[i]) if i < n - 1 else 0.0)
        lo = min(lo, diag[i] - r)
        hi = max(hi, diag[i] + r)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _count_below(diag, off, mid) == n:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-13 * max(abs(lo), abs(hi)) + 1e-300:
            break
    return hi


@njit(inline="always", fastmath=_FASTMATH)
def _row_dot(x, Y, c):
    """``Σ_j x_j Y[c, j]`` in four lanes (``j mod 4``, the rest in lane 0) combined as
    ``(s₀ + s₁) + (s₂ + s₃)``: vectorizes in a fixed order (no reassociation)."""
    d = x.shape[0]
    d4 = d - d % 4
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, d4, 4):
        s0 += x[j] * Y[c, j]
        s1 += x[j + 1] * Y[c, j + 1]
        s2 += x[j + 2] * Y[c, j + 2]
        s3 += x[j + 3] * Y[c, j + 3]
    for j in range(d4, d):
        s0 += x[j] * Y[c, j]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, fastmath=_FASTMATH)
def jacobian_ranks(Xs, data_of, u_rec, v_rec, rel_threshold):
    """Rank of ``φ = [X ⊙ v, X ⊙ u]`` at every recording, in parallel over (path, record).

    ``φφᵀ = X diag(u² + v²) Xᵀ`` (n × n) has eigenvalues ``σ_i²``; the rank counts
    ``σ_i > rel_threshold · σ_max``, i.e. eigenvalues above ``τ = rel_threshold² λ_max``. The Gram
    matrix is reduced to tridiagonal form (Householder) and ``λ_max`` and the count above τ come
    from Sturm sequences — no LAPACK call (a multithreaded BLAS is what makes thousands of small
    eigenproblems slow on a busy machine).
    The same rule as :func:`dyntools.metrics.gram_rank`. Unrecorded rows (non-finite) get −1.
    """
    P, K, d = u_rec.shape
    n = Xs.shape[1]
    out = np.full((P, K), -1, dtype=np.int64)
    thr2 = rel_threshold * rel_threshold
    for item in range(P * K):
        p = item // K
        k = item % K
        X = Xs[data_of[p]]
        w = np.empty(d)
        tot = 0.0
        for j in range(d):
            w[j] = u_rec[p, k, j] * u_rec[p, k, j] + v_rec[p, k, j] * v_rec[p, k, j]
            tot += w[j]
        if not np.isfinite(tot):
            continue
        G = np.empty((n, n))
        xw = np.empty(d)
        for a in range(n):
            for j in range(d):
                xw[j] = X[a, j] * w[j]
            for c in range(a, n):
                acc = _row_dot(xw, X, c)
                G[a, c] = acc
                G[c, a] = acc
        diag = np.empty(n)
        off = np.zeros(max(n - 1, 1))
        _tridiagonalize(G, diag, off)
        top = _top_eigenvalue(diag, off)
        out[p, k] = 0 if top <= 0 else n - _count_below(diag, off, thr2 * top)
    return out


# ------------------------------------------------------------------------------------------ runner

#: Default thresholds of the metrics (reported in every result's config).
RANK_THRESHOLD = 1e-4      # relative singular-value threshold of the Jacobian rank
L0_THRESHOLD = 1e-3        # |β_j| above this counts in ‖β‖₀ and in the estimated support


def train_diag_net(datasets, runs, *, steps: int, method: str = "sgd", batch: int = 1,
                   label_noise: float = 0.0, momentum: float = 0.0, weight_decay: float = 0.0,
                   init: str = "paper", alpha: float = 0.1, init_scale: float = 0.1, u0=None, v0=None,
                   record_steps=None, records: int = 350, grid: str = "log", dense_start: int = 10,
                   keep_params: bool = False, indices=None, bound: float = 1e6,
                   rank_threshold: float = RANK_THRESHOLD, l0_threshold: float = L0_THRESHOLD,
                   rank_points: int | None = None, sharpness_iters: int = 1000, seed: int = 0, chunks: int = 1,
                   progress: bool = False,
                   kernel: str = "numba", workers: int | None = None):
    """Train diagonal networks for every (run, data set) pair and measure them.

    Parameters
    ----------
    datasets : list of :class:`dyntools.data.RegressionData`   one per seed (same n, d, m)
    runs : list of (label, eta, Schedule)     the step-size schedules compared (η_t = η · m_t)
    steps : int                               updates T
    method : "gd" | "sgd" | "sgd-noreplace"   full batch, batches with / without replacement
    batch : int                               batch size b (SGD; 1 is the paper's)
    label_noise : float                       δ ≥ 0: labels y_i + δ ξ with fresh ξ each step
    momentum, weight_decay : float            heavy-ball μ ∈ [0, 1), decoupled-from-nothing L2 λ ≥ 0
    init : "paper" | "gaussian"               u₀ = α·1, v₀ = 0, or i.i.d. N(0, init_scale²)
    u0, v0 : arrays (d,)                      given initial point (overrides ``init``)
    record_steps / records, grid, dense_start  recording grid (default log grid, ~350 points)
    keep_params : bool                        also return u, v and β = u ⊙ v at every recording
    indices : int array (T·b,) or (paths, T·b) replayed sample indices (SGD only)
    bound : float                             divergence threshold on ‖u‖₁ + ‖v‖₁
    rank_threshold, l0_threshold : float      metric thresholds (reported)
    rank_points : int                         rank of φ on the first ``rank_points`` *test* points instead
                                              of the training set, by SVD (any threshold in (0, 1]; the
                                              authors': 2d points, 1e-15)
    seed : int                                root seed of the SGD streams (and Gaussian inits)
    workers : int                             threads of the compiled kernel (default: numba's count);
                                              the result does not depend on it

    Returns a :class:`~dyntools.result.RunResult` of kind ``"diag-net"``; arrays are indexed
    ``[run, seed, record]``: ``train_loss``, ``test_loss``, ``rank``, ``l0``, ``l1``,
    ``balancedness``, ``precision``, ``recall``, ``col_norm_q`` / ``grad_norm_q`` (``[run, seed, record, q]``:
    the :data:`~dyntools.metrics.NORM_QUANTILES` of the 2d column norms of φ(X) and of the n per-example
    gradient norms on the training set), ``phi_fro`` (‖φ(X)‖_F), ``sharpness`` (λ_max of the full-batch Hessian, by
    power iteration on HVPs with at most ``sharpness_iters`` iterations; 0 skips it: NaN) and
    ``sharpness_converged`` (False where the power iteration ran out of iterations; the last estimate
    is kept); per path
    ``diverged_at`` (−1 never), final ``u``, ``v``; ``steps``; ``eta_rec`` (run, record): the step size at each
    recorded step (that of step T − 1 at T). Memory does not grow with ``steps``: the per-step rates are
    taken a window at a time (:mod:`dyntools.dynamics.rates`), the records are bounded by ``records``.
    """
    from dyntools import metrics
    from dyntools.dynamics.train import train
    from dyntools.engine import record as recording
    from dyntools.engine.result import RunResult, timed
    from dyntools.models.diag_net import DiagNet
    from dyntools.optim import optimizers as O

    steps = validation.count("steps", steps)
    method = validation.one_of("method", method, tuple(MODES))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    batch = validation.count("batch", batch)
    label_noise = validation.non_negative("label_noise", label_noise)
    momentum = validation.in_interval("momentum", momentum, 0.0, 1.0)
    weight_decay = validation.non_negative("weight_decay", weight_decay)
    bound = validation.positive("bound", bound)
    sharpness_iters = validation.count("sharpness_iters", sharpness_iters, minimum=0)
    if rank_points is None:
        validation.in_interval("rank_threshold", rank_threshold, metrics.GRAM_MIN_THRESHOLD, 1.0,
                               closed_high=True)
    else:
        validation.in_interval("rank_threshold", rank_threshold, 0.0, 1.0, closed_low=False, closed_high=True)
        rank_points = validation.count("rank_points", rank_points)
    validation.non_negative("l0_threshold", l0_threshold)
    if not runs:
        raise ValueError("Invalid runs: need at least one (label, eta, schedule)")
    if not datasets:
        raise ValueError("Invalid datasets: need at least one data set")
    n, d = datasets[0].X.shape
    m = datasets[0].X_test.shape[0]
    for ds in datasets:
        check_data(ds.X, ds.y, "X", "y")
        check_data(ds.X_test, ds.y_test, "X_test", "y_test")
        if ds.X.shape != (n, d) or ds.X_test.shape != (m, d):
            raise ValueError(f"Invalid datasets: every data set needs X of shape ({n}, {d}) "
                             f"and X_test of shape ({m}, {d})")
    if rank_points is not None and rank_points > m:
        raise ValueError(f"Invalid rank_points: {rank_points} (the held-out set has n_test = {m} points)")
    if method != "gd" and batch > n:
        raise ValueError(f"Invalid batch: {batch} (must be <= n = {n})")
    if indices is not None and method == "gd":
        raise ValueError("Invalid indices: replay is for SGD (GD uses every sample)")
    b = n if method == "gd" else batch
    G, S = len(runs), len(datasets)
    for _, eta, _ in runs:
        validation.positive("eta", eta)
    opts = [O.sgd(float(eta), momentum=momentum, weight_decay=weight_decay) for _, eta, _ in runs]
    if record_steps is None:
        record_steps = recording.make_grid(grid, steps, records, dense_start)
    record_steps = recording.validate_steps(record_steps, steps)
    K = record_steps.size

    model = DiagNet(d, init=init, alpha=alpha, init_scale=init_scale)
    theta0 = None
    if u0 is not None or v0 is not None:           # initial points: the same for every run of a seed
        if u0 is None or v0 is None:
            raise ValueError("Invalid u0/v0: give both or neither")
        u_init = validation.finite_array("u0", u0)
        v_init = validation.finite_array("v0", v0)
        for name, arr in (("u0", u_init), ("v0", v_init)):
            if arr.shape not in ((d,), (S, d)):
                raise ValueError(f"Invalid {name}: expected shape ({d},) or ({S}, {d}), got {arr.shape}")
        theta0 = np.concatenate([np.broadcast_to(u_init, (S, d)), np.broadcast_to(v_init, (S, d))], axis=1)

    res = train(model, list(datasets), opts, schedule=[sch for _, _, sch in runs], steps=steps, batch=b,
                sampler="replay" if indices is not None else MODES[method], drop_last=True,
                label_noise=label_noise, record_steps=record_steps, seed=seed, theta0=theta0, bound=bound,
                indices=indices, chunks=chunks, progress=progress, kernel=kernel, workers=workers,
                labels=[lab for lab, _, _ in runs], keep_lrs=False)
    timings = dict(res.timings)
    theta_rec = res["theta"].reshape(G * S, K, 2 * d)
    u_rec, v_rec = theta_rec[..., :d], theta_rec[..., d:]
    Xs = np.stack([ds.X for ds in datasets])
    ys = np.stack([ds.y for ds in datasets])
    data_of = np.tile(np.arange(S, dtype=np.int64), G)

    with timed(timings, "metrics"):
        out = recorded_metrics(u_rec, v_rec, Xs, data_of, np.stack([ds.beta_star for ds in datasets]),
                               rank_threshold=rank_threshold, l0_threshold=l0_threshold,
                               X_rank=None if rank_points is None else
                               np.stack([ds.X_test[:rank_points] for ds in datasets]))
        if sharpness_iters:
            out["sharpness"], out["sharpness_converged"] = recorded_sharpness(
                u_rec, v_rec, Xs, ys, data_of, iters=sharpness_iters)
        else:                                                   # skipped: NaN, "not converged"
            out["sharpness"], out["sharpness_converged"] = (np.full((G * S, K), np.nan),
                                                            np.zeros((G * S, K), bool))

    def shape(a):
        return a.reshape((G, S) + a.shape[1:])

    final = res["final_theta"]
    arrays = {"steps": record_steps, "eta_rec": res["lr_rec"],
              "train_loss": res["train_loss"], "test_loss": res["test_loss"],
              **{k: shape(v) for k, v in out.items()}, "diverged_at": res["diverged_at"],
              "u": np.ascontiguousarray(final[..., :d]), "v": np.ascontiguousarray(final[..., d:]),
              "beta_star": np.stack([ds.beta_star for ds in datasets])}
    if keep_params:
        arrays["u_rec"], arrays["v_rec"] = shape(u_rec), shape(v_rec)
        arrays["beta_rec"] = shape(u_rec * v_rec)
    config = {"model": "diag-net", "method": method, "batch": b, "steps": steps, "n": n, "d": d, "n_test": m,
              "seeds": S,
              "runs": [{"label": lab, "eta": float(eta), "schedule": repr(sch), "decay_steps": decay_starts(sch, steps)}
                       for lab, eta, sch in runs],
              "label_noise": label_noise, "momentum": momentum, "weight_decay": weight_decay,
              "init": "given" if u0 is not None else init, "alpha": alpha, "init_scale": init_scale,
              "bound": bound, "rank_threshold": rank_threshold, "l0_threshold": l0_threshold,
              "rank_on": "train" if rank_points is None else f"first {rank_points} test points",
              "norm_quantiles": list(metrics.NORM_QUANTILES),
              "replayed": indices is not None, "kernel": kernel, "records": int(K),
              "sharpness_iters": sharpness_iters, "path": res.config["path"]}
    result = RunResult("diag-net", config, arrays, "", "", seed=seed, timings=timings)
    result.status, result.message = _classify(result)
    result.summary = summarize(result)
    return result


def check_data(X, y, xname: str = "X", yname: str = "y") -> None:
    """Shapes (X: (n, d), y: (n,)) and finiteness of a data set, with messages naming the parameter."""
    X = validation.finite_array(xname, X, ndim=2)
    y = validation.finite_array(yname, y, ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"Invalid {yname}: length {y.shape[0]} does not match "
                         f"the {X.shape[0]} rows of {xname}")


def heldout_ranks(X_rank, data_of, u_rec, v_rec, rel_threshold, chunk: int = 8) -> np.ndarray:
    """Rank of ``φ = [X ⊙ u, X ⊙ v]`` on held-out points (the authors' metric: their column order,
    an SVD, ``σ_i > rel_threshold · σ_max``) at every recording: (P, K) floats, NaN where nothing was
    recorded. ``X_rank``: (S, m, d) points per data set. As ``φ``'s columns j and d + j are parallel,
    the exact rank is at most ``min(m, d)``; a larger count is round-off above the threshold."""
    from threadpoolctl import threadpool_limits

    from dyntools import metrics

    P, K, _ = u_rec.shape
    out = np.full((P, K), np.nan)
    with threadpool_limits(1):          # many small SVDs: a threaded LAPACK only fights a busy machine
        for p in range(P):
            X = X_rank[data_of[p]]
            ok = np.flatnonzero(np.isfinite(u_rec[p]).all(axis=1) & np.isfinite(v_rec[p]).all(axis=1))
            for lo in range(0, ok.size, chunk):
                k = ok[lo:lo + chunk]
                phi = np.concatenate([X[None] * u_rec[p, k, None, :], X[None] * v_rec[p, k, None, :]], axis=2)
                out[p, k] = metrics.jacobian_rank(phi, rel_threshold)
    return out


def recorded_metrics(u_rec, v_rec, Xs, data_of, beta_stars, *, rank_threshold=RANK_THRESHOLD,
                     l0_threshold=L0_THRESHOLD, X_rank=None) -> dict[str, np.ndarray]:
    """Metrics at every recording of every path (u_rec, v_rec: (P, K, d); NaN rows = not recorded):
    Jacobian rank (via the n × n Gram matrix of the training set, or on the held-out points
    ``X_rank`` by SVD: :func:`heldout_ranks`), ‖β‖₀, ‖β‖₁, balancedness, support precision/recall,
    and the distribution (quantiles) of the column norms and per-example gradient norms of φ(X)."""
    from dyntools import metrics
    from dyntools.models import diag_net

    P, K, _ = u_rec.shape
    out = {k: np.full((P, K), np.nan) for k in ("l0", "l1", "balancedness", "precision", "recall", "phi_fro")}
    Q = len(metrics.NORM_QUANTILES)
    out["col_norm_q"], out["grad_norm_q"] = np.full((P, K, Q), np.nan), np.full((P, K, Q), np.nan)
    if X_rank is not None:
        out["rank"] = heldout_ranks(X_rank, data_of, u_rec, v_rec, rank_threshold)
    else:
        if rank_threshold < metrics.GRAM_MIN_THRESHOLD:
            raise ValueError(f"Invalid rank_threshold: {rank_threshold} "
                             f"(must be >= {metrics.GRAM_MIN_THRESHOLD})")
        ranks = jacobian_ranks(Xs, data_of, u_rec, v_rec, rank_threshold).astype(np.float64)
        out["rank"] = np.where(ranks >= 0, ranks, np.nan)
    for p in range(P):
        ok = np.isfinite(u_rec[p]).all(axis=1) & np.isfinite(v_rec[p]).all(axis=1)
        if not ok.any():
            continue
        u, v = u_rec[p, ok], v_rec[p, ok]
        beta = u * v
        out["l0"][p, ok] = metrics.l0(beta, l0_threshold)
        out["l1"][p, ok] = metrics.l1(beta)
        out["balancedness"][p, ok] = metrics.balancedness(u, v)
        prec, rec = metrics.support_recovery(beta, beta_stars[data_of[p]], l0_threshold)
        out["precision"][p, ok], out["recall"][p, ok] = prec, rec
        X = Xs[data_of[p]]
        cols = diag_net.column_norms(u, v, X)
        out["col_norm_q"][p, ok] = metrics.norm_quantiles(cols)
        out["grad_norm_q"][p, ok] = metrics.norm_quantiles(diag_net.example_grad_norms(u, v, X))
        out["phi_fro"][p, ok] = np.sqrt(np.sum(cols ** 2, axis=-1))
    return out


def recorded_sharpness(u_rec, v_rec, Xs, ys, data_of, *, iters: int = 1000, tol: float = 1e-6):
    """``λ_max`` of the full-batch Hessian ``∇²L(u, v)`` at every recording of every path, by power
    iteration on Hessian–vector products (:func:`dyntools.models.diag_net.hvp_operator`; no dense
    2d × 2d matrix), all recordings of the paths on one data set iterated together
    (:func:`dyntools.metrics.sharpness_batch`; path ``p``'s start vectors are those of seed ``p`` whichever
    paths share its batch, so grouping only makes fewer, larger products).

    Returns ``(sharpness, converged)``, both (P, K); NaN / False where nothing was recorded. Set
    against ``2/η_t``: GD at step η is stable on the local quadratic only if ``η λ_max / 2 < 1``.
    """
    from threadpoolctl import threadpool_limits

    from dyntools import metrics
    from dyntools.models import diag_net

    P, K, d = u_rec.shape
    sharp = np.full((P, K), np.nan)
    converged = np.zeros((P, K), dtype=bool)
    finite = np.isfinite(u_rec).all(axis=2) & np.isfinite(v_rec).all(axis=2)       # (P, K)
    data_of = np.asarray(data_of)
    for s in np.unique(data_of):
        paths, steps = np.nonzero(finite & (data_of == s)[:, None])                # path-major, like one path
        if paths.size == 0:
            continue
        hvp = diag_net.hvp_operator(u_rec[paths, steps], v_rec[paths, steps], Xs[s], ys[s])
        with threadpool_limits(1):      # ~10⁴ small products: BLAS threads spin (5x the processor time) for nothing
            sharp[paths, steps], converged[paths, steps] = metrics.sharpness_batch(
                hvp, 2 * d, paths.size, iters=iters, tol=tol, seed=0, groups=paths)
    return sharp, converged


def _classify(result) -> tuple[str, str]:
    div = result["diverged_at"]
    n_div = int((div >= 0).sum())
    total = div.size
    if n_div:
        labels = [r["label"] for r in result.config["runs"]]
        per = "; ".join(f"{lab}: {int((div[g] >= 0).sum())}/{div.shape[1]} "
                        f"(first at step {int(div[g][div[g] >= 0].min())})"
                        for g, lab in enumerate(labels) if (div[g] >= 0).any())
        return "diverged", f"{n_div} of {total} runs diverged — {per}"
    final = result["train_loss"][..., -1]
    if np.all(final < 1e-8):
        return "converged", f"all {total} runs reached train loss < 1e-8 (max {np.max(final):.3g})"
    return "completed", (f"{total} runs finished; final train loss median {np.median(final):.3g}, "
                         f"max {np.max(final):.3g}")


def summarize(result) -> dict:
    """Per run label: median and 10–90% quantiles over seeds of the final metrics, divergence count."""
    rows = {}
    for g, spec in enumerate(result.config["runs"]):
        alive = result["diverged_at"][g] < 0
        row = {"eta": spec["eta"], "seeds": int(alive.size), "diverged": int((~alive).sum()),
               "diverged_at": [int(s) for s in result["diverged_at"][g][~alive]]}
        for key in ("train_loss", "test_loss", "l0", "rank", "precision", "recall", "l1", "balancedness",
                    "sharpness"):
            vals = result[key][g][alive, -1]
            vals = vals[np.isfinite(vals)]
            row[key] = _stats(vals)
        recorded = np.isfinite(result["sharpness"][g])
        row["sharpness_unconverged"] = int(np.sum(recorded & ~result["sharpness_converged"][g]))
        row["sharpness_recorded"] = int(np.sum(recorded))
        rows[spec["label"]] = row
    return {"status": result.status, "message": result.message, "runs": rows}


def _stats(vals) -> dict:
    if vals.size == 0:
        return {"median": None, "q10": None, "q90": None}
    q10, med, q90 = np.quantile(vals, [0.1, 0.5, 0.9])
    return {"median": float(med), "q10": float(q10), "q90": float(q90)}
