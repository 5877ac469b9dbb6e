"""``dyntools bench sweep``: one heatmap cell (compiled) vs its NumPy twin and vs PyTorch, and the
time of the full 16 × 24 × 2 grid extrapolated from measured cells.

The cell: an MLP 2 → 32 → 32 → 32 → 2 (ReLU, softmax cross-entropy; :class:`dyntools.models.mlp.MLP`)
trained by AdamW with batch 64 for 2000 steps on 1000 spiral points, float64, through
:func:`dyntools.train` (minibatches of the ``epoch`` sampler drawn beforehand and replayed). The
trainer's NumPy twin (``kernel="numpy"``) and the PyTorch loop (one thread, the same initial weights
and minibatches, ``torch.optim.AdamW(foreach=False)``) do the same work; all are timed in this process.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from dyntools import data
from dyntools.bench import BenchReport, Target, best_time
from dyntools.engine import samplers, streams
from dyntools.models import mlp_gemm
from dyntools.models.mlp import MLP
from dyntools.optim import optimizers as O

GRID_CELLS = 16 * 24 * 2


def _torch_cell(model, theta0, X, y, batches, lr, wd):
    import torch

    torch.set_num_threads(1)
    layers = []
    for l, (W, b) in enumerate(model.unpack(theta0)):
        lin = torch.nn.Linear(W.shape[1], W.shape[0], dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.copy()))
            lin.bias.copy_(torch.from_numpy(b.copy()))
        layers.append(lin)
        if l < model.n_layers - 1:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=wd, foreach=False)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    bt = torch.from_numpy(batches)
    loss_fn = torch.nn.CrossEntropyLoss()

    def run():
        for t in range(bt.shape[0]):
            idx = bt[t]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        return net

    return run


def cell_flops(model, batch: int, steps: int) -> float:
    """Floating-point operations of ``steps`` training steps, counting each multiply–add of the
    dense products as 2: forward ``a W``, ``∂ℓ/∂W = aᵀδ`` and ``δ Wᵀ`` (not for the input layer)."""
    prods = [a * b for a, b in zip(model.widths[:-1], model.widths[1:])]
    return 2.0 * batch * steps * (2 * sum(prods) + sum(prods[1:]))


def _matmul_rate(m: int, k: int, n: int, repeats: int) -> float:
    """GFLOP/s of NumPy's ``A @ B`` (``(m, k) · (k, n)``, float64), best of three batches."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))

    def batch():
        for _ in range(repeats):
            a @ b
    batch()
    return 2.0 * m * k * n * repeats / best_time(batch, repeats=3) / 1e9


def _kernel_rate(repeats: int) -> float:
    """GFLOP/s of the cell's product kernel alone (:func:`~dyntools.models.mlp_gemm.gemm`) on
    the forward shape of a 32-wide layer, ``z_lᵀ = Ŵ_lᵀ â_{l−1}ᵀ`` with batch 64, data in cache."""
    from numba import njit

    @njit
    def loop(out, C, In, reps):
        for _ in range(reps):
            mlp_gemm.gemm(out, C, In, 32, 33, 64)

    rng = np.random.default_rng(0)
    out, C, In = np.zeros((32, 64)), rng.standard_normal((33, 32)).T, rng.standard_normal((33, 64))
    loop(out, C, In, 1)
    return 2.0 * 32 * 33 * 64 * repeats / best_time(lambda: loop(out, C, In, repeats), repeats=3) / 1e9


#: The benchmark's grid cell: the module docstring's network and data (the defaults of the adamw-grid sweep).
CELL_CONFIG = {"dataset": "spirals", "n": 1000, "n_val": 1000, "classes": 2, "turns": 1.5, "noise": 0.05,
               "hidden": [32, 32, 32], "batch_size": 64, "schedule": "constant", "momentum": 0.9,
               "normalized_wd": False}


