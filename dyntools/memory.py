"""Will a run fit in memory? Its peak estimated from the arrays it allocates, against the memory free now.

An estimate is a dict ``{what: bytes}`` of the arrays a run holds at its peak, written next to the code that
allocates them (each experiment's ``check``), plus the process itself: its resident size now, or at least
:data:`RUNTIME_FLOOR` — what the interpreter weighs once NumPy, numba and the cached kernels are loaded (a
command checks its sizes before it has loaded them) — times a stated :data:`HEADROOM`. :func:`require`
refuses, in one line naming the option to change, a run whose estimate exceeds the memory the machine has
available (``MemAvailable``), so that an oversized request fails at once instead of swapping or being killed
an hour in.
"""

from __future__ import annotations

import os

#: The resident size of a dyntools process once NumPy, numba, llvmlite and the cached kernels are loaded
#: (x86-64 Linux, numba 0.6x: ≈ 170 MiB under Python 3.11 + NumPy 2.4, ≈ 210 MiB under Python 3.13 + NumPy 2.5;
#: rounded up).
RUNTIME_FLOOR = 240 * 2**20

#: The stated headroom of every estimate: (process + arrays) × 1.1 covers allocator slack and temporaries the
#: list of arrays does not name. With it, the measured estimate/peak ratios on tests/test_memory_estimates.py's
#: 19 configurations (stabilization, diag-net, sde, trajectories, adamw-grid) were 1.12–1.47 (Python 3.11, AMD
#: EPYC, kernels cached), within the test's [1.0, 2.0]. Not covered: numba compiling a kernel for the first time
#: (an empty cache), which adds up to ≈ 140 MiB once; a command that never loads numba stays below
#: RUNTIME_FLOOR (the estimate is then on the safe side).
HEADROOM = 1.1


def _status(key: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def rss_bytes() -> int:
    """This process's resident size now (0 where ``/proc`` is missing)."""
    return _status("VmRSS:") or 0


def peak_rss_bytes() -> int:
    """This process's peak resident size so far (``VmHWM``; 0 where ``/proc`` is missing)."""
    return _status("VmHWM:") or 0


def available_bytes() -> int | None:
    """The memory the machine can give a new allocation without swapping (``MemAvailable``), or ``None``
    where it cannot be read (then nothing is refused)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def peak(arrays: dict[str, int]) -> int:
    """The estimated peak resident size of this process running a job that holds ``arrays`` (bytes each):
    ``HEADROOM × (max(resident size now, RUNTIME_FLOOR) + Σ arrays)``."""
    return int(HEADROOM * (max(rss_bytes(), RUNTIME_FLOOR) + sum(int(v) for v in arrays.values())))


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"


def require(arrays: dict[str, int], flag: str, available: int | None = None,
            flags: dict[str, str] | None = None) -> int:
    """The estimated peak (:func:`peak`); ``ValueError`` when it exceeds the available memory, naming the
    option to lower: the one of the largest array in ``flags`` (``{what: option}``), else ``flag``."""
    need = peak(arrays)
    free = available_bytes() if available is None else available
    if free is not None and need > free:
        biggest = max(arrays, key=arrays.get)
        option = (flags or {}).get(biggest, flag)
        raise ValueError(f"Invalid {option}: the run needs about {_gib(need)} of memory at its peak ({biggest}: "
                         f"{_gib(arrays[biggest])}) and {_gib(free)} are available; lower {option}")
    return need


def require_each(arrays: dict[str, tuple[int, str]], available: int | None = None) -> int:
    """:func:`require` with the option that sizes each array beside it: ``{what: (bytes, option)}``; the
    refusal names the option of the largest array."""
    sizes = {what: int(size) for what, (size, _) in arrays.items()}
    flags = {what: option for what, (_, option) in arrays.items()}
    return require(sizes, next(iter(flags.values())), available, flags)


def _worker_limits(client) -> dict[str, int]:
    """``{address: memory limit in bytes}`` of every worker of a Dask ``client`` (0: unlimited)."""
    try:
        info = client.scheduler_info(n_workers=-1)      # every worker (newer distributed lists 5 by default)
    except TypeError:                                   # an older distributed: it lists them all
        info = client.scheduler_info()
    return {addr: int(w.get("memory_limit") or 0) for addr, w in info.get("workers", {}).items()}


def check_workers(client, arrays: dict[str, int], flag: str) -> int:
    """A Dask sweep's cell against each worker's memory limit: the cell's estimated peak (:func:`peak`: the
    worker's runtime and ``arrays``) above a worker's ``memory_limit`` is a ``ValueError`` naming the worker,
    its limit, the estimate and ``flag`` (Dask would pause, spill or kill that worker instead). A limit of
    0 or ``None`` is unlimited. Returns the estimate."""
    need = int(HEADROOM * (RUNTIME_FLOOR + sum(int(v) for v in arrays.values())))
    for addr, limit in sorted(_worker_limits(client).items()):
        if limit and need > limit:
            biggest = max(arrays, key=arrays.get)
            raise ValueError(f"Invalid {flag}: a cell needs about {_gib(need)} of memory at its peak ({biggest}: "
                             f"{_gib(arrays[biggest])}) and worker {addr} has a memory limit of {_gib(limit)}; "
                             f"lower {flag}, or give the workers more memory (dask worker --memory-limit)")
    return need
