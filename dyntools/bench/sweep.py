"""``dyntools bench sweep``: one heatmap cell (compiled) vs its NumPy twin and vs PyTorch; grids of cells
in float64 and float32 against their arithmetic floor and against JAX; the time of the full 16 × 24 × 2
grid extrapolated from measured cells.

The cell: an MLP 2 → 32 → 32 → 32 → 2 (ReLU, softmax cross-entropy; :class:`dyntools.models.mlp.MLP`)
trained by AdamW with batch 64 for 2000 steps on 1000 spiral points, float64, through
:func:`dyntools.train` (minibatches of the ``epoch`` sampler drawn beforehand and replayed). The
trainer's NumPy twin (``kernel="numpy"``) and the PyTorch loop (one thread, the same initial weights
and minibatches, ``torch.optim.AdamW(foreach=False)``) do the same work; all are timed in this process.

The grids (96 cells: Adam and AdamW on 6 learning rates × 8 weight decays; 8 cells with ``quick``) run on
the local sweep backend with one worker per core, in each precision; their wall time over the number of
cells is compared with the cell's arithmetic floor (its flops at the machine's matrix-product rate, NumPy
1000³ on all cores, measured here) and with JAX (optional, ``pip install 'dyntools[bench]'``): the same
cells as a JAX user writes them — jit + vmap over the cells, ``lax.scan`` over the steps, optax's Adam(W),
compiled before timing (:func:`jax_grid`).
"""

from __future__ import annotations

import os
import re
import tempfile
import time

import numpy as np

from dyntools import data
from dyntools.bench.anchors import jax_modules, matmul_rate
from dyntools.bench.report import Benchmark, BenchReport, Target, best_time
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


def panel_uses_zmm() -> bool:
    """Whether the machine code of a product panel (:mod:`dyntools.lowlevel`, compiled here without the
    cache) uses 512-bit registers: the check that ``NUMBA_CPU_NAME=haswell DYNTOOLS_VECTOR_BITS=256``
    took effect (no zmm) — or that the native build on an AVX-512 processor uses them."""
    from numba import njit

    from dyntools import lowlevel

    block = lowlevel.panel(2, 2)

    @njit(error_model="numpy", fastmath={"contract"})
    def one_block(out, init, C, In):
        block(out, init, C, In, 0, 0, C.shape[1], False, 0, out)

    w = lowlevel.VECTOR_BYTES // 8
    args = (np.zeros((2, 2 * w)), np.zeros(2 * w), np.ones((2, 3)), np.ones((3, 2 * w)))
    one_block(*args)
    # a register operand (%zmm0 …), not the substring: the function's own mangled name holds "zmm"
    return any(re.search(r"%zmm\d+", asm) for asm in one_block.inspect_asm().values())


def xla_max_isa() -> str:
    """The ``xla_cpu_max_isa`` XLA compiles with in this environment, read from the debug options it dumps
    for a small jitted function (a subprocess): the check that ``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` took
    effect; ``""`` when none is set."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={tmp}".strip()}
        code = "import jax, jax.numpy as j; jax.jit(lambda a: j.tanh(a) * a)(j.ones(64)).block_until_ready()"
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True, timeout=300)
        for name in sorted(os.listdir(tmp)):
            if name.endswith("debug_options"):
                with open(os.path.join(tmp, name), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("xla_cpu_max_isa:"):
                            return line.split(":", 1)[1].strip().strip('"')
    return ""


def _matmul_rate(m: int, k: int, n: int, repeats: int) -> float:
    """GFLOP/s of NumPy's ``A @ B`` (``(m, k) · (k, n)``, float64), best of three batches."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))

    def batch():
        for _ in range(repeats):
            a @ b
    batch()
    return 2.0 * m * k * n * repeats / best_time(batch, repeats=3) / 1e9


