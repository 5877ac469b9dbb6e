"""Output of claim results: a text table, a Markdown document, a LaTeX document, JSON."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

from dyntools import tables
from dyntools.symbolic.claim_text import MARK, claim_markdown, is_math
from dyntools.symbolic.core import ClaimResult


def table_rows(results: Sequence[ClaimResult]) -> list[dict]:
    return [
        {
            "claim": r.claim.name,
            "kind": "control" if r.claim.control else "claim",
            "verdict": r.verdict,
            "expected": r.claim.expected,
            "ok": "yes" if r.as_expected else "NO",
            "seconds": f"{r.seconds:.3f}",
        }
        for r in results
    ]


def text_table(results: Sequence[ClaimResult]) -> str:
    total = sum(r.seconds for r in results)
    body = tables.text_table(table_rows(results))
    verified = sum(r.verdict == "verified" for r in results)
    controls = [r for r in results if r.claim.control]
    expected = sum(r.as_expected for r in results)
    line = f"{verified}/{len(results)} verified"
    if controls:
        line += (f", {sum(r.verdict == 'refuted' for r in controls)} of {len(controls)} false controls "
                 f"refuted as expected")
    line += f"; {expected}/{len(results)} as expected, total {total:.2f} s"
    return f"{body}\n{line}"


def summary(results: Sequence[ClaimResult]) -> dict:
    return {
        "claims": [r.as_dict() for r in results],
        "counts": {v: sum(r.verdict == v for r in results) for v in ("verified", "refuted", "inconclusive")},
        "all_verified": all(r.verdict == "verified" for r in results),
        "all_as_expected": all(r.as_expected for r in results),
        "controls": sum(r.claim.control for r in results),
        "seconds": round(sum(r.seconds for r in results), 4),
    }


# ------------------------------------------------------------------------------------ Markdown


def markdown(results: Sequence[ClaimResult], *, title: str = "dyntools: verified derivations") -> str:
    """The whole document: verdict table, then every claim grouped by family."""
    lines = [
        f"# {title}",
        "",
        "Each claim below was checked by `dyntools prove` with exact sympy simplification/solving "
        "or certified interval arithmetic (mpmath `iv`). *False controls* are statements that "
        "must come out **refuted**; their counterexample is printed.",
        "",
        tables.markdown_table(table_rows(results)),
        "",
    ]
    family = None
    for r in results:
        if r.claim.family != family:
            family = r.claim.family
            lines += [f"## {family}", ""]
        lines.append(claim_markdown(r))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------- LaTeX

_TEX = {
    "θ": r"$\theta$",
    "λ": r"$\lambda$",
    "α": r"$\alpha$",
    "β": r"$\beta$",
    "γ": r"$\gamma$",
    "η": r"$\eta$",
    "ε": r"$\varepsilon$",
    "μ": r"$\mu$",
    "Σ": r"$\Sigma$",
    "σ": r"$\sigma$",
    "ρ": r"$\rho$",
    "δ": r"$\delta$",
    "ξ": r"$\xi$",
    "τ": r"$\tau$",
    "φ": r"$\phi$",
    "κ": r"$\kappa$",
    "∇": r"$\nabla$",
    "⊙": r"$\odot$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "≠": r"$\ne$",
    "∈": r"$\in$",
    "∉": r"$\notin$",
    "⊂": r"$\subset$",
    "⊆": r"$\subseteq$",
    "→": r"$\to$",
    "↦": r"$\mapsto$",
    "⇒": r"$\Rightarrow$",
    "⇔": r"$\Leftrightarrow$",
    "∀": r"$\forall$",
    "∃": r"$\exists$",
    "√": r"$\surd$",
    "∞": r"$\infty$",
    "·": r"$\cdot$",
    "×": r"$\times$",
    "−": "-",
    "²": r"$^2$",
    "³": r"$^3$",
    "⁴": r"$^4$",
    "⁻": r"$^{-}$",
    "¹": r"$^1$",
    "ᵗ": r"$^t$",
    "ᵀ": r"$^T$",
    "₀": r"$_0$",
    "₁": r"$_1$",
    "₂": r"$_2$",
    "₃": r"$_3$",
    "ₜ": r"$_t$",
    "ᵢ": r"$_i$",
    "′": "'",
    "‖": r"$\|$",
    "≈": r"$\approx$",
    "±": r"$\pm$",
    "∪": r"$\cup$",
    "…": r"\ldots{}",
    "—": "---",
    "–": "--",
    "✓": "ok",
    "✗": "failed",
    "⊇": r"$\supseteq$",
    "½": r"$\tfrac12$",
    "¼": r"$\tfrac14$",
    "∂": r"$\partial$",
    "ℕ": r"$\mathbb{N}$",
    "ᵏ": r"$^k$",
    "ₖ": r"$_k$",
    "ⁿ": r"$^n$",
    "ᵘ": r"$^u$",
    "ᵛ": r"$^v$",
    "Λ": r"$\Lambda$",
    "Δ": r"$\Delta$",
    "ℓ": r"$\ell$",
    "⟨": r"$\langle$",
    "⟩": r"$\rangle$",
    "←": r"$\leftarrow$",
    "⁺": r"$^+$",
    "≡": r"$\equiv$",
    "“": "``",
    "”": "''",
    "ℝ": r"$\mathbb{R}$",
    "ḡ": r"$\bar g$",
    "ψ": r"$\psi$",
    "ν": r"$\nu$",
    "ω": r"$\omega$",
    "π": r"$\pi$",
}
_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    ">": r"$>$",
    "<": r"$<$",
    "|": r"$|$",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


def tex_text(text: str) -> str:
    """Plain text (with Unicode mathematics) as LaTeX text; backticks become \\texttt."""
    out, code = [], False
    for ch in text:
        if ch == "\u0302":  # combining hat: m̂, θ̂
            if out and len(out[-1]) == 1 and out[-1].isalpha():
                out[-1] = rf"$\hat{{{out[-1]}}}$"
            elif out and len(out[-1]) > 2 and out[-1][0] == out[-1][-1] == "$":
                out[-1] = rf"$\hat{{{out[-1][1:-1]}}}$"
        elif ch == "`":
            out.append("}" if code else r"\texttt{")
            code = not code
        else:
            out.append(_SPECIAL.get(ch) or _TEX.get(ch) or ch)
    if code:
        out.append("}")
    return "".join(out)


def latex(results: Sequence[ClaimResult], *, title: str = "dyntools: verified derivations") -> str:
    stamp = datetime.date.today().isoformat()
    lines = [
        r"\documentclass[11pt]{article}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage[margin=2.2cm]{geometry}",
        r"\usepackage{longtable}",
        r"\allowdisplaybreaks",
        rf"\title{{{tex_text(title)}}}",
        rf"\date{{{stamp}}}",
        r"\begin{document}",
        r"\maketitle",
        tex_text(
            "Each claim was checked by `dyntools prove`: exact sympy simplification/solving or "
            "certified interval arithmetic (mpmath iv). False controls must come out refuted, "
            "with a counterexample."
        ),
        "",
        r"\begin{longtable}{llll}",
        r"claim & verdict & expected & seconds\\ \hline",
    ]
    lines += [
        rf"\texttt{{{tex_text(r.claim.name)}}} & {r.verdict} & {r.claim.expected} & {r.seconds:.3f}\\"
        for r in results
    ]
    lines += [r"\end{longtable}"]
    family = None
    for r in results:
        c = r.claim
        if c.family != family:
            family = c.family
            lines += [rf"\section*{{{tex_text(family)}}}"]
        lines += [rf"\subsection*{{\texttt{{{tex_text(c.name)}}}: {tex_text(c.title)}}}"]
        if c.control:
            lines += [r"\noindent\textbf{False control} (expected verdict: refuted).\par"]
        lines += [rf"\noindent\textbf{{Statement.}} {tex_text(c.statement)}", r"\[", c.latex, r"\]"]
        if c.assumptions:
            lines += [
                r"\noindent\textbf{Assumptions.} "
                + "; ".join(f"${k}$: " + (f"${v}$" if is_math(v) else tex_text(v))
                            for k, v in c.assumptions.items())
                + r"\par"
            ]
        if c.source:
            lines += [rf"\noindent\textbf{{Source.}} {tex_text(c.source)}\par"]
        lines += [r"\begin{enumerate}"]
        for s in r.steps:
            tag = "" if s.kind == "note" else rf" \emph{{[{s.kind}: {tex_text(MARK[s.ok])}]}}"
            lines.append(rf"\item {tex_text(s.text)}{tag}")
            if s.latex:
                lines += [r"\[", s.latex, r"\]"]
            if s.detail and s.kind != "note":
                lines.append(rf"{{\small {tex_text(s.detail)}}}")
        lines += [
            r"\end{enumerate}",
            rf"\noindent\textbf{{Verdict: {r.verdict}}} ({tex_text(r.reason)}; {r.seconds:.3f} s).\par",
        ]
        if r.counterexample:
            lines.append(
                r"\noindent Counterexample: "
                + tex_text(", ".join(f"{k} = {v}" for k, v in r.counterexample.items()))
                + r"\par"
            )
    lines += [r"\end{document}"]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------- files


def check_output_file(path, option: str) -> Path:
    """Fail early if ``path`` cannot be written (see :func:`dyntools.store.check_output_file`)."""
    from dyntools import store

    return store.check_output_file(path, option)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory (fsync, atomic rename;
    a link or a device is never replaced)."""
    from dyntools import store

    store.atomic_write_text(path, text)
