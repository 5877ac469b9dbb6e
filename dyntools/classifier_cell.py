"""One cell of a (learning rate × weight decay) grid: an MLP classifier trained by one optimizer.

:func:`train_cell` is the unit of work of a heatmap sweep (``dyntools.sweep``): it builds the data set
(spirals, scikit-learn's 8×8 digits, or a seeded subset of MNIST / Fashion-MNIST / CIFAR-10 read from
``config["data_dir"]``), builds the cross-entropy :class:`~dyntools.models.mlp.MLP`
(initialized from the ``sweep.adamw-grid`` stream of the cell), trains it through :func:`dyntools.train`
with the named optimizer and schedule on shuffled epochs, and returns the final train/validation loss and
accuracy and the loss curve. It is a computation,
not an experiment: the grids and their settings live in :mod:`dyntools.heatmap_grid` (and the
benchmark's in ``dyntools/bench/sweep.py``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dyntools import data, validation
from dyntools.engine import streams
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S

KEY = streams.KEYS["sweep.adamw-grid"]
SCHEDULES = ("constant", "cosine", "warmup-cosine", "sgdr", "plateau", "step", "multistep", "exponential")
DATASETS = ("spirals", "digits", *data.IMAGE_SETS)
DTYPES = ("float64", "float32")       # the precision of the training (:class:`~dyntools.models.mlp.MLP`)
PLATEAU_METRICS = ("train-loss", "val-loss")
#: values every finished cell of :func:`train_cell` holds, finite unless it diverged (a sweep's ``finite``:
#: a cell without them, or with a NaN among them, is damaged and recomputed)
CELL_VALUES = ("train_loss", "train_acc", "val_loss", "val_acc", "curve", "diverged_step")
#: Schedule options (config keys) and the schedules that read them; ``None`` means the default below.
SCHEDULE_OPTIONS = {"gamma": ("step", "multistep", "exponential"), "step_epochs": ("step",),
                    "milestones": ("multistep",), "restart_epochs": ("sgdr",), "restart_mult": ("sgdr",)}


def check_schedule(name: str, epochs: float, *, gamma=None, step_epochs=None, milestones=None,
                   restart_epochs=None, restart_mult=None, plateau_metric: str = "train-loss") -> None:
    """Check a schedule and its options (times in epochs, ``0 < t < epochs``); a ``ValueError`` names
    the offending option. An option given to a schedule that does not read it is an error too."""
    validation.one_of("schedule", name, SCHEDULES)
    validation.one_of("plateau_metric", plateau_metric, PLATEAU_METRICS)
    given = {"gamma": gamma, "step_epochs": step_epochs, "milestones": milestones,
             "restart_epochs": restart_epochs, "restart_mult": restart_mult}
    for key, value in given.items():
        if value is not None and name not in SCHEDULE_OPTIONS[key]:
            raise ValueError(f"Invalid {key}: {value!r} (only read by schedule {' / '.join(SCHEDULE_OPTIONS[key])}, "
                             f"not {name!r})")
    if gamma is not None:
        validation.in_interval("gamma", gamma, 0.0, 1.0, closed_low=False, closed_high=True)
    if step_epochs is not None and not 0 < validation.finite("step_epochs", step_epochs) < epochs:
        raise ValueError(f"Invalid step_epochs: {step_epochs} (must be in (0, epochs = {epochs:g}))")
    if milestones is not None:
        ms = [validation.finite("milestones", m) for m in milestones]
        if not ms or any(not 0 < m < epochs for m in ms):
            raise ValueError(f"Invalid milestones: {list(milestones)} (epochs in (0, epochs = {epochs:g}))")
        if any(b <= a for a, b in zip(ms, ms[1:])):
            raise ValueError(f"Invalid milestones: {list(milestones)} (must be strictly increasing)")
    if restart_epochs is not None and not 0 < validation.finite("restart_epochs", restart_epochs) < epochs:
        raise ValueError(f"Invalid restart_epochs: {restart_epochs} (must be in (0, epochs = {epochs:g}))")
    if restart_mult is not None:
        validation.count("restart_mult", restart_mult)


def make_schedule(name: str, steps: int, config: dict | None = None) -> S.Schedule:
    """The multiplier schedule ``name`` over ``steps`` updates; times in ``config`` are in epochs
    (``steps / epochs`` updates each). Defaults: step γ = 0.1 every quarter of the run; multistep
    γ = 0.1 at ½ and ¾ of the run; exponential γ per epoch such that the run ends at 1 % of the
    base rate (m_t = γ^(t/E), E updates per epoch); SGDR a first period of ⌊T/7⌋ updates, doubled
    at each restart."""
    config = config or {}
    per_epoch = steps / config["epochs"] if "epochs" in config else None

    def to_steps(epochs_value):
        return max(1, int(round(epochs_value * per_epoch)))

    if name in ("constant", "plateau"):          # plateau: constant base, reduced by the losses
        return S.Constant()
    if name == "cosine":
        return S.CosineAnnealingLR(steps)
    if name == "warmup-cosine":
        warm = max(1, steps // 20)
        return S.warmup_cosine(warm, max(steps, warm + 1))
    gamma = config.get("gamma")
    if name == "step":
        size = to_steps(config["step_epochs"]) if config.get("step_epochs") is not None else max(1, steps // 4)
        return S.StepLR(size, 0.1 if gamma is None else gamma)
    if name == "multistep":
        ms = config.get("milestones")
        marks = [to_steps(m) for m in ms] if ms is not None else [max(1, steps // 2), max(2, (3 * steps) // 4)]
        return S.MultiStepLR(tuple(marks), 0.1 if gamma is None else gamma)
    if name == "exponential":                     # γ per epoch is γ^(epochs/T) per update
        per_step = 0.01 ** (1.0 / steps) if gamma is None else gamma ** (config["epochs"] / steps)
        return S.ExponentialLR(per_step)
    first = (to_steps(config["restart_epochs"]) if config.get("restart_epochs") is not None
             else max(1, steps // 7))
    mult = config.get("restart_mult")
    return S.CosineAnnealingWarmRestarts(first, 2 if mult is None else int(mult))


def make_optimizer(name: str, lr: float, wd: float, momentum: float) -> O.Optimizer:
    """A built-in optimizer by name, or a user's by reference ``module:NAME`` / ``file.py:NAME``
    (:mod:`dyntools.optim.user_factories`: ``NAME(lr=lr, weight_decay=wd)``); ``momentum`` reaches the
    aliases that declare ``grid_momentum`` (SGD, SGDW)."""
    from dyntools.optim import user_factories
    from dyntools.optim.aliases import ALIASES

    if user_factories.is_reference(name):
        return user_factories.build(name, lr, wd)
    extra = {"momentum": momentum} if ALIASES[name].grid_momentum else {}
    return O.make(name, lr=lr, weight_decay=wd, **extra)


def effective_wd(cfg: dict, wd: float) -> float:
    """``wd`` itself, or with ``normalized_wd`` the λ of ``λ_norm = wd`` (L&H 2019, App. B.1)."""
    if cfg["normalized_wd"]:
        return O.normalized_weight_decay(wd, cfg["batch_size"], cfg["n"], cfg["epochs"])
    return wd


def weight_stats(model, theta: np.ndarray, tol: float) -> dict:
    """Statistics of the weight matrices (biases left out): the fraction of entries with
    ``|w| < tol``, ``‖w‖₁`` and ``‖w‖₂`` over all layers together."""
    w = np.concatenate([W.ravel() for W, _ in model.unpack(theta)])
    return {"w_small": float(np.mean(np.abs(w) < tol)), "w_l1": float(np.sum(np.abs(w))),
            "w_l2": float(np.sqrt(np.sum(w * w)))}


def curve_steps(steps: int, points: int) -> np.ndarray:
    """``points`` recording steps spread evenly over ``1 … steps`` (fewer if the run is shorter)."""
    return np.unique(np.round(np.linspace(0, steps, points + 1)[1:]).astype(np.int64))


# ----------------------------------------------------------------------------------- one cell

#: the last image data set a process read: ``(key, data)`` (every cell of a sweep reads the same subset)
_LAST_IMAGES: list = []


def cell_data(config: dict, seed: int):
    """The data set of a sweep: spirals, digits, or ``config["n"]`` / ``config["n_val"]`` images drawn from
    the image files in ``config["data_dir"]`` (:func:`dyntools.data.image_set`, read once per process)."""
    name = config.get("dataset", "spirals")
    if name == "digits":
        return data.digits(seed=seed)
    if name in data.IMAGE_SETS:
        key = (name, config["data_dir"], config["n"], config["n_val"], seed)
        if not _LAST_IMAGES or _LAST_IMAGES[0] != key:
            _LAST_IMAGES[:] = [key, data.image_set(name, config["data_dir"], n_train=config["n"],
                                                   n_test=config["n_val"], seed=seed)]
        return _LAST_IMAGES[1]
    return data.spirals(config["n"], classes=config["classes"], turns=config["turns"], noise=config["noise"],
                        n_val=config["n_val"], seed=seed)


def train_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """Train one network for one (optimizer, lr, wd) cell; final train/validation loss & accuracy,
    the weight statistics (:func:`weight_stats`) and the mini-batch loss curve.

    A cell may name its own ``schedule``, its network's ``dropout`` and ``batch_norm``, and its random
    ``stream`` (the replicate whose initialization and batches it uses; default its index). With
    ``config["curve_points"] = K`` it also records the learning curves: train loss/accuracy and validation
    loss/accuracy at ``K`` steps spread over the run (``curve_*`` arrays, the steps in ``curve_steps``)."""
    from types import SimpleNamespace

    from dyntools.dynamics.train import train
    from dyntools.models.mlp import MLP

    start = time.perf_counter()
    d = cell_data(config, seed)
    stream = int(cell.get("stream", index))
    model = MLP((d.X.shape[1], *config["hidden"], config["classes"]), head="cross-entropy", init="uniform",
                init_stream="sweep.adamw-grid", init_key=(stream,), sampling_stream="sweep.adamw-grid",
                dtype=config.get("dtype", "float64"),
                dropout=cell.get("dropout", config.get("dropout", 0.0)),
                batch_norm=cell.get("batch_norm", config.get("batch_norm", False)))
    steps = int(math.ceil(config["epochs"] * config["n"] / config["batch_size"]))
    opt = make_optimizer(cell["optimizer"], cell["lr"], effective_wd(config, cell["wd"]), config["momentum"])
    name = cell.get("schedule", config["schedule"])
    plateau = name == "plateau"
    schedule = (S.ReduceLROnPlateau(factor=config.get("plateau_factor", 0.5),
                                    patience=config.get("plateau_patience", 5), threshold=1e-3)
                if plateau else make_schedule(name, steps, config))    # plateau: stepped once per epoch
    metric = None
    if plateau and config.get("plateau_metric", "train-loss") == "val-loss" and config.get("batch_norm"):
        raise ValueError("Invalid batch_norm: the plateau schedule on the validation loss would evaluate without "
                         "the running statistics (use plateau_metric train-loss)")
    if plateau and config.get("plateau_metric", "train-loss") == "val-loss":
        def metric(thetas):                      # the validation loss of the run's parameters
            return float(np.mean([model.evaluate(th, d.X_val, d.y_val)[0] for th in thetas]))
    points = int(config.get("curve_points", 0))
    record_steps = curve_steps(steps, points) if points else np.array([steps])
    res = train(model, SimpleNamespace(X=d.X, y=d.y), opt, schedule=schedule, steps=steps,
                batch=config["batch_size"], sampler="epoch", drop_last=False, record_steps=record_steps,
                seed=seed, common_stream=True, stream_key=(stream, 1), step_loss=True, plateau_metric=metric)
    curve = epoch_curve(res["step_loss"][0, 0], max(1, steps // 20), plateau)
    div = int(res["diverged_at"][0, 0])
    out = {"curve": curve, "diverged_step": div, "seconds": time.perf_counter() - start}
    bn = model.batch_norm                        # evaluation mode: batch norm with its running statistics
    if points:
        out.update(learning_curves(model, res["theta"][0, 0], d, res["bn_running_rec"][0, 0] if bn else None))
        out["curve_steps"] = record_steps
    if div >= 0:
        out.update(train_loss=math.nan, train_acc=math.nan, val_loss=math.nan, val_acc=math.nan,
                   w_small=math.nan, w_l1=math.nan, w_l2=math.nan,
                   status="diverged", message=f"diverged at step {div}")
        return out
    theta = res["final_theta"][0, 0]
    running = res["bn_running"][0, 0] if bn else None
    out["train_loss"], out["train_acc"] = model.evaluate(theta, d.X, d.y, running=running)
    out["val_loss"], out["val_acc"] = model.evaluate(theta, d.X_val, d.y_val, running=running)
    out.update(weight_stats(model, theta, config.get("sparsity_tol", 1e-3)))
    out.update(status="completed", message="trained")
    return out


def warm_up(config: dict) -> None:
    """Two steps of a cell of ``config`` (its data set, network and precision): loads every compiled
    kernel a cell uses (a sweep worker calls it once before its first cell, :func:`dyntools.sweep.warm_up`)."""
    steps = 2
    tiny = {**config, "epochs": steps * config["batch_size"] / config["n"], "curve_points": 0}
    train_cell(tiny, {"optimizer": "adamw", "lr": 1e-3, "wd": 0.0, "schedule": "constant"}, 0, 0)


train_cell.warm_up = warm_up


def learning_curves(model, thetas: np.ndarray, d, running=None) -> dict:
    """Train/validation loss and accuracy of every recorded parameter vector (NaN where none); with batch
    norm, ``running`` holds the running statistics recorded with them (evaluation mode)."""
    keys = ("curve_train_loss", "curve_train_acc", "curve_val_loss", "curve_val_acc")
    out = {k: np.full(len(thetas), np.nan) for k in keys}
    for k, theta in enumerate(thetas):
        if np.all(np.isfinite(theta)):
            r = None if running is None else running[k]
            out[keys[0]][k], out[keys[1]][k] = model.evaluate(theta, d.X, d.y, running=r)
            out[keys[2]][k], out[keys[3]][k] = model.evaluate(theta, d.X_val, d.y_val, running=r)
    return out


def epoch_curve(step_loss: np.ndarray, every: int, pairwise: bool = False) -> np.ndarray:
    """Mean mini-batch loss over consecutive windows of ``every`` steps (the last partial one dropped),
    summed in step order — or with NumPy's pairwise ``mean`` when ``pairwise`` (how the plateau runs
    have always averaged them; the two differ by roundings only)."""
    n_rec = step_loss.size // every
    windows = step_loss[:n_rec * every].reshape(n_rec, every)
    return windows.mean(axis=1) if pairwise else np.cumsum(windows, axis=1)[:, -1] / every
