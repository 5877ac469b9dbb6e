"""``dyntools sweep grokking``: the grokking study as a grid of independent cells (issue 42 item 1) — the MLP or
the transformer, on local processes or Dask, resumable.

**Cells.** One cell is one (optimizer, weight decay λ, train fraction, seed index ``s``): the network of
:func:`dyntools.grokking_study.network`, trained full batch for ``steps`` steps by

* ``adamw`` — decoupled decay λ on the decay mask (no decay on the transformer's norms);
* ``adam+l2`` — the same λ added to the gradient before Adam's preconditioner;
* ``none`` — Adam without decay (one cell per train fraction and seed: λ does not enter it),

from seed index ``s``'s split of the table and its initialization — the pieces ``simulate grokking`` uses
(:func:`~dyntools.grokking_study.datasets`, :func:`~dyntools.grokking_study.train_runs`,
:func:`~dyntools.grokking_study.measure`), so a cell equals path ``s`` of ``dyntools simulate grokking
--seed R --weight-decay λ --train-fraction f`` for that optimizer bit for bit (full batch: nothing is sampled,
and each path's arithmetic does not depend on the others). Each cell records train/test accuracy and loss and
‖θ‖₂ at the log grid of steps and whether its test accuracy reached ``threshold`` within the budget.

**Result** (kind ``grokking-sweep``): per optimizer the (λ × train fraction) phase diagram — the proportion
``k/n`` of seeds whose test accuracy reaches the threshold — drawn by ``dyntools plot DIR`` with ``k/n`` in each
cell, and in the table per cell the decoupled-decay rule of ``simulate grokking``
(:func:`~dyntools.grokking_study.decay_verdict`: ``adamw`` k/n against ``none`` k'/n at the same train
fraction, disjoint Wilson 95 % intervals) when both optimizers are in the sweep.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from dyntools import grokking_study as G
from dyntools import validation
from dyntools.plots import grokking as grokking_figures
from dyntools.result_schema import derive
from dyntools.spec import Experiment, RunContext, param
from dyntools.sweep_backend import SweepBackendParams

KIND = "grokking-sweep"
#: the sweep's optimizer names → their place in :func:`dyntools.grokking_study.optimizers` (and RUNS)
OPTIMIZERS = {"adamw": 0, "adam+l2": 1, "none": 2}
GRID = "grid"
CURVES = G.METRICS
#: values every finished cell holds (finite unless it diverged)
FINITE = ("final_test_acc", "test_acc")


@dataclass(frozen=True)
class GrokkingSweepParams(SweepBackendParams, G.GrokkingTask):
    """``dyntools sweep grokking``: optimizers × λ × train fraction × seeds, one cell each."""

    optimizers: tuple = param(tuple(OPTIMIZERS), kind="strs", choices=tuple(OPTIMIZERS), metavar="NAMES",
                              max_len=len(OPTIMIZERS), label="optimizer", group=GRID,
                              help="comma-separated: adamw (decoupled decay), adam+l2 (λ in the gradient), none")
    decays: tuple = param((0.1, 0.3, 1.0), kind="floats", low=0.0, max_len=20, metavar="LAMBDAS", group=GRID,
                          help="weight decays λ of adamw and adam+l2 (increasing)")
    fractions: tuple = param((0.5, 0.7, 0.85), kind="floats", low=0.0, high=1.0, low_open=True, high_open=True,
                             max_len=20, metavar="FRACS", group=GRID, help="train fractions (increasing)")
    seeds: int = param(3, low=1, high=1000, group=GRID, help="seeds per cell (seed index s: split and init)")


def check(p: GrokkingSweepParams) -> None:
    G.check_grid(p, "decays", "fractions", p.fractions)
    if not p.fractions:
        raise ValueError("Invalid fractions: need at least one train fraction")
    if not p.optimizers or len(set(p.optimizers)) != len(p.optimizers):
        raise ValueError(f"Invalid optimizers: {','.join(p.optimizers)} (need distinct names)")
    if set(p.optimizers) & {"adamw", "adam+l2"} and not p.decays:
        raise ValueError("Invalid decays: adamw and adam+l2 need at least one λ")
    p.check_backend()


def common_config(p) -> dict:
    """The fields of :class:`~dyntools.grokking_study.GrokkingTask` (every cell's shared settings)."""
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(G.GrokkingTask)}


def cells_of(p: GrokkingSweepParams) -> list[dict]:
    """optimizer × λ × train fraction × seed index (``none``: λ = 0, once)."""
    return [{"optimizer": o, "weight_decay": float(lam), "train_fraction": float(f), "seed_index": s}
            for o in p.optimizers for lam in (p.decays if o != "none" else (0.0,))
            for f in p.fractions for s in range(p.seeds)]


