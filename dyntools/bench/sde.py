"""``dyntools bench sde``: the SDE engine against vectorized NumPy, measured in one process.

Targets (issue 5):

* low-dimensional SDEs (GBM, OU, the 1-D toy), 10⁴ steps: compiled EM ≥ 3× a vectorized NumPy
  Euler–Maruyama at 10⁴ paths and ≥ 10× at 100 paths. The baseline draws its increments with
  NumPy's own ziggurat (``Generator.standard_normal``), one vectorized step per Python iteration.
* diagonal-network SDE (n = 80, d = 200) at 16 and 1000 paths: the kernel's flop rate (4nd flops
  per path-step: the two products by X) as a fraction of a large float64 matrix product timed in
  the same run (goal ≥ 50 %), and ≥ 1.3× the NumPy baseline (BLAS products over all paths).
* torchsde's Euler scheme (≥ 30×): only when torchsde is installed; otherwise reported as skipped.

The low-dimensional targets time the compiled integration with the per-path streams already
seeded, as the NumPy baseline's generator is created outside its timing; the end-to-end
``solve()`` time (checks, per-path ``SeedSequence`` seeding, result) is reported alongside.

Timing: each kernel and its baseline (and, for the diagonal network, the matrix product that
sets the machine's rate) are timed in turn over several rounds and the best time of each is kept,
so a scheduler hiccup on the shared machine does not decide a ratio. The 1-D kernel's time with
numba limited to one thread is reported next to it (``thread use``: ≈ 2 when both cores work).

``--quick`` shrinks the sizes (a smoke test; the targets are only meaningful at full size).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time
from dyntools.engine import streams


def _numpy_em(model: str, params: tuple, paths: int, steps: int, h: float, rng: np.random.Generator):
    """Vectorized NumPy EM for the built-in 1-D models (the baseline)."""
    x = np.ones(paths)
    sq = np.sqrt(h)
    if model == "gbm":
        mu, sigma = params
        for _ in range(steps):
            x = x + mu * x * h + sigma * x * (sq * rng.standard_normal(paths))
    elif model == "ou":
        theta, mu, sigma = params
        for _ in range(steps):
            x = x + theta * (mu - x) * h + sigma * (sq * rng.standard_normal(paths))
    else:
        m2, ts2, c = params
        for _ in range(steps):
            x = x + m2 * x * (ts2 - x * x) * h + c * x * (sq * rng.standard_normal(paths))
    return x


def _integrate(sde, paths: int, steps: int, h: float, state: np.ndarray) -> None:
    """The engine's compiled integration with the per-path streams already seeded (what
    :func:`dyntools.dynamics.sde.solve` runs after its checks and seeding)."""
    from dyntools.dynamics.sde import EM, _kernel_for

    _kernel_for(sde)(sde.args, np.ones((paths, 1)), state.copy(), 0.0, h, steps, 1, EM, True, 1,
                     np.array([0, steps]), 1e10, np.full((paths, 2, 1), np.nan), np.empty((0, 0, 0)),
                     np.full(paths, -1, dtype=np.int64))


def _low_dim(report: BenchReport, quick: bool) -> None:
    from dyntools.dynamics import sde_models
    from dyntools.dynamics.sde import solve
    from dyntools.models.quadratic_toy import QuadraticToy

    toy = QuadraticToy.uniform(n=100, seed=0)
    models = {
        "gbm": (sde_models.gbm(0.5, 0.3), (0.5, 0.3)),
        "ou": (sde_models.ou(1.0, 0.5, 0.3), (1.0, 0.5, 0.3)),
        # the toy's SDE with intensity δ̃ = 1e-5 (toy_sde takes the label-noise std)
        "toy": (sde_models.toy_sde(toy, 0.5, sde_models.label_noise_std(1e-5, toy.x.size, sde_models.TOY_SCALE)),
                None),
    }
    steps = 1000 if quick else 10_000
    h = 1.0 / steps
    solve(models["gbm"][0], 1.0, t1=10 * h, h=h, paths=4, records=2)        # compile / load the cache
    many = 10**5 if quick else 10**6              # the set-up of many paths: compiled derivation vs objects
    t_many = best_time(lambda: streams.path_states(0, many), repeats=2)
    t_objects = best_time(lambda: streams.path_states_reference(0, 1000), repeats=2)
    report.measurements["per-path seeding set-up time (compiled SeedSequence hash): us per path"] = t_many / many * 1e6
    report.measurements["per-path seeding set-up time (one SeedSequence object per path): us per path"] = (
        t_objects / 1000 * 1e6)
    report.targets.append(Target("per-path seeding of 10^6 paths: s", t_many / many * 1e6, 1.0,
                                 higher_is_better=False, unit="s"))
    for paths, goal in ((100, 10.0), (1000 if quick else 10_000, 3.0)):
        state = streams.path_states(0, paths)
        report.measurements[f"per-path seeding (SeedSequence → xoshiro), {paths} paths: s"] = best_time(
            lambda p=paths: streams.path_states(0, p), repeats=3)
        # 100 paths: a kernel call is a few ms, so it is repeated more often than the NumPy loop
        rounds, fast_reps = (3, 3) if paths > 1000 else (5, 5)
        for name, (sde, params) in models.items():
            if params is None:
                params = tuple(sde.args[1:])
            rng = np.random.default_rng(0)
            t_fast, t_np = interleaved_best(
                [lambda s=sde, p=paths, st=state: _integrate(s, p, steps, h, st),
                 lambda m=name, a=params, p=paths, g=rng: _numpy_em(m, a, p, steps, h, g)],
                rounds=rounds, repeats=(fast_reps, 1))
            t_solve = best_time(lambda s=sde, p=paths: solve(s, 1.0, t1=1.0, h=h, paths=p, records=2),
                                repeats=2)
            report.measurements[f"{name} EM {paths} paths x {steps} steps: numba integration s"] = t_fast
            if name == "gbm":
                t_one = _one_thread_time(lambda s=sde, p=paths, st=state: _integrate(s, p, steps, h, st),
                                         repeats=fast_reps * rounds)
                report.measurements[f"gbm EM {paths} paths: numba 1 thread / all threads (thread use)"] = (
                    t_one / t_fast)
            report.measurements[f"{name} EM {paths} paths x {steps} steps: solve() incl. seeding s"] = t_solve
            report.measurements[f"{name} EM {paths} paths x {steps} steps: numpy s"] = t_np
            report.targets.append(Target(f"{name} EM speed-up vs NumPy EM, {paths} paths", t_np / t_fast,
                                         goal))


def _one_thread_time(fn, repeats: int) -> float:
    """Best time of ``fn`` with numba limited to one thread (to show that the threads are used)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return best_time(fn, repeats=repeats)
    finally:
        numba.set_num_threads(threads)


