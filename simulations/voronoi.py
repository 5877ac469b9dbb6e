"""The Voronoi study of seed 000: the environment, the model ladder and AdamW with L2 / L1 / L1+L2 / min decay.

Seed 000 classifies points of the plane by the label of their cell in a random partition around
100–150 centers (:mod:`dyntools.data.voronoi`), with a ladder of models that climbs from an exact
rule to learned centers (:mod:`dyntools.models.voronoi`), trained by AdamW with decoupled decay of
several kinds (:mod:`dyntools.optim.decay_groups`). Settings from the study's code (facts, not code):
box ``s = 100``, ``k ~ U{100, …, 150}``, ``C = 2`` classes, ``D = 2``; AdamW with weight decay
``λ = 10⁻²`` and per-rung learning rates (center labels 10⁻², offset 2·10⁻³, offset+scale 10⁻²,
plus–minus 5·10⁻³, centers 10⁻²); 2048 learned centers initialized ``N(0, 100²)``; the study draws
fresh points at each of 10⁴ steps with batch 32 — here a fixed training set of ``n`` points is
visited in epochs (batch 64 and 2000 steps by default, the benchmark's size).

The seed chose Voronoi partitions "because it's very hard for a deep neural network to learn". The ladder's
last member, ``mlp``, tests that: an unstructured ReLU network (:mod:`dyntools.models.voronoi_mlp`; hidden
widths 64, 64, 64: 8 642 parameters, about the top rung's 8 196) trained at the top rung's budget — the same
training points, the same minibatches (the ladder's sampling stream), the same steps, batch, learning rate
10⁻², decay and seeds, scored by the same accuracy on the same evaluation points. It sees ``x/s`` by
default (``--mlp-inputs raw``: ``x`` itself); the report runs both.

Pieces: :func:`run_experiment` (one rung × one decay over seeds → a ``voronoi`` result with the
recorded snapshots that the animations are drawn from), :func:`ladder_cell` and :func:`run_ladder`
(the ``voronoi-ladder`` sweep: rungs × decays × seeds on local processes or Dask, resumable),
:func:`table`/:func:`ladder_table` and :func:`reproduce` (the report entry).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

from dyntools import memory, validation
from dyntools.plots import voronoi as voronoi_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, param
from dyntools.sweep_backend import SweepBackendParams

TITLE = "The Voronoi study: model ladder and AdamW decay types (seed 000)"

DECAYS = ("l2", "l1", "l1l2", "min")
#: the study's learning rate of each rung (its experiments' LR constants)
STUDY_LR = {"center-labels": 1e-2, "offset": 2e-3, "scale": 1e-2, "plus-minus": 5e-3, "centers": 1e-2}
#: the MLP baseline's learning rate: the top rung's, so that the two compare at one budget (the same training
#: points, minibatches, steps, batch, learning rate and decay)
MLP_LR = STUDY_LR["centers"]
#: |θ_i| below this counts as "near zero" in the parameter statistics
NEAR_ZERO = 1e-3


ENV, MODEL, TRAIN, LADDER = "environment", "model", "training", "ladder"
RUNG_NAMES = ("exact", "center-labels", "offset", "scale", "plus-minus", "centers")   # models.voronoi.RUNGS
#: the members of the ladder: its rungs and the unstructured MLP baseline (:mod:`dyntools.models.voronoi_mlp`)
MEMBERS = (*RUNG_NAMES, "mlp")
MLP_INPUTS = ("scaled", "raw")                                                       # models.voronoi_mlp.INPUTS
GROUP_NAMES = ("logits", "offset", "scale", "plus-minus", "centers")                  # models.voronoi.GROUPS
DTYPES = ("float64", "float32")                                                       # models.voronoi.DTYPES


@dataclass(frozen=True)
class _Common:
    """The environment and training parameters shared by ``simulate voronoi`` and ``sweep voronoi-ladder``."""

    n: int = param(4000, low=1, high=10**7, group=ENV, help="training points (n × D ≤ 2^28)")
    n_test: int = param(2000, low=1, high=10**7, group=ENV, help="evaluation points")
    k: int | None = param(None, kind="int", low=1, high=10**6, group=ENV,
                          help="centers of the environment (<= n; default: uniform in [k-min, k-max])")
    k_min: int = param(100, low=1, high=10**6, group=ENV, help="smallest number of centers when k is drawn")
    k_max: int = param(150, low=1, high=10**6, group=ENV, help="largest number of centers when k is drawn")
    classes: int = param(2, low=2, high=10**4, group=ENV, help="classes C")
    dim: int = param(2, low=1, high=10**4, group=ENV, help="dimension D (the plane pictures need D = 2)")
    box: float = param(100.0, low=0.0, low_open=True, high=1e100, group=ENV, help="half-width s of the box [-s, s]^D")
    rule: str = param("nearest", choices=("nearest", "projection"), group=ENV,
                      help="how points are labelled: nearest center (Voronoi) or the seed's argmin |x.c/|c|^2 - 1|")
    n_centers: int = param(2048, low=1, high=10**6, group=MODEL, help="learned centers of rung 'centers'")
    fixed_scale: float = param(1e4, group=MODEL, help="softmax scale of rungs center-labels and offset (study: 1e4)")
    scale_init: float = param(1.0, group=MODEL, help="initial softmax scale of rungs scale, plus-minus, centers")
    mlp_hidden: tuple = param((64, 64, 64), kind="ints", low=1, high=4096, max_len=16, metavar="WIDTHS",
                              group=MODEL, help="hidden widths of the MLP baseline (member 'mlp')")
    mlp_inputs: str = param("scaled", choices=MLP_INPUTS, group=MODEL,
                            help="what the MLP baseline sees: x/s in [-1, 1] (scaled) or x itself (raw)")
    lr: float | None = param(None, kind="float", low=0.0, low_open=True, group=TRAIN,
                             help="AdamW learning rate (default: the study's for the rung; mlp: the top rung's 1e-2)")
    weight_decay: float | None = param(None, kind="float", low=0.0, group=TRAIN,
                                       help="decay strength lambda (default 1e-2; 1.0 for min, as the study's code)")
    l1_ratio: float = param(0.5, low=0.0, high=1.0, group=TRAIN, help="rho of the l1l2 decay")
    no_decay: tuple = param((), kind="strs", choices=GROUP_NAMES, metavar="GROUPS", group=TRAIN,
                            max_len=len(GROUP_NAMES),
                            label="no_decay group", help="parameter groups without decay, e.g. offset,scale")
    steps: int = param(2000, low=1, high=10**8, group=TRAIN, help="AdamW steps")
    batch: int = param(64, low=1, high=10**7, group=TRAIN, help="minibatch size (epochs over the training points)")
    frames: int = param(30, low=2, high=10**4, group=TRAIN, help="recorded snapshots = frames of the animations")
    dtype: str = param("float64", choices=DTYPES, group=TRAIN,
                       help="precision of the training (float32: rungs center-labels and offset, whose fixed "
                            "scale 1e4 magnifies rounding, keep about 3 digits)")


@dataclass(frozen=True)
class VoronoiParams(_Common):
    """One rung × one decay type over seeds (``dyntools simulate voronoi``)."""

    rung: str = param("centers", choices=MEMBERS, group=MODEL,
                      help="rung of the model ladder, or mlp: the unstructured MLP baseline")
    decay: str = param("l2", choices=DECAYS, group=TRAIN,
                       help="decoupled decay: l2 (AdamW), l1, l1l2 (proportional), min")
    seeds: int = param(1, low=1, high=1000, group=TRAIN, help="seeds (environment, initialization, minibatches)")


@dataclass(frozen=True)
class LadderParams(SweepBackendParams, _Common):
    """Rungs × decay types × seeds (``dyntools sweep voronoi-ladder``)."""

    rungs: tuple = param(MEMBERS, kind="strs", choices=MEMBERS, metavar="RUNGS", group=LADDER,
                         max_len=len(MEMBERS),
                         label="rung", help="comma-separated rungs (mlp: the MLP baseline)")
    decays: tuple = param(DECAYS, kind="strs", choices=DECAYS, metavar="DECAYS", group=LADDER, label="decay",
                          max_len=len(DECAYS),
                          help="comma-separated decay types")
    seeds: int = param(5, low=1, high=1000, group=LADDER, help="seeds per (rung, decay)")


def check(p) -> None:
    """Every check that can be made before running (``ValueError`` naming the parameter); ``p`` is a
    :class:`VoronoiParams` or a :class:`LadderParams`."""
    from dyntools.data.voronoi import RULES, check_k_range
    from dyntools.models.voronoi import GROUPS

    for r in getattr(p, "rungs", (getattr(p, "rung", None),)):
        validation.one_of("rung", r, MEMBERS)
    for d in getattr(p, "decays", (getattr(p, "decay", None),)):
        validation.one_of("decay", d, DECAYS)
    validation.one_of("rule", p.rule, RULES)
    validation.one_of("dtype", p.dtype, DTYPES)
    for g in p.no_decay:
        validation.one_of("no_decay group", g, GROUPS)
    validation.count("dim (D)", p.dim)
    validation.count("classes (C)", p.classes, minimum=2)
    validation.positive("box (s)", p.box)
    n = validation.count("n", p.n)
    validation.count("n_test", p.n_test)
    if p.k is not None:
        k = validation.count("k", p.k)
        if k > n:
            raise ValueError(f"Invalid k: {k} (must be <= n = {n}, the number of points)")
    else:
        lo, _ = check_k_range((p.k_min, p.k_max))
        if lo > n:
            raise ValueError(f"Invalid k_min: {lo} (must be <= n = {n}, the number of points)")
    validation.count("n_centers", p.n_centers)
    validation.count("steps", p.steps)
    b = validation.count("batch", p.batch)
    if b > n:
        raise ValueError(f"Invalid batch: {b} (must be <= n = {n})")
    validation.count("seeds", p.seeds)
    validation.count("frames", p.frames, minimum=2)
    if p.lr is not None:
        validation.positive("lr", p.lr)
    if p.weight_decay is not None:
        validation.non_negative("weight_decay", p.weight_decay)
    validation.in_interval("l1_ratio", p.l1_ratio, 0.0, 1.0, closed_high=True)
    validation.finite("fixed_scale", p.fixed_scale)
    validation.finite("scale_init", p.scale_init)
    validation.one_of("mlp_inputs", p.mlp_inputs, MLP_INPUTS)
    if not p.mlp_hidden:
        raise ValueError("Invalid mlp_hidden: need at least one hidden width")
    for w in p.mlp_hidden:
        validation.count("mlp_hidden width", w)
    arrays = {      # float64, each held twice (the run's and the result's or a temporary's)
        "the data ((--n + --n-test) × (--dim + 1), twice)": (16 * (p.n + p.n_test) * (p.dim + 1), "--n"),
        "the snapshots (--frames × --n-centers × (--dim + --classes), twice)":
            (16 * p.frames * p.n_centers * (p.dim + p.classes), "--frames"),
        "the softmax (--n-test × --n-centers: logits, probabilities, a temporary)":
            (24 * p.n_test * p.n_centers, "--n-centers")}
    if "mlp" in getattr(p, "rungs", (getattr(p, "rung", None),)):
        widths = (p.dim, *p.mlp_hidden, p.classes)
        size = sum((a + 1) * b for a, b in zip(widths, widths[1:]))
        arrays["the MLP's snapshots (--frames × parameters, twice)"] = (16 * p.frames * size, "--mlp-hidden")
        arrays["the MLP's activations (layers × widest × --batch, forward and backward)"] = (
            16 * len(widths) * max(widths) * p.batch, "--batch")
    memory.require_each(arrays)


def make_params(**overrides) -> VoronoiParams:
    """``VoronoiParams`` with ``overrides``, checked (unknown names are a ``TypeError``)."""
    p = VoronoiParams(**overrides)
    check(p)
    return p


def environment(p: VoronoiParams, seed: int, index: int):
    """The environment of seed ``index`` (its own stream: environments differ across seeds, and are
    shared by every rung and decay type of the same seed, so that comparisons are paired)."""
    from dyntools.data.voronoi import voronoi

    return voronoi(p.n, n_test=p.n_test, k=p.k, k_range=(p.k_min, p.k_max), classes=p.classes, dim=p.dim,
                   box=p.box, rule=p.rule, seed=seed, stream_key=(index,))


def build_model(p: VoronoiParams, env):
    """The member ``p.rung`` of the ladder: a :class:`~dyntools.models.voronoi.VoronoiLadder` rung or the
    :class:`~dyntools.models.voronoi_mlp.VoronoiMLP` baseline."""
    from dyntools.models.voronoi import VoronoiLadder

    if p.rung == "mlp":
        from dyntools.models.voronoi_mlp import VoronoiMLP

        return VoronoiMLP(classes=p.classes, dim=p.dim, hidden=p.mlp_hidden, box=p.box, inputs=p.mlp_inputs,
                          dtype=p.dtype)
    return VoronoiLadder(p.rung, centers=env.centers, center_labels=env.center_labels, classes=p.classes,
                         dim=p.dim, n_centers=p.n_centers, box=p.box, fixed_scale=p.fixed_scale,
                         scale_init=p.scale_init, dtype=p.dtype)


def build_optimizer(p: VoronoiParams, model):
    """AdamW with the decay of ``p.decay``; per-group weights 0 on ``p.no_decay``; "min" takes the
    minimum over each parameter group (as the study takes it over each tensor)."""
    from dyntools.optim.decay_groups import adamw_decay

    lr = (MLP_LR if p.rung == "mlp" else STUDY_LR.get(p.rung, 1e-2)) if p.lr is None else p.lr
    grouped = bool(p.no_decay) or p.decay == "min"
    return adamw_decay(p.decay, lr=lr, weight_decay=p.weight_decay, l1_ratio=p.l1_ratio,
                       weights=model.decay_mask(p.no_decay) if grouped else None,
                       groups=model.group_of() if grouped else None)


def param_stats(model, theta) -> dict:
    """Per group: ℓ2 norm, ℓ1 norm / size, fraction of entries with |θ| < NEAR_ZERO."""
    out = {}
    for name, sl in model.slices.items():
        v = np.asarray(theta)[sl]
        out[name] = {"l2": float(np.linalg.norm(v)), "mean_abs": float(np.mean(np.abs(v))),
                     "near_zero": float(np.mean(np.abs(v) < NEAR_ZERO))}
    return out


def exact_accuracy(env) -> dict:
    """Rung 1 (no parameters): the label of argmin_j |xᵀc_j/‖c_j‖² − 1|, scored against the labels of
    both partition rules on the evaluation points."""
    from dyntools.data.voronoi import cells, label_points

    pred = env.center_labels[cells(env.X_test, env.centers, "projection")]
    return {rule: float(np.mean(pred == label_points(env.X_test, env.centers, env.center_labels, rule)))
            for rule in ("nearest", "projection")}


def train_one(p: VoronoiParams, seed: int, index: int, *, progress: bool = False) -> dict:
    """Train seed ``index`` of ``p`` through :func:`dyntools.train`; the recorded snapshots, their
    metrics on the training and evaluation points, and the environment's reference numbers."""
    from dyntools.data.voronoi import disagreement, majority_baseline
    from dyntools.dynamics.train import train
    from dyntools.engine import record

    env = environment(p, seed, index)
    ref = {"majority": majority_baseline(env.y, env.y_test), "exact": exact_accuracy(env),
           "disagreement": disagreement(env.X_test, env.centers, env.center_labels), "k": env.k}
    if p.rung == "exact":
        return {"env": env, "ref": ref}
    model = build_model(p, env)
    opt = build_optimizer(p, model)
    steps = record.linear_grid(p.steps, p.frames)
    data = model.training_set(env) if p.rung == "mlp" else env      # the MLP sees x/s (or x): its inputs
    res = train(model, data, opt, steps=p.steps, batch=p.batch, sampler="epoch", record_steps=steps, seed=seed,
                theta0=model.init(seed, index), stream_key=(index,), progress=progress)
    theta = res.arrays["theta"][0, 0]
    train_loss, train_acc = model.evaluate_records(theta, env.X, env.y)
    test_loss, test_acc = model.evaluate_records(theta, env.X_test, env.y_test)
    return {"env": env, "ref": ref, "model": model, "optimizer": opt, "result": res, "steps": steps,
            "theta": theta, "train_loss": train_loss, "train_acc": train_acc, "test_loss": test_loss,
            "test_acc": test_acc, "diverged_at": int(res.arrays["diverged_at"][0, 0]),
            "stats": param_stats(model, res.arrays["final_theta"][0, 0])}


