"""Diagonal linear networks: large-step SGD learns sparse features (Andriushchenko et al. 2023; seed 004).

The paper's setting (Section "Empirical evidence", diagonal linear networks): sparse regression
with ``n = 80, d = 200, r = 20`` (``X ~ N(0, I)``, non-negative unit-norm r-sparse ``β*``), the
network ``h(x) = ⟨u ⊙ v, x⟩`` initialised at ``u₀ = 0.1·1, v₀ = 0``, ``10⁵`` steps of SGD with
batch size 1. Four schedules (seed 004: "one with a small step size and three with initial large
step size decayed after 10%, 30% and 50% of iterations, respectively"):

* small step ``η = 0.25``, constant;
* large step ``η = 0.282``, divided by 4.8 after 10%, by 3.4 after 30%, by 1.5 after 50% of the
  iterations (one decay per run: the paper's step sizes; ``decay_mode="cumulative"`` applies all
  three decays in one run instead).

GD counterpart: ``n = 40, d = 100``, ``η = 2.0`` versus ``3.51`` with the same decays.

Each seed ``i`` draws its own data set (``sparse_regression(..., seed, stream_key=(i,))``) and its
own SGD stream; all schedules of a seed share the data and the initial point (paired comparison).
The large steps sit at the edge of stability: runs that diverge are counted and reported with
their step, and the medians are over the runs that did not diverge.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.optim.schedules import Constant, LinearWarmup, PiecewiseDecay

TITLE = "Diagonal linear networks: large-step SGD/GD learns sparse features (seed 004)"

PAPER_SGD = dict(n=80, d=200, r=20, n_test=1000, noise=0.0, method="sgd", batch=1, eta_small=0.25,
                 eta_large=0.282, decay_at=(0.1, 0.3, 0.5), decay_factors=(4.8, 3.4, 1.5),
                 decay_mode="separate", warmup=0, schedules=("small", "large"), steps=100_000, seeds=16,
                 alpha=0.1, init="paper", init_scale=0.1, label_noise=0.0, momentum=0.0, weight_decay=0.0,
                 records=350, grid="log", dense_start=10)
PAPER_GD = {**PAPER_SGD, "n": 40, "d": 100, "method": "gd", "eta_small": 2.0, "eta_large": 3.51}

PRESETS = {"paper-sgd": PAPER_SGD, "paper-gd": PAPER_GD}

#: ``dyntools reproduce --quick``: the same schedules, fewer steps/seeds/recordings.
QUICK = {"paper-sgd": {"steps": 10_000, "seeds": 16, "records": 100, "n_test": 200},
         "paper-gd": {"steps": 4_000, "seeds": 16, "records": 80, "n_test": 200}}

SCHEDULE_NAMES = ("small", "large", "large-constant")
DECAY_MODES = ("separate", "cumulative")


def build_runs(eta_small: float, eta_large: float, decay_at, decay_factors, decay_mode: str = "separate",
               warmup: int = 0, schedules=("small", "large")) -> list[tuple[str, float, object]]:
    """The compared (label, η, Schedule) triples.

    ``"small"``: η_small constant. ``"large"``: η_large with the decays — one run per
    (fraction, factor) in ``"separate"`` mode, one run with all of them in ``"cumulative"`` mode.
    ``"large-constant"``: η_large without decay. ``warmup > 0`` prepends a linear warm-up of that
    many steps to the large-step runs.
    """
    validation.positive("eta_small", eta_small)
    validation.positive("eta_large", eta_large)
    validation.one_of("decay_mode", decay_mode, DECAY_MODES)
    warmup = validation.count("warmup", warmup, minimum=0)
    decay_at = tuple(float(f) for f in decay_at)
    decay_factors = tuple(float(f) for f in decay_factors)
    for f in decay_at:
        validation.in_interval("decay fraction", f, 0.0, 1.0, closed_low=False, closed_high=False)
    for f in decay_factors:
        validation.positive("decay factor", f)
    if len(decay_at) != len(decay_factors):
        raise ValueError(f"Invalid decay_factors: {len(decay_factors)} factors for {len(decay_at)} "
                         "decay fractions")
    if not schedules:
        raise ValueError("Invalid schedules: need at least one")
    for s in schedules:
        validation.one_of("schedule", s, SCHEDULE_NAMES)

    def warm(sched):
        return LinearWarmup(warmup, sched) if warmup else sched

    runs = []
    for name in schedules:
        if name == "small":
            runs.append((f"small η={eta_small:g}", eta_small, Constant()))
        elif name == "large-constant":
            runs.append((f"large η={eta_large:g}, constant", eta_large, warm(Constant())))
        elif decay_mode == "separate" or not decay_at:
            if not decay_at:
                runs.append((f"large η={eta_large:g}, constant", eta_large, warm(Constant())))
            for frac, fac in zip(decay_at, decay_factors):
                runs.append((f"large η={eta_large:g}, ÷{fac:g} at {frac:.0%}", eta_large,
                             warm(PiecewiseDecay((frac,), (fac,)))))
        else:
            label = ", ".join(f"÷{fac:g} at {frac:.0%}" for frac, fac in zip(decay_at, decay_factors))
            runs.append((f"large η={eta_large:g}, {label}", eta_large,
                         warm(PiecewiseDecay(decay_at, decay_factors))))
    return runs


def resolve(preset: str | None = "paper-sgd", **overrides) -> dict:
    """The preset's parameters with ``overrides`` applied (``None`` values are ignored)."""
    base = dict(PAPER_SGD if preset is None else PRESETS[validation.one_of("preset", preset, tuple(PRESETS))])
    unknown = set(overrides) - set(PAPER_SGD) - {"bound", "rank_threshold", "l0_threshold", "keep_params",
                                                   "sharpness_iters", "data", "u0", "v0", "indices"}
    if unknown:
        raise TypeError(f"unknown parameters: {', '.join(sorted(unknown))}")
    base.update({k: v for k, v in overrides.items() if v is not None})
    return base


