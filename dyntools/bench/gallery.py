"""``dyntools bench gallery``: the optimizer trajectory gallery end to end, and its training loop against the twin.

* ``gallery``: 8 optimizers × 6 surfaces × 10⁴ steps (:func:`dyntools.dynamics.trajectories.gallery`, with
  the gradient-flow references) and every figure as PNG — a still per surface, the gallery, the loss gaps —
  plus one 40-frame GIF per surface (:mod:`dyntools.plots.trajectories`); wall and CPU seconds. Target:
  ≤ 30 s wall (issue 13). The PDF copies of the stills are timed apart (a note, no target).
* ``loop``: the 8 optimizers on Rosenbrock through :func:`dyntools.train`'s compiled cached loop against
  its NumPy twin (``kernel="numpy"``), the same draws (gradient noise σ = 0.1); target ≥ 20×.

``quick``: 2000 steps and 12 frames (target ≤ 10 s), the loop comparison on 500 steps.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time


def _gallery(steps: int, frames: int, out: Path, formats=("png",)) -> tuple[float, float]:
    from dyntools.dynamics.trajectories import gallery
    from dyntools.plots import trajectories as plots

    wall, cpu = time.perf_counter(), time.process_time()
    res = gallery(steps=steps, flow=True, frames=frames)
    plots.plot_result(res, out, formats)
    return time.perf_counter() - wall, time.process_time() - cpu


def _loop(steps: int, kernel: str):
    from dyntools.dynamics.train import train
    from dyntools.dynamics.trajectories import LRS, NAMES, OPTIMIZERS
    from dyntools.models.surfaces import Surface

    model = Surface("rosenbrock")
    opts = [OPTIMIZERS[n](LRS["rosenbrock"][n]) for n in NAMES]
    return train(model, model.data(), opts, steps=steps, sampler="full", label_noise=0.1, kernel=kernel,
                 record_steps=np.array([steps]), common_stream=True, bound=1e6)


def run(quick: bool = False) -> BenchReport:
    steps, frames = (2_000, 12) if quick else (10_000, 40)
    report = BenchReport("gallery")
    with tempfile.TemporaryDirectory() as tmp:
        _gallery(50, 2, Path(tmp) / "warm")                           # compile / load the numba caches
        wall, cpu = _gallery(steps, frames, Path(tmp) / "png")
        t0 = time.perf_counter()
        from dyntools.dynamics.trajectories import gallery
        from dyntools.plots import trajectories as plots

        res = gallery(steps=steps, flow=True, frames=frames)
        for s in res.config["surfaces"]:
            plots.still(res, s, Path(tmp) / "pdf", ("pdf",))
        pdf = time.perf_counter() - t0
    loop_steps = 500 if quick else 2_000
    _loop(10, "numba")
    fast = []
    best_time(lambda: fast.append(_loop(loop_steps, "numba")), repeats=3)
    t_numba = min(r.timings["simulate"] for r in fast)
    slow = []
    t_numpy = best_time(lambda: slow.append(_loop(loop_steps, "numpy")), repeats=1)
    diff = float(np.max(np.abs(fast[-1]["final_theta"] - slow[-1]["final_theta"])))
    report.measurements.update({
        "optimizers x surfaces": 48, "steps": steps, "gif frames per surface": frames,
        "gallery wall seconds (simulate + PNG stills/gallery/loss + 6 GIFs)": wall,
        "gallery CPU seconds (this process)": cpu,
        "simulate + 6 PDF stills seconds": pdf,
        "loop steps (8 optimizers, rosenbrock, noise 0.1)": loop_steps,
        "compiled loop seconds (dt.train)": t_numba, "numpy twin seconds": t_numpy,
        "max |theta_compiled - theta_twin|": diff})
    report.targets.append(Target("gallery end to end (wall seconds)", wall, 10.0 if quick else 30.0,
                                 higher_is_better=False, unit="s"))
    report.targets.append(Target("gallery loop: compiled vs NumPy twin", t_numpy / t_numba, 20.0))
    report.notes.append("wall time on a shared machine includes other processes' load; the CPU seconds are this "
                        "process's own")
    return report


BENCHMARK = Benchmark("gallery", run)
