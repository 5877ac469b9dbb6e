"""Adam's effective step size along a run (seed 002): far from the optimum ``|m̂_t|/√v̂_t ≈ 1``, near it ``< 1``.

The lecture notes argue that Adam's step in coordinate j, ``α m̂_{t,j}/(√v̂_{t,j} + ε)``, has size about α
while the gradients keep their sign (``m̂ ≈ g``, ``√v̂ ≈ |g|``) and shrinks near an optimum, where the
gradients change sign and the average ``m̂`` is small against the root mean square ``√v̂``. This entry
measures the ratio

    r_{t,j} = |m̂_{t,j}| / √v̂_{t,j}     (≤ 1 up to the bias corrections: |E g| ≤ √E g²)

along two runs, against the distance to the optimum:

* the quadratic surface ``½(x² + 20y²)`` of the gallery from its start (-4.5, 2), Adam lr 0.05, 400 steps;
  the optimum is (0, 0);
* the spiral MLP (2-16-16-2, full batch, 800 points), Adam lr 0.01, 600 steps; the "optimum" is the last
  iterate ``θ_T`` (its distance ``‖θ_t − θ_T‖`` stands in for the unknown minimiser).

Both runs use ``dt.adam``'s own step (the library's chain) for the parameters and the same recurrences
for m̂, v̂ (:func:`moments`). The verdict compares the median ratio over the first and the last tenth of
each run: *shown* when it is ≥ 0.8 far from the optimum and ≤ 0.5 near it (:func:`claim_verdict`).
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Adam's effective step size: |m̂|/√v̂ against the distance to the optimum (seed 002)"
BETAS = (0.9, 0.999)
FAR, NEAR = 0.8, 0.5


def moments(grads, betas=BETAS):
    """``(m̂_t, v̂_t)`` for ``t = 1..T`` from the gradient sequence ``grads`` (T × p)."""
    import numpy as np

    b1, b2 = betas
    m, v = np.zeros(grads.shape[1]), np.zeros(grads.shape[1])
    m_hat, v_hat = np.empty_like(grads), np.empty_like(grads)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat[t - 1], v_hat[t - 1] = m / (1 - b1 ** t), v / (1 - b2 ** t)
    return m_hat, v_hat


def adam_run(gradient, theta0, lr: float, steps: int):
    """Parameters before each step (T × p) and the gradients there, with ``dt.adam(lr)``."""
    import numpy as np

    from dyntools.optim import adam

    opt = adam(lr, betas=BETAS)
    theta, state = np.array(theta0, dtype=np.float64), None
    state = opt.init(theta)
    thetas, grads = [], []
    for t in range(1, steps + 1):
        g = gradient(theta)
        thetas.append(theta.copy())
        grads.append(g)
        theta, state = opt.step(theta, g, state, t)
    return np.array(thetas), np.array(grads), theta


def ratio(grads):
    """``r_{t,j} = |m̂_{t,j}|/√v̂_{t,j}`` (NaN where v̂ = 0)."""
    import numpy as np

    m_hat, v_hat = moments(grads)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(v_hat > 0, np.abs(m_hat) / np.sqrt(v_hat), np.nan)


def quadratic_run(steps: int = 400):
    import numpy as np

    from dyntools.models.surfaces import Surface

    model = Surface("quadratic")

    def gradient(theta):
        gx, gy = model.gradient(np.array([theta[0]]), np.array([theta[1]]))
        return np.array([gx[0], gy[0]])

    thetas, grads, _ = adam_run(gradient, (-4.5, 2.0), 0.05, steps)
    return np.linalg.norm(thetas, axis=1), ratio(grads)


def spiral_run(steps: int = 600, seed: int = 0):
    import numpy as np

    from dyntools.dynamics.full_batch import spiral_gradient

    theta0, gradient = spiral_gradient(seed, 800)
    thetas, grads, last = adam_run(gradient, theta0, 0.01, steps)
    return np.linalg.norm(thetas - last, axis=1), ratio(grads)


def verdict(distance, r) -> dict:
    """Median ratio over the first and the last tenth of a run, and whether the notes' claim holds there
    (``None``: not measured, no finite ratio)."""
    import numpy as np

    from dyntools.verdicts import measured

    k = max(len(distance) // 10, 1)
    far = float(np.nanmedian(r[:k])) if np.isfinite(r[:k]).any() else float("nan")
    near = float(np.nanmedian(r[-k:])) if np.isfinite(r[-k:]).any() else float("nan")
    holds = (far >= FAR and near <= NEAR) if measured(far, near) else None
    return {"far": far, "near": near, "holds": holds}


def claim_verdict(distance, r):
    """The notes' claim on one run as a :class:`dyntools.verdicts.Verdict` of the rule *thresholds on one
    deterministic run*: *shown* when the median ratio is ≥ :data:`FAR` over the first tenth and ≤ :data:`NEAR`
    over the last, *contradicted* when either median misses its threshold, *not shown* when a median is not
    finite. ``n`` counts the ratios (steps × coordinates) of the two tenths, the survivors the finite ones."""
    import numpy as np

    from dyntools import verdicts as V

    v = verdict(distance, r)
    k = max(len(distance) // 10, 1)
    ends = np.concatenate([np.ravel(r[:k]), np.ravel(r[-k:])])
    rule = f"thresholds on one deterministic run (far ≥ {FAR}, near ≤ {NEAR})"
    text = f"median |m̂|/√v̂ {v['far']:.3g} over the first tenth, {v['near']:.3g} over the last"
    return V.check(v["holds"], rule, int(ends.size), int(np.isfinite(ends).sum()), text,
                   why_not="a median misses its threshold.")


def reproduce(ctx):
    from dyntools import verdicts as V
    from dyntools.plots import adam_effective_step as plots
    from dyntools.report import Section

    runs = {"quadratic surface": quadratic_run(), "spiral MLP": spiral_run(300 if ctx.quick else 600, ctx.seed)}
    verdicts = {name: verdict(*run) for name, run in runs.items()}
    claims = {name: claim_verdict(*run) for name, run in runs.items()}
    figs = plots.plot(runs, ctx.figure_dir, ("png",))
    md = [__doc__.split("\n\n")[1].replace("\n", " "), "",
          "The notes' claim (far from the optimum |m̂|/√v̂ ≈ 1, near it < 1) per run, by a declared rule:", "",
          V.claims_table((f"{name}: the ratio is ≈ 1 far from the optimum and < 1 near it", v)
                         for name, v in claims.items()), ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    headline = "; ".join(f"{name} {v.label()} ({verdicts[name]['far']:.2f} far, {verdicts[name]['near']:.2f} near; "
                         f"n = {v.n} ratios)" for name, v in claims.items()) + f" [{next(iter(claims.values())).rule}]"
    numbers = {name: {**verdicts[name], "claim": claims[name].as_dict()} for name in runs}
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   ok=True, headline=headline)          # the notes' claim is measured and reported, not gated


REPORT = Entry("adam-effective-step", TITLE, reproduce, order=37, single_core=True)
