"""SGD and GD on the quadratic toy (:mod:`dyntools.models.quadratic_toy`) for ensembles of paths.

The compiled kernel advances ``P`` independent paths (``prange``) of

    θ_{t+1} = θ_t + η_t θ_t x_{i_t} (y_{i_t} − x_{i_t} θ_t²),

with ``i_t`` drawn from the path's own xoshiro256** stream (:mod:`dyntools.engine.rng`) or read from a
user-given index array (exact replay). Full-batch GD is the same recursion on the one-point data
set ``x = √E[x²]``. A path stops at the first step where θ is non-finite or ``|θ| > bound``, and
that step is reported.

While it runs, the kernel also keeps three per-path counters for the proposition
(:mod:`dyntools.stabilization`), in units ``z = θ/θ*``:

* ``in_band``: steps ``t`` with ``F(θ_t) ∈ (ε₀θ*², 0.17θ*²)``;
* ``bounces``: steps with ``z_t, z_{t+1}`` on opposite sides, one in ``(0.65, 1−ε₀)``, the other in
  ``(1−ε₀, 1.162)``;
* ``entry``: the first step from which every later step is such a bounce.

:func:`advance_numpy` is the plain NumPy twin (vectorized over paths, a Python loop over steps)
used by the tests and as the benchmark baseline; it gives bitwise-identical results.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from dyntools import validation
from dyntools.engine import rng

# Columns of the per-path counters array.
IN_BAND, BOUNCES, ENTRY, DIVERGED_AT = 0, 1, 2, 3


@njit(inline="always")
def _bounce(z0, z1, low, mid, high):
    lo0 = low < z0 < mid
    hi0 = mid < z0 < high
    lo1 = low < z1 < mid
    hi1 = mid < z1 < high
    return (lo0 and hi1) or (hi0 and lo1)


@njit(parallel=True, cache=True)
def advance(theta, state, counters, x, y, etas, indices, t0, t1, record_steps, theta_rec,
            theta_star, m2, band_lo, band_hi, eps0, bound, record_final):
    """Advance every active path from step ``t0`` to ``t1`` in place.

    theta : float64[P]           current iterates (step ``t0``)
    state : uint64[P, 4]         xoshiro256** states (advanced in place; unused with ``indices``)
    counters : int64[P, 4]       in_band, bounces, entry, diverged_at (−1 while alive)
    x, y : float64[n]            data (y = x θ*²)
    etas : float64[1] or [T]     step size: constant, or one value per step
    indices : int64[P|1, T]      sample indices to replay, or an empty (0, 0) array to draw them
    record_steps : int64[K]      sorted steps to record; ``theta_rec`` is float64[P, K]
    record_final : bool          also record step ``t1`` (the last chunk of a run)
    """
    n_paths = theta.shape[0]
    n = x.shape[0]
    const_eta = etas.shape[0] == 1
    replay = indices.shape[0] > 0
    row_stride = 0 if indices.shape[0] == 1 else 1  # one shared replay row, or one per path
    n_rec = record_steps.shape[0]
    ts2 = theta_star * theta_star
    mid = 1.0 - eps0
    inv_ts = 1.0 / theta_star
    for p in prange(n_paths):
        if counters[p, DIVERGED_AT] >= 0:
            continue
        th = theta[p]
        k = np.searchsorted(record_steps, t0)
        in_band = counters[p, IN_BAND]
        bounces = counters[p, BOUNCES]
        entry = counters[p, ENTRY]
        s0, s1, s2, s3 = state[p, 0], state[p, 1], state[p, 2], state[p, 3]
        for t in range(t0, t1):
            if k < n_rec and record_steps[k] == t:
                theta_rec[p, k] = th
                k += 1
            if replay:
                i = indices[p * row_stride, t]
            else:
                r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
                i = int(rng.u64_to_unit(r) * n)
            eta = etas[0] if const_eta else etas[t]
            xi = x[i]
            new = th + eta * th * xi * (y[i] - xi * th * th)
            if not abs(new) <= bound:  # also true for NaN
                counters[p, DIVERGED_AT] = t + 1
                th = new
                break
            gap = ts2 - th * th
            loss = 0.25 * m2 * gap * gap
            if band_lo < loss < band_hi:
                in_band += 1
            if _bounce(th * inv_ts, new * inv_ts, 0.65, mid, 1.162):
                bounces += 1
            else:
                entry = t + 1
            th = new
        theta[p] = th
        state[p, 0], state[p, 1], state[p, 2], state[p, 3] = s0, s1, s2, s3
        counters[p, IN_BAND] = in_band
        counters[p, BOUNCES] = bounces
        counters[p, ENTRY] = entry
        if record_final and counters[p, DIVERGED_AT] < 0 and k < n_rec and record_steps[k] == t1:
            theta_rec[p, k] = th


def advance_numpy(theta, state, counters, x, y, etas, indices, t0, t1, record_steps, theta_rec,
                  theta_star, m2, band_lo, band_hi, eps0, bound, record_final):
    """NumPy twin of :func:`advance`: same arguments, same arithmetic, same in-place updates."""
    n = x.shape[0]
    alive = counters[:, DIVERGED_AT] < 0
    ts2 = theta_star * theta_star
    mid = 1.0 - eps0
    rec_index = {int(s): j for j, s in enumerate(record_steps)}
    for t in range(t0, t1):
        if t in rec_index:
            theta_rec[alive, rec_index[t]] = theta[alive]
        if indices.shape[0] > 0:
            i = indices[0 if indices.shape[0] == 1 else slice(None), t]
            i = np.broadcast_to(i, theta.shape)
        else:
            # As in the kernel, only live paths draw (and advance their streams).
            live_states = state[alive]
            i = np.zeros(theta.shape, dtype=np.int64)
            i[alive] = rng.randbelow_np(live_states, n)
            state[alive] = live_states
        eta = etas[0] if etas.shape[0] == 1 else etas[t]
        xi = x[i]
        th = theta
        with np.errstate(over="ignore", invalid="ignore"):
            new = th + eta * th * xi * (y[i] - xi * th * th)
        blew = alive & ~(np.abs(new) <= bound)
        counters[blew, DIVERGED_AT] = t + 1
        theta[blew] = new[blew]
        ok = alive & ~blew
        gap = ts2 - th * th
        with np.errstate(over="ignore", invalid="ignore"):
            loss = 0.25 * m2 * gap * gap
            z0, z1 = th / theta_star, new / theta_star
        counters[ok & (band_lo < loss) & (loss < band_hi), IN_BAND] += 1
        lo0, hi0 = (0.65 < z0) & (z0 < mid), (mid < z0) & (z0 < 1.162)
        lo1, hi1 = (0.65 < z1) & (z1 < mid), (mid < z1) & (z1 < 1.162)
        bounce = (lo0 & hi1) | (hi0 & lo1)
        counters[ok & bounce, BOUNCES] += 1
        counters[ok & ~bounce, ENTRY] = t + 1
        theta[ok] = new[ok]
        alive = ok
    if record_final and t1 in rec_index:
        theta_rec[alive, rec_index[t1]] = theta[alive]



# ------------------------------------------------------------------------------------------ runner

def simulate_toy(toy, eta: float, *, steps: int, paths: int = 1, theta0=0.5, seed: int = 0,
                 method: str = "sgd", schedule=None, record_steps=None, records: int = 200,
                 indices=None, bound: float | None = None, chunks: int = 1, progress: bool = False,
                 kernel: str = "numba", stream_key: tuple[int, ...] = ()):
    """Run SGD (or full-batch GD) on ``toy`` for ``paths`` independent paths.

    Parameters
    ----------
    toy : QuadraticToy          the data set and θ*
    eta : float                 base step size η > 0
    steps : int                 number of updates T
    paths : int                 independent paths (SGD draws one stream per path from ``seed``)
    theta0 : float or array     initial iterate(s), in absolute units (default 0.5, i.e. 0.5θ* for θ* = 1)
    method : "sgd" | "gd"       stochastic single-sample steps, or full-batch gradient steps
    schedule : Schedule         multiplier of η per step (default constant)
    record_steps : int array    steps to record; default a log grid of ``records`` points
    indices : int array         replay: sample indices, shape (T,) shared or (paths, T)
    bound : float               divergence threshold on |θ| (default 10⁶ θ*)
    chunks : int                run in this many pieces (progress bar granularity)
    kernel : "numba" | "numpy"  the compiled kernel or its NumPy twin
    stream_key : ints           extra SeedSequence key words (e.g. a grid-cell index)

    Returns a :class:`~dyntools.result.RunResult` of kind ``"stabilization"`` with arrays
    ``steps`` (K,), ``theta`` (P, K), ``loss`` (P, K), ``diverged_at`` (P,) (−1: never),
    ``in_band``/``bounces``/``entry`` (P,) and ``etas``; ``status`` is "diverged" if any path
    diverged, else "converged" or "stabilized" from the late losses.
    """
    from dyntools.engine import record as recording
    from dyntools.engine import streams
    from dyntools.engine.progress import progress_bar
    from dyntools.engine.result import RunResult, timed
    from dyntools.optim.schedules import Constant

    timings: dict[str, float] = {}
    eta = validation.positive("eta", eta)
    steps = validation.count("steps", steps)
    paths = validation.count("paths", paths)
    method = validation.one_of("method", method, ("sgd", "gd"))
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    theta_star = toy.theta_star
    bound = 1e6 * theta_star if bound is None else validation.positive("bound", bound)
    theta = np.broadcast_to(np.asarray(theta0, dtype=np.float64), (paths,)).copy()
    if not np.all(np.isfinite(theta)):
        raise ValueError("Invalid theta0: must be finite")
    schedule = Constant() if schedule is None else schedule
    etas = np.ascontiguousarray(schedule.etas(eta, steps), dtype=np.float64)
    if record_steps is None:
        record_steps = recording.log_grid(steps, records)
    record_steps = recording.validate_steps(record_steps, steps)

    if method == "gd":
        x = np.array([np.sqrt(toy.second_moment)])
    else:
        x = np.ascontiguousarray(toy.x, dtype=np.float64)
    y = x * theta_star**2
    if indices is None:
        replay = np.zeros((0, 0), dtype=np.int64)
    else:
        replay = np.atleast_2d(np.asarray(indices))
        if not np.issubdtype(replay.dtype, np.integer) or replay.shape[1] != steps \
                or replay.shape[0] not in (1, paths):
            raise ValueError(f"Invalid indices: expected integers of shape ({steps},) or ({paths}, {steps})")
        if replay.min() < 0 or replay.max() >= x.shape[0]:
            raise ValueError(f"Invalid indices: must lie in [0, {x.shape[0] - 1}]")
        replay = np.ascontiguousarray(replay, dtype=np.int64)

    m2 = toy.second_moment
    eps0 = toy.eps0(eta)
    band_lo, band_hi = toy.band(eta)
    state = streams.path_states(seed, paths, *stream_key)
    counters = np.zeros((paths, 4), dtype=np.int64)
    counters[:, DIVERGED_AT] = -1
    theta_rec = np.full((paths, record_steps.size), np.nan)
    step_fn = advance if kernel == "numba" else advance_numpy
    bounds = np.linspace(0, steps, validation.count("chunks", chunks) + 1).astype(np.int64)
    with timed(timings, "simulate"), progress_bar(steps * paths, "SGD paths" if method == "sgd" else "GD",
                                                  enabled=progress, unit="path-step") as bar:
        for a, b in zip(bounds[:-1], bounds[1:]):
            step_fn(theta, state, counters, x, y, etas, replay, int(a), int(b), record_steps, theta_rec,
                    theta_star, m2, band_lo, band_hi, eps0, bound, bool(b == steps))
            bar.update(int(b - a) * paths)

    loss = toy.loss(theta_rec)
    diverged_at = counters[:, DIVERGED_AT].copy()
    status, message = _classify(loss, diverged_at, theta_star, steps)
    arrays = {
        "steps": record_steps, "theta": theta_rec, "loss": loss, "diverged_at": diverged_at,
        "in_band": counters[:, IN_BAND].copy(), "bounces": counters[:, BOUNCES].copy(),
        "entry": counters[:, ENTRY].copy(), "x": toy.x, "etas": etas,
    }
    config = {
        "model": "quadratic-toy", "method": method, "eta": eta, "steps": steps, "paths": paths,
        "theta_star": theta_star, "x_min": toy.x_min, "x_max": toy.x_max, "n": int(toy.x.size),
        "theta0": np.asarray(theta0, dtype=float).tolist(),
        "schedule": repr(schedule), "bound": bound, "replayed": indices is not None, "kernel": kernel,
    }
    summary = {
        "paths": paths, "diverged": int((diverged_at >= 0).sum()), "regime": toy.regime(eta),
        "eta_interval": toy.eta_interval(), "eps0": eps0, "band": [band_lo, band_hi],
        "final_loss_median": float(np.nanmedian(loss[:, -1])) if np.isfinite(loss[:, -1]).any() else None,
    }
    return RunResult("stabilization", config, arrays, status, message, seed=seed, summary=summary,
                     timings=timings)


def _classify(loss, diverged_at, theta_star, steps):
    n_div = int((diverged_at >= 0).sum())
    if n_div:
        first = int(diverged_at[diverged_at >= 0].min())
        return "diverged", f"{n_div} of {diverged_at.size} paths diverged (first at step {first})"
    tail = loss[:, -max(1, loss.shape[1] // 10):]
    scale = theta_star**4
    if np.all(tail[:, -1] < 1e-20 * scale):
        return "converged", f"all {loss.shape[0]} paths converged to theta* (final loss < 1e-20 theta*^4)"
    level = float(np.median(tail))
    return "stabilized", (f"loss neither converged nor diverged after {steps} steps: "
                          f"median late loss {level:.3g}")

