"""``dyntools simulate grokking``: generalization long after memorization, driven by weight decay
(Power et al. 2022; Nanda et al. 2023; issue 42 item 2).

**Task.** The table of ``a ∘ b mod p`` (``∘`` ∈ {+, −, ×}), a fraction of its ``p²`` pairs for training and
the rest held out (:func:`dyntools.data.modular_arithmetic`; seed index ``s`` draws its own split from the
stream ``data.modular``). The network must output ``c = a ∘ b mod p`` (``p``-way softmax cross-entropy).

**Network.** The cheapest that groks: the one MLP (:class:`dyntools.models.mlp.MLP`) ``2p → m → p`` on the
one-hot pair ``[e_a, e_b]``, ReLU, *no biases* (the first layer's columns are the operands' embeddings),
Gaussian init ``W_1 ~ N(0, 1/2)`` (unit pre-activation variance: two inputs are 1) and ``W_2 ~ N(0, 1/m)``.
Every parameter is a weight matrix, so the decay groups practitioners configure (no decay on biases and
norms) decay all of them. ``--model transformer`` trains the small transformer
(:class:`dyntools.models.transformer.Transformer`) on the token sequence ``a b =`` instead, with its decay
groups (no decay on the layer norms' gains and biases).

**Optimizers** (full batch, :func:`dyntools.train`, the same learning rate η and betas for all):

* ``AdamW`` — decoupled decay ``θ ← θ − η (m̂/(√v̂ + ε) + λ w ⊙ θ)`` (``w`` the decay mask);
* ``Adam+L2`` — the same λ as a penalty in the gradient, ``g + λθ``, *before* the preconditioner
  (``torch.optim.Adam(weight_decay=λ)``);
* ``Adam`` — no decay.

**Measured** at a log grid of steps: train/test accuracy and loss, the weight norm ‖θ‖₂; the first recorded
step at which train accuracy reaches 99 % and the first at which test accuracy does (grid resolution).
**Phase diagram**: AdamW over a grid of λ × train fraction, the proportion of seeds whose test accuracy
reaches the threshold within the budget.

**Verdict** (:func:`decay_verdict`, a declared rule over ≥ 5 seeds): k/n seeds reach test accuracy ≥ 95 %
(``threshold``) at some recorded step within the budget with AdamW, k'/n without decay. *Shown* when the
95 % Wilson interval (:func:`dyntools.verdicts.wilson_interval`) of k/n lies wholly above that of k'/n,
*contradicted* in the mirror case, *not shown* otherwise (with the n the observed proportions would need when
the rule lacks power).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.grokking_study import (  # noqa: F401 - the study's pieces, as simulate grokking uses them
    BETAS,
    CONTRADICTED,
    METRICS,
    NOT_SHOWN,
    RUN,
    RUNS,
    SHOWN,
    TASK,
    GrokkingTask,
    check_grid,
    datasets,
    decay_verdict,
    describe_network,
    first_step,
    measure,
    network,
    optimizers,
    train_runs,
)
from dyntools.plots import grokking as grokking_figures
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param
from dyntools.tables import status_and_table, summary_with

KIND = "grokking"
TITLE = "Grokking on modular arithmetic: generalization long after memorization, driven by weight decay"
PHASE = "phase diagram"


@dataclass(frozen=True)
class GrokkingParams(GrokkingTask):
    """``dyntools simulate grokking``: AdamW vs Adam+L2 vs Adam on ``a ∘ b mod p``, and AdamW's phase diagram."""

    train_fraction: float = param(0.7, low=0.0, high=1.0, low_open=True, high_open=True, group=TASK,
                                  help="fraction of the table used for training")
    weight_decay: float = param(1.0, low=0.0, group=RUN, help="λ of AdamW and of Adam+L2")
    seeds: int = param(5, low=1, high=1000, group=RUN, help="seeds (split, initialization)")
    phase_decays: tuple = param((0.0, 0.3, 1.0), kind="floats", low=0.0, max_len=20, metavar="LAMBDAS", group=PHASE,
                                help="AdamW's λ values of the phase diagram")
    phase_fractions: tuple = param((0.5, 0.7, 0.85), kind="floats", low=0.0, high=1.0, low_open=True,
                                   high_open=True, max_len=20, metavar="FRACS", group=PHASE,
                                   help="train fractions of the phase diagram")
    phase_seeds: int = param(2, low=0, high=100, group=PHASE, help="seeds per cell of the phase diagram (0: no diagram)")
    workers: int | None = param(None, kind="int", low=1, high=1024, group=RUN,
                                help="threads advancing the paths (default: numba's thread count)")


