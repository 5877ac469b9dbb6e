"""Figure of the grokking study (result kind ``"grokking"``): train (dashed) and test (solid) accuracy and loss
against the step on a log axis, the weight norm ‖θ‖₂, each the median over the seeds with a min–max band,
AdamW's median first steps of train ≥ 99 % and test ≥ 99 % marked; and AdamW's phase diagram, the
proportion of seeds whose test accuracy reaches the threshold within the budget over (λ × train fraction)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots


def _curve(ax, x, values, color, label, ls="-", lw=1.4):
    """Median over the seeds (line) and min–max band of ``values`` (S, K) against ``x``; NaN ignored."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # a recording where every seed diverged
        med, lo, hi = np.nanmedian(values, axis=0), np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    ax.plot(x, med, ls=ls, color=color, lw=lw, label=label)
    ax.fill_between(x, lo, hi, color=color, alpha=0.15, lw=0)


def _marks(ax, result, keep) -> None:
    """AdamW's median first recorded steps of train ≥ 99 % and test ≥ 99 % (over the seeds that reach them)."""
    for key, ls, what in (("step_train99", ":", "train"), ("step_test99", "--", "test")):
        hit = result[key][0][result[key][0] > 0]
        if hit.size:
            ax.axvline(float(np.median(hit)), color="black", lw=0.8, ls=ls,
                       label=f"AdamW {what} ≥ 99 % (step {int(np.median(hit))})")


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    c = result.config
    steps = np.asarray(result["steps"], dtype=np.float64)
    keep = steps > 0                                     # log axis: the step-0 recording is left out
    x = steps[keep]
    fig, axes = plots.figure(ncols=2, nrows=2, width=4.6, height=3.3)
    ax_acc, ax_loss, ax_norm, ax_phase = axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]
    groups = len(c["labels"])
    for g, lab in enumerate(c["labels"]):
        # curves that coincide (an optimizer that never fits: train = test; several that memorize alike) stay
        # visible as a stack of widths: earlier optimizers wider, each test curve wider than its train curve
        color, lw = plots.PALETTE[g], 1.0 + 0.7 * (groups - 1 - g)
        _curve(ax_acc, x, 100 * result["test_acc"][g][:, keep], color, f"{lab} test", lw=lw + 1.0)
        _curve(ax_acc, x, 100 * result["train_acc"][g][:, keep], color, f"{lab} train", ls="--", lw=lw)
        _curve(ax_loss, x, result["test_loss"][g][:, keep], color, f"{lab} test", lw=lw + 1.0)
        _curve(ax_loss, x, result["train_loss"][g][:, keep], color, f"{lab} train", ls="--", lw=lw)
        _curve(ax_norm, x, result["weight_norm"][g][:, keep], color, lab, lw=lw)
    _marks(ax_acc, result, keep)
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.set_title(f"a {c['op']} b mod {c['p']}: accuracy ({plots.count(c['seeds'], 'seed')}, median and range)")
    ax_loss.set_yscale("log")
    ax_loss.set_ylabel("cross-entropy loss")
    ax_loss.set_title("loss")
    ax_norm.set_yscale("log")
    ax_norm.set_ylabel("weight norm ‖θ‖₂")
    ax_norm.set_title("weight norm")
    for ax in (ax_acc, ax_loss, ax_norm):
        ax.set_xscale("log")
        ax.set_xlabel("step (full batch)")
        ax.legend(fontsize=6, loc="best")
    _phase(fig, ax_phase, result)
    fig.suptitle(f"Grokking: {c['network']}, train fraction {c['train_fraction']:g}, η = {c['lr']:g}, "
                 f"λ = {c['weight_decay']:g}")
    return plots.save(fig, out_dir, "grokking", formats)


def _phase(fig, ax, result) -> None:
    """The proportion of seeds reaching the threshold, λ (rows) × train fraction (columns), with k/n written."""
    c = result.config
    reached = np.asarray(result["phase_reached"], dtype=bool)
    if reached.size == 0:
        ax.text(0.5, 0.5, "no phase diagram (--phase-seeds 0)", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    frac = reached.mean(axis=2)
    im = ax.imshow(frac, origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    n = reached.shape[2]
    for i in range(frac.shape[0]):
        for j in range(frac.shape[1]):
            ax.text(j, i, f"{int(reached[i, j].sum())}/{n}", ha="center", va="center", fontsize=8,
                    color="black" if frac[i, j] > 0.5 else "white")
    ax.set_xticks(range(frac.shape[1]), [f"{f:g}" for f in c["phase_fractions"]])
    ax.set_yticks(range(frac.shape[0]), [f"{lam:g}" for lam in c["phase_decays"]])
    ax.set_xlabel("train fraction")
    ax.set_ylabel("AdamW weight decay λ")
    ax.set_title(f"test acc ≥ {100 * c['threshold']:g} % within {c['steps']} steps")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="proportion of seeds")