@dataclass(frozen=True)
class CellRun(G.GrokkingTask):
    """One cell's run: the shared settings, its train fraction and λ, one thread (the settings a
    ``simulate grokking`` run holding this cell as one of its paths trains with)."""

    train_fraction: float = 0.7
    weight_decay: float = 0.0
    workers: int = 1


def single_run_params(config: dict, cell: dict) -> CellRun:
    """The settings of the run that trains this cell."""
    return CellRun(**config, train_fraction=cell["train_fraction"], weight_decay=cell["weight_decay"])


def sweep_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """One cell (module docstring): seed index ``s``'s split and initialization trained by one optimizer exactly
    as ``simulate grokking`` trains path ``s`` → the curves (K,) and first steps."""
    from dyntools.engine import record

    p = single_run_params(config, cell)
    model = G.network(p)
    g, s = OPTIMIZERS[cell["optimizer"]], int(cell["seed_index"])
    steps = record.make_grid("log", p.steps, p.records)
    data = G.datasets(p, p.train_fraction, 1, seed, indices=[s])
    opts = G.optimizers(p, model)
    # simulate trains an AdamW with decay groups in a call of its own: its stream key is that call's number
    part = g if len({"decay_weights" in o.options for o in opts}) > 1 else 0
    res = G.train_runs(p, model, data, [opts[g]], seed, (0,), steps, indices=[s], part=part)
    m = G.measure(model, res["theta"], data)
    out = {k: m[k][0, 0] for k in CURVES}
    out["steps"] = steps
    out["diverged_at"] = int(res["diverged_at"][0, 0])
    for key, level in (("step_train99", 0.99), ("step_test99", 0.99), ("step_test_threshold", p.threshold)):
        out[key] = int(G.first_step(m["test_acc" if "test" in key else "train_acc"][0, 0], steps, level))
    out["reached"] = int(out["step_test_threshold"] >= 0)
    out["final_test_acc"] = float(out["test_acc"][-1])
    out["final_train_acc"] = float(out["train_acc"][-1])
    if out["diverged_at"] >= 0:
        out.update(status="diverged", message=f"diverged at step {out['diverged_at']}")
    return out


def warm_up(config: dict) -> None:
    """Compile (or load) the network's kernels once per worker: a two-step run of the smallest cell."""
    sweep_cell({**config, "steps": 10, "records": 4}, {"optimizer": "none", "weight_decay": 0.0,
                                                      "train_fraction": 0.5, "seed_index": 0}, 0, 0)


sweep_cell.warm_up = warm_up


def build_spec(p: GrokkingSweepParams, seed: int):
    from dyntools.sweep import SweepSpec

    check(p)
    return SweepSpec(KIND, sweep_cell, common_config(p), cells_of(p), validation.seed(seed), finite=FINITE)


def run_grid(p: GrokkingSweepParams, out, *, seed: int = 0, progress: bool = False):
    """Run (or resume) the sweep into ``out`` → a ``grokking-sweep`` result, also written there."""
    from dyntools import sweep

    spec = build_spec(p, seed)
    outcome = sweep.run_sweep(spec, out, **p.backend(), progress=progress)
    result = assemble(spec, p, outcome.cells)
    result.summary.update({"computed": outcome.computed, "reused": outcome.reused, "backend": outcome.backend,
                           "damaged_cells": outcome.damaged})
    if outcome.damaged:
        result.message += f"; {len(outcome.damaged)} damaged cells recomputed ({'; '.join(outcome.damaged)})"
    result.message = outcome.with_targets(result.message, result.summary)
    result.timings["sweep"] = outcome.seconds
    sweep.finalize(result, out)
    return result


def assemble(spec, p: GrokkingSweepParams, cells: list[dict]):
    """The cells as arrays indexed [optimizer, λ, fraction, seed(, step)]; ``none``'s cells fill every λ row."""
    from dyntools.engine.result import RunResult

    opts, lams, fracs = list(p.optimizers), list(p.decays) or [0.0], list(p.fractions)
    K = len(cells[0]["steps"])
    shape = (len(opts), len(lams), len(fracs), p.seeds)
    arrays = {k: np.full((*shape, K), np.nan) for k in CURVES}
    for k in ("step_train99", "step_test99", "step_test_threshold", "diverged_at"):
        arrays[k] = np.full(shape, -1, dtype=np.int64)
    arrays["reached"] = np.zeros(shape, dtype=bool)
    for c, r in zip(spec.cells, cells):
        o, f, s = opts.index(c["optimizer"]), fracs.index(c["train_fraction"]), c["seed_index"]
        for i in (range(len(lams)) if c["optimizer"] == "none" else [lams.index(c["weight_decay"])]):
            for k in CURVES:
                arrays[k][o, i, f, s] = r[k]
            for k in ("step_train99", "step_test99", "step_test_threshold", "diverged_at"):
                arrays[k][o, i, f, s] = int(r[k])
            arrays["reached"][o, i, f, s] = bool(r["reached"])
    arrays["steps"] = np.asarray(cells[0]["steps"])
    n_div = sum(r.get("status") == "diverged" for r in cells)
    config = {**spec.config, "optimizers": opts, "decays": lams, "fractions": fracs, "seeds": p.seeds,
              "network": G.describe_network(single_run_params(spec.config, spec.cells[0]))}
    summary = {"phase": phase_rows(config, arrays["reached"]), "verdicts": verdict_rows(config, arrays["reached"]),
               "cells": len(spec.cells), "diverged_cells": int(n_div)}
    message = (f"{n_div} of {len(spec.cells)} cells diverged" if n_div else
               f"{len(spec.cells)} cells of {p.steps} steps without divergence")
    return RunResult(KIND, config, arrays, "diverged" if n_div else "completed", message, seed=spec.seed,
                     summary=summary, timings={})


