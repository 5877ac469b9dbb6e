"""The paper's diagonal-network SGD (batch 1, plain SGD) as one fused pass per step.

Setting (Andriushchenko et al. 2023, seed 004): ``h(x) = ⟨u ⊙ v, x⟩``, ``θ = [u; v]``, batch 1 drawn
with replacement (or replayed), plain SGD (no momentum, decay or label noise):

    r_t = ⟨x_i, u_t ⊙ v_t⟩ − y_i,   u_{t+1} = u_t − η_t r_t x_i ⊙ v_t,   v_{t+1} = v_t − η_t r_t x_i ⊙ u_t.

The update of step t and the residual of step t+1 share one pass over the coordinates (the index
of step t+1 is drawn first; the stream is the same as the generic loop's, one uniform per step),
which halves the passes over u, v and x. ``‖u‖₁ + ‖v‖₁`` is accumulated in the same pass for the
guard. This is the loop the trainer takes for a :class:`~dyntools.models.diag_net.DiagNet` (:func:`select`); it
takes the trainer's arrays (see :func:`dyntools.dynamics.path_loop.advance_path`) and records θ at
the grid steps; losses are evaluated afterwards from the recordings.

At a chunk boundary the residual is recomputed, so a different chunking changes the last bits only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import drive, guard, record, samplers
from dyntools.models.diag_net import FASTMATH
from dyntools.optim import optimizers as O


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
    k = np.searchsorted(record_steps, t0)
    if t0 < t1:
        i = replay[row, t0] if replaying else samplers.with_replacement(st, n)
        r = -y[i]
        for j in range(d):
            r += X[i, j] * (u[j] * v[j])
    for t in range(t0, t1):
        if record.due(record_steps, k, t):
            theta_rec[p, k, :d] = u
            theta_rec[p, k, d:] = v
            k += 1
        eta = lrs[g, 0] if const_lr else lrs[g, t]
        c = eta * r
        big = 0.0
        if t + 1 < t1:
            i2 = replay[row, t + 1] if replaying else samplers.with_replacement(st, n)
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
    """Batch 1 with replacement (or replayed), no label noise, plain SGD in every run, compiled kernel
    (and no per-step losses asked for)."""
    if setting["kernel"] != "numba" or setting["batch"] != 1 or setting["label_noise"] != 0.0:
        return False
    if setting.get("step_loss"):
        return False
    if setting["sampler"] not in ("with-replacement", "replay"):
        return False
    return all(o.precond == O.SGD_MOMENTUM and o.hparams[2] == O.NO_DECAY and o.hparams[3] == 0.0
               for o in setting["optimizers"])


def advance(thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last, replay,
            states, perms, pos, label_noise, precond_of, hps, lrs, run_of, step_losses, t0, t1, record_steps,
            theta_rec, bound, diverged_at, record_final, workers=None):
    """The trainer's tuned-loop call (same arguments as :func:`dyntools.dynamics.path_loop.advance_path`
    minus the kernel): every live path from ``t0`` to ``t1`` on ``workers`` threads."""
    drive.on_threads(_paths, thetas.shape[0], workers, thetas, states, diverged_at, Xs, ys, data_of, lrs, run_of,
                     replay, int(t0), int(t1), record_steps, theta_rec, float(bound), bool(record_final))


def select(model, setting: dict):
    """The fused loop :func:`advance` for a diagonal net when it :func:`applies` to ``setting``, else None."""
    return advance if applies(setting) else None
