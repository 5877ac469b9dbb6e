"""One claim result as Markdown: the section :meth:`ClaimResult.markdown` returns and the report repeats.

It reads a :class:`~dyntools.symbolic.core.ClaimResult` through its attributes and imports nothing of
:mod:`dyntools.symbolic`, so the result class (:mod:`~dyntools.symbolic.core`) and the documents built
from many results (:mod:`~dyntools.symbolic.render`) both use it without importing each other.
"""

from __future__ import annotations

#: The check mark of a step: passed, failed, not decided.
MARK = {True: "✓", False: "✗", None: "?"}


def is_math(value: str) -> bool:
    """Whether ``value`` is LaTeX (a backslash, a super- or subscript) rather than prose."""
    return any(ch in value for ch in "\\^_")


def _assumptions_md(assumptions: dict) -> str:
    return "; ".join(f"${k}$: " + (f"${v}$" if is_math(v) else v) for k, v in assumptions.items())


def claim_markdown(r, heading: str = "###") -> str:
    """One claim: statement, assumptions, source, numbered derivation (LaTeX), verdict.

    ``r`` is a :class:`~dyntools.symbolic.core.ClaimResult` (read through its attributes only)."""
    c = r.claim
    lines = [f"{heading} `{c.name}` — {c.title}", ""]
    if c.control:
        lines += ["> **False control** (expected verdict: refuted).", ""]
    lines += [f"**Statement.** {c.statement}", "", f"$$ {c.latex} $$", ""]
    if c.assumptions:
        lines += ["**Assumptions.** " + _assumptions_md(c.assumptions), ""]
    if c.domains:
        lines += ["**Domains** (where counterexamples are searched). "
                  + "; ".join(f"`{k}` ∈ `{v}`" for k, v in c.domains.items()), ""]
    if c.source:
        lines += [f"**Source.** {c.source}", ""]
    lines += ["**Derivation.**", ""]
    for k, s in enumerate(r.steps, 1):
        tag = "" if s.kind == "note" else f" [{s.kind} {MARK[s.ok]}]"
        lines.append(f"{k}. {s.text}{tag}")
        if s.latex:
            lines += ["", f"   $$ {s.latex} $$", ""]
        if s.detail and s.kind != "note":
            lines.append(f"   <br>_{s.detail}_")
    lines += ["", f"**Verdict: {r.verdict}** ({r.reason}; {r.seconds:.3f} s)."]
    if r.counterexample:
        lines.append("Counterexample: " + ", ".join(f"`{k} = {v}`" for k, v in r.counterexample.items()))
    return "\n".join(lines) + "\n"
