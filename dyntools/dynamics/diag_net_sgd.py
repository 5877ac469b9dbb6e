"""Training loops for diagonal linear networks (:mod:`dyntools.models.diag_net`), many paths at once.

One compiled kernel, :func:`advance`, moves ``P`` independent paths in parallel; a path is one
(schedule, seed) pair with its own data set, step sizes and xoshiro256** stream. Each step draws a
batch ``B_t`` and applies, with ``β = u ⊙ v``,

    g_t = (1/|B_t|) Σ_{i∈B_t} (⟨x_i, β_t⟩ − y_i − δ ξ_{t,i}) x_i               (ξ ~ N(0,1) fresh)
    d_u = v_t ⊙ g_t + λ u_t,          d_v = u_t ⊙ g_t + λ v_t                  (weight decay λ)
    m_u ← μ m_u + d_u  (m_u = d_u at t = 0),  likewise m_v                      (heavy ball, PyTorch)
    u_{t+1} = u_t − η_t m_u,          v_{t+1} = v_t − η_t m_v                   (μ = 0: m = d)

which is the gradient of the mini-batch loss ``(1/2|B|) Σ_i (⟨x_i, β⟩ − y_i)²``: with the full batch
(``mode = FULL``) it is GD on ``L = ‖X(u⊙v) − y‖²/(2n)``; with ``|B| = 1`` it is the paper's SGD
(``u ← u − η (⟨x_i, β⟩ − y_i) x_i ⊙ v``); ``δ > 0`` is label-noise SGD (labels ``y_i + δ ξ``).
Batches are drawn with replacement (``REPLACE``: ``b`` independent uniform indices) or without
(``SHUFFLE``: an epoch permutation by Fisher–Yates consumed ``b`` at a time, reshuffled when fewer
than ``b`` remain — PyTorch's ``shuffle=True, drop_last=True``), or replayed from a given index
array. ``η_t = etas[schedule, t]`` (one column = constant) comes from :mod:`dyntools.optim.schedules`.

At each step in ``record_steps`` (before the update; ``t = T`` after the last) the kernel records
the train loss ``‖Xβ − y‖²/(2n)`` and the test loss ``‖X_test β − y_test‖²/(2m)`` and, on request,
``u`` and ``v``. A path stops at the first step after which ``‖u‖₁ + ‖v‖₁`` is non-finite or
above ``bound``; that step is reported (``diverged_at``, −1 while alive) and its
later recordings stay NaN (a NaN fails the test ``‖u‖₁ + ‖v‖₁ ≤ bound``).

:func:`advance_numpy` is the plain NumPy twin (one path at a time, a Python loop over steps,
vectorized over coordinates; same random draws in the same order) used by the tests and, in
replay mode, as the benchmark's straightforward-NumPy baseline.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.engine import rng, streams

FULL, REPLACE, SHUFFLE = 0, 1, 2
MODES = {"gd": FULL, "sgd": REPLACE, "sgd-noreplace": SHUFFLE}

# Reassociation lets LLVM vectorize the dot products; no nnan/ninf (divergence checks need NaN).
_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True, fastmath=_FASTMATH)
def _factored_loss(RT, z, c, beta):
    """``½(‖Rβ − z‖² + c)`` with ``RT = Rᵀ`` (d × k, R upper trapezoidal): the loss ``‖Xβ − y‖²/(2m)``
    of :func:`dyntools.models.diag_net.loss_factor` in about k·d − k²/2 multiply–adds, accumulated
    column by column (``q += β_j R[:, j]``, contiguous in ``RT``) so that the loop vectorizes."""
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


@njit(cache=True)
def _shuffle(perm, p, st):
    n = perm.shape[1]
    for j in range(n - 1, 0, -1):
        k = rng.randbelow(st, 0, j + 1)
        tmp = perm[p, j]
        perm[p, j] = perm[p, k]
        perm[p, k] = tmp


@njit(cache=True, fastmath=_FASTMATH)
def _record(p, k, s, u, v, beta, Rtr, ztr, ctr, Rte, zte, cte, train_rec, test_rec, u_rec, v_rec):
    for j in range(u.shape[0]):
        beta[j] = u[j] * v[j]
    train_rec[p, k] = _factored_loss(Rtr[s], ztr[s], ctr[s], beta)
    test_rec[p, k] = _factored_loss(Rte[s], zte[s], cte[s], beta)
    if u_rec.shape[1] > 0:
        u_rec[p, k, :] = u
        v_rec[p, k, :] = v


@njit(cache=True, fastmath=_FASTMATH)
def _advance_path(p, U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte,
                  data_of, etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices, t0,
                  t1, record_steps, train_rec, test_rec, u_rec, v_rec, bound, record_final):
    """One path of :func:`advance` (a plain serial compiled function: its loops vectorize)."""
    n_paths, d = U.shape
    n = Xs.shape[1]
    n_rec = record_steps.shape[0]
    const_eta = etas.shape[1] == 1
    replay = indices.shape[0] > 0
    row_stride = 0 if indices.shape[0] == 1 else 1
    b = n if mode == FULL else batch
    inv_b = 1.0 / b
    has_mom = momentum != 0.0
    fused = (mode == REPLACE and b == 1 and label_noise == 0.0 and not has_mom and weight_decay == 0.0)
    if diverged_at[p] >= 0:
        return
    st = state[p:p + 1].copy()      # thread-local copies: rows of neighbouring paths share cache lines
    cur = pos[p]
    s = data_of[p]
    g_row = sched_of[p]
    X = Xs[s]
    y = ys[s]
    # Thread-local working copies, written back at the end: a row of U starts wherever the array
    # does (16-byte alignment), so neighbouring paths' rows share a cache line at each boundary and
    # two threads updating them every step would fight over it (false sharing).
    u = U[p].copy()
    v = V[p].copy()
    mu = MU[p].copy()
    mv = MV[p].copy()
    beta = np.empty(d)
    k = np.searchsorted(record_steps, t0)
    if fused:
        if t0 < t1:
            i = indices[p * row_stride, t0] if replay else rng.randbelow(st, 0, n)
            r = -y[i]
            for j in range(d):
                r += X[i, j] * (u[j] * v[j])
        for t in range(t0, t1):
            if k < n_rec and record_steps[k] == t:
                _record(p, k, s, u, v, beta, Rtr, ztr, ctr, Rte, zte, cte, train_rec, test_rec,
                        u_rec, v_rec)
                k += 1
            eta = etas[g_row, 0] if const_eta else etas[g_row, t]
            c = eta * r
            big = 0.0
            if t + 1 < t1:
                i2 = indices[p * row_stride, t + 1] if replay else rng.randbelow(st, 0, n)
                r2 = -y[i2]
                for j in range(d):
                    sj = c * X[i, j]
                    uj = u[j]
                    vj = v[j]
                    uj2 = uj - sj * vj
                    vj2 = vj - sj * uj
                    u[j] = uj2
                    v[j] = vj2
                    r2 += X[i2, j] * (uj2 * vj2)
                    big += abs(uj2) + abs(vj2)
                i = i2
                r = r2
            else:
                for j in range(d):
                    sj = c * X[i, j]
                    uj = u[j]
                    u[j] = uj - sj * v[j]
                    v[j] = v[j] - sj * uj
                    big += abs(u[j]) + abs(v[j])
            if not big <= bound:  # also true for NaN
                diverged_at[p] = t + 1
                break
    else:
        gb = np.empty(d)
        for t in range(t0, t1):
            if k < n_rec and record_steps[k] == t:
                _record(p, k, s, u, v, beta, Rtr, ztr, ctr, Rte, zte, cte, train_rec, test_rec,
                        u_rec, v_rec)
                k += 1
            for j in range(d):
                gb[j] = 0.0
            for q in range(b):
                if mode == FULL:
                    i = q
                elif replay:
                    i = indices[p * row_stride, t * b + q]
                elif mode == REPLACE:
                    i = rng.randbelow(st, 0, n)
                else:
                    if cur + 1 > n:
                        _shuffle(perm, p, st)
                        cur = 0
                    i = perm[p, cur]
                    cur += 1
                r = -y[i]
                if label_noise != 0.0:
                    r -= label_noise * rng.normal(st, 0)
                for j in range(d):
                    r += X[i, j] * (u[j] * v[j])
                for j in range(d):
                    gb[j] += r * X[i, j]
            if mode == SHUFFLE and not replay and cur + b > n:
                cur = n  # drop_last: reshuffle before the next batch
            eta = etas[g_row, 0] if const_eta else etas[g_row, t]
            big = 0.0
            if has_mom:
                for j in range(d):
                    du = gb[j] * inv_b * v[j] + weight_decay * u[j]
                    dv = gb[j] * inv_b * u[j] + weight_decay * v[j]
                    if t == 0:
                        mu[j] = du
                        mv[j] = dv
                    else:
                        mu[j] = momentum * mu[j] + du
                        mv[j] = momentum * mv[j] + dv
                    u[j] -= eta * mu[j]
                    v[j] -= eta * mv[j]
                    big += abs(u[j]) + abs(v[j])
            else:
                for j in range(d):
                    c = gb[j] * inv_b
                    uj = u[j]
                    u[j] = uj - eta * (c * v[j] + weight_decay * uj)
                    v[j] = v[j] - eta * (c * uj + weight_decay * v[j])
                    big += abs(u[j]) + abs(v[j])
            if not big <= bound:  # also true for NaN
                diverged_at[p] = t + 1
                break
    state[p, :] = st[0, :]
    pos[p] = cur
    U[p, :] = u
    V[p, :] = v
    MU[p, :] = mu
    MV[p, :] = mv
    if record_final and diverged_at[p] < 0 and k < n_rec and record_steps[k] == t1:
        _record(p, k, s, u, v, beta, Rtr, ztr, ctr, Rte, zte, cte, train_rec, test_rec, u_rec, v_rec)


@njit(cache=True, nogil=True)
def _advance_paths(paths, U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte,
                   data_of, etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices, t0, t1,
                   record_steps, train_rec, test_rec, u_rec, v_rec, bound, record_final):
    for p in paths:
        _advance_path(p, U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte,
                      data_of, etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices,
                      t0, t1, record_steps, train_rec, test_rec, u_rec, v_rec, bound, record_final)


def advance(U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte, data_of,
            etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices, t0, t1, record_steps,
            train_rec, test_rec, u_rec, v_rec, bound, record_final, workers=None):
    """Advance every live path from step ``t0`` to ``t1`` in place (see the module docstring).

    U, V, MU, MV : float64[P, d]     parameters and momentum buffers
    state : uint64[P, 4]             xoshiro256** states; diverged_at : int64[P] (−1 alive)
    perm : int64[P, n], pos : int64[P]   epoch permutation and position (mode SHUFFLE)
    Xs, ys : float64[S, n, d], [S, n]    training sets; data_of : int64[P] picks one per path
    Rtr, ztr, ctr / Rte, zte, cte        train / test losses in factored form, per data set: Rᵀ
                                         (d × k), z, c of :func:`dyntools.models.diag_net.loss_factor`
    etas : float64[G, 1 or T]; sched_of : int64[P]
    mode : FULL | REPLACE | SHUFFLE; batch : int (ignored for FULL)
    indices : int64[P or 1, T·batch] replayed sample indices, or an empty (0, 0) array
    record_steps : int64[K]; train_rec, test_rec : float64[P, K]; u_rec, v_rec : float64[P, K, d]
    or empty (P, 0, d) arrays to skip parameter recording

    The paper's case (batch 1 drawn with replacement or replayed, no label noise, momentum or
    weight decay) takes a fused path: the update of step t and the residual of step t+1 share one
    pass over the coordinates (the index of step t+1 is drawn first; the stream is the same).

    Paths run in parallel on ``workers`` threads (default ``numba.get_num_threads()``): the compiled
    per-path loop releases the GIL, and each path is one job taken by the next free thread. Each path owns its
    stream and its rows, so the result does not depend on the number of workers (it is bitwise the
    same for the same chunking; a different ``t0/t1`` chunking changes the last bits only, because the
    fused residual is recomputed at each chunk start). (Threads over a
    ``nogil`` kernel rather than ``prange``: the same parallelism, at a third of the compile time.)
    """
    import numba

    n_paths = U.shape[0]
    workers = max(1, min(n_paths, numba.get_num_threads() if workers is None else int(workers)))
    args = (U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte, data_of,
            etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices, int(t0), int(t1),
            record_steps, train_rec, test_rec, u_rec, v_rec, float(bound), bool(record_final))
    if workers == 1:
        _advance_paths(np.arange(n_paths, dtype=np.int64), *args)
        return
    # One job per path, handed out as threads free up: paths that diverge early (and stop) do not
    # leave a thread idle, as a fixed split of the paths would.
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(_advance_paths, np.array([p], dtype=np.int64), *args) for p in range(n_paths)]
        for job in jobs:
            job.result()


def advance_numpy(U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte, data_of,
                  etas, sched_of, mode, batch, label_noise, momentum, weight_decay, indices, t0, t1,
                  record_steps, train_rec, test_rec, u_rec, v_rec, bound, record_final):
    """NumPy twin of :func:`advance`: same arguments, same draws, same in-place updates."""
    n_paths, d = U.shape
    n = Xs.shape[1]
    b = n if mode == FULL else batch
    rec_index = {int(s): j for j, s in enumerate(record_steps)}
    keep = u_rec.shape[1] > 0

    def record(p, j, s, u, v):
        beta = u * v
        train_rec[p, j] = 0.5 * (np.sum((Rtr[s].T @ beta - ztr[s]) ** 2) + ctr[s])
        test_rec[p, j] = 0.5 * (np.sum((Rte[s].T @ beta - zte[s]) ** 2) + cte[s])
        if keep:
            u_rec[p, j], v_rec[p, j] = u, v

    for p in range(n_paths):
        if diverged_at[p] >= 0:
            continue
        s, g_row = data_of[p], sched_of[p]
        X, y = Xs[s], ys[s]
        u, v, mu, mv = U[p], V[p], MU[p], MV[p]
        st = state[p:p + 1]
        for t in range(t0, t1):
            if t in rec_index:
                record(p, rec_index[t], s, u, v)
            if mode == FULL:
                idx = np.arange(n)
            elif indices.shape[0] > 0:
                row = 0 if indices.shape[0] == 1 else p
                idx = indices[row, t * b:(t + 1) * b]
            else:
                idx = np.empty(b, dtype=np.int64)
            noise = np.zeros(b)
            for q in range(b):
                if mode == REPLACE and indices.shape[0] == 0:
                    idx[q] = rng.randbelow_np(st, n)[0]
                elif mode == SHUFFLE and indices.shape[0] == 0:
                    if pos[p] + 1 > n:
                        for j in range(n - 1, 0, -1):
                            kk = rng.randbelow_np(st, j + 1)[0]
                            perm[p, j], perm[p, kk] = perm[p, kk], perm[p, j]
                        pos[p] = 0
                    idx[q] = perm[p, pos[p]]
                    pos[p] += 1
                if label_noise != 0.0:
                    noise[q] = rng.normal_np(st)[0]
            if mode == SHUFFLE and indices.shape[0] == 0 and pos[p] + b > n:
                pos[p] = n
            res = X[idx] @ (u * v) - y[idx] - label_noise * noise
            c = X[idx].T @ res / b
            eta = etas[g_row, 0] if etas.shape[1] == 1 else etas[g_row, t]
            du = c * v + weight_decay * u
            dv = c * u + weight_decay * v
            if momentum != 0.0:
                mu[:] = du if t == 0 else momentum * mu + du
                mv[:] = dv if t == 0 else momentum * mv + dv
                du, dv = mu, mv
            with np.errstate(over="ignore", invalid="ignore"):
                u -= eta * du
                v -= eta * dv
                big = np.sum(np.abs(u)) + np.sum(np.abs(v))
            if not big <= bound:
                diverged_at[p] = t + 1
                break
        if record_final and diverged_at[p] < 0 and t1 in rec_index:
            record(p, rec_index[t1], s, u, v)


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
                acc = 0.0
                for j in range(d):
                    acc += xw[j] * X[c, j]
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
                   sharpness_iters: int = 1000, seed: int = 0, chunks: int = 1, progress: bool = False,
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
    seed : int                                root seed of the SGD streams (and Gaussian inits)
    workers : int                             threads of the compiled kernel (default: numba's count);
                                              the result does not depend on it

    Returns a :class:`~dyntools.result.RunResult` of kind ``"diag-net"``; arrays are indexed
    ``[run, seed, record]``: ``train_loss``, ``test_loss``, ``rank``, ``l0``, ``l1``,
    ``balancedness``, ``precision``, ``recall``, ``sharpness`` (λ_max of the full-batch Hessian, by
    power iteration on HVPs with at most ``sharpness_iters`` iterations; 0 skips it: NaN) and
    ``sharpness_converged`` (False where the power iteration ran out of iterations; the last estimate
    is kept); per path
    ``diverged_at`` (−1 never), final ``u``, ``v``; ``steps``, ``etas``.
    """
    from dyntools import metrics
    from dyntools.engine import record as recording
    from dyntools.engine import streams
    from dyntools.engine.progress import progress_bar
    from dyntools.engine.result import RunResult, timed
    from dyntools.models import diag_net

    timings: dict[str, float] = {}
    steps = validation.count("steps", steps)
    method = validation.one_of("method", method, tuple(MODES))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    batch = validation.count("batch", batch)
    label_noise = validation.non_negative("label_noise", label_noise)
    momentum = validation.in_interval("momentum", momentum, 0.0, 1.0)
    weight_decay = validation.non_negative("weight_decay", weight_decay)
    bound = validation.positive("bound", bound)
    sharpness_iters = validation.count("sharpness_iters", sharpness_iters, minimum=0)
    validation.in_interval("rank_threshold", rank_threshold, metrics.GRAM_MIN_THRESHOLD, 1.0,
                           closed_high=True)
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
    if method != "gd" and batch > n:
        raise ValueError(f"Invalid batch: {batch} (must be <= n = {n})")
    b = n if method == "gd" else batch
    mode = MODES[method]
    G, S = len(runs), len(datasets)
    P = G * S
    mults = [sched.etas(eta, steps) for _, eta, sched in runs]
    length = steps if any(e.size > 1 for e in mults) else 1
    etas = np.stack([np.broadcast_to(e, (length,)) for e in mults])
    etas = np.ascontiguousarray(etas, dtype=np.float64)
    if record_steps is None:
        record_steps = recording.make_grid(grid, steps, records, dense_start)
    record_steps = recording.validate_steps(record_steps, steps)
    K = record_steps.size

    # initial points: one per path (the same for every run of a seed: paired comparisons)
    if u0 is not None or v0 is not None:
        if u0 is None or v0 is None:
            raise ValueError("Invalid u0/v0: give both or neither")
        u_init = validation.finite_array("u0", u0)
        v_init = validation.finite_array("v0", v0)
        for name, arr in (("u0", u_init), ("v0", v_init)):
            if arr.shape not in ((d,), (S, d)):
                raise ValueError(f"Invalid {name}: expected shape ({d},) or ({S}, {d}), got {arr.shape}")
        u_init, v_init = np.broadcast_to(u_init, (S, d)), np.broadcast_to(v_init, (S, d))
    else:
        gens = streams.path_generators(seed, S, _INIT_KEY)
        pairs = [diag_net.initial_params(d, init, alpha=alpha, scale=init_scale, rng=g) for g in gens]
        u_init = np.stack([p_[0] for p_ in pairs])
        v_init = np.stack([p_[1] for p_ in pairs])
    U = np.ascontiguousarray(np.tile(u_init, (G, 1)), dtype=np.float64)
    V = np.ascontiguousarray(np.tile(v_init, (G, 1)), dtype=np.float64)
    MU, MV = np.zeros_like(U), np.zeros_like(V)

    replay = np.zeros((0, 0), dtype=np.int64)
    if indices is not None:
        if method == "gd":
            raise ValueError("Invalid indices: replay is for SGD (GD uses every sample)")
        replay = np.asarray(indices)
        if not np.issubdtype(replay.dtype, np.integer):
            raise ValueError("Invalid indices: must be integers")
        if replay.ndim == 1:
            replay = replay[None, :]
        if replay.shape[1] != steps * b or replay.shape[0] not in (1, P):
            raise ValueError(f"Invalid indices: expected shape ({steps * b},) or ({P}, {steps * b})")
        if replay.min() < 0 or replay.max() >= n:
            raise ValueError(f"Invalid indices: must lie in [0, {n - 1}]")
        replay = np.ascontiguousarray(replay, dtype=np.int64)

    Xs = np.ascontiguousarray(np.stack([ds.X for ds in datasets]))
    ys = np.ascontiguousarray(np.stack([ds.y for ds in datasets]))
    Rtr, ztr, ctr = stacked_factors([(ds.X, ds.y) for ds in datasets])
    Rte, zte, cte = stacked_factors([(ds.X_test, ds.y_test) for ds in datasets])
    data_of = np.tile(np.arange(S, dtype=np.int64), G)
    sched_of = np.repeat(np.arange(G, dtype=np.int64), S)
    state = np.concatenate([streams.path_states(seed, S, _SGD_KEY, g) for g in range(G)])
    diverged_at = np.full(P, -1, dtype=np.int64)
    perm = np.tile(np.arange(n, dtype=np.int64), (P, 1))
    pos = np.full(P, n, dtype=np.int64)
    train_rec = np.full((P, K), np.nan)
    test_rec = np.full((P, K), np.nan)
    u_rec = np.full((P, K, d), np.nan)
    v_rec = np.full((P, K, d), np.nan)
    if kernel == "numba":
        def step_fn(*args):
            advance(*args, workers=workers)
    else:
        step_fn = advance_numpy
    cuts = np.linspace(0, steps, validation.count("chunks", chunks) + 1).astype(np.int64)
    with timed(timings, "simulate"), progress_bar(steps * P, method.upper(), enabled=progress,
                                                  unit="path-step") as bar:
        for a, c in zip(cuts[:-1], cuts[1:]):
            step_fn(U, V, MU, MV, state, diverged_at, perm, pos, Xs, ys, Rtr, ztr, ctr, Rte, zte, cte,
                    data_of,
                    etas, sched_of,
                    mode, b, label_noise, momentum, weight_decay, replay, int(a), int(c), record_steps,
                    train_rec, test_rec, u_rec, v_rec, bound, bool(c == steps))
            bar.update(int(c - a) * P)

    with timed(timings, "metrics"):
        out = recorded_metrics(u_rec, v_rec, Xs, data_of, np.stack([ds.beta_star for ds in datasets]),
                               rank_threshold=rank_threshold, l0_threshold=l0_threshold)
        if sharpness_iters:
            out["sharpness"], out["sharpness_converged"] = recorded_sharpness(
                u_rec, v_rec, Xs, ys, data_of, iters=sharpness_iters)
        else:                                                   # skipped: NaN, "not converged"
            out["sharpness"], out["sharpness_converged"] = np.full((P, K), np.nan), np.zeros((P, K), bool)

    def shape(a):
        return a.reshape((G, S) + a.shape[1:])

    arrays = {"steps": record_steps, "etas": etas,
              "train_loss": shape(train_rec), "test_loss": shape(test_rec),
              **{k: shape(v) for k, v in out.items()}, "diverged_at": shape(diverged_at),
              "u": shape(U), "v": shape(V),
              "beta_star": np.stack([ds.beta_star for ds in datasets])}
    if keep_params:
        arrays["u_rec"], arrays["v_rec"] = shape(u_rec), shape(v_rec)
        arrays["beta_rec"] = shape(u_rec * v_rec)
    config = {"model": "diag-net", "method": method, "batch": b, "steps": steps, "n": n, "d": d, "n_test": m,
              "seeds": S,
              "runs": [{"label": lab, "eta": float(eta), "schedule": repr(sch)} for lab, eta, sch in runs],
              "label_noise": label_noise, "momentum": momentum, "weight_decay": weight_decay,
              "init": "given" if u0 is not None else init, "alpha": alpha, "init_scale": init_scale,
              "bound": bound, "rank_threshold": rank_threshold, "l0_threshold": l0_threshold,
              "replayed": indices is not None, "kernel": kernel, "records": int(K),
              "sharpness_iters": sharpness_iters}
    result = RunResult("diag-net", config, arrays, "", "", seed=seed, timings=timings)
    result.status, result.message = _classify(result)
    result.summary = summarize(result)
    return result


