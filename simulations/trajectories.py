"""``dyntools simulate trajectories``: the optimizer trajectory gallery (seed 001's wish list: "rolling a
ball … comparing momentum, SGD, AdaGrad, Adam").

Every optimizer of :mod:`dyntools.optim` (SGD, heavy-ball and Nesterov momentum, AdaGrad, RMSProp, Adam
with and without bias correction, AdamW) on the 2-D surfaces of :mod:`dyntools.models.surfaces`
(an ill-conditioned quadratic, Rosenbrock, Beale, a saddle, Himmelblau, the two-parameter diagonal net),
trained by :func:`dyntools.train` (:mod:`dyntools.dynamics.trajectories`), optionally with seeded gradient
noise; figures from :mod:`dyntools.plots.trajectories` (contours with trajectories and minima, loss gap
against the step, an animated GIF per surface). ``REPORT`` is the catalogue entry ``trajectory-gallery``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dyntools import memory
from dyntools.plots import trajectories as trajectories_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, Param, RunContext, param

TITLE = "Optimizer trajectory gallery (2-D surfaces)"
SURFACES = ("quadratic", "rosenbrock", "beale", "saddle", "himmelblau", "diag-net")
OPTIMIZERS = ("sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adam", "adam-nobc", "adamw")
#: catalogue sizes: steps and GIF frames
QUICK = {"steps": 1_000, "frames": 10}
FULL = {"steps": 10_000, "frames": 40}


@dataclass(frozen=True)
class TrajectoryParams:
    """The options of ``dyntools simulate trajectories``."""

    surface: tuple = param(SURFACES, kind="strs", choices=SURFACES, metavar="NAME[,NAME…]", max_len=len(SURFACES),
                           help="surfaces: " + ", ".join(SURFACES))
    optimizers: tuple = param(OPTIMIZERS, kind="strs", choices=OPTIMIZERS, metavar="NAME[,NAME…]",
                              max_len=len(OPTIMIZERS),
                              help="optimizers: " + ", ".join(OPTIMIZERS))
    lr: tuple | None = param(None, kind="floats", low=0.0, low_open=True, metavar="LR[,LR…]", max_len=len(OPTIMIZERS),
                             help="learning rate: one for all optimizers or one each; default a tuned table "
                                  "per surface (dyntools.dynamics.trajectories.LRS)")
    steps: int = param(10_000, low=1, high=10**8,
                       help="optimizer steps (surfaces × optimizers × steps × 2 ≤ 2^28 recorded values)")
    noise: float = param(0.0, low=0.0, help="standard deviation of the seeded Gaussian gradient noise")
    start: tuple | None = param(None, kind="floats", metavar="X,Y", max_len=2,
                                help="start point inside the surface's domain (one --surface only); "
                                     "default the surface's own")
    flow: bool = param(False, help="also draw gradient flow (GD with a 50x smaller step, same time)")
    frames: int = param(40, low=2, high=1000, help="frames of each animated GIF")


def check(p: TrajectoryParams) -> None:
    from dyntools.dynamics import trajectories as TR
    from dyntools.models import surfaces as S

    TR.check_surfaces(p.surface)
    TR.check_optimizers(p.optimizers)
    memory.require_each({      # (x, y) at every step of every optimizer (and the flow), float64
        "the paths (--surface × --optimizers × --steps × 2)":
            (8 * len(p.surface) * (len(p.optimizers) + p.flow) * (p.steps + 1) * 2, "--steps")})
    if p.start is not None:
        if len(p.surface) != 1:
            raise ValueError("Invalid start: a start point needs a single --surface")
        S.check_start(S.surface(p.surface[0]), p.start)
    for s in p.surface:
        TR.learning_rates(s, p.optimizers, p.lr)


def run(p: TrajectoryParams, ctx: RunContext):
    from dyntools.dynamics.trajectories import gallery

    return gallery(p.surface, p.optimizers, p.lr, steps=p.steps, noise=p.noise, seed=ctx.seed, start=p.start,
                   flow=p.flow, frames=p.frames)


def summary(p: TrajectoryParams, result) -> dict:
    return {"kind": result.kind, "status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings.get("simulate")}


def rows_of(result) -> list[dict]:
    from dyntools.engine import guard

    out = []
    for r in result.summary["rows"]:
        out.append({"surface": r["surface"], "optimizer": r["optimizer"], "lr": f"{r['lr']:g}",
                    "final f − f*": f"{r['final_gap']:.2e}",
                    "diverged at": "" if r["diverged_at"] == guard.NEVER else r["diverged_at"],
                    "reached a minimum": "yes" if r["reached"] else "no",
                    "nearest minimum": "" if r["minimum"] < 0 else r["minimum"]})
    return out


def table(p: TrajectoryParams, result) -> str:
    from dyntools.tables import key_values, text_table

    return key_values({"status": result.status, "message": result.message,
                       "seconds": result.timings.get("simulate")}) + "\n\n" + text_table(rows_of(result))


def valley_verdict(flow_sharpness: float, gd_sharpness: float, eta: float) -> dict:
    """The diagonal-net valley statement from its three numbers: gradient flow ends above GD's stability
    limit 2/η while GD at step η ends below it. ``holds`` is ``True``/``False``, or ``None`` when a sharpness
    is not finite (a run that diverged): then nothing is claimed."""
    from dyntools.verdicts import check, measured, word

    limit = 2.0 / eta
    if not measured(flow_sharpness, gd_sharpness):
        return {"holds": None, "headline": "not shown — not measured: a run diverged [thresholds on one "
                                           "deterministic run (flow above 2/η, GD below), n = 2, 1 survived]",
                "sentence": f"On the diagonal net (u v − 1)² a run diverged (sharpness flow {flow_sharpness}, "
                            f"GD {gd_sharpness}): the valley statement is not measured."}
    flow_above, gd_below = flow_sharpness > limit, gd_sharpness < limit
    holds = flow_above and gd_below
    sentence = (f"On the diagonal net (u v − 1)², started at (3.5, 0.1), gradient flow ends at sharpness "
                f"λ_max = 2(u² + v²) = {flow_sharpness:.1f}, {word(flow_above, 'above', 'NOT above')} 2/η = "
                f"{limit:.1f} for SGD's η = {eta:g}; GD at that step ends at λ_max = {gd_sharpness:.1f} "
                f"({word(gd_below, 'below', 'NOT below')} 2/η)"
                + (": it cannot settle where the flow does and bounces across the valley to a flatter minimum."
                   if holds else "."))
    v = check(holds, "thresholds on one deterministic run (flow above 2/η, GD below)", 2, 2,
              f"GD ends at sharpness {gd_sharpness:.1f}, gradient flow at {flow_sharpness:.1f}, limit 2/η = {limit:.1f}",
              why_not="a sharpness lies on the wrong side of 2/η.")
    return {"holds": holds, "headline": v.text(), "sentence": sentence, "verdict": v}


def reproduce(ctx):
    """Catalogue entry: all 8 optimizers on all 6 surfaces (with the gradient-flow reference), stills, the
    gallery, the loss gaps and one GIF per surface; then the same on the diagonal net with gradient noise."""
    import time

    import numpy as np

    from dyntools import store
    from dyntools.dynamics.trajectories import LRS, REACHED, gallery
    from dyntools.plots import trajectories as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    size = QUICK if ctx.quick else FULL
    t0 = time.perf_counter()
    res = gallery(SURFACES, OPTIMIZERS, steps=size["steps"], seed=ctx.seed, flow=True, frames=size["frames"])
    store.save(res, ctx.out_dir / "runs" / "trajectories")
    if ctx.quick:                  # the gallery shows every surface; the per-surface stills at full size only
        figures = [plots.animation(res, s, ctx.figure_dir) for s in SURFACES]
        figures += plots.gallery(res, ctx.figure_dir, ("png",)) + plots.losses(res, ctx.figure_dir, ("png",))
    else:
        figures = plots.plot_result(res, ctx.figure_dir, ("png",))
    noisy = gallery(("diag-net",), ("sgd", "momentum", "adam"), steps=size["steps"], noise=0.5, seed=ctx.seed,
                    frames=2)
    noisy_figs = plots.still(noisy, "diag-net", ctx.figure_dir / "noisy", ("png",))
    seconds = time.perf_counter() - t0
    links = {p.name: ctx.relative(p) for p in figures}
    noisy_link = ctx.relative(noisy_figs[0])
    dn = {r["optimizer"]: r for r in res.summary["rows"] if r["surface"] == "diag-net"}
    path = res["diag_net_path"]
    sharp = {o: 2.0 * float(np.sum(path[g, -1] ** 2)) for g, o in enumerate(res.config["optimizers"])}
    flow_sharp = 2.0 * float(np.sum(res["diag_net_flow"][-1] ** 2))
    eta = LRS["diag-net"]["sgd"]
    verdict = valley_verdict(flow_sharp, sharp["sgd"], eta)
    valley = verdict["sentence"]
    from dyntools.models.surfaces import surface

    minima = surface("himmelblau").minima
    himmel = sorted({r["minimum"] for r in res.summary["rows"] if r["surface"] == "himmelblau" and r["reached"]})
    md = (f"{res.config['steps']} steps of each of {len(OPTIMIZERS)} optimizers of `dyntools.optim` on "
          f"{len(SURFACES)} surfaces, trained by `dyntools.train` (learning rates: the table "
          f"`dyntools.dynamics.trajectories.LRS`). A run *reached* a minimum when it ends within {REACHED:g} of "
          f"one (the diagonal net: loss below {REACHED**2:g}). {res.message}. Time for the two galleries, "
          f"figures and {len(SURFACES)} GIFs: {seconds:.1f} s.\n\n"
          f"{markdown_table(rows_of(res))}\n\n"
          f"{valley} On Himmelblau, from the same start, the optimizers that reach a minimum end in {len(himmel)} "
          f"of its 4 minima: " + ", ".join(f"({minima[i][0]:g}, {minima[i][1]:g})" for i in himmel) + ".\n\n"
          f"![gallery]({links['trajectories_gallery.png']})\n\n![loss]({links['trajectories_loss.png']})\n\n"
          + "".join(f"![{s}]({links[f'trajectories_{s}.gif']}) " for s in SURFACES)
          + f"\n\nWith gradient noise σ = 0.5 (seeded, shared by the optimizers) on the diagonal net: "
          f"{noisy.message}.\n\n![noisy]({noisy_link})\n")
    numbers = {"reached": res.summary["reached"], "trajectories": res.summary["trajectories"],
               "diverged": res.summary["diverged"], "diag_net_sharpness": sharp, "diag_net_flow_sharpness": flow_sharp,
               "himmelblau_minima": himmel, "seconds": seconds,
               "diag_net": {o: {"final_gap": r["final_gap"]} for o, r in dn.items()}}
    return Section(TITLE, md, numbers=numbers, figures=list(links.values()) + [noisy_link],
                   ok=verdict["holds"] is True, headline=verdict["headline"])


RESULTS = (derive("trajectories", TrajectoryParams, "flow frames lr noise start steps",
                  extra={"surfaces": Param("surface names (dt.trajectories takes any Surface)", "strs"),
                         "optimizers": Param("optimizer names (dt.trajectories takes any of dt.optim)", "strs")},
                  summary={"diverged": "int", "reached": "int", "rows": "list", "trajectories": "int"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="trajectories", verb="simulate",
    help="optimizer trajectories on 2-D surfaces (quadratic, Rosenbrock, Beale, saddle, Himmelblau, diagonal "
         "net): contours, loss against the step, animated GIFs",
    example="dyntools simulate trajectories --surface rosenbrock,himmelblau --optimizers sgd,momentum,adam "
            "--steps 5000 --frames 30 --out runs/gallery",
    params=TrajectoryParams, figures={"trajectories": trajectories_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "trajectories": ["--surface", "saddle", "--optimizers", "sgd,adam", "--steps", "50", "--frames", "3",
                     "--start=-2,0.5"],
}

REPORT = Entry("trajectory-gallery", TITLE, reproduce, order=85, single_core=True)
