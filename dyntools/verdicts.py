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

The report's headlines use the rules below. Each returns a :class:`Verdict`: one of three words —
*shown*, *not shown* (overlapping, or underpowered with the ensemble size needed), *contradicted* — with
the rule's name, the ensemble size ``n``, the survivors (finite values used) and the measurement.

* :func:`median_difference` — a claim "median(a) < median(b)" (or ``>``) over unpaired seeds. The
  difference of medians ``d = med(a) − med(b)`` gets a percentile bootstrap interval (``resamples``
  resamples of each ensemble with replacement, a seeded generator, level 95 %): *shown* when the interval
  lies on the claimed side of 0, *contradicted* when it lies on the other side, else *not shown*. When
  not shown, the size needed is read off the interval's half-width ``w`` (which shrinks as ``1/√n``):
  ``n_needed ≈ n · (w / |d|)²``.
* :func:`sign_test` — the same claim over paired seeds: ``k`` of the ``m`` untied finite pairs go the
  claimed way; the exact binomial tail ``P(K ≥ k | m, ½)`` is the one-sided p-value. *Shown* when it is
  ≤ ``alpha`` (5 %), *contradicted* when the other tail is, else *not shown*; underpowered when even
  ``k = m`` could not reach ``alpha`` (``m < log₂(1/alpha)``): the seeds needed are those pairs divided by
  the fraction of pairs that survived untied.
* :func:`survival` — a claim "at least a fraction ``p0`` of the runs survive" by the Wilson interval of
  ``alive / n``: *shown* when its lower end is ≥ ``p0``, *contradicted* when its upper end is < ``p0``.
  :func:`no_divergence` is the claim "no run diverges": any diverged run contradicts it.
