"""A time budget for one claim (or one derivation): sympy work that overruns it is interrupted, not waited for.

The budget is counted in **processor seconds of this process** (user + system, every thread), not wall
seconds: a busy machine that gives this process a fifth of a core stretches the wall time five-fold but not
the work a budget allows, so the same claim gets the same budget and reaches the same verdict on an idle and
on a loaded machine (a budget stops a search; it must not depend on the neighbours). Code that waits
without computing (sleep, I/O) is not counted — sympy computes.

:func:`time_limit` arms a ``SIGPROF`` timer (``signal.setitimer(ITIMER_PROF)``) for the duration of a
``with`` block; when it fires, :class:`ProofTimeout` is raised inside whatever sympy routine is
running (sympy is pure Python, so it is interrupted at the next bytecode). The timer keeps firing every
:data:`REFIRE` processor seconds after the deadline until the block has left: Python runs a signal handler wherever
the main thread is, and an exception raised inside a finalizer (``__del__``, a weakref callback during a garbage
collection) is printed and dropped — the next firing interrupts the block. (CPython 3.13 has a further hole: an
exception raised at the backward jump of a ``while <condition>: pass`` loop can skip the enclosing ``try``,
python/cpython#130279: such a loop in the block may let ProofTimeout escape the `with`.) Budgets nest: an inner one
is cut to what is left of the outer one, and the outer timer is re-armed when the inner ends. The exception derives
from ``BaseException`` so that sympy's internal ``except Exception`` clauses cannot swallow it.

Signals only reach the main thread: elsewhere (a worker thread) the block runs without a limit,
and :func:`remaining` still lets loops such as the counterexample search stop on time; :func:`clock` is the
processor-time clock those loops read.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from contextlib import contextmanager

_deadline: list[float] = []  # stack of absolute deadlines (clock()) of the active budgets
#: Processor seconds between two firings of an expired budget's timer (a raise swallowed by a finalizer is repeated).
REFIRE = 0.05


def clock() -> float:
    """Processor seconds of this process (user + system, all threads): the clock of every budget."""
    return time.process_time()


class ProofTimeout(BaseException):
    """Raised when a claim exceeds its time budget."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


def remaining(default: float = float("inf")) -> float:
    """Seconds left in the innermost active budget (``default`` when there is none)."""
    if not _deadline:
        return default
    return max(0.0, _deadline[-1] - clock())


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the block with :class:`ProofTimeout` after ``seconds`` of processor time (None, ≤ 0 or ∞:
    no limit)."""
    if not seconds or seconds <= 0 or not math.isfinite(seconds):
        yield
        return
    seconds = max(min(seconds, remaining()), 1e-3)  # a nested budget never outlives the enclosing one
    _deadline.append(clock() + seconds)
    armed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = None
    active = [True]
    if armed:
        def _fire(signum, frame):
            if active[0]:
                raise ProofTimeout(seconds)

        previous = signal.signal(signal.SIGPROF, _fire)
        signal.setitimer(signal.ITIMER_PROF, seconds, REFIRE)
    try:
        yield
    finally:
        active[0] = False
        if armed:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
        _deadline.pop()
        if armed and _deadline:  # re-arm the enclosing budget's timer
            signal.setitimer(signal.ITIMER_PROF, max(remaining(), 1e-3), REFIRE)
