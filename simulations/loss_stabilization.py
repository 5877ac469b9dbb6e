"""Loss stabilization on the quadratic toy (Andriushchenko et al. 2023, Prop. 1; seed 004).

Parameters: θ* = 1, data uniform on [1, 1.05] (n = 1000), so the proposition's interval is
η ∈ (1, 1.25/1.05²) = (1, 1.1338); θ_0 = 0.5 θ*; η = 1.08 inside it. Also: the η phase diagram
(converges below the GD limit 1/(E[x²]θ*²), stabilizes, diverges for large η), an empty-interval
support (x_max/x_min ≥ √1.25) reported as such, and the quadratic-GD facts (2/λ_max).

Proposition. If ``supp ρ̂ ⊂ [x_min, x_max]``, ``η ∈ ((θ* x_min)⁻², 1.25 (θ* x_max)⁻²)`` and
``θ_0 ∈ (0, θ*)``, then almost surely, for all t,

    F(θ_t) ∈ (ε₀ θ*², 0.17 θ*²),      ε₀ = min{(η (θ* x_min)² − 1)/3, 0.02},

and there are t, such that for all k ≥ 0 the iterates bounce across the valley:
``θ_{t+2k} ∈ (0.65θ*, (1−ε₀)θ*)`` and ``θ_{t+2k+1} ∈ ((1−ε₀)θ*, 1.162θ*)``.

:func:`check_proposition` measures each part on simulated paths — over *every* step (the
kernel's online counters) and over the recorded steps — and states plainly which parts hold.
:func:`phase_diagram` sweeps η and classifies each value: converges, stabilizes, diverges.
``EXPERIMENT`` is ``dyntools simulate stabilization``; ``REPORT`` the catalogue entry.

Run alone: ``python -m simulations.loss_stabilization [--quick]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dyntools import memory, validation
from dyntools.plots import stabilization as stabilization_figures
from dyntools.result_schema import derive, known
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "Loss stabilization on the quadratic toy (seed 004)"
#: The paper's data support (uniform data; ``--samples`` replaces it by the samples' range).
X_MIN, X_MAX = 1.0, 1.05


@dataclass(frozen=True)
class StabilizationParams:
    """``dyntools simulate stabilization``: one run at step η, or a phase diagram over ``eta_grid``."""

    eta: float = param(1.08, help="step size η", low=0.0, low_open=True)
    eta_grid: tuple | None = param(None, kind="grid", metavar="START:STOP:N",
                                   max_len=1000,
                                   help="phase diagram over N step sizes instead of one run (one run of --paths each)")
    theta_star: float = param(1.0, help="θ* (≤ 1e6: the loss holds θ*⁴ x², far from overflow)", low=0.0, low_open=True,
                              high=1e6)
    x_min: float | None = param(None, kind="float", low=0.0, low_open=True, high=1e6,
                                help=f"lower end of the data support; default {X_MIN:g}, or min x with --samples")
    x_max: float | None = param(None, kind="float", low=0.0, low_open=True, high=1e6,
                                help=f"upper end of the data support; default {X_MAX:g}, or max x with --samples")
    n: int = param(1000, help="number of data points drawn uniformly", low=1, high=10**8)
    samples: Path | None = param(None, kind="file", metavar="FILE",
                                 help="use these x samples (.npy or whitespace-separated text) instead of uniform "
                                      "data; the support is [--x-min, --x-max] if given, else [min x, max x]")
    decay_at: tuple | None = param(None, kind="floats", metavar="F1,F2,…", max_len=100,
                                   help="fractions of the run after which η is divided (with --decay-by), "
                                        "e.g. 0.1,0.3,0.5")
    decay_by: tuple | None = param(None, kind="floats", metavar="D1,D2,…", max_len=100,
                                   help="the division factors, e.g. 4.8,3.4,1.5")
    indices: Path | None = param(None, kind="file", metavar="FILE",
                                 help="replay: .npy of sample indices, shape (steps,) or (paths, steps)")
    theta0: float = param(0.5, help="initial θ_0 in units of θ*", low=0.0, low_open=True, high=1e3)
    steps: int = param(100_000, help="number of updates (≤ 1e8: the step-size schedule is an array of steps)",
                       low=1, high=10**8)
    paths: int = param(64, help="independent SGD paths (paths × records ≤ 2^28 values)", low=1, high=10**6)
    method: str = param("sgd", choices=("sgd", "gd"), help="SGD or full-batch GD")
    records: int = param(200, help="recorded steps per path", low=2, high=10**6)
    grid: str = param("log", choices=("log", "linear"), help="recording grid")


def _load_array(name: str, path) -> np.ndarray:
    from dyntools.arrays_io import load_array

    if name == "--indices":
        return load_array(name, path, kind="int", ndim=(1, 2))
    return load_array(name, path, kind="float", ndim=1)


def eta_values(grid) -> np.ndarray:
    """``(START, STOP, N)`` → N step sizes, evenly spaced (N >= 2, 0 < START < STOP)."""
    start, stop, n = grid
    validation.positive("--eta-grid START", start)
    validation.positive("--eta-grid STOP", stop)
    validation.count("--eta-grid N", n, minimum=2)
    if stop <= start:
        raise ValueError(f"Invalid --eta-grid: STOP {stop} must exceed START {start}")
    return np.linspace(start, stop, n)


def make_toy(p: StabilizationParams, seed: int):
    """The data set: the given samples, or ``n`` points uniform on the support."""
    from dyntools.models.quadratic_toy import QuadraticToy

    if p.samples is not None:
        x = _load_array("--samples", p.samples)
        return QuadraticToy.from_samples(x, theta_star=p.theta_star, x_min=p.x_min, x_max=p.x_max)
    return QuadraticToy.uniform(theta_star=p.theta_star, x_min=X_MIN if p.x_min is None else p.x_min,
                                x_max=X_MAX if p.x_max is None else p.x_max, n=p.n, seed=seed)


def make_schedule(p: StabilizationParams):
    from dyntools.optim.schedules import Constant, PiecewiseDecay

    if (p.decay_at is None) != (p.decay_by is None):
        raise ValueError("Invalid --decay-at/--decay-by: give both or neither")
    return Constant() if p.decay_at is None else PiecewiseDecay(p.decay_at, p.decay_by)


def replay_indices(p: StabilizationParams) -> np.ndarray | None:
    if p.indices is None:
        return None
    indices = _load_array("--indices", p.indices)
    if not np.issubdtype(indices.dtype, np.integer):
        if not np.all(np.isfinite(indices)) or np.any(indices != np.round(indices)):
            raise ValueError(f"Invalid --indices: {p.indices} must hold integers")
        indices = indices.astype(np.int64)
    return indices


def check(p: StabilizationParams) -> None:
    """Cross-field checks (and the given files read), before anything is written."""
    if p.eta_grid is not None:
        eta_values(p.eta_grid)
    toy = make_toy(p, 0)
    memory.require(peak_arrays(p, toy.x.size), "--paths")
    make_schedule(p).multipliers(p.steps)
    if replay_indices(p) is not None and p.eta_grid is not None:
        raise ValueError("Invalid --indices: replay applies to a single run, not to --eta-grid")


def peak_arrays(p: StabilizationParams, n: int) -> dict[str, int]:
    """The arrays a run holds at its peak, in bytes, for :func:`dyntools.memory.require`: θ and the loss at the K
    recorded steps (P × K float64, each twice: the recorder's and the result's), the sampler's per-path
    permutation table (P × n int64, :func:`dyntools.dynamics.train.train`) and the per-path state (stream,
    counters, θ, divergence step: 128 B). With ``--eta-grid`` the step sizes run one at a time, each recorded at
    60 log-spaced steps (:func:`phase_diagram`)."""
    from dyntools.engine import record as recording

    grid, records = ("log", 60) if p.eta_grid is not None else (p.grid, p.records)
    K = recording.with_dense_tail(recording.make_grid(grid, p.steps, records), p.steps).size
    return {"θ and loss at the recorded steps (4 × paths × records)": 4 * 8 * p.paths * K,
            "the per-path sample permutations (paths × n)": 8 * p.paths * n,
            "per-path state": 128 * p.paths}


def run(p: StabilizationParams, ctx: RunContext):
    """One run (with the proposition checked on it), or the phase diagram over ``eta_grid``."""
    from dyntools.dynamics.toy_sgd import simulate_toy
    from dyntools.engine import record as recording

    toy = make_toy(p, ctx.seed)
    theta0 = p.theta0 * toy.theta_star
    if p.eta_grid is not None:
        return phase_diagram(toy, eta_values(p.eta_grid), steps=p.steps, paths=p.paths, theta0=theta0,
                             seed=ctx.seed, method=p.method, progress=ctx.progress)
    record_steps = recording.with_dense_tail(recording.make_grid(p.grid, p.steps, p.records), p.steps)
    result = simulate_toy(toy, p.eta, steps=p.steps, paths=p.paths, theta0=theta0, seed=ctx.seed,
                          method=p.method, record_steps=record_steps, chunks=50, progress=ctx.progress,
                          schedule=make_schedule(p), indices=replay_indices(p))
    result.summary["proposition"] = check_proposition(result, toy)
    return result


def summary(p: StabilizationParams, result) -> dict:
    head = {"status": result.status, "message": result.message}
    if result.kind == "stabilization-phase":
        return {**head, **result.summary, "etas": result["etas"].tolist(),
                "stationary_loss": result["stationary_loss"].tolist(),
                "diverged_fraction": result["diverged"].tolist()}
    check_ = result.summary["proposition"]
    return {**head, **{k: v for k, v in result.summary.items() if k != "proposition"}, "proposition": check_,
            "seconds": result.timings.get("simulate")}


def table(p: StabilizationParams, result) -> str:
    from dyntools.tables import key_values

    if result.kind == "stabilization-phase":
        return key_values({"status": result.status, "message": result.message})
    c = result.summary["proposition"]
    return key_values({"status": result.status, "message": result.message, "regime": c["regime"],
                       "proposition": c["statement"], "diverged paths": c["diverged_paths"],
                       "band fraction (all steps)": c["band_fraction_all_steps"],
                       "bounce fraction": c["bounce_fraction"], "entry time quantiles": c["entry_time_quantiles"]})


RESULTS = (derive("stabilization", StabilizationParams, "eta method n paths steps theta_star x_max x_min",
                  extra={"model": known("quadratic-toy")},
                  summary={"band": "list", "diverged": "int", "eps0": "number", "eta_interval": "list",
                           "final_loss_median": "number", "paths": "int", "proposition": "mapping", "regime": "str"}),
           derive("stabilization-phase", StabilizationParams, "method n paths steps theta_star x_max x_min",
                  extra={"model": known("quadratic-toy")},
                  summary={"eta_interval": "list", "gd_step_limit": "number", "second_moment": "number"}))

EXPERIMENT = Experiment.declare(
    globals(), name="stabilization", verb="simulate",
    help="quadratic-parametrization toy of seed 004: loss stabilization of large-step SGD",
    example=("dyntools simulate stabilization --eta 1.08 --x-min 1 --x-max 1.05 --steps 100000 "
             "--paths 64 --seed 0 --out runs/stab"),
    params=StabilizationParams,
    figures=dict.fromkeys(("stabilization", "stabilization-phase"), stabilization_figures.plot_result))

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "stabilization": ["--steps", "200", "--paths", "4", "--records", "10"],
    "stabilization-phase": ["--eta-grid", "0.5:1.5:3", "--steps", "200", "--paths", "4", "--records", "10"],
}


def check_proposition(result, toy) -> dict:
    """Measure the proposition's claims on a ``"stabilization"`` result of constant step η."""
    from dyntools.models.quadratic_toy import interval_is_empty_message

    eta = float(result.config["eta"])
    steps = int(result.config["steps"])
    loss = result["loss"]
    alive = result["diverged_at"] < 0
    lo, hi = toy.band(eta)
    regime = toy.regime(eta)
    scale = toy.theta_star**2
    recorded = loss[alive][:, 1:] if alive.any() else np.empty((0, 0))   # t ≥ 1
    in_band_rec = (recorded > lo) & (recorded < hi)
    entry = result["entry"][alive]
    bouncing = entry < steps
    out = {
        "eta": eta, "regime": regime, "eta_interval": toy.eta_interval(), "eps0": toy.eps0(eta),
        "band": [lo, hi], "paths": int(loss.shape[0]), "diverged_paths": int((~alive).sum()),
        "band_fraction_all_steps": float(result["in_band"][alive].sum() / max(1, alive.sum() * steps)),
        "band_fraction_recorded": float(in_band_rec.mean()) if in_band_rec.size else float("nan"),
        "paths_always_in_band_recorded": float(in_band_rec.all(axis=1).mean()) if in_band_rec.size else 0.0,
        "below_band_fraction_recorded": float((recorded <= lo).mean()) if recorded.size else float("nan"),
        "above_band_fraction_recorded": float((recorded >= hi).mean()) if recorded.size else float("nan"),
        "min_loss_over_theta_star2": float(np.nanmin(recorded) / scale) if recorded.size else float("nan"),
        "max_loss_over_theta_star2": float(np.nanmax(recorded) / scale) if recorded.size else float("nan"),
        "bounce_fraction": float(result["bounces"][alive].sum() / max(1, alive.sum() * steps)),
        "paths_bouncing_at_end": float(bouncing.mean()) if bouncing.size else float("nan"),   # none survived
        "entry_time_quantiles": (np.quantile(entry[bouncing], [0, 0.5, 0.9, 1.0]).tolist()
                                 if bouncing.any() else None),
    }
    if result["etas"].size > 1:
        out["statement"] = ("the proposition is stated for a constant step; this run used a schedule "
                            f"(base eta = {eta:g}), so its claims are measured but do not apply")
    elif regime == "empty":
        out["statement"] = interval_is_empty_message(toy) + "; nothing to check"
    elif regime != "inside":
        out["statement"] = f"eta = {eta:g} is {regime} the proposition's interval; its claims do not apply"
    else:
        out["statement"] = (
            f"bounce across the valley on {out['paths_bouncing_at_end']:.0%} of the surviving paths "
            f"({out['diverged_paths']} diverged); loss band (eps0 th*^2, 0.17 th*^2): "
            f"{out['band_fraction_all_steps']:.1%} of all steps inside "
            f"(upper bound violated on {out['above_band_fraction_recorded']:.1%}, lower bound on "
            f"{out['below_band_fraction_recorded']:.1%} of recorded steps)")
    return out


