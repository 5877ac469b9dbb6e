"""(Learning rate × weight decay) heatmaps of the spirals MLP: the grid machinery several experiments share.

One grid is ``optimizers × n_lr × n_wd`` cells, log-spaced per axis (each optimizer its own lr range, declared with
its alias, :mod:`dyntools.optim.aliases`); every cell is one run of :func:`dyntools.classifier_cell.train_cell` on a
:mod:`dyntools.sweep` (local processes or Dask). Cell ``k`` draws its initialization and minibatch order from
``streams.path_states(seed, 1, KEY, k)`` — or, with ``paired``, from stream ``r`` of replicate ``r`` for every
cell, and a cell's numbers are then the mean over its replicates. After the sweep the best cell of each
optimizer and a chosen one are re-run with recordings (:func:`add_learning_curves`).

The settings of a grid are declared once, as the command's parameters :class:`AdamWGridParams` (type, range,
default, help); :class:`GridConfig` is generated from those fields — the two axes read as ranges and counts, the
optimizer file folded into the optimizer names, the backend options left out — and :func:`grid_config` builds one
from the other. Seed 001's claims on a (coupled, decoupled) pair of heatmaps (:func:`claims`,
:func:`region_verdict`) count a cell within :data:`BORDER` of the threshold on either side.

The experiments that use it (``simulations/adamw_*.py``, ``regularized_heatmaps``, ``sgd_vs_adam``) keep only
their own settings, runs and report text.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from dyntools import data, memory, sweep, validation
from dyntools.classifier_cell import (
    CELL_VALUES,
    DATASETS,
    DTYPES,
    PLATEAU_METRICS,
    SCHEDULES,
    check_schedule,
    train_cell,
)
from dyntools.engine.result import RunResult
from dyntools.optim import optimizers as O
from dyntools.optim import user_factories
from dyntools.optim.aliases import ALIASES, DEFAULT_LR_RANGE
from dyntools.params import param
from dyntools.sweep_backend import SweepBackendParams

#: the result kind of a grid (``dyntools sweep adamw-grid``)
KIND = "adamw-grid"
#: The most cells one sweep may hold (each writes one file and costs about a second).
MAX_CELLS = 100_000

#: The most optimizers one grid may name (a bound on the input, not the length of a table).
MAX_OPTIMIZERS = 64


def check_decay_axis(name: str, weight_decay) -> tuple[float, float, int]:
    """The weight-decay axis ``(low, high, n)`` (``--wd-grid``), checked in one place: each end by the optimizers'
    own check of a decay, :func:`dyntools.optim.optimizers.check_weight_decay` (> 0 on this log-spaced axis, so
    every λ of the grid is a valid decay), the order and N by :func:`check_grid`. Declared with the option
    (``param(check=…)``) and run by :class:`GridConfig` for its Python callers; the cells trust the values."""
    return check_grid(name.lstrip("-"), weight_decay, end=_decay_end)


def _decay_end(name: str, weight_decay) -> float:
    return O.check_weight_decay(weight_decay, name, log_axis=True)


@dataclass(frozen=True)
class AdamWGridParams(SweepBackendParams):
    """``dyntools sweep adamw-grid``: the grid, the task, the training (and where the cells run:
    :class:`~dyntools.sweep_backend.SweepBackendParams`)."""

    optimizers: tuple = param(("adam", "adamw"), kind="strs", metavar="NAMES", max_len=MAX_OPTIMIZERS,
                              help=f"comma-separated optimizers, e.g. adam,adamw or sgd,sgdw (built in: "
                                   f"{', '.join(ALIASES)}); your own as "
                                   "module:NAME or file.py:NAME, NAME(lr=, weight_decay=) returning a dyntools "
                                   "Optimizer")
    optimizer_file: str | None = param(None, kind="str", metavar="FILE",
                                       help="a Python file defining optimizer factories named in --optimizers")
    lr_grid: tuple | None = param(None, kind="grid", metavar="LOW:HIGH:N", max_len=1000,
                                  help="log-spaced learning rates (default per optimizer, its alias's lr range: "
                                       "Adam-like 1e-4:1e-1:16, SGD/SGDW/AdaGrad 1e-3:1:16)")
    weight_decay: tuple = param((1e-6, 1.0, 24), kind="grid", metavar="LOW:HIGH:N", max_len=1000,
                                flag="--wd-grid", check=check_decay_axis,
                                help="log-spaced weight decays (cells = optimizers × lr N × wd N ≤ 1e5)")
    normalized_wd: bool = param(False, help="read the wd axis as λ_norm, λ = λ_norm √(b/(B·T)) (Loshchilov & Hutter)")
    dataset: str = param("spirals", choices=DATASETS,
                         help="spirals, digits (scikit-learn's bundled 8x8 digits, no download), or images read "
                              "from --data-dir: mnist, fashion-mnist (IDX files), cifar10 (python batches); "
                              "--n / --n-val images drawn from the train / test files")
    data_dir: str | None = param(None, kind="str", metavar="DIR",
                                 help="the directory of the image files of --dataset mnist|fashion-mnist|cifar10")
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
    dtype: str = param("float64", choices=DTYPES, help="precision of the training (float32: about twice as fast)")
    dropout: float = param(0.0, low=0.0, high=1.0, high_open=True, metavar="P",
                           help="inverted dropout after every hidden ReLU, probability P of dropping a unit "
                                "(masks from the mlp.dropout stream; evaluation without dropout)")
    batch_norm: bool = param(False, help="batch normalization before every hidden ReLU (Linear → BatchNorm1d → "
                                         "ReLU, PyTorch's defaults; evaluated with the running statistics)")
    gamma: float | None = param(None, kind="float", help="schedule step/multistep: lr factor at each decay "
                                "(default 0.1); exponential: factor per epoch (default: the run ends at 1 percent)")
    step_epochs: float | None = param(None, kind="float", metavar="E",
                                      help="schedule step: decay every E epochs (default a quarter of the run)")
    milestones: tuple | None = param(None, kind="floats", metavar="E1,E2,..", max_len=1000,
                                     help="schedule multistep: epochs of the decays (default ½ and ¾ of the run)")
    restart_epochs: float | None = param(None, kind="float", metavar="E",
                                         help="schedule sgdr: first period in epochs (default a seventh of the run)")
    restart_mult: int | None = param(None, kind="int", high=1000, help="schedule sgdr: period factor at each restart "
                                     "(default 2)")
    plateau_factor: float = param(0.5, low=0.0, high=1.0, low_open=True, high_open=True,
                                  help="schedule plateau: lr multiplier when the monitored loss stalls")
    plateau_patience: int = param(5, low=0, high=10**6,
                                  help="schedule plateau: epochs without improvement before reducing")
    plateau_metric: str = param("train-loss", choices=PLATEAU_METRICS,
                                help="schedule plateau: the loss it monitors once per epoch (the epoch's mean "
                                     "mini-batch loss, or the validation loss)")
    sparsity_tol: float = param(1e-3, low=0.0, low_open=True,
                                help="weight statistics: a weight counts as zero when |w| < this")
    curve_at: tuple | None = param(None, kind="floats", metavar="LR,WD", max_len=2,
                                   help="learning curves also for the grid cell nearest to (LR, WD) "
                                        "(default the grid's centre); the best cell of each optimizer always")
    curve_points: int = param(32, low=0, high=10**5, help="points of each learning curve (0: none)")
    paired: bool = param(False, help="every cell starts from the same initialization and sees the same minibatch "
                                     "order (cells differ by their hyperparameters only)")
    replicates: int = param(1, low=1, high=1000, help="with --paired: average every cell over this many paired "
                                                      "replicates (replicate r uses stream r for every cell)")
    momentum: float = param(0.9, low=0.0, high=1.0, high_open=True, help="momentum of sgd/sgdw")
    threshold: float = param(0.9, low=0.0, high=1.0, help="'good cell' validation accuracy")


# ----------------------------------------------------------------------------------- the grid's settings

_P = AdamWGridParams()          # GridConfig's defaults are the command's

#: The command's parameters that are not settings of the grid: the optimizer file (folded into the optimizer
#: names), the two axes and the curve count (renamed below) and where the cells run.
NOT_SETTINGS = ("optimizer_file", "lr_grid", "weight_decay", "curve_points",
                *(f.name for f in dataclasses.fields(SweepBackendParams)))


class _GridMethods:
    """The checks and the axes of a :class:`GridConfig` (its fields are generated below)."""

    def __post_init__(self):
        self.optimizers = tuple(self.optimizers)
        weight_decay = check_decay_axis("--wd-grid", (*self.wd_range, self.n_wd))
        self.wd_range, self.n_wd = weight_decay[:2], weight_decay[2]
        validation.one_of("dataset", self.dataset, DATASETS)
        if self.dataset == "digits":          # scikit-learn's bundled 8×8 digits: fixed size
            d = data.digits()
            self.n, self.n_val, self.classes = len(d.y), len(d.y_val), d.n_classes
        if self.dataset in data.IMAGE_SETS:   # read once here, so that a missing or damaged file fails first
            if self.data_dir is None:
                raise ValueError(f"Invalid data_dir: None (--dataset {self.dataset} reads its files from --data-dir)")
            self.data_dir = str(Path(self.data_dir).expanduser().resolve())
            d = data.image_set(self.dataset, self.data_dir, n_train=self.n, n_test=self.n_val)
            self.classes = d.n_classes
        elif self.data_dir is not None:
            raise ValueError(f"Invalid data_dir: {self.data_dir} (only for --dataset "
                             f"{'|'.join(data.IMAGE_SETS)})")
        if not self.optimizers:
            raise ValueError("Invalid optimizers: need at least one")
        for name in self.optimizers:
            if user_factories.is_reference(name):   # built once here, so that a bad one fails before the sweep
                user_factories.build(name, self.lr_range_of(name)[0], self.wd_range[0])
            else:
                validation.one_of("optimizer", name, tuple(ALIASES))
        if len(set(self.optimizers)) != len(self.optimizers):
            raise ValueError(f"Invalid optimizers: {','.join(self.optimizers)} (repeated name)")
        if self.lr_range is not None:
            self.lr_range = check_range("lr range", self.lr_range)
        self.n_lr = validation.count("n_lr", self.n_lr)
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
        validation.one_of("dtype", self.dtype, DTYPES)
        self.dropout = validation.in_interval("dropout", self.dropout, 0.0, 1.0)
        self.batch_norm = bool(self.batch_norm)
        if (self.dropout > 0.0 or self.batch_norm) and self.dtype != "float64":
            raise ValueError("Invalid dtype: dropout and batch norm train in float64 only")
        if self.batch_norm and self.batch_size < 2:
            raise ValueError(f"Invalid batch_size: {self.batch_size} (batch norm needs at least 2 examples per step)")
        if self.batch_norm and self.schedule == "plateau" and self.plateau_metric == "val-loss":
            raise ValueError("Invalid batch_norm: not with the plateau schedule on the validation loss (it would "
                             "evaluate without the running statistics)")
        if self.milestones is not None:
            self.milestones = tuple(self.milestones)
        check_schedule(self.schedule, self.epochs, gamma=self.gamma, step_epochs=self.step_epochs,
                       milestones=self.milestones, restart_epochs=self.restart_epochs,
                       restart_mult=self.restart_mult, plateau_metric=self.plateau_metric)
        self.sparsity_tol = validation.positive("sparsity_tol", self.sparsity_tol)
        if self.curve_at is not None:
            if len(self.curve_at) != 2:
                raise ValueError(f"Invalid curve_at: {list(self.curve_at)} (expected two numbers LR,WD)")
            self.curve_at = tuple(validation.positive("curve_at", v) for v in self.curve_at)
        self.learning_curve_points = validation.count("curve_points", self.learning_curve_points, minimum=0)
        self.replicates = validation.count("replicates", self.replicates)
        if self.replicates > 1 and not self.paired:
            raise ValueError(f"Invalid replicates: {self.replicates} (replicates need paired cells, --paired)")
        self.steps  # noqa: B018 - validates

    @property
    def steps(self) -> int:
        if not self.epochs * self.n / self.batch_size >= 1:      # not rounded up: 1e-300 epochs is no run
            raise ValueError(f"Invalid --epochs: {self.epochs:g} epochs × --n {self.n} / --batch-size "
                             f"{self.batch_size} is fewer than one step")
        steps = int(math.ceil(self.epochs * self.n / self.batch_size))
        return steps

    def lr_range_of(self, name: str) -> tuple[float, float]:
        """The lr axis of ``name``: the given range, else its alias's (a user's optimizer: Adam's)."""
        if self.lr_range is not None:
            return self.lr_range
        return ALIASES[name].lr_range if name in ALIASES else DEFAULT_LR_RANGE

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
        for key in ("milestones", "curve_at"):
            d[key] = None if d[key] is None else list(d[key])
        return d


