"""Scheduled learning-rate multiplier and warm restarts: Adam and AdamW at equal budget (seed 003; seed 001's
wish list 1; Loshchilov & Hutter 2019, §3 and Fig. 3–4).

Seed 003's tl;dr: "Adam can substantially benefit from a scheduled learning rate multiplier η_t". Each
optimizer (default Adam with L2 and AdamW) is trained on the spirals with each schedule (default constant,
cosine annealing ``η_t = ½(1 + cos(π t/T))`` and cosine with warm restarts, SGDR: periods T₀, 2T₀, 4T₀ … that
end with the run) for the same number of updates and over several seeds. Seed ``r`` fixes the network's
initialization and the minibatch order, shared by every optimizer and schedule, so the comparison is
paired. Measured: the final validation accuracy and loss (mean ± std over seeds) and the *anytime* curve —
validation error and loss against epochs — where warm restarts give a usable network at the end of every
period. The claim holds for an optimizer when a schedule ends at a lower validation loss than the constant
multiplier by more than twice the standard error of the paired (same-seed) differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.classifier_cell import CELL_VALUES, train_cell
from dyntools.engine.result import RunResult
from dyntools.plots import adamw_schedules as adamw_schedules_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

KIND = "adamw-schedules"
TITLE = "Scheduled learning-rate multiplier and warm restarts: Adam vs AdamW at equal budget (seed 003)"


@dataclass(frozen=True)
class ScheduleParams:
    """``dyntools sweep adamw-schedules``: optimizers × schedules × seeds at one (lr, wd) each."""

    optimizers: tuple = param(("adam", "adamw"), kind="strs", metavar="NAMES", max_len=16,
                              help="comma-separated optimizers")
    schedules: tuple = param(("constant", "cosine", "sgdr"), kind="strs", metavar="NAMES", max_len=16,
                             help="comma-separated schedules of dyntools sweep adamw-grid --schedule")
    lr: tuple = param((3e-3,), kind="floats", low=0.0, low_open=True, metavar="LR[,LR..]", max_len=100,
                      help="learning rate: one, or one per optimizer")
    wd: tuple | None = param(None, kind="floats", low=0.0, metavar="WD[,WD..]", max_len=100,
                             help="weight decay: one, or one per optimizer (default per optimizer: 1e-4 for L2-coupled "
                                  "ones such as adam, 1e-2 for decoupled ones such as adamw)")
    seeds: int = param(5, low=1, high=1000, help="seeds (initialization and minibatch order), shared by every schedule")
    epochs: float = param(128.0, low=0.0, low_open=True, help="the budget of every run, in epochs")
    dataset: str = param("spirals", choices=("spirals", "digits"), help="spirals, or scikit-learn's 8x8 digits")
    n: int = param(1000, low=2, high=10**6, help="training points")
    n_val: int = param(1000, low=1, high=10**6, help="validation points")
    hidden: tuple = param((32, 32, 32), kind="ints", low=1, high=4096, max_len=16, metavar="WIDTHS",
                          help="hidden widths")
    batch_size: int = param(64, low=1, high=10**6, help="minibatch size")
    restart_epochs: float | None = param(None, kind="float", metavar="E",
                                         help="sgdr: first period in epochs (default a seventh of the run)")
    restart_mult: int | None = param(None, kind="int", high=1000, help="sgdr: period factor at each restart (default 2)")
    curve_points: int = param(32, low=1, high=10**5, help="points of the anytime curves")
    dtype: str = param("float64", choices=("float64", "float32"), help="precision of the training")
    workers: int | None = param(None, kind="int", low=1, high=1024, help="local worker processes (default: all cores)")


def per_optimizer(name: str, values, optimizers) -> tuple[float, ...]:
    values = tuple(values)
    if len(values) == 1:
        return values * len(optimizers)
    if len(values) != len(optimizers):
        raise ValueError(f"Invalid {name}: {len(values)} values for {len(optimizers)} optimizers (give one, "
                         "or one per optimizer)")
    return values


#: The default weight decay of an optimizer with decoupled decay (adamw, sgdw, …) and of the others (an L2 term).
DEFAULT_WD = {"decoupled": 1e-2, "coupled": 1e-4}


def weight_decays(p: ScheduleParams, optimizers) -> tuple[float, ...]:
    """``--wd`` per optimizer, or each optimizer's default (:data:`DEFAULT_WD`)."""
    if p.wd is not None:
        return per_optimizer("wd", p.wd, optimizers)
    from dyntools.optim import optimizers as O

    def default(name):
        probe = O.make(name, lr=1e-3, weight_decay=1e-2) if name in O.FACTORIES else None
        return DEFAULT_WD["decoupled" if probe is not None and probe.decay_position.startswith("decoupled")
                          else "coupled"]

    return tuple(default(name) for name in optimizers)


