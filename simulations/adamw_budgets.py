"""Normalized weight decay: the best λ against the training budget (Loshchilov & Hutter 2019, App. B.1).

Seed 003's tl;dr: "optimal weight decay depends on the total number of batch passes/weight updates".
Loshchilov & Hutter propose to set ``λ = λ_norm √(b / (B T))`` (batch size ``b``, ``B`` training points,
``T`` epochs) so that one ``λ_norm`` serves every budget. Here AdamW's (learning rate × weight decay)
heatmap on the spirals is swept at several budgets ``T`` (epochs), once over the raw λ and once over
``λ_norm``, and the best decay of each budget is read off both: the claim holds on the measured data
when the best raw λ moves with the budget while the best ``λ_norm`` stays put.

"Best" is the cell with the lowest validation loss (``--criterion val-acc``: the highest validation
accuracy, ties broken by the loss). Each (axis, budget) is one :func:`dyntools.heatmap_grid.run_grid`
sweep in its own directory under ``--out`` (so an interrupted run resumes), *paired*: replicate ``r`` of
every cell of every sweep starts from the same initialization and sees the same minibatch order, so cells
differ by their hyperparameters and budget only (with a stream per cell the initialization noise swamps
the effect of λ), and a cell's numbers are the mean over ``--replicates`` replicates.

Verdict: the best raw λ *moves* when it changes by at least two grid steps between budgets, the best
``λ_norm`` *stays put* when it changes by at most one; the claim holds when both do. The direction is
reported too (L&H: the best raw λ falls like 1/√T). An argmax over a flat profile flips with the last bit
(another processor picks another near-tie), so the verdict is taken over every *near-best* λ: those whose
criterion (the validation loss at the best learning rate, or the accuracy) is within :data:`NEAR_TIE`
(relative) of the best. The claim *holds* when it holds for every choice of near-best λ per budget, *does
not hold* when it fails for every choice, and is *undecided (near-ties)* otherwise; the moves are
reported as the range over those choices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.engine.result import RunResult
from dyntools.plots import adamw_budgets as adamw_budgets_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

KIND = "adamw-budgets"
TITLE = "Normalized weight decay: AdamW's best λ against the budget, raw λ vs λ_norm (seed 003)"
AXES = ("raw", "normalized")
CRITERIA = ("val-loss", "val-acc")


@dataclass(frozen=True)
class BudgetParams:
    """``dyntools sweep adamw-budgets``: AdamW heatmaps at several budgets over raw λ and over λ_norm."""

    budgets: tuple = param((8.0, 64.0, 512.0), kind="floats", low=0.0, low_open=True, metavar="E1,E2,..", max_len=100,
                           help="training budgets in epochs, strictly increasing (at least 3 for the claim)")
    optimizer: str = param("adamw", choices=("adamw", "sgdw", "adamw_l1"), help="the decoupled optimizer")
    lr_grid: tuple = param((3e-3, 1e-2, 2), kind="grid", metavar="LOW:HIGH:N", max_len=1000, help="log-spaced learning rates")
    wd_grid: tuple = param((1e-5, 1e-1, 13), kind="grid", metavar="LOW:HIGH:N", max_len=1000, help="log-spaced raw λ")
    wd_norm_grid: tuple = param((10 ** -3.5, 10 ** 0.5, 13), kind="grid", metavar="LOW:HIGH:N", max_len=1000,
                                help="log-spaced λ_norm, λ = λ_norm √(b/(B·T))")
    n: int = param(1000, low=2, high=10**6, help="training points")
    n_val: int = param(1000, low=1, high=10**6, help="validation points")
    hidden: tuple = param((32, 32, 32), kind="ints", low=1, high=4096, max_len=16, metavar="WIDTHS",
                          help="hidden widths")
    batch_size: int = param(64, low=1, high=10**6, help="minibatch size")
    schedule: str = param("constant", choices=("constant", "cosine", "sgdr"), help="learning-rate schedule")
    replicates: int = param(3, low=1, high=1000, help="paired replicates averaged in every cell (initializations and "
                                           "minibatch orders shared by all cells)")
    dtype: str = param("float64", choices=("float64", "float32"), help="precision of the training")
    criterion: str = param("val-loss", choices=CRITERIA,
                           help="best cell: lowest validation loss, or highest validation accuracy (ties broken "
                                "by the loss)")
    workers: int | None = param(None, kind="int", low=1, high=1024, help="local worker processes (default: all cores)")


def check_budgets(budgets) -> tuple[float, ...]:
    """Budgets in epochs: positive and strictly increasing."""
    out = tuple(validation.positive("budgets", b) for b in budgets)
    if not out:
        raise ValueError("Invalid budgets: need at least one")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"Invalid budgets: {list(out)} (must be strictly increasing)")
    return out


def grid_configs(p: BudgetParams) -> dict:
    """``{(axis, budget index): GridConfig}``: one heatmap sweep per axis and budget."""
    from dyntools.heatmap_grid import GridConfig, check_grid

    budgets = check_budgets(p.budgets)
    lr = check_grid("lr-grid", p.lr_grid)
    grids = {"raw": check_grid("wd-grid", p.wd_grid), "normalized": check_grid("wd-norm-grid", p.wd_norm_grid)}
    if grids["raw"][2] != grids["normalized"][2]:
        raise ValueError(f"Invalid --wd-norm-grid: {grids['normalized'][2]} points (the raw grid has "
                         f"{grids['raw'][2]}; use as many)")
    return {(axis, k): GridConfig(optimizers=(p.optimizer,), lr_range=lr[:2], n_lr=lr[2], wd_range=grids[axis][:2],
                                  n_wd=grids[axis][2], normalized_wd=axis == "normalized", n=p.n, n_val=p.n_val,
                                  hidden=p.hidden, batch_size=p.batch_size, epochs=e, schedule=p.schedule,
                                  learning_curve_points=0, paired=True, replicates=p.replicates, dtype=p.dtype)
            for axis in AXES for k, e in enumerate(budgets)}


def best_cell(acc: np.ndarray, loss: np.ndarray, criterion: str = "val-loss") -> tuple[int, int]:
    """The (lr, wd) index of the lowest validation loss, or of the highest validation accuracy with ties
    broken by the lower validation loss."""
    a = np.where(np.isfinite(acc), acc, -1.0)
    l_ = np.where(np.isfinite(loss), loss, np.inf)
    order = np.lexsort((l_.ravel(), -a.ravel())) if criterion == "val-acc" else np.argsort(l_.ravel(), kind="stable")
    return tuple(int(v) for v in np.unravel_index(int(order[0]), acc.shape))


#: Relative gap to the best criterion value within which a λ counts as a near-tie of the best.
NEAR_TIE = 0.01


def near_best_wd(acc: np.ndarray, loss: np.ndarray, criterion: str = "val-loss") -> np.ndarray:
    """Mask over the λ axis of the near-ties of the best: the criterion at the best learning rate per λ
    (lowest validation loss, or highest accuracy) within :data:`NEAR_TIE` of the best λ's."""
    from dyntools import verdicts as V

    with np.errstate(all="ignore"):
        if criterion == "val-acc":
            return V.near_best(np.nanmax(np.where(np.isfinite(acc), acc, np.nan), axis=0), rel_tol=NEAR_TIE,
                               lower_is_better=False) if np.isfinite(acc).any() else np.zeros(acc.shape[1], bool)
        if not np.isfinite(loss).any():
            return np.zeros(loss.shape[1], bool)
        return V.near_best(np.nanmin(np.where(np.isfinite(loss), loss, np.nan), axis=0), rel_tol=NEAR_TIE)


