"""The problem set's (learning rate × weight decay) heatmaps on the spirals (seed 001, Q 2.b–c).

An MLP with 3 hidden ReLU layers is trained on two interleaved spirals for every cell of a
log-spaced grid of learning rate × weight decay (default 16 × 24), once with L2-coupled decay
(Adam, SGD) and once with decoupled decay (AdamW, SGDW). Loshchilov & Hutter's claim (seed 001,
point 5; seed 003's tl;dr) is that decoupling makes the good region of the two hyperparameters
*decouple* — it stops being a thin diagonal band — and that the region of good settings is
larger. The problem set's questions are answered with numbers: the best validation accuracy of
each optimizer and the count/fraction of cells above a threshold (default 90 %).

The grid, its cells and its claims are library code (:mod:`dyntools.heatmap_grid`, shared with the other
heatmap experiments); this module is the ``dyntools sweep adamw-grid`` command and the report's entry. Every
cell also records the statistics of its final weights; after the sweep the best cell of each optimizer and a
chosen one are re-run with recordings. Every schedule of :mod:`dyntools.optim.schedules` is selectable
(:func:`dyntools.classifier_cell.make_schedule`), reduce-on-plateau on the training or validation loss.
"""

from __future__ import annotations

from dyntools import memory
from dyntools.engine.result import RunResult
from dyntools.heatmap_grid import (
    BORDER,
    KIND,
    MAX_CELLS,
    AdamWGridParams,
    GridConfig,
    cell_peak_arrays,
    claims,
    grid_config,
    region_verdict,
    report_grid,
    run_grid,
)
from dyntools.plots import adamw_heatmaps as adamw_heatmaps_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext

TITLE = "AdamW vs Adam+L2: (learning rate, weight decay) heatmaps on the spirals (seed 001)"


def reproduce(ctx):
    from dyntools import verdicts as V
    from dyntools.plots.adamw_heatmaps import plot_heatmaps
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    cfg, workers = report_grid(ctx.quick, learning_curve_points=0)      # curves: adamw-learning-curves
    out = ctx.out_dir / "runs" / KIND
    result = run_grid(cfg, out, seed=ctx.seed, workers=workers, progress=ctx.progress)
    figs = plot_heatmaps(result, ctx.figure_dir, ("png",))      # the other figures: adamw-learning-curves
    s = result.summary["optimizers"]
    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells ≥ {cfg.threshold:.0%}": v["cells_above_threshold"],
             "fraction": v["fraction_above_threshold"], "diverged": v["diverged_cells"]}
            for k, v in s.items()]
    counts, region = region_verdict(result, cfg.threshold, cfg.optimizers[0], cfg.optimizers[-1])
    rows_v = claims(result, cfg.threshold)
    reached = all(v["best_val_acc"] > 0.8 for v in s.values())
    full = GridConfig()
    md = [f"{'Quick (reduced) grid' if ctx.quick else 'Report grid'}: {cfg.n_lr} learning rates × {cfg.n_wd} "
          f"weight decays, coarser than the problem set's {full.n_lr} × {full.n_wd} (the default of `dyntools "
          f"sweep adamw-grid`, which draws these figures at that resolution) "
          f"(log-spaced, lr ∈ [{cfg.lrs().min():g}, {cfg.lrs().max():g}], wd ∈ [{cfg.wd_range[0]:g}, "
          f"{cfg.wd_range[1]:g}]) per optimizer; MLP {'×'.join(map(str, cfg.hidden))} ReLU, batch "
          f"{cfg.batch_size}, {cfg.steps} steps, {cfg.n} spiral points ({cfg.turns} turns, "
          f"noise {cfg.noise}).",
          "", markdown_table(rows), "",
          "Cells within ±" + f"{BORDER:.0%} of the threshold counted on either side: "
          + ", ".join(f"{k} {lo}–{hi}" for k, (lo, hi) in counts.items()) + ". The good region's shape: the "
          "slope of log best-λ against log lr over the lr rows that reach the threshold (0: the best decay does "
          "not move with lr; −1: a diagonal band, λ·lr fixed) and its distance from an axis-aligned rectangle "
          "(1 − the largest IoU with a rectangle of cells; 0: a rectangle).", "",
          V.claims_table(rows_v), ""]
    if not reached:
        md += ["An optimizer stays below 80 % validation accuracy on this grid: the claims are read on a failed "
               "training setup.", ""]
    md += [f"![{p.stem}]({ctx.relative(p)})" for p in figs]
    numbers = {k: {kk: v[kk] for kk in ("best_val_acc", "cells_above_threshold", "fraction_above_threshold")}
               for k, v in s.items()}
    numbers["region"] = {"verdict": region, "cells_above_threshold_range": {k: list(v) for k, v in counts.items()}}
    numbers["claims"] = {c: v.as_dict() for c, v in rows_v}
    headline = f"decoupling {rows_v[0][1].text()}; good range {rows_v[1][1].text()}"
    ok = reached          # a claim the grid contradicts is said in its row; only a failed training setup fails
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(p) for p in figs], ok=ok,
                   headline=headline)


