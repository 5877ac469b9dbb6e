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
  shifts of the images by up to ``shift`` pixels (zero fill). Steps are scaled by (1 − μ) so that the
  effective step η/(1 − μ) equals the basic setting's.

**Augmentation design** (documented in docs/architecture.md): the shifted copies are precomputed — the
training set becomes the (2s+1)² shifted copies of every image, the unshifted originals first — and the
engine's epoch sampler draws from them. A uniformly drawn row is a uniformly drawn (image, shift) pair:
the random-shift distribution, with the engine's own streams, no new kernel and bitwise reproducibility;
the price is memory ((2s+1)² × the data, 0.7 MB per copy here). The recorded train loss is measured
on the originals only (:class:`OriginalsMLP`).

Recorded at ``records`` steps: train/test loss and accuracy, and the feature sparsity coefficient
(:func:`dyntools.metrics.feature_sparsity`, correlation threshold 0.99) of a middle hidden layer
(⌈D/2⌉) and of the last one, on the first ``sparsity_examples`` training images.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "Deeper networks on digits: large-step SGD and feature sparsity (seed 004)"
SETTINGS = ("basic", "sota")
NET, RUN, SOTA = "network", "training", "state-of-the-art setting"
METRICS = ("train_loss", "train_acc", "test_loss", "test_acc", "fsc_middle", "fsc_last")


@dataclass(frozen=True)
class DeepNetParams:
    """``dyntools simulate deep-nets``: both settings by default."""

    settings: tuple = param(SETTINGS, kind="strs", choices=SETTINGS, metavar="NAMES", group=NET, max_len=len(SETTINGS),
                            label="setting", help="comma-separated settings")
    depth: int = param(4, low=1, high=64, group=NET, help="hidden layers D")
    width: int = param(256, low=1, high=4096, group=NET, help="hidden width m")
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
    sparsity_examples: int = param(400, low=2, high=1258, group=RUN,
                                   help="training images on which the feature sparsity is measured")
    momentum: float = param(0.9, low=0.0, high=1.0, high_open=True, group=SOTA, help="heavy-ball momentum")
    weight_decay: float = param(5e-4, low=0.0, group=SOTA, help="L2 weight decay")
    shift: int = param(1, low=0, high=3, group=SOTA, help="random shifts by up to this many pixels")


#: ``dyntools reproduce --quick``: a narrower network (32), fewer steps (still 4 hidden layers, 3 seeds)
QUICK = {"width": 32, "steps": 300, "records": 5, "sparsity_examples": 150}


def check(p: DeepNetParams) -> None:
    if not p.settings or len(set(p.settings)) != len(p.settings):
        raise ValueError("Invalid setting: name each of basic, sota at most once")
    if list(p.decay_at) != sorted(set(p.decay_at)):
        raise ValueError("Invalid decay_at: must be increasing")


# ------------------------------------------------------------------------------------ data, model

def shift_images(X: np.ndarray, dx: int, dy: int, side: int = 8) -> np.ndarray:
    """Every row of ``X`` (n, side²: row-major images) moved ``dx`` pixels right and ``dy`` down,
    zero fill: ``out[i, r, c] = X[i, r − dy, c − dx]`` where that pixel exists, else 0."""
    img = np.asarray(X, dtype=np.float64).reshape(-1, side, side)
    out = np.zeros_like(img)
    rs, rd = (slice(0, side - dy), slice(dy, side)) if dy >= 0 else (slice(-dy, side), slice(0, side + dy))
    cs, cd = (slice(0, side - dx), slice(dx, side)) if dx >= 0 else (slice(-dx, side), slice(0, side + dx))
    out[:, rd, cd] = img[:, rs, cs]
    return out.reshape(X.shape)