def make_datasets(params: dict, seed: int):
    """One data set per seed (``stream_key=(i,)``), or the user's data set for every seed."""
    from dyntools.data import sparse_regression

    seeds = validation.count("seeds", params["seeds"])
    if params.get("data") is not None:
        return [params["data"]] * seeds
    return [sparse_regression(params["n"], params["d"], params["r"], n_test=params["n_test"],
                              noise=params["noise"], seed=seed, stream_key=(i,)) for i in range(seeds)]


def run_experiment(preset: str | None = "paper-sgd", *, seed: int = 0, progress: bool = False,
                   chunks: int = 20, **overrides):
    """Run every schedule of ``preset`` (with ``overrides``) over ``seeds`` seeds → ``RunResult``."""
    from dyntools.dynamics.diag_net_sgd import L0_THRESHOLD, RANK_THRESHOLD, train_diag_net

    p = resolve(preset, **overrides)
    seed = validation.seed(seed)
    runs = build_runs(p["eta_small"], p["eta_large"], p["decay_at"], p["decay_factors"], p["decay_mode"],
                      p["warmup"], p["schedules"])
    datasets = make_datasets(p, seed)
    result = train_diag_net(
        datasets, runs, steps=p["steps"], method=p["method"], batch=p["batch"], label_noise=p["label_noise"],
        momentum=p["momentum"], weight_decay=p["weight_decay"], init=p["init"], alpha=p["alpha"],
        init_scale=p["init_scale"], records=p["records"], grid=p["grid"], dense_start=p["dense_start"],
        keep_params=p.get("keep_params", False), bound=p.get("bound", 1e6),
        u0=p.get("u0"), v0=p.get("v0"), indices=p.get("indices"),
        rank_threshold=p.get("rank_threshold", RANK_THRESHOLD),
        l0_threshold=p.get("l0_threshold", L0_THRESHOLD), sharpness_iters=p.get("sharpness_iters", 1000),
        seed=seed, chunks=chunks, progress=progress)
    result.config.update({"preset": preset, "r": p["r"], "noise": p["noise"], "eta_small": p["eta_small"],
                          "eta_large": p["eta_large"], "decay_at": list(p["decay_at"]),
                          "decay_factors": list(p["decay_factors"]), "decay_mode": p["decay_mode"],
                          "warmup": p["warmup"], "schedules": list(p["schedules"]),
                          "data": "given" if p.get("data") is not None else "sparse_regression",
                          "init_given": p.get("u0") is not None, "replayed": p.get("indices") is not None})
    return result


def final_etas(result) -> np.ndarray:
    """The step size at the last step of each run (for the 2/η comparison with the sharpness)."""
    return result["etas"][:, -1]


def _fmt(stats: dict, digits: int = 3) -> str:
    """``median [q10, q90]`` of :func:`~dyntools.dynamics.diag_net_sgd.summarize` stats, or ``—``."""
    if stats["median"] is None:
        return "—"
    return f"{stats['median']:.{digits}g} [{stats['q10']:.{digits}g}, {stats['q90']:.{digits}g}]"


def table_rows(result) -> list[dict]:
    """One row per schedule: final metrics as ``median [q10, q90]`` over non-diverged seeds."""
    rows = []
    eta_end = final_etas(result)
    for g, spec in enumerate(result.config["runs"]):
        s = result.summary["runs"][spec["label"]]
        rows.append({"schedule": spec["label"], "diverged": f"{s['diverged']}/{s['seeds']}",
                     "diverged at": ", ".join(str(x) for x in sorted(s["diverged_at"])) or "—",
                     "train loss": _fmt(s["train_loss"]), "test loss": _fmt(s["test_loss"]),
                     "ℓ0(β)": _fmt(s["l0"]), "rank φ": _fmt(s["rank"]), "recall": _fmt(s["recall"], 2),
                     "precision": _fmt(s["precision"], 2),
                     "λ_max · η_end / 2": (f"{s['sharpness']['median'] * eta_end[g] / 2:.3g}"
                                           if s["sharpness"]["median"] is not None else "—")})
    return rows


