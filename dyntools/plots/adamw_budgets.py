"""Figures of an ``adamw-budgets`` result: heatmaps per budget over raw λ (top row) and over λ_norm (bottom
row) of what "best" is read from (validation loss or accuracy) on one colour scale, best cell starred; the
best λ against the budget, and the validation loss against the λ actually used."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots
from dyntools.plots.adamw_heatmaps import _edges

#: The normalized decay in mathtext.
LAMBDA_NORM = r"$\lambda_{\mathrm{norm}}$"


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    from matplotlib.colors import LogNorm, Normalize
    budgets, lrs = result["budgets"], result["lrs"]
    nb = len(budgets)
    fig, axes = plots.figure(ncols=nb, nrows=2, width=3.4, height=3.0)
    by_loss = result.config.get("criterion", "val-acc") == "val-loss"      # colour what "best" was read from
    key = "val_loss" if by_loss else "val_acc"
    finite = result["val_loss"][np.isfinite(result["val_loss"]) & (result["val_loss"] > 0)]
    norm = (LogNorm(finite.min(), finite.max()) if by_loss and finite.size else Normalize(0.5, 1.0))
    mesh = None
    for a, label in enumerate(("raw λ", LAMBDA_NORM + r"  ($\lambda = \lambda_{\mathrm{norm}}\sqrt{b/(BT)}$)")):
        wds = result["wds"][a]
        for k in range(nb):
            ax = axes[a, k]
            mesh = ax.pcolormesh(_edges(wds), _edges(lrs), np.ma.masked_invalid(result[key][a, k]), norm=norm,
                                 cmap="magma_r" if by_loss else "viridis", shading="flat")
            i, j = result["best"][a, k]
            ax.plot(wds[j], lrs[i], marker="*", ms=13, color=plots.PALETTE[4], mec="black", clip_on=False, zorder=5)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(_edges(wds)[0], _edges(wds)[-1])
            ax.set_ylim(_edges(lrs)[0], _edges(lrs)[-1])
            plots.cell_grid_ticks(ax)
            ax.set_xlabel(label)
            ax.set_ylabel("learning rate")
            ax.set_title(f"{budgets[k]:g} epochs: best {result['best_wd'][a, k]:.2g}")
            ax.grid(False)
    fig.colorbar(mesh, ax=list(axes.ravel()), shrink=0.8,
                 label=f"validation {'cross-entropy' if by_loss else 'accuracy'} (star: best)")
    paths = plots.save(fig, out_dir, "adamw_budgets_heatmaps", formats)

    fig, axes = plots.figure(ncols=2, nrows=1, width=4.6, height=3.4)
    ax = axes[0, 0]
    ax.plot(budgets, result["best_wd"][0], "o-", color=plots.PALETTE[0], label="best raw λ (raw grid)")
    ax.plot(budgets, result["best_wd"][1], "s-", color=plots.PALETTE[1], label=f"best {LAMBDA_NORM} (normalized grid)")
    ax.plot(budgets, result["best_raw_lambda"][1], "s:", color=plots.PALETTE[1],
            label=f"$\\lambda$ used at the best {LAMBDA_NORM}")
    best_raw = np.asarray(result["best_wd"][0], dtype=float)
    ok = np.isfinite(best_raw) & (best_raw > 0)
    if ok.any():                   # the normalization's prediction, λ ∝ T^(−1/2), through the measured points'
        c = np.exp(np.mean(np.log(best_raw[ok]) + 0.5 * np.log(budgets[ok])))      # geometric mean (slope fixed)
        ax.plot(budgets, c / np.sqrt(budgets), "-", color="0.4", lw=0.9,
                label="predicted λ ∝ T^(−1/2) (level fitted)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("budget T (epochs)")
    ax.set_ylabel("best weight decay")
    ax.set_title("Does the best decay move with the budget?")
    ax.legend(framealpha=0.85)
    ax = axes[0, 1]                               # the profiles the best values are read from
    scale = result["best_raw_lambda"][1] / result["best_wd"][1]           # √(b/(B·T)) per budget
    for k, budget in enumerate(budgets):
        color = plots.PALETTE[k % len(plots.PALETTE)]
        ax.plot(result["wds"][0], np.nanmin(result["val_loss"][0, k], axis=0), "-", color=color,
                label=f"{budget:g} epochs, raw grid")
        ax.plot(result["wds"][1] * scale[k], np.nanmin(result["val_loss"][1, k], axis=0), "--", color=color,
                label=f"{budget:g} epochs, {LAMBDA_NORM} grid")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("weight decay λ actually used")
    ax.set_ylabel("validation loss (best learning rate)")
    ax.set_title("Validation loss against λ per budget")
    ax.legend(framealpha=0.85, fontsize=7)
    return paths + plots.save(fig, out_dir, "adamw_budgets_best_lambda", formats)