def phase_rows(config: dict, reached: np.ndarray) -> list[dict]:
    """One row per (optimizer, λ): ``k/n`` seeds reaching the threshold at each train fraction."""
    rows = []
    for o, name in enumerate(config["optimizers"]):
        for i, lam in enumerate(config["decays"] if name != "none" else [None]):
            row = {"optimizer": name, "λ": "-" if lam is None else f"{lam:g}"}
            row.update({f"f = {f:g}": f"{int(reached[o, i, j].sum())}/{reached.shape[3]}"
                        for j, f in enumerate(config["fractions"])})
            rows.append(row)
    return rows


def verdict_rows(config: dict, reached: np.ndarray) -> list[dict]:
    """Per (λ, train fraction): :func:`~dyntools.grokking_study.decay_verdict` of adamw against none
    (empty unless both are in the sweep)."""
    names = config["optimizers"]
    if "adamw" not in names or "none" not in names:
        return []
    a, z, n = names.index("adamw"), names.index("none"), reached.shape[3]
    rows = []
    for i, lam in enumerate(config["decays"]):
        for j, f in enumerate(config["fractions"]):
            v = G.decay_verdict(int(reached[a, i, j].sum()), int(reached[z, 0, j].sum()), n)
            rows.append({"λ": f"{lam:g}", "train fraction": f"{f:g}", "adamw": f"{v['k_decay']}/{n}",
                         "none": f"{v['k_none']}/{n}", "verdict": v["word"] + (f" ({v['note']})" if v["note"] else "")})
    return rows


# ------------------------------------------------------------------------------------ command line

def run(p: GrokkingSweepParams, ctx: RunContext):
    return run_grid(p, ctx.out, seed=ctx.seed, progress=ctx.progress)


def summary(p, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary}


def table(p, result) -> str:
    from dyntools.tables import text_table

    c = result.config
    lines = [f"status: {result.status} — {result.message}", "",
             f"seeds reaching test accuracy ≥ {100 * c['threshold']:g} % within {c['steps']} steps "
             f"({c['network']}, a {c['op']} b mod {c['p']}):", text_table(result.summary["phase"])]
    if result.summary["verdicts"]:
        lines += ["", "decoupled decay (adamw) vs none at each cell [fractions of seeds, disjoint Wilson 95 % "
                      "intervals; a diverged seed counts as not reached]:", text_table(result.summary["verdicts"])]
    return "\n".join(lines)


RESULTS = (derive(KIND, GrokkingSweepParams, "model p op width d_model heads layers steps lr records threshold "
                                             "optimizers decays fractions seeds",
                  summary={"phase": "list", "verdicts": "list", "cells": "int", "diverged_cells": "int",
                           "computed": "int", "reused": "int", "backend": "str", "damaged_cells": "list",
                           "compile_targets": "mapping"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="grokking", verb="sweep",
    help="grokking on a ∘ b mod p as a resumable grid: optimizers (adamw, adam+l2, none) × λ × train fraction × "
         "seeds, the MLP or the transformer; dyntools plot draws each optimizer's (λ × train fraction) phase diagram",
    example="dyntools sweep grokking --p 11 --decays 0.3,1 --fractions 0.5,0.7 --seeds 3 --workers 2 --out runs/gs\n"
            "  dyntools sweep grokking --model transformer --p 11 --d-model 32 --heads 4 --steps 1500 "
            "--optimizers adamw,none --dask-local 2 --out runs/gs-t",
    params=GrokkingSweepParams, figures={KIND: grokking_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--p", "5", "--steps", "20", "--seeds", "2", "--records", "4", "--width", "8", "--decays", "1",
                      "--fractions", "0.6", "--workers", "1"]}
