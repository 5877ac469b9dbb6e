"""SGD against GD with label noise (the conjecture of seed 004): train loss, sparsity, Jacobian rank and
test loss over the run, one curve per method (median over the seeds where SGD did not diverge, 25–75 % band)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools.plots import PALETTE, count, figure, save

PANELS = (("train_loss", "train loss", True), ("sparsity", None, False),
          ("rank", r"rank of $\varphi_\theta(X)$", False),
          ("test_loss", "test loss", True))


def plot_result(result, out_dir: Path, formats=("png", "pdf"), stem: str = "sgd_vs_label_noise") -> list[Path]:
    cfg = result.config
    steps = np.maximum(result["steps"], 1)
    fig, axes = figure(4, 1, width=3.4, height=2.8)
    styles = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1))]
    kept = result["diverged_at"][0] < 0          # the seeds where SGD did not diverge, for every method
    for ax, (key, label, log) in zip(axes[0], PANELS):
        vals = result[key]
        for m, name in enumerate(cfg["methods"]):
            with np.errstate(all="ignore"):
                v = vals[m][kept]
                ok = np.isfinite(v).any(axis=0)
                if not ok.any():
                    continue
                lo, med, hi = (np.nanquantile(v[:, ok], q, axis=0) for q in (0.25, 0.5, 0.75))
            color = PALETTE[m % len(PALETTE)]
            width = 1.0 + 0.6 * (len(cfg["methods"]) - 1 - m)     # a stack: methods that coincide stay visible
            ax.plot(steps[ok], med, color=color, ls=styles[m % len(styles)], lw=width, label=name)
            ax.fill_between(steps[ok], lo, hi, color=color, alpha=0.15, lw=0)
        ax.set_xscale("log")
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("iteration t (SDE: τ/η)")
        ax.set_ylabel(label or ("ℓ0(β)" if cfg["model"] == "diag-net" else "feature sparsity coefficient"))
        if key == "train_loss":
            w0, w1 = cfg["window"]
            ax.axvspan(max(1, w0 * cfg["steps"]), w1 * cfg["steps"], color="0.85", alpha=0.5, lw=0,
                       label="window of the level")
    axes[0][0].legend(loc="best")
    fig.suptitle(f"{cfg['model']}: SGD vs label-noise GD / SDE at the matched δ (η = {cfg['eta']:g}; median, "
                 f"25–75 % over the {int(kept.sum())} of {count(cfg['seeds'], 'seed')} where SGD did not diverge)")
    return save(fig, out_dir, stem, formats)
