"""Serve MathJax from the built site instead of a CDN, so that equations render without a network.

The MathJax 3.2 build comes from the PyPI package ``sphinx-mathjax-offline`` (a dependency of the ``docs``
extra). Its own Sphinx hook copies all 24 MB of MathJax into every build; this one copies the single-file
SVG renderer ``tex-svg.js`` (fonts included, no font files to fetch) and the components it may load on
demand (TeX extensions such as ``\\boldsymbol``, the context menu, the assistive MathML), about 3.5 MB.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sphinx.util.fileutil import copy_asset

#: what tex-svg.js may load at run time, relative to the MathJax directory
COMPONENTS = ("tex-svg.js", "input/tex/extensions", "ui", "a11y")
TARGET = "_static/mathjax"


def mathjax_dir() -> Path:
    """The directory of the MathJax build shipped by ``sphinx-mathjax-offline``."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("the docs need the package sphinx-mathjax-offline: pip install 'dyntools[docs]'")
    return Path(spec.origin).parent / "static" / "mathjax"


def _copy(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    source, target = mathjax_dir(), Path(app.outdir) / TARGET
    for component in COMPONENTS:
        if (source / component).is_dir():
            copy_asset(source / component, target / component)
        else:
            target.mkdir(parents=True, exist_ok=True)
            copy_asset(source / component, target)


def setup(app):
    mathjax_dir()                                   # fail early, with the reason, when it is missing
    app.config.mathjax_path = "mathjax/tex-svg.js"  # relative: resolved against _static
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