* :func:`every`, :func:`every_step` — a universal claim ("every path bounces", "the loss stays below the
  bound at every recorded step"): any exception contradicts it; shown when none among ≥ 5 surviving runs.
* :func:`check` — stated thresholds on a deterministic run (one trajectory, where an ensemble would be
  copies of it): shown, contradicted, or not shown when a number is not finite.
* :func:`magnitude` — a source's "about ``x``" against an ensemble's median, within a stated factor.
* :func:`fraction_larger` — "fraction ``k1/n1`` larger than ``k2/n2``": *shown* when their Wilson
  intervals are disjoint the claimed way.
* :func:`grid_fraction_larger` — the same on the cells of one sweep's grids, with last-bit-robust counts and
  no ensemble size offered (grid cells are not independent draws).
* :func:`decoupling` — seed 001's claim that decoupled decay decouples the good region of an
  (lr, λ) heatmap, from :func:`region_shape` of each optimizer's grid: the slope of log best-λ against
  log lr over the lr rows, and the region's distance from an axis-aligned rectangle
  (``1 − max IoU`` over all rectangles of grid cells).
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


# ----------------------------------------------------------------------------- rules with three words

SHOWN, NOT_SHOWN, CONTRADICTED = "shown", "not shown", "contradicted"
WORDS = (SHOWN, NOT_SHOWN, CONTRADICTED)


@dataclass(frozen=True)
class Verdict:
    """The outcome of a declared rule: ``word`` (:data:`WORDS`), the ``rule``'s name, the ensemble size ``n``
    and the ``survivors`` used, the ``measurement`` in words, and ``why`` (one sentence) when not shown;
    ``n_needed`` is the ensemble size an underpowered rule would need (``None`` when not estimated)."""

    word: str
    rule: str
    n: int
    survivors: int
    measurement: str
    why: str = ""
    n_needed: int | None = None

    def __post_init__(self):
        if self.word not in WORDS:
            raise ValueError(f"Invalid word: {self.word!r} (one of {', '.join(WORDS)})")

    @property
    def shown(self) -> bool:
        return self.word == SHOWN

    def label(self) -> str:
        """``shown``, ``not shown (underpowered: n needed ≈ 40)`` or ``contradicted``."""
        if self.word == NOT_SHOWN and self.n_needed is not None:
            return f"not shown (underpowered: n needed ≈ {self.n_needed})"
        return self.word

    def text(self) -> str:
        """``label — measurement [rule, n = 16, 15 survived]``: what a headline prints."""
        return f"{self.label()} — {self.measurement} [{self.rule}, n = {self.n}, {self.survivors} survived]"

    def as_dict(self) -> dict:
        return {"verdict": self.word, "rule": self.rule, "n": self.n, "survivors": self.survivors,
                "measurement": self.measurement, "why": self.why, "n_needed": self.n_needed}


def _side(claim: str) -> int:
    if claim not in ("less", "greater"):
        raise ValueError(f"Invalid claim: {claim!r} (one of less, greater)")
    return -1 if claim == "less" else 1


def median_difference(a, b, *, claim: str = "less", resamples: int = 2000, seed: int = 0, level: float = 0.95,
                      min_alive: int = MIN_ALIVE, digits: int = 3) -> Verdict:
    """Rule *median difference (bootstrap)*: is ``median(a)`` below (``claim="less"``) or above
    (``"greater"``) ``median(b)``? Unpaired ensembles; NaN/inf (diverged runs) are dropped and counted
    as not surviving. See the module docstring for the interval and the size needed."""
    side = _side(claim)
    if not (isinstance(resamples, int) and resamples >= 100):
        raise ValueError(f"Invalid resamples: {resamples} (an integer >= 100)")
    if not 0.5 < level < 1:
        raise ValueError(f"Invalid level: {level} (in (0.5, 1))")
    raw_a, raw_b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    xa, xb = finite_values(raw_a), finite_values(raw_b)
    n, alive = raw_a.size + raw_b.size, xa.size + xb.size
    rule = f"median difference, bootstrap {resamples} resamples (seed {seed})"
    if min(xa.size, xb.size) < min_alive:
        return Verdict(NOT_SHOWN, rule, n, alive, f"{xa.size} and {xb.size} survivors",
                       f"fewer than {min_alive} runs survived on one side.",
                       n_needed=max(2 * min_alive, n) if alive else None)
    d = float(np.median(xa) - np.median(xb))
    rng = np.random.default_rng(seed)
    boot = (np.median(rng.choice(xa, (resamples, xa.size)), axis=1)
            - np.median(rng.choice(xb, (resamples, xb.size)), axis=1))
    lo, hi = (float(v) for v in np.quantile(boot, ((1 - level) / 2, (1 + level) / 2)))
    measurement = (f"median {np.median(xa):.{digits}g} vs {np.median(xb):.{digits}g}, difference {d:+.{digits}g} "
                   f"({level:.0%} CI {lo:+.{digits}g} to {hi:+.{digits}g})")
    if (hi < 0 if side < 0 else lo > 0):
        return Verdict(SHOWN, rule, n, alive, measurement)
    if (lo > 0 if side < 0 else hi < 0):
        return Verdict(CONTRADICTED, rule, n, alive, measurement, "the interval lies on the other side of 0.")
    half = (hi - lo) / 2
    needed = None if d == 0 or d * side < 0 else int(math.ceil(n * (half / abs(d)) ** 2))
    return Verdict(NOT_SHOWN, rule, n, alive, measurement, "the interval contains 0.",
                   n_needed=needed if needed is not None and needed > n else None)


def binomial_tail(k: int, m: int) -> float:
    """``P(K ≥ k)`` for ``K ~ Binomial(m, ½)``, exactly (a sum of binomial coefficients over ``2^m``)."""
    if not 0 <= k <= m + 1:
        raise ValueError(f"Invalid k, m: {k}, {m} (need 0 <= k <= m + 1)")
    return sum(math.comb(m, j) for j in range(k, m + 1)) / 2 ** m


def sign_test(a, b, *, claim: str = "less", alpha: float = 0.05, digits: int = 3) -> Verdict:
    """Rule *sign test (exact binomial)*: does ``a[i]`` lie below (``claim="less"``) or above ``b[i]``
    for paired seeds ``i``? Pairs with a NaN/inf are dropped (not survivors), ties are dropped from the
    count. See the module docstring."""
    side = _side(claim)
    if not 0 < alpha < 0.5:
        raise ValueError(f"Invalid alpha: {alpha} (in (0, 0.5))")
    xa, xb = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if xa.shape != xb.shape:
        raise ValueError(f"Invalid pairs: {xa.size} vs {xb.size} values (the same seeds on both sides)")
    ok = np.isfinite(xa) & np.isfinite(xb)
    diff = (xa[ok] - xb[ok]) * side               # > 0: the claimed way
    k, against = int((diff > 0).sum()), int((diff < 0).sum())
    m = k + against
    rule = "sign test, exact binomial, one-sided α = " + f"{alpha:g}"
    p_for, p_against = (binomial_tail(k, m), binomial_tail(against, m)) if m else (1.0, 1.0)
    measurement = (f"{k} of {m} untied pairs {'below' if side < 0 else 'above'} (p = {p_for:.{digits}g})"
                   + (f", {int(ok.sum()) - m} tied" if ok.sum() > m else ""))
    needed = math.ceil(math.log2(1 / alpha))
    if m == 0:
        return Verdict(NOT_SHOWN, rule, xa.size, int(ok.sum()), measurement,
                       "no pair differs (every pair ties)." if ok.any() else "no pair survived on both sides.")
    if p_for <= alpha:
        return Verdict(SHOWN, rule, xa.size, int(ok.sum()), measurement)
    if p_against <= alpha:
        return Verdict(CONTRADICTED, rule, xa.size, int(ok.sum()), measurement,
                       f"{against} of {m} pairs go the other way (p = {p_against:.{digits}g}).")
    if m < needed:
        alive = int(ok.sum())
        why = f"{m} untied pairs cannot reach p ≤ {alpha:g} even if all agree."
        if alive < xa.size:
            why += f" Only {alive} of {xa.size} pairs survived on both sides."
        # pairs lost to divergence or ties: the seeds needed at the observed fraction of untied survivors
        return Verdict(NOT_SHOWN, rule, xa.size, alive, measurement, why,
                       n_needed=math.ceil(needed * xa.size / m))
    return Verdict(NOT_SHOWN, rule, xa.size, int(ok.sum()), measurement, f"p = {p_for:.{digits}g} > {alpha:g}.")


def survival(alive: int, n: int, *, at_least: float, z: float = 1.96) -> Verdict:
    """Rule *survival (Wilson 95 %)*: do at least a fraction ``at_least`` of runs survive?"""
    if not 0 <= at_least <= 1:
        raise ValueError(f"Invalid at_least: {at_least} (in [0, 1])")
    lo, hi = wilson_interval(alive, n, z)
    rule = "survival, Wilson 95 % interval"
    measurement = f"{alive}/{n} survived (95 % CI {lo:.2f}–{hi:.2f}; claim ≥ {at_least:.0%})"
    if n and lo >= at_least:
        return Verdict(SHOWN, rule, n, alive, measurement)
    if n and hi < at_least:
        return Verdict(CONTRADICTED, rule, n, alive, measurement, "the interval lies below the claimed fraction.")
    # the size at which the observed fraction's Wilson interval would clear the claim (when it could)
    p, needed = (alive / n if n else 0.0), None
    if p > at_least:
        needed = next((m for m in range(max(n, 1), 100_001) if wilson_interval(round(p * m), m, z)[0] >= at_least),
                      None)
    return Verdict(NOT_SHOWN, rule, n, alive, measurement, "the interval contains the claimed fraction.",
                   n_needed=needed if needed is not None and needed > n else None)


def magnitude(values, reference: float, *, factor: float = 10.0, min_alive: int = MIN_ALIVE,
              digits: int = 3) -> Verdict:
    """Rule *order of magnitude*: a source's number "about ``reference``" against an ensemble: *shown* when
    the survivors' median lies within ``×factor`` of it, *contradicted* when every survivor lies more than
    ``×factor`` away on the same side, *not shown* otherwise (or with fewer than ``min_alive`` survivors).
    Positive quantities (losses)."""
    if not (reference > 0 and factor > 1):
        raise ValueError(f"Invalid reference, factor: {reference}, {factor} (need reference > 0, factor > 1)")
    raw = np.asarray(values, float).ravel()
    x = finite_values(raw)
    rule = f"order of magnitude (within ×{factor:g} of the source's {reference:g})"
    if x.size < min_alive:
        return Verdict(NOT_SHOWN, rule, raw.size, x.size, f"{x.size} survivors", f"fewer than {min_alive} survived.",
                       n_needed=min_alive if x.size == raw.size else None)
    med = float(np.median(x))
    measurement = f"median {med:.{digits}g} (range {x.min():.{digits}g}–{x.max():.{digits}g}) vs {reference:g}"
    if reference / factor <= med <= reference * factor:
        return Verdict(SHOWN, rule, raw.size, x.size, measurement)
    if x.min() > reference * factor or x.max() < reference / factor:
        return Verdict(CONTRADICTED, rule, raw.size, x.size, measurement,
                       f"every survivor lies more than ×{factor:g} from the source's value.")
    return Verdict(NOT_SHOWN, rule, raw.size, x.size, measurement, f"the median lies more than ×{factor:g} away.")


def every(satisfied: int | None, n: int, alive: int, what: str, *, min_runs: int = MIN_ALIVE) -> Verdict:
    """Rule *universal claim* ("every run …"): *contradicted* by one surviving exception or one diverged run,
    *shown* when all ``n ≥ min_runs`` runs survived and satisfy it, *not shown* when nothing was measured
    (``satisfied`` is ``None``) or there are fewer than ``min_runs`` runs."""
    rule = "universal claim (any exception contradicts)"
    if satisfied is None:
        return Verdict(NOT_SHOWN, rule, n, alive, f"{what}: not measured", "no surviving run to measure.")
    measurement = f"{satisfied} of {n} {what}" + (f" ({n - alive} diverged)" if alive < n else "")
    if satisfied < n:
        return Verdict(CONTRADICTED, rule, n, alive, measurement, f"{n - satisfied} run(s) are exceptions.")
    if n < min_runs:
        return Verdict(NOT_SHOWN, rule, n, alive, measurement, f"fewer than {min_runs} runs.", n_needed=min_runs)
    return Verdict(SHOWN, rule, n, alive, measurement)


def every_step(exception_share: float | None, n: int, alive: int, what: str, *, min_runs: int = MIN_ALIVE) -> Verdict:
    """Rule *universal claim* over the recorded steps of ``n`` runs, from the share of steps that are
    exceptions (``None``/NaN: not measured): *contradicted* when the share is above 0, *shown* when it is 0 on
    ``alive ≥ min_runs`` surviving runs."""
    rule = "universal claim (any exception contradicts)"
    if exception_share is None or not math.isfinite(exception_share):
        return Verdict(NOT_SHOWN, rule, n, alive, f"{what}: not measured", "no surviving run to measure.")
    measurement = f"{exception_share:.2%} of the {what}"
    if exception_share > 0:
        return Verdict(CONTRADICTED, rule, n, alive, measurement, "some recorded steps are exceptions.")
    if alive < min_runs:
        return Verdict(NOT_SHOWN, rule, n, alive, measurement, f"fewer than {min_runs} surviving runs.",
                       n_needed=min_runs)
    return Verdict(SHOWN, rule, n, alive, measurement)


def check(holds: bool | None, rule: str, n: int, survivors: int, measurement: str, *,
          why_not: str = "a number it needs misses its threshold.") -> Verdict:
    """Rule *stated thresholds* on deterministic runs (no ensemble exists: one trajectory, an exact
    computation): ``holds`` ``True`` → *shown*, ``False`` → *contradicted* (with ``why_not``), ``None`` (a
    number is not finite: a diverged run) → *not shown*. ``rule`` names the thresholds."""
    if holds is None:
        return Verdict(NOT_SHOWN, rule, n, survivors, measurement, "a number it needs is not finite (a run diverged).")
    return Verdict(SHOWN, rule, n, survivors, measurement) if holds else \
        Verdict(CONTRADICTED, rule, n, survivors, measurement, why_not)


def no_divergence(alive: int, n: int, *, min_runs: int = MIN_ALIVE) -> Verdict:
    """Rule *no divergence*: the claim "no run diverges" is contradicted by one diverged run; shown when
    all of at least ``min_runs`` runs survived."""
    rule = "no divergence (any diverged run contradicts)"
    measurement = f"{n - alive} of {n} diverged"
    if alive < n:
        return Verdict(CONTRADICTED, rule, n, alive, measurement, f"{n - alive} run(s) diverged.")
    if n < min_runs:
        return Verdict(NOT_SHOWN, rule, n, alive, measurement, f"fewer than {min_runs} runs.", n_needed=min_runs)
    return Verdict(SHOWN, rule, n, alive, measurement)


def fraction_larger(k1: int, n1: int, k2: int, n2: int, *, z: float = 1.96, alive: int | None = None) -> Verdict:
    """Rule *fractions (Wilson 95 %)*: is the fraction ``k1/n1`` larger than ``k2/n2``? *Shown* when the
    Wilson intervals are disjoint with the first above, *contradicted* when disjoint the other way, else
    *not shown*, with the size (the same ``n`` on both sides, the observed fractions) at which they would
    be disjoint. ``alive``: the runs of the ``n1 + n2`` that did not diverge (default: all)."""
    (lo1, hi1), (lo2, hi2) = wilson_interval(k1, n1, z), wilson_interval(k2, n2, z)
    rule = "fractions, disjoint Wilson 95 % intervals"
    measurement = (f"{k1}/{n1} ({lo1:.2f}–{hi1:.2f}) vs {k2}/{n2} ({lo2:.2f}–{hi2:.2f})")
    alive = n1 + n2 if alive is None else alive
    if lo1 > hi2:
        return Verdict(SHOWN, rule, n1 + n2, alive, measurement)
    if hi1 < lo2:
        return Verdict(CONTRADICTED, rule, n1 + n2, alive, measurement, "the first fraction is the smaller.")
    p1, p2, needed = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0), None
    if p1 > p2:
        needed = next((2 * m for m in range(max(n1, n2, 1), 100_001)
                       if wilson_interval(round(p1 * m), m, z)[0] > wilson_interval(round(p2 * m), m, z)[1]), None)
    return Verdict(NOT_SHOWN, rule, n1 + n2, alive, measurement, "the intervals overlap.",
                   n_needed=needed if needed is not None and needed > n1 + n2 else None)


