"""``dyntools simulate universal-approximation``: seed 002's universal approximation theorem, illustrated.

The theorem (Cybenko 1989, as seed 002 states it): for a continuous sigmoidal σ, every ``f ∈ C([0, 1]^d)``
and every ε > 0 there are ``n`` and ``w_i ∈ R^d, b_i, v_i, A ∈ R`` with

    g(x) = A + Σ_{i=1}^{n} v_i σ(w_iᵀ x + b_i),      sup_{x ∈ [0,1]^d} |f(x) − g(x)| ≤ ε.

Here, for growing widths ``n``, a two-layer network ``g`` with the logistic sigmoid is fitted to a
continuous target on [0, 1] and on [0, 1]², and its sup-norm error is measured on a grid finer than the
fitting grid. **How the weights are found, and why:** the hidden layer is drawn at random — direction
``u_i`` uniform on the sphere, slope ``k = SLOPE · n^{1/d}`` (transitions as narrow as the units are
dense), ``w_i = k u_i``, ``b_i = −w_iᵀ c_i`` with ``c_i`` uniform in the cube (each unit switches inside
the domain) — and the output layer ``(A, v)`` is the least-squares fit on the fitting grid (a tiny ridge
``RIDGE · ‖Φ‖²`` keeps it stable). For the drawn hidden layer this is the best output layer in the
mean-square sense, computed exactly instead of by gradient descent; the repository's one MLP
(:mod:`dyntools.models.mlp`) has ReLU units only, and the theorem is about σ-networks of exactly this
form. The measured errors are *upper bounds* on the best sup error of width ``n`` (better weights
exist), for ``SEEDS`` draws of the hidden layer.

This illustrates the theorem and does not prove it: the theorem is a statement about every continuous
function and every ε; a few widths on two functions show what it says, not that it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "Universal approximation: sup-norm error of two-layer sigmoid networks against the width"
SLOPE = 4.0                # hidden slope k = SLOPE · n^(1/d)
RIDGE = 1e-10              # ridge λ = RIDGE · ‖Φ‖_F² / (n + 1) on the output-layer least squares
SEEDS = 3                  # draws of the hidden layer per width
QUICK = {"max_width_1d": 128, "max_width_2d": 128, "fit": 24}
FULL = {"max_width_1d": 1024, "max_width_2d": 1024, "fit": 64}


def target_1d(x: np.ndarray) -> np.ndarray:
    """``f(x) = sin(2πx) + |x − 0.3|``: continuous, with a kink at 0.3."""
    return np.sin(2 * np.pi * x) + np.abs(x - 0.3)


def target_2d(x: np.ndarray) -> np.ndarray:
    """``f(x, y) = sin(2πx) cos(πy) + |x − y| / 2``: continuous, with a ridge on the diagonal."""
    return np.sin(2 * np.pi * x[:, 0]) * np.cos(np.pi * x[:, 1]) + 0.5 * np.abs(x[:, 0] - x[:, 1])


TARGETS = {1: (target_1d, "sin(2πx) + |x − 0.3|"), 2: (target_2d, "sin(2πx) cos(πy) + |x − y|/2")}


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic σ(z) = 1/(1 + e^{−z}) (computed without overflow)."""
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def grid(d: int, per_axis: int) -> np.ndarray:
    """The regular grid of ``per_axis^d`` points of [0, 1]^d, as ``(m, d)``."""
    axes = np.meshgrid(*[np.linspace(0.0, 1.0, per_axis)] * d, indexing="ij")
    return np.column_stack([a.ravel() for a in axes])


