"""The training loop of the MLP with dropout or batch normalization (:mod:`dyntools.models.mlp_regularized`).

Such a network carries state from step to step that is not a parameter: the stream of its dropout masks
and the running statistics of its batch norms. :func:`dyntools.train` runs it through this loop (the
generic loop knows neither); step ``t`` of a path is the generic step with two additions:

    I_t        = the sampler's examples for step t                          (the sampling stream)
    M_t        = keep masks 1[u < 1 − p], B × H uniforms                     (the ``mlp.dropout`` stream)
    L, g_t, μ, S = the regularized kernel in training mode at θ_t on X[I_t]  (batch statistics μ, S)
    r_μ, r_σ²  ← PyTorch's running-statistics update with μ, S / (B − 1)    (``update_running``)
    θ_{t+1}    = the runs' compiled optimizer step of g_t                  (the same step as every loop)

The dropout stream of path (run g, seed s) is ``SeedSequence(seed, (KEY, g, *stream_key, s))`` with
``KEY = streams.KEYS["mlp.dropout"]`` — ``(KEY, *stream_key, s)`` for every run with ``common_stream`` —,
the same derivation as the sampling streams, so a path's masks do not depend on the number of paths or
workers. The running statistics are recorded with θ (before the update of a recorded step) and returned
as ``bn_running`` (final, ``[run, seed, 2, H]``: means, variances) and ``bn_running_rec``
(``[run, seed, record, 2, H]``), which the trainer's recorded losses use (evaluation mode).

:func:`advance_paths` is compiled (paths on threads, each on private copies of its rows); with
``kernel="numpy"`` the trainer's NumPy twin loop runs the model's NumPy kernel wrapped with the NumPy
twins of the mask draw and of the update (:func:`numpy_kernel`): the same draws in the same order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.dynamics import path_loop
from dyntools.dynamics.path_loop import LoopArrays, close_path, end_step, open_path
from dyntools.engine import drive, guard, record, samplers, streams
from dyntools.models import mlp_regularized as R


@njit(cache=True, nogil=True, error_model="numpy")
def advance_paths(paths, step, arrays, drop_states, running, running_rec, keep, momentum, batch_norm, t0, t1,
                  record_steps, theta_rec, bound, diverged_at, record_final):
    """Advance every path of ``paths`` from step ``t0`` to ``t1`` (``step`` and ``arrays`` as in
    :func:`dyntools.dynamics.path_loop.advance_path`; ``drop_states`` uint64[P, 4], ``running``
    float64[P, 2, H], ``running_rec`` float64[P, K, 2, H])."""
    a = arrays
    sampler, label_noise, drop_last, replay, fargs = a.sampler, a.label_noise, a.drop_last, a.replay, a.fargs
    H = running.shape[2]
    for p in paths:
        if diverged_at[p] != guard.NEVER:
            continue
        theta, ostate, st, perm, cur, X, y, g = open_path(a, p)
        dst = drop_states[p:p + 1].copy()
        run = running[p].copy()
        n = X.shape[0]
        b = n if sampler == samplers.FULL else a.batch
        idx = np.empty(b, dtype=np.int64)
        noise = np.zeros(b)
        grad = np.empty(theta.shape[0])
        ws = np.zeros(a.ws_size)
        masks = ws[:b * H].reshape((b, H))
        stats = ws[b * H:b * H + 2 * H].reshape((2, H))
        dropout = fargs[1] != 0.0
        row = 0 if replay.shape[0] == 1 else p
        k = np.searchsorted(record_steps, t0)
        for t in range(t0, t1):
            if record.due(record_steps, k, t):
                theta_rec[p, k, :] = theta
                running_rec[p, k] = run
                k += 1
            cur = samplers.draw_batch(sampler, idx, noise, label_noise, b, n, replay, row, t, perm, cur, st,
                                      drop_last)
            if dropout:
                R.draw_masks(dst, masks, keep)
            loss = R.loss_grad(theta, X, y, idx, b, noise, grad, ws, a.iargs, fargs)
            if batch_norm:
                R.update_running(run, stats, momentum, b)
            if end_step(step, a, p, g, t, t0, loss, theta, grad, ostate, bound, diverged_at):
                break
        close_path(a, p, theta, ostate, st, perm, cur)
        drop_states[p, :] = dst[0, :]
        running[p] = run
        if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
            theta_rec[p, k, :] = theta
            running_rec[p, k] = run


def numpy_kernel(dst, run, running_rec_p, record_steps, t0, keep, momentum, batch_norm, dropout, n_hidden):
    """The model's NumPy kernel for the trainer's twin loop of one path: before each call the NumPy masks
    (:func:`~dyntools.models.mlp_regularized.draw_masks_np`) and, at a recorded step, the running statistics
    into ``running_rec_p``; after it the running update. Call ``c`` is step ``t0 + c``."""
    calls = [0]

    def kernel(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
        t = t0 + calls[0]
        calls[0] += 1
        k = record.start_index(record_steps, t)
        if record.due_np(record_steps, k, t):
            running_rec_p[k] = run
        H = n_hidden
        if dropout:
            R.draw_masks_np(dst, ws[:b * H].reshape(b, H), keep)
        loss = R.loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs)
        if batch_norm:
            R.update_running_np(run, ws[b * H:b * H + 2 * H].reshape(2, H), momentum, b)
        return loss

    return kernel


class RegularizedLoop:
    """The trainer's loop for an MLP with dropout or batch norm (the tuned-loop calling convention of
    :mod:`dyntools.dynamics.fast`); it keeps the dropout streams and running statistics across chunks and
    exposes them in :attr:`extras` (and the recorded statistics in :attr:`running_rec`)."""

    def __init__(self, model, setting: dict):
        self.model = model
        self.numpy = setting["kernel"] == "numpy"
        self.setting = setting
        if model.batch_norm and setting["batch"] < 2:
            raise ValueError(f"Invalid batch: {setting['batch']} (batch norm in training mode needs at least 2 "
                             "examples per step)")
        self.drop_states = self.running = self.running_rec = None
        self.extras: dict[str, np.ndarray] = {}

    def dropout_states(self, G: int, S: int) -> np.ndarray:
        """The paths' dropout streams (see the module docstring)."""
        s = self.setting
        key = streams.key("mlp.dropout")
        if s.get("common_stream"):
            return np.tile(streams.path_states(s["seed"], S, key, *s["stream_key"]), (G, 1))
        return np.concatenate([streams.path_states(s["seed"], S, key, g, *s["stream_key"]) for g in range(G)])

    def __call__(self, arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final,
                 workers=None):
        """Advance every path (``step``: the compiled step, or its NumPy twin with ``kernel="numpy"``)."""
        model = self.model
        P, K, H = arrays.thetas.shape[0], theta_rec.shape[1], model.n_hidden
        if self.running is None:
            G = int(arrays.run_of.max()) + 1
            self.drop_states = self.dropout_states(G, P // G)
            self.running = np.ascontiguousarray(np.tile(model.running_init(), (P, 1, 1)))
            self.running_rec = np.full((P, K, 2, H), np.nan)
        keep, momentum = 1.0 - model.dropout, model.bn_momentum
        if self.numpy:
            for p in range(P):
                kernel = numpy_kernel(self.drop_states[p:p + 1], self.running[p], self.running_rec[p], record_steps,
                                      int(t0), keep, momentum, model.batch_norm, model.dropout > 0.0, H)
                path_loop.advance_path_numpy(kernel, step, p, arrays, t0, t1, record_steps, theta_rec, bound,
                                   diverged_at, record_final)
                k = record.start_index(record_steps, t1)
                if record_final and diverged_at[p] == guard.NEVER and record.due_np(record_steps, k, t1):
                    self.running_rec[p, k] = self.running[p]
        else:
            call = path_loop.with_pointers(advance_paths, {1: path_loop.step_type(arrays)})
            drive.on_threads(call, P, workers, step, arrays, self.drop_states, self.running, self.running_rec,
                             keep, momentum, model.batch_norm, t0, t1, record_steps, theta_rec, float(bound),
                             diverged_at, record_final)
        if model.batch_norm:
            self.extras = {"bn_running": self.running.copy(), "bn_running_rec": self.running_rec.copy()}


def select(model, setting: dict):
    """The loop of an MLP with dropout or batch norm (every setting: it is the only loop that knows them)."""
    return RegularizedLoop(model, setting)