def _setting(name: str, type_, default) -> tuple:
    return (name, type_, field(default=default))


GridConfig = dataclasses.make_dataclass(
    "GridConfig",
    [_setting("optimizers", "tuple[str, ...]", _P.optimizers),
     _setting("lr_range", "tuple[float, float] | None", None),     # None: each optimizer's alias's range
     _setting("n_lr", "int", 16),
     _setting("wd_range", "tuple[float, float]", _P.weight_decay[:2]),
     _setting("n_wd", "int", _P.weight_decay[2]),
     *(_setting(f.name, f.type, f.default) for f in dataclasses.fields(AdamWGridParams)
       if f.name not in NOT_SETTINGS and f.name != "optimizers"),
     _setting("learning_curve_points", "int", _P.curve_points),
     ("extra", "dict", field(default_factory=dict))],
    bases=(_GridMethods,), namespace={"__module__": __name__})
GridConfig.__doc__ = """Everything one heatmap sweep needs (JSON-able): the fields of :class:`AdamWGridParams` but
:data:`NOT_SETTINGS`, each with its default, and ``lr_range``/``n_lr``, ``wd_range``/``n_wd`` (the two axes),
``learning_curve_points`` (``curve_points``) and ``extra``."""


#: The largest learning rate of a grid: beyond it the updates overflow float64 (RuntimeWarnings, no result).
LR_MAX = 1e6