def run_budgets(p: BudgetParams, out, *, seed: int = 0, progress: bool = False) -> RunResult:
    from pathlib import Path

    from dyntools.heatmap_grid import run_grid

    configs = grid_configs(p)
    budgets = check_budgets(p.budgets)
    nb = len(budgets)
    results = {key: run_grid(cfg, Path(out) / f"{key[0]}-{budgets[key[1]]:g}", seed=seed, workers=p.workers,
                             progress=progress) for key, cfg in configs.items()}
    first = results[("raw", 0)]
    shape = (2, nb, *first["val_acc"][0].shape)
    arrays = {k: np.full(shape, np.nan) for k in ("val_acc", "val_loss", "train_loss")}
    arrays["wds"] = np.stack([results[(axis, 0)]["wds"] for axis in AXES])
    arrays["lrs"] = first["lrs"][0]
    arrays["budgets"] = np.array(budgets)
    arrays["best"] = np.zeros((2, nb, 2), dtype=np.int64)
    arrays["best_wd"] = np.zeros((2, nb))
    arrays["best_raw_lambda"] = np.zeros((2, nb))       # the λ the optimizer used at the best cell
    arrays["near_best"] = np.zeros((2, nb, first["val_acc"][0].shape[1]), dtype=bool)
    for (axis, k), res in results.items():
        a = AXES.index(axis)
        for key in ("val_acc", "val_loss", "train_loss"):
            arrays[key][a, k] = res[key][0]
        i, j = best_cell(res["val_acc"][0], res["val_loss"][0], p.criterion)
        arrays["best"][a, k] = (i, j)
        arrays["near_best"][a, k] = near_best_wd(res["val_acc"][0], res["val_loss"][0], p.criterion)
        arrays["best_wd"][a, k] = res["wds"][j]
        cfg = configs[(axis, k)]
        scale = np.sqrt(cfg.batch_size / (cfg.n * cfg.epochs)) if axis == "normalized" else 1.0
        arrays["best_raw_lambda"][a, k] = res["wds"][j] * scale
    summary = summarize(arrays)
    config = {"budgets": list(budgets), "optimizer": p.optimizer, "criterion": p.criterion, "n": p.n, "n_val": p.n_val,
              "hidden": list(p.hidden), "batch_size": p.batch_size, "schedule": p.schedule, "dtype": p.dtype,
              "lr_grid": list(p.lr_grid), "wd_grid": list(p.wd_grid), "wd_norm_grid": list(p.wd_norm_grid)}
    cells = sum(int(r.summary["cells"]) for r in results.values())
    computed = sum(int(r.summary["computed"]) for r in results.values())
    message = f"{len(results)} sweeps, {cells} cells ({computed} computed); {summary['verdict']}"
    return RunResult(KIND, config, arrays, "completed", message, seed=seed,
                     summary={**summary, "cells": cells, "computed": computed},
                     timings={"sweep": sum(r.timings["sweep"] for r in results.values())})


