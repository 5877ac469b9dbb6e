"""Page titles in plain text: the browser tab, the sidebar and the tables of contents show ``Mₜ``, not ``\\(M_t\\)``.

A heading may hold math (exercise 2's "the preconditioner $M_t$ of RMSProp with L2"). Sphinx copies the heading's
nodes into the page title (the HTML ``<title>``, which MathJax never typesets) and into the table of contents
(the sidebar and the toctree entries). After Sphinx has collected them, this extension replaces every math node
of those copies by a plain-text reading of its TeX (:func:`plain`); the heading on the page keeps its math.
"""

from __future__ import annotations

import re

from docutils import nodes

SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
SUP = dict(zip("0123456789+-=()in", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿ"))
GREEK = {name: chr(0x3B1 + i) for i, name in enumerate(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho varsigma sigma "
    "tau upsilon phi chi psi omega".split())}
GREEK |= {name.capitalize(): chr(0x391 + i) for i, name in enumerate(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho _ sigma "
    "tau upsilon phi chi psi omega".split()) if name != "_"}
SYMBOLS = {"cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈", "to": "→",
           "infty": "∞", "nabla": "∇", "sqrt": "√", "partial": "∂", "sum": "∑", "ne": "≠", "neq": "≠"}


def _script(text: str, table: dict[str, str], mark: str) -> str:
    """``text`` as Unicode sub/superscripts when every character has one, else ``mark`` + text (``_{ab}``)."""
    if text and all(ch in table for ch in text):
        return "".join(table[ch] for ch in text)
    return f"{mark}{text}" if len(text) == 1 else f"{mark}{{{text}}}"


def plain(tex: str) -> str:
    """A plain-text reading of inline TeX: ``M_t`` → ``Mₜ``, ``\\beta_2`` → ``β₂``, ``x^{2}`` → ``x²``,
    ``\\mathrm{lr}`` → ``lr``; what has no Unicode form keeps its marks (``\\eta_{b}`` → ``η_b``)."""
    text = tex.strip()
    text = re.sub(r"^(\\\(|\$+)|(\\\)|\$+)$", "", text).strip()
    text = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname|boldsymbol|mathcal)\s*\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\([A-Za-z]+)\s*", lambda m: GREEK.get(m.group(1), SYMBOLS.get(m.group(1), m.group(1))), text)
    text = re.sub(r"([_^])(?:\{([^{}]*)\}|(\w))",
                  lambda m: _script(m.group(2) if m.group(2) is not None else m.group(3),
                                    SUB if m.group(1) == "_" else SUP, m.group(1)), text)
    text = re.sub(r"(?<![_^])\{([^{}]*)\}", r"\1", text)          # groups that were only grouping
    return re.sub(r"\\[,;:! ]", " ", text).replace("\\", "")


def plain_math(node: nodes.Node) -> None:
    """Replace, in place, every math node under ``node`` by its plain-text reading."""
    for math in list(node.findall(nodes.math)):
        math.replace_self(nodes.Text(plain(math.astext())))


def on_doctree_read(app, doctree) -> None:
    env = app.env
    docname = env.current_document.docname
    for store in (env.titles, env.longtitles, env.tocs):
        if docname in store:
            plain_math(store[docname])


def setup(app):
    app.connect("doctree-read", on_doctree_read, priority=900)   # after Sphinx's title and toc collectors (500)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