# ----------------------------------------------------------------------------------- the command line

def check(p: AdamWGridParams) -> None:
    cfg = grid_config(p)
    cells = len(cfg.optimizers) * cfg.n_lr * cfg.n_wd * (cfg.replicates if cfg.paired else 1)
    if cells > MAX_CELLS:
        raise ValueError(f"Invalid --lr-grid/--wd-grid: {cells} cells (optimizers × lr N × wd N × replicates; "
                         f"at most {MAX_CELLS})")
    if cfg.steps > 10**9:
        raise ValueError(f"Invalid --epochs: {cfg.steps:.3g} steps per cell (epochs × n / batch-size; at most 1e9)")
    p.check_backend()
    if p.scheduler is None:                     # a remote cluster's memory is its own
        import os

        workers = p.dask_local or p.workers or os.cpu_count() or 1
        memory.require(*cell_peak_arrays(cfg, min(workers, cells)))


def run(p: AdamWGridParams, ctx: RunContext) -> RunResult:
    return run_grid(grid_config(p), ctx.out, seed=ctx.seed, **p.backend(), progress=ctx.progress)


def summary(p: AdamWGridParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings["sweep"]}


def table(p: AdamWGridParams, result) -> str:
    from dyntools import verdicts as V
    from dyntools.tables import key_values, text_table

    shapes = [V.region_shape(result["val_acc"][o], result["lrs"][o], result["wds"], p.threshold, border=BORDER)
              for o in range(len(result.config["optimizers"]))]
    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells >= {p.threshold:g}": v["cells_above_threshold"],
             "fraction": v["fraction_above_threshold"], "diverged": v["diverged_cells"],
             "best-wd slope": round(sh.slope, 3), "off-rectangle": round(sh.distance, 3)}
            for (k, v), sh in zip(result.summary["optimizers"].items(), shapes)]
    lines = [text_table(rows), ""]
    if len(shapes) >= 2:                      # seed 001's claims on the first and last optimizer of the sweep
        lines += [f"{c}: {v.text()}" for c, v in claims(result, p.threshold)[:2]] + [""]
    return "\n".join(lines + [key_values({"message": result.message, "steps per cell": result.config["steps"],
                                          "seconds": result.timings["sweep"]})])


RESULTS = (derive(KIND, AdamWGridParams, "batch_size classes curve_at dataset dtype epochs gamma hidden milestones "
                          "momentum n n_val noise normalized_wd optimizers paired plateau_factor plateau_metric "
                          "plateau_patience replicates restart_epochs restart_mult schedule sparsity_tol step_epochs "
                          "threshold turns", optional="dropout batch_norm data_dir",
                  summary={"backend": "str", "cells": "int", "compile_targets": "mapping", "computed": "int",
                           "damaged_cells": "list",
                           "diverged_cells": "int", "optimizers": "mapping", "reused": "int", "threshold": "number"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="adamw-grid", verb="sweep",
    help="spiral MLP heatmaps over (lr, weight decay): Adam+L2 vs AdamW, SGD+L2 vs SGDW (seed 001)",
    example=("dyntools sweep adamw-grid --optimizers adam,adamw --lr-grid 1e-4:1e-1:16 --wd-grid 1e-6:1:24 "
             "--dask-local 2 --out runs/adamw-grid"),
    params=AdamWGridParams, figures={KIND: adamw_heatmaps_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "adamw-grid": ["--optimizers", "adam", "--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-6:1e-5:1", "--epochs", "1",
                   "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size", "20", "--workers", "1"],
}

REPORT = Entry("adamw-heatmaps", TITLE, reproduce, order=30)
