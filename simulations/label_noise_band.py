"""The O(√(ηδ)) band of label-noise SGD around the sparse solution's manifold, measured (seed 004; issue 42).

**The claim.** Seed 004 (the diagonal-network section, after Pillaud-Vivien, Reygner & Flammarion 2022): along
the label-noise dynamics ``dθ = −∇L(θ)dτ + √(ηδ) φ_θ(X)ᵀ dB_τ`` the predictor ``β = u ⊙ v`` (i) shrinks
exponentially off the support of β* and (ii) stays with high probability within O(√(ηδ)) of the sparse
solution — it "oscillates in the parameter space at level O(√(ηδ)) on its support". Measured here: the
exponent of that level in ηδ, predicted ½.

**The dynamics.** Label-noise SGD on the diagonal network ``h(x) = ⟨u ⊙ v, x⟩``, ``L = (1/2n)‖Xβ − y‖²``:
batch 1 drawn with replacement, labels ``y_i + σξ`` (ξ ~ N(0, 1) fresh at every step), step η, through
:func:`dyntools.train`. Its noise per step is ``η σ ξ ∇h_i`` with covariance ``η² σ² (1/n) φᵀφ`` on average
over i, i.e. ``ησ²/n · φᵀφ`` per unit of time ``τ = tη``: the seed's SDE with ``δ = σ²/n``. So a cell (η, δ) of
the grid runs ``σ = √(nδ)``, for ``T = round(τ_end/η)`` steps (the same SDE time for every η).

**The manifold and the distance.** With β* the r-sparse teacher (noiseless labels ``y = Xβ*``), the sparse
solution's manifold is ``M = {θ = (u, v) ∈ R^{2d} : u ⊙ v = β*}``. The distance is the Euclidean one in
parameter space, ``D(θ) = min_{θ' ∈ M} ‖θ − θ'‖₂``. M is a product of one curve per coordinate, so
``D² = Σ_j D_j²`` with ``D_j`` the distance from ``(u_j, v_j)`` to ``{ab = β*_j}``: off the support (β*_j = 0)
the two axes, ``D_j = min(|u_j|, |v_j|)``; on it the hyperbola, ``D_j² = min_a (a − u_j)² + (β*_j/a − v_j)²``,
whose minimisers are real roots of ``a⁴ − u_j a³ + v_j β*_j a − β*_j² = 0`` (:func:`manifold_distance`; the
quartic's real roots by the eigenvalues of its companion matrix). The predictor-space distance
``‖u ⊙ v − β*‖₂`` is reported beside it.

**The measurement.** Every run starts on M: ``u_j = √|β*_j|``, ``v_j = sign(β*_j)√|β*_j|`` on the support and the
paper's ``u_j = α``, ``v_j = 0`` off it (so the off-support coordinates are live: label noise kicks ``v_j`` by
``u_j``'s multiple). The band's level at a cell is the root mean square of D over the recorded steps of the
last ``1 − burn`` of the run (a linear grid of ``records`` steps: the stationary band, not the transient).
Per seed (its own data set ``sparse_regression(n, d, r, seed, stream_key=(s,))``, its own SGD stream, shared
by the cells: common random numbers), the exponent is the least-squares slope of ``log level`` against
``log(ηδ)`` over the grid; the η- and δ-exponents are also fitted apart (``log level = a log η + b log δ + c``:
the claim says both are ½). **Verdict:** :func:`dyntools.verdicts.exponent_rule` on the per-seed exponents
against ½ with tolerance ``tolerance`` (default 0.1: an exponent of 0.4–0.6 is O(√(ηδ)), ⅓ or 1 is not).
A seed with a diverged run drops out (the verdict says how many remain).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import memory, validation
from dyntools.plots import label_noise_band as label_noise_band_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "The O(√(ηδ)) band of label-noise SGD around the sparse solution (seed 004)"
KIND = "label-noise-band"
PREDICTED = 0.5
SETUP, RUN = "setting", "runs"


@dataclass(frozen=True)
class BandParams:
    """``dyntools simulate label-noise-band``: the (η, δ) grid, the data and the measurement."""

    etas: tuple = param((0.005, 0.01, 0.02, 0.04), kind="floats", low=0.0, low_open=True, high=1.0, max_len=100,
                        metavar="E1,E2,..", group=RUN, help="SGD steps eta")
    deltas: tuple = param((0.001, 0.004, 0.016, 0.064), kind="floats", low=0.0, low_open=True, high=100.0,
                          max_len=100, metavar="D1,D2,..", group=RUN,
                          help="SDE intensities delta (label-noise std sqrt(n delta))")
    tau: float = param(80.0, low=0.0, low_open=True, high=1e6, group=RUN, help="SDE time of every run (steps tau/eta)")
    burn: float = param(0.5, low=0.0, high=1.0, high_open=True, group=RUN,
                        help="fraction of the run before the band is measured")
    records: int = param(41, low=2, high=10**4, group=RUN, help="recorded steps in the measured part")
    seeds: int = param(16, low=1, high=1000, group=RUN, help="seeds (data set and SGD stream each)")
    n: int = param(40, low=1, high=10**5, group=SETUP, help="training points")
    d: int = param(100, low=1, high=10**5, group=SETUP, help="dimension")
    r: int = param(5, low=1, high=10**5, group=SETUP, help="support size of beta* (<= d)")
    alpha: float = param(0.1, low=0.0, high=1e3, group=SETUP, help="u off the support at the start (v = 0 there)")
    tolerance: float = param(0.1, low=0.0, low_open=True, high=1.0, group=RUN,
                             help="the verdict's margin around the predicted exponent 1/2")


#: ``dyntools reproduce --quick``: 3 × 3 cells, 8 seeds, half the time
QUICK = {"etas": (0.005, 0.01, 0.02), "deltas": (0.002, 0.008, 0.032), "tau": 40.0, "seeds": 8}


def check(p: BandParams) -> None:
    if p.r > p.d:
        raise ValueError(f"Invalid r: {p.r} (must be <= d = {p.d})")
    if len(p.etas) * len(p.deltas) < 3 or len(set(p.etas)) < 2 and len(set(p.deltas)) < 2:
        raise ValueError("Invalid etas/deltas: the fit needs at least 3 cells and 2 distinct values of eta*delta")
    if len({e * dl for e in p.etas for dl in p.deltas}) < 2:
        raise ValueError("Invalid etas/deltas: the fit needs 2 distinct values of eta*delta")
    for eta in p.etas:
        if round(p.tau / eta) < 2 * p.records:
            raise ValueError(f"Invalid tau: {p.tau} (tau/eta = {p.tau / eta:.3g} steps at eta {eta:g}, fewer than "
                             f"2 x records)")
    memory.require_each({      # θ recorded per path (float64), the recorder's and the result's
        "the records (2 × --seeds × --records × 2 --d)": (16 * p.seeds * p.records * 2 * p.d, "--records")})


# ------------------------------------------------------------------------------------ the distance

def _quartic_real_roots(u, v, c):
    """Real roots of ``a⁴ − u a³ + v c a − c² = 0`` (arrays of one shape; c ≠ 0): ``(roots, real)`` of shape
    (..., 4), ``real`` marking the roots whose imaginary part is round-off."""
    comp = np.zeros((*u.shape, 4, 4))
    comp[..., 0, 0], comp[..., 0, 2], comp[..., 0, 3] = u, -v * c, c * c    # monic x⁴ + a₃x³ + a₂x² + a₁x + a₀
    comp[..., 1, 0] = comp[..., 2, 1] = comp[..., 3, 2] = 1.0
    roots = np.linalg.eigvals(comp)
    real = np.abs(roots.imag) <= 1e-7 * (1.0 + np.abs(roots))
    return roots.real, real


def coordinate_distances(u, v, c) -> np.ndarray:
    """Distances from the points ``(u_j, v_j)`` to the curves ``{ab = c_j}`` (module docstring), elementwise."""
    u, v, c = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (u, v, c)))
    shape = u.shape
    u, v, c = u.ravel(), v.ravel(), c.ravel()
    out = np.minimum(np.abs(u), np.abs(v))                              # c = 0: the two axes
    on = c != 0
    if on.any():
        uo, vo, co = u[on], v[on], c[on]
        roots, real = _quartic_real_roots(uo, vo, co)
        a = np.where(real & (roots != 0), roots, np.nan)
        f = (a - uo[:, None]) ** 2 + (co[:, None] / a - vo[:, None]) ** 2
        out[on] = np.sqrt(np.nanmin(f, axis=1))
    return out.reshape(shape)


def manifold_distance(theta, beta_star) -> np.ndarray:
    """``D(θ)``: the Euclidean distance from ``θ = (u, v)`` (last axis 2d) to ``M = {u ⊙ v = β*}``; NaN where θ
    is not finite."""
    theta = np.asarray(theta, dtype=np.float64)
    d = theta.shape[-1] // 2
    ok = np.all(np.isfinite(theta), axis=-1)
    safe = np.where(ok[..., None], theta, 0.0)
    dist = np.sqrt(np.sum(coordinate_distances(safe[..., :d], safe[..., d:], beta_star) ** 2, axis=-1))
    return np.where(ok, dist, np.nan)


def start_on_manifold(beta_star, alpha: float) -> np.ndarray:
    """θ₀ ∈ M: ``(√|β*|, sign(β*)√|β*|)`` on the support, ``(α, 0)`` off it."""
    b = np.asarray(beta_star, dtype=np.float64)
    root = np.sqrt(np.abs(b))
    return np.concatenate([np.where(b != 0, root, alpha), np.where(b != 0, np.sign(b) * root, 0.0)])


# ------------------------------------------------------------------------------------ the runs and the fit

def fit_exponents(level: np.ndarray, etas, deltas) -> dict[str, np.ndarray]:
    """Per seed, the least-squares exponents of ``level`` (S, E, Δ): ``product`` (slope in log ηδ), ``eta`` and
    ``delta`` (the two-variable fit); NaN for a seed with a non-finite or non-positive level."""
    le, ld = np.meshgrid(np.log(etas), np.log(deltas), indexing="ij")
    one = np.column_stack([np.ones(le.size), (le + ld).ravel()])
    two = np.column_stack([np.ones(le.size), le.ravel(), ld.ravel()])
    out = {k: np.full(level.shape[0], np.nan) for k in ("product", "eta", "delta")}
    for s, lev in enumerate(level):
        if not np.all(np.isfinite(lev) & (lev > 0)):
            continue
        y = np.log(lev).ravel()
        out["product"][s] = np.linalg.lstsq(one, y, rcond=None)[0][1]
        out["eta"][s], out["delta"][s] = np.linalg.lstsq(two, y, rcond=None)[0][1:]
    return out


def local_exponents(level: np.ndarray, etas, deltas) -> dict[str, np.ndarray]:
    """Per seed, the slope in ``log ηδ`` over the cells with ηδ at or below the grid's median ηδ (``low``) and
    at or above it (``high``): whether the law holds across the range or bends (NaN where a half has fewer than
    two distinct ηδ)."""
    prod = np.multiply.outer(etas, deltas).ravel()
    med = np.median(prod)
    out = {}
    for name, mask in (("low", prod <= med), ("high", prod >= med)):
        out[name] = np.full(level.shape[0], np.nan)
        if np.unique(prod[mask]).size < 2:
            continue
        x = np.log(prod[mask])
        for s, lev in enumerate(level.reshape(level.shape[0], -1)[:, mask]):
            if np.all(np.isfinite(lev) & (lev > 0)):
                out[name][s] = np.polyfit(x, np.log(lev), 1)[0]
    return out


def simulate(p: BandParams, *, seed: int = 0):
    """Every (η, δ) cell × seed → a :class:`RunResult` of kind ``label-noise-band``: ``level`` and
    ``level_beta`` (S, E, Δ) (the RMS distances in parameter and predictor space), ``exponent`` /
    ``exponent_eta`` / ``exponent_delta`` (S,), ``diverged`` (S, E, Δ); the verdict in ``summary``."""
    import time
    from types import SimpleNamespace

    from dyntools.data import sparse_regression
    from dyntools.dynamics.train import train
    from dyntools.engine.result import RunResult
    from dyntools.models.diag_net import DiagNet
    from dyntools.optim import optimizers as O
    from dyntools.verdicts import exponent_rule, spread

    seed = validation.seed(seed)
    check(p)
    start = time.perf_counter()
    sets = [sparse_regression(p.n, p.d, p.r, n_test=1, seed=seed, stream_key=(s,)) for s in range(p.seeds)]
    data = [SimpleNamespace(X=ds.X, y=ds.y) for ds in sets]       # no test set: only the train loss is recorded
    betas = np.stack([ds.beta_star for ds in sets])
    theta0 = np.stack([start_on_manifold(b, p.alpha) for b in betas])
    model = DiagNet(p.d)
    E, Dn = len(p.etas), len(p.deltas)
    level, level_beta = np.full((p.seeds, E, Dn), np.nan), np.full((p.seeds, E, Dn), np.nan)
    diverged = np.zeros((p.seeds, E, Dn), dtype=bool)
    for i, eta in enumerate(p.etas):
        steps = int(round(p.tau / eta))
        rec = np.unique(np.round(np.linspace(p.burn * steps, steps, p.records)).astype(np.int64))
        rec = rec[rec >= 1]
        for j, delta in enumerate(p.deltas):
            res = train(model, data, O.sgd(eta), steps=steps, batch=1, sampler="with-replacement",
                        label_noise=float(np.sqrt(p.n * delta)), record_steps=rec, seed=seed, theta0=theta0)
            th = res["theta"][0]                                          # (S, K, 2d)
            dist = manifold_distance(th, betas[:, None, :])
            pred = np.linalg.norm(th[..., :p.d] * th[..., p.d:] - betas[:, None, :], axis=-1)
            diverged[:, i, j] = res["diverged_at"][0] >= 0
            level[:, i, j] = np.sqrt(np.mean(dist ** 2, axis=1))
            level_beta[:, i, j] = np.sqrt(np.mean(pred ** 2, axis=1))
    level[diverged], level_beta[diverged] = np.nan, np.nan
    fits = fit_exponents(level, p.etas, p.deltas)
    fits_beta = fit_exponents(level_beta, p.etas, p.deltas)
    halves = local_exponents(level, p.etas, p.deltas)
    verdict = exponent_rule(fits["product"], PREDICTED, p.tolerance)
    ratio = level / np.sqrt(np.multiply.outer(p.etas, p.deltas))[None]
    cfg = {"etas": list(p.etas), "deltas": list(p.deltas), "tau": p.tau, "burn": p.burn, "records": p.records,
           "seeds": p.seeds, "n": p.n, "d": p.d, "r": p.r, "alpha": p.alpha, "tolerance": p.tolerance}
    arrays = {"level": level, "level_beta": level_beta, "diverged": diverged, "exponent": fits["product"],
              "exponent_eta": fits["eta"], "exponent_delta": fits["delta"], "exponent_beta": fits_beta["product"],
              "exponent_low": halves["low"], "exponent_high": halves["high"]}
    spreads = {k: spread(v) for k, v in (("exponent_eta", fits["eta"]), ("exponent_delta", fits["delta"]),
                                         ("exponent_beta", fits_beta["product"]), ("level_over_sqrt", ratio),
                                         ("exponent_low", halves["low"]), ("exponent_high", halves["high"]))}
    summary = {"verdict": verdict.as_dict(), "verdict_text": verdict.text(),
               **{k: {} if v is None else v.as_dict() for k, v in spreads.items()},   # {}: nothing finite
               "diverged_runs": int(diverged.sum())}
    n_div = int(diverged.sum())
    status = "diverged" if n_div == diverged.size else "completed"
    message = (f"{E * Dn} cells × {p.seeds} seeds; {n_div} runs diverged" if n_div else
               f"{E * Dn} cells × {p.seeds} seeds, none diverged")
    return RunResult(KIND, cfg, arrays, status, message, seed=seed, summary=summary,
                     timings={"total": time.perf_counter() - start})


# ------------------------------------------------------------------------------------ tables, report

def table_rows(result) -> list[dict]:
    """One row per (η, δ): the band's level (median [q10, q90] over seeds) and its ratio to √(ηδ)."""
    from dyntools.verdicts import spread_text

    rows = []
    for i, eta in enumerate(result.config["etas"]):
        for j, delta in enumerate(result.config["deltas"]):
            lev = result["level"][:, i, j]
            rows.append({"η": f"{eta:g}", "δ": f"{delta:g}", "ηδ": f"{eta * delta:.3g}",
                         "distance to M (RMS)": spread_text(lev), "÷ √(ηδ)": spread_text(lev / np.sqrt(eta * delta)),
                         "‖β − β*‖ (RMS)": spread_text(result["level_beta"][:, i, j]),
                         "diverged": f"{int(result['diverged'][:, i, j].sum())}/{result.config['seeds']}"})
    return rows


