"""SGD and SGDW next to Adam and AdamW on one (learning rate, weight decay) grid (seeds 001, 003).

Seed 001: "AdamW ... allowing it to compete with SGD + momentum"; seed 003 (Loshchilov & Hutter): decoupling
makes weight decay "equally effective in SGD and Adam" — the good region of (lr, λ) is wider and less
tilted with decoupled decay in both families. The entry runs the spiral heatmap of the problem set with
the four optimizers (SGD and SGDW with momentum 0.9; each family on its own learning-rate range) and
measures both statements with :func:`verdicts`:

* *AdamW competes with SGD + momentum*: AdamW's best validation accuracy is within 0.02 of the better of
  SGD's and SGDW's;
* *decoupled decay widens the good region in both families*: SGDW has at least as many cells at or above
  the accuracy threshold as SGD, and AdamW as Adam.
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "SGD and SGDW next to Adam and AdamW: four heatmaps on one grid (seeds 001, 003)"
OPTIMIZERS = ("sgd", "sgdw", "adam", "adamw")
COMPETES = 0.02


def verdicts(summary: dict) -> dict:
    """The two statements from the sweep's per-optimizer summary (``best_val_acc``, ``cells_above_threshold``):
    each ``True``/``False``, or ``None`` when a number it needs is not finite (every cell diverged)."""
    from dyntools.verdicts import measured

    best = {k: summary[k]["best_val_acc"] for k in OPTIMIZERS}
    cells = {k: summary[k]["cells_above_threshold"] for k in OPTIMIZERS}
    sgd_best = max((best[k] for k in ("sgd", "sgdw") if measured(best[k])), default=None)
    competes = (best["adamw"] >= sgd_best - COMPETES) if measured(best["adamw"], sgd_best) else None
    widens = (cells["sgdw"] >= cells["sgd"] and cells["adamw"] >= cells["adam"]) \
        if measured(*cells.values()) else None
    return {"competes": competes, "widens": widens, "best": best, "cells": cells}


def reproduce(ctx):
    from dyntools.simulations.adamw_heatmaps import report_grid, run_grid

    from dyntools.plots.adamw_heatmaps import plot_val_accuracy
    from dyntools.report import Section
    from dyntools.tables import markdown_table
    from dyntools.verdicts import word

    cfg, workers = report_grid(ctx.quick, optimizers=OPTIMIZERS, learning_curve_points=0,
                               **({"n_lr": 3, "n_wd": 4} if ctx.quick else {"n_lr": 5, "n_wd": 6}))
    result = run_grid(cfg, ctx.out_dir / "runs" / "sgd-vs-adam", seed=ctx.seed, workers=workers,
                      progress=ctx.progress)
    figs = plot_val_accuracy(result, ctx.figure_dir, ("png",), name="sgd_vs_adam_val_accuracy")
    s = result.summary["optimizers"]
    v = verdicts(s)
    rows = [{"optimizer": k, "lr range": f"{cfg.lr_range_of(k)[0]:g}–{cfg.lr_range_of(k)[1]:g}",
             "best val acc": s[k]["best_val_acc"], f"cells ≥ {cfg.threshold:.0%}": s[k]["cells_above_threshold"],
             "diverged": s[k]["diverged_cells"]} for k in OPTIMIZERS]
    md = [f"{cfg.n_lr} learning rates × {cfg.n_wd} weight decays per optimizer (each family on its own lr "
          f"range), the problem set's spiral MLP, {cfg.epochs:g} epochs; SGD/SGDW momentum {cfg.momentum:g}.", "",
          markdown_table(rows), "",
          f"- AdamW competes with SGD + momentum (best within {COMPETES}): "
          f"{word(v['competes'], 'holds', 'does NOT hold')}.",
          f"- Decoupled decay has at least as many good cells in both families (SGDW ≥ SGD, AdamW ≥ Adam): "
          f"{word(v['widens'], 'holds', 'does NOT hold')}.", ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    headline = (f"AdamW competes with SGD+momentum: {word(v['competes'], 'holds', 'does NOT hold')}; decoupled "
                f"decay widens the good region in both families: {word(v['widens'], 'holds', 'does NOT hold')}")
    return Section(TITLE, "\n".join(md), numbers={"best": v["best"], "cells": v["cells"]},
                   figures=[ctx.relative(f) for f in figs], headline=headline)


REPORT = Entry("sgd-vs-adam-heatmaps", TITLE, reproduce, order=39)