def check_range(name: str, rng, end=validation.positive) -> tuple[float, float]:
    """``(low, high)`` with ``low <= high``, each end checked by ``end(what, value)`` (default: > 0)."""
    try:
        lo, hi = (float(v) for v in rng)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid {name}: {rng!r} (expected two numbers LOW, HIGH)") from None
    end(f"{name} low", lo)
    end(f"{name} high", hi)
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


def check_grid(name: str, grid, end=validation.positive) -> tuple[float, float, int]:
    """``(low, high, n)`` of a log-spaced axis: 0 < low <= high, n >= 1, high > low when n > 1; ``end(what,
    value)`` checks each end (default: > 0; the decay axis: :func:`check_decay_axis`)."""
    try:
        lo, hi, n = grid
        text = f"{lo:g}:{hi:g}:{n}"
    except (TypeError, ValueError):
        raise ValueError(f"Invalid --{name}: {grid!r} (expected LOW, HIGH, N)") from None
    lo, hi = check_range(f"--{name}", (lo, hi), end)
    n = validation.count(f"--{name} N", n)
    if n > 1 and hi == lo:
        raise ValueError(f"Invalid --{name}: {text!r} (HIGH must exceed LOW when N > 1)")
    return lo, hi, n


# ----------------------------------------------------------------------------------- the grid

