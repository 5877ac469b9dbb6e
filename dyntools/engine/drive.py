"""How every runner drives its compiled loop: validate → allocate → chunked loop → classify → result.

The validation, allocation and classification are the runner's; this module holds what is the same
everywhere:

* :func:`chunked` runs ``advance(t0, t1, last)`` over ``chunks`` consecutive pieces of ``[0, steps)``
  with a progress bar (shown on a terminal only) counting ``work_per_step`` units per step, and adds
  the wall time to ``timings["simulate"]``;
* :func:`on_threads` runs a per-path compiled function (``nogil``) for every path on a pool of
  threads, one job per path handed out as threads free up (paths that stop early do not leave a
  thread idle, as a fixed split would). Each path owns its rows and its stream, so the result does
  not depend on the number of workers;
* :func:`classify` turns ``diverged_at`` and the final losses into one status and message of the
  vocabulary of :mod:`dyntools.engine.result`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dyntools import validation
from dyntools.engine import guard
from dyntools.engine.progress import progress_bar
from dyntools.engine.result import message, timed


def cuts(steps: int, chunks: int) -> np.ndarray:
    """``chunks + 1`` step boundaries from 0 to ``steps``."""
    return np.linspace(0, steps, validation.count("chunks", chunks) + 1).astype(np.int64)


def chunked(advance, steps: int, *, chunks: int = 1, work_per_step: int = 1, desc: str = "steps",
            unit: str = "step", progress: bool | None = False, timings: dict | None = None, bounds=None) -> None:
    """Call ``advance(t0, t1, last)`` for consecutive chunks of ``[0, steps)`` (see the module docstring);
    ``bounds`` (increasing, from 0 to ``steps``) gives the chunks explicitly instead of ``chunks``."""
    bounds = cuts(steps, chunks) if bounds is None else np.asarray(bounds, dtype=np.int64)
    timings = {} if timings is None else timings
    with timed(timings, "simulate"), progress_bar(steps * work_per_step, desc, enabled=progress, unit=unit) as bar:
        for a, b in zip(bounds[:-1], bounds[1:]):
            advance(int(a), int(b), bool(b == steps))
            bar.update(int(b - a) * work_per_step)


def on_threads(path_fn, n_paths: int, workers: int | None, *args) -> None:
    """``path_fn(np.array([p]), *args)`` for every path ``p`` on ``workers`` threads (default numba's
    thread count); with one worker, one call with every path."""
    import numba

    workers = max(1, min(n_paths, numba.get_num_threads() if workers is None else int(workers)))
    if workers == 1:
        path_fn(np.arange(n_paths, dtype=np.int64), *args)
        return
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(path_fn, np.array([p], dtype=np.int64), *args) for p in range(n_paths)]
        for job in jobs:
            job.result()


def classify(diverged_at: np.ndarray, final_loss: np.ndarray, *, what: str = "runs",
             tolerance: float | None = None, detail: str = "") -> tuple[str, str]:
    """``(status, message)`` of a run of several paths.

    ``diverged`` if any path diverged; else ``converged`` if ``tolerance`` is given and every final
    loss is below it; else ``completed`` with the median and largest final loss. ``detail`` is appended
    to the "diverged" sentence (e.g. whether the first path became NaN or grew beyond the bound)."""
    div = np.asarray(diverged_at)
    info = guard.summary(div)
    if info["diverged"]:
        return "diverged", message("diverged", diverged=info["diverged"], paths=div.size, what=what,
                                   first=info["first"], detail=detail)
    final = np.asarray(final_loss, dtype=float)
    if tolerance is not None and np.all(final < tolerance):
        return "converged", message("converged", paths=div.size, what=what,
                                    detail=f"final loss < {tolerance:g}, max {np.max(final):.3g}")
    return "completed", message("completed", paths=div.size, what=what,
                                detail=f"final loss median {np.median(final):.3g}, max {np.max(final):.3g}")
