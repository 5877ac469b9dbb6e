"""Harder and easier spirals: the Adam vs AdamW good region across noise × turns (seed 001, point 5.c).

The problem set asks its students to "adjust the difficulty of the data ... making it harder or easier, and
report on differences between heat maps generated for the two algorithms", and about "the frequency of good
hyperparameter settings above a certain threshold (say 90%)" and "the absolute best validation accuracy". The two difficulty knobs of :func:`dyntools.data.spirals` are the Gaussian ``noise`` on the points and
the ``turns`` of each arm (the arms' radial gap is ``1 / (2·turns)``). For every difficulty ``(noise, turns)``
of a grid (default 3 × 3 around the problem set's 0.05 / 1.5), and for every replicate ``r``, a small
(lr × λ) heatmap of the coupled optimizer (Adam: L2 inside the adaptive step) and of the decoupled one
(AdamW) is trained (:func:`dyntools.classifier_cell.train_cell`: the spiral MLP, shuffled epochs), and two
numbers are read per heatmap: the cells at or above the accuracy threshold (the "good region", default 90 %
validation accuracy) and the best validation accuracy.

Pairing (common random numbers). Replicate ``r`` runs every cell with root seed ``seed + r``: its data set,
initializations and minibatch orders. Within a replicate, the cell at grid position ``(i, j)`` uses stream
``i · n_wd + j`` at every difficulty and for both optimizers: Adam and AdamW at the same (lr, λ) start from
the same weights and see the same batches, and the data sets of two difficulties are the same draws of
radius, class and Gaussian noise, wound and scaled differently. Cells differ by what the comparison names.

Verdicts (:func:`verdicts`), each over the ensemble of replicates, never one run:

* *AdamW's good region is at least as large as Adam's* at a difficulty — the cells at or above the threshold
  pooled over the replicates, counted as a range robust to last-bit changes (a cell within
  :data:`BORDER` of the threshold counts on either side, :func:`dyntools.verdicts.count_above`), compared with
  :func:`dyntools.verdicts.compare_counts`: "at least as large", "smaller", "undecided", or "none" when
  neither optimizer can reach the threshold there;
* *the good region shrinks with difficulty* — for each optimizer, along each knob with the other held, every
  harder neighbour's pooled count is at most its easier neighbour's (the same comparison of ranges): "holds"
  when every step does, "does not hold" when some step grows for sure, "undecided" otherwise;
* *the best accuracies agree* — at every difficulty the median over the replicates of (AdamW's best validation
  accuracy − Adam's) is within :data:`TIE` of 0 (a heatmap's best is one run: the median, not one replicate).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from dyntools import memory, validation
from dyntools.classifier_cell import CELL_VALUES, train_cell, warm_up
from dyntools.engine.result import RunResult
from dyntools.plots import adamw_difficulty as adamw_difficulty_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

KIND = "adamw-difficulty"
TITLE = "Harder and easier spirals: the Adam vs AdamW good region across noise × turns (seed 001)"
OPTIMIZER_PAIRS = {"adam": ("adam", "adamw"), "sgd": ("sgd", "sgdw")}      # (coupled, decoupled)
DISPLAY = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "sgdw": "SGDW"}
#: A cell within this (absolute validation accuracy) of the threshold may count on either side of it.
BORDER = 0.01
#: Best accuracies within this of each other agree.
TIE = 0.02
#: Most cells of one sweep (difficulties × replicates × 2 optimizers × lr N × wd N).
MAX_CELLS = 100_000


@dataclass(frozen=True)
class DifficultyParams:
    """``dyntools sweep adamw-difficulty``: a small (lr, λ) heatmap pair per (noise, turns) and replicate."""

    noises: tuple = param((0.02, 0.05, 0.1), kind="floats", low=0.0, high=10.0, max_len=16, metavar="S1,S2,..",
                          help="noise levels (Gaussian std of the points), strictly increasing: easier to harder")
    turns: tuple = param((1.0, 1.5, 2.0), kind="floats", low=0.0, low_open=True, high=100.0, max_len=16,
                         metavar="T1,T2,..", help="turns of each arm, strictly increasing: easier to harder")
    family: str = param("adam", choices=tuple(OPTIMIZER_PAIRS),
                        help="adam: Adam (L2) vs AdamW; sgd: SGD (L2) vs SGDW (momentum 0.9)")
    lr_grid: tuple = param((1e-3, 1e-1, 4), kind="grid", metavar="LOW:HIGH:N", max_len=100,
                           help="log-spaced learning rates (the same for both optimizers)")
    wd_grid: tuple = param((1e-5, 1.0, 6), kind="grid", metavar="LOW:HIGH:N", max_len=100,
                           help="log-spaced weight decays λ")
    replicates: int = param(3, low=1, high=100, help="replicates: replicate r runs with root seed SEED + r "
                                                    "(data set, initializations, minibatch orders)")
    n: int = param(400, low=2, high=10**5, help="training points")
    n_val: int = param(400, low=1, high=10**5, help="validation points")
    hidden: tuple = param((16, 16, 16), kind="ints", low=1, high=1024, max_len=8, metavar="WIDTHS",
                          help="hidden widths of the ReLU MLP")
    batch_size: int = param(32, low=1, high=10**5, help="minibatch size")
    epochs: float = param(48.0, low=0.0, low_open=True, high=1e4, help="epochs per cell")
    threshold: float = param(0.9, low=0.0, high=1.0, help="'good cell' validation accuracy")
    workers: int | None = param(None, kind="int", low=1, high=1024, help="local worker processes (default: all cores)")


def increasing(name: str, values) -> tuple[float, ...]:
    """``values`` as floats, at least one, strictly increasing (``ValueError`` naming ``name`` otherwise)."""
    out = tuple(validation.finite(name, v) for v in values)
    if not out:
        raise ValueError(f"Invalid {name}: need at least one value")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"Invalid {name}: {list(out)} (must be strictly increasing: easier to harder)")
    return out


def config_of(p: DifficultyParams) -> dict:
    """The sweep's config (JSON-able): what :func:`~dyntools.classifier_cell.train_cell` reads (``noise`` and
    ``turns`` of the easiest difficulty, what a worker's warm-up trains on), plus the difficulty axes."""
    from dyntools.heatmap_grid import check_grid

    lr, wd = check_grid("lr-grid", p.lr_grid), check_grid("wd-grid", p.wd_grid)
    noises, turns = increasing("noises", p.noises), increasing("turns", p.turns)
    for t in turns:
        validation.positive("turns", t)
    for s in noises:
        validation.non_negative("noises", s)
    return {"noise_levels": list(noises), "turn_counts": list(turns), "optimizers": list(OPTIMIZER_PAIRS[p.family]),
            "lr_grid": list(lr), "wd_grid": list(wd), "replicates": p.replicates, "n": p.n, "n_val": p.n_val,
            "classes": 2, "hidden": list(p.hidden), "batch_size": p.batch_size, "epochs": p.epochs,
            "schedule": "constant", "momentum": 0.9, "normalized_wd": False, "threshold": p.threshold,
            "noise": noises[0], "turns": turns[0]}    # a cell's own noise and turns replace the last two


