"""Figures of the loss-stabilization toy: loss curves with the proposition's band, the two-sided
bounce of θ_t/θ*, and the phase diagram over η with the theoretical interval."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

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
    ax.set_title(f"{cfg['method'].upper()}, $\\eta$ = {cfg['eta']:g}, {cfg['paths']} paths")
    ax.legend(loc="lower left")


def bounce(result: RunResult, ax, window: int = 60) -> None:
    """θ_t/θ* of one path on the last run of consecutive recorded steps: the two sides of 1."""
    steps = result["steps"]
    consecutive = np.flatnonzero(np.diff(steps) != 1)
    start = consecutive[-1] + 1 if consecutive.size else 0
    start = max(start, steps.size - window)
    steps = steps[start:]
    theta = result["theta"][0, start:] / result.config["theta_star"]
    ax.axhline(1.0, color="k", lw=0.8)
    eps0 = result.summary.get("eps0", 0.0)
    if eps0 > 0:
        ax.axhspan(0.65, 1 - eps0, color=plots.PALETTE[0], alpha=0.12, label=r"$(0.65,\ 1-\varepsilon_0)$")
        ax.axhspan(1 - eps0, 1.162, color=plots.PALETTE[1], alpha=0.12, label=r"$(1-\varepsilon_0,\ 1.162)$")
    ax.plot(steps, theta, "o-", ms=2.5, lw=0.7, color=plots.PALETTE[0], label="path 0")
    ax.set_xlabel("step $t$")
    ax.set_ylabel(r"$\theta_t / \theta_*$")
    ax.set_title("iterates bounce across the valley (last steps)")
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def phase_diagram(result: RunResult, ax) -> None:
    """Stationary loss level vs η with the proposition's interval and the divergence region."""
    etas = result["etas"]
    level = result["stationary_loss"]
    interval = result.summary.get("eta_interval")
    if interval:
        ax.axvspan(interval[0], interval[1], color=plots.PALETTE[2], alpha=0.18,
                   label="proposition's interval of $\\eta$")
    limit = result.summary.get("gd_step_limit")
    if limit:
        ax.axvline(limit, color="k", ls="--", lw=0.8, label=r"GD limit $1/(E[x^2]\theta_*^2)$")
    shown = np.where(level > 0, level, np.nan)
    ax.fill_between(etas, np.where(result["loss_q10"] > 0, result["loss_q10"], np.nan),
                    np.where(result["loss_q90"] > 0, result["loss_q90"], np.nan),
                    color=plots.PALETTE[0], alpha=0.25, label="10–90% over paths")
    ax.plot(etas, shown, "o-", ms=3, color=plots.PALETTE[0], label="median late loss")
    conv = result["converged"] >= 1.0
    if conv.any():
        ax.plot(etas[conv], np.full(conv.sum(), np.nanmin(shown) / 10 if np.isfinite(shown).any() else 1e-30),
                "v", color=plots.PALETTE[2], label="converged (loss → 0)")
    div = result["diverged"] > 0
    if div.any():
        for e in etas[div]:
            ax.axvline(e, color=plots.PALETTE[1], alpha=0.3, lw=2)
        ax.plot([], [], color=plots.PALETTE[1], alpha=0.5, lw=2, label="some paths diverged")
    ax.set_yscale("log")
    ax.set_xlabel(r"step size $\eta$")
    ax.set_ylabel(r"late loss $F(\theta_t)$")
    ax.set_title("phase diagram over $\\eta$")
    ax.legend(loc="upper left", fontsize=7)


def plot_result(result: RunResult, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    if result.kind == "stabilization-phase":
        fig, axes = plots.figure(width=5.0, height=3.4)
        phase_diagram(result, axes[0, 0])
        return plots.save(fig, out_dir, "phase_diagram", formats)
    fig, axes = plots.figure(ncols=2)
    loss_curves(result, axes[0, 0])
    bounce(result, axes[0, 1])
    return plots.save(fig, out_dir, "stabilization", formats)
