"""``dyntools.prove(claims)``: check one's own claims from Python, with the verdict table of
``dyntools prove``.

Example::

    import sympy as sp, dyntools
    from dyntools.symbolic import Claim
    x = sp.Symbol("x", real=True)
    report = dyntools.prove([Claim.equation("square", (x + 1) ** 2, x**2 + 1)])
    print(report)                  # the table; refuted, counterexample x = 1, difference 2
    report["square"].verdict       # -> 'refuted'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dyntools.symbolic.core import INCONCLUSIVE, Claim, ClaimResult, claim_list


@dataclass
class ProofReport:
    """The results of :func:`prove`, in order; ``str()`` is the verdict table."""

    results: list[ClaimResult]

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, key) -> ClaimResult:
        if isinstance(key, str):
            for r in self.results:
                if r.claim.name == key:
                    return r
            raise KeyError(key)
        return self.results[key]

    @property
    def all_as_expected(self) -> bool:
        return all(r.as_expected for r in self.results)

    def table(self) -> str:
        """The verdict table with the counterexamples and undecided reasons below it."""
        from dyntools.symbolic import render

        lines = [render.text_table(self.results)]
        for r in self.results:
            if r.counterexample:
                lines.append(f"  {r.claim.name}: counterexample "
                             + ", ".join(f"{k}={v}" for k, v in r.counterexample.items()))
            elif r.verdict == INCONCLUSIVE:
                lines.append(f"  {r.claim.name}: {r.reason}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def _repr_markdown_(self) -> str:  # Jupyter
        from dyntools import tables
        from dyntools.symbolic import render

        notes = [f"- `{r.claim.name}`: counterexample "
                 + ", ".join(f"`{k} = {v}`" for k, v in r.counterexample.items())
                 for r in self.results if r.counterexample]
        notes += [f"- `{r.claim.name}`: {r.reason}" for r in self.results if r.verdict == INCONCLUSIVE]
        return tables.markdown_table(render.table_rows(self.results)) + ("\n\n" + "\n".join(notes) if notes else "")

    def markdown(self) -> str:
        from dyntools.symbolic import render

        return render.markdown(self.results)

    def latex(self) -> str:
        from dyntools.symbolic import render

        return render.latex(self.results)

    def summary(self) -> dict:
        """The JSON-able summary that ``dyntools prove --json`` prints."""
        from dyntools.symbolic import render

        return render.summary(self.results)


def prove(claims: Claim | Iterable[Claim], *, timeout: float | None = None) -> ProofReport:
    """Run ``claims`` (one :class:`Claim` or an iterable of them) and return a :class:`ProofReport`.

    Each claim runs under its own budget (``Claim.timeout``, else ``timeout``, else 60 s); a claim
    whose derivation raises is *inconclusive* with the error as its reason.

    Parameters
    ----------
    claims : Claim or iterable of Claim
        The claims to run.
    timeout : float, optional
        The budget in seconds of a claim without its own.

    Returns
    -------
    ProofReport
        One verdict per claim (verified, refuted with a counterexample, or inconclusive with a reason).
    """
    claims = claim_list(claims, "prove() takes")
    names = [c.name for c in claims]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate claim name(s): {', '.join(dup)}")
    return ProofReport([c.run(timeout=timeout) for c in claims])
