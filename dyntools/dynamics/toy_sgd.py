"""SGD and GD on the quadratic toy (:mod:`dyntools.models.quadratic_toy`): the stabilization runner.

:func:`simulate_toy` runs ``P`` paths of ``θ_{t+1} = θ_t + η_t θ_t x_{i_t} (y_{i_t} − x_{i_t} θ_t²)`` through
:func:`dyntools.dynamics.train.train`, which takes the toy's lock-step tuned loop
(:mod:`dyntools.dynamics.fast.quadratic_toy`: the kernel, its NumPy twin and the per-path counters of the
proposition ``in_band``, ``bounces``, ``entry``), and classifies the ensemble (diverged, converged or
stabilized).
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.dynamics.train import train
from dyntools.engine import guard
from dyntools.engine.result import RunResult, message
from dyntools.models.quadratic_toy import ToyModel, toy_data
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import Constant

# ------------------------------------------------------------------------------------------ runner

def simulate_toy(toy, eta: float, *, steps: int, paths: int = 1, theta0=0.5, seed: int = 0,
                 method: str = "sgd", schedule=None, record_steps=None, records: int = 200,
                 indices=None, bound: float | None = None, chunks: int = 1, progress: bool = False,
                 kernel: str = "numba", stream_key: tuple[int, ...] = ()):
    """Run SGD (or full-batch GD) on ``toy`` for ``paths`` independent paths, through
    :func:`dyntools.dynamics.train.train` (which takes the toy's lock-step tuned loop,
    :class:`dyntools.dynamics.fast.quadratic_toy.FastPath`).

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

    Returns a :class:`~dyntools.engine.result.RunResult` of kind ``"stabilization"`` with arrays
    ``steps`` (K,), ``theta`` (P, K), ``loss`` (P, K), ``diverged_at`` (P,) (−1: never),
    ``in_band``/``bounces``/``entry`` (P,) and ``etas``; ``status`` is "diverged" if any path
    diverged, else "converged" or "stabilized" from the late losses.
    """
    eta = validation.positive("eta", eta)
    steps = validation.count("steps", steps)
    paths = validation.count("paths", paths)
    method = validation.one_of("method", method, ("sgd", "gd"))
    theta_star = toy.theta_star
    bound = 1e6 * theta_star if bound is None else validation.positive("bound", bound)
    theta = np.broadcast_to(np.asarray(theta0, dtype=np.float64), (paths,)).copy()
    if not np.all(np.isfinite(theta)):
        raise ValueError("Invalid theta0: must be finite")
    schedule = Constant() if schedule is None else schedule
    ds = toy_data(toy, full_batch=method == "gd")
    if indices is not None:
        replay = np.atleast_2d(np.asarray(indices))
        if replay.dtype == bool or not np.issubdtype(replay.dtype, np.integer) or replay.shape[1] != steps \
                or replay.shape[0] not in (1, paths):
            raise ValueError(f"Invalid indices: expected integers of shape ({steps},) or ({paths}, {steps})")
        sampler = "replay"
    else:
        sampler = "full" if method == "gd" else "with-replacement"

    res = train(ToyModel(toy), ds, O.sgd(eta), schedule=schedule, steps=steps, batch=1, sampler=sampler,
                record_steps=record_steps, records=records, seed=seed, seeds=paths, theta0=theta[:, None],
                bound=bound, indices=indices, stream_key=stream_key, chunks=chunks, progress=progress,
                kernel=kernel)
    theta_rec = res["theta"][0, :, :, 0]
    loss = toy.loss(theta_rec)
    diverged_at = res["diverged_at"][0]
    status, message = _classify(loss, diverged_at, theta_star, steps)
    arrays = {"steps": res["steps"], "theta": theta_rec, "loss": loss, "diverged_at": diverged_at,
              **{k: res[k][0] for k in ("in_band", "bounces", "entry")}, "x": toy.x, "etas": res["lrs"][0]}
    band_lo, band_hi = toy.band(eta)
    config = {
        "model": "quadratic-toy", "method": method, "eta": eta, "steps": steps, "paths": paths,
        "theta_star": theta_star, "x_min": toy.x_min, "x_max": toy.x_max, "n": int(toy.x.size),
        "theta0": np.asarray(theta0, dtype=float).tolist(),
        "schedule": repr(schedule), "bound": bound, "replayed": indices is not None, "kernel": kernel,
    }
    summary = {
        "paths": paths, "diverged": int((diverged_at >= 0).sum()), "regime": toy.regime(eta),
        "eta_interval": toy.eta_interval(), "eps0": toy.eps0(eta), "band": [band_lo, band_hi],
        "final_loss_median": float(np.nanmedian(loss[:, -1])) if np.isfinite(loss[:, -1]).any() else None,
    }
    return RunResult("stabilization", config, arrays, status, message, seed=seed, summary=summary,
                     timings=res.timings)


def _classify(loss, diverged_at, theta_star, steps):
    info = guard.summary(diverged_at)
    if info["diverged"]:
        return "diverged", message("diverged", diverged=info["diverged"], paths=diverged_at.size,
                                   first=info["first"])
    tail = loss[:, -max(1, loss.shape[1] // 10):]
    scale = theta_star**4
    if np.all(tail[:, -1] < 1e-20 * scale):
        return "converged", message("converged", paths=loss.shape[0],
                                    detail="to theta* (final loss < 1e-20 theta*^4)")
    level = float(np.median(tail))
    return "stabilized", message("stabilized", steps=steps, detail=f"median late loss {level:.3g}")

