"""Claims, proofs and verdicts.

A :class:`Claim` is a named mathematical statement (plain text and LaTeX), the domains of its
symbols, where it comes from, and a ``prove(proof)`` function that writes the derivation into a
:class:`Proof`. Every step of a derivation is recorded for the reader; *checking* steps are exact:

* :meth:`Proof.identity` — ``lhs == rhs`` (entrywise for matrices): exact rational points first
  (the ones given, then a counterexample search within the claim's ``domains``,
  :mod:`dyntools.symbolic.search`; sums are evaluated after the substitution), a provably non-zero
  value being a counterexample; then ``simplify(lhs − rhs) == 0``;
* :meth:`Proof.solve` — the solution set of equations for the unknowns (sympy ``solve`` /
  ``linsolve`` / ``solveset``), compared with the expected set;
* :meth:`Proof.holds` — a sympy truth value (``is_positive``, a relational, an interval
  inclusion) that must be ``True``;
* :meth:`Proof.certify` — an inequality over a box by certified interval arithmetic
  (:mod:`dyntools.symbolic.interval`).

Every claim runs under a time budget (:mod:`dyntools.time_budget`): an overrun is
*inconclusive (budget: timed out after N s)*, never a hang. The verdict is **verified** when every check
passed, **refuted** when the proof recorded a counterexample (:meth:`Proof.refute`), and
**inconclusive** otherwise (with the reason: the first check that could not be decided, or the
error raised). Random sampling never decides a verdict;
:meth:`Proof.sanity` records such a check, labelled, outside the verdict.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import sympy as sp

from dyntools.symbolic.claim_text import claim_markdown
from dyntools.symbolic.search import (
    DomainError,
    as_domain,
    exact_nonzero,
    find_counterexample,
    refine_piecewise,
    screen_counterexample,
    substitute,
)
from dyntools.time_budget import ProofTimeout, remaining, time_limit

VERIFIED = "verified"
REFUTED = "refuted"
INCONCLUSIVE = "inconclusive"
VERDICTS = (VERIFIED, REFUTED, INCONCLUSIVE)
#: seconds a claim may take unless it says otherwise (``Claim.timeout``) or the runner does
DEFAULT_TIMEOUT = 60.0


@dataclass
class Step:
    """One line of a derivation: what is done, the formula (LaTeX), and whether it checked out.

    ``kind`` is ``"note"`` (exposition, no check), ``"check"`` (exact check that decides the verdict),
    ``"sanity"`` (labelled numerical illustration, never decides) or ``"counterexample"``.
    ``ok`` is True/False for checks, None when undecided or not a check.
    """

    text: str
    latex: str = ""
    kind: str = "note"
    ok: bool | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The five fields by name (the JSON form of a step)."""
        return asdict(self)


_GREEK = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau "
          "upsilon phi chi psi omega").split()
_GREEK_NAME = re.compile(r"^(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(_\{.*\}|'.*|_\w.*)$")


def _symbol_names(value) -> dict:
    """LaTeX names for symbols sympy leaves as plain text, e.g. ``theta_{t-1}`` → ``\\theta_{t-1}``,
    ``lambda'`` → ``\\lambda'``."""
    names = {}
    for sym in getattr(value, "free_symbols", ()):
        if not isinstance(sym, sp.Symbol):
            continue
        m = _GREEK_NAME.match(sym.name)
        if m and "\\" not in sp.latex(sym):
            rest = m.group(2)
            if rest.startswith("_") and not rest.startswith("_{"):
                rest = "_{" + rest[1:] + "}"
            names[sym] = "\\" + m.group(1) + rest
    return names


def _latex_part(value) -> str:
    """A string, or a Symbol whose name is already LaTeX (has a backslash), is kept verbatim."""
    if isinstance(value, str):
        return value
    if isinstance(value, sp.Symbol) and "\\" in value.name:
        return value.name
    return sp.latex(value, symbol_names=_symbol_names(value))


