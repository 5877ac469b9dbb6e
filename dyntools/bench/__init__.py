"""``dyntools bench``: each fast kernel against its baseline, both timed in the same process.

``BENCHMARKS`` maps a name to a module with ``run(quick: bool) -> BenchReport``. A report holds
measurements (seconds, rates) and *targets* — each a ratio or rate with the goal it must reach —
so the output says plainly which performance claims hold on this machine today.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

BENCHMARKS: dict[str, str] = {
    "stabilization": "dyntools.bench.stabilization",
    "relu": "dyntools.bench.relu",
    "sweep": "dyntools.bench.sweep",
    "sde": "dyntools.bench.sde",
    "diag-net": "dyntools.bench.diag_net",
    "voronoi": "dyntools.bench.voronoi",
    "deep-nets": "dyntools.bench.deep_nets",
    "gallery": "dyntools.bench.gallery",
    "symbolic-model": "dyntools.bench.symbolic_model",
}


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

    def as_dict(self) -> dict:
        return {"name": self.name, "measurements": self.measurements,
                "targets": [t.as_dict() for t in self.targets], "notes": self.notes,
                "cpu_count": os.cpu_count()}


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls (the first call is not special: warm up before)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(names: list[str], quick: bool = False) -> list[BenchReport]:
    from dyntools import validation

    names = names or list(BENCHMARKS)
    for n in names:
        validation.one_of("benchmark", n, tuple(BENCHMARKS))
    return [importlib.import_module(BENCHMARKS[n]).run(quick) for n in names]
