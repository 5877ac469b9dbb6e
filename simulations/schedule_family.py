"""The schedule family in one figure (seeds 002, 003): the learning rate η_t of every schedule of
:mod:`dyntools.optim.schedules` over one training run, with the validation loss each produced.

The spiral MLP of the problem set (2-32-32-2 ReLU, cross-entropy, 800 training and 400 validation
points) is trained by Adam (lr 0.01, batches of 32, shuffled epochs) for T steps, once per schedule,
from the same initialization and with the same batches (``common_stream``):

* constant: ``m_t = 1``;
* step: ``m_t = 0.3^{⌊t / (T/3)⌋}`` (torch ``StepLR``);
* exponential: ``m_t = γᵗ`` with ``γ^T = 0.01`` (``ExponentialLR``);
* cosine: ``m_t = ½(1 + cos(π t / T))`` (``CosineAnnealingLR``);
* linear warm-up then constant: ``m_t`` from 0.01 to 1 over the first T/10 steps (``LinearLR``);
* SGDR: cosine with warm restarts, ``T_0 = T/7``, ``T_mult = 2`` (``CosineAnnealingWarmRestarts``);
* reduce-on-plateau: ``m`` multiplied by 0.3 when the *validation* loss, measured every epoch on the
  run's current parameters, has not improved by 1 % for 2 epochs (``ReduceLROnPlateau``, reactive:
  the trainer feeds it the recorded validation loss).

The figure draws ``η_t = lr · m_t`` as each run used it (the trainer's ``lrs``, not a re-computation)
and the validation loss at the recordings; the report tabulates the final validation loss and accuracy.
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "The schedule family over one run: η_t of seven schedules and their validation loss (seeds 002, 003)"
LR = 0.01
QUICK, FULL = {"steps": 1_500, "seeds": 1}, {"steps": 6_000, "seeds": 3}


def schedules(steps: int) -> dict:
    """Name → schedule of the family for a run of ``steps`` steps (see the module docstring)."""
    from dyntools.optim import schedules as S

    return {"constant": S.Constant(),
            "step": S.StepLR(step_size=max(steps // 3, 1), gamma=0.3),
            "exponential": S.ExponentialLR(gamma=0.01 ** (1.0 / steps)),
            "cosine": S.CosineAnnealingLR(steps),
            "linear warm-up": S.LinearLR(start_factor=0.01, end_factor=1.0, total_iters=max(steps // 10, 1)),
            "SGDR": S.CosineAnnealingWarmRestarts(T_0=max(steps // 7, 1), T_mult=2),
            "reduce-on-plateau": S.ReduceLROnPlateau(factor=0.3, patience=2, threshold=0.01)}


def run(steps: int, seeds: int, seed: int = 0):
    """One ``dt.train`` per schedule (the plateau run reactive on the validation loss); returns
    ``(names, results)``."""
    from types import SimpleNamespace

    import numpy as np

    from dyntools.data import spirals
    from dyntools.dynamics.train import train
    from dyntools.models.mlp import MLP
    from dyntools.optim import adam

    spiral_set = spirals(800, n_val=400, seed=seed)
    data = SimpleNamespace(X=spiral_set.X, y=spiral_set.y, X_test=spiral_set.X_val, y_test=spiral_set.y_val)  # dt.train
    # records the loss on X_test at every recording: here the validation loss
    model = MLP((2, 32, 32, 2), head="cross-entropy")
    family = schedules(steps)
    records = np.unique(np.linspace(0, steps, 61).astype(np.int64))

    def validation_loss(thetas):
        return float(np.mean([model.loss(th, spiral_set.X_val, spiral_set.y_val) for th in thetas]))

    results = []
    for name, schedule in family.items():
        kwargs = {}
        if name == "reduce-on-plateau":
            kwargs["plateau_metric"] = validation_loss
        results.append(train(model, data, adam(LR), steps=steps, schedule=schedule, batch=32,
                                sampler="epoch", record_steps=records, seed=seed, seeds=seeds,
                                common_stream=True, **kwargs))
    return list(family), results


def reproduce(ctx):
    import numpy as np

    from dyntools.plots import schedule_family as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    size = QUICK if ctx.quick else FULL
    names, results = run(size["steps"], size["seeds"], seed=ctx.seed)
    figs = plots.plot(names, results, LR, ctx.figure_dir, ("png",))
    rows = []
    for name, res in zip(names, results):
        lrs = np.broadcast_to(res["lrs"][0], (size["steps"],))
        final = res["test_loss"][0, :, -1]
        rows.append({"schedule": name, "η at the end": float(lrs[-1]), "smallest η": float(lrs.min()),
                     "final validation loss (median over seeds)": float(np.nanmedian(final)),
                     "diverged seeds": int((res["diverged_at"][0] >= 0).sum())})
    best = min(rows, key=lambda r: r["final validation loss (median over seeds)"])
    plateau = next(r for r in rows if r["schedule"] == "reduce-on-plateau")
    cuts = int(round(np.log(plateau["η at the end"] / LR) / np.log(0.3)))
    md = [f"The spiral MLP (2-32-32-2) trained by Adam (lr {LR:g}, batch 32) for {size['steps']} steps per "
          f"schedule, {size['seeds']} seed(s), the same initialization and batches for every schedule; the "
          "reduce-on-plateau run is reactive, stepped every epoch on its own validation loss "
          f"({cuts} reduction(s) by 0.3 in this run).", "", markdown_table(rows), ""]
    md += [f"![{f.stem}]({ctx.relative(f)})" for f in figs]
    numbers = {r["schedule"]: {"final_val_loss": r["final validation loss (median over seeds)"],
                               "eta_end": r["η at the end"]} for r in rows}
    diverged = sum(r["diverged seeds"] for r in rows)
    headline = (f"a measurement, no claim tested: lowest final validation loss with {best['schedule']} "
                f"({best['final validation loss (median over seeds)']:.3g}, median over {size['seeds']} seed(s) per "
                f"schedule, {diverged} diverged of {size['seeds'] * len(rows)} runs); plateau reductions: {cuts}")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=[ctx.relative(f) for f in figs],
                   headline=headline)


REPORT = Entry("schedule-family", TITLE, reproduce, order=36, single_core=True)