def latex_of(value) -> str:
    """LaTeX for a sympy object, a relation tuple ``(lhs, rhs)``, or a plain string."""
    if value is None:
        return ""
    if isinstance(value, tuple) and len(value) == 2:
        return f"{_latex_part(value[0])} = {_latex_part(value[1])}"
    return _latex_part(value)


def _fmt(value) -> str:
    if isinstance(value, sp.MatrixBase):  # one line
        return "Matrix(" + sp.sstr(value.tolist()) + ")"
    if isinstance(value, sp.Basic):
        return sp.sstr(value)
    return str(value)


class Proof:
    """Collects the steps of one claim's derivation and the evidence for its verdict."""

    def __init__(self, claim: Claim):
        self.claim = claim
        self.steps: list[Step] = []
        self.counterexample: dict[str, str] | None = None
        self.failures: list[str] = []
        self.checks = 0
        self.values: dict[str, Any] = {}  # certified numbers worth printing (enclosures, ...)
        self.search: dict[str, bool] = {}  # {"stopped": True} once a counterexample search hit its time limit

    # ---- exposition
    def note(self, text: str, formula=None) -> None:
        """A derivation step the reader follows; not a check."""
        self.steps.append(Step(text, latex_of(formula), "note"))

    def sanity(self, text: str, ok: bool, detail: str = "") -> None:
        """A numerical illustration (e.g. sampling): recorded and labelled, never a verdict."""
        self.steps.append(
            Step("[sanity check, not part of the proof] " + text, "", "sanity", bool(ok), detail)
        )

    # ---- checks
    def _record(self, text: str, formula: str, ok: bool | None, detail: str = "") -> bool:
        self.checks += 1
        self.steps.append(Step(text, formula, "check", ok, detail))
        if ok is not True:
            self.failures.append(text + (f" ({detail})" if detail else ""))
        return ok is True

    def identity(
        self,
        text: str,
        lhs,
        rhs,
        *,
        points: Iterable[dict] = (),
        simplifier=sp.simplify,
        show=None,
        search: bool = True,
    ) -> bool:
        """Check ``lhs == rhs`` exactly (entrywise for matrices); returns True when it holds.

        Points come first, because evaluating at a point is cheap and simplifying a false
        identity can take minutes:

        1. each substitution in ``points`` (exact rationals; keys may be symbols or indexed
           symbols such as ``g[1]``), sums and products evaluated *after* the substitution;
        2. with ``search``, the cheap searches within the claim's ``domains`` and the symbols'
           assumptions (:mod:`dyntools.symbolic.search`): a numeric screen of a few thousand
           exact rational points in float64, the promising ones then evaluated exactly
           (5 % of the budget, between 0.5 and 2 s), else a short exact search (sums, indexed symbols);
        3. ``simplifier(lhs − rhs) == 0`` (the proof), under the claim's time budget;
        4. if that does not vanish, a longer search.

        A provably non-zero value at a point is recorded as the counterexample (the claim is
        *refuted*); a difference that neither vanishes nor has a counterexample is undecided.
        """
        check_symbol_names(lhs, rhs)
        diff = _difference(lhs, rhs)
        formula = latex_of(show) if show is not None else latex_of((lhs, rhs))
        for point in points:
            value = _substitute(diff, point)
            if _is_exact_nonzero(value):
                return self._counterexample(text, formula, point, value)
        domains = self.claim.domains if self.claim is not None else {}
        seed = self.claim.name if self.claim else ""
        if search:  # the cheap things first, each with its share of the budget
            found = screen_counterexample(diff, domains, seed=seed, seconds=min(2.0, max(0.5, 0.05 * remaining(40.0))),
                                          stats=self.search)
            if found is None:
                found = find_counterexample(diff, domains, limit=24, seconds=min(0.5, remaining()), seed=seed,
                                            stats=self.search)
            if found is not None:
                return self._counterexample(text, formula, found.point, found.value)
        reduced = diff.applyfunc(simplifier) if isinstance(diff, sp.MatrixBase) else simplifier(diff)
        if _is_zero(reduced):
            return self._record(text, formula, True, "difference simplifies to 0")
        refined = refine_piecewise(reduced, domains)
        if refined != reduced:  # branches excluded by the domains (e.g. β = 1 when β ∈ (0, 1))
            reduced = refined.applyfunc(simplifier) if isinstance(refined, sp.MatrixBase) else simplifier(refined)
            if _is_zero(reduced):
                return self._record(text, formula, True,
                                    "difference simplifies to 0 (Piecewise branches decided by the domains)")
        if search:
            found = find_counterexample(diff, domains, limit=400, seconds=min(3.0, remaining()), seed=seed,
                                        stats=self.search)
            if found is not None:
                return self._counterexample(text, formula, found.point, found.value)
        return self._record(text, formula, None, f"difference {_fmt(reduced)} not shown to vanish")

    def _counterexample(self, text: str, formula: str, point: dict, value) -> bool:
        self._record(text, formula, False, f"the difference at {_point_str(point)} is {_fmt(value)}")
        self.refute(
            f"{text}: at {_point_str(point)} the two sides differ by {_fmt(value)}",
            {**{str(k): _fmt(v) for k, v in point.items()}, "difference": _fmt(value)},
        )
        return False

    def holds(self, text: str, truth, formula=None, detail: str = "") -> bool:
        """Record a sympy truth value (True / False / None meaning undecided) as a check."""
        if isinstance(truth, sp.logic.boolalg.BooleanAtom):
            truth = bool(truth)
        elif truth is not None and not isinstance(truth, bool):
            truth = None
        return self._record(text, latex_of(formula), truth, detail)

    def solve(
        self,
        text: str,
        equations,
        unknowns,
        expected,
        *,
        method: str = "linsolve",
        domain=sp.S.Reals,
        formula=None,
    ):
        """Solve ``equations`` (expressions = 0) for ``unknowns`` and compare with ``expected``.

        ``method`` is ``"linsolve"`` (linear systems; returns a FiniteSet of tuples or EmptySet),
        ``"solveset"`` (one unknown over ``domain``) or ``"solve"`` (a list of dict solutions).
        Returns the solution set; the check passes when it equals ``expected``.
        """
        equations = list(equations) if isinstance(equations, (list, tuple)) else [equations]
        if method == "linsolve":
            sol = sp.linsolve(equations, list(unknowns))
        elif method == "solveset":
            (u,) = unknowns
            sol = sp.solveset(equations[0], u, domain=domain)
        else:
            sol = sp.solve(equations, list(unknowns), dict=True)
        same = _same_solutions(sol, expected)
        shown = formula if formula is not None else _solution_latex(unknowns, sol)
        self._record(text, latex_of(shown), same, f"solution set: {_fmt(sol)}")
        self.values.setdefault("solutions", {})[text] = _fmt(sol)
        return sol

    def certify(self, text: str, check, formula=None) -> bool:
        """Run a certified interval check (:class:`dyntools.symbolic.interval.IntervalCheck`)."""
        result = check.run()
        self.values.setdefault("intervals", {})[text] = result.as_dict()
        shown = formula if formula is not None else check.latex()
        ok = self._record(text, latex_of(shown), result.ok, result.summary())
        if result.ok is False and result.counterexample is not None:
            self.refute(
                f"{text}: violated at {result.counterexample_str()}",
                {**result.counterexample, "value": result.counter_value},
            )
        return ok

    def refute(self, text: str, counterexample: dict[str, Any]) -> None:
        """Record the counterexample that refutes the claim (exact or certified values)."""
        ce = {str(k): _fmt(v) for k, v in counterexample.items()}
        if self.counterexample is None:
            self.counterexample = ce
        self.steps.append(
            Step(
                "Counterexample: " + text,
                "",
                "counterexample",
                False,
                ", ".join(f"{k} = {v}" for k, v in ce.items()),
            )
        )

    def enclosure(self, name: str, interval, text: str) -> None:
        """Record a certified enclosure ``[lo, hi]`` of a number worth printing."""
        lo, hi = (str(interval.a), str(interval.b)) if hasattr(interval, "a") else interval
        self.values.setdefault("enclosures", {})[name] = [lo, hi]
        self.steps.append(Step(text, rf"{name} \in [{lo},\ {hi}]", "note"))

    # ---- verdict
    def verdict(self) -> tuple[str, str]:
        if self.counterexample is not None:
            return REFUTED, "counterexample found"
        if self.failures:
            return INCONCLUSIVE, "not decided: " + self.failures[0]
        if self.checks == 0:
            return INCONCLUSIVE, "the derivation contains no exact check"
        return VERIFIED, f"{self.checks} exact checks passed"


