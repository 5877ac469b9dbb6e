"""``dyntools simulate model``: train your own model, declared in a Python file, on your data.

The file defines ``MODEL`` (a :class:`dyntools.SymbolicModel`, or any :class:`dyntools.Model`) and is
executed (:func:`dyntools.symbolic.userfile.load_model`: only run files you trust); the data is an
``.npz`` with ``X`` (n × inputs) and ``y`` (n labels), optionally ``X_test``/``y_test``. The run is
:func:`dyntools.train` with the chosen optimizer; the result (kind ``"symbolic-model"``) adds, at every
recording of seed 0, the rank of the Jacobian ``φ_θ(X)`` and the median of its column norms (from the
model's ``jacobian`` hook), which ``dyntools plot`` draws next to the loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dyntools.plots import symbolic_model as symbolic_model_figures
from dyntools.result_schema import derive
from dyntools.spec import Experiment, Param, RunContext, param

OPTIMIZERS = ("sgd", "adam", "adamw", "adagrad", "rmsprop")
SAMPLERS = ("with-replacement", "epoch", "distinct", "full")


@dataclass(frozen=True)
class ModelParams:
    """The options of ``dyntools simulate model``."""

    file: Path | None = param(None, kind="file", metavar="MODEL.py",
                              help="Python file defining MODEL = dt.SymbolicModel(...) (it is executed); default: "
                                   "the example, a depth-3 diagonal net u⊙v⊙w over the data's inputs")
    data: Path | None = param(None, kind="file", metavar="DATA.npz",
                              help="arrays X (n × inputs), y (n), optionally X_test, y_test; default: the example, "
                                   "sparse regression n = 40, d = 20, r = 3 (seeded by --seed)")
    optimizer: str = param("sgd", choices=OPTIMIZERS, help="optimizer (PyTorch semantics)")
    lr: float = param(0.01, low=0.0, low_open=True, high=1e6, help="learning rate")
    steps: int = param(1000, low=1, high=10**8, help="updates")
    batch: int = param(1, low=1, high=10**6, help="examples per step (ignored by --sampler full)")
    sampler: str = param("with-replacement", choices=SAMPLERS, help="how the batches are drawn")
    label_noise: float = param(0.0, low=0.0, high=1e6, help="label-noise standard deviation delta (regression)")
    seeds: int = param(1, low=1, high=1000, help="independent initializations and sample streams")
    records: int = param(50, low=2, high=10**4, help="recorded steps (log grid)")


def example_data(seed: int):
    """The data of the example run (no --data): sparse regression, n = 40, d = 20, r = 3."""
    from dyntools.data import sparse_regression

    return sparse_regression(40, 20, 3, seed=seed)


def example_model(d: int):
    """The model of the example run (no --file): a depth-3 diagonal net ``h(x) = Σ_j u_j v_j w_j x_j``."""
    from dyntools.models.symbolic_examples import diagonal_net

    return diagonal_net(d, depth=3)


def check(p: ModelParams) -> None:
    """Before any work: --file is a readable Python file (compiled, not yet executed) and --data an .npz
    with the arrays the run needs; each given file is checked before a missing one is reported."""
    from dyntools.user_code import compiled

    if p.file is not None and "MODEL" not in compiled(p.file, "--file").co_names:   # names the module stores
        raise ValueError(f"Invalid --file: {p.file} defines no MODEL (expected MODEL = dt.SymbolicModel(...))")
    if p.data is not None:
        load_data(p.data)


def load_data(path):
    """The ``.npz`` of ``--data`` as an object with ``X``, ``y`` (and ``X_test``, ``y_test`` when present)."""
    from types import SimpleNamespace

    from dyntools.arrays_io import load_npz

    arrays = load_npz("--data", path, ("X", "y"), optional=("X_test", "y_test"),
                      ndims={"X": 2, "y": 1, "X_test": 2, "y_test": 1})
    return SimpleNamespace(X=arrays["X"], y=arrays["y"], X_test=arrays.get("X_test"), y_test=arrays.get("y_test"))


def jacobian_metrics(model, theta_rec, X):
    """Rank and median column norm of ``φ_θ(X)`` at every recording (NaN where nothing was recorded)."""
    import numpy as np

    from dyntools import metrics

    K = theta_rec.shape[0]
    rank, col = np.full(K, np.nan), np.full(K, np.nan)
    for k in range(K):
        if np.all(np.isfinite(theta_rec[k])):
            J = model.jacobian(theta_rec[k], X)
            J = J.reshape(-1, J.shape[-1])
            rank[k] = metrics.jacobian_rank(J)
            col[k] = float(np.median(metrics.column_norms(J)))
    return rank, col


def run(p: ModelParams, ctx: RunContext):
    from dyntools import optim
    from dyntools.dynamics.train import train
    from dyntools.engine.result import RunResult
    from dyntools.symbolic.userfile import load_model

    data = load_data(p.data) if p.data is not None else example_data(ctx.seed)
    model = load_model(p.file) if p.file is not None else example_model(data.X.shape[1])
    if hasattr(model, "check_data"):
        model.check_data(data.X, data.y)
        if data.X_test is not None:
            model.check_data(data.X_test, data.y_test)
    res = train(model, data, getattr(optim, p.optimizer)(p.lr), steps=p.steps, batch=p.batch, sampler=p.sampler,
                label_noise=p.label_noise, seeds=p.seeds, records=p.records, seed=ctx.seed, progress=ctx.progress)
    arrays = dict(res.arrays)
    try:
        rank, col = jacobian_metrics(model, res["theta"][0, 0], data.X)
        arrays["jacobian_rank"], arrays["column_norm_median"] = rank, col
    except NotImplementedError:                 # a hand-written model without a jacobian hook
        pass
    config = {**res.config, "file": str(p.file or "example: depth-3 diagonal net"),
              "data": str(p.data or "example: sparse regression n=40 d=20 r=3"), "optimizer": p.optimizer, "lr": p.lr,
              "seeds": p.seeds}
    return RunResult("symbolic-model", config, arrays, res.status, res.message, seed=ctx.seed,
                     summary=res.summary, timings=res.timings)


def summary(p: ModelParams, result) -> dict:
    last = result["train_loss"][..., -1]
    return {"kind": result.kind, "status": result.status, "message": result.message, **result.summary,
            "final_train_loss": float(last.ravel()[0]), "seconds": result.timings.get("simulate")}


def table(p: ModelParams, result) -> str:
    from dyntools.tables import key_values

    s = summary(p, result)
    return key_values({k: s[k] for k in ("kind", "status", "message", "final_train_loss", "seconds")})


RESULTS = (derive("symbolic-model", ModelParams, "optimizer lr steps batch sampler label_noise seeds records",
                  extra={"file": Param("the model file", "str"), "data": Param("the data file", "str")},
                  summary={"paths": "int", "diverged": "int", "first": "number"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="model", verb="simulate",
    help="train your own model (MODEL in a Python file, e.g. a dt.SymbolicModel) on your data (.npz)",
    example="dyntools simulate model --file my_model.py --data data.npz --optimizer sgd --lr 0.05 "
            "--steps 2000 --label-noise 0.5 --out runs/mine",
    params=ModelParams, figures={"symbolic-model": symbolic_model_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "symbolic-model": ["--steps", "50", "--records", "5"],
}
