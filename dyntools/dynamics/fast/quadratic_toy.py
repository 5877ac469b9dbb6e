"""The quadratic toy's tuned loop (:mod:`dyntools.models.quadratic_toy`): SGD and GD on ensembles of paths.

The compiled kernel advances ``P`` independent paths (``prange``) of

    θ_{t+1} = θ_t + η_t θ_t x_{i_t} (y_{i_t} − x_{i_t} θ_t²),

with ``i_t`` drawn from the path's own xoshiro256** stream (:mod:`dyntools.engine.rng`) or read from a
user-given index array (exact replay). Full-batch GD is the same recursion on the one-point data
set ``x = √E[x²]``. A path stops at the first step where θ is non-finite or ``|θ| > bound``, and
that step is reported.

While it runs, the kernel also keeps the model's three per-path counters for the proposition
(``in_band``, ``bounces``, ``entry``): the toy's step hooks, whose arithmetic
(:func:`dyntools.models.quadratic_toy.count_step`) this loop calls after every step that passes the guard, as the
generic loop calls the hook; the counters live in the loop's hook state (``LoopArrays.hook_state``).

Why this loop stays: its step ``θ + ((η θ) x) (y − x θ²)`` is the toy's closed-form update, not the kernel's
gradient followed by the optimizer's step ``θ − η (−θ x r)`` — re-associated products, equal to the generic
loop at a stated tolerance (tests/test_toy_stabilization.py), not bitwise; and it runs the ensemble in lock step
with the paths' streams in registers.

:func:`advance_numpy` is the plain NumPy twin (vectorized over paths, a Python loop over steps)
used by the tests and as the benchmark baseline; it gives bitwise-identical results. :class:`FastPath` is
the trainer's tuned loop for :class:`~dyntools.models.quadratic_toy.ToyModel` (registered in
:mod:`dyntools.dynamics.fast`); :func:`dyntools.dynamics.toy_sgd.simulate_toy` runs it through the trainer.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from dyntools.dynamics.path_loop import LoopArrays, first_record
from dyntools.engine import guard, record, samplers
from dyntools.models.quadratic_toy import count_step, count_step_np

# Columns of the per-path counters array.
IN_BAND, BOUNCES, ENTRY, DIVERGED_AT = 0, 1, 2, 3


@njit(parallel=True, cache=True)
def advance(theta, state, counters, x, y, etas, indices, t0, t1, record_steps, theta_rec,
            theta_star, m2, band_lo, band_hi, eps0, bound, record_final):
    """Advance every active path from step ``t0`` to ``t1`` in place.

    theta : float64[P]           current iterates (step ``t0``)
    state : uint64[P, 4]         xoshiro256** states (advanced in place; unused with ``indices``)
    counters : int64[P, 4]       in_band, bounces, entry, diverged_at (−1 while alive)
    x, y : float64[n]            data (y = x θ*²)
    etas : float64[1] or [t1−t0] step size: constant, or one value per step t0 … t1 − 1
    indices : int64[P|1, T]      sample indices to replay, or an empty (0, 0) array to draw them
    record_steps : int64[K]      sorted steps to record; ``theta_rec`` is float64[P, K]
    record_final : bool          also record step ``t1`` (the last chunk of a run)
    """
    n_paths = theta.shape[0]
    n = x.shape[0]
    const_eta = etas.shape[0] == 1
    replay = indices.shape[0] > 0
    row_stride = 0 if indices.shape[0] == 1 else 1  # one shared replay row, or one per path
    ts2 = theta_star * theta_star
    mid = 1.0 - eps0
    inv_ts = 1.0 / theta_star
    for p in prange(n_paths):
        if counters[p, DIVERGED_AT] >= 0:
            continue
        th = theta[p]
        k = first_record(record_steps, t0)
        in_band = counters[p, IN_BAND]
        bounces = counters[p, BOUNCES]
        entry = counters[p, ENTRY]
        s0, s1, s2, s3 = state[p, 0], state[p, 1], state[p, 2], state[p, 3]
        for t in range(t0, t1):
            if record.due(record_steps, k, t):
                theta_rec[p, k] = th
                k += 1
            if replay:
                i = indices[p * row_stride, t]
            else:
                i, s0, s1, s2, s3 = samplers.with_replacement_reg(s0, s1, s2, s3, n)
            eta = etas[0] if const_eta else etas[t - t0]
            xi = x[i]
            new = th + eta * th * xi * (y[i] - xi * th * th)
            if guard.beyond(abs(new), bound):
                counters[p, DIVERGED_AT] = t + 1
                th = new
                break
            in_band, bounces, entry = count_step(t, th, new, in_band, bounces, entry, ts2, inv_ts, m2, band_lo,
                                                 band_hi, mid)
            th = new
        theta[p] = th
        state[p, 0], state[p, 1], state[p, 2], state[p, 3] = s0, s1, s2, s3
        counters[p, IN_BAND] = in_band
        counters[p, BOUNCES] = bounces
        counters[p, ENTRY] = entry
        if record_final and counters[p, DIVERGED_AT] < 0 and record.due(record_steps, k, t1):
            theta_rec[p, k] = th


def advance_numpy(theta, state, counters, x, y, etas, indices, t0, t1, record_steps, theta_rec,
                  theta_star, m2, band_lo, band_hi, eps0, bound, record_final):
    """NumPy twin of :func:`advance`: same arguments, same arithmetic, same in-place updates."""
    n = x.shape[0]
    alive = counters[:, DIVERGED_AT] < 0
    ts2 = theta_star * theta_star
    mid = 1.0 - eps0
    k = record.start_index(record_steps, t0)
    for t in range(t0, t1):
        if record.due_np(record_steps, k, t):
            theta_rec[alive, k] = theta[alive]
            k += 1
        if indices.shape[0] > 0:
            i = indices[0 if indices.shape[0] == 1 else slice(None), t]
            i = np.broadcast_to(i, theta.shape)
        else:
            # As in the kernel, only live paths draw (and advance their streams).
            live_states = state[alive]
            i = np.zeros(theta.shape, dtype=np.int64)
            i[alive] = samplers.with_replacement_rows_np(live_states, n)
            state[alive] = live_states
        eta = etas[0] if etas.shape[0] == 1 else etas[t - t0]
        xi = x[i]
        th = theta
        with np.errstate(over="ignore", invalid="ignore"):
            new = th + eta * th * xi * (y[i] - xi * th * th)
        blew = alive & guard.beyond_np(np.abs(new), bound)
        counters[blew, DIVERGED_AT] = t + 1
        theta[blew] = new[blew]
        ok = alive & ~blew
        counted = count_step_np(t, th, new, counters[:, IN_BAND], counters[:, BOUNCES], counters[:, ENTRY], ts2,
                                1.0 / theta_star, m2, band_lo, band_hi, mid)    # the model's counters (its hook's twin)
        for col, value in zip((IN_BAND, BOUNCES, ENTRY), counted):
            np.copyto(counters[:, col], value, where=ok)
        theta[ok] = new[ok]
        alive = ok
    if record_final and record.due_np(record_steps, k, t1):
        theta_rec[alive, k] = theta[alive]



# ------------------------------------------------------------------------------------------ fast path

class FastPath:
    """The toy's lock-step ensemble as the trainer's tuned loop for a :class:`ToyModel`.

    It applies to one run of plain SGD (no momentum or decay) with batch 1, drawn with replacement,
    replayed, or full batch on the one-point set; it runs :func:`advance` (or its twin
    :func:`advance_numpy` when the trainer asks for the NumPy kernel) on the counters of the model's hook
    state (``arrays.hook_state``, columns in_band, bounces, entry of :mod:`dyntools.models.quadratic_toy`), which
    the trainer turns into the result's arrays as for the generic loop.
    """

    def __init__(self, toy, setting):
        self.toy = toy
        self.eta = float(setting["optimizers"][0].lr)
        self.numpy = setting["kernel"] == "numpy"

    @staticmethod
    def applies(setting: dict) -> bool:
        opts = setting["optimizers"]
        return (len(opts) == 1 and setting["batch"] == 1 and setting["label_noise"] == 0.0
                and not setting.get("step_loss")
                and setting["sampler"] in ("with-replacement", "replay", "full")
                and all(setting["plain_sgd"]))

    def __call__(self, arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final,
                 workers=None):
        toy = self.toy
        thetas, states, Xs, ys, lrs, replay = (arrays.thetas, arrays.states, arrays.Xs, arrays.ys, arrays.lrs,
                                               arrays.replay)
        P = thetas.shape[0]
        counters = np.empty((P, 4), dtype=np.int64)
        counters[:, :DIVERGED_AT] = arrays.hook_state[:, 1:]      # in_band, bounces, entry (the hook state's order)
        counters[:, DIVERGED_AT] = diverged_at
        theta = np.ascontiguousarray(thetas[:, 0])
        rec = np.ascontiguousarray(theta_rec[:, :, 0])
        band_lo, band_hi = toy.band(self.eta)
        step_fn = advance_numpy if self.numpy else advance
        step_fn(theta, states, counters, np.ascontiguousarray(Xs[0][:, 0]), ys[0], lrs[0], replay, int(t0),
                int(t1), record_steps, rec, toy.theta_star, toy.second_moment, band_lo, band_hi,
                toy.eps0(self.eta), float(bound), bool(record_final))
        thetas[:, 0] = theta
        theta_rec[:, :, 0] = rec
        diverged_at[:] = counters[:, DIVERGED_AT]
        arrays.hook_state[:, 1:] = counters[:, :DIVERGED_AT]


def select(model, setting: dict):
    """The lock-step loop for ``model`` (a :class:`~dyntools.models.quadratic_toy.ToyModel`) when it
    applies to ``setting``, else None."""
    return FastPath(model.toy, setting) if FastPath.applies(setting) else None