def axes_of(config: dict) -> tuple[np.ndarray, np.ndarray]:
    """The learning rates and weight decays of every heatmap (log-spaced)."""
    lo, hi, n = config["lr_grid"]
    wlo, whi, wn = config["wd_grid"]
    return np.geomspace(lo, hi, int(n)), np.geomspace(wlo, whi, int(wn))


def build_spec(config: dict, seed: int):
    """One sweep holding every cell: replicate × noise × turns × optimizer × lr × λ (in that order)."""
    from dyntools import sweep

    lrs, wds = axes_of(config)
    cells = [{"r": r, "a": a, "b": b, "o": o, "i": i, "j": j, "noise": float(s), "turns": float(t),
              "optimizer": name, "lr": float(lr), "wd": float(wd), "stream": i * wds.size + j}
             for r in range(config["replicates"]) for a, s in enumerate(config["noise_levels"])
             for b, t in enumerate(config["turn_counts"]) for o, name in enumerate(config["optimizers"])
             for i, lr in enumerate(lrs) for j, wd in enumerate(wds)]
    return sweep.SweepSpec(KIND, difficulty_cell, config, cells,
                           validation.seed(seed), finite=CELL_VALUES)


def difficulty_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """One cell: :func:`~dyntools.classifier_cell.train_cell` on the spirals of the cell's ``noise`` and
    ``turns``, with root seed ``seed + r`` (its replicate) and the cell's paired ``stream``."""
    return train_cell({**config, "noise": cell["noise"], "turns": cell["turns"]}, cell, seed + cell["r"], index)