def phase_diagram(toy, etas, *, steps: int, paths: int, theta0: float = 0.5,
                  seed: int = 0, method: str = "sgd", progress: bool = False):
    """Classify each η of ``etas``: the stationary loss level and what fraction of paths
    converged, stabilized (bounced inside the band's regime) or diverged.

    Each grid cell draws its paths from ``SeedSequence(seed, key=(cell,))``, so a cell's result
    does not depend on the rest of the grid.
    """
    from dyntools.dynamics.toy_sgd import simulate_toy
    from dyntools.engine.progress import progress_bar
    from dyntools.engine.result import RunResult, timed

    etas = validation.finite_array("eta grid", etas, ndim=1)
    if np.any(etas <= 0):
        raise ValueError("Invalid eta grid: every step size must be > 0")
    timings: dict[str, float] = {}
    cols = {k: np.empty(etas.size) for k in (
        "stationary_loss", "loss_q10", "loss_q90", "diverged", "converged", "band_fraction",
        "bounce_fraction")}
    with timed(timings, "simulate"), progress_bar(etas.size, "eta grid", enabled=progress) as bar:
        for j, eta in enumerate(etas):
            r = simulate_toy(toy, float(eta), steps=steps, paths=paths, theta0=theta0, seed=seed,
                             method=method, records=60, stream_key=(j,))
            alive = r["diverged_at"] < 0
            tail = r["loss"][alive][:, -12:]
            late = tail.mean(axis=1) if alive.any() else np.array([np.nan])
            cols["stationary_loss"][j] = np.median(late)
            cols["loss_q10"][j], cols["loss_q90"][j] = np.quantile(late, [0.1, 0.9])
            cols["diverged"][j] = 1.0 - alive.mean()
            cols["converged"][j] = float((late < 1e-20 * toy.theta_star**4).mean()) * alive.mean()
            lo, hi = toy.band(float(eta))
            cols["band_fraction"][j] = float(((tail > lo) & (tail < hi)).mean()) if alive.any() else 0.0
            cols["bounce_fraction"][j] = float(r["bounces"][alive].sum() / max(1, alive.sum() * steps))
            bar.update(1)
    interval = toy.eta_interval()
    n_div = int((cols["diverged"] > 0).sum())
    status = "completed"
    message = (f"{etas.size} step sizes: {int((cols['converged'] == 1).sum())} converge, "
               f"{n_div} with diverged paths; proposition interval "
               + (f"({interval[0]:.4g}, {interval[1]:.4g})" if interval else "empty"))
    config = {"model": "quadratic-toy", "method": method, "steps": steps, "paths": paths, "theta0": theta0,
              "theta_star": toy.theta_star, "x_min": toy.x_min, "x_max": toy.x_max, "n": int(toy.x.size)}
    summary = {"eta_interval": interval, "gd_step_limit": toy.gd_step_limit(), "second_moment": toy.second_moment}
    return RunResult("stabilization-phase", config, {"etas": etas, "x": toy.x, **cols}, status, message,
                     seed=seed, summary=summary, timings=timings)