def run_experiment(p: VoronoiParams, *, seed: int = 0, progress: bool = False):
    """One rung × one decay type over ``p.seeds`` seeds → a ``voronoi`` :class:`RunResult`."""
    from dyntools.engine import drive
    from dyntools.engine.result import RunResult

    check(p)
    start = time.perf_counter()
    runs = [train_one(p, seed, s, progress=progress) for s in range(p.seeds)]
    env0 = runs[0]["env"]
    ref = {"majority": [r["ref"]["majority"] for r in runs], "k": [r["ref"]["k"] for r in runs],
           "exact_nearest": [r["ref"]["exact"]["nearest"] for r in runs],
           "exact_projection": [r["ref"]["exact"]["projection"] for r in runs],
           "disagree_cells": [r["ref"]["disagreement"]["cells"] for r in runs],
           "disagree_labels": [r["ref"]["disagreement"]["labels"] for r in runs]}
    arrays = {"env_centers": env0.centers, "env_labels": env0.center_labels,
              **{f"ref_{k}": np.asarray(v, dtype=float) for k, v in ref.items()}}
    config = {"params": dataclasses.asdict(p), "environment": env0.config()}
    summary = {"majority_median": float(np.median(ref["majority"])),
               "exact_vs_nearest_median": float(np.median(ref["exact_nearest"])),
               "exact_vs_projection_median": float(np.median(ref["exact_projection"])),
               "disagreement_cells_median": float(np.median(ref["disagree_cells"])),
               "disagreement_labels_median": float(np.median(ref["disagree_labels"]))}
    if p.rung == "exact":
        status, message = "completed", (f"exact rule on {p.seeds} seed(s): accuracy "
                                        f"{summary['exact_vs_' + p.rule + '_median']:.3f} against the {p.rule} labels")
    else:
        for key in ("train_loss", "train_acc", "test_loss", "test_acc"):
            arrays[key] = np.stack([r[key] for r in runs])
        # snapshots of every seed when they have one layout; with the environment's centers (rungs 2–5)
        # and a random k the layouts differ across seeds: then seed 0's (the animations draw seed 0)
        same = len({r["theta"].shape for r in runs}) == 1
        kept = runs if same else runs[:1]
        arrays["theta"] = np.stack([r["theta"] for r in kept])
        arrays["final_theta"] = np.stack([r["result"].arrays["final_theta"][0, 0] for r in kept])
        arrays["steps"] = runs[0]["steps"]
        arrays["diverged_at"] = np.array([r["diverged_at"] for r in runs])
        config["model"] = runs[0]["model"].config()
        config["slices"] = {k: [v.start, v.stop] for k, v in runs[0]["model"].slices.items()}
        config["optimizer"] = {"name": runs[0]["optimizer"].name, "lr": runs[0]["optimizer"].lr,
                               "weight_decay": float(runs[0]["optimizer"].options.get("weight_decay", 0.0)),
                               "l1_ratio": float(runs[0]["optimizer"].options.get("l1_ratio", 0.0))}
        summary.update({"train_acc_median": float(np.nanmedian(arrays["train_acc"][:, -1])),
                        "test_acc_median": float(np.nanmedian(arrays["test_acc"][:, -1])),
                        "test_loss_median": float(np.nanmedian(arrays["test_loss"][:, -1])),
                        "param_stats": runs[0]["stats"]})
        final = arrays["test_loss"][:, -1]
        status, message = drive.classify(arrays["diverged_at"], np.where(np.isfinite(final), final, np.inf),
                                         what="seeds")
    summary["seconds"] = time.perf_counter() - start
    return RunResult("voronoi", config, arrays, status, message, seed=seed, summary=summary,
                     timings={"run": summary["seconds"]})