def _kernel_rate(repeats: int, m: int = 64, kdim: int = 32, n: int = 32) -> float:
    """GFLOP/s of the cell's product kernel alone (:func:`~dyntools.models.mlp_gemm.gemm`) on
    ``(m, kdim) · (kdim, n)``, data in cache; the default is the forward shape of a 32-wide layer,
    ``Z_l = A_{l−1} W_lᵀ + 1 b_lᵀ`` with batch 64."""
    from numba import njit

    @njit
    def loop(out, init, C, In, reps):
        for _ in range(reps):
            mlp_gemm.gemm(out, init, C, In, m, kdim, n)

    rng = np.random.default_rng(0)
    out, init = np.zeros((m, n)), rng.standard_normal(n)
    C, In = rng.standard_normal((m, kdim)), rng.standard_normal((kdim, n))
    loop(out, init, C, In, 1)
    return 2.0 * m * kdim * n * repeats / best_time(lambda: loop(out, init, C, In, repeats), repeats=3) / 1e9


#: The benchmark's grid cell: the module docstring's network and data (the defaults of the adamw-grid sweep).
CELL_CONFIG = {"dataset": "spirals", "n": 1000, "n_val": 1000, "classes": 2, "turns": 1.5, "noise": 0.05,
               "hidden": [32, 32, 32], "batch_size": 64, "schedule": "constant", "momentum": 0.9,
               "normalized_wd": False}


def grid_axes(n_lr: int, n_wd: int) -> list[dict]:
    """Adam and AdamW cells on log-spaced (lr ∈ [1e-4, 1e-1]) × (wd ∈ [1e-6, 1]) axes."""
    return [{"optimizer": name, "lr": float(lr), "wd": float(wd)} for name in ("adam", "adamw")
            for lr in np.geomspace(1e-4, 1e-1, n_lr) for wd in np.geomspace(1e-6, 1.0, n_wd)]


def grid_spec(n_lr: int, n_wd: int, *, epochs: float, seed: int = 0, dtype: str = "float64"):
    """The sweep of :func:`grid_axes` (the adamw-grid's cell function, in precision ``dtype``)."""
    from dyntools import sweep
    from dyntools.classifier_cell import train_cell

    return sweep.SweepSpec("bench-grid", train_cell,
                           {**CELL_CONFIG, "epochs": epochs, "dtype": dtype}, grid_axes(n_lr, n_wd), seed)


def _grid_seconds(n_lr: int, n_wd: int, steps: int, dtype: str, workers: int) -> dict:
    """Run a grid on the local sweep backend (``workers`` processes); wall time and per-cell times."""
    from dyntools import sweep

    spec = grid_spec(n_lr, n_wd, epochs=(steps * 64) / 1000, dtype=dtype)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outcome = sweep.run_sweep(spec, os.path.join(tmp, "grid"), workers=workers)
        wall = time.perf_counter() - start
    cell = [c["seconds"] for c in outcome.cells]
    return {"cells": len(cell), "wall": wall, "median cell": float(np.median(cell)),
            "fixed": max(0.0, wall - sum(cell) / workers), "per cell": sum(cell) / workers / len(cell)}


def _jax_grid_seconds(model, d, n_lr: int, n_wd: int, steps: int, dtype: str) -> float:
    """Seconds per cell of :func:`jax_grid` on the same cells (Adam and AdamW halves, compiled first)."""
    cells = grid_axes(n_lr, n_wd)
    total = 0.0
    for decoupled in (False, True):
        mine = [c for c in cells if (c["optimizer"] == "adamw") == decoupled]
        idx = [cells.index(c) for c in mine]
        thetas = np.stack([model.init(0, i) for i in idx])
        batches = np.stack([samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench"), i), 1000,
                                                   steps, 64) for i in idx])
        run = jax_grid(model, d.X, d.y, thetas, batches, [c["lr"] for c in mine], [c["wd"] for c in mine],
                       decoupled, dtype)
        total += best_time(run, repeats=1)
    return total / len(cells)