def grid_fraction_larger(first: tuple[int, int], second: tuple[int, int], cells: int, *,
                         alive: int | None = None) -> Verdict:
    """Rule *fractions (Wilson 95 %)* on the cells of two grids of one deterministic sweep: is ``first``'s good
    range larger than ``second``'s? Each count is a range robust to last-bit changes, ``(sure, possible)`` as
    :func:`count_above` gives it. *Shown* when ``first``'s sure count beats ``second``'s possible count by
    :func:`fraction_larger`; *contradicted* only when ``first``'s possible count loses to ``second``'s sure count
    (so a last bit flips neither word); else *not shown*. The cells of one grid are not independent draws — a
    denser grid of the same runs is not more evidence — so no ensemble size is offered when not shown."""
    up = fraction_larger(first[0], cells, second[1], cells, alive=alive)
    if up.word == SHOWN:
        return up
    down = fraction_larger(first[1], cells, second[0], cells, alive=alive)
    if down.word == CONTRADICTED:
        return down
    return Verdict(NOT_SHOWN, up.rule, up.n, up.survivors,
                   f"{first[0]}–{first[1]} vs {second[0]}–{second[1]} of {cells} cells",
                   "the counts' Wilson intervals overlap; the cells of one grid are not independent draws, so "
                   "replicates per cell (not a denser grid) would decide it.")


