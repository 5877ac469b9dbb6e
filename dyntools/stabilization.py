"""Checking the loss-stabilization proposition (Andriushchenko et al. 2023; seed 004) on paths.

Proposition. If ``supp ρ̂ ⊂ [x_min, x_max]``, ``η ∈ ((θ* x_min)⁻², 1.25 (θ* x_max)⁻²)`` and
``θ_0 ∈ (0, θ*)``, then almost surely, for all t,

    F(θ_t) ∈ (ε₀ θ*², 0.17 θ*²),      ε₀ = min{(η (θ* x_min)² − 1)/3, 0.02},

and there are t, such that for all k ≥ 0 the iterates bounce across the valley:
``θ_{t+2k} ∈ (0.65θ*, (1−ε₀)θ*)`` and ``θ_{t+2k+1} ∈ ((1−ε₀)θ*, 1.162θ*)``.

:func:`check_proposition` measures each part on simulated paths — over *every* step (the
kernel's online counters) and over the recorded steps — and states plainly which parts hold.
:func:`phase_diagram` sweeps η and classifies each value: converges, stabilizes, diverges.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.dynamics.toy_sgd import simulate_toy
from dyntools.engine.result import RunResult, timed
from dyntools.models.quadratic_toy import QuadraticToy, interval_is_empty_message


def check_proposition(result: RunResult, toy: QuadraticToy) -> dict:
    """Measure the proposition's claims on a ``"stabilization"`` result of constant step η."""
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
        "paths_bouncing_at_end": float(bouncing.mean()) if bouncing.size else 0.0,
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
            f"bounce across the valley: {'holds' if out['paths_bouncing_at_end'] == 1.0 else 'FAILS'} "
            f"on {out['paths_bouncing_at_end']:.0%} of paths; loss band (eps0 th*^2, 0.17 th*^2): "
            f"{out['band_fraction_all_steps']:.1%} of all steps inside "
            f"(upper bound violated on {out['above_band_fraction_recorded']:.1%}, lower bound on "
            f"{out['below_band_fraction_recorded']:.1%} of recorded steps)")
    return out


def phase_diagram(toy: QuadraticToy, etas, *, steps: int, paths: int, theta0: float = 0.5,
                  seed: int = 0, method: str = "sgd", progress: bool = False) -> RunResult:
    """Classify each η of ``etas``: the stationary loss level and what fraction of paths
    converged, stabilized (bounced inside the band's regime) or diverged.

    Each grid cell draws its paths from ``SeedSequence(seed, key=(cell,))``, so a cell's result
    does not depend on the rest of the grid.
    """
    from dyntools.engine.progress import progress_bar

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
