"""SGD and GD on fully connected ReLU networks (:mod:`dyntools.models.relu_net`), squared loss.

Several runs (typically: one per step-size schedule, all from the same initialization and data)
advance together, one per ``prange`` thread. Run ``r`` takes the steps

    θ_{t+1} = θ_t − η_t^{(r)} · (2/B) Σ_{i ∈ I_t} (h_θt(x_i) − y_i) ∇_θ h_θt(x_i),

the gradient of the paper's loss ``(1/B) Σ_{i∈I_t} (h(x_i) − y_i)²`` on a mini-batch ``I_t`` of
``B`` distinct examples (batch 1 by default) drawn uniformly without replacement from a
xoshiro256** stream (:mod:`dyntools.engine.rng`; a partial Fisher–Yates shuffle, one uniform draw per
example; by default all runs start from the same stream state, so they see the same samples), or
on the whole training set for GD (``I_t = {1, …, n}``, ``B = n``).

A run stops at the first step ``t`` whose residual ``h_θt(x_i) − y_i`` is non-finite or exceeds
``bound`` in absolute value (or at the end, if θ is non-finite there); that step is reported as
``diverged_at`` (−1 while alive). Parameters are recorded at the steps of a grid; every metric is
computed afterwards from the recorded parameters (:func:`evaluate`).

:func:`advance_numpy` is the NumPy twin (per-step vectorized NumPy, same index stream): the tests
compare the two, and ``dyntools bench relu`` uses it as the baseline.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from dyntools import validation
from dyntools.engine import rng, streams
from dyntools.models.relu_net import Layout, _buffers, backward, forward, forward_np, jacobian

_STREAM_KEY = streams.KEYS["mlp.sampling"]


@njit(cache=True)
def advance_run(theta, states, r, perm, X, y, etas_r, batch, full_batch, t0, t1, record_steps, theta_rec_r,
                widths, w_off, b_off, bound, record_final):
    """Advance run ``r`` (parameters ``theta``, in place) from step ``t0`` to ``t1``.

    The run works on private copies of its parameters, stream state and permutation and writes them
    back at the end: rows of neighbouring runs share a cache line at their boundaries (a stream
    state is 32 bytes, two to a line), and threads updating them every step would contend for it
    (false sharing). Returns the divergence step, or −1.
    """
    own_theta = theta.copy()
    own_state = states[r:r + 1].copy()
    own_perm = perm.copy()
    out = _advance_run_private(own_theta, own_state, own_perm, X, y, etas_r, batch, full_batch, t0, t1,
                               record_steps, theta_rec_r, widths, w_off, b_off, bound, record_final)
    theta[:] = own_theta
    states[r, :] = own_state[0, :]
    perm[:] = own_perm
    return out


@njit(cache=True)
def _advance_run_private(theta, states, perm, X, y, etas_r, batch, full_batch, t0, t1, record_steps, theta_rec_r,
                         widths, w_off, b_off, bound, record_final):
    """The loop of :func:`advance_run` on the run's private arrays (``states`` is its 1 × 4 state).

    ``perm`` (int64[n]) is the run's persistent permutation for sampling without replacement, so a
    run cut into chunks draws exactly the same samples as in one piece. Returns the divergence
    step, or −1.
    """
    p = theta.shape[0]
    n = X.shape[0]
    const_eta = etas_r.shape[0] == 1
    n_rec = record_steps.shape[0]
    bsize = n if full_batch else batch
    pre, act, delta = _buffers(widths)
    grad = np.zeros(p)
    k = np.searchsorted(record_steps, t0)
    for t in range(t0, t1):
        if k < n_rec and record_steps[k] == t:
            theta_rec_r[k, :] = theta
            k += 1
        for q in range(p):
            grad[q] = 0.0
        for b in range(bsize):
            if full_batch:
                i = b
            else:
                j = b + rng.randbelow(states, 0, n - b)
                i = perm[j]
                perm[j] = perm[b]
                perm[b] = i
            h = forward(theta, X[i], widths, w_off, b_off, pre, act)
            res = h - y[i]
            if not abs(res) <= bound:
                return t
            backward(theta, widths, w_off, b_off, pre, act, delta, grad, 2.0 * res / bsize, True)
        eta = etas_r[0] if const_eta else etas_r[t]
        for q in range(p):
            theta[q] -= eta * grad[q]
    for q in range(p):
        if not np.isfinite(theta[q]):
            return t1
    if record_final and k < n_rec and record_steps[k] == t1:
        theta_rec_r[k, :] = theta
    return -1


@njit(cache=True)
def advance_serial(thetas, states, perms, X, y, etas, batch, full_batch, t0, t1, record_steps, theta_rec,
                   diverged_at, widths, w_off, b_off, bound, record_final):
    """:func:`advance` without threads (same arguments, same results): cheaper to compile, used
    when there are fewer runs than it takes to amortize a thread pool."""
    for r in range(thetas.shape[0]):
        if diverged_at[r] < 0:
            diverged_at[r] = advance_run(thetas[r], states, r, perms[r], X, y, etas[r], batch, full_batch, t0,
                                         t1, record_steps, theta_rec[r], widths, w_off, b_off, bound,
                                         record_final)


@njit(parallel=True, cache=True)
def advance(thetas, states, perms, X, y, etas, batch, full_batch, t0, t1, record_steps, theta_rec,
            diverged_at, widths, w_off, b_off, bound, record_final):
    """Advance every live run from step ``t0`` to ``t1`` in place, one run per ``prange`` thread.

    thetas : float64[R, p]        parameters at step ``t0``
    states : uint64[R, 4]         xoshiro256** states (unused for full batch)
    perms : int64[R, n]           persistent sampling permutations (start as ``arange(n)``)
    X, y : float64[n, d], [n]     training set
    etas : float64[R, 1] or [R, T] step size per run (constant or one per step)
    batch : int                   mini-batch size B (ignored when ``full_batch``)
    record_steps : int64[K]       sorted steps to record into ``theta_rec`` float64[R, K, p]
    diverged_at : int64[R]        −1 while alive; the step of divergence otherwise
    """
    for r in prange(thetas.shape[0]):
        if diverged_at[r] < 0:
            diverged_at[r] = advance_run(thetas[r], states, r, perms[r], X, y, etas[r], batch, full_batch, t0,
                                         t1, record_steps, theta_rec[r], widths, w_off, b_off, bound,
                                         record_final)


def advance_numpy(thetas, states, perms, X, y, etas, batch, full_batch, t0, t1, record_steps, theta_rec,
                  diverged_at, layout: Layout, bound, record_final):
    """NumPy twin of :func:`advance` (same arguments except ``layout`` for the three layout arrays):
    a Python loop over runs and steps, each step's mini-batch gradient by vectorized NumPy."""
    n = X.shape[0]
    bsize = n if full_batch else batch
    rec_index = {int(s): j for j, s in enumerate(record_steps)}
    n_layers = layout.n_layers
    w_off, b_off, _ = layout.offsets
    for r in range(thetas.shape[0]):
        if diverged_at[r] >= 0:
            continue
        theta = thetas[r]
        perm = perms[r]
        st = states[r:r + 1]
        for t in range(t0, t1):
            if t in rec_index:
                theta_rec[r, rec_index[t]] = theta
            if full_batch:
                idx = perm
            else:
                for b in range(bsize):
                    j = b + int(rng.randbelow_np(st, n - b)[0])
                    perm[b], perm[j] = perm[j], perm[b]
                idx = perm[:bsize]
            layers = layout.unpack(theta)
            acts, pres = [X[idx]], [None]
            for l, (W, bias) in enumerate(layers):
                z = acts[-1] @ W.T + (bias if bias is not None else 0.0)
                pres.append(z)
                acts.append(np.maximum(z, 0.0) if l < n_layers - 1 else z)
            res = acts[-1][:, 0] - y[idx]
            if not np.all(np.abs(res) <= bound):
                diverged_at[r] = t
                break
            grad = np.zeros_like(theta)
            delta = (2.0 * res / bsize)[:, None]                      # (B, 1)
            for l in range(n_layers - 1, -1, -1):
                W, _ = layers[l]
                grad[w_off[l]:w_off[l] + W.size] = (delta.T @ acts[l]).ravel()
                if b_off[l] >= 0:
                    grad[b_off[l]:b_off[l] + W.shape[0]] = delta.sum(axis=0)
                if l > 0:
                    delta = (delta @ W) * (pres[l] > 0.0)
            eta = etas[r, 0] if etas.shape[1] == 1 else etas[r, t]
            theta -= eta * grad
        states[r] = st[0]
        if diverged_at[r] < 0 and not np.all(np.isfinite(theta)):
            diverged_at[r] = t1
        if record_final and diverged_at[r] < 0 and t1 in rec_index:
            theta_rec[r, rec_index[t1]] = theta


