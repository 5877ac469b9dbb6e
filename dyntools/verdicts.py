"""Statements that follow from numbers: the verdicts of the report, computed from ensembles.

A verdict about a chaotic or near-divergence regime never rests on one run (whose fate a last-bit
difference between processors can flip) nor on the NaN of a diverged run. It is computed from an
ensemble: the finite values of a quantity over the runs that survived, summarised by their
quantiles, and the number that survived, with a binomial confidence interval.

The rules (each function states its own; all handle an empty ensemble, NaN and ties):

* :func:`spread` — the 10 %, 50 %, 90 % quantiles (linear interpolation) and the range of the
  finite values; ``None`` when there are none.
* :func:`wilson_interval` — the Wilson score interval of a binomial proportion ``k / n``.
* :func:`against_reference` — *reproduced* when a published number lies in the ensemble's
  ``[q10, q90]`` band widened by the stated tolerance factor ``t`` (``[q10 / t, q90 · t]``); *close*
  when it lies in the band widened by ``t²``; *not reproduced* otherwise; *not checkable* when fewer
  than ``min_alive`` runs survived or the reference is not a finite number. (The tolerance keeps a
  published number from the bulk of the ensemble off the band's edge, where one start more or less —
  another processor's draw — would flip the verdict.)
* :func:`combine` — the verdict of several quantities: not checkable if any is, else the worst.
* :func:`ordered` — whether ensemble A lies below ensemble B: *smaller* when A's 90 % quantile is
  below B's 10 % quantile, *larger* in the mirror case, *overlapping* otherwise (ties included),
  *not checkable* with too few survivors on either side.
* :func:`proportions_agree` — two survival fractions agree when their Wilson intervals overlap.
* :func:`exponent_rule` — a fitted exponent against a predicted one: the 95 % Student-t interval of the mean
  of the per-seed exponents inside ``[p − tol, p + tol]`` is *shown*, disjoint from it *contradicted*, else
  *not shown* (with the n that would make the interval narrow enough, when it is too wide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

REPRODUCED, CLOSE, NOT_REPRODUCED, NOT_CHECKABLE = "reproduced", "close", "not reproduced", "not checkable"
SMALLER, LARGER, OVERLAPPING = "smaller", "larger", "overlapping"
#: Worst first: the order :func:`combine` uses.
SEVERITY = (NOT_REPRODUCED, CLOSE, REPRODUCED)
#: Fewer surviving runs than this make no verdict.
MIN_ALIVE = 5


@dataclass(frozen=True)
class Spread:
    """Quantiles of the finite values of an ensemble (``count`` of them)."""

    count: int
    q10: float
    median: float
    q90: float
    low: float
    high: float

    def as_dict(self) -> dict:
        return {"count": self.count, "q10": self.q10, "median": self.median, "q90": self.q90,
                "min": self.low, "max": self.high}

    def text(self, digits: int = 3) -> str:
        """``median [q10, q90]``."""
        return f"{self.median:.{digits}g} [{self.q10:.{digits}g}, {self.q90:.{digits}g}]"


def finite_values(values) -> np.ndarray:
    """The finite entries of ``values`` (flattened, float64): NaN / ±inf of diverged runs dropped."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    return arr[np.isfinite(arr)]


def spread(values) -> Spread | None:
    """:class:`Spread` of the finite values, or ``None`` when there are none."""
    x = finite_values(values)
    if x.size == 0:
        return None
    q10, med, q90 = (float(v) for v in np.quantile(x, (0.1, 0.5, 0.9)))
    return Spread(int(x.size), q10, med, q90, float(x.min()), float(x.max()))


def spread_text(values, digits: int = 3) -> str:
    """``median [q10, q90]`` of the finite values, or ``—`` when there are none."""
    s = spread(values)
    return "—" if s is None else s.text(digits)


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of the proportion ``k / n`` (95 % at ``z = 1.96``); ``(0, 1)`` when ``n = 0``."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"Invalid k, n: {k}, {n} (need 0 <= k <= n)")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # at k = 0 and k = n the exact bounds are 0 and 1 (the formula gives them up to round-off)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def fraction_text(k: int, n: int) -> str:
    """``k/n (95 % CI [lo, hi])`` of a proportion."""
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} (95 % CI {lo:.2f}–{hi:.2f})"


def _is_number(x) -> bool:
    return x is not None and isinstance(x, int | float | np.integer | np.floating) and math.isfinite(float(x))


