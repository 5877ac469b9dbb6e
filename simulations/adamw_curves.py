"""Learning curves of the (lr, weight decay) heatmap (Loshchilov & Hutter 2019, Fig. 3; seed 003: "significant
differences in learning curves").

The heatmap sweep keeps only each cell's final numbers; this entry re-runs the best cell of each optimizer and
one chosen cell (the grid's centre) with recordings along the run — the same streams, so the same trajectory
as the sweep's cell — and draws the training loss on the whole training set and the validation error against
epochs, next to the heatmap of the final *training* accuracy. It shares the grid (and so the cells, reused
from disk) of the ``adamw-heatmaps`` entry.
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Learning curves and training accuracy of the Adam vs AdamW heatmap (L&H Fig. 3, seed 003)"


def reproduce(ctx):
    import numpy as np

    from dyntools.heatmap_grid import KIND, report_grid, run_grid
    from dyntools.plots import adamw_heatmaps as HP
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    cfg, workers = report_grid(ctx.quick)
    result, seconds = ctx.timed_run(run_grid, KIND, cfg, workers=workers)
    figs = HP.plot_learning_curves(result, ctx.figure_dir, ("png",))
    figs += HP.plot_train_accuracy(result, ctx.figure_dir, ("png",))
    rows, numbers = [], {}
    cells = result["lc_cells"]
    epochs = result["lc_epochs"]
    for o, name in enumerate(cfg.optimizers):
        for r, what in enumerate(("best", "chosen")):
            i, j = cells[o, r]
            err = 1.0 - result["lc_val_acc"][o, r]
            loss = result["lc_train_loss"][o, r]
            half = err[: max(1, err.size // 2)]
            rows.append({"optimizer": name, "cell": what, "lr": result["lrs"][o][i], "λ": result["wds"][j],
                         "train loss, half-way": float(loss[half.size - 1]), "train loss, end": float(loss[-1]),
                         "val error, half-way": float(half[-1]), "val error, end": float(err[-1]),
                         "best val error (epoch)": f"{np.nanmin(err):.4f} ({epochs[int(np.nanargmin(err))]:g})",
                         "train acc": float(result["train_acc"][o, i, j])})
            numbers[f"{name}/{what}"] = {"val_error_end": float(err[-1]), "train_loss_end": float(loss[-1])}
    md = [f"The {cfg.n_lr} × {cfg.n_wd} grid of the heatmap entry (cells reused from disk when that entry ran; "
          f"{seconds:.1f} s here); curves at {len(epochs)} points over {cfg.epochs:g} epochs, losses on the whole "
          f"training set. Best = highest validation accuracy; chosen = the grid's centre.",
          "", markdown_table(rows), ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    ends = "; ".join(f"{k} {v['val_error_end']:.3f}" for k, v in numbers.items() if k.endswith("/best"))
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=f"a measurement, no claim tested: final validation error of the best cells (one run "
                            f"each): {ends}")


REPORT = Entry("adamw-learning-curves", TITLE, reproduce, order=31)
