"""sympy machinery for verified claims (the claims themselves live in ``proofs/``).

* :mod:`~dyntools.symbolic.core` — :class:`Claim`, :class:`Proof` (exact checks), verdicts
  ``verified`` / ``refuted`` (with counterexample) / ``inconclusive`` (with the reason);
* :mod:`~dyntools.symbolic.interval` — certified interval arithmetic (mpmath ``iv``) by branch
  and bound over boxes;
* :mod:`~dyntools.symbolic.search` — exact counterexample search within the claim's domains;
* :mod:`~dyntools.time_budget` — the per-claim time budget;
* :mod:`~dyntools.symbolic.registry` — a plain registry of families of claims, name selection, and
  :class:`ClaimFamily`, the declaration of a family by a plugin module;
* :mod:`~dyntools.symbolic.userfile` — claims from a user's Python file (``--file``);
* :mod:`~dyntools.symbolic.api` — :func:`prove` (also ``dyntools.prove``) and its report;
* :mod:`~dyntools.symbolic.unroll` — the library's optimizers unrolled on sympy symbols;
* :mod:`~dyntools.symbolic.render` — text table, Markdown, LaTeX, JSON.

Example::

    import sympy as sp
    from dyntools.symbolic import Claim, prove
    x = sp.Symbol("x", real=True)
    report = prove(Claim.equation("square", (x + 1) ** 2, x**2 + 2 * x + 1))
    report["square"].verdict      # -> 'verified'
"""

from __future__ import annotations

from dyntools.symbolic.api import ProofReport, prove
from dyntools.symbolic.core import INCONCLUSIVE, REFUTED, VERIFIED, Claim, ClaimResult, Proof
from dyntools.symbolic.interval import IntervalCheck, enclose
from dyntools.symbolic.registry import ClaimFamily

__all__ = [
    "Claim",
    "ClaimResult",
    "Proof",
    "IntervalCheck",
    "enclose",
    "VERIFIED",
    "REFUTED",
    "INCONCLUSIVE",
    "prove",
    "ProofReport",
    "ClaimFamily",
]