def against_reference(values, reference, *, tolerance: float, min_alive: int = MIN_ALIVE) -> str:
    """A published number against an ensemble (see the module's rules): ``tolerance >= 1`` widens the
    ``[q10, q90]`` band multiplicatively (for positive quantities; a non-positive band edge is moved
    additively by the same relative amount)."""
    if not tolerance >= 1.0:
        raise ValueError(f"Invalid tolerance: {tolerance} (must be >= 1)")
    s = spread(values)
    if s is None or s.count < min_alive or not _is_number(reference):
        return NOT_CHECKABLE
    ref = float(reference)

    def within(t):
        lo = s.q10 / t if s.q10 > 0 else s.q10 - abs(s.q10) * (t - 1)
        hi = s.q90 * t if s.q90 > 0 else s.q90 + abs(s.q90) * (t - 1)
        return lo <= ref <= hi

    if within(tolerance):
        return REPRODUCED
    return CLOSE if within(tolerance * tolerance) else NOT_REPRODUCED


def combine(verdicts) -> str:
    """One verdict of several quantities: *not checkable* if any is (or there are none), else the worst."""
    verdicts = list(verdicts)
    if not verdicts or NOT_CHECKABLE in verdicts:
        return NOT_CHECKABLE
    for v in verdicts:
        if v not in SEVERITY:
            raise ValueError(f"Invalid verdict: {v!r} (one of {', '.join(SEVERITY + (NOT_CHECKABLE,))})")
    return min(verdicts, key=SEVERITY.index)


def ordered(a, b, *, min_alive: int = MIN_ALIVE) -> str:
    """Whether ensemble ``a`` lies below ensemble ``b`` (finite values only; see the module's rules)."""
    sa, sb = spread(a), spread(b)
    if sa is None or sb is None or min(sa.count, sb.count) < min_alive:
        return NOT_CHECKABLE
    if sa.q90 < sb.q10:
        return SMALLER
    if sa.q10 > sb.q90:
        return LARGER
    return OVERLAPPING


def proportions_agree(k1: int, n1: int, k2: int, n2: int) -> bool:
    """Whether two proportions ``k1/n1`` and ``k2/n2`` are compatible: their Wilson intervals overlap."""
    lo1, hi1 = wilson_interval(k1, n1)
    lo2, hi2 = wilson_interval(k2, n2)
    return lo1 <= hi2 and lo2 <= hi1


SHOWN, NOT_SHOWN, CONTRADICTED = "shown", "not shown", "contradicted"


@dataclass(frozen=True)
class ExponentVerdict:
    """The outcome of :func:`exponent_rule`: the words, and the numbers they rest on."""

    verdict: str
    n: int               # finite per-seed exponents
    total: int           # seeds given (n of them survived)
    mean: float
    low: float           # 95 % t-interval of the mean
    high: float
    predicted: float
    tolerance: float
    n_needed: int | None  # when underpowered: the n whose interval half-width would fit the margin

    def text(self) -> str:
        under = f" (underpowered: n needed ≈ {self.n_needed})" if self.n_needed else ""
        return (f"{self.verdict}{under}: exponent {self.mean:.3f} [95 % CI {self.low:.3f}, {self.high:.3f}] vs "
                f"{self.predicted:g} ± {self.tolerance:g} (rule exponent_rule, n = {self.n} of {self.total} seeds)")

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "n": self.n, "total": self.total, "mean": self.mean,
                "ci": [self.low, self.high], "predicted": self.predicted, "tolerance": self.tolerance,
                "n_needed": self.n_needed, "rule": "exponent_rule"}


