"""Adam vs AdamW heatmaps on real data: scikit-learn's bundled 8×8 digits (seed 001's wish list 2).

The same sweep as the spiral heatmaps (``dyntools sweep adamw-grid --dataset digits``): 1797 images of 10
classes, pixels scaled to [0, 1], split 70/30 into training and validation sets at random (seeded), no
download. The problem set's question is asked of real data: does decoupled decay (AdamW) give a larger
region of good (lr, λ) settings than L2-coupled decay (Adam)?
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Adam vs AdamW (lr, weight decay) heatmaps on real data: scikit-learn's digits (seed 001)"


def reproduce(ctx):
    from dyntools import verdicts as V
    from dyntools.heatmap_grid import BORDER, GridConfig, claims, region_verdict, run_grid
    from dyntools.plots import adamw_heatmaps as HP
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    if ctx.quick:
        cfg, workers = GridConfig(dataset="digits", n_lr=3, n_wd=4, epochs=12, hidden=(32, 32),
                                  learning_curve_points=0), 1
    else:
        cfg, workers = GridConfig(dataset="digits", n_lr=6, n_wd=10, epochs=32, hidden=(64, 64)), None
    result, seconds = ctx.timed_run(run_grid, "adamw-grid-digits", cfg, workers=workers)
    figs = HP.plot_val_accuracy(result, ctx.figure_dir, ("png",), name="adamw_digits_val_accuracy")
    s = result.summary["optimizers"]
    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells ≥ {cfg.threshold:.0%}": v["cells_above_threshold"], "fraction": v["fraction_above_threshold"],
             "diverged": v["diverged_cells"]} for k, v in s.items()]
    more = s["adamw"]["cells_above_threshold"] - s["adam"]["cells_above_threshold"]
    counts, region = region_verdict(result, cfg.threshold, "adam", "adamw")
    md = [f"{cfg.n_lr} × {cfg.n_wd} (lr, λ) grid per optimizer, MLP 64→{'→'.join(map(str, cfg.hidden))}→10, "
          f"{cfg.n} training / {cfg.n_val} validation images, batch {cfg.batch_size}, {cfg.epochs:g} epochs "
          f"({cfg.steps} steps; {seconds:.1f} s).", "", markdown_table(rows), "",
          f"Measured: AdamW has {more:+d} cells above {cfg.threshold:.0%} validation accuracy compared with Adam "
          f"(best accuracy {s['adamw']['best_val_acc'] - s['adam']['best_val_acc']:+.3f}). Counting a cell within "
          f"±{BORDER:.0%} of the threshold as either (its accuracy moves by that much with the processor's last "
          f"bits): AdamW {counts['adamw'][0]}–{counts['adamw'][1]} cells, Adam {counts['adam'][0]}–"
          f"{counts['adam'][1]}, so the decoupled optimizer's good region is "
          f"{ {'at least as large': 'at least as large', 'smaller': 'SMALLER', 'undecided': 'undecided (borderline cells decide)'}[region]} "
          "on the digits.", ""]
    claim_rows = claims(result, cfg.threshold)
    md += ["Seed 001's claims on the digits, by declared rules:", "", V.claims_table(claim_rows), ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {k: {"best_val_acc": v["best_val_acc"], "cells_above_threshold": v["cells_above_threshold"],
                   "cells_above_threshold_range": list(counts[k])} for k, v in s.items()}
    numbers["adamw_region"] = region
    numbers["claims"] = {c: v.as_dict() for c, v in claim_rows}
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=f"decoupling {claim_rows[0][1].label()}, good range larger {claim_rows[1][1].text()}")


REPORT = Entry("adamw-digits", TITLE, reproduce, order=35)
