"""Heatmaps of a ``adamw-grid`` result: validation accuracy and loss over (learning rate, weight decay).

One panel per optimizer side by side on one shared colour scale; the best cell is starred, the
cells reaching the accuracy threshold are outlined along their edges, and diverged cells are crossed.
Results that carry them also get the final training accuracy, the fraction of (near-)zero weights
(``w_small``) and the learning curves of the best and the chosen cell (``lc_*``, against epochs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots

LABELS = {"adam": "Adam (L2, coupled)", "adamw": "AdamW (decoupled)", "sgd": "SGD (L2, coupled)",
          "sgdw": "SGDW (decoupled)", "adamw_l1": "AdamW, L1 decay", "adamw_l1l2": "AdamW, L1+L2 decay",
          "rmsprop": "RMSprop (L2)", "rmsprop_bc": "RMSProp bias-corrected", "adagrad": "AdaGrad (L2)"}


def _edges(values: np.ndarray) -> np.ndarray:
    logs = np.log10(values)
    if logs.size == 1:
        return 10 ** np.array([logs[0] - 0.5, logs[0] + 0.5])
    mid = (logs[1:] + logs[:-1]) / 2
    return 10 ** np.concatenate([[2 * logs[0] - mid[0]], mid, [2 * logs[-1] - mid[-1]]])


def cell_outline(good: np.ndarray, x_edges: np.ndarray, y_edges: np.ndarray):
    """The boundary of the cells where ``good`` (rows: y, columns: x) holds, along the cells' edges: the
    (x, y) vertices of its unit segments, NaN between segments. A contour through the cell centres of a
    coarse grid would draw a guessed curve; the outline draws exactly the cells that pass."""
    padded = np.pad(np.asarray(good, dtype=bool), 1)
    xs, ys = [], []
    rows, cols = np.nonzero(padded[1:-1, 1:] != padded[1:-1, :-1])        # vertical edges: x_edges[c]
    for r, c in zip(rows, cols):
        xs += [x_edges[c], x_edges[c], np.nan]
        ys += [y_edges[r], y_edges[r + 1], np.nan]
    rows, cols = np.nonzero(padded[1:, 1:-1] != padded[:-1, 1:-1])        # horizontal edges: y_edges[r]
    for r, c in zip(rows, cols):
        xs += [x_edges[c], x_edges[c + 1], np.nan]
        ys += [y_edges[r], y_edges[r], np.nan]
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def _panel_row(fig, axes, result, key, title, norm, cmap, colorbar_label):
    """One heatmap per optimizer over (λ, lr) on a shared colour scale. The view is exactly the grid's
    cells (edges halfway between grid points in log space, so the first and last columns are whole), the
    best cell's star is not clipped at the border, the cells reaching the accuracy threshold are outlined
    along their edges (:func:`cell_outline`), and the legend (best cell, the outline,
    diverged cells) sits under the panel, where it covers no cell. Ticks: :func:`dyntools.plots.cell_grid_ticks`."""
    from matplotlib.lines import Line2D

    wds = result["wds"]
    names = result.config["optimizers"]
    threshold = result.config["threshold"]
    mesh = None
    for ax, (o, name) in zip(axes, enumerate(names)):
        lrs = result["lrs"][o] if result["lrs"].ndim == 2 else result["lrs"]
        x_edges, y_edges = _edges(wds), _edges(lrs)
        values = np.ma.masked_invalid(result[key][o])
        mesh = ax.pcolormesh(x_edges, y_edges, values, norm=norm, cmap=cmap, shading="flat")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("weight decay λ" + (" (normalized)" if result.config.get("normalized_wd") else ""))
        ax.set_ylabel("learning rate")
        ax.set_title(f"{LABELS.get(name, name)}: {title}")
        handles = []
        acc = result["val_acc"][o]
        if np.sum(np.isfinite(acc)) and min(acc.shape) > 1 and np.nanmax(acc) >= threshold:
            xs, ys = cell_outline(np.nan_to_num(acc, nan=0.0) >= threshold, x_edges, y_edges)
            ax.plot(xs, ys, color="white", lw=1.5, clip_on=False)
            ax.plot(xs, ys, color="black", lw=0.6, ls="--", clip_on=False)
            handles.append(Line2D([], [], color="black", ls="--", lw=0.8,
                                  label=f"validation accuracy ≥ {threshold:.0%} inside"))
        finite = np.where(np.isfinite(acc), acc, -1)
        i, j = np.unravel_index(int(np.argmax(finite)), acc.shape)
        handles += ax.plot(wds[j], lrs[i], marker="*", ms=13, color=plots.PALETTE[4], mec="black", ls="none",
                           clip_on=False, zorder=5, label=f"best validation accuracy {finite[i, j]:.3f}")
        div = np.argwhere(result["diverged"][o])
        if len(div):
            handles += ax.plot(wds[div[:, 1]], lrs[div[:, 0]], "x", color="black", ms=4, label="diverged")
        ax.set_xlim(x_edges[0], x_edges[-1])
        ax.set_ylim(y_edges[0], y_edges[-1])
        plots.cell_grid_ticks(ax)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, fontsize=7)
        ax.grid(False)
    fig.colorbar(mesh, ax=list(axes), label=colorbar_label, shrink=0.9)


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    """Every figure of the result: :func:`plot_heatmaps`, then what the result carries beyond them."""
    paths = plot_heatmaps(result, out_dir, formats)
    if "lc_steps" in result.arrays:              # sweeps of dyntools ≥ learning curves
        paths += plot_train_accuracy(result, out_dir, formats)
        paths += plot_learning_curves(result, out_dir, formats)
    if "w_small" in result.arrays and np.isfinite(result["w_small"]).any():
        paths += plot_weight_sparsity(result, out_dir, formats)
    return paths


def plot_heatmaps(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    """Validation accuracy, validation loss and final training loss over (lr, wd)."""
    from matplotlib.colors import LogNorm
    names = result.config["optimizers"]
    paths = plot_val_accuracy(result, out_dir, formats)
    loss = result["val_loss"]
    finite = loss[np.isfinite(loss) & (loss > 0)]
    norm = LogNorm(vmin=max(finite.min(), 1e-4), vmax=finite.max()) if finite.size else None
    fig, axes = plots.figure(ncols=len(names), nrows=1, width=4.3, height=4.2)
    _panel_row(fig, axes[0], result, "val_loss", "validation loss", norm, "magma_r",
               "validation cross-entropy")
    paths += plots.save(fig, out_dir, "adamw_grid_val_loss", formats)
    fig, axes = plots.figure(ncols=len(names), nrows=1, width=4.3, height=4.2)
    tl = result["train_loss"]
    finite = tl[np.isfinite(tl) & (tl > 0)]
    norm = LogNorm(vmin=max(finite.min(), 1e-4), vmax=finite.max()) if finite.size else None
    _panel_row(fig, axes[0], result, "train_loss", "final training loss", norm, "magma_r",
               "training cross-entropy")
    return paths + plots.save(fig, out_dir, "adamw_grid_train_loss", formats)


def plot_val_accuracy(result, out_dir: Path, formats=("png", "pdf"), name="adamw_grid_val_accuracy"):
    """Heatmaps of the final validation accuracy, the threshold's contour and the best cell."""
    from matplotlib.colors import Normalize
    fig, axes = plots.figure(ncols=len(result.config["optimizers"]), nrows=1, width=4.3, height=4.2)
    chance = 1.0 / result.config.get("classes", 2)
    _panel_row(fig, axes[0], result, "val_acc", "validation accuracy", Normalize(chance, 1.0), "viridis",
               f"validation accuracy (contour: {result.config['threshold']:.0%})")
    return plots.save(fig, out_dir, name, formats)


