"""What a benchmark reports: measurements, and *targets* — each a ratio or rate with the goal it must reach —
so that ``dyntools bench`` says plainly which performance claims hold on this machine today.

A benchmark module of :mod:`dyntools.bench` declares itself with ``BENCHMARK = Benchmark(name, run)``, where
``run(quick: bool) -> BenchReport``; :func:`dyntools.bench.benchmarks` finds it by scanning the package. The
types live here, apart from the discovery, so that a benchmark module imports them without importing the
package that imports it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Benchmark:
    """One ``dyntools bench NAME``: its name (stable: ``--json`` readers key on it) and its ``run(quick)``.

    ``compiles_in_children``: its child processes compile from empty caches (``cold-start``). Such a benchmark
    runs after the others in a whole ``dyntools bench``: the peak resident size of a process's waited-for
    children (``ru_maxrss`` of ``RUSAGE_CHILDREN``, the sweep's worker memory) would otherwise be its compilers'."""
    name: str
    run: Callable[[bool], BenchReport]
    compiles_in_children: bool = False


@dataclass
class Target:
    name: str
    value: float
    goal: float
    higher_is_better: bool = True
    unit: str = "x"

    @property
    def met(self) -> bool:
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "goal": self.goal, "unit": self.unit,
                "higher_is_better": self.higher_is_better, "met": self.met}


@dataclass
class BenchReport:
    name: str
    measurements: dict[str, float] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the instruction set it was restricted to (``native``: none) and :func:`machine_target`
    isa: str = "native"
    target: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "measurements": self.measurements,
                "targets": [t.as_dict() for t in self.targets], "notes": self.notes,
                "cpu_count": os.cpu_count(), "isa": self.isa, "target": self.target or machine_target()}

    @classmethod
    def from_dict(cls, d: dict) -> BenchReport:
        """The report of :meth:`as_dict`."""
        targets = [Target(t["name"], t["value"], t["goal"], t["higher_is_better"], t["unit"]) for t in d["targets"]]
        return cls(d["name"], dict(d["measurements"]), targets, list(d["notes"]), isa=d.get("isa", "native"),
                   target=dict(d.get("target", {})))


def machine_target() -> dict:
    """What this process compiles for: numba's CPU name, the low-level kernels' vector bits and kind,
    OpenBLAS's kernels (core type)."""
    from numba import config

    from dyntools.engine.result import lowlevel_kernels
    from dyntools.lowlevel.width import VECTOR_BITS

    try:
        from llvmlite.binding import get_host_cpu_name

        host = get_host_cpu_name()
    except Exception:                                 # no name on this platform
        host = "unknown"
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i.get('internal_api')} {i.get('architecture', '?')}" for i in threadpool_info()
                         if i.get("user_api") == "blas") or "none loaded"
    except ImportError:
        blas = "unknown (threadpoolctl not installed)"
    return {"numba cpu": config.CPU_NAME or f"host ({host})", "vector bits": VECTOR_BITS,
            "lowlevel": lowlevel_kernels(), "blas": blas}


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls (the first call is not special: warm up before)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