def grid_config(p: ScheduleParams):
    """The cells' common :class:`~dyntools.heatmap_grid.GridConfig` (checks every option)."""
    from dyntools.classifier_cell import SCHEDULES, check_schedule
    from dyntools.heatmap_grid import GridConfig

    if not p.schedules or len(set(p.schedules)) != len(p.schedules):
        raise ValueError(f"Invalid schedules: {','.join(p.schedules)} (need distinct names)")
    for s in p.schedules:
        validation.one_of("schedules", s, SCHEDULES)
    if "sgdr" in p.schedules:
        check_schedule("sgdr", p.epochs, restart_epochs=p.restart_epochs, restart_mult=p.restart_mult)
    elif p.restart_epochs is not None or p.restart_mult is not None:
        raise ValueError("Invalid restart_epochs: only read by schedule sgdr (not in --schedules)")
    cfg = GridConfig(optimizers=p.optimizers, n=p.n, n_val=p.n_val, hidden=p.hidden, batch_size=p.batch_size,
                     epochs=p.epochs, dataset=p.dataset, learning_curve_points=p.curve_points, n_lr=1, n_wd=1,
                     dtype=p.dtype)
    per_optimizer("lr", p.lr, cfg.optimizers)
    weight_decays(p, cfg.optimizers)
    return cfg


def build_spec(p: ScheduleParams, seed: int):
    from dyntools import sweep

    cfg = grid_config(p)
    lrs, wds = per_optimizer("lr", p.lr, cfg.optimizers), weight_decays(p, cfg.optimizers)
    config = {**cfg.as_json(), "curve_points": p.curve_points, "restart_epochs": p.restart_epochs,
              "restart_mult": p.restart_mult}
    cells = [{"optimizer": name, "lr": float(lrs[o]), "wd": float(wds[o]), "schedule": sched, "stream": r,
              "o": o, "s": s, "r": r}
             for o, name in enumerate(cfg.optimizers) for s, sched in enumerate(p.schedules)
             for r in range(p.seeds)]
    return cfg, sweep.SweepSpec(KIND, train_cell, config, cells, validation.seed(seed), finite=CELL_VALUES)


def run_schedules(p: ScheduleParams, out, *, seed: int = 0, progress: bool = False) -> RunResult:
    from dyntools import sweep

    cfg, spec = build_spec(p, seed)
    outcome = sweep.run_sweep(spec, out, workers=p.workers, progress=progress)
    shape = (len(cfg.optimizers), len(p.schedules), p.seeds)
    K = len(outcome.cells[0]["curve_steps"])
    arrays = {k: np.full(shape, np.nan) for k in ("train_loss", "train_acc", "val_loss", "val_acc")}
    for k in ("train_loss", "val_loss", "val_acc"):
        arrays[f"curve_{k}"] = np.full((*shape, K), np.nan)
    arrays["diverged"] = np.zeros(shape, dtype=bool)
    for cell, res in zip(spec.cells, outcome.cells):
        at = (cell["o"], cell["s"], cell["r"])
        for k in ("train_loss", "train_acc", "val_loss", "val_acc"):
            arrays[k][at] = res[k]
        for k in ("train_loss", "val_loss", "val_acc"):
            arrays[f"curve_{k}"][at] = res[f"curve_{k}"]
        arrays["diverged"][at] = res["status"] == "diverged"
    arrays["curve_epochs"] = outcome.cells[0]["curve_steps"] * cfg.batch_size / cfg.n
    config = {**spec.config, "schedules": list(p.schedules), "seeds": p.seeds, "steps": cfg.steps,
              "lr": list(per_optimizer("lr", p.lr, cfg.optimizers)),
              "wd": list(weight_decays(p, cfg.optimizers))}
    summary = summarize(list(cfg.optimizers), list(p.schedules), arrays)
    message = (f"{len(spec.cells)} runs ({outcome.computed} computed, {outcome.reused} reused) on {outcome.backend}; "
               f"{int(arrays['diverged'].sum())} diverged")
    summary = {**summary, "n_runs": len(spec.cells), "computed": outcome.computed}
    message = outcome.with_targets(message, summary)
    result = RunResult(KIND, config, arrays, "completed", message, seed=spec.seed, summary=summary,
                       timings={"sweep": outcome.seconds})
    sweep.finalize(result, out)
    return result