def sparser_check(result, key: str = "l0", min_alive: int = 3, judge: bool = True) -> tuple[bool | None, str]:
    """The paper's claim on one result: the last large-step run (the longest large-step phase) ends
    with a lower median ``key`` than the small-step run (the first). ``None`` (not checkable) when
    fewer than ``min_alive`` seeds of either survived; ``judge=False`` leaves the verdict out of the text."""
    runs = result.summary["runs"]
    labels = [r["label"] for r in result.config["runs"]]
    small, last = labels[0], labels[-1]
    a, b = runs[small][key]["median"], runs[last][key]["median"]
    alive = min(runs[lab]["seeds"] - runs[lab]["diverged"] for lab in (small, last))
    name = "ℓ0" if key == "l0" else key
    if a is None or b is None or alive < min_alive:
        return None, f"{name}: not checkable (too few non-diverged seeds)"
    holds = bool(b < a)
    text = f"{name}: {b:.3g} ({last}) vs {a:.3g} ({small})"
    return holds, text + (f" — {'holds' if holds else 'FAILS'}" if judge else "")


#: Multipliers of both step sizes in the step-size scan (1.0 is the paper's pair).
SCAN_SCALES = (0.6, 0.7, 0.8, 0.9, 1.0)


def step_scan(preset: str = "paper-sgd", scales=SCAN_SCALES, *, seed: int = 0, progress: bool = False,
              reuse: dict | None = None, **overrides) -> list[tuple[float, object]]:
    """The preset with both step sizes multiplied by each ``scale`` — same data sets, SGD streams,
    initial points and decays — to locate the edge of stability and see whether the sparsity effect
    survives below it. Returns ``[(scale, RunResult)]``; ``reuse`` maps a scale to a result already
    computed with these settings (the recording grid aside: the scan uses final metrics), e.g. the
    paper's pair at 1.0. The sharpness is skipped unless ``sharpness_iters`` is given.
    """
    p = resolve(preset, **overrides)
    out = []
    for c in scales:
        c = validation.positive("scale", c)
        if reuse and c in reuse:
            out.append((c, reuse[c]))
            continue
        kw = {"sharpness_iters": 0, **overrides, "eta_small": p["eta_small"] * c, "eta_large": p["eta_large"] * c}
        out.append((c, run_experiment(preset, seed=seed, progress=progress, **kw)))
    return out


def scan_rows(scan) -> list[dict]:
    """One row per (scale, schedule): divergences and final metrics (median [10%, 90%])."""
    from dyntools.plots.diag_net import schedule_name

    rows = []
    for c, res in scan:
        for spec in res.config["runs"]:
            s = res.summary["runs"][spec["label"]]
            rows.append({"scale c": f"{c:g}", "schedule": schedule_name(spec["label"]), "η": f"{spec['eta']:.4g}",
                         "diverged": f"{s['diverged']}/{s['seeds']}", "ℓ0(β)": _fmt(s["l0"]),
                         "rank φ": _fmt(s["rank"]), "test loss": _fmt(s["test_loss"])})
    return rows