@dataclass
class Claim:
    """A named statement with its assumptions, source and derivation.

    ``expected`` is the verdict the statement deserves: "verified" for the claims of the
    sources, "refuted" for *false controls* (misprints and tempting false statements).

    ``assumptions`` is for the reader (LaTeX → text). ``domains`` is for the machine: it maps a
    symbol (or its name, or an ``IndexedBase``) to the set of values it ranges over — a sympy
    ``Set`` (``sp.Interval.open(0, 1)``, ``sp.Range(1, sp.oo)``) or a relation in that symbol
    (``beta < 1``) — and restricts the counterexample search (together with the symbols' own
    sympy assumptions such as ``positive=True``). ``timeout`` is the claim's budget in seconds
    (default: the runner's, :data:`DEFAULT_TIMEOUT`).

    Parameters
    ----------
    name : str
        A unique non-empty name.
    title : str
        One line for the report.
    statement : str
        The statement in words.
    latex : str
        The statement in LaTeX.
    prove : callable
        ``prove(proof)``: the derivation, which records its steps on the :class:`Proof`.
    assumptions : dict of str to str, optional
        For the reader: symbol → assumption.
    source : str, default ""
        Where the statement comes from.
    expected : {"verified", "refuted"}, default "verified"
        The verdict the statement deserves ("refuted": a false control).
    family : str, default ""
        The family it belongs to (a module of ``proofs/``).
    domains : dict, optional
        Symbol → sympy set or relation, for the counterexample search.
    timeout : float, optional
        The claim's budget in seconds.

    Raises
    ------
    ValueError
        For an empty name, an unknown ``expected`` or a domain that is not a set or relation of its symbol.
    TypeError
        When ``prove`` is not callable.
    """

    name: str
    title: str
    statement: str
    latex: str
    prove: Callable[[Proof], None]
    assumptions: dict[str, str] = field(default_factory=dict)
    source: str = ""
    expected: str = VERIFIED
    family: str = ""
    domains: dict = field(default_factory=dict)
    timeout: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"claim name must be a non-empty string, got {self.name!r}")
        if not callable(self.prove):
            raise TypeError(f"claim {self.name!r}: prove must be a function of a Proof")
        if self.expected not in (VERIFIED, REFUTED):
            raise ValueError(f"claim {self.name!r}: expected must be 'verified' or 'refuted'")
        checked = {}
        for key, spec in dict(self.domains).items():
            try:
                checked[key] = as_domain(key if not isinstance(key, str) else sp.Symbol(key), spec)
            except DomainError as exc:
                raise ValueError(f"claim {self.name!r}: assumption on {key}: {exc}") from None
        self.domains = checked

    @classmethod
    def equation(
        cls,
        name: str,
        lhs,
        rhs,
        *,
        title: str = "",
        statement: str = "",
        domains: dict | None = None,
        points: Iterable[dict] = (),
        simplifier=sp.simplify,
        **kwargs,
    ) -> Claim:
        """The claim ``lhs = rhs`` (expressions or matrices) for all values in ``domains``,
        checked by :meth:`Proof.identity` (points and counterexample search first, then exact
        simplification). The quickest way to state one's own derivation::

            Claim.equation("my-step", theta - eta * (g + lam * theta), (1 - eta * lam) * theta - eta * g,
                           domains={eta: sp.Interval.open(0, 1)})
        """
        check_symbol_names(lhs, rhs)
        text = statement or f"{sp.sstr(lhs)} = {sp.sstr(rhs)}"

        def prove(proof: Proof) -> None:
            proof.identity(title or text, lhs, rhs, points=points, simplifier=simplifier)

        return cls(name, title or name, text, latex_of((lhs, rhs)), prove, domains=domains or {}, **kwargs)

    @property
    def control(self) -> bool:
        return self.expected == REFUTED

    def run(self, timeout: float | None = None) -> ClaimResult:
        """Run the derivation under the budget ``self.timeout`` (else ``timeout``, else
        :data:`DEFAULT_TIMEOUT`) seconds; an overrun is *inconclusive (budget: timed out after N s)*."""
        budget = self.timeout or timeout or DEFAULT_TIMEOUT
        proof = Proof(self)
        start = time.perf_counter()
        error, timed_out = None, False
        try:
            with time_limit(budget):
                self.prove(proof)
            verdict, reason = proof.verdict()
            if verdict == INCONCLUSIVE and self.control and proof.search.get("stopped"):
                # a false control is refuted by the search: a search cut by its time limit is a budget stop
                reason, timed_out = f"budget: the counterexample search hit its time limit ({reason})", True
        except ProofTimeout:
            verdict, reason, timed_out = INCONCLUSIVE, f"budget: timed out after {budget:g} s", True
            if proof.counterexample is not None:  # a counterexample found before the timeout stands
                verdict, reason, timed_out = REFUTED, "counterexample found", False
        except Exception as exc:  # a broken derivation is reported, not hidden
            verdict = INCONCLUSIVE
            first_line = (str(exc).strip().splitlines() or [""])[0][:200]
            error = f"{type(exc).__name__}: {first_line}"
            reason = f"error in derivation: {error}"
            proof.steps.append(
                Step("Derivation raised an error", "", "check", None, traceback.format_exc(limit=3))
            )
        seconds = time.perf_counter() - start
        return ClaimResult(self, verdict, reason, proof.counterexample, proof.steps, seconds, proof.values,
                           error, timed_out)


