"""Loss stabilization on the quadratic toy (Andriushchenko et al. 2023, Prop. 1; seed 004).

Parameters: θ* = 1, data uniform on [1, 1.05] (n = 1000), so the proposition's interval is
η ∈ (1, 1.25/1.05²) = (1, 1.1338); θ_0 = 0.5 θ*; η = 1.08 inside it. Also: the η phase diagram
(converges below the GD limit 1/(E[x²]θ*²), stabilizes, diverges for large η), an empty-interval
support (x_max/x_min ≥ √1.25) reported as such, and the quadratic-GD facts (2/λ_max).

Run alone: ``python -m simulations.loss_stabilization [--quick]``.
"""

from __future__ import annotations

import numpy as np

from dyntools import plots
from dyntools.dynamics.quadratic_gd import classify_gd
from dyntools.dynamics.toy_sgd import simulate_toy
from dyntools.engine import record as recording
from dyntools.models.quadratic_toy import QuadraticToy, interval_is_empty_message
from dyntools.plots import stabilization as stab_plots
from dyntools.report import ReportContext, Section
from dyntools.stabilization import check_proposition, phase_diagram
from dyntools.tables import markdown_table

TITLE = "Loss stabilization on the quadratic toy (seed 004)"
THETA_STAR, X_MIN, X_MAX, N, ETA, THETA0 = 1.0, 1.0, 1.05, 1000, 1.08, 0.5


def sizes(quick: bool) -> dict:
    if quick:
        return {"steps": 20_000, "paths": 32, "grid_steps": 3_000, "grid_paths": 8, "grid_n": 27}
    return {"steps": 1_000_000, "paths": 64, "grid_steps": 50_000, "grid_paths": 32, "grid_n": 53}


def reproduce(ctx: ReportContext) -> Section:
    sz = sizes(ctx.quick)
    toy = QuadraticToy.uniform(theta_star=THETA_STAR, x_min=X_MIN, x_max=X_MAX, n=N, seed=ctx.seed)

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
    fig, axes = plots.figure(width=5.0, height=3.4)
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

The bounce holds on every path and the loss stays below 0.17θ*², but it dips under the lower bound
ε₀θ*² as printed in the seed. The bounce intervals themselves allow θ arbitrarily close to
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
    return Section(TITLE, md, numbers=numbers,
                   figures=[ctx.relative(fig_main[0]), ctx.relative(fig_phase[0])],
                   ok=bool(bounce_ok and quad_ok and gd_ok))


if __name__ == "__main__":  # pragma: no cover
    import argparse
    import tempfile
    from pathlib import Path

    from dyntools.report import render

    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="stab-")))
    a = parser.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    section = reproduce(ReportContext(a.out, quick=a.quick, seed=0, progress=True))
    (a.out / "report.md").write_text(render([section], quick=a.quick, seed=0))
    print(a.out / "report.md")
