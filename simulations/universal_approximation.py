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

**Caveat 1 — what exists and what gradient descent finds.** At the same widths, the same network with *both*
layers trained (:class:`dyntools.models.sigmoid_net.SigmoidNet` through :func:`dyntools.train`): full-batch
Adam (PyTorch's, lr ``GD_LR``) for ``gd_steps`` steps on the mean squared error over a grid of ``GD_POINTS``
points per axis, started from the *same* draw of the hidden layer as the least-squares fit and an output layer
at 0. Its sup error is measured on the same evaluation grid, for the same ``SEEDS`` draws, so that each draw
compares "the best output layer exists" with "what the optimizer found in its budget"; a checkpoint at half
the budget says whether GD was still improving.

**Caveat 2 — few samples.** With only ``few_1d`` (1-D) / ``few_2d`` (2-D) training points drawn uniformly at
random (stream ``universal.samples``, one set per draw, the same for every width), the least-squares output
layer and the GD-trained network are fitted to those points alone; the *train* sup error (over the training
points) and the *test* sup error (over a fine grid) against the width show overfitting: once the width reaches
the number of points the least-squares fit interpolates (train error ≈ 0) while its test error rises far above
the well-sampled error of the same width.

This illustrates the theorem and does not prove it: the theorem is a statement about every continuous
function and every ε; a few widths on two functions show what it says, not that it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import memory, validation
from dyntools.plots import universal as universal_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

#: this experiment's own stream purposes (its key words are checked unique against the library's table and
#: every plugin's: dyntools.plugins.stream_keys); the few training points of its overfitting study
STREAMS = {"universal.samples": 0x0A78}

TITLE = "Universal approximation: sup-norm error of two-layer sigmoid networks against the width"
SLOPE = 4.0                # hidden slope k = SLOPE · n^(1/d)
RIDGE = 1e-10              # ridge λ = RIDGE · ‖Φ‖_F² / (n + 1) on the output-layer least squares
SEEDS = 3                  # draws of the hidden layer per width
QUICK = {"max_width_1d": 128, "max_width_2d": 128, "fit": 24, "gd_steps": 60}
FULL = {"max_width_1d": 1024, "max_width_2d": 1024, "fit": 64, "gd_steps": 400}
GD_LR = 0.01               # full-batch Adam's learning rate
GD_STEPS = 400             # its default step budget
GD_POINTS = {1: 128, 2: 12}    # its training grid, points per axis (the least-squares grid is finer: time)
FEW = {1: 12, 2: 36}       # training points of the few-samples experiment
FEW_TEST = {1: 2001, 2: 101}   # its test grid, points per axis


def target_1d(x: np.ndarray) -> np.ndarray:
    """``f(x) = sin(2πx) + |x − 0.3|``: continuous, with a kink at 0.3."""
    return np.sin(2 * np.pi * x) + np.abs(x - 0.3)


def target_2d(x: np.ndarray) -> np.ndarray:
    """``f(x, y) = sin(2πx) cos(πy) + |x − y| / 2``: continuous, with a ridge on the diagonal."""
    return np.sin(2 * np.pi * x[:, 0]) * np.cos(np.pi * x[:, 1]) + 0.5 * np.abs(x[:, 0] - x[:, 1])


TARGETS = {1: (target_1d, "sin(2πx) + |x − 0.3|"), 2: (target_2d, "sin(2πx) cos(πy) + |x − y|/2")}


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic σ(z) = 1/(1 + e^{−z}) (computed without overflow; :func:`dyntools.models.sigmoid_net.sigmoid_np`)."""
    from dyntools.models.sigmoid_net import sigmoid_np

    return sigmoid_np(z)


def grid(d: int, per_axis: int) -> np.ndarray:
    """The regular grid of ``per_axis^d`` points of [0, 1]^d, as ``(m, d)``."""
    axes = np.meshgrid(*[np.linspace(0.0, 1.0, per_axis)] * d, indexing="ij")
    return np.column_stack([a.ravel() for a in axes])


def hidden_layer(d: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random ``W (n, d)``, ``b (n,)`` as in the module docstring
    (:func:`dyntools.models.sigmoid_net.switching_layer`, slope :data:`SLOPE`)."""
    from dyntools.models.sigmoid_net import switching_layer

    return switching_layer(d, n, rng, SLOPE)


def features(X: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Φ = [1, σ(X Wᵀ + b)]`` (m, n + 1): the constant A's column, then the hidden units."""
    return np.column_stack([np.ones(X.shape[0]), sigmoid(X @ W.T + b)])


def fit_output(Phi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(A, v)`` minimizing ``‖Φ (A, v) − y‖² + λ‖(A, v)‖²`` (λ as in the module docstring): the normal
    equations ``(ΦᵀΦ + λI) c = Φᵀy``, or, with fewer rows than columns (the few-samples experiment), the same
    ``c = Φᵀ(ΦΦᵀ + λI)⁻¹ y`` from the smaller system."""
    lam = RIDGE * float(np.sum(Phi * Phi)) / Phi.shape[1]
    m, p = Phi.shape
    if m < p:
        return Phi.T @ np.linalg.solve(Phi @ Phi.T + lam * np.eye(m), y)
    G = Phi.T @ Phi + lam * np.eye(p)
    return np.linalg.solve(G, Phi.T @ y)


def sup_on(predict, f, E: np.ndarray) -> float:
    """``max |predict(x) − f(x)|`` over the rows of ``E`` (in chunks of 20 000 points)."""
    err = 0.0
    for chunk in np.array_split(E, max(1, E.shape[0] // 20_000)):
        err = max(err, float(np.max(np.abs(np.ravel(predict(chunk)) - np.ravel(f(chunk))))))
    return err


def network(W: np.ndarray, b: np.ndarray, coef: np.ndarray):
    """``x ↦ g(x)`` of a hidden layer and an output layer ``(A, v)`` (the compiled forward pass of
    :class:`~dyntools.models.sigmoid_net.SigmoidNet`)."""
    from dyntools.models.sigmoid_net import SigmoidNet, pack

    model, theta = SigmoidNet(W.shape[1], W.shape[0], slope=SLOPE), pack(W, b, coef[1:], coef[0])
    return lambda X: model.predict(theta, X)


def sup_error(d: int, n: int, rng: np.random.Generator, fit_per_axis: int, eval_per_axis: int) -> float:
    """``max |f − g|`` on the evaluation grid for one draw of a width-``n`` network fitted on the fit grid."""
    f = TARGETS[d][0]
    W, b = hidden_layer(d, n, rng)
    X = grid(d, fit_per_axis)
    coef = fit_output(features(X, W, b), f(X).ravel())
    return sup_on(network(W, b, coef), f, grid(d, eval_per_axis))


def train_both_layers(d: int, n: int, data, steps: int, seeds: int, seed: int, records: np.ndarray,
                      workers: int | None = None):
    """Both layers of the width-``n`` network trained by full-batch Adam (lr :data:`GD_LR`, :func:`dyntools.train`)
    from the least-squares study's hidden-layer draws ``s < seeds`` (:meth:`SigmoidNet.init`) with the output
    layer at 0; ``data``: one object with ``X``, ``y`` or one per draw. Returns the model and the parameters
    ``(seeds, len(records), p)`` at the recorded steps (NaN where a run diverged); ``workers`` threads (default: one per
    draw; the results do not depend on it)."""
    from dyntools.dynamics.train import train
    from dyntools.models.sigmoid_net import SigmoidNet
    from dyntools.optim import adam

    model = SigmoidNet(d, n, slope=SLOPE)
    theta0 = np.stack([model.init(seed, s) for s in range(seeds)])
    res = train(model, data, adam(GD_LR), steps=steps, sampler="full", theta0=theta0, seeds=seeds,
                   record_steps=records, workers=workers or seeds)
    return model, res["theta"][0]


def gd_study(d: int, widths: np.ndarray, eval_axis: int, steps: int, seeds: int, seed: int,
             workers: int | None = None):
    """Sup errors ``(widths, seeds, 2)`` on the evaluation grid of GD-trained networks at half (the widest
    only; NaN elsewhere) and all of ``steps`` (training grid :data:`GD_POINTS` per axis)."""
    from types import SimpleNamespace

    f = TARGETS[d][0]
    X = grid(d, GD_POINTS[d])
    data = SimpleNamespace(X=X, y=f(X).ravel())
    E = grid(d, eval_axis)
    records = np.array([steps // 2, steps])
    out = np.full((widths.size, seeds, records.size), np.nan)
    for i, n in enumerate(widths):
        model, thetas = train_both_layers(d, int(n), data, steps, seeds, seed, records, workers)
        for s in range(seeds):
            for k in range(records.size) if i == widths.size - 1 else (records.size - 1,):
                if np.isfinite(thetas[s, k]).all():
                    out[i, s, k] = sup_on(lambda chunk, th=thetas[s, k], model=model: model.predict(th, chunk), f, E)
    return out, records


def few_samples(d: int, m: int, seeds: int, seed: int) -> list[np.ndarray]:
    """The ``m`` uniform training points of each draw ``s < seeds`` (stream ``universal.samples``)."""
    from dyntools.engine import streams

    return [rng.uniform(0.0, 1.0, size=(m, d))
            for rng in streams.path_generators(seed, seeds, STREAMS["universal.samples"], d, m)]


def few_study(d: int, widths: np.ndarray, m: int, steps: int, seeds: int, seed: int,
              workers: int | None = None) -> dict:
    """Train and test sup errors ``(widths, seeds)`` with only ``m`` training points: the least-squares output
    layer (``ls_train``, ``ls_test``) and both layers by GD (``gd_train``, ``gd_test``); test on a grid of
    :data:`FEW_TEST` points per axis."""
    from types import SimpleNamespace

    from dyntools.engine import streams

    f = TARGETS[d][0]
    points = few_samples(d, m, seeds, seed)
    data = [SimpleNamespace(X=X, y=f(X).ravel()) for X in points]
    E = grid(d, FEW_TEST[d])
    out = {k: np.full((widths.size, seeds), np.nan) for k in ("ls_train", "ls_test", "gd_train", "gd_test")}
    key = streams.key("universal.features")
    for i, n in enumerate(widths):
        for s, rng in enumerate(streams.path_generators(seed, seeds, key, d, int(n))):
            W, b = hidden_layer(d, int(n), rng)
            g = network(W, b, fit_output(features(points[s], W, b), f(points[s]).ravel()))
            out["ls_train"][i, s] = sup_on(g, f, points[s])
            out["ls_test"][i, s] = sup_on(g, f, E)
        if steps:
            model, thetas = train_both_layers(d, int(n), data, steps, seeds, seed, np.array([steps]), workers)
            for s in range(seeds):
                if np.isfinite(thetas[s, -1]).all():
                    predict = lambda chunk, th=thetas[s, -1], model=model: model.predict(th, chunk)  # noqa: E731
                    out["gd_train"][i, s] = sup_on(predict, f, points[s])
                    out["gd_test"][i, s] = sup_on(predict, f, E)
    return out


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


#: GD was "still improving" at the largest width when its median error fell by more than this fraction over
#: the second half of its budget.
STILL_FALLING = 0.05
#: Few samples: "overfits" when the median test sup error rises to at least this factor times its minimum over
#: the widths below the number of points, at a larger width whose median train error is no larger.
OVERFIT_FACTOR = 2.0
#: Few samples: the least-squares fit "interpolates" when its median train sup error is below this.
INTERPOLATES = 1e-6


def gd_comparison(ls: np.ndarray, gd: np.ndarray) -> list[str]:
    """Per width, the draws compared one by one (GD starts from the least-squares draw): "GD below the bound"
    when GD's sup error is below the least-squares one on every draw, "GD above the bound" when above on
    every draw, "mixed" otherwise, "not measured" when a GD run diverged."""
    words = []
    for a, b in zip(ls, gd):
        if not np.isfinite(b).all():
            words.append("not measured")
        elif np.all(b < a):
            words.append("GD below the bound")
        elif np.all(b > a):
            words.append("GD above the bound")
        else:
            words.append("mixed")
    return words


def overfitting(widths: np.ndarray, train: np.ndarray, test: np.ndarray, points: int) -> dict:
    """From train and test sup errors ``(widths, draws)`` with ``points`` training points, by their medians over
    the draws: the smallest test error among the widths below ``points`` (fewer units than points) and the
    largest at a larger width (the peak), their ratio, and whether the fit *overfits*: the test error rises by
    :data:`OVERFIT_FACTOR` or more while the train error does not rise. ``None`` when a value is missing (a
    diverged run) or no width is below ``points``."""
    with np.errstate(all="ignore"):
        tr, te = np.median(train, axis=1), np.median(test, axis=1)
    under = np.flatnonzero(widths < points)
    if not np.isfinite(te).all() or not np.isfinite(tr).all() or under.size == 0:
        return {"overfits": None}
    best = int(under[np.argmin(te[under])])
    peak = best + int(np.argmax(te[best:]))
    ratio = float(te[peak] / te[best])
    return {"best_width": int(widths[best]), "best_test": float(te[best]), "train_at_best": float(tr[best]),
            "peak_width": int(widths[peak]), "peak_test": float(te[peak]), "rise": ratio,
            "train_at_peak": float(tr[peak]), "train_largest": float(tr[-1]), "test_largest": float(te[-1]),
            "overfits": bool(peak > best and ratio >= OVERFIT_FACTOR and tr[peak] <= tr[best])}


def caveats(arrays: dict, few: dict) -> dict:
    """The measured statements of the two caveats (JSON-able): per dimension the per-width comparison of GD
    with the least-squares bound, whether GD was still improving, and the few-samples overfitting numbers."""
    out = {"gd": {}, "few": {}}
    for d in (1, 2):
        widths, ls = arrays[f"widths_{d}d"], arrays[f"errors_{d}d"]
        if f"gd_errors_{d}d" in arrays:
            gd = arrays[f"gd_errors_{d}d"]
            with np.errstate(all="ignore"):
                half, full = np.median(gd[-1, :, -2]), np.median(gd[-1, :, -1])
            words = gd_comparison(ls, gd[..., -1])
            out["gd"][f"{d}d"] = {"comparison": words, "median_gd": np.median(gd[..., -1], axis=1).tolist(),
                                  "median_ls": np.median(ls, axis=1).tolist(),
                                  "above_at": [int(n) for n, w in zip(widths, words) if w == "GD above the bound"],
                                  "below_at": [int(n) for n, w in zip(widths, words) if w == "GD below the bound"],
                                  "still_falling": bool((half - full) > STILL_FALLING * half)
                                  if np.isfinite([half, full]).all() else None,
                                  "fall_last_half": float((half - full) / half) if np.isfinite([half, full]).all()
                                  else None}
        entry = {"points": few[d]}
        for method in ("ls", "gd"):
            if f"few_{method}_train_{d}d" in arrays:
                entry[method] = overfitting(widths, arrays[f"few_{method}_train_{d}d"],
                                            arrays[f"few_{method}_test_{d}d"], few[d])
        if "ls" in entry:
            entry["ls"]["interpolates"] = bool(entry["ls"].get("train_largest", np.inf) < INTERPOLATES)
            entry["ls"]["well_sampled_largest"] = float(np.median(ls[-1]))
        out["few"][f"{d}d"] = entry
    return out


def study(max_width_1d: int = 1024, max_width_2d: int = 1024, fit: int = 64, seeds: int = SEEDS,
          seed: int = 0, gd_steps: int = GD_STEPS, few_1d: int = FEW[1], few_2d: int = FEW[2],
          workers: int | None = None):
    """Sup-norm errors against the width on [0, 1] and [0, 1]² (a :class:`RunResult` of kind
    ``"universal-approximation"``: ``widths_1d``, ``errors_1d`` (widths × seeds), the same for 2-D,
    and the widest fits on a plotting grid); with ``gd_steps > 0`` the two caveats of the module docstring:
    ``gd_errors_{d}d`` (widths × seeds × the checkpoints ``gd_records``) and the few-samples errors
    ``few_{ls,gd}_{train,test}_{d}d`` (widths × seeds; the GD ones only with ``gd_steps > 0``). ``workers``: threads
    of the GD runs (default one per draw; the numbers do not depend on it)."""
    from dyntools.engine import streams
    from dyntools.engine.result import RunResult, message, timed

    max_width_1d = validation.count("max_width_1d", max_width_1d, minimum=2)
    max_width_2d = validation.count("max_width_2d", max_width_2d, minimum=4)
    fit = validation.count("fit", fit, minimum=2)
    seeds = validation.count("seeds", seeds)
    gd_steps = validation.count("gd_steps", gd_steps, minimum=0)
    few = {1: validation.count("few_1d", few_1d, minimum=2), 2: validation.count("few_2d", few_2d, minimum=2)}
    timings: dict[str, float] = {}
    arrays: dict[str, np.ndarray] = {}
    config = {"slope": SLOPE, "ridge": RIDGE, "seeds": seeds, "targets": {d: TARGETS[d][1] for d in (1, 2)},
              "method": "random sigmoid hidden layer + least-squares output layer",
              "gd": {"optimizer": "Adam (full batch, PyTorch's update)", "lr": GD_LR, "steps": gd_steps,
                     "points_per_axis": dict(GD_POINTS), "start": "the least-squares draw, output layer 0"},
              "few": {"points": few, "test_per_axis": dict(FEW_TEST)}}
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
    with timed(timings, "gradient descent"):
        for d in (1, 2):
            widths = arrays[f"widths_{d}d"]
            if gd_steps:
                arrays[f"gd_errors_{d}d"], arrays["gd_records"] = gd_study(
                    d, widths, config[f"grid_{d}d"]["eval_per_axis"], gd_steps, seeds, seed, workers)
            for k, v in few_study(d, widths, few[d], gd_steps, seeds, seed, workers).items():
                if gd_steps or k.startswith("ls"):
                    arrays[f"few_{k}_{d}d"] = v
    med1, med2 = np.median(arrays["errors_1d"], axis=1), np.median(arrays["errors_2d"], axis=1)
    decreasing = bool(med1[-1] < med1[0] and med2[-1] < med2[0])
    detail = (f"median sup error 1-D {med1[0]:.3g} (n={arrays['widths_1d'][0]}) → {med1[-1]:.3g} "
              f"(n={arrays['widths_1d'][-1]}), slope {slopes[1]:.2f}; 2-D {med2[0]:.3g} → {med2[-1]:.3g}, "
              f"slope {slopes[2]:.2f}")
    summary = {"slopes": slopes, "decreasing": decreasing, "final_1d": float(med1[-1]), "final_2d": float(med2[-1]),
               **caveats(arrays, few)}
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
    gd_steps: int = param(GD_STEPS, low=0, high=10**6,
                          help="full-batch Adam steps of the networks with both layers trained (0: no training)")
    few_1d: int = param(FEW[1], low=2, high=10**4, help="training points of the few-samples experiment on [0, 1]")
    few_2d: int = param(FEW[2], low=2, high=10**4, help="training points of the few-samples experiment on [0, 1]^2")


def check(p: UAParams) -> None:
    """The largest matrix of a study (evaluation points × width) fits in memory, and the training is bounded
    (steps × training points × widths × draws)."""
    for d, max_width in ((1, p.max_width_1d), (2, p.max_width_2d)):
        widths, _, eval_axis = sizes(d, max_width, p.fit)
        memory.require_each({      # the features, the fitted network's values and a temporary, float64
            f"the evaluation matrix of [0, 1]^{d} (3 × evaluation points of --fit × --max-width-{d}d)":
                (24 * eval_axis**d * int(widths[-1]), f"--max-width-{d}d")})
        points = max(GD_POINTS[d] ** d, p.few_1d if d == 1 else p.few_2d)
        work = p.gd_steps * points * int(widths.sum()) * p.seeds
        if work > 10**13:
            raise ValueError(f"Invalid --gd-steps: {p.gd_steps} steps × {points} points × {int(widths.sum())} units × "
                             f"{p.seeds} draws = {work:.3g} unit evaluations on [0, 1]^{d} (at most 1e13)")


def run(p: UAParams, ctx: RunContext):
    return study(p.max_width_1d, p.max_width_2d, p.fit, p.seeds, seed=ctx.seed, gd_steps=p.gd_steps,
                 few_1d=p.few_1d, few_2d=p.few_2d)


def summary(p: UAParams, result) -> dict:
    return {"kind": result.kind, "status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings.get("simulate"), "gd_seconds": result.timings.get("gradient descent")}


def rows_of(result) -> list[dict]:
    rows = []
    for d in (1, 2):
        errs = result[f"errors_{d}d"]
        gd = result.arrays.get(f"gd_errors_{d}d")
        for i, (n, e) in enumerate(zip(result[f"widths_{d}d"], errs)):
            row = {"domain": "[0,1]" if d == 1 else "[0,1]²", "width n": int(n),
                   "sup error (median)": f"{np.median(e):.3e}", "min": f"{e.min():.3e}", "max": f"{e.max():.3e}"}
            if gd is not None:
                row["GD-trained (median)"] = f"{np.median(gd[i, :, -1]):.3e}"
                row["GD vs bound"] = result.summary["gd"][f"{d}d"]["comparison"][i]
            rows.append(row)
    return rows


def few_rows(result) -> list[dict]:
    """The few-samples experiment: per dimension and width, median train and test sup errors."""
    rows = []
    for d in (1, 2):
        if f"few_ls_train_{d}d" not in result.arrays:
            continue
        for i, n in enumerate(result[f"widths_{d}d"]):
            row = {"domain": "[0,1]" if d == 1 else "[0,1]²", "points": result.summary["few"][f"{d}d"]["points"],
                   "width n": int(n)}
            for method, name in (("ls", "least squares"), ("gd", "GD")):
                if f"few_{method}_train_{d}d" in result.arrays:
                    row[f"{name} train"] = f"{np.median(result[f'few_{method}_train_{d}d'][i]):.2e}"
                    row[f"{name} test"] = f"{np.median(result[f'few_{method}_test_{d}d'][i]):.2e}"
            rows.append(row)
    return rows


def _at_widths(widths) -> str:
    """``at n = 8, 16`` or ``at no width``."""
    return f"at n = {', '.join(map(str, widths))}" if widths else "at no width"


def _rise_text(f: dict) -> str:
    """The few-samples test error from its lowest (below the number of points) to its peak at a larger width;
    when the lowest is the peak, said so (no rise) instead of "from x up to x, ×1"."""
    if f["peak_width"] == f["best_width"]:
        return f"lowest at n = {f['best_width']} ({f['best_test']:.3g}) and no higher at any larger width (no rise)"
    return (f"from {f['best_test']:.3g} (n = {f['best_width']}) up to {f['peak_test']:.3g} (n = {f['peak_width']}), "
            f"×{f['rise']:.3g}")


def width_claims(result) -> list[tuple[str, object]]:
    """Seed 002's statement as far as a few widths can illustrate it, by declared rules over the draws: the sup
    error at the largest width is below the smallest width's (:func:`dyntools.verdicts.sign_test`, paired draws:
    each draw's hidden layers), per dimension. An illustration, not the theorem (:data:`STATEMENT`)."""
    from dyntools import verdicts as V

    rows = []
    for d in (1, 2):
        errs, widths = result[f"errors_{d}d"], result[f"widths_{d}d"]
        rows.append((f"the least-squares sup error on [0, 1]{'²' if d == 2 else ''} falls from n = {int(widths[0])} "
                     f"to n = {int(widths[-1])} (002: width n approximates any continuous f)",
                     V.sign_test(errs[-1], errs[0])))
    return rows


def caveat_sentences(result) -> tuple[list[str], list[str]]:
    """The measured statements of the two caveats, said plainly (one line each): GD against the bound, and the
    few-samples experiment."""
    from dyntools.verdicts import word

    s, c = result.summary, result.config
    out, few = [], []
    for d in (1, 2):
        g = s["gd"].get(f"{d}d")
        if g is not None:
            out.append(f"- GD on [0, 1]{'²' if d == 2 else ''}: below the least-squares bound on every draw "
                       f"{_at_widths(g['below_at'])}; above it on every draw {_at_widths(g['above_at'])}; at the "
                       f"largest width "
                       f"{g['median_gd'][-1]:.3g} (GD) against {g['median_ls'][-1]:.3g} (bound); still improving "
                       f"there (error down by more than {STILL_FALLING:.0%} over the second half of the budget): "
                       f"{word(g['still_falling'], 'yes', 'no')} ({(g['fall_last_half'] or float('nan')):.1%}).")
    for d in (1, 2):
        f = s["few"][f"{d}d"]
        ls = f["ls"]
        if ls.get("overfits") is not None:
            few.append(f"- {f['points']} random points on [0, 1]{'²' if d == 2 else ''}, least squares: train sup "
                       f"error {ls['train_at_best']:.2g} → {ls['train_largest']:.2g} (interpolates: "
                       f"{word(ls['interpolates'], 'yes', 'no')}), test sup error {_rise_text(ls)}: overfits {word(ls['overfits'], 'yes', 'no')}; at the largest width {ls['test_largest']:.3g} "
                       f"against {ls['well_sampled_largest']:.3g} with the well-sampled grid.")
        gd = f.get("gd")
        if gd is not None and gd.get("overfits") is not None:
            few.append(f"- the same points, GD ({c['gd']['steps']} steps): train {gd['train_at_best']:.2g} → "
                       f"{gd['train_largest']:.2g}, test {_rise_text(gd)}: overfits by ×"
                       f"{OVERFIT_FACTOR:g} or more: {word(gd['overfits'], 'yes', 'no')}.")
    return out, few


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
             "function and every ε, and these are a few widths on two functions, with weights found by least "
             "squares on a random hidden layer (upper bounds on what width n can do) and by a fixed budget of "
             "gradient descent (what an optimizer finds, not what exists).")


#: Draws per width in the report: a sign test over paired draws needs 5 to reach α = 5 %.
REPORT_SEEDS = 5


def reproduce(ctx):
    from dyntools import store
    from dyntools import verdicts as V
    from dyntools.plots import universal
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    size = QUICK if ctx.quick else FULL
    res = study(size["max_width_1d"], size["max_width_2d"], size["fit"], seed=ctx.seed, gd_steps=size["gd_steps"],
                seeds=REPORT_SEEDS, workers=1)          # one thread: the entry runs in the single-core lane
    store.save(res, ctx.out_dir / "runs" / "universal-approximation")
    figs = universal.plot_result(res, ctx.figure_dir, ("png",))
    png = [ctx.relative(p) for p in figs]
    c, s = res.config, res.summary
    gd = c["gd"]
    gd_lines, few_lines = caveat_sentences(res)
    md = (f"Two-layer networks g(x) = A + Σ v_i σ(w_iᵀx + b_i) with the logistic σ (seed 002's statement) fitted "
          f"to f(x) = {c['targets'][1]} on [0, 1] and f(x, y) = {c['targets'][2]} on [0, 1]²: random hidden layer "
          f"(slope {c['slope']:g}·n^(1/d), switch points uniform in the cube), output layer by least squares on a "
          f"grid of {c['grid_1d']['fit_per_axis']} (1-D) / {c['grid_2d']['fit_per_axis']}² (2-D) points, sup error "
          f"on a grid of {c['grid_1d']['eval_per_axis']} / {c['grid_2d']['eval_per_axis']}² points, median over "
          f"{c['seeds']} draws. For a fixed hidden layer the output layer is a linear problem solved exactly: these "
          f"errors are upper bounds on what width n can do (better weights exist). {res.message}.\n\n"
          f"{monotone_sentence(res)}\n\n"
          f"**What exists and what gradient descent finds.** The same networks with *both* layers trained: "
          f"{gd['optimizer']}, lr {gd['lr']:g}, {gd['steps']} steps on the mean squared error over a grid of "
          f"{gd['points_per_axis'][1]} (1-D) / {gd['points_per_axis'][2]}² (2-D) points (coarser than the "
          f"least-squares grid, for time), each started from the same hidden-layer draw as the bound with the output "
          f"layer at 0, sup error on the same evaluation grid (GD's grid is coarser: part of its gap at the largest "
          f"widths, in 2-D above all, may be its grid's rather than the optimizer's); draw by draw:\n\n"
          + "\n".join(gd_lines)
          + f"\n\n{markdown_table(rows_of(res))}\n\n"
          f"**Few samples.** Only {c['few']['points'][1]} (1-D) / {c['few']['points'][2]} (2-D) training points drawn "
          f"uniformly (one set per draw, the same for every width); train sup error over those points, test sup error "
          f"on a grid of {c['few']['test_per_axis'][1]} / {c['few']['test_per_axis'][2]}² points:\n\n"
          + "\n".join(few_lines) + f"\n\n{markdown_table(few_rows(res))}\n\n"
          + "".join(f"![ua]({p}) " for p in png) + f"\n\n**{STATEMENT}**\n")
    g1, f1 = s["gd"].get("1d", {}), s["few"]["1d"]["ls"]
    numbers = {"slopes": s["slopes"], "final_1d": s["final_1d"], "final_2d": s["final_2d"],
               "gd_above_bound_at": {k: v["above_at"] for k, v in s["gd"].items()},
               "gd_below_bound_at": {k: v["below_at"] for k, v in s["gd"].items()},
               "few_overfits": {k: {m: v[m]["overfits"] for m in ("ls", "gd") if m in v} for k, v in s["few"].items()}}
    claim_rows = width_claims(res)
    md = md.replace(f"\n\n**{STATEMENT}**", f"\n\n{V.claims_table(claim_rows)}\n\n**{STATEMENT}**")
    numbers["claims"] = {cl: v.as_dict() for cl, v in claim_rows}
    above = g1.get("above_at") or []
    headline = ("illustration: sup error falls with the width — " + "; ".join(
                    f"{d}-D {v.label()} ({v.measurement}; {v.rule}, n = {v.n})" for d, (_, v) in zip((1, 2), claim_rows))
                + f"; median {s['final_1d']:.2g} (1-D) and {s['final_2d']:.2g} (2-D) at the largest width; GD-trained "
                + (f"above that bound on every draw at n ≥ {min(above)} (1-D)" if above else
                   "nowhere above that bound on every draw (1-D)")
                + f"; {s['few']['1d']['points']} samples: least squares test error ×{f1.get('rise', float('nan')):.3g} "
                "from its lowest")
    return Section(TITLE, md, numbers=numbers, figures=png, ok=s["decreasing"], headline=headline)


RESULTS = (derive("universal-approximation", UAParams, "seeds",
                  summary={"decreasing": "flag", "final_1d": "number", "final_2d": "number", "slopes": "mapping",
                           "gd": "mapping", "few": "mapping"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="universal-approximation", verb="simulate",
    help="universal approximation (seed 002): sup-norm error of two-layer sigmoid networks against the width "
         "on [0,1] and [0,1]^2 (an illustration, not a proof), next to the same networks trained by gradient descent "
         "and fitted to few samples",
    example="dyntools simulate universal-approximation --max-width-1d 512 --max-width-2d 1024 --out runs/uat",
    params=UAParams, figures={"universal-approximation": universal_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "universal-approximation": ["--max-width-1d", "4", "--max-width-2d", "4", "--seeds", "1"],
}

REPORT = Entry("universal-approximation", TITLE, reproduce, order=86, single_core=True)