#: The claim's outcome in the report's three words.
THREE_WORDS = {"holds": "shown", "does not hold": "contradicted", "undecided": "not shown (near-ties decide)"}
CLAIM_TEXT = {"holds": "holds for every near-best choice", "does not hold": "does NOT hold for any near-best choice",
              "undecided": "is undecided: it holds for some near-best choices and not for others"}


def move_range(arrays: dict, axis: int) -> tuple[int, int]:
    """How far the best λ index moves across budgets on ``axis``, smallest and largest over every choice
    of a near-best λ per budget (the argmax alone when ``arrays`` has no ``near_best``)."""
    from dyntools import verdicts as V

    best = arrays["best"][axis, :, 1]
    near = arrays.get("near_best")
    sets = [({int(b)} | (set(np.flatnonzero(near[axis, k]).tolist()) if near is not None else set()))
            for k, b in enumerate(best)]
    return V.range_over_choices(sets)


def claim_verdict(raw: tuple[int, int], normalized: tuple[int, int]) -> str:
    """``"holds"`` when raw λ moves ≥ 2 steps and λ_norm ≤ 1 for every near-best choice (smallest raw move ≥ 2,
    largest λ_norm move ≤ 1); ``"does not hold"`` when no choice satisfies both (largest raw move < 2 or
    smallest λ_norm move > 1); ``"undecided"`` otherwise."""
    if raw[0] >= 2 and normalized[1] <= 1:
        return "holds"
    if raw[1] < 2 or normalized[0] > 1:
        return "does not hold"
    return "undecided"