#: Settings read after the sweep (the learning-curve re-runs), not by the cells: not part of a sweep's identity,
#: so sweeps that differ only by them share their cells on disk.
AFTER_THE_SWEEP = ("curve_at", "learning_curve_points")
#: Settings left out of a sweep's identity at their default (added later: sweeps made before resume)
OMITTED_AT_DEFAULT = {"dropout": 0.0, "batch_norm": False, "data_dir": None}


def build_spec(cfg: GridConfig, seed: int) -> sweep.SweepSpec:
    seed = validation.seed(seed)
    cells = [{"optimizer": name, "lr": float(lr), "wd": float(wd), "o": o, "i": i, "j": j}
             for o, name in enumerate(cfg.optimizers)
             for i, lr in enumerate(cfg.lrs()[o]) for j, wd in enumerate(cfg.wds())]
    if cfg.paired:
        cells = [{**c, "stream": r, **({"r": r} if cfg.replicates > 1 else {})}
                 for r in range(cfg.replicates) for c in cells]
    config = {k: v for k, v in cfg.as_json().items()
              if k not in AFTER_THE_SWEEP and not (k in OMITTED_AT_DEFAULT and v == OMITTED_AT_DEFAULT[k])}
    return sweep.SweepSpec(KIND, train_cell, config, cells, seed,
                           finite=CELL_VALUES, cell_memory=cell_peak_arrays(cfg, 1))


