"""Dropout and batch normalization against the Adam vs AdamW good region on the spirals (seed 002).

The lecture notes (seed 002) list dropout and batch normalization next to L2 and weight decay as
regularizers. This entry asks what they do to the problem set's question: the spiral heatmap sweep
(``dyntools sweep adamw-grid``) is run three times on the same (learning rate, weight decay) grid and the
same streams — the plain MLP, the MLP with inverted dropout after every hidden ReLU (``--dropout``), and the
MLP with batch normalization before every hidden ReLU (``--batch-norm``; :mod:`dyntools.models.mlp_regularized`)
— and per network and optimizer it counts the *good cells* (validation accuracy ≥ 90 %, evaluated without
dropout and with batch norm's running statistics, as ``model.eval()`` would), cells within ±1 % of the
threshold counted either way (:func:`dyntools.heatmap_grid.region_verdict`).

Measured statements (:func:`verdicts`):

* per network, whether AdamW's good region is at least as large as Adam's (the problem set's claim, asked
  again with the regularizer on);
* per regularizer and optimizer, whether the good region is larger, smaller or the same (within the borderline
  cells) than without it.
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Dropout and batch norm: the Adam vs AdamW good region on the spirals (seed 002)"
#: the dropout probability of the entry
DROPOUT = 0.1
#: (name, label, GridConfig changes) of the three networks
VARIANTS = (("plain", "plain MLP", {}), ("dropout", f"dropout p = {DROPOUT:g}", {"dropout": DROPOUT}),
            ("batch-norm", "batch norm", {"batch_norm": True}))
OPTIMIZERS = ("adam", "adamw")


def effect(with_reg: tuple[int, int], without: tuple[int, int]) -> str:
    """A regularizer's effect on a good region from two count ranges (sure, possible): ``"larger"`` when its
    sure count exceeds the plain network's possible count, ``"smaller"`` when its possible count is below the
    plain sure count, else ``"same within the borderline cells"``."""
    if with_reg[0] > without[1]:
        return "larger"
    if with_reg[1] < without[0]:
        return "smaller"
    return "same within the borderline cells"


def verdicts(counts: dict) -> dict:
    """From ``counts[network][optimizer] = (sure, possible)``: ``decoupled[network]`` (AdamW's region against
    Adam's: :func:`dyntools.verdicts.compare_counts`) and ``effect[regularizer][optimizer]`` (:func:`effect`)."""
    from dyntools import verdicts as V

    decoupled = {net: V.compare_counts(c["adamw"], c["adam"]) for net, c in counts.items()}
    eff = {net: {o: effect(counts[net][o], counts["plain"][o]) for o in OPTIMIZERS}
           for net in counts if net != "plain"}
    return {"decoupled": decoupled, "effect": eff}


def reproduce(ctx):
    from dyntools import verdicts as V
    from dyntools.heatmap_grid import BORDER, claims, region_verdict, report_grid, run_networks
    from dyntools.plots import adamw_heatmaps as HP
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    grid = {"n_lr": 3, "n_wd": 4} if ctx.quick else {"n_lr": 4, "n_wd": 5}
    cfg, workers = report_grid(ctx.quick, optimizers=OPTIMIZERS, learning_curve_points=0, **grid)
    by_net, seconds = ctx.timed_run(run_networks, "regularized", cfg, {net: changes for net, _, changes in VARIANTS},
                                    workers=workers)
    results, counts, rows = [], {}, []
    for net, label, _ in VARIANTS:
        result = by_net[net]
        results.append(result)
        counts[net], _ = region_verdict(result, cfg.threshold, "adam", "adamw")
        for o in OPTIMIZERS:
            s = result.summary["optimizers"][o]
            rows.append({"network": label, "optimizer": o, "best val acc": s["best_val_acc"], "at lr": s["best_lr"],
                         "at wd": s["best_wd"], f"cells ≥ {cfg.threshold:.0%}": s["cells_above_threshold"],
                         f"±{BORDER:.0%}": f"{counts[net][o][0]}–{counts[net][o][1]}",
                         "diverged": s["diverged_cells"]})
    v = verdicts(counts)
    figs = HP.plot_variants(results, [label for _, label, _ in VARIANTS], ctx.figure_dir, ("png",),
                            name="regularized_heatmaps_val_accuracy")
    labels = {net: label for net, label, _ in VARIANTS}
    md = [f"{cfg.n_lr} learning rates × {cfg.n_wd} weight decays per optimizer (lr ∈ [{cfg.lrs().min():g}, "
          f"{cfg.lrs().max():g}], λ ∈ [{cfg.wd_range[0]:g}, {cfg.wd_range[1]:g}], log-spaced), the spiral MLP "
          f"{'×'.join(map(str, cfg.hidden))} ReLU, batch {cfg.batch_size}, {cfg.steps} steps, {cfg.n} points; the "
          f"same grid and streams for the three networks: plain, dropout p = {DROPOUT:g} after every hidden ReLU, "
          "batch norm before every hidden ReLU (PyTorch's momentum 0.1, ε = 1e-5). Accuracy is measured in "
          "evaluation mode (no dropout; batch norm with its running statistics). One sweep of "
          f"{3 * len(OPTIMIZERS) * cfg.n_lr * cfg.n_wd} cells, {seconds:.1f} s.", "",
          markdown_table(rows), "",
          f"Measured (cells within ±{BORDER:.0%} of the threshold counted either way):", ""]
    md += [f"- {labels[net]}: AdamW's good region is {verdict} than Adam's"
           .replace("at least as large than", "at least as large as").replace("undecided than Adam's",
                                                                              "undecided against Adam's")
           for net, verdict in v["decoupled"].items()]
    md += [f"- {labels[net]} vs the plain MLP: Adam's good region {e['adam']}, AdamW's {e['adamw']}."
           for net, e in v["effect"].items()]
    claim_rows = [(f"{labels[net]}: {c}", v) for net, r in zip(by_net, results) for c, v in claims(r, cfg.threshold)
                  if "best validation accuracy" not in c and "better validation accuracy" not in c]
    size = cfg.n_lr * cfg.n_wd
    needed = [v.n_needed for _, v in claim_rows if v.n_needed is not None]
    md += ["", "Seed 001's claims per network, by declared rules (`dyntools.verdicts`):", "",
           V.claims_table(claim_rows), "",
           f"**Caveats (computed).** Each cell is one training run (one seed per cell); on this {cfg.n_lr} × "
           f"{cfg.n_wd} grid one cell is {1 / size:.0%} of an optimizer's cells, so a region's size moves by "
           f"{1 / size:.0%} per cell between seeds"
           + (f"; the good-range comparisons would need ≈ {min(needed)}–{max(needed)} cells to separate the "
              "observed fractions" if needed else "")
           + (f"; {sum(v.word == V.NOT_SHOWN for _, v in claim_rows)} of {len(claim_rows)} claims are not shown "
              "at this size." if any(v.word == V.NOT_SHOWN for _, v in claim_rows) else ".")]
    md += [""] + [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {"cells_above_threshold_range": {net: {o: list(c[o]) for o in OPTIMIZERS} for net, c in counts.items()},
               **v}
    numbers["claims"] = {c: cv.as_dict() for c, cv in claim_rows}
    headline = ("seed 001's claims per network (" + "; ".join(
        f"{labels[net]}: decoupled {cl[0][1].label()}, good range larger {cl[1][1].label()}"
        for net, cl in ((net, claims(r, cfg.threshold)) for net, r in zip(by_net, results)))
        + f") [{claim_rows[0][1].rule}; {claim_rows[1][1].rule}; n = {2 * size} cells per network]")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=headline)


REPORT = Entry("regularized-heatmaps", TITLE, reproduce, order=39)