# ------------------------------------------------------------------------------------------ runner

def train(layout: Layout, theta0, X, y, etas, *, steps: int, batch: int = 1, method: str = "sgd",
          record_steps=None, records: int = 60, seed: int = 0, bound: float = 1e8, kernel: str = "numba",
          chunks: int = 1, progress: bool = False, stream_key: tuple[int, ...] = (),
          common_stream: bool = True, parallel: bool = False):
    """Train ``R`` runs from ``theta0`` on ``(X, y)``; run ``r`` uses the step sizes ``etas[r]``.

    Parameters
    ----------
    layout : Layout           the network
    theta0 : (p,) or (R, p)   initial parameters (shared or one per run)
    X, y : (n, d), (n,)       training set
    etas : (R, 1) or (R, T)   step sizes per run (e.g. ``Schedule.etas(η, T)`` stacked)
    steps : int               number of updates T
    batch : int               SGD mini-batch size (default 1); ignored by GD
    method : "sgd" | "gd"
    record_steps : ints       steps at which θ is recorded (default a log grid of ``records``)
    bound : float             divergence threshold on |residual|
    kernel : "numba" | "numpy"
    common_stream : bool      every run draws the same sample sequence (common random numbers:
                              runs differ only by their step sizes); else one stream per run
    parallel : bool           one thread per run (:func:`advance`); default the serial kernel
                              (:func:`advance_serial`, same results, much cheaper to compile)

    Returns ``(steps, theta_rec (R, K, p), diverged_at (R,), seconds)``; recorded parameters
    after a divergence are NaN.
    """
    import time

    from dyntools.engine import record as recording
    from dyntools.engine import streams
    from dyntools.engine.progress import progress_bar

    steps = validation.count("steps", steps)
    method = validation.one_of("method", method, ("sgd", "gd"))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    X = validation.finite_array("X", X, ndim=2)
    y = validation.finite_array("y", y, ndim=1)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"Invalid y: {y.shape[0]} labels for {X.shape[0]} inputs")
    if X.shape[1] != layout.widths[0]:
        raise ValueError(f"Invalid input dimension: data has d = {X.shape[1]} but the network reads "
                         f"d = {layout.widths[0]}")
    batch = validation.count("batch", batch)
    if batch > X.shape[0]:
        raise ValueError(f"Invalid batch: {batch} (must be <= n = {X.shape[0]})")
    etas = np.atleast_2d(validation.finite_array("etas", etas))
    if np.any(etas <= 0):
        raise ValueError("Invalid etas: every step size must be > 0")
    if etas.shape[1] not in (1, steps):
        raise ValueError(f"Invalid etas: expected shape (R, 1) or (R, {steps}), got {etas.shape}")
    n_runs = etas.shape[0]
    p = layout.n_params
    theta0 = validation.finite_array("theta0", theta0)
    thetas = np.empty((n_runs, p))                   # C order, whatever theta0's layout
    thetas[:] = np.broadcast_to(theta0, (n_runs, p))
    if record_steps is None:
        record_steps = recording.log_grid(steps, records)
    record_steps = recording.validate_steps(record_steps, steps)
    bound = validation.positive("bound", bound)
    if common_stream:
        states = np.repeat(streams.path_states(seed, 1, _STREAM_KEY, *stream_key), n_runs, axis=0)
    else:
        states = streams.path_states(seed, n_runs, _STREAM_KEY, *stream_key)
    theta_rec = np.full((n_runs, record_steps.size, p), np.nan)
    perms = np.tile(np.arange(X.shape[0], dtype=np.int64), (n_runs, 1))
    diverged_at = np.full(n_runs, -1, dtype=np.int64)
    widths, w_off, b_off = layout.arrays()
    etas = np.ascontiguousarray(etas)
    X = np.ascontiguousarray(X)
    full = method == "gd"
    cuts = np.linspace(0, steps, validation.count("chunks", chunks) + 1).astype(np.int64)
    start = time.perf_counter()
    with progress_bar(steps * n_runs, "ReLU-net " + method.upper(), enabled=progress, unit="step") as bar:
        for a, b in zip(cuts[:-1], cuts[1:]):
            last = bool(b == steps)
            if kernel == "numba":
                step_fn = advance if parallel else advance_serial
                step_fn(thetas, states, perms, X, y, etas, batch, full, int(a), int(b), record_steps,
                        theta_rec, diverged_at, widths, w_off, b_off, bound, last)
            else:
                advance_numpy(thetas, states, perms, X, y, etas, batch, full, int(a), int(b), record_steps,
                              theta_rec, diverged_at, layout, bound, last)
            bar.update(int(b - a) * n_runs)
    return record_steps, theta_rec, diverged_at, time.perf_counter() - start