def claim_list(claims, who: str) -> list[Claim]:
    """``claims`` (one :class:`Claim` or an iterable of them) as a list; a ``TypeError`` naming ``who`` (the
    caller's sentence, e.g. ``"prove() takes"``) when any item is not a Claim."""
    claims = [claims] if isinstance(claims, Claim) else list(claims)
    bad = [c for c in claims if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"{who} Claim objects, got {type(bad[0]).__name__}")
    return claims


@dataclass
class ClaimResult:
    claim: Claim
    verdict: str
    reason: str
    counterexample: dict[str, str] | None
    steps: list[Step]
    seconds: float
    values: dict[str, Any]
    error: str | None = None  # the exception a broken derivation raised ("Type: message")
    timed_out: bool = False   # inconclusive because the budget stopped it (not a wrong or broken derivation)

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.claim.expected

    def markdown(self, heading: str = "###") -> str:
        """This claim's section of the Markdown report (statement, assumptions, steps, verdict)."""
        return claim_markdown(self, heading)

    def _repr_markdown_(self) -> str:  # Jupyter
        return self.markdown()

    def as_dict(self) -> dict[str, Any]:
        c = self.claim
        return {
            "name": c.name,
            "family": c.family,
            "title": c.title,
            "statement": c.statement,
            "latex": c.latex,
            "assumptions": c.assumptions,
            "domains": {str(k): sp.sstr(v) for k, v in c.domains.items()},
            "source": c.source,
            "control": c.control,
            "expected": c.expected,
            "verdict": self.verdict,
            "as_expected": self.as_expected,
            "reason": self.reason,
            "counterexample": self.counterexample,
            "seconds": round(self.seconds, 4),
            "timed_out": self.timed_out,
            "values": self.values,
            "steps": [s.as_dict() for s in self.steps],
        }