def hidden_layer(d: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random ``W (n, d)``, ``b (n,)`` as in the module docstring."""
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    W = SLOPE * n ** (1.0 / d) * u
    c = rng.uniform(0.0, 1.0, size=(n, d))
    return W, -np.sum(W * c, axis=1)


def features(X: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Φ = [1, σ(X Wᵀ + b)]`` (m, n + 1): the constant A's column, then the hidden units."""
    return np.column_stack([np.ones(X.shape[0]), sigmoid(X @ W.T + b)])


def fit_output(Phi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(A, v)`` minimizing ``‖Φ (A, v) − y‖² + λ‖(A, v)‖²`` (λ as in the module docstring)."""
    lam = RIDGE * float(np.sum(Phi * Phi)) / Phi.shape[1]
    G = Phi.T @ Phi + lam * np.eye(Phi.shape[1])
    return np.linalg.solve(G, Phi.T @ y)


def sup_error(d: int, n: int, rng: np.random.Generator, fit_per_axis: int, eval_per_axis: int) -> float:
    """``max |f − g|`` on the evaluation grid for one draw of a width-``n`` network fitted on the fit grid."""
    f = TARGETS[d][0]
    W, b = hidden_layer(d, n, rng)
    X = grid(d, fit_per_axis)
    coef = fit_output(features(X, W, b), f(X))
    err = 0.0
    E = grid(d, eval_per_axis)
    for chunk in np.array_split(E, max(1, E.shape[0] // 20_000)):
        err = max(err, float(np.max(np.abs(features(chunk, W, b) @ coef - f(chunk)))))
    return err


def sizes(d: int, max_width: int, fit: int) -> tuple[np.ndarray, int, int]:
    """Widths ``2, 4, …, max_width`` (1-D) or ``4, 8, …`` (2-D), and the fit/eval points per axis: the fit
    grid has at least 4 points per unit (1-D: ``max(fit·20, 4·max n)``; 2-D: ``max(fit, 2√max n)`` per
    axis), the evaluation grid 5 (1-D) / 3 (2-D) times finer per axis."""
    widths = 2 ** np.arange(1 if d == 1 else 2, int(np.log2(max_width)) + 1)
    if d == 1:
        fit_axis = max(fit * 20, 4 * int(widths[-1]))
        return widths, fit_axis, 5 * fit_axis
    fit_axis = max(fit, int(np.ceil(2 * np.sqrt(widths[-1]))))
    return widths, fit_axis, 3 * fit_axis


def study(max_width_1d: int = 1024, max_width_2d: int = 1024, fit: int = 64, seeds: int = SEEDS,
          seed: int = 0):
    """Sup-norm errors against the width on [0, 1] and [0, 1]² (a :class:`RunResult` of kind
    ``"universal-approximation"``: ``widths_1d``, ``errors_1d`` (widths × seeds), the same for 2-D,
    and the widest fits on a plotting grid)."""
    from dyntools import validation
    from dyntools.engine import streams
    from dyntools.engine.result import RunResult, message, timed

    max_width_1d = validation.count("max_width_1d", max_width_1d, minimum=2)
    max_width_2d = validation.count("max_width_2d", max_width_2d, minimum=4)
    fit = validation.count("fit", fit, minimum=2)
    seeds = validation.count("seeds", seeds)
    timings: dict[str, float] = {}
    arrays: dict[str, np.ndarray] = {}
    config = {"slope": SLOPE, "ridge": RIDGE, "seeds": seeds, "targets": {d: TARGETS[d][1] for d in (1, 2)},
              "method": "random sigmoid hidden layer + least-squares output layer"}
    slopes = {}
    key = streams.key("universal.features")
    with timed(timings, "simulate"):
        for d, max_w in ((1, max_width_1d), (2, max_width_2d)):
            widths, fit_axis, eval_axis = sizes(d, max_w, fit)
            errs = np.empty((widths.size, seeds))
            for i, n in enumerate(widths):
                for s, rng in enumerate(streams.path_generators(seed, seeds, key, d, int(n))):
                    errs[i, s] = sup_error(d, int(n), rng, fit_axis, eval_axis)
            arrays[f"widths_{d}d"] = widths
            arrays[f"errors_{d}d"] = errs
            config[f"grid_{d}d"] = {"fit_per_axis": fit_axis, "eval_per_axis": eval_axis}
            med = np.median(errs, axis=1)
            slopes[d] = float(np.polyfit(np.log(widths), np.log(med), 1)[0])
            rng = streams.path_generators(seed, 1, key, d, int(widths[-1]))[0]
            W, b = hidden_layer(d, int(widths[-1]), rng)
            X = grid(d, fit_axis)
            coef = fit_output(features(X, W, b), TARGETS[d][0](X))
            P = grid(d, 400 if d == 1 else 80)
            arrays[f"plot_x_{d}d"] = P
            arrays[f"plot_f_{d}d"] = TARGETS[d][0](P)
            arrays[f"plot_g_{d}d"] = features(P, W, b) @ coef
    med1, med2 = np.median(arrays["errors_1d"], axis=1), np.median(arrays["errors_2d"], axis=1)
    decreasing = bool(med1[-1] < med1[0] and med2[-1] < med2[0])
    detail = (f"median sup error 1-D {med1[0]:.3g} (n={arrays['widths_1d'][0]}) → {med1[-1]:.3g} "
              f"(n={arrays['widths_1d'][-1]}), slope {slopes[1]:.2f}; 2-D {med2[0]:.3g} → {med2[-1]:.3g}, "
              f"slope {slopes[2]:.2f}")
    summary = {"slopes": slopes, "decreasing": decreasing, "final_1d": float(med1[-1]), "final_2d": float(med2[-1])}
    status = "completed" if decreasing else "failed"
    msg = message(status, paths=2, what="dimensions", detail=detail) if decreasing else message(
        "failed", detail="the sup error did not fall from the smallest to the largest width: " + detail)
    return RunResult("universal-approximation", config, arrays, status, msg, seed=seed, summary=summary,
                     timings=timings)


@dataclass(frozen=True)
class UAParams:
    """The options of ``dyntools simulate universal-approximation``."""

    max_width_1d: int = param(1024, low=2, high=2**16, help="largest width on [0, 1] (widths 2, 4, …)")
    max_width_2d: int = param(1024, low=4, high=2**16, help="largest width on [0, 1]^2 (widths 4, 8, …)")
    fit: int = param(64, low=2, high=10**4,
                     help="fitting-grid size parameter (module docstring; evaluation points × width ≤ 2^28)")
    seeds: int = param(SEEDS, low=1, high=1000, help="draws of the hidden layer per width")


def check(p: UAParams) -> None:
    """The largest matrix of a study (evaluation points × width) fits in memory."""
    for d, max_width in ((1, p.max_width_1d), (2, p.max_width_2d)):
        widths, _, eval_axis = sizes(d, max_width, p.fit)
        validation.entries(f"--max-width-{d}d × evaluation points of --fit", eval_axis**d * int(widths[-1]))


def run(p: UAParams, ctx: RunContext):
    return study(p.max_width_1d, p.max_width_2d, p.fit, p.seeds, seed=ctx.seed)


def summary(p: UAParams, result) -> dict:
    return {"kind": result.kind, "status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings.get("simulate")}


def rows_of(result) -> list[dict]:
    rows = []
    for d in (1, 2):
        errs = result[f"errors_{d}d"]
        for n, e in zip(result[f"widths_{d}d"], errs):
            rows.append({"domain": "[0,1]" if d == 1 else "[0,1]²", "width n": int(n),
                         "sup error (median)": f"{np.median(e):.3e}", "min": f"{e.min():.3e}", "max": f"{e.max():.3e}"})
    return rows


def table(p: UAParams, result) -> str:
    from dyntools.tables import key_values, text_table

    return key_values({"status": result.status, "message": result.message,
                       "seconds": result.timings.get("simulate")}) + "\n\n" + text_table(rows_of(result))


def monotone_sentence(result) -> str:
    """Where the median sup error did *not* fall when the width doubled (said plainly)."""
    parts = []
    for d in (1, 2):
        n, med = result[f"widths_{d}d"], np.median(result[f"errors_{d}d"], axis=1)
        rises = [f"n = {int(n[i + 1])} above n = {int(n[i])}" for i in range(n.size - 1) if med[i + 1] >= med[i]]
        parts.append(f"{d}-D: " + ("falls at every doubling" if not rises else "does not fall everywhere (" +
                                   ", ".join(rises) + ")"))
    return "The median sup error " + "; ".join(parts) + "."


STATEMENT = ("This illustrates the theorem and does not prove it: the theorem speaks of every continuous "
             "function and every ε, and these are a few widths on two functions, with weights found by one "
             "method (so the errors are upper bounds on what width n can do).")


def reproduce(ctx):
    from dyntools import store
    from dyntools.plots import universal
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    size = QUICK if ctx.quick else FULL
    res = study(size["max_width_1d"], size["max_width_2d"], size["fit"], seed=ctx.seed)
    store.save(res, ctx.out_dir / "runs" / "universal-approximation")
    figs = universal.plot_result(res, ctx.figure_dir, ("png",))
    png = [ctx.relative(p) for p in figs]
    c = res.config
    md = (f"Two-layer networks g(x) = A + Σ v_i σ(w_iᵀx + b_i) with the logistic σ (seed 002's statement) fitted "
          f"to f(x) = {c['targets'][1]} on [0, 1] and f(x, y) = {c['targets'][2]} on [0, 1]²: random hidden layer "
          f"(slope {c['slope']:g}·n^(1/d), switch points uniform in the cube), output layer by least squares on a "
          f"grid of {c['grid_1d']['fit_per_axis']} (1-D) / {c['grid_2d']['fit_per_axis']}² (2-D) points, sup error "
          f"on a grid of {c['grid_1d']['eval_per_axis']} / {c['grid_2d']['eval_per_axis']}² points, median over "
          f"{c['seeds']} draws. Least squares rather than training because the output layer of a fixed hidden layer "
          f"is a linear problem solved exactly, and the library's MLP has ReLU units only. {res.message}.\n\n"
          f"{monotone_sentence(res)}\n\n{markdown_table(rows_of(res))}\n\n" + "".join(f"![ua]({p}) " for p in png) + f"\n\n**{STATEMENT}**\n")
    return Section(TITLE, md, numbers={"slopes": res.summary["slopes"], "final_1d": res.summary["final_1d"],
                                       "final_2d": res.summary["final_2d"]},
                   figures=png, ok=res.summary["decreasing"],
                   headline=f"illustration: median sup error {res.summary['final_1d']:.2g} (1-D) and "
                            f"{res.summary['final_2d']:.2g} (2-D) at the largest width")


RESULTS = (derive("universal-approximation", UAParams, "seeds",
                  summary={"decreasing": "flag", "final_1d": "number", "final_2d": "number", "slopes": "mapping"}),)

EXPERIMENT = Experiment(
    name="universal-approximation", verb="simulate",
    help="universal approximation (seed 002): sup-norm error of two-layer sigmoid networks against the width "
         "on [0,1] and [0,1]^2 (an illustration, not a proof)",
    example="dyntools simulate universal-approximation --max-width-1d 512 --max-width-2d 1024 --out runs/uat",
    params=UAParams, results=RESULTS, run=run, table=table, summary=summary, check=check)

REPORT = Entry("universal-approximation", TITLE, reproduce, order=86)
