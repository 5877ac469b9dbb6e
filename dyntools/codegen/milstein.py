"""Milstein for a symbolic model's label-noise SDE: whether its noise commutes, and the generated correction.

The label-noise SDE of a model with one output (:func:`dyntools.sde_models.label_noise_sde`) has the noise
``σ(θ) = c φ_θ(X)ᵀ`` (p × n, ``c = √(ηδ̃)``): column ``a`` is ``c ∇_θ h(x_a)``. With the operators
``L^a = Σ_k σ_{ka} ∂/∂θ_k``::

    L^a σ^b = c² ∇²h(x_b) ∇h(x_a)        (the Hessian of h at x_b applied to the gradient at x_a).

**Commutative noise** means ``L^a σ^b = L^b σ^a`` for every pair of columns, identically in θ, i.e. the
commutator ``C(θ; x_a, x_b) = ∇²h(x_b)∇h(x_a) − ∇²h(x_a)∇h(x_b)`` vanishes. Then the double Itô integrals
need no Lévy areas (``I_ab + I_ba = ΔW_a ΔW_b``) and the Milstein scheme (strong order 1) is

    θ ← θ + b h + σ ΔW + ½ Σ_{a,b} (L^a σ^b)(ΔW_a ΔW_b − δ_ab h),

whose last term, for this σ, is one Hessian–vector product per data point::

    ½ c² Σ_i ∇²h(x_i) (ΔW_i g − h ∇h(x_i)),      g = Σ_a ΔW_a ∇h(x_a) = φᵀ ΔW.

:func:`decide` answers the commutativity question **exactly** (sympy, never by sampling): first for any
data (``C(θ; x, x') ≡ 0`` with symbolic inputs ``x, x'`` — one noise column, additive noise, the
diagonal networks ``h = Σ_j P(θ_{·j}) x_j``), else for the data at hand (the rows of X as exact binary
rationals, pair by pair, identical rows skipped). A pair that fails is certified by a point θ (rational)
where a component of ``C`` is non-zero, evaluated exactly or to 30 digits guaranteed by sympy's ``evalf``
(``strict``); if neither a proof of zero nor such a point is found within the budget the answer is
"undecided", and Milstein is refused as for non-commutative noise. Derivatives of ``relu`` are
``Heaviside`` and ``DiracDelta``; the latter is 0 here, as in the generated code (almost everywhere).

:func:`correction_source` prints ``milstein_correction(θ, X, dw, h, out)`` (numba) writing
``½ Σ_i ∇²h(x_i)(dw_i g − h ∇h(x_i))`` (the term above without ``c²``, which the SDE applies), from the
same derived Jacobian and Hessian-direction expressions as the model's other code; its NumPy twin is
:meth:`dyntools.models.symbolic.SymbolicModel.milstein_correction_np`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from dyntools.codegen.derive import Derivation, direction_symbols
from dyntools.time_budget import ProofTimeout, time_limit


@dataclass
class Commutativity:
    """The answer of :func:`decide`.

    holds : True (commutative), False (a failing pair, certified), None (undecided within the budget)
    scope : "any data" or "this data" (where ``holds`` is True)
    pair : (a, b) data points (= noise columns) where ``L^a σ^b ≠ L^b σ^a`` (``holds`` False)
    component : the parameter (user's name) of a non-zero component of the commutator
    point : the parameter point (user's names → exact values) where it is non-zero, and ``value`` there
    """

    holds: bool | None
    reason: str
    scope: str = ""
    pair: tuple[int, int] | None = None
    component: str | None = None
    point: dict = field(default_factory=dict)
    value: str | None = None


def _no_delta(expr):
    return expr.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.S.Zero)


def commutator(der: Derivation, jac, hess_dir) -> tuple[list, list, list]:
    """``(C, x, x')``: the components ``C_m(θ; x, x') = (∇²h(x')∇h(x) − ∇²h(x)∇h(x'))_m`` in the
    inputs ``x`` and a second copy ``x'`` (coordinatewise: per coordinate, ``m`` over the blocks)."""
    xs = list(der.inputs)
    xp = [sp.Symbol(f"{x}_b", real=True) for x in xs]
    to_b = dict(zip(xs, xp))
    v = direction_symbols(len(der.theta))
    (row,), (hv,) = jac, hess_dir
    row_b = [e.xreplace(to_b) for e in row]
    at_b_along_a = [e.xreplace({**to_b, **dict(zip(v, row))}) for e in hv]
    at_a_along_b = [e.xreplace(dict(zip(v, row_b))) for e in hv]
    return [_no_delta(p - q) for p, q in zip(at_b_along_a, at_a_along_b)], xs, xp


def _is_zero(expr) -> bool:
    """True when ``expr`` is proved identically zero (expansion, then sympy's simplify)."""
    if expr == 0 or sp.expand(expr) == 0:
        return True
    return sp.simplify(expr) == 0


def _exact_row(row) -> list:
    return [sp.Rational(*Fraction(float(v)).as_integer_ratio()) for v in row]


def _points(symbols, tries: int = 3):
    """Deterministic rational points, one value per symbol (small, non-zero, distinct numerators)."""
    rng = np.random.default_rng(20250425)
    for _ in range(tries):
        yield {s: sp.Rational(int(rng.choice([-1, 1]) * rng.integers(1, 10)), int(rng.integers(2, 8)))
               for s in symbols}


def _certified_nonzero(expr) -> str | None:
    """The value of the constant ``expr`` when it is certified non-zero (exactly, or 30 guaranteed digits)."""
    value = sp.sympify(expr)
    if value.is_Rational:
        return None if value == 0 else str(value)
    try:
        approx = value.evalf(30, strict=True)
    except Exception:                      # PrecisionExhausted (value too close to 0) or not a number
        return None
    return None if approx == 0 or not approx.is_Number else sp.sstr(approx, full_prec=False)


def _witness(components, theta, name_of):
    for point in _points(theta):
        for m, e in enumerate(components):
            value = _certified_nonzero(e.xreplace(point))
            if value is not None:
                return m, {name_of(t): point[t] for t in theta}, value
    return None


def decide(der: Derivation, jac, hess_dir, X, name_of, seconds: float | None = None) -> Commutativity:
    """Is the label-noise noise ``c φ_θ(X)ᵀ`` commutative on the data ``X`` (see the module docstring)?

    Coordinatewise models: the commutator is per coordinate; the pair ``(a, b)`` is checked at every
    coordinate ``j`` with the rows' entries ``X[a, j]``, ``X[b, j]``."""
    X = np.asarray(X, dtype=np.float64)
    theta = list(der.theta)
    try:
        with time_limit(seconds):
            C, xs, xp = commutator(der, jac, hess_dir)
            if all(_is_zero(e) for e in C):
                return Commutativity(True, "L^a σ^b = L^b σ^a for any two inputs (symbolic x, x')", "any data")
            rows = np.unique(X, axis=0, return_index=True)[1]
            rows = sorted(int(r) for r in rows)
            if len(rows) == 1:
                return Commutativity(True, "all data points are equal (one distinct noise column up to copies)",
                                     "this data")
            coordinatewise = der.mode == "coordinatewise"
            for ia, a in enumerate(rows):
                for b in rows[ia + 1:]:
                    places = range(X.shape[1]) if coordinatewise else [None]
                    for j in places:
                        if coordinatewise:
                            subs = {xs[0]: _exact_row([X[a, j]])[0], xp[0]: _exact_row([X[b, j]])[0]}
                        else:
                            subs = dict(zip(xs + xp, _exact_row(X[a]) + _exact_row(X[b])))
                        comps = [e.xreplace(subs) for e in C]
                        if all(_is_zero(e) for e in comps):
                            continue
                        found = _witness(comps, theta, name_of)
                        if found is None:
                            return Commutativity(None, f"neither proved zero nor certified non-zero at data "
                                                       f"points {a} and {b}")
                        m, point, value = found
                        where = f" (coordinate {j})" if coordinatewise else ""
                        comp = name_of(theta[m]) + (f"_{j}" if coordinatewise else "")
                        if coordinatewise:
                            point = {f"{k}_{j}": v for k, v in point.items()}
                        shown = value if len(value) <= 24 else f"{float(sp.sympify(value)):.12g}"
                        return Commutativity(False, f"L^{a}σ^{b} ≠ L^{b}σ^{a}: the commutator's ∂/∂{comp} "
                                                    f"component is {shown} at {_show(point)}{where}",
                                             pair=(a, b), component=comp, point=point, value=value)
            return Commutativity(True, "L^a σ^b = L^b σ^a for every pair of data points (exact data)",
                                 "this data")
    except ProofTimeout:
        return Commutativity(None, f"not decided within the budget of {seconds:g} s")


def _show(point: dict) -> str:
    items = list(point.items())
    text = ", ".join(f"{k} = {v}" for k, v in items[:6])
    return text + (", …" if len(items) > 6 else "")


# --------------------------------------------------------------------------------------- code

_HEADER = '''"""Generated by dyntools.codegen.milstein (version {version}) for the model {name!r}: do not edit.
The Milstein correction of the label-noise SDE (commutative noise). Cache key {key}."""
import math

import numpy
from numba import njit

'''

#: bump when the generated code changes (part of the cache kind)
VERSION = 1


def correction_source(der: Derivation, jac, hess_dir, show, *, name: str, key: str, fastmath: str) -> str:
    """``milstein_correction(theta, X, dw, h, out)``: ``out = ½ Σ_i ∇²h(x_i)(dw_i g − h ∇h(x_i))``,
    ``g = Σ_i dw_i ∇h(x_i)`` (two passes over the data; coordinatewise: loops over ``j``, θ in blocks)."""
    (row,), (hv,) = jac, hess_dir
    v = direction_symbols(len(der.theta))
    dense = der.mode == "dense"
    c = len(der.theta)
    ind = "        " if dense else "            "
    if dense:
        where = [f"{m}" for m in range(c)]
        head = ["    n = X.shape[0]", f"    g = numpy.zeros({c})"]
        head += [f"    {t} = theta[{m}]" for m, t in enumerate(der.theta)]
        head += [f"    for m in range({c}):", "        out[m] = 0.0"]
        loop = ["    for i in range(n):"] + [f"        {x} = X[i, {k}]" for k, x in enumerate(der.inputs)]
    else:
        where = [f"{m} * d + j" for m in range(c)]
        head = ["    n, d = X.shape", f"    g = numpy.zeros({c} * d)",
                f"    for m in range({c} * d):", "        out[m] = 0.0"]
        loop = ["    for i in range(n):", "        for j in range(d):", f"            {der.inputs[0]} = X[i, j]"]
        loop += [f"            {t} = theta[{m} * d + j]" for m, t in enumerate(der.theta)]
    jreps, jred = sp.cse(list(row), symbols=sp.numbered_symbols("a"), optimizations="basic")
    hreps, hred = sp.cse(list(hv), symbols=sp.numbered_symbols("e"), optimizations="basic")
    jlines = [f"{ind}{s} = {show(e)}" for s, e in jreps]
    lines = [f"@njit(cache=True, fastmath={fastmath}, error_model=\"numpy\")",
             "def milstein_correction(theta, X, dw, h, out):"] + head
    lines += loop + jlines + [f"{ind}g[{w}] += dw[i] * ({show(e)})" for w, e in zip(where, jred)]
    lines += loop + jlines + [f"{ind}{vm} = dw[i] * g[{w}] - h * ({show(e)})" for vm, w, e in zip(v, where, jred)]
    lines += [f"{ind}{s} = {show(e)}" for s, e in hreps]
    lines += [f"{ind}out[{w}] += 0.5 * ({show(e)})" for w, e in zip(where, hred)]
    return _HEADER.format(version=VERSION, name=name, key=key) + "\n".join(lines) + "\n"