def claims_table(rows) -> str:
    """A Markdown table of ``(claim, Verdict)`` pairs: the claim, the measurement, the verdict, the rule
    with n and survivors, and the one sentence where it is not shown (or a remark a rule attached)."""
    esc = lambda t: str(t).replace("|", "\\|")
    out = ["| claim | measurement | verdict | rule (n, survivors) | why |", "|---|---|---|---|---|"]
    out += [f"| {esc(c)} | {esc(v.measurement)} | **{v.label()}** | {esc(v.rule)} (n = {v.n}, {v.survivors}) | "
            f"{esc(v.why)} |" for c, v in rows]
    return "\n".join(out)


#: The three words of the older band rules (:func:`against_reference`, :func:`ordered` read as "A smaller"):
#: *close* and *overlapping* are not shown; a published number outside even the widened band contradicts.
THREE_WORDS = {REPRODUCED: SHOWN, CLOSE: NOT_SHOWN, NOT_REPRODUCED: CONTRADICTED, NOT_CHECKABLE: NOT_SHOWN,
               SMALLER: SHOWN, OVERLAPPING: NOT_SHOWN, LARGER: CONTRADICTED}


def three_words(word_: str) -> str:
    """The three-word verdict of a band rule's outcome (:data:`THREE_WORDS`)."""
    if word_ not in THREE_WORDS:
        raise ValueError(f"Invalid verdict: {word_!r} (one of {', '.join(THREE_WORDS)})")
    return THREE_WORDS[word_]


