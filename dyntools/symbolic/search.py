"""Exact counterexample search for a claimed identity ``expr == 0``.

The search substitutes exact rational points into the difference ``expr`` and evaluates it
exactly; a point where the value is a provably non-zero number *refutes* the identity. It never
verifies anything (that is the job of exact simplification).

Where the points come from
--------------------------
Every free symbol ``s`` gets a *domain*: the set given for it in the claim's ``domains`` (a sympy
``Set`` or a relation such as ``beta < 1``), intersected with the set its sympy assumptions imply
(``integer=True, positive=True`` → {1, 2, …}; ``positive=True`` → (0, ∞); ``nonnegative`` →
[0, ∞); otherwise ℝ). Its *candidates* are, in this order: the closed finite endpoints of the
domain, small integers and simple fractions (0, 1, −1, 1/2, 2, 1/3, …) that lie in it, evenly
spaced rationals inside a bounded interval, then a few seeded random rationals.

Points are enumerated in order of increasing *rank* (the sum over the symbols of the candidate's
position in its list), so the first counterexample found is the smallest one in that order.

Sums, products and indexed symbols
----------------------------------
The point is applied *before* ``doit()``: with ``t = 2`` the symbolic sum
``Σ_{i=0}^{t−1} β^i g_{t−i}`` becomes ``β⁰g₂ + β¹g₁`` and the indexed symbols ``g[1]``, ``g[2]``
that appear are assigned values in a second stage (same rule, from the domain of the
``IndexedBase`` ``g`` when one is given).

Matrix symbols of symbolic size (``MatrixSymbol("A", n, n)``) are handled the same way: the
dimension ``n`` is a first-stage symbol, the matrix is made explicit at ``n = 2`` and its entries
``A[i, j]`` are second-stage variables.

Exactness
---------
A value is accepted as non-zero only when it is a non-zero sympy ``Rational`` or when a certified
interval enclosure (mpmath ``iv``, :func:`dyntools.symbolic.interval.enclose`) excludes 0.
Points where the expression is undefined (division by zero, ``nan``) are skipped.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.matrices.expressions.matexpr import MatrixElement

from dyntools.time_budget import clock

#: simple numbers in the order they are tried (smallest first)
_SIMPLE = [sp.Integer(0), sp.Integer(1), sp.Integer(-1), sp.Rational(1, 2), sp.Integer(2), sp.Integer(-2),
           sp.Rational(-1, 2), sp.Rational(1, 3), sp.Integer(3), sp.Rational(2, 3), sp.Rational(1, 4),
           sp.Rational(3, 4), sp.Integer(-3), sp.Rational(3, 2), sp.Rational(1, 10), sp.Rational(9, 10),
           sp.Integer(4), sp.Integer(5)]


class DomainError(ValueError):
    """An assumption that sympy cannot turn into a set of numbers."""


def as_domain(symbol, spec) -> sp.Set:
    """A sympy ``Set`` for ``symbol`` from ``spec``: a ``Set`` or a relation / ``And`` of relations
    in ``symbol`` alone (``beta < 1``, ``sp.And(0 < beta, beta < 1)``). Raises :class:`DomainError`."""
    if isinstance(spec, sp.Set):
        return spec
    if isinstance(spec, (sp.core.relational.Relational, sp.And, sp.Or)):
        base = getattr(symbol, "label", symbol)
        x = sp.Dummy("x", real=True)
        rel = spec.subs(base, x)
        if rel.free_symbols - {x}:
            raise DomainError(f"the relation {spec} involves other symbols than {base}")
        try:
            return rel.as_set()
        except Exception as exc:  # sympy raises several kinds here
            raise DomainError(f"sympy cannot turn {spec} into a set ({type(exc).__name__})") from None
    raise DomainError(
        f"{spec!r} is not a sympy Set or relation (use e.g. sp.Interval.open(0, 1), sp.Range(1, sp.oo) "
        f"or {symbol} < 1)"
    )


def assumed_domain(symbol) -> sp.Set:
    """The set of real values a symbol's sympy assumptions allow."""
    s = symbol.base if isinstance(symbol, sp.Indexed) else symbol
    if isinstance(s, sp.IndexedBase):
        s = s.label
    if getattr(s, "is_integer", None):
        if s.is_positive:
            return sp.Range(1, sp.oo)
        if s.is_nonnegative:
            return sp.Range(0, sp.oo)
        if s.is_negative:
            return sp.Range(-1, -sp.oo, -1)
        return sp.S.Integers
    if getattr(s, "is_positive", None):
        return sp.Interval.open(0, sp.oo)
    if getattr(s, "is_nonnegative", None):
        return sp.Interval(0, sp.oo)
    if getattr(s, "is_negative", None):
        return sp.Interval.open(-sp.oo, 0)
    if getattr(s, "is_nonpositive", None):
        return sp.Interval(-sp.oo, 0)
    return sp.S.Reals