#: ``dyntools reproduce --quick``: the defaults (5 seeds, 3000 steps, a 3 × 3 phase diagram) with one seed per
#: cell of the diagram (the headline rests on the 5 seeds of each optimizer, not on the diagram)
QUICK: dict = {"phase_seeds": 1}
#: the full entry: 10 seeds, 10 000 steps, a 5 × 4 phase diagram of 3 seeds
FULL = {"seeds": 10, "steps": 10_000, "records": 40, "phase_decays": (0.0, 0.1, 0.3, 1.0, 3.0),
        "phase_fractions": (0.4, 0.55, 0.7, 0.85), "phase_seeds": 3}


def check(p: GrokkingParams) -> None:
    check_grid(p, "phase_decays", "phase_fractions", (p.train_fraction, *p.phase_fractions))


# ------------------------------------------------------------------------------------ the run

def simulate(p: GrokkingParams, *, seed: int = 0):
    """The three optimizers × ``p.seeds`` seeds, then the phase diagram → a :class:`RunResult` of kind
    ``"grokking"``: ``steps`` (K,), per metric ``{metric}`` (3, S, K), ``step_train99``/``step_test99``/
    ``step_test_threshold`` (3, S) (−1: never), ``phase_reached`` (Λ, F, S'), ``phase_final_test`` (Λ, F, S')."""
    import time

    from dyntools.engine import record
    from dyntools.engine.result import RunResult

    seed = validation.seed(seed)
    check(p)
    model = network(p)
    start, cpu = time.perf_counter(), time.process_time()
    steps = record.make_grid("log", p.steps, p.records)
    data = datasets(p, p.train_fraction, p.seeds, seed)
    res = train_runs(p, model, data, optimizers(p, model), seed, (0,), steps)
    arrays = measure(model, res["theta"], data)
    arrays["steps"] = steps
    arrays["diverged_at"] = res["diverged_at"]
    arrays["step_train99"] = first_step(arrays["train_acc"], steps, 0.99)
    arrays["step_test99"] = first_step(arrays["test_acc"], steps, 0.99)
    arrays["step_test_threshold"] = first_step(arrays["test_acc"], steps, p.threshold)
    L, F, S2 = len(p.phase_decays), len(p.phase_fractions), p.phase_seeds
    reached, final = np.zeros((L, F, S2), bool), np.full((L, F, S2), np.nan)
    for j, frac in enumerate(p.phase_fractions if L and S2 else ()):
        pdata = datasets(p, frac, S2, seed)
        lams = [lam for lam in p.phase_decays if not _is_main_run(p, frac, lam)]
        theta = train_runs(p, model, pdata, [optimizers(p, model, lam)[0] for lam in lams], seed, (1, j),
                           steps)["theta"] if lams else None
        # the cell of AdamW at the study's λ and fraction is its first S2 seeds (same splits, inits, optimizer
        # and full-batch steps: the same bits): taken from above, not trained twice
        rows = [theta[lams.index(lam)] if lam in lams else res["theta"][0, :S2] for lam in p.phase_decays]
        m = measure(model, np.stack(rows), pdata)
        reached[:, j] = first_step(m["test_acc"], steps, p.threshold) >= 0
        final[:, j] = m["test_acc"][..., -1]
    arrays["phase_reached"], arrays["phase_final_test"] = reached, final
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    cfg = {"model": p.model, "p": p.p, "op": p.op, "train_fraction": p.train_fraction, "steps": p.steps,
           "lr": p.lr, "weight_decay": p.weight_decay, "seeds": p.seeds, "records": p.records,
           "threshold": p.threshold, "phase_decays": list(p.phase_decays),
           "phase_fractions": list(p.phase_fractions), "phase_seeds": p.phase_seeds, "labels": list(RUNS),
           "n_train": int(data[0].X.shape[0]), "n_test": int(data[0].X_val.shape[0]),
           "n_params": int(model.n_params), "network": describe_network(p)}
    n_div = int((arrays["diverged_at"] >= 0).sum())
    status = "diverged" if n_div else "completed"
    message = f"{n_div} runs diverged" if n_div else f"{len(RUNS) * p.seeds} runs of {p.steps} steps without divergence"
    out = RunResult(KIND, cfg, arrays, status, message, seed=seed, timings={"total": total, "cpu": cpu})
    out.summary = {"verdict": verdict(out), "table": table_rows(out)}
    return out