CELL_SCALARS = ("train_loss", "train_acc", "val_loss", "val_acc")
WEIGHT_STATS = ("w_small", "w_l1", "w_l2")     # classifier_cell.weight_stats


def assemble(cfg: GridConfig, spec: sweep.SweepSpec, outcome: sweep.SweepOutcome) -> RunResult:
    shape = (len(cfg.optimizers), cfg.n_lr, cfg.n_wd)
    arrays = {k: np.full(shape, np.nan) for k in (*CELL_SCALARS, *WEIGHT_STATS)}
    arrays["diverged"] = np.zeros(shape, dtype=bool)
    arrays["diverged_step"] = np.full(shape, -1, dtype=np.int64)
    n_rec = len(outcome.cells[0]["curve"])
    arrays["curves"] = np.full((*shape, n_rec), np.nan)
    R = cfg.replicates                          # a cell's numbers: the mean over its replicates
    for cell, res in zip(spec.cells, outcome.cells):
        at = (cell["o"], cell["i"], cell["j"])
        first = cell.get("r", 0) == 0
        for k in (*CELL_SCALARS, *WEIGHT_STATS):   # weight statistics: NaN in cells computed before they existed
            value = res.get(k, np.nan) / R
            arrays[k][at] = value if first else arrays[k][at] + value
        arrays["curves"][at] = res["curve"] / R if first else arrays["curves"][at] + res["curve"] / R
        arrays["diverged"][at] |= res["status"] == "diverged"
        if arrays["diverged_step"][at] < 0:
            arrays["diverged_step"][at] = res["diverged_step"]
    arrays["lrs"], arrays["wds"] = cfg.lrs(), cfg.wds()
    summary = summarize(cfg, arrays)
    n_div = int(arrays["diverged"].sum())
    message = (f"{len(spec.cells)} cells ({outcome.computed} computed, {outcome.reused} reused) on "
               f"{outcome.backend}; {n_div} diverged")
    message = outcome.with_damaged(message)
    summary = {**summary, "cells": len(spec.cells), "computed": outcome.computed, "reused": outcome.reused,
               "diverged_cells": n_div, "backend": outcome.backend, "damaged_cells": outcome.damaged}
    message = outcome.with_targets(message, summary)
    return RunResult(KIND, {**cfg.as_json(), "steps": cfg.steps}, arrays, "completed", message,
                     seed=spec.seed, summary=summary, timings={"sweep": outcome.seconds})


