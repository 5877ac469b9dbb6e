"""Counterexample search, points before simplification, time budgets (issue #15, walls 1–3)."""

import time

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.symbolic import INCONCLUSIVE, REFUTED, VERIFIED, Claim
from dyntools.symbolic.search import candidates, exact_nonzero, find_counterexample

t = sp.Symbol("t", integer=True, positive=True)
beta = sp.Symbol("beta", positive=True)
i, k = sp.symbols("i k", integer=True)
g = sp.IndexedBase("g", real=True)
M_HAT = sp.Sum(beta**i * (1 - beta) * g[t - i], (i, 0, t - 1)) / (1 - beta**t)
AVERAGE = sp.Sum(g[k], (k, 1, t)) / t
x, y = sp.symbols("x y", real=True)


def _rmsprop_two_steps():
    """Two steps of bias-corrected RMSProp with L2 (gradient g + λθ) against the false claim that
    they equal two steps with decoupled decay; ``sympy.simplify`` of the difference takes minutes."""
    a, b2, e, lam = sp.symbols("alpha beta_2 epsilon lambda", positive=True)
    th0, g1, g2 = sp.symbols("theta_0 g_1 g_2", real=True)

    def run(coupled):
        th, v = th0, 0
        for step, grad in enumerate([g1, g2], 1):
            d = grad + lam * th if coupled else grad
            v = b2 * v + (1 - b2) * d**2
            th = th - a * d / (sp.sqrt(v / (1 - b2**step)) + e) - (0 if coupled else a * lam * th)
        return th

    return run(True), run(False), b2


def test_sum_claim_is_refuted_at_the_issue_point():
    """Wall 1: the point reaches the summand (substitute, then evaluate the sum)."""
    point = {t: 2, beta: sp.Rational(1, 2), g[1]: 1, g[2]: 0}
    r = Claim.equation("avg", M_HAT, AVERAGE, points=[point], domains={beta: sp.Interval.open(0, 1)}).run()
    assert r.verdict == REFUTED
    assert r.counterexample["difference"] == "-1/6"


@pytest.fixture
def searches_by_work_alone(monkeypatch):
    """The searches stop by their point limits only, never by processor time.

    The order under test (search before simplification) must not depend on how much processor time the
    process spent meanwhile: the clock counts every thread of the process and garbage collections of a heap
    that earlier tests in the same worker grew, so a loaded worker could cut a 0.5 s search that needs 0.02 s
    of its own work (seen once in a full run), and the simplification would then run first for a reason
    this test is not about."""
    monkeypatch.setattr("dyntools.symbolic.search.clock", lambda: 0.0)


def _never_called(calls):
    """A simplifier that records its calls: the work done, not the seconds, shows the search came first."""
    def simplifier(expr):
        calls.append(expr)
        return sp.simplify(expr)
    return simplifier


def test_sum_claim_is_refuted_by_the_search_before_any_simplification(searches_by_work_alone):
    """Wall 3: no point given; the smallest counterexample in rank order is found exactly."""
    calls = []
    r = Claim.equation("avg", M_HAT, AVERAGE, domains={beta: sp.Interval.open(0, 1)},
                       simplifier=_never_called(calls)).run()
    assert not calls, "the slow simplification ran before the cheap search"
    assert r.verdict == REFUTED
    ce = r.counterexample
    assert ce["t"] == "2" and ce["beta"] == "1/2"
    value = (M_HAT - AVERAGE).subs({t: 2, beta: sp.Rational(1, 2)}).doit()
    value = value.subs({g[1]: sp.Rational(ce["g[1]"]), g[2]: sp.Rational(ce["g[2]"])})
    assert str(value) == ce["difference"] and value != 0


def test_two_step_rmsprop_false_claim_refuted_without_simplifying(searches_by_work_alone):
    """Wall 2: points first, so the slow simplification of the false identity never runs."""
    lhs, rhs, b2 = _rmsprop_two_steps()
    calls = []
    r = Claim.equation("rms", lhs, rhs, domains={b2: sp.Interval.open(0, 1)}, simplifier=_never_called(calls)).run()
    assert not calls, "the slow simplification ran before the cheap search"
    assert r.verdict == REFUTED and r.counterexample["difference"] != "0"


