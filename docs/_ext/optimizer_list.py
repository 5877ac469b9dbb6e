"""The site's optimizer list: every optimizer name of the alias table, generated when the site is built.

``optimizer-list.md`` is written into the staged copy of ``docs/`` before Sphinx reads the sources, from
:data:`dyntools.optim.aliases.ALIASES` — so an optimizer added as one ``@alias`` factory (see
:doc:`howto/add-an-optimizer`) is listed, with its PyTorch name or "—", its chain and its heatmap lr range,
without any edit of the docs.
"""

from __future__ import annotations

import re
from pathlib import Path

from source_writer import writes_source

#: the page's name in the site (``index.md`` lists it)
PAGE = "optimizer-list.md"

_MARKUP = str.maketrans({c: "\\" + c for c in "\\*_[]<>$|"})
#: a docstring's ``*word*`` (reStructuredText emphasis, escaped by :data:`_MARKUP`): emphasis again
_EMPHASIS = re.compile(r"\\\*(\w[^*\\]*)\\\*")


def _text(text: str) -> str:
    """A docstring's first paragraph as one table cell: its code spans kept, other markup escaped."""
    text = " ".join(str(text).split()).replace("``", "`")
    text = text[:-1] + "." if text.endswith(":") else text        # the math that followed is on the API page
    parts = text.split("`")
    if len(parts) % 2 == 0:                                           # an unpaired backtick: all plain text
        parts = [text.replace("`", "'")]
    cells = [f"`{p}`" if i % 2 else _EMPHASIS.sub(r"*\1*", p.translate(_MARKUP)) for i, p in enumerate(parts)]
    return "".join(cells).replace("|", "\\|")


def rows() -> list[tuple[str, str, str, str, str]]:
    """``(name, torch.optim class, chain, lr range, summary)`` of every alias, in the table's order."""
    from dyntools.optim import ALIASES, make

    out = []
    for name, row in ALIASES.items():
        momentum = {"momentum": 0.9} if row.grid_momentum else {}      # as the sweep builds them
        chain = " → ".join(make(name, lr=row.lr_range[0], weight_decay=0.1, **momentum).chain.names())
        out.append((name, row.torch or "—", chain, f"{row.lr_range[0]:g} – {row.lr_range[1]:g}", row.summary))
    return out


def page() -> str:
    """The optimizer list (MyST Markdown)."""
    lines = ["# Optimizer list", "",
             "Generated from the alias table (`dyntools.optim.aliases.ALIASES`) when the site is built: every name "
             "that `dt.optim.make(name, …)`, `NAME(…)` at the top of `import dyntools as dt`, and "
             "`dyntools sweep adamw-grid --optimizers NAME` accept. "
             "The chain is the one built with a weight decay of 0.1 and, where the sweep passes `--momentum`, a "
             "momentum of 0.9 (where the decay stands: coupled before the "
             "preconditioner, decoupled after it); \"—\" in the PyTorch column: `torch.optim` has no such class "
             "(`dyntools.optim.torch_names.torch_name(name)` is `None`). To add one, see "
             "{doc}`howto/add-an-optimizer`.", "",
             "| name | PyTorch | chain (λ = 0.1) | heatmap lr range | what it does |", "|---|---|---|---|---|"]
    for name, torch, chain, lr, summary in rows():
        torch = f"`torch.optim.{torch}`" if torch != "—" else torch
        lines.append(f"| `{name}` | {torch} | `{chain}` | {lr} | {_text(summary)} |")
    return "\n".join(lines + [""])


def write_page(srcdir: Path) -> Path:
    """Write :func:`page` as ``srcdir/optimizer-list.md``; returns its path."""
    path = Path(srcdir) / PAGE
    path.write_text(page(), encoding="utf-8")
    return path


setup = writes_source(write_page)
