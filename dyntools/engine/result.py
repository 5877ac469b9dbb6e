"""The one object a run returns, and the one status vocabulary.

In the spirit of ``scipy.optimize.OptimizeResult`` and ``solve_ivp``'s result: the inputs
(``config``), the outputs (``arrays``, plus scalar ``summary`` numbers), and an explicit
``status``/``message`` pair so that no failure is a silent NaN. ``kind`` names the
model/experiment, which is how :mod:`dyntools.plots` and :mod:`dyntools.store` know what they hold.

Statuses (:data:`STATUSES`; every runner uses these words and no others):

=============  ==================================================================================
converged      every path reached its target (loss below the model's tolerance)
stabilized     no path diverged and the loss neither converged nor diverged (it stays in a band)
diverged       at least one path diverged: ``diverged_at`` holds the step (see :mod:`.guard`)
completed      the run finished without divergence; it makes no claim of convergence
failed         the run finished but a check it was asked to make does not hold (e.g. a fitted
               convergence order outside its tolerance); the message says which
=============  ==================================================================================

Messages come from :data:`MESSAGES` through :func:`message`, so the same situation reads the same
in every runner.
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

STATUSES = ("converged", "stabilized", "diverged", "completed", "failed")

#: The sentence of each status; ``{…}`` fields are filled by :func:`message`.
MESSAGES = {
    "converged": "all {paths} {what} converged ({detail})",
    "stabilized": "loss neither converged nor diverged after {steps} steps: {detail}",
    "diverged": "{diverged} of {paths} {what} diverged (first at step {first}){detail}",
    "completed": "{paths} {what} finished: {detail}",
    "failed": "check failed: {detail}",
}

def message(status: str, **fields) -> str:
    """The one sentence for ``status`` (see :data:`MESSAGES`), with ``fields`` filled in.

    ``what`` defaults to "paths" and ``detail`` to "" (for "diverged", a non-empty detail is
    appended after an em dash)."""
    if status not in MESSAGES:
        raise ValueError(f"Invalid status: {status!r} (expected one of {', '.join(STATUSES)})")
    fields.setdefault("what", "paths")
    detail = fields.get("detail", "")
    if status == "diverged":
        fields["detail"] = f" — {detail}" if detail else ""
    else:
        fields.setdefault("detail", "")
    return MESSAGES[status].format(**fields)


def check_status(status: str) -> str:
    """``status`` if it is one of :data:`STATUSES`, else ``ValueError`` (no other word is read back: a result
    written before the vocabulary was fixed is refused, see :func:`dyntools.store.validate_meta`)."""
    if status not in STATUSES:
        raise ValueError(f"Invalid status: {status!r} (expected one of {', '.join(STATUSES)})")
    return status


_TRACKED_PACKAGES = ("dyntools", "numpy", "scipy", "numba", "sympy", "matplotlib")


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    from dyntools.version import __version__

    versions = {"python": platform.python_version(), "dyntools": __version__}   # the code that ran, installed or not
    for name in _TRACKED_PACKAGES:
        if name in versions:
            continue
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return tuple(versions.items())


def lowlevel_kernels() -> str:
    """What the models' low-level kernels run as in this process (:data:`dyntools.lowlevel.DESCRIPTION`:
    ``"llvm-vector (512-bit)"``, ``"fallback (<reason>)"``), or ``"not loaded"`` when no model that uses
    them was imported (this does not import them)."""
    module = sys.modules.get("dyntools.lowlevel")
    return getattr(module, "DESCRIPTION", "not loaded")


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages a result depends on (looked up once per process: the
    lookup reads every package's metadata, ~30 ms, which a sweep of short cells would pay per cell),
    and ``lowlevel``: :func:`lowlevel_kernels`."""
    return {**dict(_versions()), "lowlevel": lowlevel_kernels()}


@dataclass
class RunResult:
    """Outcome of one run (or one ensemble of paths run together).

    Attributes
    ----------
    kind : str
        What was run, e.g. ``"stabilization"``.
    config : dict
        Every parameter needed to run it again (JSON-serializable).
    arrays : dict
        Named NumPy arrays (recorded steps, iterates, losses, …).
    status : str
        One of :data:`STATUSES`.
    message : str
        One human sentence explaining the status.
    seed : int or None
        The root seed (``None`` for deterministic runs).
    summary : dict
        Scalar results (JSON-serializable).
    timings : dict
        Seconds spent per phase.
    versions : dict
        Package versions at run time: Python, ``dyntools`` (its ``__version__``) and the numerical stack.
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

    def __post_init__(self):
        self.status = check_status(self.status) if self.status else self.status

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