difficulty_cell.warm_up = warm_up        # a worker's warm-up: two steps on the config's easiest spirals


def run_difficulty(p: DifficultyParams, out, *, seed: int = 0, progress: bool = False) -> RunResult:
    """Run (or resume) the sweep into ``out``; the arrays ``val_acc``, ``val_loss``, ``diverged`` are indexed
    ``[replicate, noise, turns, optimizer, lr, λ]``."""
    from dyntools import sweep

    config = config_of(p)
    spec = build_spec(config, seed)
    outcome = sweep.run_sweep(spec, out, workers=p.workers, progress=progress)
    lrs, wds = axes_of(config)
    shape = (p.replicates, len(config["noise_levels"]), len(config["turn_counts"]), 2, lrs.size, wds.size)
    arrays = {"val_acc": np.full(shape, np.nan), "val_loss": np.full(shape, np.nan),
              "diverged": np.zeros(shape, dtype=bool)}
    for cell, res in zip(spec.cells, outcome.cells):
        at = (cell["r"], cell["a"], cell["b"], cell["o"], cell["i"], cell["j"])
        arrays["val_acc"][at], arrays["val_loss"][at] = res["val_acc"], res["val_loss"]
        arrays["diverged"][at] = res["status"] == "diverged"
    arrays.update(noises=np.array(config["noise_levels"]), turns=np.array(config["turn_counts"]), lrs=lrs, wds=wds)
    summary = summarize(arrays, config["threshold"], config["optimizers"])
    n_div = int(arrays["diverged"].sum())
    summary.update(cells=len(spec.cells), computed=outcome.computed, reused=outcome.reused, diverged_cells=n_div)
    message = (f"{len(spec.cells)} cells ({outcome.computed} computed, {outcome.reused} reused) on "
               f"{outcome.backend}; {n_div} diverged; {summary['verdict']}")
    message = outcome.with_targets(message, summary)
    run_config = {k: v for k, v in config.items() if k not in ("noise", "turns", "noise_levels", "turn_counts")}
    run_config.update(noises=config["noise_levels"], turns=config["turn_counts"], family=p.family)
    return RunResult(KIND, run_config, arrays, "completed", message, seed=spec.seed, summary=summary,
                     timings={"sweep": outcome.seconds})


# ----------------------------------------------------------------------------------- the numbers and verdicts

def counts(val_acc: np.ndarray, threshold: float) -> np.ndarray:
    """``[noise, turns, optimizer, (sure, possible)]``: cells at or above ``threshold`` pooled over the
    replicates (axis 0 of ``val_acc``), as :func:`dyntools.verdicts.count_above` ranges with margin
    :data:`BORDER`. NaN (diverged) cells never count."""
    from dyntools import verdicts as V

    R, A, B, O = val_acc.shape[:4]
    out = np.zeros((A, B, O, 2), dtype=np.int64)
    for a in range(A):
        for b in range(B):
            for o in range(O):
                out[a, b, o] = V.count_above(val_acc[:, a, b, o], threshold, BORDER)
    return out


def best_accuracy(val_acc: np.ndarray) -> np.ndarray:
    """``[replicate, noise, turns, optimizer]``: each heatmap's best validation accuracy (NaN when every
    cell diverged)."""
    flat = val_acc.reshape(*val_acc.shape[:4], -1)
    with np.errstate(all="ignore"):
        finite = np.isfinite(flat).any(axis=-1)
        return np.where(finite, np.nanmax(np.where(np.isfinite(flat), flat, -np.inf), axis=-1), np.nan)


def region_verdict(coupled: tuple[int, int], decoupled: tuple[int, int]) -> str:
    """``"none"`` when neither optimizer can have a good cell, else
    :func:`dyntools.verdicts.compare_counts` of the decoupled range against the coupled one."""
    from dyntools import verdicts as V

    if coupled[1] == 0 and decoupled[1] == 0:
        return "none"
    return V.compare_counts(tuple(decoupled), tuple(coupled))