def sizes(quick: bool) -> dict:
    if quick:
        return {"steps": 20_000, "paths": 32, "grid_steps": 3_000, "grid_paths": 8, "grid_n": 27}
    return {"steps": 1_000_000, "paths": 64, "grid_steps": 50_000, "grid_paths": 32, "grid_n": 53}


def _share(value) -> float | None:
    """A measured fraction, or ``None`` when nothing was measured (every path diverged: NaN/None)."""
    return None if value is None or not np.isfinite(value) else float(value)


def proposition_verdict(check: dict) -> dict:
    """The report's sentences on the proposition, computed from :func:`check_proposition`'s numbers:
    ``{"headline", "sentence", "bounce", "upper", "lower", "verdicts"}``. Each part is a universal claim over
    the ``paths`` (every path bounces; the loss stays below the upper bound, and above the lower bound as
    printed in the seed, at every recorded step): by the rule :func:`dyntools.verdicts.every`, *shown* when no
    path or step is an exception, *contradicted* by any exception, *not shown* when nothing was measured (every
    path diverged: a NaN is never read as holding). ``verdicts`` holds the three
    :class:`dyntools.verdicts.Verdict`."""
    from dyntools import verdicts as V

    paths, diverged = int(check.get("paths", 0) or 0), int(check.get("diverged_paths", 0) or 0)
    bouncing = _share(check.get("paths_bouncing_at_end"))
    above = _share(check.get("above_band_fraction_recorded"))
    below = _share(check.get("below_band_fraction_recorded"))
    alive = paths - diverged
    # the bouncing share is over the surviving paths; a diverged path is an exception too
    bounce_v = V.every(None if bouncing is None else round(bouncing * alive), paths, alive, "paths bounce")
    upper_v = V.every_step(above, paths, alive, "recorded steps above 0.17θ*²")
    if 0 < diverged < paths and upper_v.word != V.CONTRADICTED:    # a diverged path's loss passed the bound
        upper_v = V.Verdict(V.CONTRADICTED, upper_v.rule, paths, alive,
                            f"{diverged} of {paths} paths diverged: their loss passed 0.17θ*²")
    lower_v = V.every_step(below, paths, alive, "recorded steps below ε₀θ*²")
    bounce, upper, lower = bounce_v.word, upper_v.word, lower_v.word
    if paths and diverged == paths:
        sentence = f"Every one of the {paths} paths diverged: the proposition's claims are not measured on this run."
        return {"headline": f"not shown: all {paths} paths diverged [{bounce_v.rule}, n = {paths}, 0 survived]",
                "sentence": sentence, "bounce": bounce, "upper": upper, "lower": lower,
                "verdicts": [bounce_v, upper_v, lower_v]}
    parts = [{V.SHOWN: "The bounce is shown on every path",
              V.CONTRADICTED: f"The bounce is seen on {bouncing:.0%} of the paths" if bouncing is not None else "",
              V.NOT_SHOWN: "The bounce is not measured"}[bounce] + (f" ({diverged} diverged)" if diverged else ""),
             {V.SHOWN: "the loss stays below 0.17θ*²",
              V.CONTRADICTED: (f"the loss exceeds 0.17θ*² on {above:.2%} of the recorded steps of the surviving "
                               "paths" if above is not None else "the loss exceeds 0.17θ*²")
              + (f" and on the {diverged} diverged paths" if diverged else ""),
              V.NOT_SHOWN: "the upper bound is not measured"}[upper],
             {V.SHOWN: "it stays above the lower bound ε₀θ*² as printed in the seed",
              V.CONTRADICTED: f"it dips under the lower bound ε₀θ*² as printed in the seed on {below:.2%} of the "
                              "recorded steps" if below is not None else "",
              V.NOT_SHOWN: "the lower bound is not measured"}[lower]]
    sentence = f"{parts[0]}, {parts[1]}; {parts[2]}."
    headline = (f"bounce {bounce} ({bouncing:.0%} of {paths} paths), upper bound {upper}, lower bound (as printed) "
                f"{lower} [{bounce_v.rule}, n = {paths}, {alive} survived]" if bouncing is not None else
                f"bounce {bounce}, upper bound {upper}, lower bound (as printed) {lower} [{bounce_v.rule}, n = {paths}, "
                f"{alive} survived]")
    return {"headline": headline, "sentence": sentence, "bounce": bounce, "upper": upper, "lower": lower,
            "verdicts": [bounce_v, upper_v, lower_v]}