def _inside(domain: sp.Set, value) -> bool:
    try:
        return domain.contains(value) is sp.true
    except Exception:
        return False


def candidates(domain: sp.Set, *, count: int = 8, seed: str = "") -> list:
    """Exact candidate values in ``domain``, simplest first (see the module docstring); memoized (the
    screen and the exact search of one identity ask for the same lists)."""
    return list(_candidates(domain, count, seed))


@functools.lru_cache(maxsize=1024)
def _candidates(domain: sp.Set, count: int, seed: str) -> tuple:
    return tuple(_candidate_list(domain, count=count, seed=seed))


def _candidate_list(domain: sp.Set, *, count: int = 8, seed: str = "") -> list:
    out: list = []

    def add(v):
        v = sp.nsimplify(v) if isinstance(v, float) else sp.sympify(v)
        if v.is_Rational and v not in out and _inside(domain, v):
            out.append(v)

    if isinstance(domain, sp.FiniteSet):
        for v in sorted(domain, key=lambda v: (abs(v), v) if v.is_real else (0, 0)):
            add(v)
        return out[:count]
    if isinstance(domain, sp.Union):
        parts = [_candidate_list(d, count=count, seed=seed) for d in domain.args]
        for v in itertools.chain.from_iterable(itertools.zip_longest(*parts)):
            if v is not None:
                add(v)
        return out[:count]
    integer = isinstance(domain, sp.Range) or domain.is_subset(sp.S.Integers) is True
    if integer:
        for k in itertools.islice(itertools.count(), 400):
            for v in (k, -k):
                add(v)
            if len(out) >= min(count, 6):
                break
        return out
    lo, hi = domain.inf, domain.sup
    lo = lo if lo.is_number else -sp.oo  # a symbolic bound: search as if unbounded (points are then
    hi = hi if hi.is_number else sp.oo   # filtered by membership, which fails unless decided)
    for end in (lo, hi):
        if end.is_finite and end.is_Rational:
            add(end)  # only when the endpoint belongs to the domain
    for v in _SIMPLE:
        add(v)
    if lo.is_finite and hi.is_finite and lo.is_Rational and hi.is_Rational:
        for m in (2, 3, 4, 10):
            for k in range(1, m):
                add(lo + (hi - lo) * sp.Rational(k, m))
    rng = random.Random(f"{seed}|{domain}")
    a = lo if lo.is_finite else min(sp.Integer(-10), hi - 10) if hi.is_finite else sp.Integer(-10)
    b = hi if hi.is_finite else max(sp.Integer(10), lo + 10) if lo.is_finite else sp.Integer(10)
    for _ in range(4):
        if len(out) >= count:
            break
        add(a + (b - a) * sp.Rational(rng.randint(1, 96), 97))
    return out[:count]


def ranked_points(variables: list, lists: list[list], limit: int):
    """Points (dicts) over ``variables`` in order of increasing total rank, at most ``limit``."""
    k = len(variables)
    if k == 0:
        yield {}
        return
    if any(not lst for lst in lists):
        return
    sizes = [len(lst) for lst in lists]
    emitted = 0
    for total in range(sum(sizes) - k + 1):
        for idx in _compositions(total, sizes):
            yield {v: lists[j][i] for j, (v, i) in enumerate(zip(variables, idx))}
            emitted += 1
            if emitted >= limit:
                return


def _compositions(total: int, sizes: list[int]):
    """Index tuples with entries < sizes[j] summing to ``total`` (lexicographic)."""
    if len(sizes) == 1:
        if total < sizes[0]:
            yield (total,)
        return
    for first in range(min(total, sizes[0] - 1) + 1):
        for rest in _compositions(total - first, sizes[1:]):
            yield (first, *rest)


def substitute(expr, point: dict):
    """``expr`` at ``point``, with sums/products/derivatives evaluated *after* the substitution
    (and the point applied again to indexed symbols the evaluation produced). A matrix expression
    whose shape became numbers (``MatrixSymbol("A", n, n)`` at n = 2) is made explicit."""
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(lambda e: substitute(e, point))
    value = sp.sympify(expr).subs(point)
    if isinstance(value, sp.MatrixExpr):
        if not all(dim.is_Integer for dim in value.shape):
            raise ValueError("the point leaves a matrix dimension symbolic")
        return substitute(value.as_explicit(), point)
    if value.has(sp.Sum, sp.Product, sp.Derivative, sp.Integral):
        value = value.doit()
    return value.subs(point) if point else value


