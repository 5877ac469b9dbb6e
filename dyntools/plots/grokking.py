"""Figure of the grokking study (result kind ``"grokking"``): train (dashed) and test (solid) accuracy and loss
against the step on a log axis, the weight norm ‖θ‖₂, each the median over the seeds with a min–max band,
AdamW's median first steps of train ≥ 99 % and test ≥ 99 % marked; and AdamW's phase diagram, the
proportion of seeds whose test accuracy reaches the threshold within the budget over (λ × train fraction).
Kind ``"grokking-sweep"`` (``dyntools sweep grokking``): that phase diagram for each optimizer of the sweep."""

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
    if result.kind == "grokking-sweep":
        return plot_sweep(result, out_dir, formats)
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
    """AdamW's phase diagram of a ``simulate grokking`` result (:func:`phase_panel`)."""
    c = result.config
    reached = np.asarray(result["phase_reached"], dtype=bool)
    if reached.size == 0:
        ax.text(0.5, 0.5, "no phase diagram (--phase-seeds 0)", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    phase_panel(fig, ax, reached, [f"{lam:g}" for lam in c["phase_decays"]], c["phase_fractions"],
                "AdamW weight decay λ", f"test acc ≥ {100 * c['threshold']:g} % within {c['steps']} steps")


def phase_panel(fig, ax, reached: np.ndarray, rows: list[str], fractions, ylabel: str, title: str,
                colorbar: bool = True):
    """The proportion of seeds reaching the threshold, ``reached`` (rows × train fractions × seeds), as an image
    with ``k/n`` written in every cell; returns the image."""
    frac = reached.mean(axis=2)
    im = ax.imshow(frac, origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    n = reached.shape[2]
    for i in range(frac.shape[0]):
        for j in range(frac.shape[1]):
            ax.text(j, i, f"{int(reached[i, j].sum())}/{n}", ha="center", va="center", fontsize=8,
                    color="black" if frac[i, j] > 0.5 else "white")
    ax.set_xticks(range(frac.shape[1]), [f"{f:g}" for f in fractions])
    ax.set_yticks(range(frac.shape[0]), rows)
    ax.set_xlabel("train fraction")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(False)
    if colorbar:
        fig.colorbar(im, ax=ax, label="proportion of seeds")
    return im


#: how the sweep's optimizer names read in a figure
SWEEP_LABELS = {"adamw": "AdamW (decoupled decay)", "adam+l2": "Adam+L2 (λ in the gradient)", "none": "Adam, no decay"}


def plot_sweep(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """``dyntools sweep grokking``'s phase diagrams: one panel per optimizer, λ (rows) × train fraction
    (columns), the proportion of seeds whose test accuracy reaches the threshold within the budget, ``k/n`` in
    each cell; Adam without decay is one row (λ does not enter it)."""
    c = result.config
    reached = np.asarray(result["reached"], dtype=bool)
    names = c["optimizers"]
    heights = [1 if name == "none" else len(c["decays"]) for name in names]
    fig, axes = plots.figure(ncols=len(names), width=3.6, height=0.5 * max(heights) + 2.0)
    im = None
    for o, name in enumerate(names):
        ax = axes[0, o]
        if name == "none":
            im = phase_panel(fig, ax, reached[o, :1], ["none"], c["fractions"], "weight decay", SWEEP_LABELS[name],
                             colorbar=False)
        else:
            im = phase_panel(fig, ax, reached[o], [f"{lam:g}" for lam in c["decays"]], c["fractions"],
                             "weight decay λ", SWEEP_LABELS[name], colorbar=False)
    fig.colorbar(im, ax=list(axes[0]), label="proportion of seeds", shrink=0.9)
    fig.suptitle(f"Grokking phase diagram: seeds with test accuracy ≥ {100 * c['threshold']:g} % within "
                 f"{c['steps']} steps (n = {c['seeds']} per cell)\n{c['network']}, a {c['op']} b mod {c['p']}, "
                 f"η = {c['lr']:g}")
    return plots.save(fig, out_dir, "grokking-phase", formats)
