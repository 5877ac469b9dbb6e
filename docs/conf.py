"""Sphinx configuration of the dyntools documentation (built by ``python docs/build.py``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("DYNTOOLS_ROOT", HERE.parent)).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE / "_ext"))

import dyntools  # noqa: E402

project = "dyntools"
author = "the dyntools authors"
copyright = "2026, the dyntools authors"
version = release = dyntools.__version__

extensions = [
    "myst_nb",                      # MyST Markdown pages and Jupyter notebooks (myst-parser comes with it)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",          # the docstrings' NumPy-style "Parameters" sections
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",          # [source] links (public_api points each public path at its defining module)
    "offline_mathjax",              # MathJax served from the site itself: no CDN, works offline
    "public_api",                   # one reference page per public name of ``import dyntools as dt``
    "api_links",                    # every ``dt.name`` of a guide links to its API entry
    "guide_sections",               # a guide page not yet in a section of guide/index.md still builds
    "plain_titles",                 # a heading's math reads as plain text in the <title> and the sidebar
    "catalogue",                    # catalogue.md: every experiment, report entry and figure, from the plugins
    "optimizer_list",               # optimizer-list.md: every optimizer name, from the alias table
]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks: ``python docs/build.py`` executes them here at full size (DYNTOOLS_DOCS_EXECUTE=cache, jupyter-cache
# keyed by each notebook's code, one cache per dyntools version); ``--no-execute`` and the test suite's build render
# them as they are (the suite stages the copies tests/test_notebooks.py executed at small sizes).
nb_execution_mode = os.environ.get("DYNTOOLS_DOCS_EXECUTE", "off")
nb_execution_timeout = 1800
nb_execution_raise_on_error = True
nb_merge_streams = True
nb_output_stderr = "remove"         # warnings and progress bars (with the machine's paths) are not content
nb_execution_excludepatterns = ["notebooks/exercises/*"]   # the student versions have blanks: never run
nb_render_markdown_format = "myst"   # the Markdown outputs (verdict tables) have GFM tables: not CommonMark

autodoc_member_order = "bysource"
autodoc_typehints = "signature"     # the signatures show the types; the docstrings say what they mean
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True    # defaults as written in the source (``lr=1e-3``, ``dtype=np.float64``), not repr
autodoc_default_options = {"members": False}
autosummary_generate = False
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
napoleon_use_param = False        # types as text: "float64[p]" or "optional" are not cross-references

nitpicky = True
suppress_warnings = ["myst.header"]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]

html_theme = "pydata_sphinx_theme"
html_title = f"dyntools {release}"
html_static_path = ["_static"]
html_css_files = ["dyntools.css"]    # content width, one-row header, wrapping API titles
html_theme_options = {
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "navbar_persistent": ["search-button"],   # the search as an icon: the header fits one row at 1280 px
    "footer_start": ["copyright"],
    "footer_end": ["dyntools-version"],
    "show_toc_level": 2,
    "header_links_before_dropdown": 3,
    "navigation_with_keys": False,
    # notebook pages give the figures the secondary sidebar's width too: a 10-inch figure shows at ~97 % of its
    # pixels at 1280 px instead of 79 % (its headings stay in the left sidebar's entry)
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"],     # exact names: the last match wins
                                **{f"notebooks/{nb.stem}": [] for nb in (HERE / "notebooks").glob("[0-9]*.ipynb")}},
}
html_context = {"dyntools_version": release}
html_show_sourcelink = False
