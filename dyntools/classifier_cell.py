"""One cell of a (learning rate × weight decay) grid: an MLP classifier trained by one optimizer.

:func:`train_cell` is the unit of work of a heatmap sweep (``dyntools.sweep``): it builds the data set
(spirals, or scikit-learn's 8×8 digits), initializes the :class:`~dyntools.models.mlp_classifier.MLPClassifier`
and draws its minibatches from ``streams.path_states(seed, 1, KEY, index)``, trains with the named
optimizer and schedule, and returns the final train/validation loss and accuracy. It is a computation,
not an experiment: the grids and their settings live in ``simulations/adamw_heatmaps.py`` (and the
benchmark's in ``dyntools/bench/sweep.py``).
"""

from __future__ import annotations

import math
import time

from dyntools import data
from dyntools.engine import streams
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S

KEY = streams.KEYS["sweep.adamw-grid"]
SCHEDULES = ("constant", "cosine", "warmup-cosine", "sgdr", "plateau")
DATASETS = ("spirals", "digits")


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
    from dyntools.models import mlp_classifier as M

    start = time.perf_counter()
    if config.get("dataset", "spirals") == "digits":
        d = data.digits(seed=seed)
    else:
        d = data.spirals(config["n"], classes=config["classes"], turns=config["turns"], noise=config["noise"],
                         n_val=config["n_val"], seed=seed)
    model = M.MLPClassifier.make(d.X.shape[1], config["hidden"], config["classes"])
    theta0 = model.init_params(seed, KEY, index)
    steps = int(math.ceil(config["epochs"] * config["n"] / config["batch_size"]))
    batches = M.epoch_batches(streams.path_states(seed, 1, KEY, index, 1), config["n"], steps,
                              config["batch_size"])
    opt = make_optimizer(cell["optimizer"], cell["lr"], effective_wd(config, cell["wd"]), config["momentum"])
    mults = make_schedule(config["schedule"], steps).multipliers(steps)
    record_every = max(1, steps // 20)
    plateau = (S.ReduceLROnPlateau(factor=config.get("plateau_factor", 0.5),
                                   patience=config.get("plateau_patience", 5), threshold=1e-3)
               if config["schedule"] == "plateau" else None)       # stepped once per epoch
    theta, curve, div = M.train_compiled(model, theta0, d.X, d.y, batches, opt, mults, record_every,
                                         plateau=plateau)
    out = {"curve": curve, "diverged_step": div, "seconds": time.perf_counter() - start}
    if div >= 0:
        out.update(train_loss=math.nan, train_acc=math.nan, val_loss=math.nan, val_acc=math.nan,
                   status="diverged", message=f"diverged at step {div}")
        return out
    sizes, offs = model.sizes_array, model.offsets
    out["train_loss"], out["train_acc"] = M.evaluate(theta, sizes, offs, d.X, d.y)
    out["val_loss"], out["val_acc"] = M.evaluate(theta, sizes, offs, d.X_val, d.y_val)
    out.update(status="completed", message="trained")
    return out
