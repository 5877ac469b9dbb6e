"""The generic step loop of one training path, compiled, and its NumPy twin.

Step ``t`` of path ``p`` (see :mod:`dyntools.dynamics.train` for the runs × seeds layout) is

    I_t        = the sampler's examples for step t                         (dyntools.engine.samplers)
    L, g_t     = kernel(θ_t; X[I_t], y[I_t] + δ ξ_t)                        (the model's loss_grad)
    θ_{t+1}    = optimizer step of g_t at learning rate lr_t               (dyntools.optim.kernels.fused_step)

with the iterate recorded when ``t`` is on the record grid and the path stopped at the first step whose
parameters are non-finite or beyond the bound (:mod:`dyntools.engine.guard`).

:func:`advance_path` is inlined into a ``nogil`` loop over paths: one generated per model kernel, cached on disk,
in :mod:`dyntools.dynamics.loops`; :func:`advance_paths_by_pointer` (the kernel called through a function
pointer, compiled once for all kernels of the protocol's signature and cached) for the generated kernels of
symbolic models (:func:`by_pointer`); and :func:`advance_paths` (the kernel passed as an argument, compiled
once per process) for any other model. :func:`advance_path_numpy` is the twin. This module sits below the
trainer, the cached loops and the tuned loops, which all use it, and imports none of them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import guard, record, rng, samplers
from dyntools.optim import kernels as optim_kernels


@njit(inline="always", error_model="numpy")
def advance_path(kernel, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    """Advance path ``p`` from step ``t0`` to ``t1`` in place (see the module docstring).

    ``arrays`` is the tuple ``(thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch,
    drop_last, replay, states, perms, pos, label_noise, precond_of, hps, lrs, run_of, step_losses)``:

    thetas : float64[P, p]; opt_states : float64[P, 3, p]; Xs, ys : [S', n, d], [S', n] (data_of[p]
    picks the path's data set); states : uint64[P, 4]; perms : int64[P, n]; pos : int64[P];
    precond_of : int64[G]; hps : float64[G, N_HPARAMS]; lrs : float64[G, 1 or t1 − t0] (lr · m_t: constant, or
    the rates of steps t0 … t1 − 1 of this call); run_of : int64[P];
    replay : int64[P or 1, T·b] or (0, 0); step_losses : float64[P, T] (the kernel's mini-batch loss
    of every step) or (P, 0); theta_rec : float64[P, K, p]; diverged_at : int64[P].
    The path works on private copies of its rows (neighbouring rows share cache lines).

    It is inlined into each built-in model's cached loop (:mod:`dyntools.dynamics.loops`): a compiled
    kernel passed as an argument cannot be cached on disk by numba, a kernel named in the body can.
    """
    (thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch, drop_last, replay, states, perms,
     pos, label_noise, precond_of, hps, lrs, run_of, step_losses) = arrays
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
    grad = np.empty(n_par, dtype=theta.dtype)
    ws = np.zeros(ws_size, dtype=theta.dtype)
    const_lr = lrs.shape[1] == 1
    row = 0 if replay.shape[0] == 1 else p
    k = np.searchsorted(record_steps, t0)
    for t in range(t0, t1):
        if record.due(record_steps, k, t):
            theta_rec[p, k, :] = theta
            k += 1
        cur = samplers.draw_batch(sampler, idx, noise, label_noise, b, n, replay, row, t, perm, cur, st, drop_last)
        loss = kernel(theta, X, y, idx, b, noise, grad, ws, iargs, fargs)
        if step_losses.shape[1] > 0:
            step_losses[p, t] = loss
        lr_t = lrs[g, 0] if const_lr else lrs[g, t - t0]
        optim_kernels.fused_step(precond, hp, theta, grad, ostate, t + 1, lr_t)
        if guard.beyond(guard.checked_size(theta, bound), bound):
            diverged_at[p] = t + 1
            break
    thetas[p, :] = theta
    opt_states[p, :, :] = ostate
    states[p, :] = st[0, :]
    perms[p, :] = perm
    pos[p] = cur
    if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
        theta_rec[p, k, :] = theta


@njit(nogil=True, error_model="numpy")
def advance_paths(paths, kernel, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    """Every path in ``paths`` with ``kernel`` given as an argument: the loop of a model that does not
    have a cached loop in :mod:`dyntools.dynamics.loops`; compiled once per process."""
    for p in paths:
        advance_path(kernel, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)


@njit(cache=True, nogil=True, error_model="numpy")
def advance_paths_by_pointer(paths, kernel, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                             record_final):
    """:func:`advance_paths` with ``kernel`` typed as a function pointer (numba's first-class
    ``FunctionType`` of the model protocol's signature) instead of as its dispatcher: compiled once for
    every kernel of that signature and cached on disk — see :func:`by_pointer`."""
    for p in paths:
        advance_path(kernel, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)


def by_pointer(kernel, args: tuple):
    """A loop over paths for ``kernel`` (a numba dispatcher of the model protocol) that calls it through a
    function pointer: ``fn(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)``.

    The loop is compiled once per argument types for all kernels (and cached on disk), so a new model pays
    only for compiling its own kernel — not, as a loop with the kernel named in its body does, ~15 s for the
    whole step loop (samplers, every optimizer, recording, the guard) again. The price is an indirect call
    per step, which the kernels of models declared in sympy (:class:`~dyntools.models.symbolic.SymbolicModel`)
    dwarf. ``args`` is the ``arrays`` tuple of :func:`advance_path` (its types fix the kernel's signature)."""
    from numba import typeof, types

    (thetas, _, Xs, ys, _, iargs, fargs, *_rest) = args
    vec = types.Array(typeof(thetas).dtype, 1, "C")
    signature = types.float64(vec, typeof(Xs[0]), typeof(ys[0]), types.int64[::1], types.int64, vec, vec, vec,
                              typeof(iargs), typeof(fargs))
    function = types.FunctionType(signature)

    def loop(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
        rest = (arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)
        arg_types = (typeof(paths), function, *(typeof(a) for a in rest))
        compiled = advance_paths_by_pointer.overloads.get(arg_types)
        if compiled is None:
            advance_paths_by_pointer.compile(arg_types)
            compiled = advance_paths_by_pointer.overloads[arg_types]
        compiled.entry_point(paths, kernel, *rest)

    return loop


def advance_path_numpy(kernel_np, p, thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler, batch,
                       drop_last, replay, states, perms, pos, label_noise, precond_of, hps, lrs, run_of, step_losses,
                       t0, t1, record_steps, theta_rec, bound, diverged_at, record_final, stepper=None):
    """NumPy twin of :func:`advance_path`: the same draws in the same order; the optimizer step is the
    readable chain's arithmetic on whole arrays (:func:`dyntools.optim.kernels.fused_step_np`, the
    same bits as :func:`~dyntools.optim.kernels.fused_step`'s element-wise Python body) — or, with
    ``stepper`` (:class:`dyntools.optim.chain_step.ChainStepper`), the path's optimizer chain itself
    (an optimizer without a fused kernel; ``kernel_np`` may then be the compiled kernel)."""
    if diverged_at[p] != guard.NEVER:
        return
    theta, ostate, st = thetas[p], opt_states[p], states[p:p + 1]
    perm = perms[p]
    X, y = Xs[data_of[p]], ys[data_of[p]]
    g = run_of[p]
    n = X.shape[0]
    b = n if sampler == samplers.FULL else batch
    grad = np.empty(theta.shape[0], dtype=theta.dtype)
    ws = np.zeros(ws_size, dtype=theta.dtype)
    row = 0 if replay.shape[0] == 1 else p
    k = record.start_index(record_steps, t0)
    for t in range(t0, t1):
        if record.due_np(record_steps, k, t):
            theta_rec[p, k] = theta
            k += 1
        idx = np.empty(b, dtype=np.int64)
        noise = np.zeros(b)
        fixed = label_noise == 0.0 and sampler in (samplers.FULL, samplers.REPLAY)
        if fixed:                    # no draws: the batch in one slice (the loop below gives the same)
            idx[:] = np.arange(b) if sampler == samplers.FULL else replay[row, t * b:(t + 1) * b]
        for q in range(0 if fixed else b):
            if sampler == samplers.FULL:
                idx[q] = q
            elif sampler == samplers.REPLAY:
                idx[q] = replay[row, t * b + q]
            elif sampler == samplers.WITH_REPLACEMENT:
                idx[q] = samplers.with_replacement_np(st, n)
            elif sampler == samplers.EPOCH:
                idx[q], pos[p] = samplers.epoch_next_np(perm, int(pos[p]), st)
            else:
                idx[q] = samplers.distinct_next_np(perm, q, st)
            if label_noise != 0.0:
                noise[q] = label_noise * rng.normal_np(st)[0]
        if sampler == samplers.EPOCH:
            pos[p] = samplers.epoch_end_of_batch_np(int(pos[p]), n, b, drop_last)
        loss = kernel_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs)
        if step_losses.shape[1] > 0:
            step_losses[p, t] = loss
        lr_t = lrs[g, 0] if lrs.shape[1] == 1 else lrs[g, t - t0]
        with np.errstate(over="ignore", invalid="ignore"):
            if stepper is not None:
                stepper(theta, grad, t + 1, lr_t)
            else:
                optim_kernels.fused_step_np(precond_of[g], hps[g], theta, grad, ostate, t + 1, lr_t)
            size = guard.l1_size_np(theta)
        if guard.beyond_np(size, bound):
            diverged_at[p] = t + 1
            break
    if record_final and diverged_at[p] == guard.NEVER and record.due_np(record_steps, k, t1):
        theta_rec[p, k] = theta
