"""Argument checks shared by every public entry point.

Each check raises ``ValueError`` (or ``TypeError``) whose message names the parameter and
the allowed range, in the style of ``torch.optim``: ``Invalid learning rate: -0.1 (must be > 0)``.
The CLI turns these into a one-line error and exit status 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def finite(name: str, value) -> float:
    """Return ``value`` as a float, rejecting non-numbers, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"Invalid {name}: {value} (must be finite)")
    return value


def positive(name: str, value) -> float:
    value = finite(name, value)
    if value <= 0:
        raise ValueError(f"Invalid {name}: {value} (must be > 0)")
    return value


def non_negative(name: str, value) -> float:
    value = finite(name, value)
    if value < 0:
        raise ValueError(f"Invalid {name}: {value} (must be >= 0)")
    return value


def in_interval(name: str, value, low: float, high: float, *, closed_low=True, closed_high=False) -> float:
    """Check ``value`` in the interval between ``low`` and ``high`` (closedness as given)."""
    value = finite(name, value)
    ok_low = value >= low if closed_low else value > low
    ok_high = value <= high if closed_high else value < high
    if not (ok_low and ok_high):
        lb = "[" if closed_low else "("
        hb = "]" if closed_high else ")"
        raise ValueError(f"Invalid {name}: {value} (must be in {lb}{low}, {high}{hb})")
    return value


def count(name: str, value, minimum: int = 1) -> int:
    """An integer count >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"Invalid {name}: {value} (must be >= {minimum})")
    return value


def seed(value) -> int:
    """A seed for ``numpy.random.SeedSequence``: a non-negative integer."""
    return count("seed", value, minimum=0)


def finite_array(name: str, values, *, ndim: int | None = None, min_size: int = 1) -> np.ndarray:
    """A float64 array with only finite entries (and the given number of dimensions)."""
    arr = np.asarray(values, dtype=np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"Invalid {name}: expected a {ndim}-d array, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"Invalid {name}: needs at least {min_size} entries, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Invalid {name}: contains non-finite values")
    return arr


def one_of(name: str, value, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"Invalid {name}: {value!r} (must be one of {', '.join(map(repr, choices))})")
    return value


class KernelMismatch(ValueError):
    """A compiled piece (a transform's ``compiled()`` kernel, a model kernel, an SDE term's derivative)
    does not compute what its readable version computes; the message names the piece and the first
    differing coordinate with both values. A ``ValueError``, so the CLI reports it as bad input."""


def first_difference(readable, compiled, *, rtol: float = 1e-9, atol: float = 1e-12):
    """``(index, readable value, compiled value)`` of the first entry (row-major) where
    ``|c − r| > atol + rtol·|r|`` (NaN against a number differs; NaN against NaN agrees), or None.
    ``index`` is an int for a vector, a tuple for an array of more dimensions."""
    r = np.asarray(readable, dtype=np.float64)
    c = np.asarray(compiled, dtype=np.float64)
    if r.shape != c.shape:
        return ("shape", r.shape, c.shape)
    with np.errstate(invalid="ignore"):
        close = np.isclose(c, r, rtol=rtol, atol=atol, equal_nan=True)
    bad = np.flatnonzero(~close.ravel())
    if not bad.size:
        return None
    k = int(bad[0])
    index = k if r.ndim == 1 else tuple(int(i) for i in np.unravel_index(k, r.shape))
    return index, float(r.ravel()[k]), float(c.ravel()[k])
