"""The good region across difficulties (result kind ``"adamw-difficulty"``): one panel per optimizer over
(turns, noise), each square coloured by the fraction of (lr, λ) cells at or above the accuracy threshold
(pooled over the replicates) and labelled with that count's range and the median best accuracy; a third
panel shows the decoupled − coupled difference of the fraction and each difficulty's verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots

#: The verdict of a difficulty as a short mark on the difference panel.
MARKS = {"at least as large": "≥", "smaller": "<", "undecided": "undecided", "none": "neither ≥ thr."}
LABELS = {"adam": "Adam (L2, coupled)", "adamw": "AdamW (decoupled)", "sgd": "SGD (L2, coupled)",
          "sgdw": "SGDW (decoupled)"}
SHORT = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "sgdw": "SGDW"}


def _squares(ax, values, turns, noises, norm, cmap):
    """``values[noise, turns]`` as squares, turns along x and noise along y (easy at the bottom left)."""
    im = ax.imshow(values, origin="lower", cmap=cmap, norm=norm, aspect="auto",
                   extent=(-0.5, len(turns) - 0.5, -0.5, len(noises) - 0.5))
    ax.set_xticks(range(len(turns)), [f"{t:g}" for t in turns])
    ax.set_yticks(range(len(noises)), [f"{s:g}" for s in noises])
    ax.set_xlabel("turns of each arm (harder →)")
    ax.set_ylabel("noise std (harder ↑)")
    ax.grid(False)
    return im


def _ink(value, norm, cmap) -> str:
    """Black or white text, whichever reads on the square's colour."""
    import matplotlib

    r, g, b, _ = matplotlib.colormaps[cmap](norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    from matplotlib.colors import Normalize
    s = result.summary
    names = s["optimizers"]
    noises, turns = result["noises"], result["turns"]
    rows = {(r["noise"], r["turns"]): r for r in s["difficulties"]}
    per = s["cells_per_heatmap"] * result["val_acc"].shape[0]
    frac = np.array([[[rows[(float(a), float(b))][n]["fraction"] for b in turns] for a in noises] for n in names])
    fig, axes = plots.figure(ncols=3, width=3.7, height=3.4)
    norm, cmap = Normalize(0.0, 1.0), "viridis"
    for o, name in enumerate(names):
        ax = axes[0, o]
        im = _squares(ax, frac[o], turns, noises, norm, cmap)
        for a, sa in enumerate(noises):
            for b, tb in enumerate(turns):
                row = rows[(float(sa), float(tb))][name]
                lo, hi = row["cells_range"]
                best = np.nanmedian(row["best_val_acc"]) if np.isfinite(row["best_val_acc"]).any() else np.nan
                ax.text(b, a, f"{lo}–{hi} of {per}\nbest {best:.3f}" if lo != hi else f"{lo} of {per}\nbest {best:.3f}",
                        ha="center", va="center", fontsize=7, color=_ink(frac[o, a, b], norm, cmap))
        ax.set_title(LABELS.get(name, name))
    fig.colorbar(im, ax=list(axes[0, :2]), label=f"fraction of cells ≥ {s['threshold']:.0%} (pooled)", shrink=0.9)
    ax = axes[0, 2]
    diff = frac[1] - frac[0]
    span = max(0.05, float(np.nanmax(np.abs(diff))))
    dnorm = Normalize(-span, span)
    im = _squares(ax, diff, turns, noises, dnorm, "PuOr")
    for a, sa in enumerate(noises):
        for b, tb in enumerate(turns):
            mark = MARKS[rows[(float(sa), float(tb))]["region"]]
            ax.text(b, a, f"{diff[a, b]:+.2f}\n{mark}", ha="center", va="center", fontsize=8,
                    color=_ink(diff[a, b], dnorm, "PuOr"))
    a, b = (SHORT.get(n, n) for n in names)
    ax.set_title(f"{b} − {a}; mark: {b}'s region ≥ or < {a}'s")
    fig.colorbar(im, ax=ax, label="difference of the fractions", shrink=0.9)
    fig.suptitle(f"Good region (validation accuracy ≥ {s['threshold']:.0%}) on harder and easier spirals: "
                 f"{per} (lr, λ) cells per square, median best accuracy over {result['val_acc'].shape[0]} replicates")
    return plots.save(fig, out_dir, "adamw_difficulty", formats)