def in_parallel(jobs: list, workers: int | None = None) -> list:
    """The results of the argument-free callables ``jobs`` (picklable, e.g. ``functools.partial`` of module
    functions), in order, computed on ``workers`` processes (default: every core; 1: in this process). Each
    report job is a function of its arguments alone (its seed among them), so the results are the same bits
    whatever the number of workers."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [job() for job in jobs]
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        return list(pool.map(_call, jobs))


def _call(job):
    return job()


def compile_once(p: VoronoiParams, variants=(), *, members=MEMBERS, decays=DECAYS) -> None:
    """Compile (or load from numba's cache) in this process every kernel that the ladder's cells
    (``members`` × ``decays`` of ``p``) and the parameter sets ``variants`` train with: two steps of one seed
    of each. Worker processes started afterwards then load those kernels instead of compiling the same ones
    side by side into an empty cache. Nothing is kept: every run is a function of its parameters and seed
    alone, so the runs that follow give the same bits with or without this."""
    tiny = {"steps": 2, "frames": 2, "seeds": 1}
    runs = [dataclasses.replace(p, rung=r, decay=d, **tiny) for r in members if r != "exact" for d in decays]
    runs += [dataclasses.replace(v, **tiny) for v in variants if v.rung != "exact"]
    for q in runs:
        train_one(q, 0, 0)


def animated_run(p: VoronoiParams, seed: int, run_dir, figure_dir, stem: str, res: int) -> list:
    """One seed of ``p`` for the report's animations: the run saved under ``run_dir``, its figures and
    animations drawn into ``figure_dir`` (both in the calling process: a report job). Returns the figure paths."""
    from dyntools import store
    from dyntools.plots import voronoi as vplots

    result = run_experiment(p, seed=seed)
    store.save(result, run_dir)
    return vplots.plot_result(result, figure_dir, ("png",), stem=stem, res=res, env=False)


def table(result) -> str:
    """Human summary of a ``voronoi`` result."""
    from dyntools.tables import key_values

    s = result.summary
    rung = result.config["params"]["rung"]
    rows = {"rung": rung, "decay": "-" if rung == "exact" else result.config["params"]["decay"],
            "seeds": result.config["params"]["seeds"], "majority baseline": s["majority_median"],
            "exact rule vs nearest labels": s["exact_vs_nearest_median"],
            "exact rule vs projection labels": s["exact_vs_projection_median"],
            "rules disagree (cells)": s["disagreement_cells_median"],
            "rules disagree (labels)": s["disagreement_labels_median"]}
    if "test_acc_median" in s:
        rows.update({"final train accuracy (median)": s["train_acc_median"],
                     "final eval accuracy (median)": s["test_acc_median"]})
    rows.update({"status": result.status, "message": result.message, "seconds": s["seconds"]})
    return key_values(rows)


# ------------------------------------------------------------------------------------ the ladder sweep

LADDER_RUNGS = MEMBERS


def ladder_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """One (rung, decay, seed index) of the ladder sweep: the curves and the final numbers."""
    p = VoronoiParams(**{**config, "rung": cell["rung"], "decay": cell["decay"], "seeds": 1,
                         "no_decay": tuple(config.get("no_decay", ()))})
    out = train_one(p, seed, int(cell["seed_index"]))
    ref = out["ref"]
    res = {"majority": ref["majority"], "exact_nearest": ref["exact"]["nearest"],
           "exact_projection": ref["exact"]["projection"], "disagree_cells": ref["disagreement"]["cells"],
           "disagree_labels": ref["disagreement"]["labels"]}
    if p.rung == "exact":
        acc = ref["exact"][p.rule]
        res.update({"train_acc": np.full(2, np.nan), "test_acc": np.full(2, acc), "train_loss": np.full(2, np.nan),
                    "test_loss": np.full(2, np.nan), "final_test_acc": acc, "final_train_acc": np.nan,
                    "diverged_at": -1})
        return res
    res.update({k: out[k] for k in ("train_acc", "test_acc", "train_loss", "test_loss")})
    res.update({"final_train_acc": float(out["train_acc"][-1]), "final_test_acc": float(out["test_acc"][-1]),
                "diverged_at": out["diverged_at"]})
    if "scale" in out["model"].slices:          # the learned softmax scale σ at the end (the report's min-decay note)
        res["final_scale"] = float(out["result"].arrays["final_theta"][0, 0][out["model"].slices["scale"]][0])
    for g, st in out["stats"].items():
        for name, v in st.items():
            res[f"stat_{g}_{name}"] = v
    if out["diverged_at"] >= 0:
        res.update(status="diverged", message=f"diverged at step {out['diverged_at']}")
    return res


def ladder_spec(p: VoronoiParams, rungs=LADDER_RUNGS, decays=DECAYS, seeds: int = 5, seed: int = 0):
    from dyntools.sweep import SweepSpec

    for r in rungs:
        validation.one_of("rung", r, MEMBERS)
    for d in decays:
        validation.one_of("decay", d, DECAYS)
    seeds = validation.count("seeds", seeds)
    check(dataclasses.replace(p, seeds=1))
    config = {k: v for k, v in dataclasses.asdict(p).items() if k not in ("rung", "decay", "seeds")}
    config["no_decay"] = list(p.no_decay)
    cells = [{"rung": r, "decay": d, "seed_index": s} for r in rungs for d in (decays if r != "exact" else ("-",))
             for s in range(seeds)]
    return SweepSpec("voronoi-ladder", ladder_cell, config, cells, int(seed),
                     finite=("final_test_acc", "majority", "test_acc"))


def run_ladder(p: VoronoiParams, out, *, rungs=LADDER_RUNGS, decays=DECAYS, seeds: int = 5, seed: int = 0,
               workers=None, dask_local=None, scheduler=None, connect_timeout: float = 10.0, retries: int = 2,
               progress=False):
    """Run (or resume) the ladder sweep into ``out`` → a ``voronoi-ladder`` result, also written there."""
    from dyntools import sweep

    spec = ladder_spec(p, rungs, decays, seeds, seed)
    outcome = sweep.run_sweep(spec, out, workers=workers, dask_local=dask_local, scheduler=scheduler,
                              connect_timeout=connect_timeout, retries=retries, progress=progress)
    result = assemble_ladder(spec, outcome.cells)
    result.summary.update({"computed": outcome.computed, "reused": outcome.reused, "backend": outcome.backend,
                           "damaged_cells": outcome.damaged})
    result.message = outcome.with_damaged(result.message)
    result.message = outcome.with_refused(result.message)
    result.timings["sweep"] = outcome.seconds
    sweep.finalize(result, out)
    return result


def assemble_ladder(spec, cells) -> object:
    """The cells of a ladder sweep as arrays indexed [rung, decay, seed, …] (NaN where absent)."""
    from dyntools.engine import record
    from dyntools.engine.result import RunResult

    rungs = list(dict.fromkeys(c["rung"] for c in spec.cells))
    decays = list(dict.fromkeys(c["decay"] for c in spec.cells if c["decay"] != "-")) or ["-"]
    S = max(c["seed_index"] for c in spec.cells) + 1
    K = max(np.size(r["test_acc"]) for r in cells)
    shape = (len(rungs), len(decays), S)
    arrays = {k: np.full(shape + (K,), np.nan) for k in ("train_acc", "test_acc", "train_loss", "test_loss")}
    scalars = sorted({k for r in cells for k in r if k.startswith(("final_", "stat_")) or k in
                      ("majority", "exact_nearest", "exact_projection", "disagree_cells", "disagree_labels")})
    for k in scalars:
        arrays[k] = np.full(shape, np.nan)
    diverged = 0
    for c, r in zip(spec.cells, cells):
        i = rungs.index(c["rung"])
        js = range(len(decays)) if c["decay"] == "-" else [decays.index(c["decay"])]
        for j in js:
            for k in ("train_acc", "test_acc", "train_loss", "test_loss"):
                v = np.asarray(r[k], dtype=float)
                arrays[k][i, j, c["seed_index"], :v.size] = v
                if v.size < K:          # the exact rule is constant: fill its curve
                    arrays[k][i, j, c["seed_index"], v.size:] = v[-1]
            for k in scalars:
                if k in r:
                    arrays[k][i, j, c["seed_index"]] = float(r[k])
        diverged += int(r.get("status") == "diverged")
    arrays["steps"] = record.linear_grid(spec.config["steps"], spec.config["frames"])
    config = {"rungs": rungs, "decays": decays, "seeds": S, "params": spec.config}
    ladder = ladder_rows(rungs, decays, arrays, spec.config["rule"])
    summary = {"ladder": ladder, "cells": len(spec.cells), "diverged_cells": diverged,
               "majority_median": float(np.nanmedian(arrays["majority"])),
               "disagreement_cells_median": float(np.nanmedian(arrays["disagree_cells"])),
               "disagreement_labels_median": float(np.nanmedian(arrays["disagree_labels"]))}
    status = "diverged" if diverged else "completed"
    message = (f"{diverged} of {len(spec.cells)} cells diverged" if diverged
               else f"{len(spec.cells)} cells finished: {len(rungs)} rungs x {len(decays)} decays x {S} seeds")
    return RunResult("voronoi-ladder", config, arrays, status, message, seed=spec.seed, summary=summary, timings={})


def ladder_rows(rungs, decays, arrays, rule: str) -> list[dict]:
    """One row per (rung, decay): final accuracies (median [min, max] over seeds) against the exact
    rule and the majority baseline (against the environment's ``rule`` labels), and parameter norms."""
    rows = []
    for i, r in enumerate(rungs):
        for j, d in enumerate(decays):
            if r == "exact" and j > 0:
                continue
            te = arrays["final_test_acc"][i, j]
            tr = arrays["final_train_acc"][i, j]
            row = {"rung": r, "decay": "-" if r == "exact" else d, "seeds": int(np.sum(np.isfinite(te))),
                   "train acc": _med_band(tr), "eval acc": _med_band(te),
                   "exact rule": float(np.nanmedian(arrays[f"exact_{rule}"][i, j])),
                   "majority": float(np.nanmedian(arrays["majority"][i, j]))}
            for g in ("logits", "centers"):
                key = f"stat_{g}_l2"
                if key in arrays and np.any(np.isfinite(arrays[key][i, j])):
                    row[f"‖{g}‖₂"] = float(np.nanmedian(arrays[key][i, j]))
                    row[f"{g} ≈ 0"] = float(np.nanmedian(arrays[f"stat_{g}_near_zero"][i, j]))
            rows.append(row)
    return rows


def _med_band(v) -> str:
    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "-"
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


def ladder_table(result, markdown: bool = False) -> str:
    from dyntools.tables import markdown_table, text_table

    rows = result.summary["ladder"]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return markdown_table(rows, columns) if markdown else text_table(rows, columns)


# ------------------------------------------------------------------------------------ report entry

#: ``dyntools reproduce``: the full size (the study's settings, the benchmark's batch and steps) and
#: the quick one (256 learned centers, 300 steps; every rung, decay type and seed still present)
REPORT_FULL = dict(n=4000, n_test=2000, steps=2000, batch=64, frames=30, n_centers=2048)
REPORT_QUICK = dict(n=1000, n_test=600, steps=250, batch=64, frames=5, n_centers=192)

DECAY_RULES = {
    "l2": "θ ← θ − lr_t (m̂/(√v̂ + ε) + λθ) (AdamW)",
    "l1": "θ ← θ − lr_t (m̂/(√v̂ + ε) + λ sign θ)",
    "l1l2": "θ ← θ − lr_t (m̂/(√v̂ + ε) + λ((1 − ρ)θ + ρ sign θ)), ρ = 1/2 (adamw_l1l2)",
    "min": "θ ← θ − lr_t (m̂/(√v̂ + ε) + λ min_G|θ| sign θ), λ = 1, G = the parameter's group",
}


def rules_disagreement(seed: int, envs: int = 5, points: int = 20000) -> dict:
    """How often the two partition rules disagree on ``points`` uniform points of ``envs`` study-size
    environments (cells and labels; median, min, max)."""
    from dyntools.data.voronoi import disagreement, voronoi

    cells, labels = [], []
    for i in range(envs):
        env = voronoi(points, n_test=1, seed=seed, stream_key=(1000 + i,))
        d = disagreement(env.X, env.centers, env.center_labels)
        cells.append(d["cells"])
        labels.append(d["labels"])
    return {"cells": [float(np.median(cells)), float(min(cells)), float(max(cells))],
            "labels": [float(np.median(labels)), float(min(labels)), float(max(labels))], "envs": envs,
            "points": points}


def reproduce(ctx):
    """Catalogue entry: environment + both rules, the ladder over rungs × decay types × 5 seeds, and the
    animations (quick: 192 learned centers, 250 steps, the top rung with L2 decay only)."""
    from functools import partial

    from dyntools.plots import voronoi as vplots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    size = REPORT_QUICK if ctx.quick else REPORT_FULL
    base = make_params(**size)
    figures, numbers = [], {}
    dis = rules_disagreement(ctx.seed)
    numbers["rules_disagree"] = dis
    env = environment(base, ctx.seed, 0)
    figures += vplots.env_figure(env.centers, env.center_labels, env.box, env.n_classes, ctx.figure_dir, ("png",),
                                 stem="voronoi_env")
    # the exact rule on projection-labelled environments (a headline check below), the min decay with the
    # scalars exempt (the every-group runs are the ladder's own (centers, min) cells), the MLP baseline on raw
    # inputs x (the ladder's own mlp cells see x/s): the same environments and minibatches
    exact_p = dataclasses.replace(base, rung="exact", rule="projection", seeds=5)
    exempt_p = dataclasses.replace(base, rung="centers", decay="min", no_decay=("offset", "scale", "plus-minus"),
                                   seeds=5, frames=2)
    raw_p = dataclasses.replace(base, rung="mlp", decay="l2", mlp_inputs="raw", seeds=5, frames=2)
    compile_once(base, (exempt_p, raw_p))          # here once, then loaded by the workers of both pools
    # the ladder's cells, and below the independent experiments, on every core (each run is a function of its
    # parameters and seed alone: the same bits as one after the other in this process)
    ladder = run_ladder(base, ctx.out_dir / "runs" / "voronoi-ladder", seeds=5, seed=ctx.seed, workers=None,
                        progress=ctx.progress)
    figures += vplots.ladder_curves(ladder, ctx.figure_dir, ("png",), stem="voronoi_ladder")
    rungs, decays = ladder.config["rungs"], ladder.config["decays"]
    # animations: the top rung with L2 decay; at full size also every other rung (L2) and the top rung with
    # each other decay type (the seed animates its optimizers' "vectors" and "scalars")
    animated = [("centers", "l2")]
    if not ctx.quick:
        animated += [(r, "l2") for r in RUNG_NAMES[1:-1]] + [("centers", d) for d in DECAYS if d != "l2"]
    jobs = [partial(animated_run, dataclasses.replace(base, rung=rung, decay=decay, seeds=1), ctx.seed,
                    ctx.out_dir / "runs" / f"voronoi-{rung}-{decay}", ctx.figure_dir,
                    f"voronoi_{rung}_{decay}".replace("-", "_"), 60 if ctx.quick else 100) for rung, decay in animated]
    jobs += [partial(run_experiment, exact_p, seed=ctx.seed), partial(run_experiment, exempt_p, seed=ctx.seed),
             partial(run_experiment, raw_p, seed=ctx.seed)]
    *anim_figures, exact_proj, exempt, mlp_raw = in_parallel(jobs)
    figures = [ctx.relative(f) for f in figures + [f for figs in anim_figures for f in figs]]
    rows = ladder.summary["ladder"]
    numbers["ladder"] = rows
    numbers["majority_median"] = ladder.summary["majority_median"]
    top = ladder["final_test_acc"][rungs.index("centers")]
    exact = ladder["final_test_acc"][rungs.index("exact"), 0]
    majority = float(np.nanmedian(ladder["majority"]))
    # headline checks: the exact rule is exact on the labels it defines (checked on projection-labelled
    # environments: exact_proj above), and the top rung beats the majority class for every decay type
    ok = bool(exact_proj.summary["exact_vs_projection_median"] == 1.0 and np.all(np.nanmedian(top, axis=1) > majority))
    # the min decay on one-element groups is L2 decay with λ = 1 (claim voronoi-min-decay-on-a-scalar): it
    # pulls the softmax scale, the offset and the plus-minus pair towards 0; exempting them is one option away.
    # Every group decayed is the ladder's own (centers, min) cells (the same 5 trainings); the exempt runs are new.
    i_min = decays.index("min")
    scal = {"min, every group": {"eval_acc": float(np.nanmedian(top[i_min])),
                                 "scale": float(np.nanmedian(ladder["final_scale"][rungs.index("centers"), i_min]))}}
    scal["min, scalars exempt"] = {"eval_acc": exempt.summary["test_acc_median"],
                                   "scale": float(np.median(exempt["final_theta"][:, exempt.config["slices"]["scale"][0]]))}
    numbers["min_decay_scalars"] = scal
    mlp = mlp_verdict(ladder, mlp_raw, base)
    numbers["mlp_baseline"] = mlp
    columns = list(dict.fromkeys(k for r in rows for k in r))
    gifs = [f for f in figures if f.endswith(".gif")]
    stills = [f for f in figures if f.endswith(".png")]
    md = [
        f"Environment (seed 000's settings): points uniform in [−{base.box:g}, {base.box:g}]², k uniform in "
        f"{{{base.k_min}, …, {base.k_max}}} centers, {base.classes} classes, points labelled by the **nearest** "
        "center (the Voronoi partition the seed describes).",
        "",
        f"**The two partition rules are not the same.** On {dis['points']} uniform points of {dis['envs']} "
        f"environments, the seed's rule argmin_c |xᵀc/‖c‖² − 1| and the nearest-center rule put a point in a "
        f"different cell {100 * dis['cells'][0]:.1f}% of the time (median; range {100 * dis['cells'][1]:.1f}–"
        f"{100 * dis['cells'][2]:.1f}%) and give it a different label {100 * dis['labels'][0]:.1f}% of the time "
        f"(range {100 * dis['labels'][1]:.1f}–{100 * dis['labels'][2]:.1f}%). The proof suite holds the exact "
        "counterexample x = (1, 5), c₁ = (1, 0), c₂ = (0, 1) (control `voronoi-exact-rule-is-nearest-center`). "
        "The seed's rule scores |xᵀc/‖c‖² − 1| = dist(x, H_c)/‖c‖, the distance to the hyperplane through c "
        "orthogonal to c (claim `voronoi-projection-score-is-hyperplane-distance`).",
        "",
        f"Exact rule (rung 1, no parameters): eval accuracy {np.nanmedian(exact):.3f} against the nearest-center "
        f"labels, {exact_proj.summary['exact_vs_projection_median']:.3f} against labels made by its own rule "
        f"(5 seeds). Majority class: {majority:.3f}.",
        "",
        f"Ladder ({'quick: ' if ctx.quick else ''}{base.steps} steps, batch {base.batch}, {base.n} training and "
        f"{base.n_test} evaluation points, {base.n_centers} learned centers in the top rung; AdamW, λ = 10⁻² "
        "(min: λ = 1), the study's learning rate per rung; median [min, max] over 5 seeds; ‖·‖₂ and the "
        f"fraction of entries with |θ| < {NEAR_ZERO:g} at the end, seed median):",
        "",
        markdown_table(rows, columns),
        "",
        *mlp_paragraph(mlp, base),
        "",
        "Decay rules (decoupled: after Adam's preconditioner, scaled by the scheduled learning rate lr_t):",
        "",
        *[f"* `{k}`: {v}" for k, v in DECAY_RULES.items() if k in decays],
        "",
        "Why `min` trails: on a one-element group min|θ| sign θ = θ, so the study's min decay shrinks the softmax "
        "scale, the offset and each plus–minus weight by the factor (1 − lr_t) per step — L2 decay with λ = 1 "
        "(claim `voronoi-min-decay-on-a-scalar`). Top rung, 5 seeds: with every group decayed, eval accuracy "
        f"{scal['min, every group']['eval_acc']:.3f} and final scale σ {scal['min, every group']['scale']:.2f}; "
        "with the scalars exempt (`--no-decay offset,scale,plus-minus`), eval accuracy "
        f"{scal['min, scalars exempt']['eval_acc']:.3f} and σ {scal['min, scalars exempt']['scale']:.2f}.",
        "",
        "Figures: " + ", ".join(f"![]({f})" for f in stills),
        "",
        "Animations (GIF, one frame per recorded snapshot): " + ", ".join(f"[{_file_name(f)}]({f})" for f in gifs),
    ]
    numbers.update({"exact_vs_nearest": float(np.nanmedian(exact)),
                    "exact_vs_projection": exact_proj.summary["exact_vs_projection_median"],
                    "top_rung_eval_acc": {d: float(np.nanmedian(top[j])) for j, d in enumerate(decays)}})
    best = {d: float(np.nanmedian(top[j])) for j, d in enumerate(decays)}
    from dyntools import verdicts as V

    beat = {d: V.sign_test(top[j], np.full(np.shape(top[j]), majority), claim="greater") for j, d in enumerate(decays)}
    words = [v.word for v in beat.values()]
    numbers["claims"] = {f"{d} beats the majority class": v.as_dict() for d, v in beat.items()}
    headline = (f"learned centers beat the majority class ({majority:.3f}): "
                + ", ".join(f"{w} for {words.count(w)} of {len(words)} decays" for w in V.WORDS if words.count(w))
                + f" [{next(iter(beat.values())).rule}, n = {next(iter(beat.values())).n} seeds per decay; survivors "
                + ", ".join(f"{d} {v.survivors}/{v.n}" for d, v in beat.items()) + "]"
                "; median evaluation accuracy "
                + ", ".join(f"{d} {a:.3f}" for d, a in best.items())
                + f"; MLP baseline (l2, x/s) {mlp['mlp_eval_acc']:.3f}, on raw x {mlp['raw_eval_acc']:.3f}")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=figures, ok=ok, headline=headline)


#: the MLP "fails" where it recovers less than this fraction of the top rung's gain over the majority class
FAIL_FRACTION = 0.5


def mlp_verdict(ladder, raw, p: VoronoiParams) -> dict:
    """The report's measured verdict on "very hard for a deep neural network": the MLP baseline (the ladder's
    ``mlp`` cells, inputs x/s, L2 decay) against the top rung (``centers``, L2) on the same seeds — medians, the
    per-seed (paired: same environment and minibatches) gap top − MLP, and the fraction of the top rung's gain
    over the majority class that the MLP recovers, ``(acc_mlp − majority) / (acc_top − majority)`` — and the same
    network on raw inputs x (``raw``: a ``voronoi`` result of rung mlp, ``mlp_inputs="raw"``, L2)."""
    from dyntools.models.voronoi import VoronoiLadder
    from dyntools.models.voronoi_mlp import VoronoiMLP

    rungs, decays = ladder.config["rungs"], ladder.config["decays"]
    j = decays.index("l2")
    acc = ladder["final_test_acc"]
    top, net = acc[rungs.index("centers"), j], acc[rungs.index("mlp"), j]
    raw_acc = raw["test_acc"][:, -1]
    majority = float(np.nanmedian(ladder["majority"]))
    gain_top = float(np.nanmedian(top)) - majority
    lower = [r for r in rungs if r not in ("exact", "centers", "mlp")]
    gap = top - net

    best_lower = max(lower, key=lambda r: np.nanmedian(acc[rungs.index(r), j])) if lower else None

    def recovered(a):
        return float((np.nanmedian(a) - majority) / gain_top) if gain_top > 0 else float("nan")

    def span(a):
        return [float(np.nanmin(a)), float(np.nanmax(a))]

    return {"mlp_eval_acc": float(np.nanmedian(net)), "mlp_eval_range": span(net),
            "mlp_train_acc": float(np.nanmedian(ladder["final_train_acc"][rungs.index("mlp"), j])),
            "top_eval_acc": float(np.nanmedian(top)), "top_eval_range": span(top),
            "gap_median": float(np.nanmedian(gap)), "gap_range": span(gap), "top_wins": int(np.sum(gap > 0)),
            "seeds": int(np.sum(np.isfinite(gap))), "recovered": recovered(net),
            "raw_eval_acc": float(np.nanmedian(raw_acc)), "raw_eval_range": span(raw_acc),
            "raw_recovered": recovered(raw_acc), "majority": majority, "fail_fraction": FAIL_FRACTION,
            "best_lower_rung": best_lower,
            "best_lower_acc": float(np.nanmedian(acc[rungs.index(best_lower), j])) if best_lower else float("nan"),
            "mlp_params": VoronoiMLP(classes=p.classes, dim=p.dim, hidden=p.mlp_hidden).n_params,
            "top_params": VoronoiLadder("centers", classes=p.classes, dim=p.dim, n_centers=p.n_centers).n_params}


def mlp_paragraph(v: dict, p: VoronoiParams) -> list[str]:
    """The report's paragraph on the MLP baseline (numbers from :func:`mlp_verdict`)."""
    def band(key):
        lo, hi = v[f"{key}_range"]
        return f"{v[f'{key}_acc']:.3f} [{lo:.3f}, {hi:.3f}]"

    fails = v["recovered"] < FAIL_FRACTION
    fails_raw = v["raw_recovered"] < FAIL_FRACTION
    widths = "–".join(str(w) for w in (p.dim, *p.mlp_hidden, p.classes))
    lower = ""
    if v["best_lower_rung"]:
        best = f"{v['best_lower_rung']}: {v['best_lower_acc']:.3f}"
        lower = (f"; it beats every rung below the top (the best, {best})" if v["mlp_eval_acc"] > v["best_lower_acc"]
                 else f"; the best rung below the top ({best}) beats it")
    if fails:
        verdict = "the MLP **fails** where the structured model succeeds"
    else:
        verdict = ("the MLP does **not** fail where the structured model succeeds (median gap to the learned "
                   f"centers {v['gap_median']:+.3f})")
    if fails_raw:
        raw = ("on raw inputs it fails: at this budget the difficulty the seed reports is one of input scale"
               if not fails else "on raw inputs it fails too")
    else:
        raw = "on raw inputs it does not fail either"
    return [
        "**“Very hard for a deep neural network” (seed 000) — the MLP baseline** (row `mlp`). A ReLU "
        f"network {widths} ({v['mlp_params']} parameters; the top rung: {v['top_params']}) trained at the top "
        f"rung's budget: the same {p.n} training points in the same minibatches (batch {p.batch}, {p.steps} steps, "
        f"{p.steps * p.batch / p.n:g} epochs), AdamW with the top rung's learning rate {MLP_LR:g} and each decay, "
        f"the same {v['seeds']} environments and seeds, scored on the same {p.n_test} evaluation points. It sees "
        f"x/s ∈ [−1, 1]² (s = {p.box:g}, the box's known scale). With L2 decay its evaluation accuracy is "
        f"{band('mlp_eval')} (train {v['mlp_train_acc']:.3f}) against the learned centers' {band('top_eval')}; "
        f"per environment, top rung minus MLP is {v['gap_median']:+.3f} (median; range {v['gap_range'][0]:+.3f} to "
        f"{v['gap_range'][1]:+.3f}; the top rung ahead on {v['top_wins']} of {v['seeds']}). The MLP recovers "
        f"{100 * v['recovered']:.0f}% of the top rung's gain over the majority class ({v['majority']:.3f})"
        f"{lower}. On raw inputs x ∈ [−{p.box:g}, {p.box:g}]² (`--mlp-inputs raw`, all else the same) it reaches "
        f"{band('raw_eval')}: {100 * v['raw_recovered']:.0f}% of that gain.",
        "",
        f"Verdict (a member “fails” when it recovers less than {100 * FAIL_FRACTION:.0f}% of the top rung's gain "
        f"over the majority class): at this budget, with its inputs scaled, {verdict}; {raw}.",
    ]


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------------ command-line hooks

def common_params(p) -> VoronoiParams:
    """The :class:`_Common` part of ``p`` as :class:`VoronoiParams` (rung and decay at their defaults)."""
    return VoronoiParams(**{f.name: getattr(p, f.name) for f in dataclasses.fields(_Common)})


def check_ladder(p: LadderParams) -> None:
    check(p)
    validation.count("seeds", p.seeds)
    p.check_backend()


def run_simulate(p: VoronoiParams, ctx):
    return run_experiment(p, seed=ctx.seed, progress=ctx.progress)


def run_sweep(p: LadderParams, ctx):
    return run_ladder(common_params(p), ctx.out, rungs=p.rungs, decays=p.decays, seeds=p.seeds, seed=ctx.seed,
                      **p.backend(), progress=ctx.progress)


def summary(p, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary}


def table_of(p, result) -> str:
    if result.kind == "voronoi-ladder":
        from dyntools.tables import key_values

        return "\n".join([ladder_table(result), "", key_values({
            "status": result.status, "message": result.message,
            "computed / reused cells": f"{result.summary.get('computed')} / {result.summary.get('reused')}",
            "rules disagree (cells, labels)": f"{result.summary['disagreement_cells_median']:.3f}, "
                                              f"{result.summary['disagreement_labels_median']:.3f}"})])
    return table(result)


_COMMON = "batch box classes dim fixed_scale frames k k_max k_min l1_ratio lr n n_centers n_test no_decay rule " \
          "scale_init steps weight_decay"
_MLP = "mlp_hidden mlp_inputs"          # the MLP baseline's (absent from results written before it)
_MEDIANS = {f"{m}_median": "number" for m in ("disagreement_cells", "disagreement_labels", "majority")}
RESULTS = (derive("voronoi", VoronoiParams,
                  nested={"params": derive("voronoi.params", VoronoiParams, f"{_COMMON} decay rung seeds",
                                           optional=_MLP)},
                  summary={**_MEDIANS, **{f"{m}_median": "number" for m in ("exact_vs_nearest", "exact_vs_projection",
                                                                             "test_acc", "test_loss", "train_acc")},
                           "param_stats": "mapping", "seconds": "number"}),)
LADDER_RESULTS = (derive("voronoi-ladder", LadderParams, "decays rungs seeds",
                         nested={"params": derive("voronoi-ladder.params", LadderParams, _COMMON, optional=_MLP)},
                         summary={**_MEDIANS, "backend": "str", "cells": "int", "computed": "int",
                                  "damaged_cells": "list", "diverged_cells": "int", "ladder": "list", "reused": "int"}),)

EXPERIMENTS = [
    Experiment(
        name="voronoi", verb="simulate",
        help="one rung of seed 000's Voronoi ladder trained by AdamW with l2/l1/l1l2/min decay, over seeds "
             "(snapshots for the animations)",
        example="dyntools simulate voronoi --rung centers --decay l1 --seeds 5 --out runs/voronoi-centers-l1",
        params=VoronoiParams, results=RESULTS, run=run_simulate, table=table_of, summary=summary, check=check,
        figures={"voronoi": voronoi_figures.plot_result}),
    Experiment(
        name="voronoi-ladder", verb="sweep",
        help="seed 000's Voronoi ladder: rungs x decay types x seeds (local processes or Dask, resumable)",
        example="dyntools sweep voronoi-ladder --seeds 5 --workers 2 --out runs/voronoi-ladder",
        params=LadderParams, results=LADDER_RESULTS, run=run_sweep, table=table_of, summary=summary, check=check_ladder,
        figures={"voronoi-ladder": voronoi_figures.plot_result}),
]

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "voronoi": ["--seeds", "2", "--n", "200", "--n-test", "50", "--steps", "20", "--batch", "16", "--frames", "2",
                "--n-centers", "16"],
    "voronoi-ladder": ["--rungs", "exact,scale", "--decays", "l2", "--seeds", "1", "--workers", "1", "--n", "200",
                       "--n-test", "50", "--steps", "20", "--batch", "16", "--frames", "2", "--n-centers", "16"],
}

REPORT = Entry("voronoi", TITLE, reproduce, order=70)
