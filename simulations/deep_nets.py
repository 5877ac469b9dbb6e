"""Deeper networks on real data: large-step SGD and feature sparsity on scikit-learn's digits
(Andriushchenko et al. 2023, seed 004, the deep-network section — DenseNet/ResNets on images — scaled to
this machine; issue 14).

A ReLU MLP ``64 → m × D → 10`` (D ≥ 4 hidden layers of width m ≥ 256 at full size; the one MLP,
:class:`dyntools.models.mlp.MLP`, softmax cross-entropy head, He's Gaussian init
``N(0, 2/fan_in)`` — ``1/fan_in`` for the output layer —, biases 0) on the 8×8 digits
(1258 train / 539 test images, :func:`dyntools.data.digits`), trained with minibatch SGD through the
engine (:func:`dyntools.train`, shuffled epochs of batch b). Per setting, the paper's comparison:

* a **small** constant step η_s;
* a **large** step η_l divided by ``decay_factor`` after 10 %, 30 % or 50 % of the run (one run each:
  the longer the large-step phase, the stronger the effect the paper reports).

Two settings, as in the paper:

* ``basic``: plain SGD;
* ``sota`` ("state of the art"): heavy-ball momentum μ, L2 weight decay λ (PyTorch's SGD) and random
  shifts of the images by up to ``shift`` pixels (zero fill; every colour channel alike). Steps are scaled by (1 − μ) so that the
  effective step η/(1 − μ) equals the basic setting's.

**Augmentation design** (documented in docs/architecture.md): the shifted copies are precomputed — the
training set becomes the (2s+1)² shifted copies of every image, the unshifted originals first — and the
engine's epoch sampler draws from them. A uniformly drawn row is a uniformly drawn (image, shift) pair:
the random-shift distribution, with the engine's own streams, no new kernel and bitwise reproducibility;
the price is memory ((2s+1)² × the data, 0.7 MB per copy of the digits). The recorded train loss is measured
on the originals only (:class:`OriginalsMLP`).

Recorded at ``records`` steps: train/test loss and accuracy, and the feature sparsity coefficient
(:func:`dyntools.metrics.feature_sparsity`, correlation threshold 0.99) of a middle hidden layer
(⌈D/2⌉) and of the last one, on the first ``sparsity_examples`` training images.

**Deeper than an MLP** (``--arch resnet``; issue 26 item 11): the paper's networks are DenseNets and ResNets
on images. :class:`dyntools.models.resnet.ResNet` is the smallest of that family that the digits allow: a
3×3 convolution stem, B residual blocks of two 3×3 convolutions (C channels, ReLU, identity skips), global
average pooling and a linear head, compiled with numba (the engine trains it like the MLP). Its input is
standardized by the training pixels' mean and std (on raw [0, 1] pixels plain SGD sits at loss log 10 for
hundreds of steps: the model's docstring). Its two feature depths are the paper's: the C × 8 × 8 maps after
the first block (the middle; with B blocks, after block ⌈B/2⌉) and the maps just before the pooling, each
image's map flattened to C·64 neurons (one channel at one position). ``--arch resnet`` implies other
defaults (:data:`RESNET_DEFAULTS`: batch 8, 3200 steps ≈ 20 epochs, η 0.02 vs 0.2 decayed at half the run):
at batch 32 its plain SGD crawls. ``dyntools bench deep-nets`` times one epoch of it against PyTorch (CPU) on
the same network.

**Real image files** (``--dataset mnist | fashion-mnist | cifar10 --data-dir DIR``, issue 42): the MLP (its input
the 784 or 3072 pixels) on ``n_train`` / ``n_test`` images drawn from the published files
(:func:`dyntools.data.image_set`, seeded through the ``data.image-files`` stream); the random shifts move
28 × 28 (32 × 32 × 3) images. The ResNet reads the 8 × 8 digits only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import memory, validation
from dyntools.plots import deep_nets as deep_nets_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param
from dyntools.tables import status_and_table, summary_with

TITLE = "Deeper networks on digits: large-step SGD and feature sparsity (seed 004)"
TITLE_RESNET = "Deeper networks on digits: a convolutional ResNet, large-step SGD and feature sparsity (seed 004)"
SETTINGS = ("basic", "sota")
NET, RUN, SOTA = "network", "training", "state-of-the-art setting"
ARCHS = ("mlp", "resnet")
#: the defaults that ``--arch resnet`` implies (options given explicitly override them): batch 8 — at batch
#: 32 the ResNet's plain SGD crawls (module docstring) — and 20 epochs
RESNET_DEFAULTS = {"batch": 8, "steps": 3_200, "eta_small": 0.02, "eta_large": 0.2, "decay_at": (0.5,),
                   "records": 7, "sparsity_examples": 300}
RESNET_DEFAULTS_TEXT = ", ".join(f"{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, tuple) else v}"
                                 for k, v in RESNET_DEFAULTS.items())
#: data set → (channels, side) of its images (rows of ``X`` are channel-major, row-major images)
IMAGE_SHAPES = {"digits": (1, 8), "mnist": (1, 28), "fashion-mnist": (1, 28), "cifar10": (3, 32)}
DATASETS = tuple(IMAGE_SHAPES)
METRICS = ("train_loss", "train_acc", "test_loss", "test_acc", "fsc_middle", "fsc_last")


@dataclass(frozen=True)
class DeepNetParams:
    """``dyntools simulate deep-nets``: both settings by default."""

    arch: str = param("mlp", choices=ARCHS, group=NET,
                      help="network: the ReLU MLP, or a small convolutional ResNet (3×3 convolutions, residual blocks, "
                           "global average pooling; it implies " + RESNET_DEFAULTS_TEXT + " unless given)")
    dataset: str = param("digits", choices=DATASETS, group=NET,
                         help="digits (scikit-learn's 8x8, no download), or images read from --data-dir: mnist, "
                              "fashion-mnist (IDX files), cifar10 (python batches); the mlp only")
    data_dir: str | None = param(None, kind="str", metavar="DIR", group=NET,
                                 help="the directory of the image files of --dataset mnist|fashion-mnist|cifar10")
    n_train: int = param(5_000, low=1, high=60_000, group=NET,
                         help="training images drawn from the files (mnist, fashion-mnist, cifar10)")
    n_test: int = param(1_000, low=1, high=10_000, group=NET,
                        help="test images drawn from the files (mnist, fashion-mnist, cifar10)")
    settings: tuple = param(SETTINGS, kind="strs", choices=SETTINGS, metavar="NAMES", group=NET, max_len=len(SETTINGS),
                            label="setting", help="comma-separated settings")
    depth: int = param(4, low=1, high=64, group=NET, help="hidden layers D (mlp)")
    width: int = param(256, low=1, high=4096, group=NET, help="hidden width m (mlp)")
    channels: int = param(8, low=1, high=256, group=NET, help="channels C of every convolution (resnet)")
    blocks: int = param(2, low=1, high=16, group=NET, help="residual blocks B (resnet)")
    dtype: str = param("float64", choices=("float64", "float32"), group=RUN,
                       help="precision of the training (the metrics are computed in float64)")
    steps: int = param(1_000, low=10, high=10**8, group=RUN, help="iterations")
    batch: int = param(32, low=1, high=1258, group=RUN, help="minibatch size")
    seeds: int = param(3, low=1, high=1000, group=RUN, help="seeds (initialization and sample order)")
    eta_small: float = param(0.02, low=0.0, low_open=True, group=RUN, help="small constant (effective) step")
    eta_large: float = param(0.2, low=0.0, low_open=True, group=RUN, help="large (effective) step before the decay")
    decay_at: tuple = param((0.1, 0.3, 0.5), kind="floats", low=0.0, high=1.0, low_open=True, high_open=True,
                            max_len=100,
                            metavar="FRACS", group=RUN, help="one large-step run per decay point")
    decay_factor: float = param(10.0, low=1.0, group=RUN, help="the large step is divided by this")
    records: int = param(12, low=2, high=10**4, group=RUN, help="recorded steps (linear grid)")
    workers: int | None = param(None, kind="int", low=1, high=1024, group=RUN,
                                help="threads advancing the schedules' paths (default: numba's thread count)")
    sparsity_examples: int = param(400, low=2, high=1258, group=RUN,
                                   help="training images on which the feature sparsity is measured")
    momentum: float = param(0.9, low=0.0, high=1.0, high_open=True, group=SOTA, help="heavy-ball momentum")
    weight_decay: float = param(5e-4, low=0.0, group=SOTA, help="L2 weight decay")
    shift: int = param(1, low=0, high=3, group=SOTA, help="random shifts by up to this many pixels")


#: ``dyntools reproduce --quick``: a narrower network (32), fewer steps (still 4 hidden layers; REPORT_SEEDS seeds)
QUICK = {"width": 32, "steps": 300, "records": 5, "sparsity_examples": 150}
#: ``--quick`` of the ResNet entry: 4 epochs instead of 20, 2 seeds instead of 4 (the whole quick report runs in the
#: test suite: this entry's share stays a few seconds)
RESNET_QUICK = {"steps": 630, "seeds": 2, "records": 5, "sparsity_examples": 150}


def check(p: DeepNetParams) -> None:
    if not p.settings or len(set(p.settings)) != len(p.settings):
        raise ValueError("Invalid setting: name each of basic, sota at most once")
    if list(p.decay_at) != sorted(set(p.decay_at)):
        raise ValueError("Invalid decay_at: must be increasing")
    if p.arch == "resnet" and p.dtype != "float64":
        raise ValueError("Invalid dtype: the ResNet trains in float64 only (--arch resnet)")
    if p.arch == "resnet" and p.dataset != "digits":
        raise ValueError(f"Invalid arch: resnet reads the 8x8 digits only (--dataset {p.dataset} needs --arch mlp)")
    if p.dataset != "digits":
        if p.data_dir is None:
            raise ValueError(f"Invalid data_dir: None (--dataset {p.dataset} reads its files from --data-dir)")
        channels, side = IMAGE_SHAPES[p.dataset]
        copies = (2 * p.shift + 1) ** 2 if "sota" in p.settings else 1
        pixels = p.n_train * channels * side * side
        memory.require_each({   # the images as read (uint8) and as float64, and the shifted copies (float64)
            "the training images (--n-train × pixels × (9 B + 8 B × shifted copies))":
                (pixels * (9 + 8 * copies), "--n-train"),
            "the test images (--n-test × pixels × 9 B)": (p.n_test * channels * side * side * 9, "--n-test")})
        load_data(p, 0)                       # a missing or damaged file fails here, before anything runs
    elif p.data_dir is not None:
        raise ValueError(f"Invalid data_dir: {p.data_dir} (only for --dataset mnist|fashion-mnist|cifar10)")


def load_data(p: DeepNetParams, seed: int):
    """The digits split by ``seed``, or ``n_train`` / ``n_test`` images drawn from the files of ``p.dataset``."""
    from dyntools import data as datasets

    if p.dataset == "digits":
        return datasets.digits(seed=seed)
    return datasets.image_set(p.dataset, p.data_dir, n_train=p.n_train, n_test=p.n_test, seed=seed)


def arch_defaults(preset: str | None, given: dict) -> dict:
    """The defaults implied by ``arch="resnet"`` (:data:`RESNET_DEFAULTS`; nothing otherwise); options given
    explicitly still override them."""
    return dict(RESNET_DEFAULTS) if given.get("arch") == "resnet" else {}


# ------------------------------------------------------------------------------------ data, model

def shift_images(X: np.ndarray, dx: int, dy: int, side: int = 8, channels: int = 1) -> np.ndarray:
    """Every row of ``X`` (n, channels · side²: channel-major, row-major images) moved ``dx`` pixels right and
    ``dy`` down, zero fill: ``out[i, ch, r, c] = X[i, ch, r − dy, c − dx]`` where that pixel exists, else 0."""
    img = np.asarray(X, dtype=np.float64).reshape(-1, channels, side, side)
    out = np.zeros_like(img)
    rs, rd = (slice(0, side - dy), slice(dy, side)) if dy >= 0 else (slice(-dy, side), slice(0, side + dy))
    cs, cd = (slice(0, side - dx), slice(dx, side)) if dx >= 0 else (slice(-dx, side), slice(0, side + dx))
    out[:, :, rd, cd] = img[:, :, rs, cs]
    return out.reshape(X.shape)


def augmented(X: np.ndarray, y: np.ndarray, shift: int, side: int = 8,
              channels: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The (2s+1)² shifted copies of ``(X, y)``, the unshifted originals first (module docstring)."""
    shift = validation.count("shift", shift, minimum=0)
    offsets = [(0, 0)] + [(dx, dy) for dy in range(-shift, shift + 1) for dx in range(-shift, shift + 1)
                          if (dx, dy) != (0, 0)]
    return (np.concatenate([shift_images(X, dx, dy, side, channels) for dx, dy in offsets]),
            np.tile(np.asarray(y), len(offsets)))


