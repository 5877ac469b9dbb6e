"""The user guide's sections: a guide page that ``guide/index.md`` does not list yet still gets into the site.

``guide/index.md`` groups the guide pages into sections (one toctree each), written by hand. A page added to
``docs/guide/`` without an entry there would fail the build ("document isn't included in any toctree"); this
extension appends it, before Sphinx reads the sources, to a last section "More guides" of the staged copy
(``python docs/build.py`` builds a copy, so the checkout is not written). ``tests/test_docs.py`` fails while
that section exists, so the page is placed in its section by hand, but the rest of the site still builds.
"""

from __future__ import annotations

import re
from pathlib import Path

from source_writer import writes_source

#: the caption of the section the unlisted pages go to
MORE = "More guides"


def unlisted(index_text: str, pages: list[str]) -> list[str]:
    """The page names (stems) of ``pages`` that no toctree of ``index_text`` lists."""
    listed = set()
    for block in re.findall(r"```\{toctree\}(.*?)```", index_text, flags=re.S):
        listed |= {line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith(":")}
    return [page for page in pages if page not in listed and page != "index"]


def complete(srcdir: Path) -> list[str]:
    """Append the unlisted guide pages of ``srcdir`` to its ``guide/index.md``; returns them."""
    index = Path(srcdir) / "guide" / "index.md"
    if not index.exists() or (Path(srcdir) / "build.py").exists():
        return []                      # the checkout itself (build.py stages a copy without it) is never written
    text = index.read_text(encoding="utf-8")
    missing = unlisted(text, sorted(path.stem for path in index.parent.glob("*.md")))
    if missing:
        index.write_text(text.rstrip() + f"\n\n```{{toctree}}\n:maxdepth: 1\n:caption: {MORE}\n\n"
                         + "".join(f"{page}\n" for page in missing) + "```\n", encoding="utf-8")
    return missing


setup = writes_source(complete)