def stacked_factors(pairs):
    """``(Rᵀ, z, c)`` of :func:`dyntools.models.diag_net.loss_factor` for each (X, y), stacked
    (R transposed: the layout the kernel's column-wise loss evaluation reads contiguously)."""
    from dyntools.models import diag_net

    fac = [diag_net.loss_factor(X, y) for X, y in pairs]
    return (np.ascontiguousarray(np.stack([f[0].T for f in fac])),
            np.ascontiguousarray(np.stack([f[1] for f in fac])),
            np.array([f[2] for f in fac]))


def check_data(X, y, xname: str = "X", yname: str = "y") -> None:
    """Shapes (X: (n, d), y: (n,)) and finiteness of a data set, with messages naming the parameter."""
    X = validation.finite_array(xname, X, ndim=2)
    y = validation.finite_array(yname, y, ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"Invalid {yname}: length {y.shape[0]} does not match "
                         f"the {X.shape[0]} rows of {xname}")


_INIT_KEY = streams.KEYS["diag-net.init"]
_SGD_KEY = streams.KEYS["diag-net.sampling"]


def recorded_metrics(u_rec, v_rec, Xs, data_of, beta_stars, *, rank_threshold=RANK_THRESHOLD,
                     l0_threshold=L0_THRESHOLD) -> dict[str, np.ndarray]:
    """Metrics at every recording of every path (u_rec, v_rec: (P, K, d); NaN rows = not recorded):
    Jacobian rank (via the n × n Gram matrix), ‖β‖₀, ‖β‖₁, balancedness, support precision/recall."""
    from dyntools import metrics

    P, K, _ = u_rec.shape
    out = {k: np.full((P, K), np.nan) for k in ("l0", "l1", "balancedness", "precision", "recall")}
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
    return out


