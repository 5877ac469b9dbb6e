"""dyntools.symbolic: exact checks, certified intervals, verdicts, registry selection, renderers."""

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import iv

from dyntools.commands.prove import builtin_registry
from dyntools.symbolic import INCONCLUSIVE, REFUTED, VERIFIED, Claim, IntervalCheck, enclose, registry, render
from dyntools.symbolic.interval import compile_interval, interval_str

BUILTIN = builtin_registry()

x, y = sp.symbols("x y", real=True)


def _claim(prove, **kw):
    return Claim("t", "test", "test statement", "x", prove, **kw)


# ------------------------------------------------------------------------------------ verdicts


def test_true_identity_is_verified():
    r = _claim(lambda p: p.identity("square", (x + y) ** 2, x**2 + 2 * x * y + y**2)).run()
    assert r.verdict == VERIFIED and r.counterexample is None


def test_false_identity_with_points_is_refuted_with_exact_counterexample():
    r = _claim(lambda p: p.identity("wrong square", (x + y) ** 2, x**2 + y**2, points=[{x: 1, y: 2}])).run()
    assert r.verdict == REFUTED
    assert r.counterexample == {"x": "1", "y": "2", "difference": "4"}


def test_false_identity_without_search_or_points_is_inconclusive_not_verified():
    r = _claim(lambda p: p.identity("wrong", sp.sin(x) ** 2, 1, search=False)).run()
    assert r.verdict == INCONCLUSIVE and "not shown to vanish" in r.reason


def test_false_identity_without_points_is_refuted_by_the_search():
    r = _claim(lambda p: p.identity("wrong", sp.sin(x) ** 2, 1)).run()
    assert r.verdict == REFUTED and r.counterexample == {"x": "0", "difference": "-1"}


def test_error_in_derivation_is_inconclusive_with_reason():
    def boom(p):
        raise ZeroDivisionError("nope")

    r = _claim(boom).run()
    assert r.verdict == INCONCLUSIVE and "ZeroDivisionError" in r.reason


def test_claim_without_checks_is_inconclusive():
    assert _claim(lambda p: p.note("only words")).run().verdict == INCONCLUSIVE


def test_solve_compares_solution_sets():
    lam, a = sp.symbols("lambda a", positive=True)
    ok = _claim(lambda p: p.solve("lin", [lam - 2 * a], [lam], sp.FiniteSet((2 * a,)))).run()
    bad = _claim(lambda p: p.solve("lin", [lam - 2 * a], [lam], sp.FiniteSet((3 * a,)))).run()
    empty = _claim(lambda p: p.solve("none", [lam - 1, lam - 2], [lam], sp.S.EmptySet)).run()
    assert (ok.verdict, bad.verdict, empty.verdict) == (VERIFIED, INCONCLUSIVE, VERIFIED)


def test_holds_false_is_not_verified():
    assert _claim(lambda p: p.holds("1 > 2", sp.Gt(1, 2))).run().verdict == INCONCLUSIVE


# --------------------------------------------------------------------------- certified intervals


def test_interval_check_certifies_true_inequality():
    r = IntervalCheck(x**2 - 2 * x + 2, {x: (-3, 3)}, ">", 0).run()
    assert r.ok is True and float(r.enclosure[0]) <= 1.0


def test_interval_check_finds_counterexample_of_false_inequality():
    r = IntervalCheck(x**2 - 2, {x: (1, 2)}, ">", 0).run()
    assert r.ok is False
    point = float(r.counterexample["x"].strip("[]").split(",")[0])
    assert point**2 - 2 <= 0


def test_interval_check_reports_undecided_when_out_of_boxes():
    # the maximum of h_{1.25} is √1.35 = 1.1618950…: a bound 1e-9 above it cannot be settled in 5 boxes
    z, g = sp.symbols("z g")
    r = IntervalCheck(
        z + g * z * (1 - z**2), {z: (0, "1.162"), g: (1, sp.Rational(5, 4))}, "<", "1.16189501", max_boxes=5
    ).run()
    assert r.ok is None