def plot_train_accuracy(result, out_dir: Path, formats=("png", "pdf"), name="adamw_grid_train_accuracy"):
    """Heatmaps of the final training accuracy (contour and star: validation accuracy, as elsewhere)."""
    from matplotlib.colors import Normalize
    fig, axes = plots.figure(ncols=len(result.config["optimizers"]), nrows=1, width=4.3, height=4.2)
    chance = 1.0 / result.config.get("classes", 2)
    _panel_row(fig, axes[0], result, "train_acc", "final training accuracy", Normalize(chance, 1.0),
               "viridis", "training accuracy")
    return plots.save(fig, out_dir, name, formats)


def plot_weight_sparsity(result, out_dir: Path, formats=("png", "pdf"), name="adamw_grid_weight_sparsity"):
    """Heatmaps of the fraction of weights (biases left out) with ``|w| <`` the sweep's tolerance."""
    from matplotlib.colors import Normalize
    fig, axes = plots.figure(ncols=len(result.config["optimizers"]), nrows=1, width=4.3, height=4.2)
    tol = result.config.get("sparsity_tol", 1e-3)
    _panel_row(fig, axes[0], result, "w_small", f"weights with |w| < {tol:g}", Normalize(0.0, 1.0),
               "cividis", f"fraction of weights with |w| < {tol:g}")
    return plots.save(fig, out_dir, name, formats)