def reproduce(ctx):
    """Catalogue entry: the SGD and GD experiments (reduced sizes at ``ctx.quick``)."""
    from dyntools import store
    from dyntools.plots import diag_net as diag_plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    parts, numbers, figures = [], {}, []
    ok = True
    paper_sgd = None
    for name in ("paper-sgd", "paper-gd"):
        overrides = QUICK[name] if ctx.quick else {}
        result = run_experiment(name, seed=ctx.seed, progress=ctx.progress, **overrides)
        store.save(result, ctx.out_dir / "runs" / name)
        paths = diag_plots.plot_result(result, ctx.figure_dir, ("png",), stem=f"diag_net_{name}")
        figures += [ctx.relative(p) for p in paths]
        runs = result.summary["runs"]
        labels = [r["label"] for r in result.config["runs"]]
        numbers[name] = {lab: {"diverged": runs[lab]["diverged"], "seeds": runs[lab]["seeds"],
                               "test_loss_median": runs[lab]["test_loss"]["median"],
                               "l0_median": runs[lab]["l0"]["median"],
                               "rank_median": runs[lab]["rank"]["median"],
                               "sharpness_final_median": runs[lab]["sharpness"]["median"],
                               "sharpness_unconverged": runs[lab]["sharpness_unconverged"]}
                         for lab in labels}
        # Headline check (the paper's claim): the longer the large step is kept, the sparser the
        # final predictor — the 50%-decay run ends with a lower median ℓ0(β) than the small-step
        # run (checked only where at least 3 seeds of each survived). The rank is reported beside it.
        holds, l0_text = sparser_check(result, "l0")
        ok &= holds is not False
        checks = [l0_text, "(reported, not checked) " + sparser_check(result, "rank", judge=False)[1]]
        if name == "paper-sgd":
            paper_sgd = result
        p = result.config
        unconverged = sum(runs[lab]["sharpness_unconverged"] for lab in labels)
        recorded = sum(runs[lab]["sharpness_recorded"] for lab in labels)
        mostly = [lab for lab in labels if runs[lab]["diverged"] > runs[lab]["seeds"] / 2]
        remark = ""
        if mostly:
            remark = (f"Most seeds diverged for {', '.join(mostly)}: at this data scale "
                      "(X ~ N(0, I), unit-norm β*) these steps are beyond the edge of stability for most "
                      "data sets, mostly within the first few hundred steps; medians are over the "
                      "surviving seeds only.\n\n")
        parts.append(
            f"### {name}: n={p['n']}, d={p['d']}, r={p['r']}, {p['method'].upper()}"
            f"{' batch ' + str(p['batch']) if p['method'] != 'gd' else ''}, {p['steps']} steps, "
            f"{p['seeds']} seeds\n\n{result.message}.\n\n" + remark
            + markdown_table(table_rows(result)) + "\n\n"
            + "Final metrics: median [10%, 90%] over non-diverged seeds; ℓ0 counts |β_j| > "
            + f"{p['l0_threshold']:g}, the rank counts σ_i > {p['rank_threshold']:g}·σ_max of "
            + "φ = [X⊙v, X⊙u]; the last column is where the final step sits against 2/λ_max "
            + "(> 1: beyond the GD stability limit of the final point). The last panel follows "
            + "η_t·λ_max/2 along the run (λ_max of the full-batch Hessian at every recording, power "
            + f"iteration on HVPs, at most {p['sharpness_iters']} iterations: "
            + f"{unconverged} of {recorded} recordings did not converge and keep their last estimate).\n\n"
            + "Headline check (sparser with the longest large-step phase): " + "; ".join(checks) + "\n\n"
            + "\n".join(f"![{name}]({ctx.relative(q)})" for q in paths))

    # The step-size scan: where is the edge for SGD, and does the effect need it? (reported, not gated)
    overrides = {**(QUICK["paper-sgd"] if ctx.quick else {}), "records": 30}
    scan = step_scan("paper-sgd", seed=ctx.seed, progress=ctx.progress, reuse={1.0: paper_sgd}, **overrides)
    for c, res in scan:
        if c != 1.0:
            store.save(res, ctx.out_dir / "runs" / "paper-sgd-scan" / f"c{c:g}")
    scan_paths = diag_plots.plot_scan(scan, ctx.figure_dir, ("png",), stem="diag_net_paper-sgd_scan")
    figures += [ctx.relative(q) for q in scan_paths]
    verdicts = [(c, *sparser_check(res, "l0")) for c, res in scan]
    def scan_numbers(res):
        runs = res.summary["runs"]
        return {diag_plots.schedule_name(lab): {"diverged": runs[lab]["diverged"],
                                                "l0_median": runs[lab]["l0"]["median"],
                                                "test_loss_median": runs[lab]["test_loss"]["median"]}
                for lab in runs}

    numbers["paper-sgd-scan"] = {
        f"{c:g}": {"verdict": {True: "holds", False: "fails", None: "not checkable"}[v], **scan_numbers(res)}
        for (c, res), (_, v, _) in zip(scan, verdicts)}
    checkable = [v for _, v, _ in verdicts if v is not None]
    parts.append(
        "### Step-size scan: paper-sgd with both steps × c\n\n"
        "At the paper's pair (c = 1) most seeds diverge. The scan multiplies both step sizes by c, with "
        "the same data sets, SGD streams, initial points and decays, to show where the edge of stability "
        "lies and whether the sparsity effect needs it (final metrics; median [10%, 90%] over "
        "non-diverged seeds).\n\n" + markdown_table(scan_rows(scan)) + "\n\n"
        + "Sparser with the longest large-step phase, per scale (reported, not gated): "
        + "; ".join(f"c = {c:g}: {text}" for c, _, text in verdicts)
        + f". It holds at {sum(checkable)} of {len(checkable)} checkable scales.\n\n"
        + "\n".join(f"![step-size scan]({ctx.relative(q)})" for q in scan_paths))
    return Section(TITLE, "\n\n".join(parts), numbers=numbers, figures=figures, ok=ok)
