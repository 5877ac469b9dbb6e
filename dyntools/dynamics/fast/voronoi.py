"""The Voronoi ladder's training loop: the generic step of :func:`dyntools.dynamics.train.advance_path`,
written out with the ladder's kernel called directly instead of passed as a first-class function.

Why: the generic loop receives the model's kernel as a function value, which numba compiles to a call
through a pointer; such a function cannot be served by numba's on-disk cache, so every new process paid
~8 s of compilation before its first Voronoi run (the report, each sweep worker). Here the kernel
(:func:`dyntools.models.voronoi.loss_grad`) is a global of the loop, which is cached like any other. The
step is the generic loop's, statement for statement (sampler → kernel → fused optimizer step → guard
→ recorder); the tests hold the two equal. Used for every setting of the compiled kernel.

Caveat of numba's cache: a cached function is not recompiled when a function it calls changes in
another file. After editing :mod:`dyntools.models.voronoi`, remove this module's cache files
(``__pycache__/voronoi.*.nbi|nbc`` next to it), or the loop keeps the old kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import drive, guard, record, samplers
from dyntools.models.voronoi import loss_grad
from dyntools.optim import kernels as optim_kernels


@njit(cache=True, nogil=True, error_model="numpy")
def advance_path(p, thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last, replay,
                 states, perms, pos, precond_of, hps, lrs, run_of, t0, t1, record_steps, theta_rec, bound,
                 diverged_at, record_final):
    """:func:`dyntools.dynamics.train.advance_path` for the Voronoi ladder (no label noise: a
    classification head)."""
    if diverged_at[p] != guard.NEVER:
        return
    theta = thetas[p].copy()
    ostate = opt_states[p].copy()
    st = states[p:p + 1].copy()
    perm = perms[p].copy()
    cur = pos[p]
    X = Xs[data_of[p]]
    y = ys[data_of[p]]
    g = run_of[p]
    precond = precond_of[g]
    hp = hps[g]
    n = X.shape[0]
    n_par = theta.shape[0]
    b = n if sampler == samplers.FULL else batch
    idx = np.empty(b, dtype=np.int64)
    noise = np.zeros(b)
    grad = np.empty(n_par)
    ws = np.zeros(ws_size)
    const_lr = lrs.shape[1] == 1
    row = 0 if replay.shape[0] == 1 else p
    k = np.searchsorted(record_steps, t0)
    for t in range(t0, t1):
        if record.due(record_steps, k, t):
            theta_rec[p, k, :] = theta
            k += 1
        for q in range(b):
            if sampler == samplers.FULL:
                idx[q] = q
            elif sampler == samplers.REPLAY:
                idx[q] = replay[row, t * b + q]
            elif sampler == samplers.WITH_REPLACEMENT:
                idx[q] = samplers.with_replacement(st, n)
            elif sampler == samplers.EPOCH:
                idx[q], cur = samplers.epoch_next(perm, cur, st)
            else:
                idx[q] = samplers.distinct_next(perm, q, st)
        if sampler == samplers.EPOCH:
            cur = samplers.epoch_end_of_batch(cur, n, b, drop_last)
        loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs)
        lr_t = lrs[g, 0] if const_lr else lrs[g, t]
        optim_kernels.fused_step(precond, hp, theta, grad, ostate, t + 1, lr_t)
        size = 0.0
        for j in range(n_par):
            size += abs(theta[j])
        if guard.beyond(size, bound):
            diverged_at[p] = t + 1
            break
    thetas[p, :] = theta
    opt_states[p, :, :] = ostate
    states[p, :] = st[0, :]
    perms[p, :] = perm
    pos[p] = cur
    if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
        theta_rec[p, k, :] = theta


@njit(cache=True, nogil=True)
def _paths(paths, thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last, replay,
           states, perms, pos, precond_of, hps, lrs, run_of, t0, t1, record_steps, theta_rec, bound,
           diverged_at, record_final):
    for p in paths:
        advance_path(p, thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last,
                     replay, states, perms, pos, precond_of, hps, lrs, run_of, t0, t1, record_steps, theta_rec,
                     bound, diverged_at, record_final)


def applies(setting: dict) -> bool:
    """The compiled kernel without label noise (the NumPy twin keeps the generic loop)."""
    return setting["kernel"] == "numba" and setting["label_noise"] == 0.0


def advance(thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last, replay,
            states, perms, pos, label_noise, precond_of, hps, lrs, run_of, t0, t1, record_steps, theta_rec, bound,
            diverged_at, record_final, workers=None):
    """The trainer's tuned-loop call: every path from ``t0`` to ``t1`` on ``workers`` threads."""
    drive.on_threads(_paths, thetas.shape[0], workers, thetas, opt_states, Xs, ys, data_of, iargs, fargs,
                     int(ws_size), int(sampler), int(batch), bool(drop_last), replay, states, perms, pos,
                     precond_of, hps, lrs, run_of, int(t0), int(t1), record_steps, theta_rec, float(bound),
                     diverged_at, bool(record_final))