def exponent_lines(result) -> list[str]:
    """The verdict and the side exponents, one sentence each."""
    from dyntools.verdicts import spread_text

    return [f"- Exponent of the distance in ηδ (per-seed least squares): {result.summary['verdict_text']}.",
            f"- Fitted apart (log D = a log η + b log δ + c): a = {spread_text(result['exponent_eta'])}, "
            f"b = {spread_text(result['exponent_delta'])} (median [q10, q90] over seeds; the claim says both ½).",
            f"- Over the lower and the upper half of the ηδ range: exponent {spread_text(result['exponent_low'])} "
            f"and {spread_text(result['exponent_high'])} (where the upper half is flatter, the band has left the "
            f"small-noise regime the O(√(ηδ)) describes: it is no longer small next to √|β*_j|).",
            f"- In predictor space (‖u ⊙ v − β*‖): exponent {spread_text(result['exponent_beta'])}."]


def headline(result) -> str:
    v = result.summary["verdict"]
    return (f"band O(√(ηδ)) {v['verdict']}: exponent {v['mean']:.3f} [{v['ci'][0]:.3f}, {v['ci'][1]:.3f}] vs ½ ± "
            f"{v['tolerance']:g} (exponent_rule, n = {v['n']}/{v['total']} seeds)")


def reproduce(ctx):
    """Catalogue entry: 4 × 4 cells, 16 seeds, τ = 80; quick: 3 × 3 cells, 8 seeds, τ = 40."""
    from dyntools import store
    from dyntools.plots.label_noise_band import plot_result
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    p = EXPERIMENT.make(None, **(QUICK if ctx.quick else {}))
    res = simulate(p, seed=ctx.seed)
    store.save(res, ctx.out_dir / "runs" / KIND)
    figs = plot_result(res, ctx.figure_dir, ("png",))
    c = res.config
    md = [f"Label-noise SGD (batch 1, labels y + √(nδ)ξ: the seed's SDE intensity δ) on the diagonal network, "
          f"n = {c['n']}, d = {c['d']}, r = {c['r']}, noiseless labels; every run starts on the sparse solution's "
          f"manifold M = {{u ⊙ v = β*}} (off the support u = {c['alpha']:g}, v = 0) and runs to SDE time τ = "
          f"{c['tau']:g} (τ/η steps). The band's level is the RMS over the last {1 - c['burn']:.0%} of the run of "
          f"the Euclidean distance from θ to M; {c['seeds']} seeds (data set and SGD stream each). "
          f"{res.message}; {res.timings['total']:.1f} s.", "", markdown_table(table_rows(res)), "",
          *exponent_lines(res), ""]
    md += [f"![label-noise band]({ctx.relative(f)})" for f in figs]
    numbers = {k: res.summary[k] for k in ("verdict", "exponent_eta", "exponent_delta", "exponent_beta",
                                           "exponent_low", "exponent_high")}
    numbers["seconds"] = res.timings["total"]
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   ok=True, headline=headline(res))      # a contradicted claim is said, not a failed check


