"""The problem set's (learning rate × weight decay) heatmaps on the spirals (seed 001, Q 2.b–c).

An MLP with 3 hidden ReLU layers is trained on two interleaved spirals for every cell of a
log-spaced grid of learning rate × weight decay (default 16 × 24), once with L2-coupled decay
(Adam, SGD) and once with decoupled decay (AdamW, SGDW). Loshchilov & Hutter's claim (seed 001,
point 5; seed 003's tl;dr) is that decoupling makes the good region of the two hyperparameters
*decouple* — it stops being a thin diagonal band — and that the region of good settings is
larger. The problem set's questions are answered with numbers: the best validation accuracy of
each optimizer and the count/fraction of cells above a threshold (default 90 %).

Each cell is one run of :func:`train_cell` on a :mod:`dyntools.sweep` (local processes or Dask);
its initialization and minibatch order come from ``streams.path_states(seed, 1, KEY, index)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from dyntools import data, sweep, validation
from dyntools.classifier_cell import (  # noqa: F401 - train_cell is the sweep's cell function (by name)
    DATASETS,
    SCHEDULES,
    effective_wd,
    make_optimizer,
    make_schedule,
    train_cell,
)
from dyntools.engine.result import RunResult
from dyntools.optim import optimizers as O
from dyntools.spec import Entry, Experiment, RunContext, param

KIND = "adamw-grid"
TITLE = "AdamW vs Adam+L2: (learning rate, weight decay) heatmaps on the spirals (seed 001)"
#: The most cells one sweep may hold (each writes one file and costs about a second).
MAX_CELLS = 100_000

DEFAULT_RANGES = {  # (lr range, wd range) per optimizer family, log-spaced
    "adam": ((1e-4, 1e-1), (1e-6, 1e0)), "adamw": ((1e-4, 1e-1), (1e-6, 1e0)),
    "adamw_l1": ((1e-4, 1e-1), (1e-6, 1e0)), "adamw_l1l2": ((1e-4, 1e-1), (1e-6, 1e0)),
    "rmsprop_bc": ((1e-4, 1e-1), (1e-6, 1e0)), "rmsprop": ((1e-4, 1e-1), (1e-6, 1e0)),
    "adagrad": ((1e-3, 1e0), (1e-6, 1e0)),
    "sgd": ((1e-3, 1e0), (1e-6, 1e0)), "sgdw": ((1e-3, 1e0), (1e-6, 1e0)),
}


@dataclass(frozen=True)
class AdamWGridParams:
    """``dyntools sweep adamw-grid``: the grid, the task, the training and where the cells run."""

    optimizers: tuple = param(("adam", "adamw"), kind="strs", metavar="NAMES", max_len=len(DEFAULT_RANGES),
                              help="comma-separated optimizers, e.g. adam,adamw or sgd,sgdw")
    lr_grid: tuple | None = param(None, kind="grid", metavar="LOW:HIGH:N", max_len=1000,
                                  help="log-spaced learning rates (default per optimizer: Adam-like 1e-4:1e-1:16, "
                                       "SGD/SGDW/AdaGrad 1e-3:1:16)")
    wd_grid: tuple = param((1e-6, 1.0, 24), kind="grid", metavar="LOW:HIGH:N", max_len=1000,
                           help="log-spaced weight decays (cells = optimizers × lr N × wd N ≤ 1e5)")
    normalized_wd: bool = param(False, help="read the wd axis as λ_norm, λ = λ_norm √(b/(B·T)) (Loshchilov & Hutter)")
    dataset: str = param("spirals", choices=DATASETS,
                         help="spirals, or digits (scikit-learn's bundled 8x8 digits, no download)")
    n: int = param(1000, low=2, high=10**6, help="training points")
    n_val: int = param(1000, low=1, high=10**6, help="validation points")
    classes: int = param(2, low=2, high=1000, help="number of spiral arms/classes")
    turns: float = param(1.5, low=0.0, low_open=True, high=1e6, help="turns of each arm: difficulty")
    noise: float = param(0.05, low=0.0, high=1e100, help="Gaussian noise std: difficulty")
    hidden: tuple = param((32, 32, 32), kind="ints", low=1, high=4096, max_len=16, metavar="WIDTHS",
                          help="hidden widths")
    batch_size: int = param(64, low=1, high=10**6, help="minibatch size")
    epochs: float = param(128.0, low=0.0, low_open=True, high=1e6,
                          help="epochs (128 = 2000 steps at n=1000; epochs × n / batch ≤ 1e9 steps)")
    schedule: str = param("constant", choices=SCHEDULES, help="learning-rate schedule")
    plateau_factor: float = param(0.5, low=0.0, high=1.0, low_open=True, high_open=True,
                                  help="schedule plateau: lr multiplier when the training loss stalls")
    plateau_patience: int = param(5, low=0, high=10**6, help="schedule plateau: epochs without improvement before reducing")
    momentum: float = param(0.9, low=0.0, high=1.0, high_open=True, help="momentum of sgd/sgdw")
    threshold: float = param(0.9, low=0.0, high=1.0, help="'good cell' validation accuracy")
    workers: int | None = param(None, kind="int", low=1, high=1024, help="local worker processes (default: all cores)")
    dask_local: int | None = param(None, kind="int", low=1, high=1024, metavar="N",
                                   help="run on a Dask LocalCluster of N worker processes")
    scheduler: str | None = param(None, kind="str", metavar="tcp://HOST:PORT", help="run on an existing Dask cluster")
    connect_timeout: float = param(10.0, low=0.0, low_open=True, help="seconds to reach --scheduler")


_P = AdamWGridParams()          # GridConfig's defaults are the command's


@dataclass
class GridConfig:
    """Everything one heatmap sweep needs (JSON-able)."""

    optimizers: tuple[str, ...] = _P.optimizers
    lr_range: tuple[float, float] | None = None     # None: each optimizer's DEFAULT_RANGES
    n_lr: int = 16
    wd_range: tuple[float, float] = _P.wd_grid[:2]
    n_wd: int = _P.wd_grid[2]
    n: int = _P.n
    n_val: int = _P.n_val
    classes: int = _P.classes
    turns: float = _P.turns
    noise: float = _P.noise
    hidden: tuple[int, ...] = _P.hidden
    batch_size: int = _P.batch_size
    epochs: float = _P.epochs
    schedule: str = _P.schedule
    momentum: float = _P.momentum
    normalized_wd: bool = _P.normalized_wd
    threshold: float = _P.threshold
    dataset: str = _P.dataset
    plateau_factor: float = _P.plateau_factor      # schedule "plateau": multiply the lr by this ...
    plateau_patience: int = _P.plateau_patience    # ... after this many epochs without improvement
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.optimizers = tuple(self.optimizers)
        validation.one_of("dataset", self.dataset, DATASETS)
        if self.dataset == "digits":          # scikit-learn's bundled 8×8 digits: fixed size
            d = data.digits()
            self.n, self.n_val, self.classes = len(d.y), len(d.y_val), d.n_classes
        if not self.optimizers:
            raise ValueError("Invalid optimizers: need at least one")
        for name in self.optimizers:
            validation.one_of("optimizer", name, tuple(O.FACTORIES))
        if len(set(self.optimizers)) != len(self.optimizers):
            raise ValueError(f"Invalid optimizers: {','.join(self.optimizers)} (repeated name)")
        if self.lr_range is not None:
            self.lr_range = check_range("lr range", self.lr_range)
        self.wd_range = check_range("wd range", self.wd_range)
        self.n_lr = validation.count("n_lr", self.n_lr)
        self.n_wd = validation.count("n_wd", self.n_wd)
        self.n = validation.count("n", self.n, minimum=2)
        self.n_val = validation.count("n_val", self.n_val)
        self.classes = validation.count("classes", self.classes, minimum=2)
        self.turns = validation.positive("turns", self.turns)
        self.noise = validation.non_negative("noise", self.noise)
        self.hidden = tuple(validation.count("hidden width", h) for h in self.hidden)
        if len(self.hidden) < 1:
            raise ValueError("Invalid hidden: need at least one hidden layer")
        self.batch_size = validation.count("batch_size", self.batch_size)
        if self.batch_size > self.n:
            raise ValueError(f"Invalid batch_size: {self.batch_size} (must be <= n = {self.n})")
        self.epochs = validation.positive("epochs", self.epochs)
        validation.one_of("schedule", self.schedule, SCHEDULES)
        self.momentum = validation.in_interval("momentum", self.momentum, 0.0, 1.0)
        self.threshold = validation.in_interval("threshold", self.threshold, 0.0, 1.0, closed_high=True)
        self.plateau_factor = validation.in_interval("plateau_factor", self.plateau_factor, 0.0, 1.0,
                                                     closed_low=False)
        self.plateau_patience = validation.count("plateau_patience", self.plateau_patience, minimum=0)
        self.steps  # noqa: B018 - validates

    @property
    def steps(self) -> int:
        steps = int(math.ceil(self.epochs * self.n / self.batch_size))
        if steps < 1:
            raise ValueError("Invalid epochs: fewer than one step")
        return steps

    def lr_range_of(self, name: str) -> tuple[float, float]:
        return self.lr_range if self.lr_range is not None else DEFAULT_RANGES[name][0]

    def lrs(self) -> np.ndarray:
        """Learning rates, one row per optimizer (``n_opt × n_lr``)."""
        return np.array([np.geomspace(*self.lr_range_of(name), self.n_lr) for name in self.optimizers])

    def wds(self) -> np.ndarray:
        return np.geomspace(*self.wd_range, self.n_wd)

    def as_json(self) -> dict:
        d = asdict(self)
        d["optimizers"], d["hidden"] = list(self.optimizers), list(self.hidden)
        d["lr_range"] = None if self.lr_range is None else list(self.lr_range)
        d["wd_range"] = list(self.wd_range)
        return d


def check_range(name: str, rng) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in rng)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid {name}: {rng!r} (expected two numbers LOW, HIGH)") from None
    validation.positive(f"{name} low", lo)
    validation.positive(f"{name} high", hi)
    if hi < lo:
        raise ValueError(f"Invalid {name}: high {hi} is below low {lo}")
    return lo, hi


def parse_grid(name: str, text: str) -> tuple[float, float, int]:
    """``LOW:HIGH:N`` (log-spaced, N ≥ 1) → ``(low, high, n)``."""
    parts = str(text).split(":")
    if len(parts) != 3:
        raise ValueError(f"Invalid --{name}: {text!r} (expected LOW:HIGH:N, e.g. 1e-4:1e-1:16)")
    try:
        lo, hi = float(parts[0]), float(parts[1])
        n = int(parts[2])
    except ValueError:
        raise ValueError(f"Invalid --{name}: {text!r} (expected LOW:HIGH:N with numbers)") from None
    return check_grid(name, (lo, hi, n))


def check_grid(name: str, grid) -> tuple[float, float, int]:
    """``(low, high, n)`` of a log-spaced axis: 0 < low <= high, n >= 1, high > low when n > 1."""
    lo, hi, n = grid
    text = f"{lo:g}:{hi:g}:{n}"
    lo, hi = check_range(f"--{name}", (lo, hi))
    n = validation.count(f"--{name} N", n)
    if n > 1 and hi == lo:
        raise ValueError(f"Invalid --{name}: {text!r} (HIGH must exceed LOW when N > 1)")
    return lo, hi, n


# ----------------------------------------------------------------------------------- the grid

def build_spec(cfg: GridConfig, seed: int) -> sweep.SweepSpec:
    seed = validation.seed(seed)
    cells = [{"optimizer": name, "lr": float(lr), "wd": float(wd), "o": o, "i": i, "j": j}
             for o, name in enumerate(cfg.optimizers)
             for i, lr in enumerate(cfg.lrs()[o]) for j, wd in enumerate(cfg.wds())]
    return sweep.SweepSpec(KIND, "simulations.adamw_heatmaps:train_cell", cfg.as_json(), cells, seed,
                           finite=("train_loss", "train_acc", "val_loss", "val_acc", "curve", "diverged_step"))


def assemble(cfg: GridConfig, spec: sweep.SweepSpec, outcome: sweep.SweepOutcome) -> RunResult:
    shape = (len(cfg.optimizers), cfg.n_lr, cfg.n_wd)
    arrays = {k: np.full(shape, np.nan) for k in ("train_loss", "train_acc", "val_loss", "val_acc")}
    arrays["diverged"] = np.zeros(shape, dtype=bool)
    arrays["diverged_step"] = np.full(shape, -1, dtype=np.int64)
    n_rec = len(outcome.cells[0]["curve"])
    arrays["curves"] = np.full((*shape, n_rec), np.nan)
    for cell, res in zip(spec.cells, outcome.cells):
        at = (cell["o"], cell["i"], cell["j"])
        for k in ("train_loss", "train_acc", "val_loss", "val_acc"):
            arrays[k][at] = res[k]
        arrays["diverged"][at] = res["status"] == "diverged"
        arrays["diverged_step"][at] = res["diverged_step"]
        arrays["curves"][at] = res["curve"]
    arrays["lrs"], arrays["wds"] = cfg.lrs(), cfg.wds()
    summary = summarize(cfg, arrays)
    n_div = int(arrays["diverged"].sum())
    message = (f"{len(spec.cells)} cells ({outcome.computed} computed, {outcome.reused} reused) on "
               f"{outcome.backend}; {n_div} diverged")
    if outcome.damaged:
        message += f"; {len(outcome.damaged)} damaged cells recomputed ({'; '.join(outcome.damaged)})"
    return RunResult(KIND, {**cfg.as_json(), "steps": cfg.steps}, arrays, "completed", message,
                     seed=spec.seed,
                     summary={**summary, "cells": len(spec.cells), "computed": outcome.computed,
                              "reused": outcome.reused, "diverged_cells": n_div, "backend": outcome.backend,
                              "damaged_cells": outcome.damaged},
                     timings={"sweep": outcome.seconds})


def summarize(cfg: GridConfig, arrays: dict) -> dict:
    """Best validation accuracy and the count/fraction of cells ≥ threshold, per optimizer."""
    out = {"threshold": cfg.threshold, "optimizers": {}}
    lrs, wds = arrays["lrs"], arrays["wds"]
    for o, name in enumerate(cfg.optimizers):
        acc = arrays["val_acc"][o]
        finite = np.where(np.isfinite(acc), acc, -1.0)
        i, j = np.unravel_index(int(np.argmax(finite)), acc.shape)
        good = int(np.sum(finite >= cfg.threshold))
        out["optimizers"][name] = {
            "best_val_acc": float(finite[i, j]), "best_lr": float(lrs[o][i]), "best_wd": float(wds[j]),
            "best_val_loss": float(arrays["val_loss"][o][i, j]),
            "cells_above_threshold": good, "fraction_above_threshold": good / acc.size,
            "diverged_cells": int(arrays["diverged"][o].sum()),
        }
    return out


def run_grid(cfg: GridConfig, out, *, seed: int = 0, workers=None, dask_local=None, scheduler=None,
             connect_timeout: float = 10.0, progress: bool = False) -> RunResult:
    """Run (or resume) the sweep into ``out`` and write the assembled result there."""
    spec = build_spec(cfg, seed)
    outcome = sweep.run_sweep(spec, out, workers=workers, dask_local=dask_local, scheduler=scheduler,
                              connect_timeout=connect_timeout, progress=progress)
    result = assemble(cfg, spec, outcome)
    sweep.finalize(result, out)
    return result


# ----------------------------------------------------------------------------------- report entry

def reproduce(ctx):
    from dyntools import plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    if ctx.quick:
        cfg = GridConfig(n_lr=4, n_wd=6, n=400, n_val=400, epochs=48, hidden=(16, 16, 16), batch_size=32)
        workers = 1
    else:
        cfg = GridConfig(n_lr=8, n_wd=12)
        workers = None
    out = ctx.out_dir / "runs" / KIND
    result = run_grid(cfg, out, seed=ctx.seed, workers=workers, progress=ctx.progress)
    figs = plots.plot_result(result, ctx.figure_dir, ("png",))
    s = result.summary["optimizers"]
    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells ≥ {cfg.threshold:.0%}": v["cells_above_threshold"],
             "fraction": v["fraction_above_threshold"], "diverged": v["diverged_cells"]}
            for k, v in s.items()]
    coupled, decoupled = s[cfg.optimizers[0]], s[cfg.optimizers[-1]]
    # headline check (the problem set's claim): decoupled decay has at least as many good cells
    ok = (all(v["best_val_acc"] > 0.8 for v in s.values())
          and decoupled["cells_above_threshold"] >= coupled["cells_above_threshold"])
    md = [f"{'Quick' if ctx.quick else 'Full'} grid: {cfg.n_lr} learning rates × {cfg.n_wd} weight decays "
          f"(log-spaced, lr ∈ [{cfg.lrs().min():g}, {cfg.lrs().max():g}], wd ∈ [{cfg.wd_range[0]:g}, "
          f"{cfg.wd_range[1]:g}]) per optimizer; MLP {'×'.join(map(str, cfg.hidden))} ReLU, batch "
          f"{cfg.batch_size}, {cfg.steps} steps, {cfg.n} spiral points ({cfg.turns} turns, "
          f"noise {cfg.noise}).",
          "", markdown_table(rows), "",
          f"Decoupled − coupled: {decoupled['cells_above_threshold'] - coupled['cells_above_threshold']:+d} "
          f"cells above {cfg.threshold:.0%} validation accuracy; best accuracy "
          f"{decoupled['best_val_acc'] - coupled['best_val_acc']:+.3f}. Headline check (both reach 80 % "
          f"and the decoupled optimizer has at least as many cells above the threshold): "
          f"{'holds' if ok else 'FAILS'}.", ""]
    md += [f"![{p.stem}]({ctx.relative(p)})" for p in figs]
    numbers = {k: {kk: v[kk] for kk in ("best_val_acc", "cells_above_threshold", "fraction_above_threshold")}
               for k, v in s.items()}
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(p) for p in figs], ok=ok)


# ----------------------------------------------------------------------------------- the command line

def grid_config(p: AdamWGridParams) -> GridConfig:
    """The sweep's :class:`GridConfig` from the command's parameters (checked by GridConfig)."""
    lr = check_grid("lr-grid", p.lr_grid) if p.lr_grid is not None else (None, None, GridConfig.n_lr)
    wd = check_grid("wd-grid", p.wd_grid)
    return GridConfig(optimizers=p.optimizers, lr_range=None if lr[0] is None else lr[:2], n_lr=lr[2],
                      wd_range=wd[:2], n_wd=wd[2], n=p.n, n_val=p.n_val, classes=p.classes, turns=p.turns,
                      noise=p.noise, hidden=p.hidden, batch_size=p.batch_size, epochs=p.epochs, schedule=p.schedule,
                      momentum=p.momentum, normalized_wd=p.normalized_wd, threshold=p.threshold, dataset=p.dataset,
                      plateau_factor=p.plateau_factor, plateau_patience=p.plateau_patience)


def check(p: AdamWGridParams) -> None:
    cfg = grid_config(p)
    cells = len(cfg.optimizers) * cfg.n_lr * cfg.n_wd
    if cells > MAX_CELLS:
        raise ValueError(f"Invalid --lr-grid/--wd-grid: {cells} cells (optimizers × lr N × wd N; at most {MAX_CELLS})")
    if cfg.steps > 10**9:
        raise ValueError(f"Invalid --epochs: {cfg.steps:.3g} steps per cell (epochs × n / batch-size; at most 1e9)")
    validation.entries("(--n + --n-val) × widest layer", (cfg.n + cfg.n_val) * max(*cfg.hidden, cfg.classes))
    sweep.check_backend(p.workers, p.dask_local, p.scheduler)


def run(p: AdamWGridParams, ctx: RunContext) -> RunResult:
    return run_grid(grid_config(p), ctx.out, seed=ctx.seed, workers=p.workers, dask_local=p.dask_local,
                    scheduler=p.scheduler, connect_timeout=p.connect_timeout, progress=ctx.progress)


def summary(p: AdamWGridParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings["sweep"]}


def table(p: AdamWGridParams, result) -> str:
    from dyntools.tables import key_values, text_table

    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells >= {p.threshold:g}": v["cells_above_threshold"],
             "fraction": v["fraction_above_threshold"], "diverged": v["diverged_cells"]}
            for k, v in result.summary["optimizers"].items()]
    return "\n".join([text_table(rows), "", key_values({"message": result.message,
                                                         "steps per cell": result.config["steps"],
                                                         "seconds": result.timings["sweep"]})])


EXPERIMENT = Experiment(
    name="adamw-grid", verb="sweep",
    help="spiral MLP heatmaps over (lr, weight decay): Adam+L2 vs AdamW, SGD+L2 vs SGDW (seed 001)",
    example=("dyntools sweep adamw-grid --optimizers adam,adamw --lr-grid 1e-4:1e-1:16 --wd-grid 1e-6:1:24 "
             "--dask-local 2 --out runs/adamw-grid"),
    params=AdamWGridParams, run=run, table=table, summary=summary, check=check)

REPORT = Entry("adamw-heatmaps", TITLE, reproduce, order=30)