def run_networks(cfg: GridConfig, networks: dict, out, *, seed: int = 0, workers=None,
                 progress: bool = False) -> dict[str, RunResult]:
    """The grid of ``cfg`` for several networks in one sweep (one pool of workers): ``networks`` maps a name
    to the changes of its network (``{"dropout": 0.1}``, ``{"batch_norm": True}``, ``{}``). Every network's
    cell (o, i, j) uses the random stream of that cell in a sweep of ``cfg`` alone (the same initial weights
    and minibatches); returns one assembled result per network (not written: the cells are, in ``out``)."""
    import dataclasses

    cfgs = {name: dataclasses.replace(cfg, **changes) for name, changes in networks.items()}
    specs = {name: build_spec(c, seed) for name, c in cfgs.items()}
    cells = [{**cell, "stream": int(cell.get("stream", index)), "network": name, **networks[name]}
             for name, spec in specs.items() for index, cell in enumerate(spec.cells)]
    first = next(iter(specs.values()))
    whole = sweep.SweepSpec(KIND, first.cell_fn, first.config, cells, first.seed, finite=first.finite,
                            cell_memory=first.cell_memory)
    outcome = sweep.run_sweep(whole, out, workers=workers, progress=progress)
    results, start = {}, 0
    for name, spec in specs.items():
        part = dataclasses.replace(outcome, cells=outcome.cells[start:start + len(spec.cells)],
                                   targets=outcome.targets[start:start + len(spec.cells)])
        results[name] = assemble(cfgs[name], spec, part)
        start += len(spec.cells)
    return results


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
        if "train_acc" in arrays:
            out["optimizers"][name]["best_train_acc"] = float(arrays["train_acc"][o][i, j])
        if "w_small" in arrays:
            out["optimizers"][name].update({f"best_{k}": float(arrays[k][o][i, j]) for k in WEIGHT_STATS})
    return out


def run_grid(cfg: GridConfig, out, *, seed: int = 0, workers=None, dask_local=None, scheduler=None,
             connect_timeout: float = 10.0, retries: int = 2, progress: bool = False) -> RunResult:
    """Run (or resume) the sweep into ``out`` and write the assembled result there."""
    spec = build_spec(cfg, seed)
    outcome = sweep.run_sweep(spec, out, workers=workers, dask_local=dask_local, scheduler=scheduler,
                              connect_timeout=connect_timeout, retries=retries, progress=progress)
    result = assemble(cfg, spec, outcome)
    if cfg.learning_curve_points:
        add_learning_curves(cfg, spec, result)
    sweep.finalize(result, out)
    return result


