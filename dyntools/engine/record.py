"""Which steps a long run records, and the compiled test "is this step recorded".

Runs never keep every step: they record at a sorted array of step numbers (step 0 is the
initial point, step ``t`` the iterate after ``t`` updates). Memory is then
O(records × paths), independent of the number of steps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation


@njit(inline="always")
def due(record_steps, k, t):
    """Is step ``t`` the next recording? ``k`` is the index of the next unwritten recording
    (start it at ``np.searchsorted(record_steps, t0)``; advance it after each recording)."""
    return k < record_steps.shape[0] and record_steps[k] == t


def due_np(record_steps, k: int, t: int) -> bool:
    """NumPy twin of :func:`due`."""
    return bool(k < record_steps.shape[0] and record_steps[k] == t)


def start_index(record_steps, t0: int) -> int:
    """Index of the first recording at or after step ``t0`` (where a chunk starting at ``t0`` resumes)."""
    return int(np.searchsorted(record_steps, t0))


def linear_grid(steps: int, records: int) -> np.ndarray:
    """``records`` steps evenly spaced on [0, steps], endpoints included (duplicates removed)."""
    steps = validation.count("steps", steps)
    records = validation.count("records", records, minimum=2)
    return np.unique(np.round(np.linspace(0, steps, records)).astype(np.int64))


def log_grid(steps: int, records: int, dense_start: int = 10) -> np.ndarray:
    """Steps 0..``dense_start`` all recorded, then log-spaced steps up to ``steps``: at least
    ``records`` distinct steps in all (or every step when ``records > steps``).

    The usual grid for loss curves drawn on log-log axes: every early step is visible, and
    late times are sampled at a constant density per decade.
    """
    steps = validation.count("steps", steps)
    records = validation.count("records", records, minimum=2)
    dense_start = validation.count("dense_start", dense_start, minimum=0)
    dense = np.arange(0, min(dense_start, steps) + 1, dtype=np.int64)
    target = min(records, steps + 1)

    def grid(points: int) -> np.ndarray:
        tail = np.round(np.logspace(0, np.log10(steps), points)).astype(np.int64)
        return np.unique(np.concatenate([dense, tail, [steps]]))

    # Early log-spaced points round onto the same integers; ask for more points until ``records``
    # distinct steps (or every step) are recorded, so the grid holds what the caller asked for. When that needs
    # more log-spaced points than twice the steps (nearly every step asked for: thousands of rounds of ever larger
    # grids, minutes of work), the earliest steps the grid misses are added instead, up to ``records``.
    if target >= steps + 1:
        return np.arange(steps + 1, dtype=np.int64)
    points = records
    out = grid(points)
    while out.size < target:
        points += max(1, (target - out.size))
        if points > 2 * (steps + 1):
            missing = np.setdiff1d(np.arange(steps + 1, dtype=np.int64), out)[: target - out.size]
            return np.union1d(out, missing)
        out = grid(points)
    return out


def make_grid(kind: str, steps: int, records: int, dense_start: int = 10) -> np.ndarray:
    """Dispatch on ``kind`` in {"log", "linear"}."""
    validation.one_of("record grid", kind, ("log", "linear"))
    return log_grid(steps, records, dense_start) if kind == "log" else linear_grid(steps, records)


def validate_steps(record_steps, steps: int) -> np.ndarray:
    """Check a user-given recording array: sorted, unique, within [0, steps]."""
    arr = np.asarray(record_steps)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError("Invalid record_steps: expected a non-empty 1-d integer array")
    arr = arr.astype(np.int64)
    if np.any(np.diff(arr) <= 0):
        raise ValueError("Invalid record_steps: must be strictly increasing")
    if arr[0] < 0 or arr[-1] > steps:
        raise ValueError(f"Invalid record_steps: must lie in [0, {steps}]")
    return arr


def with_dense_tail(grid: np.ndarray, steps: int, width: int = 64) -> np.ndarray:
    """``grid`` plus the last ``width`` consecutive steps (to see period-2 behaviour at the end)."""
    width = validation.count("width", width, minimum=0)
    tail = np.arange(max(0, steps - width), steps + 1, dtype=np.int64)
    return np.unique(np.concatenate([np.asarray(grid, dtype=np.int64), tail]))
