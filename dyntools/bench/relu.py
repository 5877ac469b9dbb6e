"""``dyntools bench relu``: setting 3's full run (three-layer teacher–student, 4 schedules, 10⁴
SGD steps each) with the compiled kernel against its NumPy twin, timed in one process."""

from __future__ import annotations

import time

import numpy as np

from dyntools.bench import BenchReport, Target


def run(quick: bool = False) -> BenchReport:
    from types import SimpleNamespace

    from dyntools.dynamics.train import train as train_net
    from dyntools.optim import optimizers as O
    from simulations.relu_nets import build, get_setting, schedules

    s = get_setting("teacher3", **({"log10_steps": 3.0} if quick else {}))
    layout, theta0, X, y, *_ = build(s, 0)
    sched = schedules(s)
    data = SimpleNamespace(X=X, y=y)

    def train(kernel="numba", steps=s.steps):
        res = train_net(layout, data, [O.sgd(eta) for _, eta, _ in sched], schedule=[sc for *_, sc in sched],
                        steps=steps, batch=s.batch, sampler="distinct", records=60, seed=0, theta0=theta0,
                        common_stream=True, kernel=kernel)
        return res["lrs"], res["theta"][:, 0], res["diverged_at"][:, 0], res.timings["simulate"]

    train(steps=10)                                                             # compile / warm up
    t_fast = min(train("numba")[3] for _ in range(3))
    start = time.perf_counter()
    _, rec_np, div_np, t_np = train("numpy")
    _, rec_nb, div_nb, _ = train("numba")
    n_steps = s.steps * len(sched)
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
    report.notes = [f"{len(sched)} schedules x {s.steps} steps of SGD (batch {s.batch}), network "
                    f"{list(layout.widths)}; divergence steps agree: {same}"
                    + ("; quick: 10^3 steps" if quick else "")]
    return report
