"""SGD and SGDW next to Adam and AdamW on one (learning rate, weight decay) grid (seeds 001, 003).

Seed 001: "AdamW ... allowing it to compete with SGD + momentum"; seed 003 (Loshchilov & Hutter): decoupling
makes weight decay "equally effective in SGD and Adam" — the good region of (lr, λ) is wider and less
tilted with decoupled decay in both families. The entry runs the spiral heatmap of the problem set with
the four optimizers (SGD and SGDW with momentum 0.9; each family on its own learning-rate range) and
measures both statements by the rules of :mod:`dyntools.verdicts`
(:func:`dyntools.heatmap_grid.claims` per family):

* *decoupled decay decouples and widens the good region in both families*: the decoupling rule on the good
  regions' shapes and disjoint Wilson intervals of the good fractions, SGD vs SGDW and Adam vs AdamW;
* *AdamW competes with SGD + momentum*: AdamW's best validation accuracy within 0.02 of the better of SGD's
  and SGDW's (:func:`verdicts`) — one run per cell, so measured but not shown.
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
    from dyntools import verdicts as V
    from dyntools.heatmap_grid import claims, report_grid, run_grid
    from dyntools.plots.adamw_heatmaps import plot_val_accuracy
    from dyntools.report import Section
    from dyntools.tables import markdown_table

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
    family = {"SGD": claims(result, cfg.threshold, (0, 1)), "Adam": claims(result, cfg.threshold, (2, 3))}
    claim_rows = [(f"{fam}: {c}", cv) for fam, cl in family.items() for c, cv in cl[:2]]
    competes = V.Verdict(V.NOT_SHOWN, "none: one run per cell", 4, sum(V.measured(b) for b in v["best"].values()),
                         f"best AdamW {v['best']['adamw']:.3f} vs best SGD/SGDW "
                         f"{max(v['best']['sgd'], v['best']['sgdw']):.3f} (within {COMPETES}: "
                         f"{V.word(v['competes'], 'yes', 'no')})",
                         "each best is one run of one cell; comparing them needs replicates.")
    claim_rows.append(("AdamW competes with SGD + momentum (001, 5)", competes))
    md = [f"{cfg.n_lr} learning rates × {cfg.n_wd} weight decays per optimizer (each family on its own lr "
          f"range), the problem set's spiral MLP, {cfg.epochs:g} epochs; SGD/SGDW momentum {cfg.momentum:g}.", "",
          markdown_table(rows), "", "Seeds 001 and 003's claims per family, by declared rules:", "",
          V.claims_table(claim_rows), ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    headline = ("; ".join(f"{fam}: decoupled {cl[0][1].label()}, good range larger {cl[1][1].label()}"
                          for fam, cl in family.items())
                + f"; AdamW competes with SGD+momentum {competes.label()} (one run per cell) "
                f"[{claim_rows[0][1].rule}; {claim_rows[1][1].rule}; n = {2 * cfg.n_lr * cfg.n_wd} cells per family]")
    return Section(TITLE, "\n".join(md), numbers={"best": v["best"], "cells": v["cells"],
                                                  "claims": {c: cv.as_dict() for c, cv in claim_rows}},
                   figures=[ctx.relative(f) for f in figs], headline=headline)


REPORT = Entry("sgd-vs-adam-heatmaps", TITLE, reproduce, order=39)