def growth_steps(c: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """Every step one notch harder along either knob of the count ranges ``c[noise, turns, (sure, possible)]``
    of one optimizer: ``((a, b), (a', b'), word)`` with ``word`` the easier square's range against the harder
    one's (:func:`dyntools.verdicts.compare_counts`: "at least as large" = it did not grow)."""
    from dyntools import verdicts as V

    A, B = c.shape[:2]
    return [((a, b), (a + da, b + db), V.compare_counts(tuple(c[a, b]), tuple(c[a + da, b + db])))
            for a in range(A) for b in range(B) for da, db in ((1, 0), (0, 1)) if a + da < A and b + db < B]


def shrink_verdict(c: np.ndarray) -> str:
    """Whether the good region of one optimizer never grows with difficulty (:func:`growth_steps`): "holds"
    when at every step the easier square's sure count reaches the harder one's possible count, "does not
    hold" when at some step the harder square has more good cells for sure, "undecided" otherwise."""
    words = [w for _, _, w in growth_steps(c)]
    if all(w == "at least as large" for w in words):
        return "holds"
    return "does not hold" if "smaller" in words else "undecided"


def verdicts(val_acc: np.ndarray, threshold: float) -> dict:
    """The three statements of the module docstring from ``val_acc[replicate, noise, turns, optimizer, lr, λ]``
    (optimizer 0 coupled, 1 decoupled). The best accuracies are compared through the median over the
    replicates of the per-replicate difference (one heatmap's best is one run)."""
    c = counts(val_acc, threshold)
    best = best_accuracy(val_acc)
    A, B = c.shape[:2]
    region = [[region_verdict(c[a, b, 0], c[a, b, 1]) for b in range(B)] for a in range(A)]
    with np.errstate(all="ignore"):
        diff = np.median(best[..., 1] - best[..., 0], axis=0)         # [noise, turns]; NaN if a heatmap died
    agree = bool(np.all(np.abs(diff) <= TIE)) if np.isfinite(diff).all() else None
    tally = {w: sum(row.count(w) for row in region) for w in ("at least as large", "smaller", "undecided", "none")}
    return {"counts": c, "best": best, "region": region, "region_tally": tally,
            "shrinks": [shrink_verdict(c[:, :, o]) for o in range(c.shape[2])],
            "grows": [[(e, h) for e, h, w in growth_steps(c[:, :, o]) if w == "smaller"] for o in range(c.shape[2])],
            "best_agree": agree, "best_diff": diff,
            "best_diff_range": ([float(np.nanmin(diff)), float(np.nanmax(diff))] if np.isfinite(diff).any()
                                else [math.nan, math.nan])}


def _range_text(r) -> str:
    return f"{r[0]}" if r[0] == r[1] else f"{r[0]}–{r[1]}"


def growth_text(v: dict, o: int, noises, turns) -> str:
    """The steps at which optimizer ``o``'s good region grew for sure, said plainly ('' when none)."""
    parts = []
    for (a, b), (a2, b2) in v["grows"][o]:
        knob = (f"noise {noises[a]:g} → {noises[a2]:g} at {turns[b]:g} turns" if a2 != a else
                f"turns {turns[b]:g} → {turns[b2]:g} at noise {noises[a]:g}")
        parts.append(f"{knob}: {_range_text(v['counts'][a, b, o])} → {_range_text(v['counts'][a2, b2, o])} cells")
    return "; ".join(parts)


def verdict_sentence(v: dict, names, noises, turns) -> str:
    from dyntools.verdicts import word

    names = [DISPLAY[n] for n in names]
    t = v["region_tally"]
    lo, hi = v["best_diff_range"]
    shrinks = []
    for o, name in enumerate(names):
        grew = growth_text(v, o, noises, turns)
        shrinks.append(f"{name} {v['shrinks'][o]}" + (f" (grows: {grew})" if grew else ""))
    return (f"{names[1]}'s good region at least as large as {names[0]}'s at {t['at least as large']} of "
            f"{sum(t.values())} difficulties (smaller {t['smaller']}, undecided {t['undecided']}, neither reaches "
            f"the threshold {t['none']}); the good region shrinks with difficulty: {', '.join(shrinks)}; best "
            f"accuracies within {TIE} at every difficulty (median over replicates of {names[1]} − {names[0]}, "
            f"from {lo:+.3f} to {hi:+.3f}): {word(v['best_agree'], 'yes', 'no')}")


def summarize(arrays: dict, threshold: float, names) -> dict:
    """Per difficulty and optimizer the pooled count range, per-replicate counts and best accuracies; the
    verdicts (JSON-able)."""
    from dyntools.verdicts import word

    v = verdicts(arrays["val_acc"], threshold)
    acc = arrays["val_acc"]
    per_heatmap = acc[0, 0, 0, 0].size
    rows = []
    for a, s in enumerate(arrays["noises"]):
        for b, t in enumerate(arrays["turns"]):
            row = {"noise": float(s), "turns": float(t), "region": v["region"][a][b]}
            for o, name in enumerate(names):
                good = np.nan_to_num(acc[:, a, b, o], nan=-1.0) >= threshold
                row[name] = {"cells_range": [int(x) for x in v["counts"][a, b, o]],
                             "cells_per_replicate": [int(g.sum()) for g in good],
                             "fraction": float(good.mean()),
                             "best_val_acc": [float(x) for x in v["best"][:, a, b, o]]}
            rows.append(row)
    return {"threshold": threshold, "optimizers": list(names), "cells_per_heatmap": int(per_heatmap),
            "difficulties": rows, "region_tally": v["region_tally"], "shrinks": dict(zip(names, v["shrinks"])),
            "best_agree": word(v["best_agree"], "yes", "no"), "best_diff_range": v["best_diff_range"],
            "verdict": verdict_sentence(v, names, arrays["noises"], arrays["turns"])}


def rows_of(result) -> list[dict]:
    """One table row per difficulty: per optimizer the pooled range and fraction of good cells, and the
    median best accuracy over the replicates."""
    s = result.summary
    names = s["optimizers"]
    out = []
    for row in s["difficulties"]:
        r = {"noise": row["noise"], "turns": row["turns"]}
        for name in names:
            r[f"{DISPLAY[name]} cells ≥ thr."] = _range_text(row[name]["cells_range"])
            r[f"{DISPLAY[name]} fraction"] = round(row[name]["fraction"], 3)
            r[f"{DISPLAY[name]} best (median)"] = float(np.nanmedian(row[name]["best_val_acc"]))
        r[f"{DISPLAY[names[1]]}'s region vs {DISPLAY[names[0]]}'s"] = row["region"]
        out.append(r)
    return out


def claim_verdicts(result) -> list[dict]:
    """Per difficulty, seed 001's two claims by declared rules (:mod:`dyntools.verdicts`) on the heatmaps
    averaged over the replicates (cell by cell; a cell that diverged in any replicate is NaN):

    * decoupling — :func:`dyntools.verdicts.decoupling` of the two good regions' shapes, kept only when every
      replicate's own heatmap gives the same word (else *not shown*: the replicates disagree);
    * a larger good range — :func:`dyntools.verdicts.grid_fraction_larger` of the pooled good cells counted as
      last-bit-robust ranges (sure, possible).
    """
    import dataclasses

    from dyntools import verdicts as V

    acc, lrs, wds = result["val_acc"], result["lrs"], result["wds"]
    threshold = result.summary["threshold"]
    mean = acc.mean(axis=0)                                  # [noise, turns, optimizer, lr, λ]
    c = counts(acc, threshold)
    pooled = acc[0, 0, 0, 0].size * acc.shape[0]
    out = []
    for a, noise in enumerate(result["noises"]):
        for b, turns in enumerate(result["turns"]):
            shapes = [V.region_shape(mean[a, b, o], lrs, wds, threshold, border=BORDER) for o in (0, 1)]
            dec = V.decoupling(*shapes)
            # the mean heatmap's verdict stands only when every replicate's own heatmap gives the same word
            each = [V.decoupling(*(V.region_shape(acc[r, a, b, o], lrs, wds, threshold, border=BORDER)
                                   for o in (0, 1))).word for r in range(acc.shape[0])]
            if dec.word != V.NOT_SHOWN and each.count(dec.word) < len(each):
                dec = dataclasses.replace(dec, word=V.NOT_SHOWN, why=(
                    f"the replicates disagree: {each.count(dec.word)} of {len(each)} give '{dec.word}' on their own "
                    "heatmap."))
            out.append({"noise": float(noise), "turns": float(turns), "decoupling": dec,
                        "larger": V.grid_fraction_larger((int(c[a, b, 1, 0]), int(c[a, b, 1, 1])),
                                                         (int(c[a, b, 0, 0]), int(c[a, b, 0, 1])), pooled,
                                                         alive=int(np.isfinite(acc[:, a, b]).sum()))})
    return out


def tally_text(verdicts_) -> str:
    """``shown at k of n, not shown at m, contradicted at j`` of a list of :class:`dyntools.verdicts.Verdict`."""
    from dyntools import verdicts as V

    words = [v.word for v in verdicts_]
    return (f"shown at {words.count(V.SHOWN)} of {len(words)}, not shown at {words.count(V.NOT_SHOWN)}, "
            f"contradicted at {words.count(V.CONTRADICTED)}")


# ----------------------------------------------------------------------------------- the command line

def check(p: DifficultyParams) -> None:
    from dyntools import sweep

    config = config_of(p)
    lrs, wds = axes_of(config)
    cells = p.replicates * len(config["noise_levels"]) * len(config["turn_counts"]) * 2 * lrs.size * wds.size
    if cells > MAX_CELLS:
        raise ValueError(f"Invalid --lr-grid/--wd-grid: {cells} cells (replicates × noises × turns × 2 × lr N × "
                         f"wd N; at most {MAX_CELLS})")
    if math.ceil(p.epochs * p.n / p.batch_size) > 10**7:
        raise ValueError(f"Invalid --epochs: {p.epochs * p.n / p.batch_size:.3g} steps per cell (at most 1e7)")
    sweep.check_backend(p.workers, None, None)
    memory.require(*cell_peak(p, min(p.workers or os.cpu_count() or 1, cells)))


def cell_peak(p: DifficultyParams, workers: int) -> tuple[dict[str, int], str]:
    """The arrays ``workers`` cells (a 2-D spiral, two classes) hold at once at their peak: those of an
    ``adamw-grid`` cell of the same network, data and steps
    (:func:`dyntools.heatmap_grid.cell_peak_arrays`)."""
    from types import SimpleNamespace

    from dyntools.heatmap_grid import cell_peak_arrays

    cell = SimpleNamespace(dataset="spirals", hidden=tuple(p.hidden), classes=2, batch_size=p.batch_size,
                           steps=math.ceil(p.epochs * p.n / p.batch_size), n=p.n, n_val=p.n_val)
    return cell_peak_arrays(cell, workers)


def run(p: DifficultyParams, ctx: RunContext) -> RunResult:
    from dyntools import sweep

    result = run_difficulty(p, ctx.out, seed=ctx.seed, progress=ctx.progress)
    sweep.finalize(result, ctx.out)
    return result


def summary(p: DifficultyParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings["sweep"]}


def table(p: DifficultyParams, result) -> str:
    from dyntools.tables import key_values, text_table

    rows = [{k.replace("≥", ">="): v for k, v in r.items()} for r in rows_of(result)]
    return "\n".join([text_table(rows), "", key_values({"verdict": result.summary["verdict"],
                                                         "seconds": result.timings["sweep"]})])


RESULTS = (derive(KIND, DifficultyParams, "noises turns family lr_grid wd_grid replicates n n_val hidden batch_size "
                  "epochs threshold",
                  summary={"best_agree": "str", "best_diff_range": "list", "cells": "int",
                           "cells_per_heatmap": "int", "compile_targets": "mapping", "computed": "int",
                           "difficulties": "list", "diverged_cells": "int", "optimizers": "list",
                           "region_tally": "mapping", "reused": "int", "shrinks": "mapping", "threshold": "number",
                           "verdict": "str"}),)

EXPERIMENT = Experiment.declare(
    globals(), name=KIND, verb="sweep",
    help="Adam vs AdamW good regions on harder and easier spirals: (lr, weight decay) heatmaps across noise × "
         "turns (seed 001)",
    example="dyntools sweep adamw-difficulty --noises 0.02,0.05,0.1 --turns 1,1.5,2 --replicates 3 "
            "--out runs/difficulty",
    params=DifficultyParams, figures={KIND: adamw_difficulty_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--noises", "0.05", "--turns", "1,1.5", "--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-6:1e-5:1",
                      "--replicates", "1", "--epochs", "1", "--n", "40", "--n-val", "20", "--hidden", "4",
                      "--batch-size", "20", "--workers", "1"]}


# ----------------------------------------------------------------------------------- report entry

QUICK = {"lr_grid": (1e-3, 1e-1, 3), "wd_grid": (1e-5, 1.0, 4), "replicates": 2, "epochs": 24.0, "workers": 1}


def reproduce(ctx):
    from dyntools import plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    p = DifficultyParams(**QUICK) if ctx.quick else DifficultyParams()
    result, seconds = ctx.timed_run(run_difficulty, KIND, p)
    figs = plots.plot_result(result, ctx.figure_dir, ("png",), plotter=adamw_difficulty_figures.plot_result)
    s, c = result.summary, result.config
    coupled, decoupled = (DISPLAY[n] for n in s["optimizers"])
    lrs, wds = result["lrs"], result["wds"]
    steps = math.ceil(p.epochs * p.n / p.batch_size)
    tally = s["region_tally"]
    rows_v = claim_verdicts(result)
    ok = True                                     # the sweep ran; the claims' verdicts are reported, not gated
    md = [f"Per difficulty (noise × turns: {len(c['noises'])} × {len(c['turns'])}) and replicate, a {lrs.size} × "
          f"{wds.size} (lr, λ) heatmap of {coupled} (L2, coupled) and of {decoupled} (decoupled): lr ∈ "
          f"[{lrs[0]:g}, {lrs[-1]:g}], λ ∈ [{wds[0]:g}, {wds[-1]:g}], log-spaced; the spiral MLP "
          f"2→{'→'.join(map(str, c['hidden']))}→2 (ReLU, cross-entropy), {p.n} training and {p.n_val} validation "
          f"points, batch {p.batch_size}, {p.epochs:g} epochs ({steps} steps) per cell. Chosen smaller than the "
          f"problem set's heatmaps (16 × 24 cells of a 32-wide MLP, 2000 steps) so that all {s['cells']} cells fit "
          f"the report's time budget ({seconds:.1f} s here). {p.replicates} replicates (root seeds "
          f"{ctx.seed}…{ctx.seed + p.replicates - 1}: data, initializations, minibatch orders), paired across the "
          f"optimizers and the difficulties (the same stream at the same (lr, λ) cell). 'Good' = validation "
          f"accuracy ≥ {s['threshold']:.0%}; counts pooled over the replicates ({s['cells_per_heatmap'] * p.replicates} "
          f"cells per optimizer and difficulty), a cell within ±{BORDER:.0%} of the threshold counted either way, "
          "so a range is shown where such cells exist.", "", markdown_table(rows_of(result)), "",
          f"Measured: {s['verdict']}.", "",
          f"Seed 001's claims per difficulty, on the heatmaps averaged over the {p.replicates} replicates "
          "(the shape of the good region: the slope of log best-λ against log lr and its distance from an "
          "axis-aligned rectangle, see `dyntools.verdicts.region_shape`):", "",
          markdown_table([{"noise": r["noise"], "turns": r["turns"],
                           f"decoupled ({decoupled} vs {coupled})": r["decoupling"].label(),
                           "shapes": r["decoupling"].measurement,
                           "why not shown": r["decoupling"].why,
                           f"{decoupled}'s good range larger": r["larger"].label()} for r in rows_v]), "",
          f"Rules: {rows_v[0]['decoupling'].rule}; {rows_v[0]['larger'].rule}.", ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {"region_tally": tally, "shrinks": s["shrinks"], "best_agree": s["best_agree"],
               "best_diff_range": s["best_diff_range"],
               "cells_range": {f"{r['noise']:g}/{r['turns']:g}": {n: r[n]["cells_range"] for n in s["optimizers"]}
                               for r in s["difficulties"]}}
    numbers["claims"] = [{"noise": r["noise"], "turns": r["turns"], "decoupling": r["decoupling"].as_dict(),
                          "larger": r["larger"].as_dict()} for r in rows_v]
    first = rows_v[0]["decoupling"]
    headline = (f"{decoupled} decoupled from lr ({first.rule}; n = {first.n // 2} cells per optimizer, averaged over "
                f"{p.replicates} replicates): {tally_text([r['decoupling'] for r in rows_v])} difficulties; "
                f"good range larger (disjoint Wilson intervals): {tally_text([r['larger'] for r in rows_v])}")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs], ok=ok,
                   headline=headline)


REPORT = Entry(KIND, TITLE, reproduce, order=35)