def summarize(arrays: dict) -> dict:
    """Best λ per budget on both axes, how far each moves (in grid steps) and the verdict."""
    out = {"budgets": arrays["budgets"].tolist()}
    moves = {}
    for a, axis in enumerate(AXES):
        j = arrays["best"][a, :, 1]
        moves[axis] = int(j.max() - j.min())
        out[axis] = {"best_wd": arrays["best_wd"][a].tolist(), "best_lambda": arrays["best_raw_lambda"][a].tolist(),
                     "best_val_acc": [float(arrays["val_acc"][a, k][tuple(arrays["best"][a, k])])
                                      for k in range(len(arrays["budgets"]))],
                     "grid_steps_moved": moves[axis]}
    if "val_loss" in arrays:                     # how much λ matters: best-lr validation loss, max/min over λ
        profile = np.nanmin(arrays["val_loss"][0], axis=1)                     # [budget, wd]
        out["raw"]["loss_max_over_min"] = (np.nanmax(profile, axis=1) / np.nanmin(profile, axis=1)).tolist()
    raw_j = arrays["best"][0, :, 1]
    falling = bool(np.all(np.diff(raw_j) <= 0) and raw_j[-1] < raw_j[0])
    spans = {axis: move_range(arrays, a) for a, axis in enumerate(AXES)}
    for axis in AXES:
        out[axis]["grid_steps_moved_range"] = list(spans[axis])
    claim = claim_verdict(spans["raw"], spans["normalized"])
    out["claim"] = claim
    out["claim_holds"] = claim == "holds"
    out["raw_falls_with_budget"] = falling
    out["near_tie_tolerance"] = NEAR_TIE

    def span(axis):
        lo, hi = spans[axis]
        return f"{lo}" if lo == hi else f"{lo}–{hi}"

    out["verdict"] = (f"best raw λ moves {span('raw')} grid step(s) across budgets over the near-best λ (within "
                      f"{NEAR_TIE:.0%} of the best; the argmax: {moves['raw']}, "
                      f"{'falling' if falling else 'not monotonically falling'} with T), best λ_norm moves "
                      f"{span('normalized')} (argmax: {moves['normalized']}): the claim (raw moves ≥ 2 steps, "
                      f"λ_norm ≤ 1) {CLAIM_TEXT[claim]} on this data")
    return out


# ----------------------------------------------------------------------------------- the command line

def check(p: BudgetParams) -> None:
    grid_configs(p)
    from dyntools import sweep

    sweep.check_backend(p.workers, None, None)


def run(p: BudgetParams, ctx: RunContext) -> RunResult:
    from dyntools import sweep

    result = run_budgets(p, ctx.out, seed=ctx.seed, progress=ctx.progress)
    sweep.finalize(result, ctx.out)
    return result


def summary(p: BudgetParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary}


def rows(result) -> list[dict]:
    s = result.summary
    return [{"budget (epochs)": b, "best raw λ": s["raw"]["best_wd"][k], "val acc (raw)": s["raw"]["best_val_acc"][k],
             "best λ_norm": s["normalized"]["best_wd"][k], "= λ": s["normalized"]["best_lambda"][k],
             "val acc (norm)": s["normalized"]["best_val_acc"][k]} for k, b in enumerate(s["budgets"])]


def table(p: BudgetParams, result) -> str:
    from dyntools.tables import key_values, text_table

    return "\n".join([text_table(rows(result)), "", key_values({"verdict": result.summary["verdict"],
                                                                 "seconds": result.timings["sweep"]})])


RESULTS = (derive(KIND, BudgetParams, "batch_size budgets criterion hidden lr_grid n n_val optimizer schedule wd_grid "
                          "wd_norm_grid",
                  summary={"budgets": "list", "cells": "int", "claim": "str", "claim_holds": "flag", "computed": "int",
                           "near_tie_tolerance": "number", "normalized": "mapping", "raw": "mapping",
                           "raw_falls_with_budget": "flag", "verdict": "str"}),)

