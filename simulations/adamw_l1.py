"""L1 decoupled decay and sparse weights (seed 003's closing question; seed 000's AdamW-L1).

Seed 003 asks what replacing the decoupled L2 decay by an L1 decay would do: "L1-norm regularization
often results in sparse weight-vectors". AdamW-L1 (``dyntools.optim.adamw_l1``) decays by
``θ ← θ − η_t λ sign θ`` after Adam's step. Every cell of an ``adamw-grid`` sweep records the statistics
of its final weight matrices (biases left out): the fraction of weights with ``|w| < tol``, ``‖w‖₁`` and
``‖w‖₂``. The comparison is made *at equal accuracy*: among the cells of each optimizer whose validation
accuracy reaches a common level (the lower of the two best accuracies minus ``margin``), the sparsest
cell. The sign step never lands exactly on 0 (weights driven to zero oscillate at amplitude ≈ η λ), so
the tolerance matters and is stated with every number.
"""

from __future__ import annotations

import numpy as np

from dyntools.spec import Entry

TITLE = "L1 decoupled decay: are AdamW-L1's weights sparser than AdamW's at equal accuracy? (seeds 000, 003)"
MARGIN = 0.01
#: A difference in the share of small weights smaller than this (absolute) is no difference: one cell more
#: or less at the accuracy level, or another processor's last bits, moves the shares by a few percent.
SHARE_MARGIN = 0.03

VERDICT_TEXT = {"sparser": "gives sparser weights (sparsest and median cell, by more than {m:.0%})",
                "not sparser": "does NOT give sparser weights (AdamW's sparsest and median cell are sparser by more "
                               "than {m:.0%})",
                "no clear difference": "gives no clear difference (the sparsest and the median cell differ by less "
                                       "than {m:.0%} or disagree)",
                "not checkable": "cannot be compared (no cell of one optimizer reaches the accuracy level)"}


#: The outcome in the report's three words.
THREE_WORDS = {"sparser": "shown", "not sparser": "contradicted", "no clear difference": "not shown",
               "not checkable": "not shown"}


def l1_verdict(adamw: dict, adamw_l1: dict, margin: float = SHARE_MARGIN) -> str:
    """``"sparser"`` when AdamW-L1's largest and median shares of small weights (at equal accuracy) both exceed
    AdamW's by more than ``margin``; ``"not sparser"`` when both fall short by more than ``margin``; ``"not
    checkable"`` when a share is not a finite number (no cell at the level); ``"no clear difference"`` otherwise."""
    keys = ("max_small_fraction", "median_small_fraction")
    pairs = [(float(adamw_l1[k]), float(adamw[k])) for k in keys]
    if not all(np.isfinite(b) and np.isfinite(a) for b, a in pairs):
        return "not checkable"
    if all(b - a > margin for b, a in pairs):
        return "sparser"
    if all(a - b > margin for b, a in pairs):
        return "not sparser"
    return "no clear difference"


def sparsity_at_equal_accuracy(result, margin: float = MARGIN) -> dict:
    """Per optimizer of an ``adamw-grid`` result, among cells with validation accuracy ≥ level (the lowest
    best accuracy of the optimizers minus ``margin``): the number of such cells, the largest and the median
    fraction of small weights, and the sparsest cell's (lr, wd, accuracy, ‖w‖₁, ‖w‖₂)."""
    names = result.config["optimizers"]
    acc = np.where(np.isfinite(result["val_acc"]), result["val_acc"], -1.0)
    level = float(min(acc[o].max() for o in range(len(names))) - margin)
    out = {"level": level, "tol": result.config.get("sparsity_tol", 1e-3), "optimizers": {}}
    for o, name in enumerate(names):
        ok = (acc[o] >= level) & np.isfinite(result["w_small"][o])
        small = np.where(ok, result["w_small"][o], -1.0)
        i, j = np.unravel_index(int(np.argmax(small)), small.shape)
        lrs = result["lrs"][o] if result["lrs"].ndim == 2 else result["lrs"]
        out["optimizers"][name] = {
            "cells_at_level": int(ok.sum()), "max_small_fraction": float(small[i, j]) if ok.any() else float("nan"),
            "median_small_fraction": float(np.median(result["w_small"][o][ok])) if ok.any() else float("nan"),
            "lr": float(lrs[i]), "wd": float(result["wds"][j]), "val_acc": float(result["val_acc"][o, i, j]),
            "w_l1": float(result["w_l1"][o, i, j]), "w_l2": float(result["w_l2"][o, i, j])}
    return out