def _is_main_run(p: GrokkingParams, fraction: float, decay: float) -> bool:
    """Whether the phase diagram's cell (``decay``, ``fraction``) is AdamW's run of the study itself: the same
    optimizer, split and initializations, and the phase's seeds among the study's."""
    return fraction == p.train_fraction and decay == p.weight_decay and p.phase_seeds <= p.seeds


def verdict(result) -> dict:
    """:func:`decay_verdict` of the result's seeds (AdamW vs Adam without decay), plus Adam+L2's count."""
    reached = result["step_test_threshold"] >= 0
    n = int(reached.shape[1])
    v = decay_verdict(int(reached[0].sum()), int(reached[2].sum()), n)
    v["k_l2"] = int(reached[1].sum())
    return v


def verdict_line(result) -> str:
    """``shown: test accuracy ≥ 95 % within the budget with decoupled decay on k/n seeds; without decay on k'/n``."""
    v, c = result.summary["verdict"], result.config
    note = f" ({v['note']})" if v["note"] else ""
    return (f"{v['word']}{note}: test accuracy ≥ {100 * c['threshold']:g} % within the budget ({c['steps']} steps) "
            f"with decoupled decay (AdamW, λ = {c['weight_decay']:g}) on {v['k_decay']}/{v['n']} seeds; without "
            f"decay on {v['k_none']}/{v['n']}; Adam+L2 at the same λ on {v['k_l2']}/{v['n']} [fractions, disjoint "
            f"Wilson 95 % intervals, n = {v['n']} seeds per optimizer, a diverged seed counts as not reached]")


# ------------------------------------------------------------------------------------ table

def _steps_text(steps: np.ndarray) -> str:
    hit = steps[steps >= 0]
    if not hit.size:
        return f"never (0/{steps.size})"
    return f"{int(np.median(hit))} ({hit.size}/{steps.size})"


def table_rows(result) -> list[dict]:
    """Per optimizer: final train/test accuracy (mean over seeds), the median first step of train ≥ 99 %,
    test ≥ 99 % and test ≥ threshold (over the seeds that reach it, their count), final weight norm."""
    rows = []
    thr = f"{100 * result.config['threshold']:g}"
    for g, lab in enumerate(result.config["labels"]):
        last = lambda key, g=g: result[key][g, :, -1]
        rows.append({"optimizer": lab, "train acc %": f"{100 * np.nanmean(last('train_acc')):.1f}",
                     "test acc %": f"{100 * np.nanmean(last('test_acc')):.1f}",
                     "step train ≥ 99 %": _steps_text(result["step_train99"][g]),
                     "step test ≥ 99 %": _steps_text(result["step_test99"][g]),
                     f"step test ≥ {thr} %": _steps_text(result["step_test_threshold"][g]),
                     "‖θ‖₂ final": f"{np.nanmean(last('weight_norm')):.3g}"})
    return rows