# ------------------------------------------------------------------------------------- helpers


def _difference(lhs, rhs):
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        return sp.Matrix(lhs) - sp.Matrix(rhs)
    return sp.sympify(lhs) - sp.sympify(rhs)


def _assumption_text(sym) -> str:
    given = dict(getattr(sym, "_assumptions_orig", None) or {})
    flags = ", ".join(f"{k}={v}" for k, v in sorted(given.items()))
    return f"Symbol({sym.name!r}{', ' + flags if flags else ''})"


def check_symbol_names(*exprs) -> None:
    """Raise ValueError when two different symbols of the expressions share a name (they differ in
    their assumptions, e.g. ``Symbol("theta_0")`` and unroll's ``Symbol("theta_0", real=True)``):
    sympy treats them as independent variables, so an "identity" between them is about two
    unknowns the reader sees as one, and a counterexample would list the name once."""
    seen: dict[str, sp.Symbol] = {}
    for expr in exprs:
        atoms = sp.Tuple(*expr) if isinstance(expr, sp.MatrixBase) else sp.sympify(expr)
        for sym in sorted(atoms.free_symbols, key=sp.default_sort_key):
            if not isinstance(sym, sp.Symbol) or isinstance(sym, sp.Dummy):
                continue
            other = seen.setdefault(sym.name, sym)
            if other != sym:
                raise ValueError(
                    f"two different symbols are named {sym.name!r}: {_assumption_text(other)} and "
                    f"{_assumption_text(sym)}; sympy treats them as independent variables — use one "
                    f"Symbol object (e.g. the one dt.unroll made: Unrolled.iterates[0])")