def evaluate(layout: Layout, theta_rec, X, y, X_test=None, y_test=None, *, threshold: float = 0.99,
             rank_threshold: float = 1e-4, kinks: bool = False, kink_range=None) -> dict[str, np.ndarray]:
    """Metrics of recorded parameters ``theta_rec`` (R, K, p):

    * ``train_loss``, ``test_loss`` (R, K): mean squared errors;
    * ``sparsity`` (R, K, L−1): feature sparsity coefficient of each hidden layer on the training
      set (:func:`dyntools.metrics.feature_sparsity`, correlation ``threshold``);
    * ``jac_rank`` (R, K): rank of ``φ_θ(X)`` (n × p) with relative threshold ``rank_threshold``
      (:func:`dyntools.metrics.jacobian_rank`, computed through the n × n Gram matrix);
    * ``kinks`` (R, K) for a two-layer 1-D network: distinct kinks inside ``kink_range``.

    Entries at non-finite parameters (after a divergence) are NaN (−1 for integer metrics).
    """
    from dyntools import metrics

    threshold = validation.in_interval("correlation threshold", threshold, 0.0, 1.0,
                                       closed_low=False, closed_high=True)
    rank_threshold = validation.in_interval("rank threshold", rank_threshold, 0.0, 1.0,
                                            closed_low=False, closed_high=True)
    R, K, _ = theta_rec.shape
    n_hidden = layout.n_layers - 1
    ok = np.all(np.isfinite(theta_rec), axis=-1)
    out = {"train_loss": np.full((R, K), np.nan), "test_loss": np.full((R, K), np.nan),
           "sparsity": np.full((R, K, n_hidden), np.nan), "jac_rank": np.full((R, K), -1, dtype=np.int64)}
    if kinks:
        out["kinks"] = np.full((R, K), -1, dtype=np.int64)
    widths, w_off, b_off = layout.arrays()
    lo, hi = (-np.inf, np.inf) if kink_range is None else kink_range
    for r in range(R):
        for k in range(K):
            if not ok[r, k]:
                continue
            th = theta_rec[r, k]
            with np.errstate(over="ignore", invalid="ignore"):
                h, hidden = forward_np(layout, th, X)
                out["train_loss"][r, k] = np.mean((h - y) ** 2)
                if X_test is not None:
                    ht = forward_np(layout, th, X_test)[0]
                    out["test_loss"][r, k] = np.mean((ht - y_test) ** 2)
            for l in range(n_hidden):
                out["sparsity"][r, k, l] = metrics.feature_sparsity(hidden[l], threshold)
            out["jac_rank"][r, k] = metrics.jacobian_rank_gram(jacobian(th, X, widths, w_off, b_off),
                                                                rank_threshold)
            if kinks:
                (W1, b1), (W2, _) = layout.unpack(th)
                out["kinks"][r, k] = metrics.n_kinks_1d(W1[:, 0], b1, W2[0], lo=lo, hi=hi)
    return out
