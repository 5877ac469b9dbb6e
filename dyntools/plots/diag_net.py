"""Figures of diagonal-network runs (kind ``"diag-net"``): the paper's four panels and the sharpness.

Train loss (the stabilization plateau of the large steps), test loss, Jacobian rank and feature
sparsity ‖β‖₀ against the iteration, then where the step sits against the curvature:
``η_t λ_max(t) / 2`` with ``λ_max`` the top eigenvalue of the full-batch Hessian at the recorded
point (1 is GD's stability limit ``η = 2/λ_max``). One colour per schedule, the median over the
non-diverged seeds with a 10–90% band; dotted vertical lines where a schedule decays its step.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots

PANELS = (("train_loss", "train loss  ‖Xβ − y‖²/2n", True),
          ("test_loss", "test loss", True),
          ("rank", "rank of φ(X) = [X⊙v, X⊙u]", False),
          ("l0", "feature sparsity ‖β‖₀", False),
          ("edge", r"$\eta_t\,\lambda_{\max}(\nabla^2 L)\,/\,2$", True))


def eta_at_records(result, g: int) -> np.ndarray:
    """The step size ``η_t`` of schedule ``g`` at each recorded step (the last one for ``t = T``): the result's
    ``eta_rec``, or from the per-step ``etas`` of a result saved before runs streamed their rates."""
    if "eta_rec" in getattr(result, "arrays", result):
        return result["eta_rec"][g]
    etas = result["etas"][g]
    steps = result["steps"].astype(np.int64)
    return etas[np.minimum(steps, etas.size - 1)] if etas.size > 1 else np.full(steps.size, etas[0])


def decay_steps(result, g: int) -> np.ndarray:
    """Where schedule ``g``'s step size drops by more than 1 % (not a warm-up ramp): the run's ``decay_steps``
    (exact), else for an older result the exact step from its per-step ``etas`` or the first recorded step at
    the new value."""
    spec = result.config["runs"][g]
    if "decay_steps" in spec:                              # exact: written by the run from its schedule
        return np.asarray(spec["decay_steps"], dtype=np.int64)
    if "eta_rec" in getattr(result, "arrays", result):
        etas, at = result["eta_rec"][g], result["steps"].astype(np.int64)
    else:
        etas = result["etas"][g]
        at = np.arange(etas.size)
    if etas.size < 2:
        return np.zeros(0, dtype=np.int64)
    changes = np.flatnonzero(np.diff(etas) < 0) + 1
    return at[changes[etas[changes - 1] / etas[changes] > 1.01]]


def panel_values(result, g: int, key: str) -> np.ndarray:
    """(seeds, records) values of one panel for schedule ``g``."""
    if key == "edge":
        sharp = result["sharpness"][g]
        if sharp.ndim == 1:       # a run saved before the sharpness was recorded along the run
            return np.full(result[PANELS[0][0]][g].shape, np.nan)
        return sharp * eta_at_records(result, g)[None, :] / 2
    return result[key][g]


def schedule_name(label: str) -> str:
    """A run label without its step size (``"large η=0.282, ÷4.8 at 10%"`` → ``"large, ÷4.8 at 10%"``),
    so that the runs of a step-size scan line up across scales."""
    return re.sub(r" η=[^,]*", "", label)


def band(values: np.ndarray, alive: np.ndarray):
    """Median and 10/90% quantiles over the seeds that did not diverge (NaN where none)."""
    vals = values[alive]
    if vals.shape[0] == 0:
        nan = np.full(values.shape[-1], np.nan)
        return nan, nan, nan
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # all-NaN columns (nothing recorded) stay NaN
        q10, med, q90 = np.nanquantile(vals, [0.1, 0.5, 0.9], axis=0)
    return med, q10, q90


def level_note(ax, y: float, text: str) -> None:
    """Name a reference level at the left of ``ax``: above the line in the lower half of the view, below it
    in the upper half (a note at the top of the view would sit on the frame)."""
    low, high = ax.get_ylim()
    scale = ax.get_yscale() == "log" and low > 0
    middle = np.sqrt(low * high) if scale else (low + high) / 2
    ax.text(0.01, y, text, va="bottom" if y <= middle else "top", color="0.3", fontsize=7, zorder=6,
            transform=ax.get_yaxis_transform(), bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 1})


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf"),
                stem: str = "diag_net") -> list[Path]:
    from matplotlib.lines import Line2D
    steps = result["steps"].astype(float)
    x = np.maximum(steps, 0.5)  # step 0 drawn at 0.5 on the log axis
    runs = result.config["runs"]
    fig, axes = plots.figure(ncols=len(PANELS), nrows=1, width=3.3, height=2.9)
    axes = axes[0]
    T = result.config["steps"]
    drawn = np.zeros(len(PANELS), dtype=bool)          # a panel with a positive value to draw
    decays = []                                        # (colour, steps where the schedule decays)
    for g, spec in enumerate(runs):
        colour = plots.PALETTE[g % len(plots.PALETTE)]       # and a dash pattern: runs may coincide
        alive = result["diverged_at"][g] < 0
        n_div = int((~alive).sum())
        label = spec["label"] + (f" ({n_div}/{alive.size} diverged)" if n_div else "")
        for i, (ax, (key, _, _)) in enumerate(zip(axes, PANELS)):
            med, lo, hi = band(panel_values(result, g, key), alive)
            drawn[i] |= bool(np.any(np.isfinite(med) & (med > 0)))
            ax.plot(x, med, color=colour, ls=plots.DASHES[g % len(plots.DASHES)], lw=1.1 + 0.5 * (len(runs) - 1 - g),
                    label=label)
            ax.fill_between(x, lo, hi, color=colour, alpha=0.18, lw=0)
        decays.append((colour, decay_steps(result, g)))
    for colour, changes in decays:                  # in the panels with data only: an empty panel stays blank
        for c in changes:
            for ax in axes[drawn]:
                ax.axvline(c, color=colour, ls=":", lw=0.9, alpha=0.8)
    for i, (ax, (_key, ylabel, logy)) in enumerate(zip(axes, PANELS)):
        ax.set_xscale("log")
        ax.set_xlim(0.5, T * 1.05)
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        if logy and drawn[i]:               # every run diverged: nothing to draw on a log axis
            ax.set_yscale("log")
    cfg = result.config
    axes[2].axhline(min(cfg["n"], cfg["d"]), color="0.5", lw=0.8, ls="--")
    level_note(axes[2], min(cfg["n"], cfg["d"]), " n")
    r = cfg.get("r")
    if r:
        axes[3].axhline(r, color="0.5", lw=0.8, ls="--")
        level_note(axes[3], r, " r = ‖β*‖₀")
    if drawn[4]:
        axes[4].axhline(1.0, color="0.5", lw=0.8, ls="--")
        level_note(axes[4], 1.0, r" $\eta = 2/\lambda_{\max}$")
    all_diverged = bool(np.all(result["diverged_at"] >= 0))
    for i, ax in enumerate(axes):
        if not drawn[i]:                # an empty panel says why it is empty
            why = ("every seed diverged\nbefore a value was recorded" if all_diverged else
                   "not recorded in this run" if PANELS[i][0] == "edge" else "no positive value to draw")
            ax.set_axis_off()           # no ticks around nothing; the note names the quantity
            ax.text(0.5, 0.5, f"{PANELS[i][1]}:\n{why}", ha="center", va="center", transform=ax.transAxes,
                    color="0.3")
    handles, labels = axes[0].get_legend_handles_labels()
    if any(ln.get_linestyle() == ":" for ln in axes[0].lines):
        handles.append(Line2D([], [], color="0.4", ls=":", lw=0.9))
        labels.append("step decay (schedule's colour)")
    handles.append(Line2D([], [], color="0.5", ls="--", lw=0.8))
    labels.append("reference level (n, r, 1: named beside it)")
    axes[0].legend(handles, labels, loc="best", fontsize=6.5, frameon=False)
    method = cfg["method"].upper() + (f" (batch {cfg['batch']})" if cfg["method"] != "gd" else "")
    fig.suptitle(f"Diagonal linear network, {method}: n={cfg['n']}, d={cfg['d']}, r={r}, "
                 f"{plots.count(cfg['seeds'], 'seed')} (median, 10–90% band over non-diverged seeds)", fontsize=9)
    return plots.save(fig, out_dir, stem, formats)


def plot_scan(scan, out_dir: Path, formats: Sequence[str] = ("png", "pdf"),
              stem: str = "diag_net_scan") -> list[Path]:
    """The step-size scan of :func:`simulations.diag_nets.step_scan`: against the multiplier ``c`` of
    both step sizes, the final ‖β‖₀ and test loss (median, 10–90% band over non-diverged seeds) and
    the fraction of seeds that diverged, one colour per schedule (the same colours as
    :func:`plot_result`)."""
    scales = np.array([c for c, _ in scan], dtype=float)
    first = scan[0][1]
    fig, axes = plots.figure(ncols=3, nrows=1, width=3.4, height=2.9)
    axes = axes[0]
    for g, spec in enumerate(first.config["runs"]):
        colour = plots.PALETTE[g % len(plots.PALETTE)]
        stats = {key: np.array([band(res[key][g][:, -1:], res["diverged_at"][g] < 0) for _, res in scan])[:, :, 0]
                 for key in ("l0", "test_loss")}
        for ax, key in zip(axes[:2], ("l0", "test_loss")):
            med, lo, hi = stats[key].T
            ax.plot(scales, med, "o-", color=colour, lw=1.3, ms=3.5, label=schedule_name(spec["label"]))
            ax.fill_between(scales, lo, hi, color=colour, alpha=0.15, lw=0)
        frac = [float(np.mean(res["diverged_at"][g] >= 0)) for _, res in scan]
        axes[2].plot(scales, frac, "o-", color=colour, lw=1.3, ms=3.5)
    cfg = first.config
    axes[0].set_ylabel("final feature sparsity ‖β‖₀")
    if cfg.get("r"):
        axes[0].axhline(cfg["r"], color="0.5", lw=0.8, ls="--", label="r = ‖β*‖₀")
    axes[1].set_ylabel("final test loss")
    axes[1].set_yscale("log")
    axes[2].set_ylabel("fraction of seeds diverged")
    axes[2].set_ylim(-0.03, 1.03)
    base = cfg["runs"][0]["eta"] / scales[0]            # the small step at c = 1
    for ax in axes:
        ax.set_xlabel(f"step-size multiplier c  (small step η = {base:.3g}·c)")
    axes[0].legend(fontsize=6.5, frameon=False)
    fig.suptitle(f"Step-size scan, diagonal network {cfg['method'].upper()}: n={cfg['n']}, d={cfg['d']}, "
                 f"{cfg['steps']} steps, {plots.count(cfg['seeds'], 'seed')} per point", fontsize=9)
    return plots.save(fig, out_dir, stem, formats)