def plot_learning_curves(result, out_dir: Path, formats=("png", "pdf"), name="adamw_grid_learning_curves"):
    """Training loss (log) and validation error against epochs: per optimizer (colour) the best cell
    (solid) and the chosen one (dashed), each labelled with its (lr, wd)."""
    names = result.config["optimizers"]
    epochs, cells = result["lc_epochs"], result["lc_cells"]
    fig, axes = plots.figure(ncols=2, nrows=1, width=4.6, height=3.6)
    ax_loss, ax_err = axes[0]
    for o, opt in enumerate(names):
        lrs = result["lrs"][o] if result["lrs"].ndim == 2 else result["lrs"]
        for r, (style, what) in enumerate((("-", "best"), ("--", "chosen"))):
            i, j = cells[o, r]
            label = f"{LABELS.get(opt, opt)}, {what}: lr {lrs[i]:.2g}, λ {result['wds'][j]:.2g}"
            color = plots.PALETTE[o % len(plots.PALETTE)]
            ax_loss.plot(epochs, result["lc_train_loss"][o, r], style, color=color, label=label)
            ax_err.plot(epochs, 1.0 - result["lc_val_acc"][o, r], style, color=color, label=label)
    ax_loss.set_yscale("log")
    ax_loss.set_ylabel("training cross-entropy (full training set)")
    ax_err.set_ylabel("validation error (1 − accuracy)")
    for ax in (ax_loss, ax_err):
        ax.set_xlabel("epoch")
    fig.legend(*ax_err.get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle("Learning curves: best cell (solid) and chosen cell (dashed) of each optimizer")
    return plots.save(fig, out_dir, name, formats)


def plot_variants(results, labels, out_dir: Path, formats=("png", "pdf"), name="adamw_grid_variants_val_accuracy"):
    """Validation-accuracy heatmaps of several sweeps on the same grid, one row per sweep (``labels``: what
    distinguishes them, e.g. the network's regularizer), one column per optimizer, one colour scale."""
    from matplotlib.colors import Normalize
    first = results[0]
    fig, axes = plots.figure(ncols=len(first.config["optimizers"]), nrows=len(results), width=4.3, height=4.2)
    chance = 1.0 / first.config.get("classes", 2)
    for row, (result, label) in enumerate(zip(results, labels)):
        _panel_row(fig, axes[row], result, "val_acc", f"val. accuracy\n{label}", Normalize(chance, 1.0), "viridis",
                   f"validation accuracy (contour: {result.config['threshold']:.0%})")
    return plots.save(fig, out_dir, name, formats)