def cell_memory(steps: int, hidden: tuple = (32, 32, 32), batch: int = 64, dtype: str = "float64") -> dict:
    """Memory of one heatmap cell (:func:`dyntools.classifier_cell.train_cell`, the bench's network):
    the peak of NumPy's allocations while it runs (``tracemalloc``; the data set, the model, the per-step
    losses, the results) and the compiled loop's own scratch (:func:`~dyntools.models.mlp_gemm.ws_size`
    plus its copies of θ, the optimizer state and the gradient — allocated inside the kernel, which
    ``tracemalloc`` does not see), in bytes."""
    import tracemalloc

    from dyntools.classifier_cell import train_cell

    config = {**CELL_CONFIG, "hidden": list(hidden), "batch_size": batch, "epochs": steps * batch / 1000,
              "dtype": dtype}
    cell = {"optimizer": "adamw", "lr": 1e-3, "wd": 1e-2}
    train_cell(config, cell, 0, 0)                                            # compiled code loaded first
    tracemalloc.start()
    try:
        train_cell(config, cell, 0, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    widths = (2, *hidden, 2)
    model = MLP(widths, head="cross-entropy", dtype=dtype)
    item = np.dtype(dtype).itemsize
    scratch = item * (mlp_gemm.ws_size(model.n_layers, max(widths), batch) + 5 * model.n_params) + 16 * batch
    return {"numpy peak": peak, "kernel scratch": scratch, "params": model.n_params}


def _memory_measurements(report: BenchReport, steps: int) -> None:
    """Memory per worker: a cell at ``steps`` and 4× the steps, and with twice the width and batch; the
    workers' peak resident size is read after the grids (``ru_maxrss`` of the finished children)."""
    import resource

    base, long = cell_memory(steps), cell_memory(4 * steps)
    wide = cell_memory(steps, hidden=(64, 64, 64), batch=128)
    per_step = (long["numpy peak"] - base["numpy peak"]) / (3 * steps)
    report.measurements.update({
        "cell memory steps": steps,
        "cell memory, NumPy peak bytes (the cell's steps)": base["numpy peak"],
        "cell memory, NumPy peak bytes (4x the steps)": long["numpy peak"],
        "cell memory, NumPy peak bytes (width 64, batch 128)": wide["numpy peak"],
        "cell memory, kernel scratch bytes": base["kernel scratch"],
        "cell memory, kernel scratch bytes (width 64, batch 128)": wide["kernel scratch"],
        "cell memory, bytes per extra step": per_step,
        "worker peak resident MiB (ru_maxrss of the grids' workers)":
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024})
    report.notes.append("memory per cell: the data set, the network, the batch scratch and the per-step "
                        "losses (8 bytes a step, for the heatmap's loss curve); nothing grows with the number "
                        "of cells (each cell's result is written to disk and dropped by the worker)")
    report.targets.append(Target("cell memory growth per extra step (bytes; the per-step loss record is 8)",
                                 per_step, 16.0, higher_is_better=False, unit="B"))


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.train import train

    steps = 200 if quick else 2000
    report = BenchReport("sweep")
    d = data.spirals(1000, seed=0)
    models = {dt: MLP((2, 32, 32, 32, 2), head="cross-entropy", init="uniform", init_stream="bench", init_key=(1,),
                      sampling_stream="bench", dtype=dt) for dt in ("float64", "float32")}
    model = models["float64"]
    theta0 = model.init(0)
    batches = samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench")), 1000, steps, 64)
    opt = O.adamw(1e-3, weight_decay=1e-2)

    def cell(kernel="numba", n_steps=steps, dtype="float64"):   # minibatches drawn beforehand, as torch gets them
        return train(models[dtype], d, opt, steps=n_steps, batch=64, sampler="replay",
                     indices=batches[:n_steps].ravel(), record_steps=np.array([n_steps]), seed=0, kernel=kernel)

    cell(n_steps=5)                                                           # compile / load cache
    cell(n_steps=5, dtype="float32")
    t_numba, t_f32 = float("inf"), float("inf")
    for _ in range(3):                            # interleaved, so a burst of load elsewhere hits both alike
        t_numba = min(t_numba, best_time(cell, repeats=1))
        t_f32 = min(t_f32, best_time(lambda: cell(dtype="float32"), repeats=1))
    t_numpy = best_time(lambda: cell("numpy"), repeats=1)
    report.measurements.update({"cell steps": steps, "numba cell seconds": t_numba,
                                "numba cell seconds (float32)": t_f32, "numpy cell seconds": t_numpy})
    # what the hardware allows: the cell's arithmetic as a float64 rate, next to one-thread BLAS
    # matrix products measured here (the cell's 64 × 32 · 32 × 32 shape and 64³) and the cell's kernel
    flops = cell_flops(model, 64, steps)
    report.measurements.update({"cell GFLOP (dense multiply-adds x2)": flops / 1e9,
                                "numba cell GFLOP/s": flops / t_numba / 1e9,
                                "numba cell GFLOP/s (float32)": flops / t_f32 / 1e9,
                                "numpy matmul GFLOP/s, 64x32 @ 32x32 per call": _matmul_rate(64, 32, 32, 2000),
                                "numpy matmul GFLOP/s, 64x64 @ 64x64 per call": _matmul_rate(64, 64, 64, 1000),
                                "numba _gemm GFLOP/s, one 32x33 @ 33x64 block in cache": _kernel_rate(2000, 32, 33, 64),
                                "numba gemm GFLOP/s, the forward 64x32 @ 32x32 block in cache": _kernel_rate(2000)})
    report.notes.append("matmul rates include NumPy's per-call overhead; OpenBLAS runs products this small "
                        "(m·n·k <= 64³) on one thread, like the cell")
    report.targets.append(Target("one cell: numba vs NumPy twin", t_numpy / t_numba, 10.0))
    report.measurements["numba panel machine code uses zmm registers (1 yes, 0 no)"] = float(panel_uses_zmm())
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

    # grids of full-size cells on the local sweep backend (all cores), each precision. Per cell: the cells'
    # own seconds over the workers (each cell: data, model, training, evaluation); the fixed cost of starting
    # the workers (as JAX's compilation, a one-off) is reported apart. The 16 × 24 × 2 grid is extrapolated:
    # fixed cost + cells × cell seconds / workers.
    workers = os.cpu_count() or 1
    n_lr, n_wd = (2, 2) if quick else (6, 8)
    grid = {}
    for dt in ("float64", "float32"):
        g = _grid_seconds(n_lr, n_wd, steps, dt, workers)
        grid[dt] = g["per cell"]
        cell_seconds = g["median cell"] * (2000 / steps)
        full = g["fixed"] + cell_seconds * GRID_CELLS / workers
        report.measurements.update({f"grid cells ({dt})": g["cells"], f"grid wall seconds ({dt})": g["wall"],
                                    f"grid seconds per cell ({dt}, cell seconds / workers)": grid[dt],
                                    f"grid seconds per cell ({dt}, wall / cells)": g["wall"] / g["cells"],
                                    f"median cell seconds ({dt}, 2000 steps)": cell_seconds,
                                    f"fixed seconds ({dt})": g["fixed"]})
        name = f"16x24x2 grid seconds ({dt}) on {workers} cores, EXTRAPOLATED from {g['cells']} measured cells"
        report.targets.append(Target(name, full, 15.0 if dt == "float32" else 180.0, higher_is_better=False,
                                     unit="s"))
    report.measurements["workers"] = workers
    _memory_measurements(report, steps)

    # the arithmetic floor of a cell: its flops at the machine's matrix-product rate on all cores
    for dt in ("float64", "float32"):
        rate = matmul_rate(workers, dtype=dt)
        floor = flops / rate
        report.measurements.update({f"matmul GFLOP/s ({dt}, {workers} threads, 1000^3)": rate / 1e9,
                                    f"cell floor seconds ({dt})": floor})
        report.targets.append(Target(f"grid cell ({dt}) over its arithmetic floor", grid[dt] / floor,
                                     2.5, higher_is_better=False))

    # the JAX anchor: the same cells as a JAX user writes them (jit + vmap + lax.scan + optax)
    if jax_modules() is None:
        report.notes.append("JAX comparison skipped: jax not installed (pip install 'dyntools[bench]')")
    else:
        report.notes.append(f"JAX: xla_cpu_max_isa = {xla_max_isa() or 'not set (native)'} (read from XLA's "
                            "dumped debug options)")
        for dt in ("float64", "float32"):
            t_jax = _jax_grid_seconds(model, d, n_lr, n_wd, steps, dt)
            report.measurements[f"jax grid seconds per cell ({dt}, 2 blocks of {n_lr * n_wd} cells)"] = t_jax
            report.targets.append(Target(f"grid ({dt}): dyntools vs JAX (jit+vmap+scan, optax), per cell",
                                         t_jax / grid[dt], 2.0))
    return report


# ------------------------------------------------------------------------------ the JAX anchor

def jax_grid(model, X, y, thetas, batches, lrs, wds, decoupled, dtype: str):
    """A JAX user's version of a block of heatmap cells, compiled: ``run() -> losses``.

    jit + vmap over the cells, lax.scan over the steps, optax for the optimizer: ``optax.adamw`` for
    the decoupled cells, ``add_decayed_weights`` before ``scale_by_adam`` (PyTorch's Adam with L2)
    for the others; the cells' initial parameters ``thetas`` (cells × p, the MLP's out × in layout),
    minibatches ``batches`` (cells × steps × b), ``lrs`` and ``wds`` are given: :func:`_jax_grid_seconds`
    draws them from the ``bench`` streams — the dyntools grid's network, data, sizes, learning rates and
    decays, with other initial values and minibatch orders than the sweep's cells (the same work, not
    the same numbers; a test feeds one cell to both and compares the losses).
    Compiled (and run once) before it is returned, so that timing ``run()`` times the training only."""
    jax, jnp, optax = jax_modules()
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    ft = jnp.float64 if dtype == "float64" else jnp.float32
    n_layers = model.n_layers
    params0 = [(jnp.asarray(W, ft), jnp.asarray(b, ft)) for W, b in model.unpack(thetas)]
    Xj, yj = jnp.asarray(X, ft), jnp.asarray(y, jnp.int32)
    bj = jnp.asarray(batches, jnp.int32)

    def loss_fn(params, idx):
        a = Xj[idx]
        for l, (W, b) in enumerate(params):
            a = a @ W.T + b
            if l < n_layers - 1:
                a = jax.nn.relu(a)
        return optax.softmax_cross_entropy_with_integer_labels(a, yj[idx]).mean()

    def one_cell(params, idx_seq, lr, wd):
        if decoupled:
            opt = optax.adamw(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=wd)
        else:
            opt = optax.chain(optax.add_decayed_weights(wd), optax.scale_by_adam(b1=0.9, b2=0.999, eps=1e-8),
                              optax.scale(-lr))

        def step(carry, idx):
            p, s = carry
            loss, g = jax.value_and_grad(loss_fn)(p, idx)
            upd, s = opt.update(g, s, p)
            return (optax.apply_updates(p, upd), s), loss

        (_, _), losses = jax.lax.scan(step, (params, opt.init(params)), idx_seq)
        return losses

    fn = jax.jit(jax.vmap(one_cell))
    args = (params0, bj, jnp.asarray(lrs, ft), jnp.asarray(wds, ft))
    fn(*args).block_until_ready()                                # compile, and one run

    def run():
        return fn(*args).block_until_ready()
    return run


BENCHMARK = Benchmark("sweep", run)
