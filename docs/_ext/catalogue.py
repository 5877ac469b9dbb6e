"""The site's catalogue page: every experiment, report entry and kind of figure, generated from the plugins.

``catalogue.md`` is written into the staged copy of ``docs/`` (``python docs/build.py``) before Sphinx reads the
sources, from :mod:`dyntools.plugins` — the one discovery of experiments — so an experiment added as one module
(in ``simulations/``, or in a user's package through the ``dyntools.plugins`` entry points) is listed without
any edit of the docs.
"""

from __future__ import annotations

from pathlib import Path

from source_writer import writes_source

#: the page's name in the site (``index.md`` lists it)
PAGE = "catalogue.md"


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _text(text: str) -> str:
    """Free text (a help line, a title) read as text, not as Markdown markup or HTML."""
    for char in "\\*_`[]<>$":
        text = text.replace(char, "\\" + char)
    return text


def _table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def page() -> str:
    """The catalogue page (MyST Markdown): the experiments of both verbs, the report's entries, the figures."""
    from dyntools import plugins

    figures = plugins.figures()
    rows = []
    for verb in ("simulate", "sweep"):
        for name, exp in sorted(plugins.experiments(verb).items()):
            kinds = sorted(schema.kind for schema in exp.results)
            drawn = ", ".join(f"`{k}`" for k in kinds if k in figures) or "—"
            rows.append((f"`dyntools {verb} {name}`", _text(exp.help), drawn, _owner(exp)))
    entries = [(f"`{name}`", _text(entry.title), entry.order) for name, entry in plugins.catalogue().items()]
    kinds = [(f"`{kind}`", f"`{plotter.__module__}.{plotter.__qualname__}`")
             for kind, plotter in sorted(figures.items())]
    text = ["# Catalogue", "",
            "Generated from the plugins (`dyntools.plugins`) when the site is built: every experiment, every entry "
            "of `dyntools reproduce`, every kind of result `dyntools plot` draws. An experiment is one module; "
            "see {doc}`architecture` (\"How to add an experiment\").", "",
            "## Experiments", "", *_table(("command", "what it runs", "figures of", "module"), rows), "",
            "## Report entries", "", "In the order of the report (`dyntools reproduce --only NAME` runs one).", "",
            *_table(("entry", "title", "order"), entries), "",
            "## Figures", "", "The plotter each kind of result is drawn by (`dyntools plot DIR`).", "",
            *_table(("result kind", "plotter"), kinds), ""]
    return "\n".join(text)


def _owner(exp) -> str:
    """The module that declares ``exp`` (that of its ``run`` hook)."""
    return f"`{getattr(exp.run, '__module__', '?')}`"


def write_page(srcdir: Path) -> Path:
    """Write :func:`page` as ``srcdir/catalogue.md``; returns its path."""
    path = Path(srcdir) / PAGE
    path.write_text(page(), encoding="utf-8")
    return path


setup = writes_source(write_page)
