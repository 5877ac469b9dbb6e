"""Links from the guides to the API reference: every ``dt.<name>`` a page writes becomes a link to its entry.

Two places hold such names. Inline code (```dt.train(…)```) is a ``literal`` node of the doctree: it is
wrapped in a reference to the entry's page once references are resolved. Code blocks are highlighted by
Pygments when the page is written, into ``<span class="n">dt</span><span class="o">.</span><span
class="n">train</span>``: those spans are wrapped in a link in the written HTML (:func:`link_code`). The entry
a dotted name means is :func:`public_api.resolve` (the longest documented prefix: ``dt.RunResult.status`` links
to ``dt.RunResult``). A ``dt.x`` in prose whose ``x`` is not a public name is a warning, so a guide cannot name
an API that does not exist (the build runs with ``-W``). The API pages themselves are left alone.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import public_api
from docutils import nodes
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

#: ``dt.name.name`` inside inline code
INLINE = re.compile(r"(?<![\w.])dt\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
#: the same name as Pygments writes it in a highlighted Python block
_PART = r'<span class="n[a-z]*">(\w+)</span>'
CODE = re.compile(r'<span class="n">dt</span><span class="o">\.</span>' + _PART
                  + r'(?:<span class="o">\.</span>' + _PART + r')*')
_PARTS = re.compile(r'<span class="n[a-z]*">(\w+)</span>')


def _skipped(docname: str) -> bool:
    return docname.startswith("api/")


def link_inline(app, doctree, docname):
    """Wrap every inline ``dt.<name>`` code of a page in a link to its entry; warn on an unknown name."""
    if _skipped(docname) or app.builder.format != "html":
        return
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, nodes.reference):
            continue
        match = INLINE.search(literal.astext())
        if match is None:
            continue
        entry = public_api.resolve(match.group(1))
        if entry is None:
            LOGGER.warning("dt.%s is not a public name of dyntools (no API entry to link)", match.group(1),
                           location=literal)
            continue
        uri = app.builder.get_relative_uri(docname, entry.page) + f"#{entry.target}"
        link = nodes.reference("", "", internal=True, refuri=uri, classes=["dyntools-api-link"])
        literal.replace_self(link)
        link.append(literal)


def link_code(text: str, prefix: str) -> str:
    """The HTML ``text`` with each highlighted ``dt.<name>`` of its code blocks wrapped in a link (``prefix``:
    the path from the page to the site's root)."""
    def replace(match):
        entry = public_api.resolve(".".join(_PARTS.findall(match.group(0))[1:]))
        if entry is None:
            return match.group(0)
        href = html.escape(f"{prefix}{entry.page}.html#{entry.target}")
        return f'<a class="dyntools-api-link" href="{href}">{match.group(0)}</a>'
    return CODE.sub(replace, text)


def link_written_code(app, exception):
    """After the HTML is written: link the ``dt.`` names of every page's code blocks (not the API pages')."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for docname in app.env.found_docs:
        if _skipped(docname):
            continue
        path = out / f"{docname}.html"
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        linked = link_code(text, "../" * docname.count("/"))
        if linked != text:
            path.write_text(linked, encoding="utf-8")


def setup(app):
    app.connect("doctree-resolved", link_inline)
    app.connect("build-finished", link_written_code)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
