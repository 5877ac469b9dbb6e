"""Figure of a ``dyntools simulate model`` run (kind ``"symbolic-model"``): the train (and test) loss of
every seed against the iteration and, when the model has a Jacobian, the rank of ``φ_θ(X)`` and the
median of its column norms (seed 0) — the quantities of seed 004's sparse-feature story."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    has_jac = "jacobian_rank" in result.arrays
    fig, axes = plots.figure(ncols=3 if has_jac else 1, width=3.8, height=3.1)
    x = np.maximum(result["steps"], 1)
    ax = axes[0][0]
    loss = result["train_loss"][0]                          # (S, K): the one run's seeds
    for s in range(loss.shape[0]):
        ax.plot(x, loss[s], color=plots.PALETTE[0], alpha=1.0 if s == 0 else 0.35,
                label="train" if s == 0 else None)
        if "test_loss" in result.arrays:
            ax.plot(x, result["test_loss"][0, s], color=plots.PALETTE[1], ls="--", alpha=1.0 if s == 0 else 0.35,
                    label="test" if s == 0 else None)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss")
    model = result.config.get("model", {}).get("name", "model")
    ax.set_title(f"{model}: {result.config.get('optimizer', '')} lr={result.config.get('lr', '')}")
    ax.legend()
    if has_jac:
        ax_r, ax_c = axes[0][1], axes[0][2]
        ax_r.plot(x, result["jacobian_rank"], color=plots.PALETTE[2], drawstyle="steps-post")
        ax_r.set_ylabel(r"rank $\varphi_\theta(X)$")
        ax_r.set_title("Jacobian rank (seed 0)")
        ax_c.plot(x, result["column_norm_median"], color=plots.PALETTE[3])
        ax_c.set_yscale("log")
        ax_c.set_ylabel(r"median $\|\varphi_\theta(X)_{:,j}\|_2$")
        ax_c.set_title(r"column norms of $\varphi_\theta(X)$")
        for a in (ax_r, ax_c):
            a.set_xscale("symlog", linthresh=10)
            a.set_xlabel("iteration")
    return plots.save(fig, out_dir, "model_training", formats)
