"""``dyntools bench relu``: setting 3's full run (three-layer teacher–student, 4 schedules, 10⁴
SGD steps each) with the compiled kernel against its NumPy twin, timed in one process.

The workload is stated here from library pieces (the library does not import ``simulations/``); a test
pins it to the experiment's ``teacher3`` setting."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target


def workload(steps: int, seed: int = 0):
    """Setting 3 of seed 004: a student [10, 10] with biases (Gaussian init 0.8) on 50 teacher [2, 2]
    points in R⁵; η = 0.011 constant, and η = 0.04 with a power warm-up (×6, exponent 0.5) until its
    decay ÷3.5 / ÷2.5 / ÷5 at 10 % / 30 % / 50 %. Returns ``(model, theta0, X, y, runs)`` with
    ``runs = [(η, Schedule)]``."""
    from dyntools import data
    from dyntools.models.mlp import MLP
    from dyntools.optim.schedules import Constant, PiecewiseDecay, PowerWarmup

    model = MLP((5, 10, 10, 1), biases=(True, True, True), init="gaussian", init_scales=(0.8,))
    ts = data.teacher_student(50, 5, (2, 2), n_test=1000, seed=seed, student_d=model.widths[0])
    runs = [(0.011, Constant())] + [(0.04, PowerWarmup(6.0, f, 0.5, inner=PiecewiseDecay((f,), (k,))))
                                    for f, k in ((0.1, 3.5), (0.3, 2.5), (0.5, 5.0))]
    return model, model.init(seed), ts.X, ts.y, runs


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.train import train as train_net
    from dyntools.optim import optimizers as O

    steps = 1000 if quick else 10_000
    model, theta0, X, y, runs = workload(steps)
    data = SimpleNamespace(X=X, y=y)

    def train(kernel="numba", steps=steps):
        res = train_net(model, data, [O.sgd(eta) for eta, _ in runs], schedule=[sc for _, sc in runs],
                        steps=steps, batch=1, sampler="distinct", records=60, seed=0, theta0=theta0,
                        common_stream=True, kernel=kernel)
        return res["lrs"], res["theta"][:, 0], res["diverged_at"][:, 0], res.timings["simulate"]

    train(steps=10)                                                             # compile / warm up
    t_fast = min(train("numba")[3] for _ in range(3))
    start = time.perf_counter()
    _, rec_np, div_np, t_np = train("numpy")
    _, rec_nb, div_nb, _ = train("numba")
    n_steps = steps * len(runs)
    same = bool(np.array_equal(div_np, div_nb))
    first = np.abs(rec_np[:, :5] - rec_nb[:, :5])
    gap = float(np.nanmax(first)) if np.isfinite(first).any() else float("nan")
    report = BenchReport("relu")
    report.measurements = {
        "numba seconds (full run)": t_fast, "numpy seconds (full run)": t_np,
        "numba us per step": 1e6 * t_fast / n_steps, "numpy us per step": 1e6 * t_np / n_steps,
        "steps": float(n_steps), "max |numba - numpy| over the first records": gap,
        "wall seconds (twin + check)": time.perf_counter() - start,
    }
    report.targets = [Target("setting 3 full run: numba speed-up over the NumPy twin", t_np / t_fast, 10.0)]
    report.notes = [f"{len(runs)} schedules x {steps} steps of SGD (batch 1), network "
                    f"{list(model.widths)}; divergence steps agree: {same}"
                    + ("; quick: 10^3 steps" if quick else "")]
    return report


BENCHMARK = Benchmark("relu", run)
