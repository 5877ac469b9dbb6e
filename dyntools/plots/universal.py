"""Figures of the universal-approximation study (result kind ``"universal-approximation"``): the sup-norm
error against the width on log–log axes (median and min–max band over the hidden-layer draws), the widest
1-D fit against its target, and the widest 2-D fit's error |f − g| over the square; and, when the result has
them, its caveats: the least-squares bound next to the networks trained by gradient descent, and the train
and test sup errors of the few-samples experiment against the width."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    fig, axes = plots.figure(ncols=3, width=3.6, height=3.0)
    ax = axes[0, 0]
    for j, (d, name) in enumerate(((1, "[0, 1]"), (2, "[0, 1]²"))):
        n = result[f"widths_{d}d"]
        e = result[f"errors_{d}d"]
        ax.plot(n, np.median(e, axis=1), "o-", color=plots.PALETTE[j], ms=3, label=f"{name} (median)")
        ax.fill_between(n, e.min(axis=1), e.max(axis=1), color=plots.PALETTE[j], alpha=0.2, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width n (hidden sigmoid units)")
    ax.set_ylabel("sup |f − g| on the evaluation grid")
    ax.set_title("sup-norm error against the width")
    ax.legend()
    ax = axes[0, 1]
    x = result["plot_x_1d"][:, 0]
    ax.plot(x, result["plot_f_1d"], color="black", lw=1.6, label="f")
    ax.plot(x, result["plot_g_1d"], color=plots.PALETTE[1], lw=1.0, ls="--",
            label=f"g, n = {int(result['widths_1d'][-1])}")
    ax.set_xlabel("x")
    ax.set_ylabel("value")
    ax.set_title("widest fit on [0, 1]")
    ax.legend()
    ax = axes[0, 2]
    P = result["plot_x_2d"]
    m = int(round(np.sqrt(P.shape[0])))
    err = np.abs(result["plot_f_2d"] - result["plot_g_2d"]).reshape(m, m)
    im = ax.imshow(err.T, origin="lower", extent=(0, 1, 0, 1), cmap="viridis")
    fig.colorbar(im, ax=ax, label="|f − g|")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(f"error of the widest fit on [0, 1]², n = {int(result['widths_2d'][-1])}")
    ax.grid(False)
    fig.suptitle(r"Universal approximation, illustrated (not proved): $g(x) = A + \sum_i v_i\,\sigma(w_i^T x + b_i)$")
    paths = plots.save(fig, out_dir, "universal_approximation", formats)
    if "few_ls_train_1d" in result.arrays:
        paths += plot_caveats(result, out_dir, formats)
    return paths


def _band(ax, n, e, color, label, ls="-", marker="o"):
    """Median over the draws (line) and min–max band of ``e`` (widths × draws) against the widths ``n``."""
    ax.plot(n, np.median(e, axis=1), ls=ls, marker=marker, color=color, ms=3, label=label)
    ax.fill_between(n, e.min(axis=1), e.max(axis=1), color=color, alpha=0.15, lw=0)


def plot_caveats(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Left: the least-squares bound and the GD-trained networks (both dimensions). Middle and right: train and
    test sup errors with few samples on [0, 1] and [0, 1]² (least squares and GD), the number of points marked."""
    fig, axes = plots.figure(ncols=3, width=3.8, height=3.2)
    ax = axes[0, 0]
    steps = result.config.get("gd", {}).get("steps", 0)
    for j, (d, name) in enumerate(((1, "[0, 1]"), (2, "[0, 1]²"))):
        n = result[f"widths_{d}d"]
        _band(ax, n, result[f"errors_{d}d"], plots.PALETTE[j], f"{name}: least-squares bound")
        if f"gd_errors_{d}d" in result.arrays:
            _band(ax, n, result[f"gd_errors_{d}d"][..., -1], plots.PALETTE[j], f"{name}: GD, {steps} steps",
                  ls="--", marker="s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width n (hidden sigmoid units)")
    ax.set_ylabel("sup |f − g| on the evaluation grid")
    ax.set_title("what exists vs what GD finds")
    ax.legend(fontsize=7)
    for ax, (d, name) in zip(axes[0, 1:], ((1, "[0, 1]"), (2, "[0, 1]²"))):
        n = result[f"widths_{d}d"]
        points = result.summary["few"][f"{d}d"]["points"]
        for j, (method, label) in enumerate((("ls", "least squares"), ("gd", "GD"))):
            if f"few_{method}_train_{d}d" not in result.arrays:
                continue
            color = plots.PALETTE[2 + 2 * j]
            _band(ax, n, result[f"few_{method}_test_{d}d"], color, f"{label}: test")
            _band(ax, n, np.maximum(result[f"few_{method}_train_{d}d"], 1e-16), color, f"{label}: train", ls=":",
                  marker="v")
        ax.axvline(points, color="black", lw=0.8, ls="--", label=f"width = {points} training points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("width n")
        ax.set_ylabel("sup |f − g| (train points / test grid)")
        ax.set_title(f"{points} samples on {name}: overfitting")
        ax.legend(fontsize=7)
    fig.suptitle("The theorem's caveats: gradient descent does not find the best weights, and few samples overfit")
    return plots.save(fig, out_dir, "universal_approximation_caveats", formats)