def network(p: DeepNetParams, X_original: np.ndarray):
    """The network of ``p.arch`` whose recorded train loss (the engine's hook) is taken over the original
    training images ``X_original`` (the first rows of an augmented training set); the ResNet standardizes its
    input with their pixel mean and standard deviation."""
    n_original = X_original.shape[0]
    if p.arch == "resnet":
        from dyntools.models.resnet import ResNet

        class OriginalsResNet(ResNet):
            recorded_loss = _originals_loss(n_original)

        return OriginalsResNet(p.channels, p.blocks, 10, input_mean=float(np.mean(X_original)),
                               input_std=float(np.std(X_original)))
    from dyntools.models.mlp import MLP

    class OriginalsMLP(MLP):
        recorded_loss = _originals_loss(n_original)

    widths = (X_original.shape[1], *([p.width] * p.depth), 10)
    scales = [np.sqrt(2.0 / w) for w in widths[:-2]] + [np.sqrt(1.0 / widths[-2])]
    return OriginalsMLP(widths, head="cross-entropy", init="gaussian", init_scales=scales, dtype=p.dtype)


def _originals_loss(n_original: int):
    """The ``recorded_loss`` hook of a network: the mean loss over the first ``n_original`` rows of the
    training set (the unshifted images when it is augmented)."""

    def recorded_loss(self, theta_rec, Xs, ys, data_of):
        out = np.full(theta_rec.shape[:2], np.nan)
        for q, k in zip(*np.nonzero(np.all(np.isfinite(theta_rec), axis=-1))):
            X, y = Xs[data_of[q]][:n_original], ys[data_of[q]][:n_original]
            out[q, k] = self.evaluate(theta_rec[q, k], X, y)[0]
        return out

    return recorded_loss


