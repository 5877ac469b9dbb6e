"""Figures of the loss-stabilization toy: loss curves with the proposition's band, the two-sided
bounce of θ_t/θ*, and the phase diagram over η with the theoretical interval."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots
from dyntools.engine.result import RunResult


def loss_curves(result: RunResult, ax, max_paths: int = 8) -> None:
    """Loss vs step on log-log axes: a few paths, the median over paths, the shaded band."""
    steps = result["steps"].astype(float)
    loss = result["loss"]
    x = np.where(steps == 0, 0.5, steps)  # step 0 drawn at 0.5 on the log axis
    band = result.summary.get("band")
    if band and band[0] > 0:
        ax.axhspan(band[0], band[1], color=plots.PALETTE[2], alpha=0.15,
                   label=r"band $(\varepsilon_0\theta_*^2,\ 0.17\,\theta_*^2)$")
    for p in range(min(max_paths, loss.shape[0])):
        ax.plot(x, loss[p], color=plots.PALETTE[0], lw=0.5, alpha=0.35)
    with np.errstate(all="ignore"):
        ax.plot(x, np.nanmedian(loss, axis=0), color=plots.PALETTE[1], lw=1.5, label="median over paths")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step $t$")
    ax.set_ylabel(r"$F(\theta_t)$")
    cfg = result.config
    ax.set_title(f"{cfg['method'].upper()}, $\\eta$ = {cfg['eta']:g}, {plots.count(cfg['paths'], 'path')}")
    ax.legend(loc="best")


def bounce(result: RunResult, ax, window: int = 60) -> None:
    """θ_t/θ* of one surviving path on the last run of consecutive recorded steps: the two sides of 1.
    When every path diverged there is no bounce to show: :func:`runaway` draws how the iterates left."""
    from matplotlib.ticker import MaxNLocator
    steps = result["steps"]
    theta_all = result["theta"] / result.config["theta_star"]
    alive = np.flatnonzero(np.all(np.isfinite(theta_all), axis=1))
    if alive.size == 0:
        runaway(result, ax)
        return
    path = int(alive[0])
    consecutive = np.flatnonzero(np.diff(steps) != 1)
    start = consecutive[-1] + 1 if consecutive.size else 0
    start = max(start, steps.size - window)
    steps = steps[start:]
    theta = theta_all[path, start:]
    ax.axhline(1.0, color="k", lw=0.8)
    eps0 = result.summary.get("eps0", 0.0)
    if eps0 > 0:
        ax.axhspan(0.65, 1 - eps0, color=plots.PALETTE[0], alpha=0.12, label=r"$(0.65,\ 1-\varepsilon_0)$")
        ax.axhspan(1 - eps0, 1.162, color=plots.PALETTE[1], alpha=0.12, label=r"$(1-\varepsilon_0,\ 1.162)$")
    ax.plot(steps, theta, "o-", ms=2.5, lw=0.7, color=plots.PALETTE[0], label=f"path {path}")
    ax.set_xlabel("step $t$")
    ax.set_ylabel(r"$\theta_t / \theta_*$")
    ax.set_title("iterates bounce across the valley (last steps)")
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def runaway(result: RunResult, ax, max_paths: int = 8) -> None:
    """|θ_t/θ*| against the step for a run whose every path diverged, up to each path's divergence, on
    log axes, with the step of divergence marked: what happened instead of a bounce."""
    steps = result["steps"].astype(float)
    x = np.where(steps == 0, 0.5, steps)
    theta = np.abs(result["theta"] / result.config["theta_star"])
    div = np.asarray(result.arrays.get("diverged_at", np.full(theta.shape[0], -1)))
    drawn = 0
    for p in range(min(max_paths, theta.shape[0])):
        ok = np.isfinite(theta[p]) & (theta[p] > 0)
        if ok.sum() >= 2:
            ax.plot(x[ok], theta[p, ok], "o-", ms=2, lw=0.7, color=plots.PALETTE[p % 8], alpha=0.8)
            drawn += 1
    bad = div[div >= 0]
    what = f"all {theta.shape[0]} paths diverged" + (f" (first at step {int(bad.min())})" if bad.size else "")
    if drawn:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xlabel("step $t$")
        ax.set_ylabel(r"$|\theta_t| / \theta_*$")
        ax.set_title(f"no bounce: {what}")
    else:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no bounce to show:\n{what}\nbefore the first record", ha="center", va="center",
                transform=ax.transAxes)


def phase_diagram(result: RunResult, ax) -> None:
    """Stationary loss level vs η with the proposition's interval and the divergence region: step sizes
    where some (not all) paths diverged are hatched lightly, those where every path diverged are shaded
    and carry no loss; the y-range is that of the finite late losses (a few decades), not of 10⁻³²."""
    etas = result["etas"]
    level = result["stationary_loss"]
    interval = result.summary.get("eta_interval")
    if interval:
        ax.axvspan(interval[0], interval[1], color=plots.PALETTE[2], alpha=0.18,
                   label="proposition's interval of $\\eta$")
    limit = result.summary.get("gd_step_limit")
    if limit:
        ax.axvline(limit, color="k", ls="--", lw=0.8, label=r"GD limit $1/(E[x^2]\theta_*^2)$")
    diverged = np.asarray(result["diverged"], dtype=float)          # the fraction of paths that diverged
    every = diverged >= 1.0
    some = (diverged > 0) & ~every
    shown = np.where((level > 0) & ~every, level, np.nan)
    q10 = np.where((result["loss_q10"] > 0) & ~every, result["loss_q10"], np.nan)
    q90 = np.where((result["loss_q90"] > 0) & ~every, result["loss_q90"], np.nan)
    ax.fill_between(etas, q10, q90, color=plots.PALETTE[0], alpha=0.25, label="10–90% over paths")
    ax.plot(etas, shown, "o-", ms=3, color=plots.PALETTE[0], label="median late loss")
    finite = np.concatenate([v[np.isfinite(v)] for v in (shown, q10, q90)])
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        ax.set_ylim(max(lo, hi * 1e-8) / 3, hi * 3)
    conv = result["converged"] >= 1.0
    if conv.any():
        floor = ax.get_ylim()[0] * 1.5 if finite.size else 1e-30
        ax.plot(etas[conv], np.full(conv.sum(), floor), "v", color=plots.PALETTE[2], label="converged (loss → 0)")
    step = float(np.median(np.diff(etas))) / 2 if etas.size > 1 else 0.01
    for mask, alpha, label in ((some, 0.15, "some paths diverged"), (every, 0.45, "every path diverged")):
        for k, e in enumerate(etas[mask]):
            ax.axvspan(e - step, e + step, color=plots.PALETTE[1], alpha=alpha, lw=0, label=label if k == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel(r"step size $\eta$")
    ax.set_ylabel(r"late loss $F(\theta_t)$")
    ax.set_title("phase diagram over $\\eta$")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)


def plot_result(result: RunResult, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    if result.kind == "stabilization-phase":
        fig, axes = plots.figure(width=6.4, height=3.4)
        phase_diagram(result, axes[0, 0])
        return plots.save(fig, out_dir, "phase_diagram", formats)
    fig, axes = plots.figure(ncols=2)
    loss_curves(result, axes[0, 0])
    bounce(result, axes[0, 1])
    return plots.save(fig, out_dir, "stabilization", formats)