def reproduce(ctx):
    from dyntools.heatmap_grid import report_grid, run_grid
    from dyntools.plots import adamw_heatmaps as HP
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    changes = {} if ctx.quick else {"n_lr": 6, "n_wd": 10}
    cfg, workers = report_grid(ctx.quick, optimizers=("adamw", "adamw_l1"), learning_curve_points=0, **changes)
    result, seconds = ctx.timed_run(run_grid, "adamw-grid-l1", cfg, workers=workers)
    figs = HP.plot_weight_sparsity(result, ctx.figure_dir, ("png",), name="adamw_l1_weight_sparsity")
    figs += plot_sparsity_vs_accuracy(result, ctx.figure_dir)
    s = sparsity_at_equal_accuracy(result)
    rows = [{"optimizer": k, f"cells ≥ {s['level']:.3f}": v["cells_at_level"],
             f"max share of weights below {s['tol']:g}": v["max_small_fraction"],
             "median share": v["median_small_fraction"], "at lr": v["lr"], "at λ": v["wd"],
             "val acc": v["val_acc"], "‖w‖₁": v["w_l1"], "‖w‖₂": v["w_l2"]} for k, v in s["optimizers"].items()]
    a, b = s["optimizers"]["adamw"], s["optimizers"]["adamw_l1"]
    claim = l1_verdict(a, b)
    verdict = VERDICT_TEXT[claim].format(m=SHARE_MARGIN)
    md = [f"{cfg.n_lr} × {cfg.n_wd} (lr, λ) grid per optimizer (λ ∈ [{cfg.wd_range[0]:g}, {cfg.wd_range[1]:g}]), "
          f"MLP {'×'.join(map(str, cfg.hidden))} on {cfg.n} spiral points, {cfg.steps} steps ({seconds:.1f} s). "
          f"Equal accuracy: cells whose validation accuracy reaches {s['level']:.3f} (the lower best accuracy "
          f"minus {MARGIN}); a weight counts as zero when |w| < {s['tol']:g} (biases left out).",
          "", markdown_table(rows), "",
          f"Measured: at equal accuracy AdamW-L1's sparsest cell has {b['max_small_fraction']:.1%} of its weights "
          f"below {s['tol']:g} against AdamW's {a['max_small_fraction']:.1%} (median over those cells "
          f"{b['median_small_fraction']:.1%} vs {a['median_small_fraction']:.1%}): AdamW-L1 {verdict} on this data.",
          ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {k: {"max_small_fraction": v["max_small_fraction"], "cells_at_level": v["cells_at_level"]}
               for k, v in s["optimizers"].items()}
    numbers["l1_sparser"] = claim == "sparser"
    numbers["verdict"] = claim
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=f"AdamW-L1 gives sparser weights than AdamW at equal accuracy: {THREE_WORDS[claim]} — "
                            f"sparsest cell {b['max_small_fraction']:.1%} vs {a['max_small_fraction']:.1%}, median "
                            f"{b['median_small_fraction']:.1%} vs {a['median_small_fraction']:.1%} [rule: both the "
                            f"sparsest and the median cell differ by more than {SHARE_MARGIN:.0%}; n = "
                            f"{a['cells_at_level']} and {b['cells_at_level']} cells at the accuracy level, one run "
                            "each]")


def plot_sparsity_vs_accuracy(result, out_dir):
    """Every cell: fraction of small weights against validation accuracy, one colour per optimizer."""
    from dyntools import plots
    from dyntools.plots.adamw_heatmaps import LABELS

    fig, axes = plots.figure(ncols=1, nrows=1, width=4.8, height=3.4)
    ax = axes[0, 0]
    for o, name in enumerate(result.config["optimizers"]):
        ax.plot(result["val_acc"][o].ravel(), result["w_small"][o].ravel(), "o", ms=4, alpha=0.8,
                color=plots.PALETTE[o % len(plots.PALETTE)], label=LABELS.get(name, name))
    ax.set_xlabel("validation accuracy")
    ax.set_ylabel(f"fraction of weights with |w| < {result.config.get('sparsity_tol', 1e-3):g}")
    ax.set_title("Sparsity against accuracy, every (lr, λ) cell")
    ax.legend(framealpha=0.85)
    return plots.save(fig, out_dir, "adamw_l1_sparsity_vs_accuracy", ("png",))


REPORT = Entry("adamw-l1-sparsity", TITLE, reproduce, order=34)