def summarize(optimizers: list, schedules: list, arrays: dict) -> dict:
    """Mean ± std over seeds of the final validation accuracy/loss, the anytime mean validation error
    (over the recorded points), and per optimizer whether a schedule beats the constant multiplier."""
    out = {"runs": {}, "verdicts": {}}
    for o, name in enumerate(optimizers):
        for s, sched in enumerate(schedules):
            acc, loss = arrays["val_acc"][o, s], arrays["val_loss"][o, s]
            out["runs"][f"{name}/{sched}"] = {
                "val_acc_mean": float(np.nanmean(acc)), "val_acc_std": float(np.nanstd(acc)),
                "val_loss_mean": float(np.nanmean(loss)), "val_loss_std": float(np.nanstd(loss)),
                "anytime_val_error": float(np.nanmean(1.0 - arrays["curve_val_acc"][o, s])),
                "diverged": int(arrays["diverged"][o, s].sum())}
        if "constant" in schedules:
            c = schedules.index("constant")
            best = min(range(len(schedules)), key=lambda k: np.nanmean(arrays["val_loss"][o, k]))
            gain = arrays["val_loss"][o, c] - arrays["val_loss"][o, best]       # paired by seed
            se = float(np.nanstd(gain) / np.sqrt(max(1, np.sum(np.isfinite(gain)) - 1)))
            clear = best != c and float(np.nanmean(gain)) > 2 * se
            out["verdicts"][name] = (
                f"lowest final validation loss with {schedules[best]}"
                + ("" if best == c else f", {float(np.nanmean(gain)):.4f} ± {se:.4f} (paired, s.e.) below constant")
                + (": a schedule helps beyond the seed noise" if clear else
                   ": no schedule beats constant beyond the seed noise (2 s.e.)"))
    return out


def claims(result) -> list[tuple[str, object]]:
    """Seed 003's tl;dr, "Adam can substantially benefit from a scheduled learning rate multiplier η_t", per
    optimizer and non-constant schedule as ``(claim, Verdict)`` rows: a sign test over the paired seeds
    (:func:`dyntools.verdicts.sign_test`; a seed's runs share initialization and batches; a diverged run's pair
    is left out) of the final validation loss against the constant multiplier's. The measurement adds the mean
    validation accuracies, so a claim that does not reproduce is said with its numbers."""
    import dataclasses

    from dyntools import verdicts as V

    schedules, rows = list(result.config["schedules"]), []
    if "constant" not in schedules:
        return rows
    c = schedules.index("constant")
    for o, name in enumerate(result.config["optimizers"]):
        for k, sched in enumerate(schedules):
            if k == c:
                continue
            v = V.sign_test(result["val_loss"][o, k], result["val_loss"][o, c])
            with np.errstate(all="ignore"):
                accs = (float(np.nanmean(result["val_acc"][o, k])), float(np.nanmean(result["val_acc"][o, c])))
            v = dataclasses.replace(v, measurement=f"lower final val loss on {v.measurement}; mean val acc "
                                                    f"{accs[0]:.3f} ({sched}) vs {accs[1]:.3f} (constant)")
            if v.word == V.CONTRADICTED:
                v = dataclasses.replace(v, why=f"not reproduced here: {sched} ends worse than the constant multiplier "
                                               f"on this task and budget; {v.why}")
            rows.append((f"{name} benefits from the {sched} multiplier (003)", v))
    return rows


# ----------------------------------------------------------------------------------- the command line

def check(p: ScheduleParams) -> None:
    from dyntools import sweep

    grid_config(p)
    sweep.check_backend(p.workers, None, None)


def run(p: ScheduleParams, ctx: RunContext) -> RunResult:
    return run_schedules(p, ctx.out, seed=ctx.seed, progress=ctx.progress)


def summary(p: ScheduleParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary}


def rows(result) -> list[dict]:
    return [{"run": k, "val acc": f"{v['val_acc_mean']:.4f} ± {v['val_acc_std']:.4f}",
             "val loss": f"{v['val_loss_mean']:.4f} ± {v['val_loss_std']:.4f}",
             "anytime val error": v["anytime_val_error"], "diverged": v["diverged"]}
            for k, v in result.summary["runs"].items()]


def table(p: ScheduleParams, result) -> str:
    from dyntools.tables import key_values, text_table

    return "\n".join([text_table(rows(result)), "", key_values({**result.summary["verdicts"],
                                                                 "seconds": result.timings["sweep"]})])


