"""The one object a run returns.

In the spirit of ``scipy.optimize.OptimizeResult`` and ``solve_ivp``'s result: the inputs
(``config``), the outputs (``arrays``, plus scalar ``summary`` numbers), and an explicit
``status``/``message`` pair ("stabilized", "diverged at step k", …) so that no failure is a
silent NaN. ``kind`` names the model/experiment, which is how :mod:`dyntools.plots` and
:mod:`dyntools.store` know what they are holding.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_TRACKED_PACKAGES = ("dyntools", "numpy", "scipy", "numba", "sympy", "matplotlib")


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages a result depends on."""
    versions = {"python": platform.python_version()}
    for name in _TRACKED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@dataclass
class RunResult:
    """Outcome of one run (or one ensemble of paths run together).

    Attributes
    ----------
    kind : str            what was run, e.g. ``"stabilization"``
    config : dict         every parameter needed to run it again (JSON-serializable)
    arrays : dict         named NumPy arrays (recorded steps, iterates, losses, …)
    status : str          a short machine-readable word: "stabilized", "converged", "diverged", …
    message : str         one human sentence explaining the status
    seed : int | None     the root seed (``None`` for deterministic runs)
    summary : dict        scalar results (JSON-serializable)
    timings : dict        seconds spent per phase
    versions : dict       package versions at run time
    """

    kind: str
    config: dict[str, Any]
    arrays: dict[str, np.ndarray]
    status: str
    message: str
    seed: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=package_versions)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}{tuple(v.shape)}" for k, v in self.arrays.items())
        return f"RunResult(kind={self.kind!r}, status={self.status!r}, message={self.message!r}, arrays=[{shapes}])"


@contextmanager
def timed(timings: dict[str, float], phase: str):
    """Add the wall time of the ``with`` block to ``timings[phase]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - start
