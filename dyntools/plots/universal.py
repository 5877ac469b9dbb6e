"""Figures of the universal-approximation study (result kind ``"universal-approximation"``): the sup-norm
error against the width on log–log axes (median and min–max band over the hidden-layer draws), the widest
1-D fit against its target, and the widest 2-D fit's error |f − g| over the square."""

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
    fig.suptitle("Universal approximation, illustrated (not proved): g(x) = A + Σ v_i σ(w_iᵀx + b_i)")
    return plots.save(fig, out_dir, "universal_approximation", formats)
