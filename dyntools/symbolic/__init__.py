"""sympy machinery for verified claims (the claims themselves live in ``proofs/``).

* :mod:`~dyntools.symbolic.core` — :class:`Claim`, :class:`Proof` (exact checks), verdicts
  ``verified`` / ``refuted`` (with counterexample) / ``inconclusive`` (with the reason);
* :mod:`~dyntools.symbolic.interval` — certified interval arithmetic (mpmath ``iv``) by branch
  and bound over boxes;
* :mod:`~dyntools.symbolic.search` — exact counterexample search within the claim's domains;
* :mod:`~dyntools.time_budget` — the per-claim time budget;
* :mod:`~dyntools.symbolic.registry` — a plain registry of families of claims, name selection;
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

import sys

from dyntools.symbolic.api import ProofReport, prove
from dyntools.symbolic.core import INCONCLUSIVE, REFUTED, VERIFIED, Claim, ClaimResult, Proof
from dyntools.symbolic.interval import IntervalCheck, enclose

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
    "main",
]


def main(claims, argv=None) -> int:
    """Entry point of ``python proofs/<module>.py``: run every claim of the module (controls
    included), print the table (``--md FILE`` also writes the derivations), and return 0 when
    every verdict is the expected one (claims verified, false controls refuted)."""
    import argparse

    from dyntools.symbolic import render

    parser = argparse.ArgumentParser(description="Run this family of claims.")
    parser.add_argument("--md", help="also write the derivations as Markdown to this file")
    parser.add_argument("--verbose", action="store_true", help="print every derivation step")
    args = parser.parse_args(argv)
    if args.md:
        render.check_output_file(args.md, "--md")
    results = [c.run() for c in claims]
    if args.verbose:
        print(render.markdown(results))
    print(render.text_table(results))
    for r in results:
        if r.counterexample:
            print(
                f"  {r.claim.name}: counterexample "
                + ", ".join(f"{k}={v}" for k, v in r.counterexample.items())
            )
        if r.verdict == INCONCLUSIVE:
            print(f"  {r.claim.name}: {r.reason}")
    if args.md:
        render.write_atomic(args.md, render.markdown(results))
    ok = all(r.as_expected for r in results)
    print("all verdicts as expected" if ok else "SOME VERDICTS ARE NOT AS EXPECTED", file=sys.stderr)
    return 0 if ok else 1
