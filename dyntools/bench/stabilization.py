"""Benchmark of the quadratic-toy SGD kernel (issue targets: 64 paths × 10⁶ steps at ≥ 30× the
vectorized NumPy twin and ≥ 2·10⁸ path-steps/s on both cores; memory O(records × paths))."""

from __future__ import annotations

import tracemalloc

import numba

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time
from dyntools.dynamics.toy_sgd import simulate_toy
from dyntools.models.quadratic_toy import QuadraticToy


def run(quick: bool = False) -> BenchReport:
    paths = 64
    steps = 100_000 if quick else 1_000_000
    baseline_steps = 2_000 if quick else 20_000
    toy = QuadraticToy.uniform(x_min=1.0, x_max=1.05, n=1000, seed=0)
    kw = {"paths": paths, "theta0": 0.5, "seed": 0, "records": 300}

    simulate_toy(toy, 1.08, steps=1000, **kw)                          # compile / load cache
    t_fast = best_time(lambda: simulate_toy(toy, 1.08, steps=steps, **kw))
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        t_one = best_time(lambda: simulate_toy(toy, 1.08, steps=steps, **kw), repeats=2)
    finally:
        numba.set_num_threads(threads)
    t_base = best_time(lambda: simulate_toy(toy, 1.08, steps=baseline_steps, kernel="numpy", **kw), repeats=2)

    rate_fast = paths * steps / t_fast
    rate_one = paths * steps / t_one
    rate_base = paths * baseline_steps / t_base

    def peak_bytes(n_steps):
        tracemalloc.start()
        result = simulate_toy(toy, 1.08, steps=n_steps, **kw)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak, result["steps"].size

    peak_short, _ = peak_bytes(steps // 10)
    peak, records = peak_bytes(steps)
    record_bytes = 2 * 8 * paths * records            # theta and loss, float64
    report = BenchReport("stabilization")
    report.measurements = {
        "paths": paths, "steps": steps, "threads": threads,
        "numba_seconds": t_fast, "numba_path_steps_per_s": rate_fast,
        "numba_one_thread_path_steps_per_s": rate_one, "parallel_speedup": rate_fast / rate_one,
        "numpy_baseline_steps": baseline_steps, "numpy_path_steps_per_s": rate_base,
        "records": records, "peak_traced_bytes": peak,
        "peak_traced_bytes_tenth_steps": peak_short, "record_arrays_bytes": record_bytes,
    }
    report.targets = [
        Target("speed-up over vectorized NumPy twin", rate_fast / rate_base, 30.0),
        Target("path-steps per second (all cores)", rate_fast, 2e8, unit="/s"),
        Target("peak memory / recorded arrays", peak / record_bytes, 10.0, higher_is_better=False),
        Target("peak memory growth, 10x more steps", peak / peak_short, 1.25, higher_is_better=False),
    ]
    report.notes.append(f"NumPy baseline rate measured on {baseline_steps} steps x {paths} paths "
                        "(rates compared, same process)")
    return report


BENCHMARK = Benchmark("stabilization", run)