def reproduce(ctx):
    from dyntools import plots
    from dyntools.dynamics.quadratic_gd import classify_gd
    from dyntools.dynamics.toy_sgd import simulate_toy
    from dyntools.engine import record as recording
    from dyntools.models.quadratic_toy import QuadraticToy, interval_is_empty_message
    from dyntools.plots import stabilization as stab_plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    sz = sizes(ctx.quick)
    P = StabilizationParams()
    ETA, THETA0, N, THETA_STAR = P.eta, P.theta0, P.n, P.theta_star
    toy = make_toy(P, ctx.seed)

    # 1. one step size inside the interval, many paths
    grid = recording.with_dense_tail(recording.log_grid(sz["steps"], 300), sz["steps"])
    run = simulate_toy(toy, ETA, steps=sz["steps"], paths=sz["paths"], theta0=THETA0, seed=ctx.seed,
                       record_steps=grid, chunks=20, progress=ctx.progress)
    check = check_proposition(run, toy)
    run.summary["proposition"] = check
    fig, axes = plots.figure(ncols=2)
    stab_plots.loss_curves(run, axes[0, 0])
    stab_plots.bounce(run, axes[0, 1])
    fig_main = plots.save(fig, ctx.figure_dir, "stabilization")

    # 2. phase diagram over η, from converging GD-like steps to divergence
    etas = np.linspace(0.6, 2.6, sz["grid_n"])
    phase = phase_diagram(toy, etas, steps=sz["grid_steps"], paths=sz["grid_paths"], theta0=THETA0,
                          seed=ctx.seed)
    fig, axes = plots.figure(width=6.4, height=3.4)
    stab_plots.phase_diagram(phase, axes[0, 0])
    fig_phase = plots.save(fig, ctx.figure_dir, "phase_diagram")

    # 3. full-batch GD on the toy: below and above its stability limit
    limit = toy.gd_step_limit()
    gd_rows = []
    for factor in (0.5, 0.95, 1.05, 1.5):
        r = simulate_toy(toy, factor * limit, steps=5_000, paths=1, theta0=THETA0, method="gd", seed=ctx.seed)
        gd_rows.append({"eta / GD limit": factor, "eta": factor * limit, "status": r.status,
                        "final loss": float(r["loss"][0, -1])})

    # 4. an empty interval, said plainly
    wide = QuadraticToy.uniform(theta_star=1.0, x_min=1.0, x_max=1.5, n=N, seed=ctx.seed)
    empty_msg = interval_is_empty_message(wide) if wide.eta_interval() is None else "UNEXPECTEDLY non-empty"

    # 5. GD on a quadratic ‖Xβ − y‖²: converge / bounce / diverge around 2/λ_max
    rng = np.random.Generator(np.random.PCG64(ctx.seed))
    X, y = rng.standard_normal((40, 10)), rng.standard_normal(40)
    quad_rows = classify_gd(X, y, factors=(0.5, 0.95, 1.0, 1.05), steps=3000)
    expected = ["converges", "converges", "period-2 bounce", "diverges"]
    quad_ok = [r["verdict"] for r in quad_rows] == expected

    bounce_ok = check["diverged_paths"] == 0 and check["paths_bouncing_at_end"] == 1.0
    gd_ok = [r["status"] for r in gd_rows][:2] == ["converged", "converged"] and \
        all(r["status"] != "converged" for r in gd_rows[2:])
    phase_rows = [{"eta": float(e), "median late loss": float(lv), "diverged": float(dv),
                   "converged": float(cv), "bounce fraction": float(bf)}
                  for e, lv, dv, cv, bf in zip(phase["etas"], phase["stationary_loss"], phase["diverged"],
                                               phase["converged"], phase["bounce_fraction"])][::3]
    q = check["entry_time_quantiles"]
    verdict = proposition_verdict(check)
    md = f"""
Data uniform on [{X_MIN}, {X_MAX}] (n = {N}), θ* = {THETA_STAR}, θ_0 = {THETA0}θ*; the proposition's
interval is η ∈ ({toy.eta_interval()[0]:.4g}, {toy.eta_interval()[1]:.4g}); η = {ETA}, ε₀ = {check['eps0']:.4g}.
{sz['paths']} SGD paths × {sz['steps']:,} steps ({run.timings['simulate']:.2f} s): **{run.status}** — {run.message}.

![loss stabilization]({ctx.relative(fig_main[0])})

| claim of the proposition | measured |
|---|---|
| iterates bounce across the valley (even/odd steps on opposite sides of 1−ε₀) | {check['paths_bouncing_at_end']:.0%} of paths at the end; {check['bounce_fraction']:.4%} of all steps |
| entry time into the bounce (min / median / 90% / max) | {q if q is None else ' / '.join(f'{v:.0f}' for v in q)} |
| F(θ_t) ∈ (ε₀θ*², 0.17θ*²) for all t | {check['band_fraction_all_steps']:.1%} of all steps; {check['paths_always_in_band_recorded']:.0%} of paths on every recorded step |
| … upper bound 0.17θ*² violated | {check['above_band_fraction_recorded']:.2%} of recorded steps (max F = {check['max_loss_over_theta_star2']:.4g}θ*²) |
| … lower bound ε₀θ*² violated | {check['below_band_fraction_recorded']:.2%} of recorded steps (min F = {check['min_loss_over_theta_star2']:.3g}θ*²) |

{verdict['sentence']} The bounce intervals themselves allow θ arbitrarily close to
(1−ε₀)θ*, where F = ¼E[x²](1−(1−ε₀)²)²θ*⁴ ≈ {0.25 * toy.second_moment * (1 - (1 - check['eps0'])**2)**2:.2g}θ*⁴ < ε₀θ*²,
so that lower bound does not follow from them; `dyntools prove` examines the statement exactly.

**Phase diagram** ({sz['grid_paths']} paths × {sz['grid_steps']:,} steps per η; GD stability limit
1/(E[x²]θ*²) = {limit:.4g}): {phase.message}.

![phase diagram]({ctx.relative(fig_phase[0])})

{markdown_table(phase_rows)}

**Full-batch GD on the toy** (stable iff η < {limit:.4g}):

{markdown_table(gd_rows)}

**Empty interval:** data on [1, 1.5]: {empty_msg}.

**GD on F(β) = ‖Xβ − y‖²** (X 40×10 Gaussian; Hessian 2XᵀX, λ_max = {quad_rows[0]['lambda_max']:.4g}):
{'as expected' if quad_ok else 'NOT as expected'}.

{markdown_table([{k: r[k] for k in ('eta_over_2_div_lambda_max', 'excess_loss_start', 'excess_loss_end', 'verdict')} for r in quad_rows])}
"""
    numbers = {"eta": ETA, "band_fraction_all_steps": check["band_fraction_all_steps"],
               "bounce_fraction": check["bounce_fraction"], "paths_bouncing": check["paths_bouncing_at_end"],
               "entry_time_quantiles": q, "diverged_paths": check["diverged_paths"],
               "phase_diverged_etas": phase["etas"][phase["diverged"] > 0].tolist(),
               "gd_statuses": [r["status"] for r in gd_rows], "quadratic_gd": [r["verdict"] for r in quad_rows]}
    from dyntools import verdicts as V

    md += ("\n\nThe proposition's claims (seed 004), each by a declared rule over the paths:\n\n" + V.claims_table(zip(
        ("every path bounces across the valley", "F(θ_t) < 0.17θ*² at every recorded step",
         "F(θ_t) > ε₀θ*² at every recorded step (the bound as printed in the seed)"), verdict["verdicts"])) + "\n")
    numbers["claims"] = [v.as_dict() for v in verdict["verdicts"]]
    return Section(TITLE, md, numbers=numbers, headline=verdict["headline"],
                   figures=[ctx.relative(fig_main[0]), ctx.relative(fig_phase[0])],
                   ok=bool(bounce_ok and quad_ok and gd_ok))


REPORT = Entry("loss-stabilization", TITLE, reproduce, order=10, single_core=True)


if __name__ == "__main__":  # pragma: no cover
    import argparse
    import tempfile
    from pathlib import Path

    from dyntools.report import ReportContext, render

    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="stab-")))
    a = parser.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    section = reproduce(ReportContext(a.out, quick=a.quick, seed=0, progress=True))
    (a.out / "report.md").write_text(render([section], quick=a.quick, seed=0))
    print(a.out / "report.md")