def search_variables(expr) -> list:
    """Free symbols to assign in the first stage (indexed-base labels and bound indices excluded),
    sorted by name for reproducibility."""
    expr_atoms = expr if not isinstance(expr, sp.MatrixBase) else sp.Tuple(*expr)
    labels = {b.label for b in expr_atoms.atoms(sp.IndexedBase)}
    syms = {s for s in expr_atoms.free_symbols if isinstance(s, sp.Symbol) and s not in labels}
    for m in expr_atoms.atoms(sp.MatrixSymbol):  # symbolic dimensions of matrix symbols
        syms |= {s for dim in m.shape for s in sp.sympify(dim).free_symbols}
    return sorted(syms, key=lambda s: s.name)


def _indexed_variables(value) -> list:
    atoms = value if not isinstance(value, sp.MatrixBase) else sp.Tuple(*value)
    found = [a for a in atoms.atoms(sp.Indexed) if all(ix.is_Integer for ix in a.indices)]
    found += [a for a in atoms.atoms(MatrixElement) if a.i.is_Integer and a.j.is_Integer]
    return sorted(found, key=sp.default_sort_key)


def exact_nonzero(value) -> bool | None:
    """True when ``value`` is provably a non-zero number, False when it is exactly the number 0,
    None otherwise (not a number, undefined, or too close to 0 for the enclosure)."""
    if isinstance(value, sp.MatrixBase):
        verdicts = [exact_nonzero(v) for v in value]
        if any(v is True for v in verdicts):
            return True
        return False if all(v is False for v in verdicts) else None
    value = sp.sympify(value)
    if value.free_symbols or value.atoms(AppliedUndef) or value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        return None
    if value.is_Rational:
        return value != 0
    if value.is_zero is True:
        return False
    if not value.is_number:
        return None
    try:
        from dyntools.symbolic.interval import enclose

        box = enclose(value)
        if box.a > 0 or box.b < 0:
            return True
    except Exception:
        pass
    return None  # an enclosure containing 0: undecided here (never a counterexample)


@dataclass
class Counterexample:
    point: dict
    value: object

    def as_dict(self) -> dict:
        return {**{str(k): v for k, v in self.point.items()}, "difference": self.value}


def _value_of(value):
    if isinstance(value, sp.MatrixBase):
        return value
    if value.is_Float:
        return sp.nsimplify(value)
    return value if value.is_Rational else sp.expand(sp.radsimp(value))


def find_counterexample(expr, domains: dict | None = None, *, limit: int = 200, inner_limit: int = 64,
                        seconds: float = 1.0, seed: str = "", stats: dict | None = None) -> Counterexample | None:
    """Search exact points where ``expr`` (an expression or matrix) is a provably non-zero number.

    ``domains`` maps symbols (or their names, or an ``IndexedBase``) to sympy sets. At most
    ``limit`` first-stage points and ``inner_limit`` indexed assignments per point are tried, and
    the search stops after ``seconds`` (processor time, :func:`dyntools.time_budget.clock`: a search budget,
    the same on a busy machine; a stop sets ``stats["stopped"]``
    when ``stats`` is given). Returns the first counterexample in rank order or None (which proves nothing)."""
    domains = dict(domains or {})
    start = clock()
    variables = search_variables(expr)
    if isinstance(expr, sp.MatrixBase):
        if any(sp.sympify(e).atoms(AppliedUndef) for e in expr):
            return None
    elif sp.sympify(expr).atoms(AppliedUndef):
        return None
    lists = [candidates(domain_of(v, domains), seed=seed + str(v)) for v in variables]
    for point in ranked_points(variables, lists, limit):
        if clock() - start > seconds:
            return _stopped(stats)
        try:
            value = substitute(expr, point)
        except Exception:  # undefined at this point, or sympy cannot evaluate it: not a counterexample
            continue
        inner = _indexed_variables(value)
        inner_lists = [candidates(domain_of(v, domains), count=6, seed=seed + str(v)) for v in inner]
        for extra in ranked_points(inner, inner_lists, inner_limit if inner else 1):
            try:
                final = value.subs(extra) if extra else value
                nonzero = exact_nonzero(final)
            except Exception:
                continue
            if nonzero is True:
                return Counterexample({**point, **extra}, _value_of(final))
            if clock() - start > seconds:
                return _stopped(stats)
    return None


def _stopped(stats: dict | None) -> None:
    """A search cut by its time limit: no counterexample, and the record that the search did not finish."""
    if stats is not None:
        stats["stopped"] = True
    return None


def domain_of(variable, domains: dict) -> sp.Set:
    """The search domain of a symbol or indexed symbol (see the module docstring)."""
    keys = [variable, str(variable)]
    if isinstance(variable, sp.Indexed):
        keys += [variable.base, str(variable.base), variable.base.label]
    base = assumed_domain(variable)
    for key in keys:
        if key in domains:
            return as_domain(variable, domains[key]).intersect(base)
    return base