RESULTS = (derive(KIND, ScheduleParams, "batch_size curve_points dataset epochs hidden lr n n_val optimizers "
                          "restart_epochs restart_mult schedules seeds wd",
                  summary={"compile_targets": "mapping", "computed": "int", "n_runs": "int", "runs": "mapping",
                           "verdicts": "mapping"}),)

EXPERIMENT = Experiment.declare(
    globals(), name=KIND, verb="sweep",
    help="Adam and AdamW with constant / cosine / warm-restart schedules at equal budget over seeds (seed 003)",
    example="dyntools sweep adamw-schedules --schedules constant,cosine,sgdr --seeds 5 --out runs/schedules",
    params=ScheduleParams, figures={KIND: adamw_schedules_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--seeds", "1", "--epochs", "1", "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size",
                      "20", "--workers", "1"]}


# ----------------------------------------------------------------------------------- report entry

QUICK = {"n": 400, "n_val": 400, "hidden": (16, 16, 16), "batch_size": 32, "epochs": 32.0, "curve_points": 16,
         "lr": (1e-2,), "workers": 1}
SGDR_GRID_QUICK = {"n_lr": 3, "n_wd": 4, "n": 400, "n_val": 400, "epochs": 32, "hidden": (16, 16, 16),
                   "batch_size": 32, "learning_curve_points": 0}
SGDR_GRID_FULL = {"n_lr": 6, "n_wd": 8, "learning_curve_points": 0}


def reproduce(ctx):
    from dyntools import plots
    from dyntools import verdicts as V
    from dyntools.heatmap_grid import GridConfig, run_grid
    from dyntools.plots import adamw_heatmaps as HP
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    p = ScheduleParams(**QUICK) if ctx.quick else ScheduleParams(seeds=8)
    result, seconds = ctx.timed_run(run_schedules, KIND, p)
    grid = GridConfig(schedule="sgdr", **(SGDR_GRID_QUICK if ctx.quick else SGDR_GRID_FULL))
    heat, heat_seconds = ctx.timed_run(run_grid, "adamw-grid-sgdr", grid, workers=1 if ctx.quick else None)
    seconds += heat_seconds
    figs = plots.plot_result(result, ctx.figure_dir, ("png",), plotter=adamw_schedules_figures.plot_result)
    figs += HP.plot_val_accuracy(heat, ctx.figure_dir, ("png",), name="adamw_schedules_sgdr_heatmap")
    verdicts = result.summary["verdicts"]
    claim_rows = claims(result)
    hs = heat.summary["optimizers"]
    md = [f"{', '.join(p.optimizers)} × schedules {', '.join(p.schedules)} at {result.config['steps']} updates "
          f"({p.epochs:g} epochs) each, {p.seeds} seeds (the same initializations and batches for every "
          f"schedule), lr {', '.join(f'{v:g}' for v in result.config['lr'])}, wd "
          f"{', '.join(f'{v:g}' for v in result.config['wd'])}; MLP {'×'.join(map(str, p.hidden))} on "
          f"{p.n} spiral points. Values are mean ± std over seeds at the end of the run; the anytime error is "
          f"the validation error averaged over {p.curve_points} points along the run.",
          "", markdown_table(rows(result)), "",
          "Measured: " + "; ".join(f"{k}: {v}" for k, v in verdicts.items()) + ".", "",
          "Seed 003's claim, by a declared rule over the paired seeds:", "", V.claims_table(claim_rows), "",
          f"Warm-restart (sgdr) heatmaps, {grid.n_lr} × {grid.n_wd} cells: best validation accuracy "
          + ", ".join(f"{k} {v['best_val_acc']:.3f} (cells ≥ {grid.threshold:.0%}: {v['cells_above_threshold']})"
                      for k, v in hs.items()) + f" ({seconds:.1f} s in all).", ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {k: {kk: v[kk] for kk in ("val_acc_mean", "val_loss_mean", "anytime_val_error")}
               for k, v in result.summary["runs"].items()}
    numbers["claims"] = {cl: v.as_dict() for cl, v in claim_rows}
    headline = "; ".join(f"{cl.removesuffix(' (003)')}: {v.label()} ({v.measurement})" for cl, v in claim_rows)
    if claim_rows:
        headline += f" [{claim_rows[0][1].rule}, n = {claim_rows[0][1].n} seeds]"
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=headline or "measured: " + "; ".join(f"{k}: {v}" for k, v in verdicts.items()))


REPORT = Entry(KIND, TITLE, reproduce, order=33)
