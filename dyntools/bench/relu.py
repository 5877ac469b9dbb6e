"""``dyntools bench relu``: setting 3's full run (three-layer teacher–student, 4 schedules, 10⁴
SGD steps each) with the compiled kernel against its NumPy twin, timed in one process.

The workload is stated here (:func:`workload`), from library pieces; ``tests/test_relu_nets.py``
checks that it is exactly the ``teacher3`` setting of ``simulations/relu_nets.py``.
"""

from __future__ import annotations

import time

import numpy as np

from dyntools.bench import BenchReport, Target


def workload(steps: int, seed: int = 0):
    """Setting 3 of seed 004: a student [10, 10] with biases (Gaussian init 0.8) on 50 teacher [2, 2]
    points in R⁵; η = 0.011 constant, and η = 0.04 with a power warm-up (×6, exponent 0.5) until its
    decay ÷3.5 / ÷2.5 / ÷5 at 10 % / 30 % / 50 %. Returns ``(layout, theta0, X, y, etas)``."""
    from dyntools import data
    from dyntools.models.relu_net import Layout, init_gaussian
    from dyntools.optim.schedules import Constant, PiecewiseDecay, PowerWarmup

    layout = Layout.mlp(5, (10, 10), biases=(True, True, True))
    ts = data.teacher_student(50, 5, (2, 2), n_test=1000, seed=seed, student_d=layout.widths[0])
    theta0 = init_gaussian(layout, 0.8, seed=seed)
    runs = [(0.011, Constant())] + [(0.04, PowerWarmup(6.0, f, 0.5, inner=PiecewiseDecay((f,), (k,))))
                                    for f, k in ((0.1, 3.5), (0.3, 2.5), (0.5, 5.0))]
    etas = np.stack([sc.etas(eta, steps) * np.ones(steps) for eta, sc in runs])
    return layout, theta0, ts.X, ts.y, etas


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.relu_sgd import train

    steps = 1000 if quick else 10_000
    layout, theta0, X, y, etas = workload(steps)
    kw = {"steps": steps, "batch": 1, "records": 60, "seed": 0}
    train(layout, theta0, X, y, etas[:, :10], **{**kw, "steps": 10})            # compile / warm up
    t_fast = min(train(layout, theta0, X, y, etas, kernel="numba", **kw)[3] for _ in range(3))
    start = time.perf_counter()
    _, rec_np, div_np, t_np = train(layout, theta0, X, y, etas, kernel="numpy", **kw)
    _, rec_nb, div_nb, _ = train(layout, theta0, X, y, etas, kernel="numba", **kw)
    n_steps = steps * etas.shape[0]
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
    report.notes = [f"{etas.shape[0]} schedules x {steps} steps of SGD (batch 1), network "
                    f"{list(layout.widths)}; divergence steps agree: {same}"
                    + ("; quick: 10^3 steps" if quick else "")]
    return report