EXPERIMENT = Experiment.declare(
    globals(), name=KIND, verb="sweep",
    help="AdamW heatmaps at several budgets over raw λ and normalized λ_norm: does the best λ move? (seed 003)",
    example="dyntools sweep adamw-budgets --budgets 8,64,512 --out runs/budgets",
    params=BudgetParams, figures={KIND: adamw_budgets_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--budgets", "1,2", "--lr-grid", "1e-2:1e-2:1", "--wd-grid", "1e-4:1e-1:2", "--wd-norm-grid",
                      "1e-3:1:2", "--replicates", "1", "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size",
                      "20", "--workers", "1"]}


# ----------------------------------------------------------------------------------- report entry

QUICK = {"budgets": (4.0, 16.0, 64.0), "n": 400, "n_val": 400, "hidden": (16, 16, 16), "batch_size": 32,
         "lr_grid": (1e-2, 1e-2, 1), "wd_grid": (1e-4, 1.0, 5), "wd_norm_grid": (10 ** -2.5, 10 ** 1.5, 5),
         "workers": 1}


def reproduce(ctx):
    from dyntools import plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    p = BudgetParams(**QUICK) if ctx.quick else BudgetParams()
    result, seconds = ctx.timed_run(run_budgets, KIND, p)
    figs = plots.plot_result(result, ctx.figure_dir, ("png",), plotter=adamw_budgets_figures.plot_result)
    s = result.summary
    md = [f"{p.optimizer} on the spirals ({p.n} points, MLP {'×'.join(map(str, p.hidden))}, batch {p.batch_size}, "
          f"{p.schedule} schedule), budgets {', '.join(f'{b:g}' for b in p.budgets)} epochs; per budget a "
          f"{p.lr_grid[2]} × {p.wd_grid[2]} (lr, λ) grid over raw λ ∈ [{p.wd_grid[0]:g}, {p.wd_grid[1]:g}] and "
          f"one over λ_norm ∈ [{p.wd_norm_grid[0]:.3g}, {p.wd_norm_grid[1]:.3g}] with λ = λ_norm √(b/(B·T)); "
          f"every cell the mean of {p.replicates} replicate(s), each from one initialization and minibatch "
          f"order shared by all cells; best = "
          f"{'lowest validation loss' if p.criterion == 'val-loss' else 'highest validation accuracy'} "
          f"({seconds:.1f} s).",
          "", markdown_table(rows(result)), "", f"Measured: {s['verdict']}.", ""]
    if "loss_max_over_min" in s["raw"]:
        md[-1:] = ["", f"How much λ matters at all: over the raw grid the validation loss (at the best learning rate) "
                   f"varies by a factor {', '.join(f'{v:.2f}' for v in s['raw']['loss_max_over_min'])} at the "
                   f"budgets {', '.join(f'{b:g}' for b in p.budgets)} (right panel of the second figure).", ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {"raw_grid_steps_moved": s["raw"]["grid_steps_moved"],
               "normalized_grid_steps_moved": s["normalized"]["grid_steps_moved"],
               "raw_grid_steps_moved_range": s["raw"]["grid_steps_moved_range"],
               "normalized_grid_steps_moved_range": s["normalized"]["grid_steps_moved_range"],
               "claim": s["claim"], "claim_holds": s["claim_holds"]}
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=f"λ_norm decouples the best decay from the budget: {THREE_WORDS[s['claim']]} — raw λ moves "
                            f"{s['raw']['grid_steps_moved_range']}, λ_norm {s['normalized']['grid_steps_moved_range']} "
                            f"grid steps [rule: for every choice among near-best λ (within {NEAR_TIE:.0%}), raw λ "
                            f"moves ≥ 2 steps and λ_norm ≤ 1; n = {len(p.budgets)} budgets, {s.get('cells', '?')} "
                            "cells]")


REPORT = Entry("adamw-normalized-wd", TITLE, reproduce, order=32)
