"""``dyntools bench deep-nets``: the training of the deep-network experiment at full size (ReLU MLP
64 → 4 × 256 → 10 on digits, four step-size schedules, minibatch SGD through :func:`dyntools.train`), timed
and projected to the whole experiment (2 settings × 3 seeds of such a training), against the 3-minute budget.

The workload is stated here from library pieces (the library does not import ``simulations/``); a test pins it
to ``simulations/deep_nets.py``. The ``sota`` setting's momentum, weight decay and augmented copies change
neither the network nor the per-step work, so one basic training stands for each of the six.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from dyntools.bench import BenchReport, Target

WIDTH, DEPTH, BATCH, STEPS, TRAININGS = 256, 4, 32, 1_000, 6
BUDGET_SECONDS = 180.0


def workload(width: int = WIDTH, depth: int = DEPTH):
    """``(model, data, optimizers, schedules)``: He-initialized cross-entropy MLP on digits; η = 0.02 constant
    and η = 0.2 divided by 10 after 10 / 30 / 50 %."""
    from dyntools import data
    from dyntools.models.mlp import MLP
    from dyntools.optim import optimizers as O
    from dyntools.optim.schedules import Constant, PiecewiseDecay

    widths = (64, *([width] * depth), 10)
    scales = [np.sqrt(2.0 / w) for w in widths[:-2]] + [np.sqrt(1.0 / widths[-2])]
    model = MLP(widths, head="cross-entropy", init="gaussian", init_scales=scales)
    d = data.digits(seed=0)
    runs = [(0.02, Constant())] + [(0.2, PiecewiseDecay((f,), (10.0,))) for f in (0.1, 0.3, 0.5)]
    return model, SimpleNamespace(X=d.X, y=d.y), [O.sgd(eta) for eta, _ in runs], [sc for _, sc in runs]


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.train import train

    steps = 100 if quick else STEPS
    model, data, opts, scheds = workload()

    def one(n_steps):
        start, cpu = time.perf_counter(), time.process_time()
        res = train(model, data, opts, schedule=scheds, steps=n_steps, batch=BATCH, sampler="epoch",
                    record_steps=np.array([n_steps]), seed=0, theta0=model.init(0), common_stream=True)
        return time.perf_counter() - start, time.process_time() - cpu, res

    one(2)                                                                    # compile / warm up
    wall, cpu, res = one(steps)
    projected = wall * TRAININGS * STEPS / steps
    report = BenchReport("deep-nets")
    report.measurements = {"wall seconds (one training)": wall, "cpu seconds (one training)": cpu,
                           "steps": float(steps), "paths": float(len(opts)),
                           "ms per path-step": 1e3 * wall / (steps * len(opts)),
                           "projected experiment training seconds (wall)": projected,
                           "projected experiment training seconds (cpu / 2 cores)": cpu * TRAININGS * STEPS / steps / 2,
                           "diverged paths": float((res["diverged_at"] >= 0).sum())}
    report.targets = [Target("deep-nets full size: projected training seconds (6 trainings)", projected,
                             BUDGET_SECONDS, higher_is_better=False, unit="s")]
    report.notes = [f"MLP {list(model.widths)}, {len(opts)} schedules x {steps} steps, batch {BATCH}"
                    + ("; quick: 100 steps, projected linearly" if quick else "")
                    + "; the metrics (accuracies, feature sparsity at 12 records) come on top"]
    return report