def _is_zero(value) -> bool:
    if isinstance(value, sp.MatrixBase):
        return all(_is_zero(v) for v in value)
    if isinstance(value, sp.MatrixExpr):  # matrix symbols of symbolic size: A*B - B*A, ...
        return bool(value.is_ZeroMatrix)
    return sp.sympify(value) == 0


def _is_exact_nonzero(value) -> bool:
    """A provably non-zero number (exact rational, or certified enclosure away from 0)."""
    if isinstance(value, sp.MatrixBase):
        return any(_is_exact_nonzero(v) for v in value)
    if isinstance(value, sp.Float):
        value = sp.nsimplify(value)
    return exact_nonzero(value) is True


def _substitute(diff, point: dict):
    """``diff`` at ``point``: substitute first, then evaluate sums/products (so the values reach
    the summand), then simplify the resulting number."""
    value = substitute(diff, point)
    if isinstance(value, sp.MatrixBase):
        return value.applyfunc(sp.simplify)
    return sp.simplify(value)


def _point_str(point: dict) -> str:
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in point.items())


def _same_solutions(sol, expected) -> bool:
    if isinstance(sol, list) and isinstance(expected, list):
        norm = lambda s: sorted(({str(k): sp.simplify(v) for k, v in d.items()} for d in s), key=str)
        a, b = norm(sol), norm(expected)
        return len(a) == len(b) and all(
            x.keys() == y.keys() and all(sp.simplify(x[k] - y[k]) == 0 for k in x) for x, y in zip(a, b)
        )
    if isinstance(expected, sp.Set) and isinstance(sol, sp.Set):
        if expected is sp.S.EmptySet or sol is sp.S.EmptySet:
            return sol == expected
        if isinstance(sol, sp.FiniteSet) and isinstance(expected, sp.FiniteSet) and len(sol) == len(expected):
            return all(_tuple_equal(a, b) for a, b in zip(sorted(sol, key=str), sorted(expected, key=str)))
        return sp.simplify(sol.symmetric_difference(expected)) == sp.S.EmptySet
    return False


def _tuple_equal(a, b) -> bool:
    a = a if isinstance(a, (tuple, sp.Tuple)) else (a,)
    b = b if isinstance(b, (tuple, sp.Tuple)) else (b,)
    return len(a) == len(b) and all(sp.simplify(x - y) == 0 for x, y in zip(a, b))


def _solution_latex(unknowns, sol) -> str:
    names: dict = {}
    parts = list(unknowns)
    parts += [x for d in sol for kv in d.items() for x in kv] if isinstance(sol, list) else [sol]
    for part in parts:
        names.update(_symbol_names(sp.sympify(part)))
    lhs = ", ".join(sp.latex(u, symbol_names=names) for u in unknowns)
    return rf"\{{({lhs})\}} = {sp.latex(sol, symbol_names=names)}"