def augmented(X: np.ndarray, y: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The (2s+1)² shifted copies of ``(X, y)``, the unshifted originals first (module docstring)."""
    shift = validation.count("shift", shift, minimum=0)
    offsets = [(0, 0)] + [(dx, dy) for dy in range(-shift, shift + 1) for dx in range(-shift, shift + 1)
                          if (dx, dy) != (0, 0)]
    return (np.concatenate([shift_images(X, dx, dy) for dx, dy in offsets]),
            np.tile(np.asarray(y), len(offsets)))


def network(p: DeepNetParams, n_original: int):
    from dyntools.models.mlp import MLP

    class OriginalsMLP(MLP):
        """The MLP whose recorded train loss (the engine's hook) is taken over the first ``n_original``
        rows of the training set: the unshifted images when it is augmented."""

        def recorded_loss(self, theta_rec, Xs, ys, data_of):
            out = np.full(theta_rec.shape[:2], np.nan)
            for q, k in zip(*np.nonzero(np.all(np.isfinite(theta_rec), axis=-1))):
                X, y = Xs[data_of[q]][:n_original], ys[data_of[q]][:n_original]
                out[q, k] = self.evaluate(theta_rec[q, k], X, y)[0]
            return out

    widths = (64, *([p.width] * p.depth), 10)
    scales = [np.sqrt(2.0 / w) for w in widths[:-2]] + [np.sqrt(1.0 / widths[-2])]
    return OriginalsMLP(widths, head="cross-entropy", init="gaussian", init_scales=scales, dtype=p.dtype)


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
    X, y = augmented(data.X, data.y, p.shift) if sota else (data.X, data.y)
    model = network(p, data.X.shape[0])
    runs = schedules(p)
    mu, wd = (p.momentum, p.weight_decay) if sota else (0.0, 0.0)
    opts = [O.sgd(eta * (1.0 - mu), momentum=mu, weight_decay=wd) for _, eta, _ in runs]
    steps = record.make_grid("linear", p.steps, p.records)
    res = train(model, SimpleNamespace(X=X, y=y), opts, schedule=[sc for _, _, sc in runs], steps=p.steps,
                batch=p.batch, sampler="epoch", record_steps=steps, seed=seed, theta0=model.init(seed, s),
                common_stream=True, stream_key=(s, SETTINGS.index(setting)))
    G, K = len(runs), steps.size
    out = {k: np.full((G, K), np.nan) for k in METRICS}
    out["train_loss"] = res["train_loss"][:, 0]
    middle, last = (p.depth + 1) // 2 - 1, p.depth - 1
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

    from dyntools import data as datasets
    from dyntools.engine.result import RunResult

    seed = validation.seed(seed)
    check(p)
    data = datasets.digits(seed=seed)
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
    cfg = {"settings": list(p.settings), "widths": [64, *([p.width] * p.depth), 10], "steps": p.steps,
           "batch": p.batch, "seeds": p.seeds, "eta_small": p.eta_small, "eta_large": p.eta_large,
           "decay_at": list(p.decay_at), "decay_factor": p.decay_factor, "momentum": p.momentum,
           "weight_decay": p.weight_decay, "shift": p.shift, "records": p.records,
           "sparsity_examples": p.sparsity_examples, "labels": labels, "dtype": p.dtype, "n_train": int(data.X.shape[0]),
           "n_test": int(data.X_val.shape[0]), "epochs": p.steps * p.batch / data.X.shape[0]}
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
    and a test accuracy at least as high as the small-step run."""
    import warnings

    from dyntools.verdicts import measured

    out = {}
    for setting in result.config["settings"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)          # a schedule whose every seed diverged
            fsc = np.nanmean(result[f"{setting}_fsc_last"][:, :, -1], axis=0)
            acc = np.nanmean(result[f"{setting}_test_acc"][:, :, -1], axis=0)
        number = lambda v: float(v) if measured(v) else None
        out[setting] = {"fsc_small": number(fsc[0]), "fsc_long_large": number(fsc[-1]),
                        "sparser": bool(fsc[-1] < fsc[0]) if measured(fsc[0], fsc[-1]) else None,
                        "acc_small": number(acc[0]), "acc_long_large": number(acc[-1]),
                        "not_worse": bool(acc[-1] >= acc[0]) if measured(acc[0], acc[-1]) else None}
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
    return lines


def headline(result) -> str:
    """The entry's headline: per setting, whether the longest large-step run is sparser."""
    from dyntools.verdicts import word

    return "; ".join(f"{setting}: long large steps {word(c['sparser'], 'sparser', 'NOT sparser')} "
                     f"({word(c['not_worse'], 'accuracy not worse', 'accuracy WORSE')})"
                     for setting, c in result.summary["checks"].items())


# ------------------------------------------------------------------------------------ report entry

def reproduce(ctx):
    """Catalogue entry: both settings, 3 seeds; quick: width 32, 300 steps."""
    from dyntools import store
    from dyntools.plots import deep_nets as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    p = EXPERIMENT.make(None, **(QUICK if ctx.quick else {}))
    res = simulate(p, seed=ctx.seed)
    store.save(res, ctx.out_dir / "runs" / "deep-nets")
    paths = plots.plot_result(res, ctx.figure_dir, ("png",))
    c = res.config
    md = [f"ReLU MLP {'-'.join(map(str, c['widths']))} on digits ({c['n_train']} train / {c['n_test']} test), "
          f"minibatch SGD (batch {c['batch']}, shuffled epochs), {c['steps']} steps ({c['epochs']:.1f} epochs), "
          f"{c['seeds']} seeds; small constant step {c['eta_small']:g} vs large step {c['eta_large']:g} divided by "
          f"{c['decay_factor']:g} after 10/30/50 %. `sota`: momentum {c['momentum']:g} (steps × (1 − μ)), weight "
          f"decay {c['weight_decay']:g}, random shifts by up to {c['shift']} pixel(s). Final values, mean ± std "
          f"over seeds. {res.message}; {res.timings['total']:.1f} s wall, {res.timings['cpu']:.1f} CPU-s in all.", "",
          markdown_table(res.summary["table"]), "", "The paper's claim (reported, not gated):", *check_lines(res), ""]
    md += [f"![deep nets]({ctx.relative(q)})" for q in paths]
    numbers = {"checks": res.summary["checks"], "seconds": res.timings["total"]}
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(q) for q in paths], ok=True,
                   headline=headline(res))


# ------------------------------------------------------------------------------------ command line

def run(p: DeepNetParams, ctx: RunContext):
    return simulate(p, seed=ctx.seed)


def summary(p: DeepNetParams, result) -> dict:
    return {"status": result.status, "message": result.message, "table": result.summary["table"],
            "checks": result.summary["checks"], "seconds": result.timings}


def table(p: DeepNetParams, result) -> str:
    from dyntools.tables import text_table

    return "\n".join([f"status: {result.status} — {result.message}", "", text_table(result.summary["table"]), "",
                      *check_lines(result)])


RESULTS = (derive("deep-nets", DeepNetParams, "batch decay_at decay_factor eta_large eta_small momentum records "
                          "seeds settings shift sparsity_examples steps weight_decay",
                  summary={"checks": "mapping", "table": "list"}),)

EXPERIMENT = Experiment(
    name="deep-nets", verb="simulate",
    help="deeper ReLU MLP on digits (seed 004): small vs large decayed steps, basic and state-of-the-art settings",
    example="dyntools simulate deep-nets --settings basic,sota --seeds 3 --seed 0 --out runs/deep",
    params=DeepNetParams, results=RESULTS, run=run, table=table, summary=summary, check=check)

REPORT = Entry("deep-nets", TITLE, reproduce, order=66)