# ----------------------------------------------------------------------------- the shape of a good region

@dataclass(frozen=True)
class RegionShape:
    """The good region (cells ≥ a threshold) of one (lr × λ) heatmap: ``cells`` of ``size`` (``finite`` of them
    not diverged); ``slope``
    of log best-λ against log lr over the ``rows`` lr rows that reach the threshold (``nan`` with fewer
    than 2); ``distance`` = 1 − the largest IoU of the region with an axis-aligned rectangle of cells
    (0: a rectangle; ``nan`` when the region is empty)."""

    cells: int
    size: int
    rows: int
    slope: float
    distance: float
    finite: int = 0          # cells with a finite score (not diverged)

    def text(self) -> str:
        slope = "—" if math.isnan(self.slope) else f"{self.slope:+.2f}"
        dist = "—" if math.isnan(self.distance) else f"{self.distance:.2f}"
        return f"{self.cells}/{self.size} good cells, slope {slope} over {self.rows} rows, off-rectangle {dist}"


def rectangle_distance(mask) -> float:
    """``1 − max IoU`` of the boolean grid ``mask`` with any axis-aligned rectangle of cells (``nan`` when
    the mask is empty): 0 for a rectangle, near 1 for a thin diagonal. Exhaustive over rectangles, using
    2-D prefix sums (grids up to a few dozen rows and columns)."""
    m = np.asarray(mask, bool)
    if m.ndim != 2:
        raise ValueError(f"Invalid mask: {m.ndim} dimensions (need 2)")
    total = int(m.sum())
    if total == 0:
        return math.nan
    pre = np.zeros((m.shape[0] + 1, m.shape[1] + 1), np.int64)
    pre[1:, 1:] = m.cumsum(0).cumsum(1)
    best = 0.0
    rows, cols = m.shape
    for r0 in range(rows):
        for r1 in range(r0 + 1, rows + 1):
            # inside[c0, c1] = good cells of rows r0..r1-1 and columns c0..c1-1
            band = pre[r1] - pre[r0]
            inside = band[None, :] - band[:, None]
            area = (r1 - r0) * (np.arange(cols + 1)[None, :] - np.arange(cols + 1)[:, None])
            ok = area > 0
            iou = np.where(ok, inside / np.where(ok, total + area - inside, 1), 0.0)
            best = max(best, float(iou.max()))
    return 1.0 - best


