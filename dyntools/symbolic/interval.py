"""Certified interval arithmetic (mpmath ``iv``) for inequalities over boxes.

:class:`IntervalCheck` proves ``f(x) > c`` (or ``<``, ``>=``, ``<=``) for *every* point of a box
``x ∈ [a₁, b₁] × … × [a_k, b_k]`` by branch and bound:

1. evaluate an enclosure ``F(X) ⊇ {f(x) : x ∈ X}`` of the box ``X`` — the natural interval
   extension, intersected with the mean-value form ``f(m) + Σ_j ∂_j f(X) (X_j − m_j)``
   (``m`` the centre), which is tight near extrema where the natural extension is not;
2. if ``F(X)`` lies strictly on the right side of ``c`` the box is certified;
3. if the point enclosure ``F([m, m])`` lies strictly on the wrong side, ``m`` is a
   **counterexample** (certified: the violation is proved at that point);
4. otherwise bisect the box along its relatively widest side and continue.

The sympy expression is compiled into a tree of interval operations in which every constant is
an interval too (rationals as exact quotients of integers, decimals as the enclosure of their
decimal value), so no floating-point rounding escapes the enclosure. The result is certified
(up to the correctness of mpmath's outward-rounded interval arithmetic), not sampled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp
from mpmath import iv, mpf

DPS = 30


def to_interval(value):
    """An ``iv.mpf`` enclosing an exact sympy number / decimal string / int."""
    if isinstance(value, iv.mpf):
        return value
    if isinstance(value, str):
        return iv.mpf(value)
    value = sp.nsimplify(value) if isinstance(value, float) else sp.sympify(value)
    if isinstance(value, sp.Integer):
        return iv.mpf(int(value))
    if isinstance(value, sp.Rational):
        return iv.mpf(int(value.p)) / iv.mpf(int(value.q))
    if isinstance(value, sp.Float):
        return iv.mpf(str(value))
    return compile_interval(value, [])()


def compile_interval(expr, variables):
    """Compile a sympy expression (+, ×, integer powers, sqrt, exp, log, abs) into
    ``f(*intervals) -> iv.mpf``."""
    expr = sp.sympify(expr)
    index = {v: k for k, v in enumerate(variables)}

    def build(e):
        if e in index:
            k = index[e]
            return lambda args: args[k]
        if e.is_Number or e.is_NumberSymbol:
            c = to_interval(e) if e.is_Number else iv.mpf(sp.N(e, DPS + 10).evalf(DPS + 10).__str__())
            if e.is_NumberSymbol:  # enclose π, E, ... by a margin of a few ulps of DPS digits
                c = iv.mpf([c.a - iv.mpf(10) ** (-DPS), c.b + iv.mpf(10) ** (-DPS)])
            return lambda args: c
        if isinstance(e, sp.Add):
            parts = [build(a) for a in e.args]

            def add(args):
                total = parts[0](args)
                for p in parts[1:]:
                    total = total + p(args)
                return total

            return add
        if isinstance(e, sp.Mul):
            parts = [build(a) for a in e.args]

            def mul(args):
                total = parts[0](args)
                for p in parts[1:]:
                    total = total * p(args)
                return total

            return mul
        if isinstance(e, sp.Pow):
            base = build(e.base)
            exp = e.exp
            if exp.is_Integer:
                n = int(exp)
                if n >= 0:
                    return lambda args: base(args) ** n
                return lambda args: 1 / (base(args) ** (-n))
            if exp == sp.Rational(1, 2):
                return lambda args: iv.sqrt(base(args))
            if exp == sp.Rational(-1, 2):
                return lambda args: 1 / iv.sqrt(base(args))
            power = build(exp)
            return lambda args: iv.exp(power(args) * iv.log(base(args)))
        if isinstance(e, sp.exp):
            arg = build(e.args[0])
            return lambda args: iv.exp(arg(args))
        if isinstance(e, sp.log):
            arg = build(e.args[0])
            return lambda args: iv.log(arg(args))
        if isinstance(e, sp.Abs):
            arg = build(e.args[0])

            def absolute(args):
                x = arg(args)
                if x.a >= 0:
                    return x
                if x.b <= 0:
                    return -x
                return iv.mpf([0, max(-x.a, x.b)])

            return absolute
        raise TypeError(f"cannot evaluate {e!r} in interval arithmetic")

    tree = build(expr)
    return lambda *args: tree(args)


@dataclass
class IntervalResult:
    ok: bool | None
    boxes: int
    enclosure: tuple[str, str] | None  # hull of the enclosures of all certified boxes
    counterexample: dict[str, str] | None = None
    counter_value: str | None = None
    reason: str = ""

    def summary(self) -> str:
        if self.ok:
            return f"certified on {self.boxes} boxes; f ∈ [{self.enclosure[0]}, {self.enclosure[1]}]"
        if self.ok is False:
            return f"violated at {self.counterexample_str()} (f = {self.counter_value})"
        return f"undecided after {self.boxes} boxes: {self.reason}"

    def counterexample_str(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in (self.counterexample or {}).items())

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "boxes": self.boxes,
            "enclosure": self.enclosure,
            "counterexample": self.counterexample,
            "value": self.counter_value,
            "reason": self.reason,
        }


def _endpoint(x, upper: bool, digits: int = 10) -> str:
    """An endpoint of interval ``x`` as a decimal string rounded *outward* (down for the lower
    end, up for the upper end), so printed enclosures stay enclosures."""
    from fractions import Fraction

    raw = mpf(x._mpi_[1 if upper else 0])
    man, exp = raw.man_exp  # |raw| = man · 2^exp (man is unsigned)
    value = Fraction(man) * (Fraction(2) ** exp) * (-1 if raw < 0 else 1)
    scale = 10**digits
    n = -((-value * scale).__floor__()) if upper else (value * scale).__floor__()
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // scale}.{n % scale:0{digits}d}"


def interval_str(x, digits: int = 10) -> tuple[str, str]:
    """Outward-rounded decimal strings ``(lo, hi)`` of an interval."""
    return _endpoint(x, False, digits), _endpoint(x, True, digits)


def _short(x) -> str:
    """A point (degenerate interval) for a counterexample."""
    lo, hi = interval_str(x, 12)
    return lo if lo == hi else f"[{lo}, {hi}]"


@dataclass
class IntervalCheck:
    """``expr <relation> bound`` for every point of ``box`` (a dict symbol → (lo, hi)).

    Bounds of the box and ``bound`` may be exact sympy numbers, ints or decimal strings.

    Parameters
    ----------
    expr : sympy expression
        The function f of the box's symbols.
    box : dict
        Symbol → ``(lo, hi)``.
    relation : {">", "<", ">=", "<="}
        How ``expr`` compares with ``bound``.
    bound : number, default 0
        The bound.
    max_boxes : int, default 20000
        The budget of sub-boxes; beyond it the check is inconclusive.
    name : str, default "f"
        The expression's name in the report.
    """

    expr: Any
    box: dict
    relation: str
    bound: Any = 0
    max_boxes: int = 20000
    name: str = "f"
    _symbols: list = field(init=False, repr=False)

    def __post_init__(self):
        if self.relation not in (">", "<", ">=", "<="):
            raise ValueError(f"Invalid relation: {self.relation!r}")
        self.expr = sp.sympify(self.expr)
        self._symbols = list(self.box)

    def latex(self) -> str:
        rel = {">": ">", "<": "<", ">=": r"\ge", "<=": r"\le"}[self.relation]
        ranges = r",\ ".join(
            f"{sp.latex(s)} \\in [{sp.latex(sp.sympify(a))}, {sp.latex(sp.sympify(b))}]"
            for s, (a, b) in self.box.items()
        )
        return f"{sp.latex(self.expr)} {rel} {sp.latex(sp.sympify(self.bound))} \\quad \\forall\\, {ranges}"

    def _side(self, enclosure, c) -> bool | None:
        """True if the enclosure is certainly on the good side, False if certainly on the bad one."""
        lo, hi = enclosure.a, enclosure.b
        if self.relation == ">":
            return True if lo > c.b else (False if hi <= c.a else None)
        if self.relation == ">=":
            return True if lo >= c.b else (False if hi < c.a else None)
        if self.relation == "<":
            return True if hi < c.a else (False if lo >= c.b else None)
        return True if hi <= c.a else (False if lo > c.b else None)

    def run(self) -> IntervalResult:
        old = iv.dps
        iv.dps = DPS
        try:
            return self._run()
        finally:
            iv.dps = old

    def _run(self) -> IntervalResult:
        syms = self._symbols
        f = compile_interval(self.expr, syms)
        grads = [compile_interval(sp.diff(self.expr, s), syms) for s in syms]
        c = to_interval(self.bound)
        start = [iv.mpf([to_interval(a).a, to_interval(b).b]) for a, b in (self.box[s] for s in syms)]
        widths0 = [max(x.delta, iv.mpf(1e-300)) for x in start]
        stack = [start]
        boxes = 0
        lo_all = hi_all = None
        while stack:
            box = stack.pop()
            boxes += 1
            if boxes > self.max_boxes:
                return IntervalResult(
                    None, boxes - 1, None, reason=f"more than {self.max_boxes} boxes needed"
                )
            natural = f(*box)
            side = self._side(natural, c)
            enclosure = natural
            if side is None:
                mid = [iv.mpf(x.mid) for x in box]
                at_mid = f(*mid)
                for point in [mid, *_vertices(box)]:  # candidate counterexamples
                    value = at_mid if point is mid else f(*point)
                    if self._side(value, c) is False:
                        where = {str(s): _short(p) for s, p in zip(syms, point)}
                        return IntervalResult(False, boxes, None, where, _short(value))
                mvf = at_mid
                for g, x, m in zip(grads, box, mid):
                    mvf = mvf + g(*box) * (x - m)
                lo = max(natural.a, mvf.a)
                hi = min(natural.b, mvf.b)
                enclosure = iv.mpf([lo, hi])
                side = self._side(enclosure, c)
            if side is True:
                lo_all = enclosure.a if lo_all is None else min(lo_all, enclosure.a)
                hi_all = enclosure.b if hi_all is None else max(hi_all, enclosure.b)
                continue
            if side is False:  # the whole box violates: report its centre
                mid = [iv.mpf(x.mid) for x in box]
                point = {str(s): _short(m) for s, m in zip(syms, mid)}
                return IntervalResult(False, boxes, None, point, _short(f(*mid)))
            k = max(range(len(box)), key=lambda j: box[j].delta / widths0[j])
            m = box[k].mid
            left, right = list(box), list(box)
            left[k] = iv.mpf([box[k].a, m])
            right[k] = iv.mpf([m, box[k].b])
            stack += [left, right]
        return IntervalResult(True, boxes, (interval_str(lo_all)[0], interval_str(hi_all)[1]))


def _vertices(box):
    """The corners of a box (at most 8: only the first three coordinates are varied)."""
    from itertools import product

    k = min(len(box), 3)
    for choice in product((0, 1), repeat=k):
        yield [
            iv.mpf(x.b if (j < k and choice[j]) else x.a) if j < k else iv.mpf(x.mid)
            for j, x in enumerate(box)
        ]


def enclose(expr, values: dict | None = None):
    """Certified enclosure of ``expr`` at exact ``values`` (dict symbol → number/string)."""
    values = values or {}
    old = iv.dps
    iv.dps = DPS
    try:
        syms = list(values)
        return compile_interval(expr, syms)(*(to_interval(values[s]) for s in syms))
    finally:
        iv.dps = old