def interleaved_best(fns, rounds: int, repeats, settle: float = 0.0) -> list[float]:
    """Best wall time of each function over ``rounds`` rounds that run them in turn (``repeats[i]``
    calls of function ``i`` per round). Interleaving puts kernel and baseline under the same
    machine conditions, and the minimum over many calls keeps one scheduler hiccup (another
    process taking a core for a slice) from deciding a ratio. ``settle`` seconds of pause before
    each function: OpenBLAS worker threads keep spinning for a while after a product (measured
    here: a numba kernel started right after a 2000² product ran at ~37 instead of ~60 GFLOP/s,
    still slowed 50 ms later), so every timed region gets the same idle start."""
    import time

    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            if settle:
                time.sleep(settle)
            best[i] = min(best[i], best_time(fn, repeats=repeats[i]))
    return best


def _matmul(size: int):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    a @ b
    return lambda: a @ b


def matmul_rate(size: int) -> float:
    """Flop rate (flop/s) of a float64 ``size × size`` matrix product (BLAS, all threads)."""
    return 2.0 * size**3 / best_time(_matmul(size), repeats=3)


def _diag_net(report: BenchReport, quick: bool) -> None:
    from dyntools.data import sparse_regression
    from dyntools.dynamics.sde_models import diag_net_kernel, diag_net_numpy_baseline

    data = sparse_regression(n=80, d=200, r=20, seed=0)
    X, y = np.ascontiguousarray(data.X), np.ascontiguousarray(data.y)
    n, d = X.shape
    eta, intensity, h = 0.05, 1e-3, 0.005            # intensity: the SDE's δ̃ (sde_models docstring)
    a, g = h / n, np.sqrt(eta * intensity * h)
    size = 1000 if quick else 2000
    matmul = _matmul(size)
    best_matmul = float("inf")
    for paths, steps in ((16, 200 if quick else 2000), (1000, 10 if quick else 60)):
        U0 = np.full((paths, d), 0.5)
        state0 = streams.path_states(0, paths)

        def fast(U0=U0, state0=state0, steps=steps, paths=paths):
            empty = np.empty((0, 0, 0))
            diag_net_kernel(U0.copy(), U0.copy(), X, X.T.copy(), y, np.array([a]), np.array([g]), steps, 1,
                            state0.copy(), np.array([0, steps]), 1e6, empty, empty,
                            np.full((paths, 2), np.nan), np.full(paths, -1, dtype=np.int64))

        fast()
        rng = np.random.default_rng(0)
        # the machine's rate is timed in turn with the kernel, so both see the same conditions
        t_mm, t_fast, t_np = interleaved_best(
            [matmul, fast, lambda U0=U0, steps=steps, rng=rng:
             diag_net_numpy_baseline(U0.copy(), U0.copy(), X, y, a, g, steps, rng)],
            rounds=4, repeats=(2, 2, 1), settle=0.3)
        best_matmul = min(best_matmul, t_mm)
        rate = 2.0 * size**3 / t_mm
        flops = 4.0 * n * d * paths * steps
        report.measurements[f"diag-net SDE {paths} paths: matmul GFLOP/s timed alongside"] = rate / 1e9
        report.measurements[f"diag-net SDE {paths} paths: numba GFLOP/s"] = flops / t_fast / 1e9
        report.measurements[f"diag-net SDE {paths} paths: numpy GFLOP/s"] = flops / t_np / 1e9
        report.targets.append(Target(f"diag-net SDE flop rate / matmul rate, {paths} paths",
                                     flops / t_fast / rate, 0.5, unit="fraction"))
        report.targets.append(Target(f"diag-net SDE speed-up vs NumPy (BLAS), {paths} paths", t_np / t_fast,
                                     1.3))
    report.measurements["float64 matmul GFLOP/s (reference)"] = 2.0 * size**3 / best_matmul / 1e9