def region_shape(scores, lrs, lams, threshold: float, *, border: float = 0.0) -> RegionShape:
    """:class:`RegionShape` of ``scores`` (lr rows × λ columns; higher is better, NaN = diverged). A row's
    best λ is the geometric mean of its cells within ``border`` of the row's best (near-ties an argmax
    could pick either way); rows whose best is below ``threshold`` have no best λ."""
    s = np.asarray(scores, float)
    lrs, lams = np.asarray(lrs, float), np.asarray(lams, float)
    if s.shape != (lrs.size, lams.size):
        raise ValueError(f"Invalid scores: shape {s.shape} (need {(lrs.size, lams.size)} = lr × λ)")
    good = np.isfinite(s) & (s >= threshold)
    xs, ys = [], []
    for i in range(lrs.size):
        row = s[i]
        if not good[i].any():
            continue
        near = np.isfinite(row) & (row >= np.nanmax(row) - border)
        xs.append(math.log10(lrs[i]))
        ys.append(float(np.mean(np.log10(lams[near]))))
    slope = float(np.polyfit(xs, ys, 1)[0]) if len(set(xs)) >= 2 else math.nan
    return RegionShape(int(good.sum()), int(s.size), len(xs), slope, rectangle_distance(good),
                       int(np.isfinite(s).sum()))


