"""Deeper networks on digits (seed 004's deep-network figure, scaled): per setting (row) the train loss, the
test error and the feature sparsity coefficient of a middle and of the last hidden layer (the ResNet: after
the first residual block and before the pooling) over iterations, one curve per step-size schedule (mean over
seeds, min–max band)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools.plots import PALETTE, count, figure, save

PANELS = (("train_loss", "train loss", True), ("test_acc", "test error (%)", False),
          ("fsc_middle", "feature sparsity, middle layer", False), ("fsc_last", "feature sparsity, last layer", False))


def plot_result(result, out_dir: Path, formats=("png", "pdf"), stem: str = "deep_nets") -> list[Path]:
    cfg = result.config
    steps = result["steps"]
    settings = cfg["settings"]
    fig, axes = figure(len(PANELS), len(settings), width=3.2, height=2.6)
    styles = ["-", "--", "-.", ":"]
    for row, setting in enumerate(settings):
        for ax, (key, label, log) in zip(axes[row], PANELS):
            vals = result[f"{setting}_{key}"]
            if key == "test_acc":
                vals = 100.0 * (1.0 - vals)
            for g, lab in enumerate(cfg["labels"]):
                v = vals[:, g]
                with np.errstate(all="ignore"):
                    mean, lo, hi = np.nanmean(v, axis=0), np.nanmin(v, axis=0), np.nanmax(v, axis=0)
                color = PALETTE[g % len(PALETTE)]
                ax.plot(steps, mean, color=color, ls=styles[g % len(styles)], lw=1.4, label=lab)
                ax.fill_between(steps, lo, hi, color=color, alpha=0.15, lw=0)
            if log:
                ax.set_yscale("log")
            ax.set_xlabel("iteration")
            ax.set_ylabel(label)
            ax.set_title(setting)
    axes[0][1].legend(loc="best", fontsize="small")     # small, in the test-error panel (not over the falling losses)
    if cfg.get("arch", "mlp") == "resnet":
        for row in axes:
            row[2].set_ylabel("feature sparsity, after block 1" if cfg.get("blocks", 2) <= 2
                              else "feature sparsity, middle")
            row[3].set_ylabel("feature sparsity, before pooling")
        net = f"conv ResNet ({cfg.get('channels', '?')} channels, {cfg.get('blocks', '?')} blocks)"
    else:
        net = "MLP " + "-".join(str(w) for w in cfg["widths"])
    fig.suptitle(f"{net} on {cfg.get('dataset', 'digits')}, batch {cfg['batch']}, {count(cfg['seeds'], 'seed')} "
                 "(mean, min–max)")
    return save(fig, out_dir, stem, formats)