def test_overrunning_claim_is_inconclusive_timed_out_not_a_hang():
    def spin(proof):
        while True:
            pass

    start = time.perf_counter()
    r = Claim("spin", "spin", "never ends", "x", spin, timeout=0.5).run()
    assert time.perf_counter() - start < 60.0        # a hang guard (the budget is the feature under test)
    assert r.verdict == INCONCLUSIVE and r.reason == "budget: timed out after 0.5 s" and r.timed_out


def test_slow_simplification_is_cut_by_the_budget():
    """The simplification (minutes of CPU uncut) stops at the 1 s wall-clock budget.

    Measured in this thread's CPU time, which a loaded machine does not inflate: before the deadline the
    thread can use at most the 1 s of wall clock, after it only the unwinding (and perhaps a garbage
    collection) runs, so more than 1 + 1.5 s of CPU means the budget did not cut the work. The wall clock
    (what load stretches: at load 10 on 2 cores this thread gets ~1/5 of a core, and a 0.4 s collection
    takes 2 s) is bounded only loosely, against a hang."""
    lhs, rhs, _ = _rmsprop_two_steps()
    c = Claim("rms", "rms", "s", "x", lambda p: p.identity("slow", lhs, rhs, search=False), timeout=1)
    start, cpu = time.perf_counter(), time.thread_time()
    r = c.run()
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - start
    assert r.verdict == INCONCLUSIVE and "timed out after 1 s" in r.reason
    assert cpu < 2.5, f"{cpu:.2f} s of CPU for a 1 s budget (wall {wall:.2f} s)"
    assert wall < 30.0, f"{wall:.2f} s of wall clock for a 1 s budget (CPU {cpu:.2f} s)"


def test_search_respects_domains():
    """|x| = x holds on [0, ∞): no counterexample there; on ℝ, x = −1 refutes it."""
    on_half_line = Claim.equation("abs", sp.Abs(x), x, domains={x: sp.Interval(0, sp.oo)}).run()
    on_line = Claim.equation("abs", sp.Abs(x), x).run()
    assert on_half_line.verdict == INCONCLUSIVE
    assert on_line.verdict == REFUTED and on_line.counterexample == {"x": "-1", "difference": "2"}


def test_relation_domain_and_smallest_counterexample():
    c = Claim.equation("sq", (x + y) ** 2, x**2 + y**2, domains={x: x > 0})
    r = c.run()
    assert r.verdict == REFUTED and r.counterexample == {"x": "1", "y": "1", "difference": "2"}


def test_true_identity_still_verified():
    r = Claim.equation("ok", M_HAT.subs(t, 3).doit(), ((1 - beta) * (g[3] + beta * g[2] + beta**2 * g[1])
                                                       / (1 - beta**3))).run()
    assert r.verdict == VERIFIED


def test_candidates_stay_inside_the_domain():
    open_unit = candidates(sp.Interval.open(0, 1))
    assert open_unit and all(0 < v < 1 for v in open_unit)
    assert candidates(sp.Range(1, sp.oo))[:3] == [1, 2, 3]
    narrow = candidates(sp.Interval(1, sp.Rational(21, 20)))
    assert narrow[:2] == [1, sp.Rational(21, 20)] and all(1 <= v <= sp.Rational(21, 20) for v in narrow)


def test_exact_nonzero_is_certified_not_sampled():
    assert exact_nonzero(sp.sqrt(2) - sp.Rational(14142135623730951, 10**16)) is True
    assert exact_nonzero(sp.sqrt(2) * sp.sqrt(3) - sp.sqrt(6)) is False
    assert exact_nonzero(sp.Symbol("z")) is None
    assert exact_nonzero(sp.Integer(1) / 0) is None


@pytest.mark.parametrize("spec", ["(0, 1)", 0.5, [0, 1]])
def test_assumption_sympy_cannot_use_is_a_value_error_naming_the_claim(spec):
    with pytest.raises(ValueError, match="claim 'bad'.*beta"):
        Claim.equation("bad", beta, beta, domains={beta: spec})


@settings(max_examples=25, deadline=None)
@given(coeffs=st.lists(st.integers(-3, 3), min_size=1, max_size=3),
       c=st.integers(-5, 5).filter(bool), power=st.integers(0, 3))
def test_a_perturbed_polynomial_identity_is_always_refuted_exactly(coeffs, c, power):
    p = sum(a * x**j for j, a in enumerate(coeffs))
    found = find_counterexample(sp.expand(p + c * x**power * (y**2 + 1) - p), seconds=5)
    assert found is not None
    value = (c * x**power * (y**2 + 1)).subs(found.point)
    assert value == found.value and value != 0