def decoupling(coupled: RegionShape, decoupled: RegionShape, *, margin: float = 0.1, flat: float = 0.5,
               min_rows: int = 3) -> Verdict:
    """Rule *decoupling (region shape)*, seed 001's claim "the parameters are decoupled for AdamW": the
    decoupled optimizer's good region is closer to an axis-aligned rectangle than the coupled one's by at
    least ``margin`` and its best λ moves less with lr (``|slope|`` smaller, or both below ``flat``).
    *Contradicted* in the mirror case; *not shown* otherwise — in particular when both regions are already
    rectangles (a band the grid cannot tell apart) or one spans fewer than ``min_rows`` lr rows (a slope
    through two rows' best cells is two argmaxes, not a shape). ``n`` counts the cells of both grids,
    the survivors their finite (not diverged) cells."""
    rule = f"decoupling: off-rectangle distance (margin {margin:g}) and |slope of log best-λ vs log lr|"
    n = coupled.size + decoupled.size
    alive = coupled.finite + decoupled.finite
    measurement = f"coupled {coupled.text()}; decoupled {decoupled.text()}"
    values = (coupled.slope, decoupled.slope, coupled.distance, decoupled.distance)
    if any(math.isnan(v) for v in values) or min(coupled.rows, decoupled.rows) < min_rows:
        return Verdict(NOT_SHOWN, rule, n, alive, measurement,
                       f"a good region reaches fewer than {min_rows} lr rows: its shape is not measured on this grid.")

    def better(x, y):
        moves_less = abs(x.slope) < abs(y.slope) or max(abs(x.slope), abs(y.slope)) < flat
        return x.distance + margin <= y.distance and moves_less

    if better(decoupled, coupled):
        return Verdict(SHOWN, rule, n, alive, measurement)
    if better(coupled, decoupled):
        return Verdict(CONTRADICTED, rule, n, alive, measurement,
                       "the coupled optimizer's good region is the more axis-aligned one.")
    why = ("both good regions are within the margin of the same shape"
           + (" (both near rectangles: the grid does not separate them)." if max(values[2:]) < margin else "."))
    return Verdict(NOT_SHOWN, rule, n, alive, measurement, why)