# ------------------------------------------------------------------------------------ command line

def run(p: BandParams, ctx: RunContext):
    return simulate(p, seed=ctx.seed)


def summary(p: BandParams, result) -> dict:
    return {"status": result.status, "message": result.message, **result.summary, "table": table_rows(result),
            "seconds": result.timings["total"]}


def table(p: BandParams, result) -> str:
    from dyntools.tables import text_table

    return "\n".join([f"status: {result.status} — {result.message}", "", text_table(table_rows(result)), "",
                      *exponent_lines(result)])


RESULTS = (derive(KIND, BandParams, "etas deltas tau burn records seeds n d r alpha tolerance",
                  summary={"verdict": "mapping", "verdict_text": "str", "exponent_eta": "mapping",
                           "exponent_delta": "mapping", "exponent_beta": "mapping", "level_over_sqrt": "mapping",
                           "exponent_low": "mapping", "exponent_high": "mapping",
                           "diverged_runs": "int"}),)

EXPERIMENT = Experiment.declare(
    globals(), name=KIND, verb="simulate",
    help="label-noise SGD on the diagonal network: the distance to the sparse solution's manifold against eta and "
         "delta, its fitted exponent and a verdict against 1/2 (seed 004)",
    example="dyntools simulate label-noise-band --etas 0.005,0.01,0.02 --deltas 0.002,0.008,0.032 --seeds 8 "
            "--out runs/band",
    params=BandParams, figures={KIND: label_noise_band_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--etas", "0.01,0.02", "--deltas", "0.004,0.016", "--tau", "4", "--records", "4", "--seeds",
                      "2", "--n", "10", "--d", "20", "--r", "2"]}

REPORTS = [Entry(KIND, TITLE, reproduce, order=51)]