def test_tight_bound_certified_and_slightly_lower_bound_refuted():
    z, g = sp.symbols("z g")
    h = z + g * z * (1 - z**2)
    box = {z: (0, "1.162"), g: (1, sp.Rational(5, 4))}
    assert IntervalCheck(h, box, "<", "1.162", max_boxes=50000).run().ok is True
    assert IntervalCheck(h, box, "<", "1.1618", max_boxes=50000).run().ok is False


def test_enclosure_contains_exact_rational_value():
    z, g = sp.symbols("z g")
    exact = Fraction(581, 500) + Fraction(5, 4) * Fraction(581, 500) * (1 - Fraction(581, 500) ** 2)
    lo, hi = interval_str(
        enclose(z + g * z * (1 - z**2), {z: sp.Rational(581, 500), g: sp.Rational(5, 4)}), 8
    )
    assert Fraction(lo) <= exact <= Fraction(hi)
    assert Fraction(hi) - Fraction(lo) <= Fraction(2, 10**8)


@settings(max_examples=40, deadline=None)
@given(a=st.floats(-2, 2), width=st.floats(0, 1), frac=st.floats(0, 1), g=st.floats(0.5, 1.5))
def test_natural_extension_encloses_point_values(a, width, frac, g):
    z, gg = sp.symbols("z g")
    expr = z + gg * z * (1 - z**2) - sp.Rational(1, 3) * z**4
    f = compile_interval(expr, [z, gg])
    box = f(iv.mpf([a, a + width]), iv.mpf(g))
    point = a + frac * width
    value = (
        Fraction(point)
        + Fraction(g) * Fraction(point) * (1 - Fraction(point) ** 2)
        - Fraction(point) ** 4 / 3
    )
    lo, hi = interval_str(box, 12)
    assert Fraction(lo) <= value <= Fraction(hi)


@settings(max_examples=30, deadline=None)
@given(lo=st.floats(-1e3, 1e3), w=st.floats(0, 10))
def test_interval_str_rounds_outward(lo, w):
    interval = iv.mpf([lo, lo + w])
    slo, shi = interval_str(interval, 6)
    hi = lo + w                      # the float endpoint the interval was built from
    assert Fraction(slo) <= Fraction(lo) <= Fraction(hi) <= Fraction(shi)
    assert Fraction(shi) - Fraction(hi) <= Fraction(1, 10**6)
    assert Fraction(lo) - Fraction(slo) <= Fraction(1, 10**6)


# ------------------------------------------------------------------------------ registry/render


def test_select_unknown_name_raises_value_error_naming_it():
    with pytest.raises(ValueError, match="no-such-claim"):
        BUILTIN.select(["no-such-claim"])


def test_select_family_excludes_controls_unless_asked():
    plain = BUILTIN.select(["loss-stabilization"])
    with_controls = BUILTIN.select(["loss-stabilization"], controls=True)
    assert plain and all(not c.control for c in plain)
    assert any(c.control for c in with_controls) and len(with_controls) > len(plain)
    assert [c.name for c in BUILTIN.select(["seed004-h-sign-misprint"])] == ["seed004-h-sign-misprint"]


def test_claim_names_are_unique_and_every_family_has_claims():
    claims = BUILTIN.all_claims()
    assert {c.family for c in claims.values()} == set(BUILTIN.families)


def test_renderers_include_every_claim_and_latex_is_ascii():
    results = registry.run(BUILTIN.select(["sgd-l2-equals-decay", "seed004-h-sign-misprint"]))
    md = render.markdown(results)
    tex = render.latex(results)
    for r in results:
        assert r.claim.name in md
    assert "$$" in md and "Counterexample" in md
    assert tex.startswith(r"\documentclass") and tex.rstrip().endswith(r"\end{document}")
    assert all(ord(ch) < 128 for ch in tex), sorted({ch for ch in tex if ord(ch) >= 128})
    summary = render.summary(results)
    assert summary["counts"] == {"verified": 1, "refuted": 1, "inconclusive": 0}


def test_sanity_checks_never_decide_the_verdict():
    def prove(p):
        p.identity("x = x", x, x)
        p.sanity("a failing numerical illustration", False)
    r = _claim(prove).run()
    assert r.verdict == VERIFIED
    assert any(s.kind == "sanity" and "not part of the proof" in s.text for s in r.steps)