def phase_lines(result) -> list[str]:
    """The phase diagram as text: per λ, the seeds that reach the threshold at each train fraction."""
    c, reached = result.config, result["phase_reached"]
    if reached.size == 0:
        return ["no phase diagram (no λ or no seeds per cell)"]
    head = "λ \\ train fraction: " + ", ".join(f"{f:g}" for f in c["phase_fractions"])
    return [head] + [f"- λ = {lam:g}: " + ", ".join(f"{int(reached[i, j].sum())}/{reached.shape[2]}"
                                                   for j in range(reached.shape[1]))
                     for i, lam in enumerate(c["phase_decays"])]


# ------------------------------------------------------------------------------------ report entry

def _entry(ctx, over: dict):
    from dyntools import store
    from dyntools.plots import grokking as plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    res = simulate(EXPERIMENT.make(None, **over), seed=ctx.seed)
    store.save(res, ctx.out_dir / "runs" / KIND)
    paths = plots.plot_result(res, ctx.figure_dir, ("png",))
    c = res.config
    md = [f"{c['network']}, {c['p']}² = {c['p'] ** 2} pairs of a {c['op']} b mod {c['p']}, {c['n_train']} for "
          f"training ({c['train_fraction']:g}) and {c['n_test']} held out; full-batch AdamW (λ = {c['weight_decay']:g}),"
          f" Adam+L2 (same λ) and Adam, η = {c['lr']:g}, betas {BETAS}, {c['steps']} steps, {c['seeds']} seeds "
          f"(each its own split and initialization). Steps are the first recorded step of a log grid of "
          f"{c['records']}; median over the seeds that reach the level (their count). {res.message}; "
          f"{res.timings['total']:.1f} s wall, {res.timings['cpu']:.1f} CPU-s.", "",
          markdown_table(res.summary["table"]), "", f"**Verdict** — {verdict_line(res)}.", "",
          f"Phase diagram (AdamW, seeds reaching test accuracy ≥ {100 * c['threshold']:g} % within the budget, "
          f"{c['phase_seeds']} seed{'s' * (c['phase_seeds'] != 1)} per cell):", *phase_lines(res), ""]
    md += [f"![grokking]({ctx.relative(q)})" for q in paths]
    return Section(TITLE, "\n".join(md), numbers={"verdict": res.summary["verdict"], "seconds": res.timings["total"]},
                   figures=[ctx.relative(q) for q in paths], ok=True, headline=verdict_line(res))


def reproduce(ctx):
    """Catalogue entry: the MLP, 5 seeds, 3000 steps, 3 × 3 phase diagram of 1 seed (quick); 10 seeds, 10 000 steps,
    5 × 4 phase diagram of 3 seeds (full)."""
    return _entry(ctx, QUICK if ctx.quick else FULL)


# ------------------------------------------------------------------------------------ command line

def run(p: GrokkingParams, ctx: RunContext):
    return simulate(p, seed=ctx.seed)


def summary(p: GrokkingParams, result) -> dict:
    return summary_with(result, "verdict", "table")


def table(p: GrokkingParams, result) -> str:
    return status_and_table(result, verdict_line(result), "", *phase_lines(result))


RESULTS = (derive(KIND, GrokkingParams, "model p op train_fraction steps lr weight_decay seeds records threshold "
                                         "phase_decays phase_fractions phase_seeds",
                  summary={"verdict": "mapping", "table": "list"}),)

EXPERIMENT = Experiment.declare(
    globals(), name=KIND, verb="simulate",
    help="grokking on a ∘ b mod p: AdamW vs Adam+L2 vs Adam (test accuracy long after train accuracy), weight "
         "norm, and AdamW's (λ × train fraction) phase diagram",
    example="dyntools simulate grokking --p 23 --op + --train-fraction 0.7 --seeds 5 --out runs/grok\n"
            "  dyntools simulate grokking --model transformer --p 11 --steps 2000 --phase-seeds 0 --out runs/grok-t",
    params=GrokkingParams, figures={KIND: grokking_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {KIND: ["--p", "5", "--steps", "20", "--seeds", "2", "--records", "4", "--width", "8",
                      "--phase-fractions", "0.6", "--phase-seeds", "1", "--workers", "1"]}

REPORTS = [Entry(KIND, TITLE, reproduce, order=68)]