def test_piecewise_branch_excluded_by_the_domain_is_dropped():
    """Σ_{i<t} β^i(1−β)/(1−β^t) = 1: sympy's sum has an Eq(β, 1) branch, decided False on (0, 1)."""
    weights = sp.Sum(beta**i * (1 - beta) / (1 - beta**t), (i, 0, t - 1))
    assert Claim.equation("w", weights, 1, domains={beta: sp.Interval.open(0, 1)}).run().verdict == VERIFIED
    assert Claim.equation("w", weights, 1).run().verdict == INCONCLUSIVE  # β = 1 is allowed: undecided


def test_matrix_claims_explicit_and_of_symbolic_size():
    n = sp.Symbol("n", integer=True, positive=True)
    A, B = sp.MatrixSymbol("A", n, n), sp.MatrixSymbol("B", n, n)
    commute = Claim.equation("commute", A * B, B * A).run()
    assert commute.verdict == REFUTED and commute.counterexample["n"] == "2"
    shown = commute.counterexample["difference"]
    assert shown.startswith("Matrix([[") and "\n" not in shown
    assert Claim.equation("transpose", (A * B).T, B.T * A.T).run().verdict == VERIFIED
    a = sp.Matrix(2, 2, sp.symbols("a:4", real=True))
    b = sp.Matrix(2, 2, sp.symbols("b:4", real=True))
    assert Claim.equation("explicit", a * b, b * a).run().verdict == REFUTED


def test_adam_l2_is_not_adamw_refuted_fast_with_default_budget():
    """"Adam + L2 = AdamW after 2 steps" (β₁, β₂, ε, λ, η symbolic) is false; the numeric screen of
    the search points finds a point whose *exact* value is non-zero before ``simplify`` takes the
    budget. Measured in this thread's CPU time (load does not inflate it): < 2 s."""
    import dyntools as dt

    lam = sp.Symbol("lambda", positive=True)
    start = time.thread_time()
    l2 = dt.unroll(dt.adam(lr=1e-3), 2, grads=lambda th, t: sp.Symbol(f"g_{t}", real=True) + lam * th)
    decoupled = dt.unroll(dt.adamw(lr=1e-3, weight_decay=1e-2), 2)
    assert set(map(str, l2.hyper.values())) == {"eta", "beta_1", "beta_2", "epsilon"}   # λ only in the gradient
    assert set(map(str, decoupled.hyper.values())) == {"eta", "lambda", "beta_1", "beta_2", "epsilon"}
    r = Claim.equation("adam-l2-is-adamw", l2.theta(2), decoupled.theta(2), expected="refuted").run()
    cpu = time.thread_time() - start
    assert r.verdict == REFUTED and r.as_expected, r.reason
    assert cpu < 2.0, f"{cpu:.2f} s of CPU"
    # the counterexample is exact: re-evaluate the difference at the reported point
    point = {s: sp.Rational(r.counterexample[s.name]) for s in (l2.theta(2) - decoupled.theta(2)).free_symbols}
    value = sp.nsimplify(l2.theta(2).subs(point) - decoupled.theta(2).subs(point))
    assert value != 0 and sp.simplify(value - sp.sympify(r.counterexample["difference"])) == 0


def test_screen_keeps_the_smallest_counterexample_and_never_decides_alone():
    """The screen returns the same smallest point as the exact search, and nothing for a true
    identity whose float evaluation is noisy (cancellation) — the exact value decides."""
    from dyntools.symbolic.search import find_counterexample, screen_counterexample

    diff = (x + y) ** 2 - x**2 - y**2
    assert screen_counterexample(diff, {x: x > 0}).point == find_counterexample(diff, {x: x > 0}).point
    noisy = (sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1) * 10**12  # float64 gives ~1e-4, the exact value is 0
    assert screen_counterexample(noisy) is None


def test_two_symbols_with_one_name_is_an_error_naming_both():
    plain, real = sp.Symbol("theta_0"), sp.Symbol("theta_0", real=True)
    with pytest.raises(ValueError, match=r"Symbol\('theta_0'\) and Symbol\('theta_0', real=True\)"):
        Claim.equation("clash", plain + 1, real + 1)
    proof_error = Claim("clash", "t", "s", "x", lambda p: p.identity("same", plain, real)).run()
    assert proof_error.verdict == INCONCLUSIVE and "two different symbols are named 'theta_0'" in proof_error.reason