def grid_spec(n_lr: int, n_wd: int, *, epochs: float, seed: int = 0):
    """Adam and AdamW cells on log-spaced (lr ∈ [1e-4, 1e-1]) × (wd ∈ [1e-6, 1]) axes."""
    from dyntools import sweep

    cells = [{"optimizer": name, "lr": float(lr), "wd": float(wd)} for name in ("adam", "adamw")
             for lr in np.geomspace(1e-4, 1e-1, n_lr) for wd in np.geomspace(1e-6, 1.0, n_wd)]
    return sweep.SweepSpec("bench-grid", "dyntools.classifier_cell:train_cell", {**CELL_CONFIG, "epochs": epochs},
                           cells, seed)


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.train import train

    steps = 200 if quick else 2000
    report = BenchReport("sweep")
    d = data.spirals(1000, seed=0)
    model = MLP((2, 32, 32, 32, 2), head="cross-entropy", init="uniform", init_stream="bench", init_key=(1,),
                sampling_stream="bench")
    theta0 = model.init(0)
    batches = samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench")), 1000, steps, 64)
    opt = O.adamw(1e-3, weight_decay=1e-2)

    def cell(kernel="numba", n_steps=steps):       # the minibatches drawn beforehand, as torch's loop gets them
        return train(model, d, opt, steps=n_steps, batch=64, sampler="replay", indices=batches[:n_steps].ravel(),
                     record_steps=np.array([n_steps]), seed=0, kernel=kernel)

    cell(n_steps=5)                                                           # compile / load cache
    t_numba = best_time(cell, repeats=3)
    t_numpy = best_time(lambda: cell("numpy"), repeats=1)
    report.measurements.update({"cell steps": steps, "numba cell seconds": t_numba,
                                "numpy cell seconds": t_numpy})
    # what the hardware allows: the cell's arithmetic as a float64 rate, next to one-thread BLAS
    # matrix products measured here (the cell's 64 × 32 · 32 × 32 shape and 64³) and the cell's kernel
    flops = cell_flops(model, 64, steps)
    report.measurements.update({"cell GFLOP (dense multiply-adds x2)": flops / 1e9,
                                "numba cell GFLOP/s": flops / t_numba / 1e9,
                                "numpy matmul GFLOP/s, 64x32 @ 32x32 per call": _matmul_rate(64, 32, 32, 2000),
                                "numpy matmul GFLOP/s, 64x64 @ 64x64 per call": _matmul_rate(64, 64, 64, 1000),
                                "numba _gemm GFLOP/s, one 32x33 @ 33x64 block in cache": _kernel_rate(2000)})
    report.notes.append("matmul rates include NumPy's per-call overhead; OpenBLAS runs products this small "
                        "(m·n·k <= 64³) on one thread, like the cell")
    report.targets.append(Target("one cell: numba vs NumPy twin", t_numpy / t_numba, 10.0))
    try:
        import torch  # noqa: F401
    except ImportError:
        report.notes.append("torch comparison skipped: torch not installed")
    else:
        fn = _torch_cell(model, theta0, d.X, d.y, batches, 1e-3, 1e-2)
        fn()
        t_torch = best_time(fn, repeats=2)
        report.measurements["torch cell seconds (1 thread, float64)"] = t_torch
        report.targets.append(Target("one cell: numba vs PyTorch (CPU, 1 thread)", t_torch / t_numba, 5.0))

    # full-size cells on the local sweep backend (all cores), extrapolated to 16 × 24 × 2 cells:
    # wall = fixed cost (worker start-up, numba cache loading) + cells × per-cell seconds / workers
    from dyntools import sweep

    n_lr, n_wd = (2, 2) if quick else (4, 4)
    workers = os.cpu_count() or 1
    spec = grid_spec(n_lr, n_wd, epochs=(steps * 64) / 1000)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outcome = sweep.run_sweep(spec, os.path.join(tmp, "grid"), workers=workers)
        t_grid = time.perf_counter() - start
    cell_seconds = float(np.median([c["seconds"] for c in outcome.cells])) * (2000 / steps)
    fixed = max(0.0, t_grid - sum(c["seconds"] for c in outcome.cells) / workers)
    full = fixed + cell_seconds * GRID_CELLS / workers
    report.measurements.update({"measured grid cells": len(spec.cells), "measured grid wall seconds": t_grid,
                                "median cell seconds (2000 steps)": cell_seconds, "fixed seconds": fixed,
                                "workers": workers})
    report.targets.append(Target(f"16x24x2 grid seconds on {workers} cores, EXTRAPOLATED from "
                                 f"{len(spec.cells)} measured cells", full, 180.0, higher_is_better=False,
                                 unit="s"))
    return report