def _torchsde_problem(X, y, scale):
    """The diagonal-network label-noise SDE as a torchsde module (Itô, general noise, p = 2d, m = n):
    drift ``−∇L(u, v)`` with ``L = ‖X(u⊙v) − y‖²/(2n)``, diffusion ``scale·[v ⊙ Xᵀ·; u ⊙ Xᵀ·]``.
    ``g`` is the (batch, 2d, n) matrix a torchsde user writes for general noise; ``g_prod`` is the
    optional fast product ``g·dW`` that torchsde uses instead of ``g`` when it is defined."""
    import torch

    n, d = X.shape

    class DiagNetSDE(torch.nn.Module):
        noise_type, sde_type = "general", "ito"

        def f(self, t, z):
            u, v = z[:, :d], z[:, d:]
            grad = ((u * v) @ X.T - y) @ X / n
            return torch.cat([-v * grad, -u * grad], dim=1)

        def g(self, t, z):
            u, v = z[:, :d], z[:, d:]
            return scale * torch.cat([v[:, :, None] * X.T[None], u[:, :, None] * X.T[None]], dim=1)

    class DiagNetSDEProduct(DiagNetSDE):
        def g_prod(self, t, z, dw):
            u, v = z[:, :d], z[:, d:]
            xb = dw @ X
            return scale * torch.cat([v * xb, u * xb], dim=1)

    return DiagNetSDE(), DiagNetSDEProduct()