def refine_piecewise(expr, domains: dict):
    """Replace the conditions of ``Piecewise`` branches that the domains decide: a relation in one
    symbol that holds for no value of its domain becomes False, for all of them True (e.g. sympy's
    ``Eq(beta, 1)`` branch of a geometric sum when β ∈ (0, 1)). Sound: only decided conditions
    are replaced."""
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(lambda e: refine_piecewise(e, domains))
    expr = sp.sympify(expr)
    if not expr.has(sp.Piecewise):
        return expr
    decided = {}
    for pw in expr.atoms(sp.Piecewise):
        for _, cond in pw.args:
            for rel in cond.atoms(sp.core.relational.Relational):
                syms = [x for x in rel.free_symbols if isinstance(x, sp.Symbol)]
                if len(syms) != 1 or rel in decided:
                    continue
                domain = domain_of(syms[0], domains)
                dummy = sp.Dummy("x", real=True)
                try:
                    where = rel.subs(syms[0], dummy).as_set().intersect(domain)
                except Exception:
                    continue
                if where is sp.S.EmptySet:
                    decided[rel] = sp.false
                elif where == domain:
                    decided[rel] = sp.true
    return expr.xreplace(decided) if decided else expr


# ----------------------------------------------------------------------------- numeric screen


def _screenable(expr) -> bool:
    """Whether every entry of ``expr`` is a closed-form expression NumPy can evaluate (no sums,
    indexed symbols, matrix symbols or undefined functions, which only the exact search handles)."""
    atoms = sp.Tuple(*expr) if isinstance(expr, sp.MatrixBase) else sp.sympify(expr)
    return not (atoms.has(sp.Sum, sp.Product, sp.Derivative, sp.Integral, sp.Indexed, sp.MatrixSymbol)
                or atoms.atoms(AppliedUndef))


def screen_counterexample(expr, domains: dict | None = None, *, limit: int = 2048, seconds: float = 0.5,
                          seed: str = "", confirm: int = 8, stats: dict | None = None) -> Counterexample | None:
    """The exact search's points, screened in floating point first.

    The same candidate points as :func:`find_counterexample` (simplest first, including its seeded
    random rationals), at most ``limit`` of them, are evaluated in vectorized float64 (``lambdify``);
    only the points where the float value is finite and not negligibly small are then evaluated
    *exactly*, in rank order, at most ``confirm`` of them. The float value never decides anything:
    a point counts only when its exact value is provably non-zero (:func:`exact_nonzero`), so the
    answer is the first exact counterexample among the screened points — typically found in
    milliseconds where the exact search would spend a second per hundred points. Returns None when
    nothing was confirmed or ``expr`` is not screenable (sums, indexed symbols: exact search only)."""
    import numpy as np

    if not _screenable(expr):
        return None
    start = clock()
    domains = dict(domains or {})
    entries = list(expr) if isinstance(expr, sp.MatrixBase) else [sp.sympify(expr)]
    variables = search_variables(expr)
    lists = [candidates(domain_of(v, domains), seed=seed + str(v)) for v in variables]
    ranks = _ranked_indices([len(lst) for lst in lists], limit)
    if ranks.shape[0] == 0:
        return None
    try:
        func = sp.lambdify(variables, entries, modules="numpy")
        columns = [np.array([float(v) for v in lst])[ranks[:, j]] for j, lst in enumerate(lists)]
        with np.errstate(all="ignore"):
            values = [np.broadcast_to(np.asarray(e, dtype=complex), (ranks.shape[0],)) for e in func(*columns)]
    except Exception:  # something NumPy cannot evaluate: leave it to the exact search
        return None
    with np.errstate(all="ignore"):
        size = np.max([np.abs(v) for v in values], axis=0)
    promising = np.flatnonzero(np.isfinite(size) & (size > 1e-9))
    for k, i in enumerate(promising[:confirm]):
        if k and clock() - start > seconds:  # the first promising point is always checked
            return _stopped(stats)
        point = {v: lists[j][ranks[i, j]] for j, v in enumerate(variables)}
        try:
            value = substitute(expr, point)
            nonzero = exact_nonzero(value)
        except Exception:
            continue
        if nonzero is True:
            return Counterexample(point, _value_of(value))
    return None


def _ranked_indices(sizes: list[int], limit: int):
    """The index tuples of :func:`ranked_points` as an int array (count × len(sizes)), at most ``limit``."""
    import numpy as np

    if not sizes:
        return np.zeros((1, 0), dtype=np.int64)
    if min(sizes) == 0:
        return np.zeros((0, len(sizes)), dtype=np.int64)
    rows = []
    for total in range(sum(sizes) - len(sizes) + 1):
        for idx in _compositions(total, sizes):
            rows.append(idx)
            if len(rows) >= limit:
                return np.array(rows, dtype=np.int64)
    return np.array(rows, dtype=np.int64)
