"""The conjecture of the sparse-features paper, tested: during loss stabilization SGD behaves like GD
with label noise of constant intensity δ (Andriushchenko et al. 2023, seed 004; issue 14).

For every seed (its own data set and initial point, shared by all methods of the seed):

1. **SGD** (batch 1) at a large constant step η, through the engine (:func:`dyntools.train`);
2. its **stabilized loss level** L̄ — the mean recorded train loss over the window
   ``[w₀T, w₁T]`` — and the **matching δ** ``= √(n r̄²/b)`` with ``r̄² = 2L̄/c`` the mean squared
   residual (c = 1 for the diagonal network's ½-mean square, 2 for the MLP's mean square; derived in
   :mod:`dyntools.dynamics.label_noise_match`): the label-noise level whose GD noise covariance equals
   SGD's under the conjecture's approximation;
3. **label-noise GD** (full batch, labels ``y + δξ``) at the same η from the same θ₀, at δ and at
   the multiples ``δ_scales`` of it (does *any* constant δ reproduce SGD?);
4. the **label-noise SDE** at the matched δ (Euler–Maruyama with ``h = η/r``, ``r = sde_substeps``, time
   τ = tη): for the diagonal network :func:`dyntools.dynamics.sde_models.simulate_diag_net`; for the MLP
   the engine itself, because the EM step ``θ − h∇L + √(ηδ̃h) φᵀZ`` (δ̃ = (2δ/n)²) *is* the label-noise
   GD step at step ``h`` with label std ``δ' = δ√(η/h) = δ√r`` (``h·2δ'/n = √(ηh)·2δ/n``), run for
   ``r·T`` steps (:func:`dyntools.dynamics.label_noise_match.mlp_label_noise_sde` states the same SDE
   for :func:`dyntools.solve`; the tests hold the two steps equal, draw for draw);
5. plain **GD** (δ = 0), the control: an agreement that GD shares says nothing about noise.

All are recorded at the same steps (the SDE at τ = tη) and measured the same way: train and test
loss, sparsity (diagonal net: ℓ0 of β = u ⊙ v; ReLU net: the feature sparsity coefficient of the
hidden layer) and the rank of the Jacobian φ_θ(X) on the training set. At the times ``fractions``·T
the table gives, per method, the relative gap to SGD of sparsity and rank ((m − m_SGD)/m_SGD) and
the test-loss ratio m/m_SGD, as the median and [10 %, 90 %] quantiles over the seeds where neither
diverged.

**Verdict** (stated, not tuned): label-noise GD at the matched δ *agrees* with SGD on a metric when the
median relative gap at the last time is within ``tolerance`` (test loss: a ratio within
``[1/loss_factor, loss_factor]``). A metric on which plain GD agrees as well tells noise from no noise
apart no better and does not count; over the rest the conjecture "holds" (all agree), "partly holds" or
"does not hold" (none agrees) on the measured data. The report also says, per metric, whether label
noise is closer to SGD than plain GD is.

Settings: the diagonal network on sparse regression ``n = 40, d = 100, r = 5``, u₀ = 0.1·1, v₀ = 0,
η = 0.3 (a step where batch-1 SGD still converges for most data sets and the loss stays in a band
while ℓ0 falls; η ≥ 0.36 diverges on most); the two-layer teacher–student ReLU net of the paper
(``teacher2``: n = 15 on the unit circle, teacher of 3, student of 20, init scales 0.5 / 0),
η = 0.35 constant (the paper's large step 0.455 diverges when kept constant; at 0.4 SGD diverges on 7 of
16 seeds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.plots import label_noise as label_noise_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "The conjecture: SGD ≈ GD with label noise (seed 004)"
MODELS = ("diag-net", "relu")
METRICS = ("train_loss", "test_loss", "sparsity", "rank")
SETUP, RUN, CMP = "setting", "runs", "comparison"


@dataclass(frozen=True)
class ConjectureParams:
    """``dyntools simulate sgd-vs-label-noise``; presets ``diag-net`` (the default) and ``relu``."""

    model: str = param("diag-net", choices=MODELS, group=SETUP,
                       help="diagonal linear network or two-layer teacher-student ReLU net")
    n: int = param(40, low=1, high=10**6, group=SETUP, help="training points (diag-net; relu uses the paper's 15)")
    d: int = param(100, low=1, high=10**5, group=SETUP, help="dimension (diag-net)")
    r: int = param(5, low=1, high=10**5, group=SETUP, help="sparsity of beta* (diag-net, <= d)")
    eta: float = param(0.3, low=0.0, low_open=True, group=RUN, help="constant step of every method")
    steps: int = param(20_000, low=10, high=10**9, group=RUN, help="iterations T")
    seeds: int = param(16, low=1, high=10**4, group=RUN, help="seeds (data set, initial point, noise streams)")
    records: int = param(40, low=4, high=10**5, group=RUN, help="recorded steps (log grid)")
    window: tuple = param((0.1, 0.5), kind="floats", low=0.0, high=1.0, metavar="A,B", group=RUN, max_len=2,
                          help="fractions of the run whose mean SGD train loss is the stabilized level")
    delta_scales: tuple = param((1.0, 4.0), kind="floats", low=0.0, low_open=True, metavar="S[,S…]", group=RUN,
                                max_len=100,
                                help="label-noise GD at these multiples of the matched delta (1 first)")
    sde_substeps: int = param(2, low=1, high=10**4, group=RUN, help="SDE step h = eta / this")
    fractions: tuple = param((0.1, 0.5, 1.0), kind="floats", low=0.0, high=1.0, low_open=True, metavar="F[,F…]",
                             max_len=100,
                             group=CMP, help="compare at these fractions of the run")
    tolerance: float = param(0.2, low=0.0, low_open=True, group=CMP,
                             help="agreement: |median relative gap| at most this (sparsity, rank)")
    loss_factor: float = param(2.0, low=1.0, low_open=True, group=CMP,
                               help="agreement: median test-loss ratio within [1/this, this]")


PRESETS = {"diag-net": {"delta_scales": (1.0, 4.0, 16.0)}, "relu": {"model": "relu", "eta": 0.35, "steps": 14_125}}
#: the full report also runs the ReLU preset at these steps (the verdict's sensitivity to η)
SENSITIVITY_ETAS = (0.3, 0.37)
#: ``dyntools reproduce --quick``: 8 seeds, shorter runs
QUICK = {"diag-net": {"steps": 5_000, "seeds": 8, "records": 24},
         "relu": {"steps": 3_000, "seeds": 10, "records": 20, "delta_scales": (1.0,)}}


def check(p: ConjectureParams) -> None:
    if p.r > p.d:
        raise ValueError(f"Invalid r: {p.r} (must be <= d = {p.d})")
    if len(p.window) != 2 or not p.window[0] < p.window[1]:
        raise ValueError(f"Invalid window: {','.join(f'{w:g}' for w in p.window)} "
                         "(expected two fractions A < B, e.g. 0.1,0.5)")
    if not p.delta_scales or p.delta_scales[0] != 1.0:
        raise ValueError("Invalid delta_scales: the first scale must be 1 (the matched delta)")
    if len(set(p.delta_scales)) != len(p.delta_scales):
        raise ValueError("Invalid delta_scales: a scale is given twice")
    if list(p.fractions) != sorted(set(p.fractions)):
        raise ValueError("Invalid fractions: must be increasing")


def method_labels(p: ConjectureParams) -> list[str]:
    """The compared methods, SGD first."""
    lngd = [f"label-noise GD, δ×{s:g}" if s != 1.0 else "label-noise GD, δ" for s in p.delta_scales]
    return ["SGD", *lngd, "label-noise SDE, δ", "GD (δ = 0)"]


# ------------------------------------------------------------------------------ the two models

def _diag_net(p: ConjectureParams, seed: int, steps: np.ndarray):
    """Every method on the diagonal network; returns (metrics {name: (M, S, K)}, diverged (M, S),
    level (S,), delta (S,), seconds)."""
    from types import SimpleNamespace

    from dyntools.data import sparse_regression
    from dyntools.dynamics import sde_models
    from dyntools.dynamics.diag_net_sgd import recorded_metrics
    from dyntools.dynamics.label_noise_match import LOSS_FACTOR, matching_delta, stabilized_level
    from dyntools.dynamics.train import train
    from dyntools.models.diag_net import DiagNet
    from dyntools.optim import optimizers as O

    S, T, d = p.seeds, p.steps, p.d
    sets = [sparse_regression(p.n, p.d, p.r, n_test=500, seed=seed, stream_key=(s,)) for s in range(S)]
    model = DiagNet(d)
    opt = O.sgd(p.eta)
    train_sets = [SimpleNamespace(X=ds.X, y=ds.y) for ds in sets]     # test losses measured below

    def measured(theta, data_sets):
        """(R, K, 2d) recordings on their data sets → metrics (R, K)."""
        R = theta.shape[0]
        u, v = theta[..., :d], theta[..., d:]
        Xs = np.stack([ds.X for ds in data_sets])
        data_of = np.arange(R, dtype=np.int64)
        m = recorded_metrics(u, v, Xs, data_of, np.stack([ds.beta_star for ds in data_sets]))
        beta = u * v
        out = {"sparsity": m["l0"], "rank": m["rank"]}
        for name, X, y in (("train_loss", "X", "y"), ("test_loss", "X_test", "y_test")):
            Xa = np.stack([getattr(ds, X) for ds in data_sets])
            ya = np.stack([getattr(ds, y) for ds in data_sets])
            with np.errstate(over="ignore", invalid="ignore"):
                out[name] = 0.5 * np.mean((np.einsum("rkd,rnd->rkn", beta, Xa) - ya[:, None, :]) ** 2, axis=-1)
        return out

    sgd = train(model, train_sets, opt, steps=T, batch=1, sampler="with-replacement", record_steps=steps,
                seed=seed)
    runs = [(measured(sgd["theta"][0], sets), sgd["diverged_at"][0])]
    level = stabilized_level(steps, runs[0][0]["train_loss"], p.window, T)
    delta = matching_delta(2.0 * level / LOSS_FACTOR["diag-net"], p.n)
    for j, scale in enumerate(p.delta_scales):
        thetas, div = np.full((S, steps.size, 2 * d), np.nan), np.full(S, -1)
        for s in range(S):
            if np.isfinite(delta[s]):
                res = train(model, train_sets[s], opt, steps=T, sampler="full", label_noise=scale * delta[s],
                            record_steps=steps, seed=seed, stream_key=(s, j))
                thetas[s], div[s] = res["theta"][0, 0], res["diverged_at"][0, 0]
        runs.append((measured(thetas, sets), div))
    u, v = np.full((S, steps.size, d), np.nan), np.full((S, steps.size, d), np.nan)
    div = np.full(S, -1)
    for s in range(S):
        if np.isfinite(delta[s]):
            res = sde_models.simulate_diag_net(sets[s], method="sde", eta=p.eta, delta=delta[s], tau=p.eta * T,
                                               h=p.eta / p.sde_substeps, paths=1, save_tau=p.eta * steps,
                                               seed=seed, stream_key=(s,))
            u[s], v[s], div[s] = res["u"][0], res["v"][0], res["diverged_at"][0]
    runs.append((measured(np.concatenate([u, v], axis=-1), sets), div))
    gd = train(model, train_sets, opt, steps=T, sampler="full", record_steps=steps, seed=seed)
    runs.append((measured(gd["theta"][0], sets), gd["diverged_at"][0]))
    return runs, level, delta


def _relu(p: ConjectureParams, seed: int, steps: np.ndarray):
    """Every method on the two-layer teacher–student ReLU net (``teacher2``); as :func:`_diag_net`."""
    from types import SimpleNamespace

    from dyntools.dynamics.label_noise_match import LOSS_FACTOR, matching_delta, stabilized_level
    from dyntools.dynamics.train import train
    from dyntools.metrics import network_metrics
    from dyntools.optim import optimizers as O
    from dyntools.relu_settings import build, get_setting

    setting = get_setting("teacher2", n_test=300)
    S, T = p.seeds, p.steps
    built = [build(setting, seed + s) for s in range(S)]
    layout = built[0][0]
    sets = [SimpleNamespace(X=b[2], y=b[3]) for b in built]
    theta0 = np.stack([b[1] for b in built])
    n = setting.n
    opt = O.sgd(p.eta)

    def measured(theta):
        out = {k: np.full((S, steps.size), np.nan) for k in METRICS}
        for s, (_, _, X, y, Xt, yt, _) in enumerate(built):
            m = network_metrics(layout, theta[s][None], X, y, Xt, yt)
            out["train_loss"][s], out["test_loss"][s] = m["train_loss"][0], m["test_loss"][0]
            out["sparsity"][s] = m["sparsity"][0, :, -1]
            out["rank"][s] = np.where(m["jac_rank"][0] >= 0, m["jac_rank"][0], np.nan)
        return out

    sgd = train(layout, sets, opt, steps=T, batch=1, sampler="distinct", record_steps=steps, seed=seed,
                theta0=theta0)
    runs = [(measured(sgd["theta"][0]), sgd["diverged_at"][0])]
    level = stabilized_level(steps, runs[0][0]["train_loss"], p.window, T)
    delta = matching_delta(2.0 * level / LOSS_FACTOR["mlp"], n)
    P = layout.n_params
    for j, scale in enumerate(p.delta_scales):
        thetas, div = np.full((S, steps.size, P), np.nan), np.full(S, -1)
        for s in range(S):
            if np.isfinite(delta[s]):
                res = train(layout, sets[s], opt, steps=T, sampler="full", label_noise=scale * delta[s],
                            record_steps=steps, seed=seed, theta0=theta0[s], stream_key=(s, j))
                thetas[s], div[s] = res["theta"][0, 0], res["diverged_at"][0, 0]
        runs.append((measured(thetas), div))
    r = p.sde_substeps                # EM at h = η/r: label-noise GD at step η/r with δ√r, r·T steps
    thetas, div = np.full((S, steps.size, P), np.nan), np.full(S, -1)
    for s in range(S):
        if np.isfinite(delta[s]):
            res = train(layout, sets[s], O.sgd(p.eta / r), steps=r * T, sampler="full",
                        label_noise=np.sqrt(r) * delta[s], record_steps=r * steps, seed=seed, theta0=theta0[s],
                        stream_key=(s, len(p.delta_scales)))
            thetas[s], div[s] = res["theta"][0, 0], res["diverged_at"][0, 0]
    runs.append((measured(thetas), div))
    gd = train(layout, sets, opt, steps=T, sampler="full", record_steps=steps, seed=seed, theta0=theta0)
    runs.append((measured(gd["theta"][0]), gd["diverged_at"][0]))
    return runs, level, delta


def simulate(p: ConjectureParams, *, seed: int = 0):
    """Run every method of ``p`` → a :class:`RunResult` of kind ``"sgd-vs-label-noise"``: arrays
    ``steps`` (K,), ``train_loss``/``test_loss``/``sparsity``/``rank`` (M, S, K) in the order of
    :func:`method_labels`, ``diverged_at`` (M, S), ``level`` and ``delta`` (S,)."""
    import time

    from dyntools.engine import record
    from dyntools.engine.result import RunResult

    seed = validation.seed(seed)
    check(p)
    steps = record.make_grid("log", p.steps, p.records)
    start = time.perf_counter()
    runs, level, delta = (_diag_net if p.model == "diag-net" else _relu)(p, seed, steps)
    seconds = time.perf_counter() - start
    arrays = {k: np.stack([m[k] for m, _ in runs]) for k in METRICS}
    arrays.update(steps=steps, diverged_at=np.stack([np.asarray(dv) for _, dv in runs]), level=level, delta=delta)
    labels = method_labels(p)
    cfg = {"model": p.model, "n": p.n if p.model == "diag-net" else 15, "d": p.d if p.model == "diag-net" else 2,
           "r": p.r, "eta": p.eta, "steps": p.steps, "seeds": p.seeds, "records": int(steps.size),
           "window": list(p.window), "delta_scales": list(p.delta_scales), "sde_substeps": p.sde_substeps,
           "fractions": list(p.fractions), "tolerance": p.tolerance, "loss_factor": p.loss_factor,
           "methods": labels,
           "sparsity": "l0 of beta (|beta_j| > 1e-3)" if p.model == "diag-net" else
           "feature sparsity coefficient (hidden layer)"}
    res = RunResult("sgd-vs-label-noise", cfg, arrays, "completed", "", seed=seed, timings={"total": seconds})
    res.summary = summarize(res)
    n_div = int((arrays["diverged_at"] >= 0).sum())
    res.status = "diverged" if n_div else "completed"
    res.message = (f"{n_div} of {arrays['diverged_at'].size} (method, seed) runs diverged; " if n_div else "") + \
        f"conjecture {res.summary['verdict']} on the measured data"
    return res


# ------------------------------------------------------------------------------ the comparison

def _q(vals) -> dict:
    vals = np.asarray(vals, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return {"median": None, "q10": None, "q90": None, "n": 0}
    q10, med, q90 = np.quantile(vals, [0.1, 0.5, 0.9])
    return {"median": float(med), "q10": float(q10), "q90": float(q90), "n": int(vals.size)}


def gaps(result) -> list[dict]:
    """Per (method ≠ SGD, time fraction): the relative gaps of sparsity and rank to SGD and the
    test-loss ratio, over the seeds where neither run diverged (quantile dicts)."""
    cfg, steps = result.config, result["steps"]
    out = []
    for f in cfg["fractions"]:
        k = int(np.argmin(np.abs(steps - f * cfg["steps"])))
        for m, label in enumerate(cfg["methods"][1:], start=1):
            row = {"method": label, "fraction": f, "step": int(steps[k])}
            for key in ("sparsity", "rank", "test_loss"):
                ref, val = result[key][0, :, k], result[key][m, :, k]
                with np.errstate(divide="ignore", invalid="ignore"):
                    row[key] = _q(val / ref if key == "test_loss" else (val - ref) / np.abs(ref))
            out.append(row)
    return out


#: The conjecture's verdict in the report's three words: a partial agreement or a metric that cannot tell noise
#: from no noise is not shown.
THREE_WORDS = {"holds": "shown", "does not hold": "contradicted", "partly holds": "not shown",
               "not checkable": "not shown"}


def summarize(result) -> dict:
    """Medians per method at the last recording, the gap table and the verdict (module docstring)."""
    cfg = result.config
    tol, fac = cfg["tolerance"], cfg["loss_factor"]
    table = gaps(result)
    last = [r for r in table if r["fraction"] == cfg["fractions"][-1]]
    matched, control = last[0], last[-1]       # label-noise GD at δ, and GD (δ = 0)

    def agrees(key, row):
        med = row[key]["median"]
        if med is None:
            return None
        return bool(1 / fac <= med <= fac) if key == "test_loss" else bool(abs(med) <= tol)

    def dist(key, row):
        med = row[key]["median"]
        return None if med is None else (abs(np.log(med)) if key == "test_loss" else abs(med))

    per_metric = {}
    for key in ("sparsity", "rank", "test_loss"):
        a, b = dist(key, matched), dist(key, control)
        per_metric[key] = {"agrees": agrees(key, matched), "gd_agrees": agrees(key, control),
                           "closer_than_gd": None if a is None or b is None else bool(a < b)}
    # a metric on which noiseless GD agrees with SGD as well as label noise does cannot tell noise from no
    # noise; label noise disagreeing where plain GD agrees counts against the conjecture
    informative = [v["agrees"] for v in per_metric.values() if not (v["gd_agrees"] and v["agrees"])]
    verdict = ("not checkable" if any(v["agrees"] is None for v in per_metric.values()) or not informative else
               "holds" if all(informative) else "does not hold" if not any(informative) else "partly holds")
    finals = {label: {key: _q(result[key][m, :, -1])["median"] for key in METRICS}
              for m, label in enumerate(cfg["methods"])}
    return {"verdict": verdict, "per_metric": per_metric, "gaps": table, "final_medians": finals,
            "delta": _q(result["delta"]), "level": _q(result["level"]),
            "diverged": {label: int((result["diverged_at"][m] >= 0).sum()) for m, label in enumerate(cfg["methods"])}}


def _fmt(q: dict, pct: bool = False) -> str:
    if q["median"] is None:
        return "—"
    f = (lambda x: f"{100 * x:+.0f}%") if pct else (lambda x: f"{x:.3g}")
    return f"{f(q['median'])} [{f(q['q10'])}, {f(q['q90'])}]"


def gap_rows(result) -> list[dict]:
    return [{"method": r["method"], "at": f"{r['fraction']:g}·T (step {r['step']})",
             "sparsity gap": _fmt(r["sparsity"], True), "rank gap": _fmt(r["rank"], True),
             "test-loss ratio": _fmt(r["test_loss"]), "seeds": r["sparsity"]["n"]} for r in result.summary["gaps"]]


def final_rows(result) -> list[dict]:
    s = result.summary
    return [{"method": label, "diverged": f"{s['diverged'][label]}/{result.config['seeds']}",
             **{k.replace("_", " "): ("—" if v is None else f"{v:.3g}") for k, v in s["final_medians"][label].items()}}
            for label in result.config["methods"]]


def verdict_text(result) -> str:
    s, cfg = result.summary, result.config
    parts = []
    for key, v in s["per_metric"].items():
        name = {"sparsity": "sparsity", "rank": "Jacobian rank", "test_loss": "test loss"}[key]
        if v["agrees"] is None:
            parts.append(f"{name}: not checkable")
            continue
        note = ("uninformative: plain GD agrees too" if v["gd_agrees"] and v["agrees"] else
                "while plain GD agrees" if v["gd_agrees"] else
                "closer to SGD than plain GD" if v["closer_than_gd"] else "NOT closer than plain GD")
        parts.append(f"{name}: {'agrees' if v['agrees'] else 'DISAGREES'} ({note})")
    return (f"Conjecture **{s['verdict']}** on the measured data (a metric on which plain GD and label "
            f"noise both agree with SGD does not count) ({cfg['model']}, {cfg['seeds']} seeds, "
            f"matched δ median {_fmt(s['delta'])}; at T, tolerance ±{cfg['tolerance']:.0%} for the relative gaps, "
            f"×{cfg['loss_factor']:g} for the test loss): " + "; ".join(parts) + ".")


# ------------------------------------------------------------------------------------ report entry

def reproduce(ctx):
    """Catalogue entry: both models, 16 seeds (8 and 10 at quick size), the figure and the gap tables."""
    from dyntools import store
    from dyntools.plots import label_noise as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    md, numbers, figures = [], {}, []
    md.append("Large-step SGD (batch 1, constant η) against full-batch GD with label noise at the matched "
              "δ = √(n r̄²/b) (r̄² the mean squared residual of SGD's stabilized loss, window "
              "[0.1T, 0.5T]; derivation in `dyntools.dynamics.label_noise_match`), at multiples of δ, the "
              "label-noise SDE at δ (h = η/2), and plain GD as the control — same data, initial point and η "
              "per seed. Gap tables: median [10 %, 90 %] over the seeds where neither run diverged; "
              "sparsity/rank gaps are (m − m_SGD)/m_SGD, the test loss is the ratio m/m_SGD.\n")
    for name in PRESETS:
        p = EXPERIMENT.make(name, **(QUICK[name] if ctx.quick else {}))
        res = simulate(p, seed=ctx.seed)
        store.save(res, ctx.out_dir / "runs" / f"sgd-vs-label-noise-{name}")
        paths = plots.plot_result(res, ctx.figure_dir, ("png",), stem=f"sgd_vs_label_noise_{name}")
        figures += [ctx.relative(q) for q in paths]
        md += [f"### {name}: η = {p.eta:g}, {p.steps} steps, {p.seeds} seeds "
               f"({res.timings['total']:.1f} s)", "", verdict_text(res), "",
               markdown_table(final_rows(res)), "", markdown_table(gap_rows(res)), ""]
        md += [f"![{name}]({ctx.relative(q)})" for q in paths] + [""]
        s = res.summary
        if name == "relu" and not ctx.quick:         # how robust is the verdict to the step? (reported)
            for eta in SENSITIVITY_ETAS:
                other = simulate(EXPERIMENT.make(name, eta=eta), seed=ctx.seed)
                md += [f"Sensitivity to the step, η = {eta:g}: " + verdict_text(other) + " SGD diverged on "
                       f"{other.summary['diverged']['SGD']} of {p.seeds} seeds.", ""]
                numbers[f"{name}-eta-{eta:g}"] = {"verdict": other.summary["verdict"],
                                                  "per_metric": other.summary["per_metric"]}
        numbers[name] = {"verdict": s["verdict"], "delta_median": s["delta"]["median"],
                         "level_median": s["level"]["median"], "per_metric": s["per_metric"],
                         "final_medians": s["final_medians"], "diverged": s["diverged"], "seeds": p.seeds}
    headline = ("label-noise conjecture (SGD ≈ GD with label noise): "
                + "; ".join(f"{k} {THREE_WORDS[v['verdict']]} (n = {v['seeds']} seeds per method; survivors "
                            + " · ".join(f"{m} {v['seeds'] - int(lost)}/{v['seeds']}" for m, lost in v['diverged'].items())
                            + f"; {v['verdict']} by the medians)"
                            for k, v in numbers.items() if "-eta-" not in k)
                + " [rule: median gaps within the stated tolerance on every metric where plain GD does not already "
                  "agree]")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=figures, ok=True, headline=headline)


# ----------------------------------------------------------------------------------- the command line

def run(p: ConjectureParams, ctx: RunContext):
    return simulate(p, seed=ctx.seed)


def summary(p: ConjectureParams, result) -> dict:
    s = result.summary
    return {"status": result.status, "message": result.message, "verdict": s["verdict"],
            "per_metric": s["per_metric"], "delta": s["delta"], "level": s["level"],
            "final_medians": s["final_medians"], "diverged": s["diverged"], "seconds": result.timings}


def table(p: ConjectureParams, result) -> str:
    from dyntools.tables import text_table

    return "\n".join([f"status: {result.status} — {result.message}", verdict_text(result).replace("**", ""), "",
                      text_table(final_rows(result)), "", text_table(gap_rows(result))])


RESULTS = (derive("sgd-vs-label-noise", ConjectureParams, "d delta_scales eta fractions loss_factor model n r "
                          "records sde_substeps seeds steps tolerance window",
                  summary={"delta": "mapping", "diverged": "mapping", "final_medians": "mapping", "gaps": "list",
                           "level": "mapping", "per_metric": "mapping", "verdict": "str"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="sgd-vs-label-noise", verb="simulate",
    help="the conjecture (seed 004): large-step SGD vs GD with label noise at the matched delta, its SDE and GD",
    example="dyntools simulate sgd-vs-label-noise --preset relu --seeds 8 --seed 0 --out runs/conjecture",
    params=ConjectureParams, presets=PRESETS, figures={"sgd-vs-label-noise": label_noise_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "sgd-vs-label-noise": ["--n", "10", "--d", "20", "--r", "2", "--steps", "200", "--seeds", "2", "--records", "6"],
}

REPORT = Entry("sgd-vs-label-noise", TITLE, reproduce, order=65, single_core=True)
