"""``dyntools bench image-epoch``: one MNIST-sized epoch of the heatmap MLP, dyntools against PyTorch (CPU).

The workload of ``dyntools sweep adamw-grid --dataset mnist`` at full data size: 60 000 images of 784 pixels
and 10 classes — generated (uniform pixels in [0, 1), uniform labels, from the ``bench`` stream), so that
the row runs without the files; the time of an epoch does not depend on what the pixels are —, the sweep's
MLP ``784 → 32 → 32 → 32 → 10`` (ReLU, softmax cross-entropy, float64) and AdamW (lr 1e-3, weight decay
1e-2) with batch 64: ⌊60000/64⌋ = 937 steps. dyntools trains it through :func:`dyntools.train` (one path, the
compiled loop, minibatches of the ``epoch`` sampler drawn beforehand and replayed); PyTorch trains the same
network from the same initial weights on the same minibatches (``torch.optim.AdamW(foreach=False)``, one
intra-op thread: :func:`dyntools.bench.sweep._torch_cell`) when torch is importable — an optional anchor,
never a dependency; without it the row says so. Each side: the best of ``repeats`` timed epochs after a
warm-up, the two sides interleaved (a burst of load elsewhere hits both alike), in wall and in CPU seconds
of the process (on a shared machine the CPU seconds are the steadier of the two). ``--quick``: a tenth of the
data (one epoch of 93 steps).
"""

from __future__ import annotations

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target

N_IMAGES, PIXELS, CLASSES, HIDDEN, BATCH = 60_000, 784, 10, (32, 32, 32), 64
LR, WEIGHT_DECAY = 1e-3, 1e-2


def workload(n: int = N_IMAGES):
    """``(model, X, y, theta0, batches)``: generated MNIST-sized data and the sweep's MLP, one epoch of batches."""
    from dyntools.engine import samplers, streams
    from dyntools.models.mlp import MLP

    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(0, streams.key("bench"), 2)))
    X, y = rng.random((n, PIXELS)), rng.integers(0, CLASSES, n)
    model = MLP((PIXELS, *HIDDEN, CLASSES), head="cross-entropy", init="uniform", init_stream="bench", init_key=(2,),
                sampling_stream="bench")
    batches = samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench"), 2), n, n // BATCH, BATCH)
    return model, X, y, model.init(0), batches


def run(quick: bool = False) -> BenchReport:
    from types import SimpleNamespace

    from dyntools.dynamics.train import train
    from dyntools.optim import optimizers as O

    n = N_IMAGES // 10 if quick else N_IMAGES
    repeats = 1 if quick else 3
    model, X, y, theta0, batches = workload(n)
    steps = batches.shape[0]
    data, opt = SimpleNamespace(X=X, y=y), O.adamw(LR, weight_decay=WEIGHT_DECAY)

    def epoch(n_steps=steps):
        return train(model, data, opt, steps=n_steps, batch=BATCH, sampler="replay", indices=batches[:n_steps].ravel(),
                     record_steps=np.array([n_steps]), seed=0, theta0=theta0, workers=1)

    epoch(5)                                                                  # compile / load the cache
    report = BenchReport("image-epoch")
    report.notes.append(f"MLP {list(model.widths)}, AdamW lr {LR:g} wd {WEIGHT_DECAY:g}, float64, {n} generated images"
                        + (" (quick: a tenth of MNIST's 60000)" if quick else ""))
    try:
        import torch  # noqa: F401
    except ImportError:
        torch_epoch = None
        report.notes.append("image-epoch vs PyTorch: skipped, torch not installed (an optional anchor: install it "
                            "in a separate environment and put it on PYTHONPATH)")
    else:
        from dyntools.bench.sweep import _torch_cell

        torch_epoch = _torch_cell(model, theta0, X, y, batches, LR, WEIGHT_DECAY)
        torch_epoch()                                                         # warm-up epoch
    ours, theirs = [np.inf, np.inf], [np.inf, np.inf]                         # best (wall, cpu) seconds
    for _ in range(repeats):
        ours = [min(a, b) for a, b in zip(ours, _timed(epoch))]
        if torch_epoch is not None:
            theirs = [min(a, b) for a, b in zip(theirs, _timed(torch_epoch))]
    report.measurements.update({"images": float(n), "steps (batch 64)": float(steps),
                                "dyntools seconds per epoch": ours[0], "dyntools CPU seconds per epoch": ours[1],
                                "dyntools ms per step": 1e3 * ours[0] / steps})
    if torch_epoch is not None:
        report.measurements.update({"PyTorch (CPU, 1 thread) seconds per epoch": theirs[0],
                                    "PyTorch (CPU, 1 thread) CPU seconds per epoch": theirs[1],
                                    "PyTorch / dyntools CPU seconds": theirs[1] / ours[1]})
        report.targets.append(Target("image-epoch: PyTorch CPU seconds per MNIST-sized epoch / dyntools' (heatmap "
                                     "MLP, float64, 1 thread)", theirs[0] / ours[0], 1.0))
    return report


def _timed(fn) -> tuple[float, float]:
    """Wall and process-CPU seconds of one call."""
    import time

    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


BENCHMARK = Benchmark("image-epoch", run)
