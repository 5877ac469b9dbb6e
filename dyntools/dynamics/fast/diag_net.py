"""The paper's diagonal-network SGD (batch 1, plain SGD) as one fused pass per step.

Setting (Andriushchenko et al. 2023, seed 004): ``h(x) = ⟨u ⊙ v, x⟩``, ``θ = [u; v]``, batch 1 drawn
with replacement (or replayed), plain SGD (no momentum, decay or label noise):

    r_t = ⟨x_i, u_t ⊙ v_t⟩ − y_i,   u_{t+1} = u_t − η_t r_t x_i ⊙ v_t,   v_{t+1} = v_t − η_t r_t x_i ⊙ u_t.

The update of step t and the residual of step t+1 share one pass over the coordinates (the index
of step t+1 is drawn first; the stream is the same as the generic loop's, one uniform per step),
which halves the passes over u, v and x. ``‖u‖₁ + ‖v‖₁`` is accumulated in the same pass for the
guard. Both sums run in four lanes (``j mod 4``, combined as ``(s₀ + s₁) + (s₂ + s₃)``, the
residual's as in :func:`dyntools.models.diag_net.weighted_dot`): a fixed order, so the loop
vectorizes without ``reassoc`` and a fresh compile gives the bits of a cache load. This is the loop the
trainer takes for a :class:`~dyntools.models.diag_net.DiagNet` (:func:`select`); it takes the trainer's
arrays (see :func:`dyntools.dynamics.path_loop.advance_path`) and records θ at the grid steps; losses are
evaluated afterwards from the recordings.

At a chunk boundary the residual is recomputed, so a different chunking changes the last bits only.
"""

from __future__ import annotations

from numba import njit

from dyntools.dynamics.path_loop import LoopArrays, first_record
from dyntools.engine import drive, guard, record, samplers
from dyntools.models.diag_net import FASTMATH, weighted_dot


@njit(inline="always", fastmath=FASTMATH)
def _update(u, v, X, i, i2, c, j):
    """One coordinate of the SGD step (``s = c x_ij``: ``u_j ← u_j − s v_j``, ``v_j ← v_j − s u_j``) and
    its terms ``x_{i2,j} u_j v_j`` of the next residual and ``|u_j| + |v_j|`` of the guard's size."""
    sj = c * X[i, j]
    uj = u[j]
    vj = v[j]
    uj2 = uj - sj * vj
    vj2 = vj - sj * uj
    u[j] = uj2
    v[j] = vj2
    return X[i2, j] * (uj2 * vj2), abs(uj2) + abs(vj2)


@njit(cache=True, fastmath=FASTMATH)
def _path(p, thetas, states, diverged_at, Xs, ys, data_of, lrs, run_of, replay, t0, t1, record_steps,
          theta_rec, bound, record_final):
    if diverged_at[p] != guard.NEVER:
        return
    d = thetas.shape[1] // 2
    st = states[p:p + 1].copy()      # private copies: rows of neighbouring paths share cache lines
    u = thetas[p, :d].copy()
    v = thetas[p, d:].copy()
    X = Xs[data_of[p]]
    y = ys[data_of[p]]
    g = run_of[p]
    n = X.shape[0]
    const_lr = lrs.shape[1] == 1
    replaying = replay.shape[0] > 0
    row = 0 if replay.shape[0] <= 1 else p
    k = first_record(record_steps, t0)
    if t0 < t1:
        i = replay[row, t0] if replaying else samplers.with_replacement(st, n)
        r = -y[i] + weighted_dot(X, i, u, 0, v, 0, d)
    d4 = d - d % 4
    for t in range(t0, t1):
        if record.due(record_steps, k, t):
            theta_rec[p, k, :d] = u
            theta_rec[p, k, d:] = v
            k += 1
        eta = lrs[g, 0] if const_lr else lrs[g, t - t0]
        c = eta * r
        big = 0.0
        if t + 1 < t1:
            i2 = replay[row, t + 1] if replaying else samplers.with_replacement(st, n)
            r0 = r1 = r2 = r3 = 0.0
            b0 = b1 = b2 = b3 = 0.0
            for j in range(0, d4, 4):
                e0, f0 = _update(u, v, X, i, i2, c, j)
                e1, f1 = _update(u, v, X, i, i2, c, j + 1)
                e2, f2 = _update(u, v, X, i, i2, c, j + 2)
                e3, f3 = _update(u, v, X, i, i2, c, j + 3)
                r0 += e0
                r1 += e1
                r2 += e2
                r3 += e3
                b0 += f0
                b1 += f1
                b2 += f2
                b3 += f3
            for j in range(d4, d):
                e0, f0 = _update(u, v, X, i, i2, c, j)
                r0 += e0
                b0 += f0
            big = (b0 + b1) + (b2 + b3)
            i = i2
            r = -y[i2] + ((r0 + r1) + (r2 + r3))
        else:
            for j in range(d):
                sj = c * X[i, j]
                uj = u[j]
                u[j] = uj - sj * v[j]
                v[j] = v[j] - sj * uj
                big += abs(u[j]) + abs(v[j])
        if guard.beyond(big, bound):
            diverged_at[p] = t + 1
            break
    states[p, :] = st[0, :]
    thetas[p, :d] = u
    thetas[p, d:] = v
    if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
        theta_rec[p, k, :d] = u
        theta_rec[p, k, d:] = v


@njit(cache=True, nogil=True)
def _paths(paths, thetas, states, diverged_at, Xs, ys, data_of, lrs, run_of, replay, t0, t1, record_steps,
           theta_rec, bound, record_final):
    for p in paths:
        _path(p, thetas, states, diverged_at, Xs, ys, data_of, lrs, run_of, replay, t0, t1, record_steps,
              theta_rec, bound, record_final)


def applies(setting: dict) -> bool:
    """Batch 1 with replacement (or replayed), no label noise, plain SGD in every run (the compiled runs'
    ``plain_sgd``), compiled kernel (and no per-step losses asked for)."""
    if setting["kernel"] != "numba" or setting["batch"] != 1 or setting["label_noise"] != 0.0:
        return False
    if setting.get("step_loss"):
        return False
    if setting["sampler"] not in ("with-replacement", "replay"):
        return False
    return all(setting["plain_sgd"])


def advance(arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final, workers=None):
    """The trainer's tuned-loop call (the arguments of :func:`dyntools.dynamics.path_loop.advance_path` minus
    the kernel, the step and the path): every live path from ``t0`` to ``t1`` on ``workers`` threads."""
    a = arrays
    drive.on_threads(_paths, a.thetas.shape[0], workers, a.thetas, a.states, diverged_at, a.Xs, a.ys, a.data_of,
                     a.lrs, a.run_of, a.replay, int(t0), int(t1), record_steps, theta_rec, float(bound),
                     bool(record_final))


def select(model, setting: dict):
    """The fused loop :func:`advance` for a diagonal net when it :func:`applies` to ``setting``, else None."""
    return advance if applies(setting) else None