def exponent_rule(exponents, predicted: float, tolerance: float, *, min_n: int = MIN_ALIVE) -> ExponentVerdict:
    """A predicted exponent ``p`` (e.g. ½ of an O(√x) law) against per-seed fitted exponents ``e_s``.

    With the ``n`` finite ``e_s``, mean ``m``, sample std ``s`` and ``h = t_{0.975, n−1} s / √n``, the 95 %
    interval of the mean is ``[m − h, m + h]``. The claim "the exponent is ``p`` within ``tol``" is
    *shown* when that interval lies inside ``[p − tol, p + tol]``, *contradicted* when it does not meet it,
    and *not shown* otherwise (ties at the edges count as not shown). Fewer than ``min_n`` finite
    exponents are *not shown* (underpowered, ``n_needed = min_n``); a *not shown* whose interval is the
    cause (``|m − p| < tol`` but ``h`` too wide) names the n at which ``h`` would fit ``tol − |m − p|``
    at the same spread."""
    from scipy import stats

    if not tolerance > 0:
        raise ValueError(f"Invalid tolerance: {tolerance} (must be > 0)")
    x = finite_values(exponents)
    total, n = int(np.asarray(exponents).size), int(x.size)
    if n < max(2, min_n):
        m = float(x.mean()) if n else math.nan
        return ExponentVerdict(NOT_SHOWN, n, total, m, math.nan, math.nan, predicted, tolerance, max(2, min_n))
    m, sd = float(x.mean()), float(x.std(ddof=1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    low, high = m - half, m + half
    if predicted - tolerance < low and high < predicted + tolerance:
        return ExponentVerdict(SHOWN, n, total, m, low, high, predicted, tolerance, None)
    if high < predicted - tolerance or low > predicted + tolerance:
        return ExponentVerdict(CONTRADICTED, n, total, m, low, high, predicted, tolerance, None)
    margin = tolerance - abs(m - predicted)
    needed = None
    if margin > 0:
        needed = n + 1
        while needed < 10**6 and float(stats.t.ppf(0.975, needed - 1)) * sd / math.sqrt(needed) >= margin:
            needed = max(needed + 1, int(needed * 1.1))
    return ExponentVerdict(NOT_SHOWN, n, total, m, low, high, predicted, tolerance, needed)


def near_best(scores, *, rel_tol: float, lower_is_better: bool = True) -> np.ndarray:
    """Mask of the entries within ``rel_tol`` (relative to the best's magnitude) of the best finite score:
    the near-ties an argmax could pick on another processor. NaN / inf entries are never near-best; all
    False when nothing is finite."""
    if not rel_tol >= 0:
        raise ValueError(f"Invalid rel_tol: {rel_tol} (must be >= 0)")
    s = np.asarray(scores, dtype=np.float64)
    ok = np.isfinite(s)
    if not ok.any():
        return np.zeros(s.shape, bool)
    best = s[ok].min() if lower_is_better else s[ok].max()
    gap = (s - best) if lower_is_better else (best - s)
    return ok & (gap <= rel_tol * abs(best))


def range_over_choices(sets) -> tuple[int, int]:
    """Picking one integer from each non-empty set: the smallest and the largest possible spread
    ``max − min`` of the picks (how far a best grid index moves, over every choice among near-ties)."""
    sets = [sorted({int(v) for v in s}) for s in sets]
    if not sets or any(not s for s in sets):
        raise ValueError("Invalid sets: need at least one, each non-empty")
    largest = max(s[-1] for s in sets) - min(s[0] for s in sets)
    # smallest window [lo, hi] that meets every set: slide over the sorted (value, set) pairs
    pairs = sorted((v, i) for i, s in enumerate(sets) for v in s)
    count, have, smallest, left = len(sets), {}, largest, 0
    for v, i in pairs:
        have[i] = have.get(i, 0) + 1
        while len(have) == count:
            lv, li = pairs[left]
            smallest = min(smallest, v - lv)
            have[li] -= 1
            if not have[li]:
                del have[li]
            left += 1
    return smallest, largest


def count_above(values, threshold: float, margin: float) -> tuple[int, int]:
    """How many finite values lie at or above ``threshold``, as a range robust to last-bit changes: (those
    ≥ threshold + margin, those ≥ threshold − margin). NaN (diverged) never counts."""
    x = finite_values(values)
    return int((x >= threshold + margin).sum()), int((x >= threshold - margin).sum())


def compare_counts(a: tuple[int, int], b: tuple[int, int]) -> str:
    """Count ranges (sure, possible) of A against B: ``"at least as large"`` when A's sure count reaches B's
    possible count, ``"smaller"`` when A's possible count is below B's sure count, ``"undecided"`` otherwise."""
    if a[0] >= b[1]:
        return "at least as large"
    if a[1] < b[0]:
        return "smaller"
    return "undecided"


def measured(*values) -> bool:
    """Whether every value is a finite number (a diverged run's NaN or a missing ``None`` is not)."""
    import math

    try:
        return all(v is not None and math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def word(holds: bool | None, yes: str, no: str, unmeasured: str = "not measured") -> str:
    """``yes``/``no`` for a verdict, ``unmeasured`` when ``holds`` is ``None`` (the numbers it rests on are
    not finite): the one way verdict functions turn a comparison into words."""
    return unmeasured if holds is None else yes if holds else no