def curve_cells(cfg: GridConfig, arrays: dict) -> np.ndarray:
    """``[optimizer, (best, chosen), (i, j)]``: the best cell by validation accuracy and the cell nearest
    (in log distance) to ``cfg.curve_at`` — the grid's centre when not given."""
    lrs, wds = arrays["lrs"], arrays["wds"]
    out = np.zeros((len(cfg.optimizers), 2, 2), dtype=np.int64)
    for o in range(len(cfg.optimizers)):
        acc = np.where(np.isfinite(arrays["val_acc"][o]), arrays["val_acc"][o], -1.0)
        out[o, 0] = np.unravel_index(int(np.argmax(acc)), acc.shape)
        if cfg.curve_at is None:
            out[o, 1] = (cfg.n_lr // 2, cfg.n_wd // 2)
        else:
            out[o, 1] = (int(np.argmin(np.abs(np.log(lrs[o] / cfg.curve_at[0])))),
                         int(np.argmin(np.abs(np.log(wds / cfg.curve_at[1])))))
    return out


def add_learning_curves(cfg: GridConfig, spec: sweep.SweepSpec, result: RunResult) -> None:
    """Re-run the best and the chosen cell of each optimizer with ``curve_points`` recordings (same
    streams, so the same trajectory as the sweep's cell; with replicates, replicate 0's) and add ``lc_*`` arrays
    ``[optimizer, (best, chosen), point]`` to ``result``: train loss/accuracy and validation loss/accuracy against
    epochs."""
    cells = curve_cells(cfg, result.arrays)
    config = {**spec.config, "curve_points": cfg.learning_curve_points}
    index = {(c["o"], c["i"], c["j"]): k for k, c in enumerate(spec.cells) if c.get("r", 0) == 0}
    runs = [[train_cell(config, spec.cells[index[(o, *cells[o, r])]], spec.seed, index[(o, *cells[o, r])])
             for r in range(2)] for o in range(len(cfg.optimizers))]
    steps = runs[0][0]["curve_steps"]
    result.arrays["lc_cells"] = cells
    result.arrays["lc_steps"] = steps
    result.arrays["lc_epochs"] = steps * cfg.batch_size / cfg.n
    for key in ("train_loss", "train_acc", "val_loss", "val_acc"):
        result.arrays[f"lc_{key}"] = np.array([[r[f"curve_{key}"] for r in pair] for pair in runs])


# ----------------------------------------------------------------------------------- the report's grids and claims

QUICK = {"n_lr": 4, "n_wd": 6, "n": 400, "n_val": 400, "epochs": 48, "hidden": (16, 16, 16), "batch_size": 32}


#: Cells within this (absolute validation accuracy) of the threshold count as borderline: their accuracy
#: moves by that much with another processor's last bits, so they may count on either side.
BORDER = 0.01


def region_verdict(result, threshold: float, coupled: str, decoupled: str) -> tuple[dict, str]:
    """Per optimizer the range of cells at or above ``threshold`` (:func:`dyntools.verdicts.count_above` with
    margin :data:`BORDER`), and whether ``decoupled``'s good region is "at least as large" as ``coupled``'s,
    "smaller", or "undecided" (:func:`dyntools.verdicts.compare_counts`). Diverged (NaN) cells never count."""
    from dyntools import verdicts as V

    names = list(result.config["optimizers"])
    counts = {k: V.count_above(result["val_acc"][o], threshold, BORDER) for o, k in enumerate(names)}
    return counts, V.compare_counts(counts[decoupled], counts[coupled])


def report_grid(quick: bool, **changes) -> tuple[GridConfig, int | None]:
    """The report's grid (quick: 4 × 6 cells of a small network, in this process; full: 8 × 12) and its
    workers; ``changes`` override fields (the other catalogue entries of the heatmap family use it)."""
    if quick:
        return GridConfig(**{**QUICK, **changes}), 1
    return GridConfig(**{"n_lr": 8, "n_wd": 12, **changes}), None


def claims(result, threshold: float, pair: tuple[int, int] = (0, -1)) -> list:
    """Seed 001's claims on one (coupled, decoupled) heatmap pair (optimizer indices ``pair``, default the first
    and the last) as ``(claim, Verdict)`` rows:

    * "the parameters are decoupled for AdamW" — :func:`dyntools.verdicts.decoupling` of the two good regions'
      shapes (:func:`dyntools.verdicts.region_shape`, near-ties within :data:`BORDER`);
    * "a larger range of parameters gets the optimal loss" — :func:`dyntools.verdicts.grid_fraction_larger` on
      the good cells counted as ranges (sure: ≥ threshold + :data:`BORDER`, possible: ≥ threshold − :data:`BORDER`),
      so a last bit makes it neither shown nor contradicted;
    * "AdamW generalizes better" (best validation accuracy) — one run per cell and no replicate: not shown.
    """
    from dyntools import verdicts as V

    names = list(result.config["optimizers"])
    pair = tuple(o % len(names) for o in pair)
    coupled, decoupled = (names[o] for o in pair)
    acc, lrs, wds = result["val_acc"], result["lrs"], result["wds"]
    shapes = [V.region_shape(acc[o], lrs[o], wds, threshold, border=BORDER) for o in pair]
    counts = {names[o]: V.count_above(acc[o], threshold, BORDER) for o in pair}
    size = acc[0].size
    larger = V.grid_fraction_larger(counts[decoupled], counts[coupled], size,
                                    alive=int(sum(np.isfinite(acc[o]).sum() for o in pair)))
    best = {names[o]: float(np.nanmax(acc[o])) if np.isfinite(acc[o]).any() else math.nan for o in pair}
    one_run = V.Verdict(V.NOT_SHOWN, "none: one run per cell", 2, sum(np.isfinite(best[k]) for k in best),
                        f"best {decoupled} {best[decoupled]:.3f} vs {coupled} {best[coupled]:.3f}",
                        "each best is one run of one cell; comparing them needs replicates (--paired --replicates).")
    return [(f"the (lr, λ) parameters are decoupled for {decoupled} (001, 5.c)", V.decoupling(*shapes)),
            (f"{decoupled} has a larger range of good parameters (≥ {threshold:.0%}) (001, 5.c)", larger),
            (f"{decoupled} reaches a better validation accuracy (001, 5)", one_run)]


def grid_config(p: AdamWGridParams) -> GridConfig:
    """The sweep's :class:`GridConfig` from the command's parameters (the weight-decay axis ``--wd-grid`` is checked
    by :func:`check_decay_axis`, with the option and again by GridConfig: one check site)."""
    lr = check_grid("lr-grid", p.lr_grid) if p.lr_grid is not None else (None, None, GridConfig.n_lr)
    if lr[1] is not None and lr[1] > LR_MAX:
        raise ValueError(f"Invalid --lr-grid: HIGH {lr[1]:g} is above {LR_MAX:g} (float arithmetic overflows; "
                         "every cell diverges far below it)")
    if p.optimizer_file is not None:                    # a missing file, a device (/dev/zero), a directory …
        from dyntools.user_code import compiled

        try:
            compiled(p.optimizer_file, "--optimizer-file")
        except ValueError as exc:                       # "--optimizer-file X: no such file" → named as invalid
            raise ValueError(f"Invalid {exc}") from None
    names = tuple(user_factories.absolute(n, p.optimizer_file) for n in p.optimizers)
    settings = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name not in NOT_SETTINGS}
    return GridConfig(**{**settings, "optimizers": names}, lr_range=None if lr[0] is None else lr[:2], n_lr=lr[2],
                      wd_range=p.weight_decay[:2], n_wd=p.weight_decay[2], learning_curve_points=p.curve_points)