def _torchsde(report: BenchReport, quick: bool) -> None:
    """dyntools' diag-net kernel against torchsde's Euler scheme on the same SDE, both float64, same
    paths, step and number of steps, timed in turn in this process."""
    import torch
    import torchsde

    from dyntools.data import sparse_regression
    from dyntools.dynamics.sde_models import diag_net_kernel

    data = sparse_regression(n=80, d=200, r=20, seed=0)
    X, y = np.ascontiguousarray(data.X), np.ascontiguousarray(data.y)
    n, d = X.shape
    eta, intensity, h = 0.05, 1e-3, 0.005            # intensity: the SDE's δ̃ (sde_models docstring)
    paths, steps = 16, (50 if quick else 400)
    U0 = np.full((paths, d), 0.5)
    state0 = streams.path_states(0, paths)

    def fast():
        empty = np.empty((0, 0, 0))
        diag_net_kernel(U0.copy(), U0.copy(), X, X.T.copy(), y, np.array([h / n]),
                        np.array([np.sqrt(eta * intensity * h)]), steps, 1, state0.copy(), np.array([0, steps]), 1e6,
                        empty, empty, np.full((paths, 2), np.nan), np.full(paths, -1, dtype=np.int64))

    Xt, yt = torch.tensor(X), torch.tensor(y)
    plain, product = _torchsde_problem(Xt, yt, float(np.sqrt(eta * intensity)))
    z0 = torch.full((paths, 2 * d), 0.5, dtype=torch.float64)
    ts = torch.tensor([0.0, steps * h], dtype=torch.float64)

    def torch_run(sde):
        with torch.no_grad():
            torchsde.sdeint(sde, z0, ts, method="euler", dt=h)

    fast()
    torch_run(plain)
    torch_run(product)
    t_fast, t_plain, t_product = interleaved_best([fast, lambda: torch_run(plain), lambda: torch_run(product)],
                                                  rounds=3, repeats=(3, 1, 1))
    report.measurements.update({
        "torchsde version": torchsde.__version__, "torch threads": torch.get_num_threads(),
        "torchsde Euler (g matrix) seconds": t_plain, "torchsde Euler (g_prod) seconds": t_product,
        f"numba diag-net SDE seconds, {paths} paths x {steps} steps": t_fast})
    report.targets.append(Target(f"diag-net SDE vs torchsde Euler (general noise, g matrix), {paths} paths",
                                 t_plain / t_fast, 30.0))
    report.notes.append(f"torchsde with a hand-written g_prod (g·dW without forming g): "
                        f"{t_product / t_fast:.1f}x slower than the numba kernel (not a target)")


def run(quick: bool = False) -> BenchReport:
    import os

    report = BenchReport("sde")
    report.measurements["load average (1 min) at start"] = os.getloadavg()[0]
    _low_dim(report, quick)
    _diag_net(report, quick)
    if importlib.util.find_spec("torchsde") is None:
        report.notes.append("torchsde comparison (goal >= 30x its Euler scheme) skipped: "
                            "torchsde is not installed")
    else:
        _torchsde(report, quick)
    report.notes.append("flops counted as 4·n·d per path-step (the two products by X of one EM step)")
    report.notes.append("ratios assume an otherwise idle machine: with other processes on the cores, "
                        "waking the "
                        "second worker thread can cost a scheduler slice (milliseconds) per kernel call")
    return report


BENCHMARK = Benchmark("sde", run)
