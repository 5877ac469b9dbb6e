"""The optimizer trajectory gallery: every optimizer of :mod:`dyntools.optim` on the 2-D surfaces of
:mod:`dyntools.models.surfaces`, trained by :func:`dyntools.train` (nothing re-implemented).

For each surface the runs are the selected optimizers (``G`` runs, one path each) started at the
surface's start point; θ is recorded at every step (or on a linear grid of :data:`RECORDS` steps for
longer runs), so the figures and the GIF are drawn from recorded snapshots. With ``noise = σ > 0`` every
step's gradient is ``∇f(θ_t) + σ ξ_t`` with ``ξ_t`` standard normal from the ``surface.noise`` stream,
shared by the optimizers of a surface (a paired comparison). ``flow=True`` adds a gradient-flow
reference, GD with the step ``h = lr_sgd/FLOW_REFINE`` over the time ``T·lr_sgd`` (``lr_sgd`` the SGD
step of the surface's table :data:`LRS`, whatever ``lr`` the run was given; at most ``FLOW_MAX_STEPS``
steps of h, so a run of more than ``FLOW_MAX_STEPS/FLOW_REFINE`` steps gets a shorter reference), noise-free.

A trajectory *reached a minimum* when its last point is within :data:`REACHED` of one of the surface's
minima (for ``diag-net``: when its loss is below ``REACHED²``, the valley being a curve).
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.engine import guard
from dyntools.engine.result import RunResult, message, timed
from dyntools.models import surfaces as S
from dyntools.optim import optimizers as O

#: The gallery's optimizers: name → factory of the learning rate.
OPTIMIZERS = {
    "sgd": lambda lr: O.sgd(lr),
    "momentum": lambda lr: O.sgd(lr, momentum=0.9),
    "nesterov": lambda lr: O.sgd(lr, momentum=0.9, nesterov=True),
    "adagrad": lambda lr: O.adagrad(lr),
    "rmsprop": lambda lr: O.rmsprop(lr),
    "adam": lambda lr: O.adam(lr),
    "adam-nobc": lambda lr: O.adam(lr, bias_correction=False),
    "adamw": lambda lr: O.adamw(lr, weight_decay=1e-2),
}
LABELS = {"sgd": "SGD", "momentum": "momentum 0.9", "nesterov": "Nesterov 0.9", "adagrad": "AdaGrad",
          "rmsprop": "RMSProp", "adam": "Adam", "adam-nobc": "Adam, no bias corr.", "adamw": "AdamW (λ=0.01)"}
NAMES = tuple(OPTIMIZERS)

#: Default learning rates: per surface, the step of the SGD family and of the adaptive methods.
LRS = {
    "quadratic": {"sgd": 0.09, "momentum": 0.02, "nesterov": 0.02, "adagrad": 0.5, "rmsprop": 0.02,
                  "adam": 0.05, "adam-nobc": 0.05, "adamw": 0.05},
    "rosenbrock": {"sgd": 1e-3, "momentum": 2e-4, "nesterov": 2e-4, "adagrad": 0.5, "rmsprop": 5e-3,
                   "adam": 2e-2, "adam-nobc": 2e-2, "adamw": 2e-2},
    "beale": {"sgd": 1e-3, "momentum": 2e-4, "nesterov": 2e-4, "adagrad": 0.5, "rmsprop": 5e-3,
              "adam": 2e-2, "adam-nobc": 2e-2, "adamw": 2e-2},
    "saddle": {"sgd": 0.05, "momentum": 0.01, "nesterov": 0.01, "adagrad": 0.5, "rmsprop": 0.01,
               "adam": 0.05, "adam-nobc": 0.05, "adamw": 0.05},
    "himmelblau": {"sgd": 5e-3, "momentum": 1e-3, "nesterov": 1e-3, "adagrad": 0.5, "rmsprop": 0.02,
                   "adam": 0.05, "adam-nobc": 0.05, "adamw": 0.05},
    "diag-net": {"sgd": 0.1, "momentum": 0.012, "nesterov": 0.012, "adagrad": 0.5, "rmsprop": 0.02,
                 "adam": 0.05, "adam-nobc": 0.05, "adamw": 0.05},
}
RECORDS = 10_000
FLOW_REFINE = 50
FLOW_MAX_STEPS = 1_000_000
REACHED = 1e-3


def _distinct_names(names, what: str, each: str, known) -> tuple[str, ...]:
    """``names`` as a tuple: at least one, each one of ``known`` (``Invalid {each}``), none repeated
    (``Invalid {what}``)."""
    names = tuple(names)
    if not names:
        raise ValueError(f"Invalid {what}: need at least one")
    for n in names:
        validation.one_of(each, n, known)
    if len(set(names)) != len(names):
        raise ValueError(f"Invalid {what}: {','.join(names)} (each at most once)")
    return names


def check_optimizers(names) -> tuple[str, ...]:
    """The gallery's optimizer names as a tuple, each known (``NAMES``) and none repeated.

    Parameters
    ----------
    names : iterable of str
        At least one optimizer name.

    Raises
    ------
    ValueError
        When ``names`` is empty, holds an unknown name or repeats one.
    """
    return _distinct_names(names, "optimizers", "optimizer", NAMES)


def check_surfaces(names) -> tuple[str, ...]:
    """The gallery's surface names as a tuple, each a known :class:`~dyntools.models.surfaces.Surface` and
    none repeated.

    Parameters
    ----------
    names : iterable of str
        At least one surface name.

    Raises
    ------
    ValueError
        When ``names`` is empty, holds an unknown name or repeats one.
    """
    return _distinct_names(names, "surface", "surface", S.NAMES)


def learning_rates(surface: str, optimizers, lr=None) -> list[float]:
    """The step of every optimizer: the surface's defaults (``lr=None``), one shared value, or one each.

    Parameters
    ----------
    surface : str
        A surface name (``Surface.NAMES``).
    optimizers : sequence of str
        The optimizer names.
    lr : float or sequence of float, optional
        One shared step, or one per optimizer (the surface's defaults by default).
    """
    if lr is None:
        return [LRS[surface][n] for n in optimizers]
    lrs = [lr] if np.isscalar(lr) else list(lr)
    if len(lrs) not in (1, len(optimizers)):
        raise ValueError(f"Invalid lr: {len(lrs)} values for {len(optimizers)} optimizers (give one, or one each)")
    for v in lrs:
        validation.positive("lr", v)
    return [float(v) for v in lrs] * (len(optimizers) if len(lrs) == 1 else 1)


def key_of(surface: str) -> str:
    """The array-name form of a surface name (``diag-net`` → ``diag_net``).

    Parameters
    ----------
    surface : str
        A surface name (``Surface.NAMES``).
    """
    return surface.replace("-", "_")


def _record_steps(steps: int) -> np.ndarray:
    if steps <= RECORDS:
        return np.arange(steps + 1)
    return np.unique(np.round(np.linspace(0, steps, RECORDS + 1)).astype(np.int64))


def _flow(model: S.Surface, surface: str, steps: int, seed: int) -> np.ndarray:
    """Gradient-flow reference: GD with step ``lr_sgd / FLOW_REFINE`` over the time ``steps · lr_sgd``
    (capped at ``FLOW_MAX_STEPS`` steps of that size)."""
    from dyntools.dynamics.train import train

    h = LRS[surface]["sgd"] / FLOW_REFINE
    n = min(steps * FLOW_REFINE, FLOW_MAX_STEPS)
    rec = np.unique(np.round(np.linspace(0, n, 2001)).astype(np.int64))
    res = train(model, model.data(), O.sgd(h), steps=n, sampler="full", record_steps=rec, seed=seed,
                bound=1e6)
    return res["theta"][0, 0]


def run_surface(surface: str, optimizers=NAMES, lr=None, *, steps: int = 10_000, noise: float = 0.0,
                seed: int = 0, start=None, flow: bool = False) -> dict[str, np.ndarray]:
    """The trajectories of ``optimizers`` on one surface: ``path`` (G, K, 2), ``loss`` (G, K) (f, NaN after a
    divergence), ``steps`` (K,), ``diverged_at`` (G,), ``lrs`` (G,) and, with ``flow``, ``flow`` (M, 2).

    Parameters
    ----------
    surface : str
        A surface name (``Surface.NAMES``).
    optimizers : sequence of str, default all eight
        The optimizer names (``NAMES``).
    lr : float or sequence of float, optional
        One shared step, or one per optimizer.
    steps : int, default 10000
        Steps per trajectory.
    noise : float, default 0.0
        Standard deviation of Gaussian noise added to each gradient (≥ 0).
    seed : int, default 0
        The seed of that noise.
    start : pair of float, optional
        The start point (the surface's own by default).
    flow : bool, default False
        Also integrate the gradient flow from the start.
    """
    from dyntools.dynamics.train import train

    optimizers = check_optimizers(optimizers)
    lrs = learning_rates(surface, optimizers, lr)
    model = S.Surface(surface, start)
    opts = [OPTIMIZERS[n](v) for n, v in zip(optimizers, lrs)]
    bound = guard.default_bound(max(np.abs(model.start).sum(), 10.0))
    res = train(model, model.data(), opts, steps=steps, sampler="full", label_noise=noise,
                record_steps=_record_steps(steps), seed=seed, bound=bound, common_stream=True, labels=optimizers)
    out = {"path": res["theta"][:, 0], "loss": res["train_loss"][:, 0], "steps": res["steps"],
           "diverged_at": res["diverged_at"][:, 0], "lrs": np.array(lrs), "start": model.start}
    if flow:
        out["flow"] = _flow(model, surface, steps, seed)
    return out


def reached(surface: str, path: np.ndarray, loss: np.ndarray) -> bool:
    """Whether a trajectory ended within :data:`REACHED` of a minimum (module docstring).

    Parameters
    ----------
    surface : str
        A surface name (``Surface.NAMES``).
    path : ndarray, shape (K, 2)
        The recorded iterates.
    loss : ndarray, shape (K,)
        The recorded losses (NaN after a divergence).
    """
    spec = S.surface(surface)
    last = path[-1]
    if not np.all(np.isfinite(last)):
        return False
    if not spec.minima:
        return bool(loss[-1] - spec.f_min < REACHED**2)
    return bool(min(np.hypot(*(last - np.array(m))) for m in spec.minima) < REACHED)


def nearest_minimum(surface: str, point: np.ndarray) -> int:
    """Index of the minimum nearest to ``point`` (−1 for a surface whose minima form a curve).

    Parameters
    ----------
    surface : str
        A surface name (``Surface.NAMES``).
    point : ndarray, shape (2,)
        A point of the plane.
    """
    spec = S.surface(surface)
    if not spec.minima or not np.all(np.isfinite(point)):
        return -1
    return int(np.argmin([np.hypot(*(point - np.array(m))) for m in spec.minima]))


def gallery(surfaces=S.NAMES, optimizers=NAMES, lr=None, *, steps: int = 10_000, noise: float = 0.0,
            seed: int = 0, start=None, flow: bool = False, frames: int = 60) -> RunResult:
    """Every optimizer on every surface (:func:`run_surface`), one :class:`RunResult` of kind
    ``"trajectories"``: arrays ``<key>_path``, ``<key>_loss``, ``<key>_steps``, ``<key>_diverged_at``,
    ``<key>_lrs`` (``<key>_flow``) per surface (:func:`key_of`); ``frames`` is the GIF's frame count.

    ``start`` (one (x, y) point) needs a single surface; ``lr`` is one value or one per optimizer
    (default: the table :data:`LRS`).

    Parameters
    ----------
    surfaces : sequence of str, default six surfaces
        The surface names.
    optimizers, steps, noise, seed, flow
        As in :func:`run_surface`.
    lr : float or sequence of float, optional
        One shared step, or one per optimizer (default: ``LRS``).
    start : pair of float, optional
        One start point (a single surface only).
    frames : int, default 60
        The GIF's frame count.

    Returns
    -------
    RunResult
    """
    surfaces = check_surfaces(surfaces)
    optimizers = check_optimizers(optimizers)
    steps = validation.count("steps", steps)
    noise = validation.non_negative("noise", noise)
    frames = validation.count("frames", frames, minimum=2)
    if start is not None and len(surfaces) > 1:
        raise ValueError("Invalid start: a start point needs a single --surface")
    for s in surfaces:                         # every argument checked before any work
        learning_rates(s, optimizers, lr)
        S.Surface(s, start)
    timings: dict[str, float] = {}
    arrays: dict[str, np.ndarray] = {}
    rows = []
    with timed(timings, "simulate"):
        for s in surfaces:
            out = run_surface(s, optimizers, lr, steps=steps, noise=noise, seed=seed, start=start, flow=flow)
            for name, value in out.items():
                arrays[f"{key_of(s)}_{name}"] = value
            for g, o in enumerate(optimizers):
                path, loss = out["path"][g], out["loss"][g]
                finite = np.isfinite(loss)
                rows.append({"surface": s, "optimizer": o, "lr": out["lrs"][g],
                             "final_gap": float(loss[finite][-1] - S.surface(s).f_min),
                             "diverged_at": int(out["diverged_at"][g]), "reached": reached(s, path, loss),
                             "minimum": nearest_minimum(s, path[-1])})
    n_div = sum(r["diverged_at"] != guard.NEVER for r in rows)
    n_reach = sum(r["reached"] for r in rows)
    detail = (f"{n_reach} of {len(rows)} ended within {REACHED:g} of a minimum"
              + (f", {n_div} diverged" if n_div else ""))
    status = "diverged" if n_div else "completed"
    if n_div:
        first = min(r["diverged_at"] for r in rows if r["diverged_at"] != guard.NEVER)
        msg = message("diverged", diverged=n_div, paths=len(rows), what="trajectories", first=first, detail=detail)
    else:
        msg = message("completed", paths=len(rows), what="trajectories", detail=detail)
    config = {"surfaces": list(surfaces), "optimizers": list(optimizers), "steps": steps, "noise": noise,
              "flow": bool(flow), "frames": frames, "start": None if start is None else list(map(float, start)),
              "lr": None if lr is None else ([float(lr)] if np.isscalar(lr) else [float(v) for v in lr])}
    summary = {"trajectories": len(rows), "reached": n_reach, "diverged": n_div, "rows": rows}
    return RunResult("trajectories", config, arrays, status, msg, seed=seed, summary=summary, timings=timings)