def recorded_sharpness(u_rec, v_rec, Xs, ys, data_of, *, iters: int = 1000, tol: float = 1e-6):
    """``λ_max`` of the full-batch Hessian ``∇²L(u, v)`` at every recording of every path, by power
    iteration on Hessian–vector products (:func:`dyntools.models.diag_net.hvp_operator`; no dense
    2d × 2d matrix), all recordings of a path iterated together (:func:`dyntools.metrics.sharpness_batch`).

    Returns ``(sharpness, converged)``, both (P, K); NaN / False where nothing was recorded. Set
    against ``2/η_t``: GD at step η is stable on the local quadratic only if ``η λ_max / 2 < 1``.
    """
    from dyntools import metrics
    from dyntools.models import diag_net

    P, K, d = u_rec.shape
    sharp = np.full((P, K), np.nan)
    converged = np.zeros((P, K), dtype=bool)
    for p in range(P):
        ok = np.flatnonzero(np.isfinite(u_rec[p]).all(axis=1) & np.isfinite(v_rec[p]).all(axis=1))
        if ok.size == 0:
            continue
        s = data_of[p]
        hvp = diag_net.hvp_operator(u_rec[p, ok], v_rec[p, ok], Xs[s], ys[s])
        sharp[p, ok], converged[p, ok] = metrics.sharpness_batch(hvp, 2 * d, ok.size, iters=iters, tol=tol,
                                                                 seed=p)
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
