"""One cell of a (learning rate × weight decay) grid: an MLP classifier trained by one optimizer.

:func:`train_cell` is the unit of work of a heatmap sweep (``dyntools.sweep``): it builds the data set
(spirals, or scikit-learn's 8×8 digits), builds the cross-entropy :class:`~dyntools.models.mlp.MLP`
(initialized from the ``sweep.adamw-grid`` stream of the cell), trains it through :func:`dyntools.train`
with the named optimizer and schedule on shuffled epochs, and returns the final train/validation loss and
accuracy and the loss curve. It is a computation,
not an experiment: the grids and their settings live in ``simulations/adamw_heatmaps.py`` (and the
benchmark's in ``dyntools/bench/sweep.py``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dyntools import data
from dyntools.engine import streams
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S

KEY = streams.KEYS["sweep.adamw-grid"]
SCHEDULES = ("constant", "cosine", "warmup-cosine", "sgdr", "plateau")
DATASETS = ("spirals", "digits")
DTYPES = ("float64", "float32")       # the precision of the training (:class:`~dyntools.models.mlp.MLP`)


def make_schedule(name: str, steps: int) -> S.Schedule:
    if name in ("constant", "plateau"):          # plateau: constant base, reduced by the losses
        return S.Constant()
    if name == "cosine":
        return S.CosineAnnealingLR(steps)
    if name == "warmup-cosine":
        warm = max(1, steps // 20)
        return S.warmup_cosine(warm, max(steps, warm + 1))
    return S.CosineAnnealingWarmRestarts(max(1, steps // 7), 2)


def make_optimizer(name: str, lr: float, wd: float, momentum: float) -> O.Optimizer:
    if name in ("sgd", "sgdw"):
        return O.make(name, lr=lr, momentum=momentum, weight_decay=wd)
    return O.make(name, lr=lr, weight_decay=wd)


def effective_wd(cfg: dict, wd: float) -> float:
    """``wd`` itself, or with ``normalized_wd`` the λ of ``λ_norm = wd`` (L&H 2019, App. B.1)."""
    if cfg["normalized_wd"]:
        return O.normalized_weight_decay(wd, cfg["batch_size"], cfg["n"], cfg["epochs"])
    return wd


# ----------------------------------------------------------------------------------- one cell

def train_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """Train one network for one (optimizer, lr, wd) cell; final train/validation loss & accuracy."""
    from types import SimpleNamespace

    from dyntools.dynamics.train import train
    from dyntools.models.mlp import MLP

    start = time.perf_counter()
    if config.get("dataset", "spirals") == "digits":
        d = data.digits(seed=seed)
    else:
        d = data.spirals(config["n"], classes=config["classes"], turns=config["turns"], noise=config["noise"],
                         n_val=config["n_val"], seed=seed)
    model = MLP((d.X.shape[1], *config["hidden"], config["classes"]), head="cross-entropy", init="uniform",
                init_stream="sweep.adamw-grid", init_key=(index,), sampling_stream="sweep.adamw-grid",
                dtype=config.get("dtype", "float64"))
    steps = int(math.ceil(config["epochs"] * config["n"] / config["batch_size"]))
    opt = make_optimizer(cell["optimizer"], cell["lr"], effective_wd(config, cell["wd"]), config["momentum"])
    plateau = config["schedule"] == "plateau"
    schedule = (S.ReduceLROnPlateau(factor=config.get("plateau_factor", 0.5),
                                    patience=config.get("plateau_patience", 5), threshold=1e-3)
                if plateau else make_schedule(config["schedule"], steps))    # plateau: stepped once per epoch
    res = train(model, SimpleNamespace(X=d.X, y=d.y), opt, schedule=schedule, steps=steps,
                batch=config["batch_size"], sampler="epoch", drop_last=False, record_steps=np.array([steps]),
                seed=seed, common_stream=True, stream_key=(index, 1), step_loss=True)
    curve = epoch_curve(res["step_loss"][0, 0], max(1, steps // 20), plateau)
    div = int(res["diverged_at"][0, 0])
    out = {"curve": curve, "diverged_step": div, "seconds": time.perf_counter() - start}
    if div >= 0:
        out.update(train_loss=math.nan, train_acc=math.nan, val_loss=math.nan, val_acc=math.nan,
                   status="diverged", message=f"diverged at step {div}")
        return out
    theta = res["final_theta"][0, 0]
    out["train_loss"], out["train_acc"] = model.evaluate(theta, d.X, d.y)
    out["val_loss"], out["val_acc"] = model.evaluate(theta, d.X_val, d.y_val)
    out.update(status="completed", message="trained")
    return out


def epoch_curve(step_loss: np.ndarray, every: int, pairwise: bool = False) -> np.ndarray:
    """Mean mini-batch loss over consecutive windows of ``every`` steps (the last partial one dropped),
    summed in step order — or with NumPy's pairwise ``mean`` when ``pairwise`` (how the plateau runs
    have always averaged them; the two differ by roundings only)."""
    n_rec = step_loss.size // every
    windows = step_loss[:n_rec * every].reshape(n_rec, every)
    return windows.mean(axis=1) if pairwise else np.cumsum(windows, axis=1)[:, -1] / every