def cell_peak_arrays(cfg: GridConfig, workers: int) -> tuple[dict[str, int], str]:
    """The arrays ``workers`` cells running at once hold at their peak (bytes), for
    :func:`dyntools.memory.require`. Per cell (float64): the network's p parameters 24 times (θ, its gradient,
    two optimizer moments, the initial, recorded and final θ, the fused step's and the evaluation's copies,
    the weight statistics' temporaries: measured ≈ 20 at the peak of a cell for 0.8–4 M parameters), the GEMM
    scratch of a training batch and of a 256-row evaluation chunk, three values per step (learning
    rates, multipliers, mini-batch losses) and the data twice; with more than one worker, each worker process
    also holds the loaded runtime (:data:`dyntools.memory.RUNTIME_FLOOR`)."""
    from dyntools.models import mlp_gemm

    dim = {"digits": 64, "mnist": 784, "fashion-mnist": 784, "cifar10": 3072}.get(cfg.dataset, 2)   # input width
    widths = (dim, *cfg.hidden, cfg.classes)
    params = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    L, maxw = len(widths) - 1, max(widths)
    scratch = mlp_gemm.ws_size(L, maxw, cfg.batch_size) + mlp_gemm.ws_size(L, maxw, 256)
    per_cell = {"parameters and optimizer state (24 × p)": 24 * 8 * params, "scratch": 8 * scratch,
                "per-step values (3 × steps)": 24 * cfg.steps, "data": 16 * (cfg.n + cfg.n_val) * (dim + 1)}
    arrays = {f"{k}, × {workers} workers" if workers > 1 else k: v * workers for k, v in per_cell.items()}
    if workers > 1:
        arrays["the worker processes' runtime"] = workers * memory.RUNTIME_FLOOR
    return arrays, "--hidden"