def schedules(p: DeepNetParams):
    """``[(label, effective η, Schedule)]``: the small constant step, then one large run per decay."""
    from dyntools.optim.schedules import Constant, PiecewiseDecay

    out = [(f"small η = {p.eta_small:g}", p.eta_small, Constant())]
    out += [(f"large η = {p.eta_large:g}, ÷{p.decay_factor:g} at {f:.0%}", p.eta_large,
             PiecewiseDecay((f,), (p.decay_factor,))) for f in p.decay_at]
    return out


def run_setting(p: DeepNetParams, setting: str, seed: int, s: int, data) -> dict:
    """Every schedule of ``setting`` for seed index ``s`` → metrics (G, K) and ``diverged_at`` (G,)."""
    from types import SimpleNamespace

    from threadpoolctl import threadpool_limits

    from dyntools.dynamics.train import train
    from dyntools.engine import record
    from dyntools.optim import optimizers as O

    sota = setting == "sota"
    channels, side = IMAGE_SHAPES[p.dataset]
    X, y = augmented(data.X, data.y, p.shift, side, channels) if sota else (data.X, data.y)
    model = network(p, data.X)
    runs = schedules(p)
    mu, wd = (p.momentum, p.weight_decay) if sota else (0.0, 0.0)
    opts = [O.sgd(eta * (1.0 - mu), momentum=mu, weight_decay=wd) for _, eta, _ in runs]
    # the trainer's finite-difference pre-run of a subclassed model is skipped for the ResNet: its biases start
    # at 0, so a pre-activation whose zero-padded 3×3 input patch is all zero sits exactly on ReLU's kink, where
    # the one-sided derivatives differ (its kernel gives PyTorch's, held to torch goldens in tests/test_resnet.py)
    steps = record.make_grid("linear", p.steps, p.records)
    res = train(model, SimpleNamespace(X=X, y=y), opts, schedule=[sc for _, _, sc in runs], steps=p.steps,
                batch=p.batch, sampler="epoch", record_steps=steps, seed=seed, theta0=model.init(seed, s),
                common_stream=True, stream_key=(s, SETTINGS.index(setting)), check_gradient=p.arch == "mlp",
                workers=p.workers)
    G, K = len(runs), steps.size
    out = {k: np.full((G, K), np.nan) for k in METRICS}
    out["train_loss"] = res["train_loss"][:, 0]
    # the MLP's features are its D hidden layers; the ResNet's its maps in the middle and before the pooling
    middle, last = (0, 1) if p.arch == "resnet" else ((p.depth + 1) // 2 - 1, p.depth - 1)
    sub = data.X[:p.sparsity_examples]
    with threadpool_limits(1):      # small products: BLAS threads would only wait on a busy machine
        _measure(model, res["theta"][:, 0], data, sub, (middle, last), out)
    out["diverged_at"] = res["diverged_at"][:, 0]
    out["steps"] = steps
    out["seconds"] = res.timings.get("simulate", 0.0)
    return out


def _measure(model, theta_rec, data, sub, layers, out) -> None:
    """Accuracies, test loss and the two feature sparsity coefficients at every finite recording."""
    from dyntools.metrics import feature_sparsity

    middle, last = layers
    G, K = theta_rec.shape[:2]
    for g in range(G):
        for k in range(K):
            theta = theta_rec[g, k]
            if not np.all(np.isfinite(theta)):
                continue
            out["train_acc"][g, k] = model.evaluate(theta, data.X, data.y)[1]
            out["test_loss"][g, k], out["test_acc"][g, k] = model.evaluate(theta, data.X_val, data.y_val)
            feats = model.features(theta, sub)
            out["fsc_middle"][g, k] = feature_sparsity(feats[middle])
            out["fsc_last"][g, k] = feature_sparsity(feats[last])


def simulate(p: DeepNetParams, *, seed: int = 0):
    """Every setting × schedule × seed → a :class:`RunResult` of kind ``"deep-nets"``: arrays ``steps``
    (K,), per setting ``{setting}_{metric}`` (S, G, K) and ``{setting}_diverged_at`` (S, G)."""
    import time

    from dyntools.engine.result import RunResult

    seed = validation.seed(seed)
    check(p)
    data = load_data(p, seed)
    start, cpu = time.perf_counter(), time.process_time()
    arrays, train_seconds = {}, 0.0
    for setting in p.settings:
        per_seed = [run_setting(p, setting, seed, s, data) for s in range(p.seeds)]
        for key in (*METRICS, "diverged_at"):
            arrays[f"{setting}_{key}"] = np.stack([r[key] for r in per_seed])
        arrays["steps"] = per_seed[0]["steps"]
        train_seconds += sum(r["seconds"] for r in per_seed)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    labels = [lab for lab, _, _ in schedules(p)]
    model = network(p, data.X)
    cfg = {"arch": p.arch, "settings": list(p.settings), "steps": p.steps,
           "batch": p.batch, "seeds": p.seeds, "eta_small": p.eta_small, "eta_large": p.eta_large,
           "decay_at": list(p.decay_at), "decay_factor": p.decay_factor, "momentum": p.momentum,
           "weight_decay": p.weight_decay, "shift": p.shift, "records": p.records,
           "sparsity_examples": p.sparsity_examples, "labels": labels, "dtype": p.dtype, "n_train": int(data.X.shape[0]),
           "n_test": int(data.X_val.shape[0]), "epochs": p.steps * p.batch / data.X.shape[0],
           "n_params": int(model.n_params)}
    if p.arch == "resnet":
        cfg.update(channels=p.channels, blocks=p.blocks, input_mean=model.input_mean, input_std=model.input_std)
    else:
        cfg["widths"] = [int(data.X.shape[1]), *([p.width] * p.depth), 10]
    cfg["dataset"] = p.dataset
    n_div = sum(int((arrays[f"{s}_diverged_at"] >= 0).sum()) for s in p.settings)
    status = "diverged" if n_div else "completed"
    message = (f"{n_div} runs diverged" if n_div else
               f"{len(p.settings) * len(labels) * p.seeds} runs trained for {p.steps} steps without divergence")
    res = RunResult("deep-nets", cfg, arrays, status, message, seed=seed,
                    timings={"total": total, "train": train_seconds, "cpu": cpu})
    res.summary = {"table": table_rows(res), "checks": checks(res)}
    return res


# ------------------------------------------------------------------------------------ tables, checks

def _ms(vals, pct: bool = False) -> str:
    vals = np.asarray(vals, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return "—"
    if pct:
        return f"{100 * vals.mean():.1f} ± {100 * vals.std():.1f}"
    return f"{vals.mean():.3g} ± {vals.std():.2g}"


def table_rows(result) -> list[dict]:
    """Final values, mean ± std over the seeds that did not diverge, one row per (setting, schedule)."""
    rows = []
    for setting in result.config["settings"]:
        for g, lab in enumerate(result.config["labels"]):
            def col(key, setting=setting, g=g):
                return result[f"{setting}_{key}"][:, g, -1]
            rows.append({"setting": setting, "schedule": lab, "train loss": _ms(col("train_loss")),
                         "train acc %": _ms(col("train_acc"), True), "test acc %": _ms(col("test_acc"), True),
                         "test loss": _ms(col("test_loss")), "FSC middle": _ms(col("fsc_middle")),
                         "FSC last": _ms(col("fsc_last")),
                         "diverged": f"{int((result[f'{setting}_diverged_at'][:, g] >= 0).sum())}"
                                     f"/{result.config['seeds']}"})
    return rows


def checks(result) -> dict:
    """The paper's claim per setting (reported, not gated): the run with the longest large-step phase
    (last decay point) ends with a lower mean feature sparsity coefficient at the last hidden layer
    and a test accuracy at least as high as the small-step run. Where the result holds them, the same
    comparison of the middle layer's coefficient (``sparser_middle``), of the final train loss, and the
    number of seeds on which the long large-step run is sparser at both depths."""
    import warnings

    from dyntools.verdicts import measured

    out = {}
    number = lambda v: float(v) if measured(v) else None
    for setting in result.config["settings"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)          # a schedule whose every seed diverged
            fsc = np.nanmean(result[f"{setting}_fsc_last"][:, :, -1], axis=0)
            acc = np.nanmean(result[f"{setting}_test_acc"][:, :, -1], axis=0)
        out[setting] = {"fsc_small": number(fsc[0]), "fsc_long_large": number(fsc[-1]),
                        "sparser": bool(fsc[-1] < fsc[0]) if measured(fsc[0], fsc[-1]) else None,
                        "acc_small": number(acc[0]), "acc_long_large": number(acc[-1]),
                        "not_worse": bool(acc[-1] >= acc[0]) if measured(acc[0], acc[-1]) else None}
        if f"{setting}_fsc_middle" in result.arrays and f"{setting}_train_loss" in result.arrays:
            mid, last = result[f"{setting}_fsc_middle"][:, :, -1], result[f"{setting}_fsc_last"][:, :, -1]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fm = np.nanmean(mid, axis=0)
                loss = np.nanmean(result[f"{setting}_train_loss"][:, :, -1], axis=0)
            out[setting].update(
                fsc_middle_small=number(fm[0]), fsc_middle_long_large=number(fm[-1]),
                sparser_middle=bool(fm[-1] < fm[0]) if measured(fm[0], fm[-1]) else None,
                loss_small=number(loss[0]), loss_long_large=number(loss[-1]),
                seeds_sparser_both=int(np.sum((mid[:, -1] < mid[:, 0]) & (last[:, -1] < last[:, 0]))),
                seeds=int(mid.shape[0]))
    return out


def check_lines(result) -> list[str]:
    """One sentence per setting from :func:`checks`' numbers ("not measured" where a schedule diverged on
    every seed)."""
    from dyntools.verdicts import word

    fmt = lambda v, scale=1.0, spec=".3g": "n/a (every seed diverged)" if v is None else f"{scale * v:{spec}}"
    lines = []
    for setting, c in result.summary["checks"].items():
        lines.append(f"- {setting}: FSC (last layer) {fmt(c['fsc_long_large'])} with the longest large-step phase "
                     f"vs {fmt(c['fsc_small'])} with the small step ({word(c['sparser'], 'sparser', 'NOT sparser')}); "
                     f"test accuracy {fmt(c['acc_long_large'], 100, '.1f')} % vs {fmt(c['acc_small'], 100, '.1f')} % "
                     f"({word(c['not_worse'], 'not worse', 'WORSE')})")
        if "sparser_middle" in c:
            lines.append(f"- {setting}: FSC (middle) {fmt(c['fsc_middle_long_large'])} vs {fmt(c['fsc_middle_small'])} "
                         f"({word(c['sparser_middle'], 'sparser', 'NOT sparser')}); sparser at both depths on "
                         f"{c['seeds_sparser_both']} of {c['seeds']} seeds; final train loss "
                         f"{fmt(c['loss_long_large'])} vs {fmt(c['loss_small'])}")
    return lines


#: A reference run below this median test accuracy is under-trained: a sparsity difference with it is remarked on.
UNDERTRAINED = 0.5


def claims(result) -> list[tuple[str, object]]:
    """Seed 004's claim per setting as ``(claim, Verdict)`` rows, each a sign test over the paired seeds
    (:func:`dyntools.verdicts.sign_test`: a seed's schedules share the initialization and sample order; a
    pair with a diverged run is left out): the run with the longest large-step phase ends with a *lower*
    feature sparsity coefficient at the last hidden layer, and a *higher* test accuracy, than the small-step
    run. A small-step reference whose median test accuracy is below :data:`UNDERTRAINED` is named in the
    verdict's sentence (a comparison with an under-trained network says little about sparsity)."""
    import dataclasses

    from dyntools import verdicts as V

    rows = []
    for setting in result.config["settings"]:
        fsc, acc = result[f"{setting}_fsc_last"][:, :, -1], result[f"{setting}_test_acc"][:, :, -1]
        div = result.arrays.get(f"{setting}_diverged_at")
        if div is not None:
            fsc, acc = (np.where(div >= 0, np.nan, x) for x in (fsc, acc))
        sparser = V.sign_test(fsc[:, -1], fsc[:, 0])
        with np.errstate(all="ignore"):
            ref_acc = float(np.nanmedian(acc[:, 0])) if np.isfinite(acc[:, 0]).any() else float("nan")
        if ref_acc < UNDERTRAINED:
            note = f" The small-step reference reaches only {ref_acc:.0%} test accuracy (under-trained)."
            sparser = dataclasses.replace(sparser, why=(sparser.why + note).strip())
        rows.append((f"{setting}: the longest large-step phase ends with a lower FSC (last layer)", sparser))
        rows.append((f"{setting}: ... and a higher test accuracy", V.sign_test(acc[:, -1], acc[:, 0], claim="greater")))
    return rows


def claims_headline(rows) -> str:
    """``basic: sparser shown, accuracy not shown (…)`` per setting, from :func:`claims`."""
    parts = []
    for (c1, v1), (_, v2) in zip(rows[::2], rows[1::2]):
        parts.append(f"{c1.split(':')[0]}: lower FSC {v1.label()} ({v1.measurement}), higher test accuracy "
                     f"{v2.label()}")
    return "; ".join(parts) + (f" [{rows[0][1].rule}, n = {rows[0][1].n} seeds, pairs where both survived: "
                               + ", ".join(str(v.survivors) for _, v in rows[::2]) + "]" if rows else "")


# ------------------------------------------------------------------------------------ report entry

#: Seeds of the MLP entry: the sign test needs 5 untied pairs at α = 5 % (one more for a diverged run); the quick
#: MLP costs about a CPU second per seed.
REPORT_SEEDS = 6


def reproduce(ctx):
    """Catalogue entry: both settings, :data:`REPORT_SEEDS` seeds, one thread (declared ``single_core``: at the
    quick size its processor seconds equalled its wall seconds with two threads too, 3.1 s, and the side lane
    was the shorter one by ~14 s); quick: width 32, 300 steps."""
    over = {"seeds": REPORT_SEEDS, "workers": 1}
    return _section(ctx, EXPERIMENT.make(None, **{**over, **(QUICK if ctx.quick else {})}), TITLE, "deep-nets",
                    _intro_mlp)


def _intro_mlp(c: dict) -> str:
    return (f"{describe_network(c)} on {c.get('dataset', 'digits')} ({c['n_train']} train / {c['n_test']} test), "
            f"minibatch SGD (batch {c['batch']}, shuffled epochs), {c['steps']} steps ({c['epochs']:.1f} epochs), "
            f"{c['seeds']} seeds; small constant step {c['eta_small']:g} vs large step {c['eta_large']:g} divided by "
            f"{c['decay_factor']:g} after 10/30/50 %. `sota`: momentum {c['momentum']:g} (steps × (1 − μ)), weight "
            f"decay {c['weight_decay']:g}, random shifts by up to {c['shift']} pixel(s).")


def reproduce_resnet(ctx):
    """Catalogue entry: the convolutional ResNet (``--arch resnet`` defaults: 8 channels, 2 blocks, batch 8,
    20 epochs), basic setting, 4 seeds; small constant step vs a large step decayed at half the run; one
    thread (declared ``single_core``). Quick: 4 epochs, 2 seeds."""
    over = {"arch": "resnet", "settings": ("basic",), "seeds": 4, "workers": 1}      # one core: the side lane
    p = EXPERIMENT.make(None, **{**over, **(RESNET_QUICK if ctx.quick else {})})
    return _section(ctx, p, TITLE_RESNET, "deep-nets-resnet", _intro_resnet)


def _intro_resnet(c: dict) -> str:
    return (f"{describe_network(c)} ({c['n_params']} parameters) on {c.get('dataset', 'digits')} ({c['n_train']} train / {c['n_test']} "
            f"test; input standardized by the training pixels' mean {c['input_mean']:.3f} and std "
            f"{c['input_std']:.3f}), plain minibatch SGD (batch {c['batch']}, shuffled epochs), {c['steps']} steps "
            f"({c['epochs']:.1f} epochs), {c['seeds']} seeds: small constant step {c['eta_small']:g} vs large step "
            f"{c['eta_large']:g} divided by {c['decay_factor']:g} after "
            f"{', '.join(f'{f:.0%}' for f in c['decay_at'])} of the run. Feature sparsity coefficient (fraction of "
            f"non-zero activations over the distinct neurons, correlation threshold 0.99, as for the MLP) of the "
            f"C × 8 × 8 maps after the first residual block (middle) and before the global average pooling (last), "
            f"on the first {c['sparsity_examples']} training images.")


def _section(ctx, p: DeepNetParams, title: str, name: str, intro):
    """Simulate ``p``, save the result under ``runs/<name>``, plot it, and the entry's section: ``intro(config)``,
    the table, the claims."""
    from dyntools import store
    from dyntools import verdicts as V
    from dyntools.plots import deep_nets as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    res = simulate(p, seed=ctx.seed)
    rows = claims(res)
    store.save(res, ctx.out_dir / "runs" / name)
    paths = plots.plot_result(res, ctx.figure_dir, ("png",), stem=name.replace("-", "_"))
    md = [f"{intro(res.config)} Final values, mean ± std over seeds. {res.message}; {res.timings['total']:.1f} s wall, "
          f"{res.timings['cpu']:.1f} CPU-s in all.", "",
          markdown_table(res.summary["table"]), "", "Means per setting (the claims below are decided seed by seed):",
          *check_lines(res), "", "Seed 004's claim, by a declared rule over the paired seeds:", "",
          V.claims_table(rows), ""]
    md += [f"![{name.replace('-', ' ')}]({ctx.relative(q)})" for q in paths]
    numbers = {"checks": res.summary["checks"], "seconds": res.timings["total"],
               "claims": {c: v.as_dict() for c, v in rows}}
    return Section(title, "\n".join(md), numbers=numbers, figures=[ctx.relative(q) for q in paths], ok=True,
                   headline=claims_headline(rows))


def describe_network(cfg: dict) -> str:
    """``"ReLU MLP 64-256-…-10"`` or ``"conv ResNet (8 channels, 2 blocks, …)"`` from a result's config."""
    if cfg.get("arch", "mlp") == "resnet":
        return (f"conv ResNet ({cfg['channels']} channels, {cfg['blocks']} residual blocks of two 3×3 convolutions, "
                f"global average pooling)")
    return f"ReLU MLP {'-'.join(map(str, cfg['widths']))}"


# ------------------------------------------------------------------------------------ command line

def run(p: DeepNetParams, ctx: RunContext):
    return simulate(p, seed=ctx.seed)


def summary(p: DeepNetParams, result) -> dict:
    return summary_with(result, "table", "checks")


def table(p: DeepNetParams, result) -> str:
    return status_and_table(result, *check_lines(result))


RESULTS = (derive("deep-nets", DeepNetParams, "batch decay_at decay_factor eta_large eta_small momentum records "
                          "seeds settings shift sparsity_examples steps weight_decay",
                  summary={"checks": "mapping", "table": "list"}, optional="arch channels blocks dataset"),)

EXPERIMENT = Experiment.declare(
    globals(), name="deep-nets", verb="simulate",
    help="deeper networks on digits or MNIST/Fashion-MNIST/CIFAR-10 files (seed 004), a ReLU MLP or (--arch resnet) a small convolutional ResNet: small vs "
         "large decayed steps, basic and state-of-the-art settings",
    example="dyntools simulate deep-nets --settings basic,sota --seeds 3 --seed 0 --out runs/deep\n"
            "  dyntools simulate deep-nets --arch resnet --settings basic --out runs/deep-resnet\n"
            "  dyntools simulate deep-nets --dataset mnist --data-dir ~/mnist --n-train 5000 --out runs/deep-mnist",
    params=DeepNetParams, figures={"deep-nets": deep_nets_figures.plot_result},
    conditional=arch_defaults)

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "deep-nets": ["--width", "8", "--depth", "2", "--steps", "40", "--seeds", "1", "--records", "4",
                  "--sparsity-examples", "20"],
}

REPORTS = [Entry("deep-nets", TITLE, reproduce, order=66, single_core=True),
           Entry("deep-nets-resnet", TITLE_RESNET, reproduce_resnet, order=67, single_core=True)]
