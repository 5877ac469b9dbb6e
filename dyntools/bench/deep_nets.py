"""``dyntools bench deep-nets``: the training of the deep-network experiment at full size (ReLU MLP
64 → 4 × 256 → 10 on digits, four step-size schedules, minibatch SGD through :func:`dyntools.train`), timed
and projected to the whole experiment (2 settings × 3 seeds of such a training), against the 3-minute budget.

The convolutional ResNet of ``--arch resnet`` (8 channels, 2 blocks, batch 8): the seconds of one SGD epoch
through :func:`dyntools.train` (one path, compiled loop, one thread), against the budget its report entry
needs (6 trainings of 20 epochs within ~30 s), and against PyTorch on CPU training the same network in float64
(:mod:`dyntools.bench.torch_resnet`, one intra-op thread, the same ⌊n/b⌋ batches per epoch) when torch is
importable — an optional anchor, never a dependency; without it the row says so.

The workload is stated here from library pieces (the library does not import ``simulations/``); a test pins it
to ``simulations/deep_nets.py``. The ``sota`` setting's momentum, weight decay and augmented copies change
neither the network nor the per-step work, so one basic training stands for each of the six.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target

WIDTH, DEPTH, BATCH, STEPS, TRAININGS = 256, 4, 32, 1_000, 6
BUDGET_SECONDS = 180.0
#: the ResNet's epoch budget: its report entry trains 6 × 20 epochs in ~30 s of its 45
RESNET_EPOCH_BUDGET = 0.25


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
    resnet_epoch(report, epochs=1 if quick else 3)
    return report


def resnet_epoch(report: BenchReport, epochs: int = 3) -> None:
    """Add the ResNet rows: best-of-``epochs`` seconds of one SGD epoch, dyntools and (if importable) PyTorch."""
    from dyntools import data
    from dyntools.bench import torch_resnet
    from dyntools.dynamics.train import train
    from dyntools.models.resnet import ResNet
    from dyntools.optim import optimizers as O

    d = data.digits(seed=0)
    C, B, b = torch_resnet.CHANNELS, torch_resnet.BLOCKS, torch_resnet.BATCH
    model = ResNet(C, B, 10, input_mean=float(d.X.mean()), input_std=float(d.X.std()))
    steps = d.X.shape[0] // b
    ds = SimpleNamespace(X=d.X, y=d.y)

    def one(n_steps):
        start = time.perf_counter()
        train(model, ds, O.sgd(0.02), steps=n_steps, batch=b, sampler="epoch", record_steps=np.array([n_steps]),
              seed=0, theta0=model.init(0))
        return time.perf_counter() - start

    one(2)                                                                    # compile / warm up
    ours = min(one(steps) for _ in range(epochs))
    report.measurements.update({"resnet: dyntools seconds per epoch": ours,
                                "resnet: dyntools ms per step": 1e3 * ours / steps})
    report.targets.append(Target(f"deep-nets resnet: dyntools seconds per SGD epoch ({steps} steps of batch {b})",
                                 ours, RESNET_EPOCH_BUDGET, higher_is_better=False, unit="s"))
    try:
        import torch  # noqa: F401
    except ImportError:
        report.notes.append("resnet vs PyTorch: skipped, torch not installed (run `python -m "
                            "dyntools.bench.torch_resnet` in a Python with torch for its seconds per epoch)")
        return
    theirs = torch_resnet.epoch_seconds(threads=1, epochs=epochs, n=d.X.shape[0])["seconds_per_epoch"]
    report.measurements["resnet: PyTorch (CPU, 1 thread) seconds per epoch"] = theirs
    report.targets.append(Target("deep-nets resnet: PyTorch CPU seconds per epoch / dyntools' (same net, float64, "
                                 "1 thread)", theirs / ours, 1.0))


BENCHMARK = Benchmark("deep-nets", run)
