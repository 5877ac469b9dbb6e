"""The documentation site: it builds with warnings as errors and every reference checked, documents every
public name of ``import dyntools as dt``, includes every user-guide page, and renders — title, version and
equations typeset by the bundled MathJax — in a real headless browser (tests/browser.py).

The build needs the ``docs`` extra (``pip install ".[docs]"``; the ``test`` extra pulls it in); without it, or
without a Chromium for the browser check, the tests skip and say why. The site is built on the fast path: the
notebooks are rendered from the copies tests/test_notebooks.py executed in this session (conftest.py runs this
file last), or without outputs when this file runs alone; the default build's execution and cache are tested on a
tiny staged site (:func:`test_the_default_build_executes_each_notebook_once_and_caches_it`)."""

from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path

import pytest

import dyntools
from tests import browser

ROOT = Path(__file__).resolve().parents[1]
DOCS_PACKAGES = ("sphinx", "pydata_sphinx_theme", "myst_parser", "myst_nb", "sphinx-mathjax-offline")
MISSING = [name for name in DOCS_PACKAGES if importlib.util.find_spec(name) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"the docs extra is not installed (missing {', '.join(MISSING)}):"
                                                       " pip install '.[docs]'")


def _load(path: Path, name: str):
    """The module of the file ``path``, loaded as Sphinx loads the site's extensions: with its folder on
    ``sys.path`` (docs/conf.py puts docs/_ext there), so that an extension may import its neighbours."""
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    build = _load(ROOT / "docs" / "build.py", "dyntools_docs_build")
    executed = tmp_path_factory.getbasetemp() / "executed-notebooks"
    out = tmp_path_factory.mktemp("docs") / "html"
    start = time.perf_counter()
    proc = build.build(out, executed=executed if executed.is_dir() else None, execute=False)   # the fast path
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, f"the docs build failed or warned:\n{proc.stdout[-5000:]}\n{proc.stderr[-20000:]}"
    print(f"docs built in {seconds:.1f} s")
    return out


def public_names() -> list[str]:
    return [name for name in dyntools.__all__ if name != "__version__"]


def test_the_site_builds_without_a_warning(site):
    assert (site / "index.html").exists() and (site / "api" / "index.html").exists()


def test_every_public_name_has_a_reference_page(site):
    assert set(public_names()) >= {"train", "solve", "prove", "Claim", "MLP", "adamw", "schedules", "RunResult"}
    api_index = (site / "api" / "index.html").read_text()
    for name in public_names():
        page = site / "api" / f"{name}.html"
        assert page.exists(), f"dt.{name} has no reference page"
        html = page.read_text()
        assert f"dt.{name}" in html and ('<dl class="py' in html or 'id="module-' in html), \
            f"the page of dt.{name} documents nothing"
        assert f'href="{name}.html"' in api_index, f"the API index does not list dt.{name}"


def test_key_docstrings_render_their_math(site):
    for name in ("train", "solve"):
        html = (site / "api" / f"{name}.html").read_text()
        assert html.count('class="math notranslate nohighlight"') >= 2, f"dt.{name}'s docstring states no math"


def test_every_page_of_the_user_guide_is_in_the_site(site):
    pages = sorted((ROOT / "docs" / "guide").glob("*.md")) + sorted((ROOT / "docs" / "howto").glob("*.md"))
    assert len(pages) >= 12
    for page in pages:
        assert (site / page.relative_to(ROOT / "docs")).with_suffix(".html").exists(), f"{page.name} is not built"
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "notebooks" / f"{notebook.stem}.html").exists(), f"{notebook.name} is not rendered"


def test_the_version_is_on_the_site(site):
    assert f"dyntools {dyntools.__version__}" in (site / "index.html").read_text()


def _math_spans(html: str) -> int:
    return len(re.findall(r'class="math notranslate nohighlight"', html))


@pytest.mark.parametrize("page, title", [("index.html", "dyntools"), ("api/train.html", "dt.train")])
def test_pages_render_in_a_browser(site, tmp_path, page, title):
    if browser.chromium() is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does)")
    shot = tmp_path / f"{Path(page).stem}.png"
    shown = browser.load(site / page, screenshot=shot, size=(1280, 1600))
    assert shown.title == f"{title} — dyntools {dyntools.__version__}"
    assert f"dyntools {dyntools.__version__}" in shown.dom
    expected = _math_spans((site / page).read_text())
    typeset = re.findall(r'<mjx-container class="MathJax[^"]*" jax="SVG"[^>]*>\s*<svg', shown.dom)
    assert expected >= 1 and len(typeset) >= expected, f"{len(typeset)} of {expected} equations typeset on {page}"
    assert "mjx-merror" not in shown.dom and "data-mjx-error" not in shown.dom
    pixels = browser.image(shot)
    assert pixels.shape[:2] == (1600, 1280) and not browser.is_blank(shot)


def _api():
    """docs/_ext/public_api.py, the generator of the API pages (registered: its dataclass needs its module)."""
    import sys

    name = "dyntools_docs_public_api_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_ext" / "public_api.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_every_module_member_has_an_entry_at_its_public_path_with_a_source_link(site):
    api = _api()
    index = (site / "api" / "index.html").read_text()
    for entry in api.entries():
        page = site / f"{entry.page}.html"
        assert page.exists(), f"dt.{entry.path} has no API page"
        html = page.read_text()
        anchor = f"module-{entry.target}" if entry.kind == "module" else entry.target
        assert f'id="{anchor}"' in html, f"dt.{entry.path}'s page does not define {anchor}"
        if entry.kind in ("function", "class"):
            assert "viewcode-link" in html, f"dt.{entry.path}'s page has no [source] link"
    for title in api.GROUPS:
        assert f">{title}<" in index, f"the API index has no section {title!r}"
    cosine = (site / "api" / "schedules.CosineAnnealingLR.html").read_text()
    assert "T_max</span><span class=\"p\">:</span>" in cosine or "T_max: " in re.sub(r"<[^>]+>", "", cosine), \
        "the signature of dt.schedules.CosineAnnealingLR carries no annotation"
    assert "Parameters" in cosine and _math_spans(cosine) >= 1


def _guide_pages(site):
    return sorted((site / "guide").glob("*.html")) + sorted((site / "howto").glob("*.html")) \
        + sorted((site / "notebooks").glob("*.html")) + [site / "getting-started.html"]


def test_every_dt_name_of_the_guides_links_to_its_api_entry(site):
    code = re.compile(r'<span class="n">dt</span><span class="o">\.</span><span class="n[a-z]*">(\w+)</span>')
    inline = re.compile(r'<code class="docutils literal notranslate">(?:(?!</code>).)*?(?<![\w.])dt\.(\w+)', re.S)
    links = 0
    for page in _guide_pages(site):
        html = page.read_text()
        links += html.count("dyntools-api-link")
        for href in re.findall(r'class="dyntools-api-link[^"]*" href="([^"#]+)', html):
            assert (page.parent / href).resolve().exists(), f"{page.name} links to a missing page {href}"
        unlinked = re.sub(r"<a\s(?:(?!</a>).)*</a>", "", html, flags=re.S)
        left = code.findall(unlinked) + inline.findall(unlinked)
        assert not left, f"{page.name}: dt.{left[0]} is not linked to its API entry"
    assert links >= 100


_OVERFLOW = """<script>window.addEventListener("load", () => {
  for (const e of document.querySelectorAll(".bd-article div.highlight pre, .bd-article table, .bd-article-container,"
                                           + " .pst-scrollable-table-container, .bd-header")) {
    const tall = e.matches(".bd-header") && e.getBoundingClientRect().height > 90;   // the header wrapped
    if (e.scrollWidth > e.clientWidth + 1 || tall)
      e.setAttribute("data-overflow", e.scrollWidth + ">" + e.clientWidth);
  }
});</script>"""


@pytest.mark.parametrize("page", ["guide/optimizers.html", "guide/python-api.html", "api/train.html",
                                  "api/schedules.CosineAnnealingLR.html"])
def test_no_code_block_or_table_is_cut_at_1280_px(site, page):
    if browser.chromium() is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does)")
    source = site / page
    probe = source.with_name(f"_probe_{source.name}")
    probe.write_text(source.read_text().replace("</body>", _OVERFLOW + "</body>"))
    try:
        shown = browser.load(probe, size=(1280, 1000))
    finally:
        probe.unlink()
    cut = re.findall(r'<(\w+)[^>]*data-overflow="([^"]+)"', shown.dom)
    assert not cut, f"{page}: elements wider than their box at 1280 px: {cut[:5]}"


def test_notebooks_are_numbered_once_and_the_exercises_link_the_grader(site):
    titles = []
    for notebook in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        html = (site / "notebooks" / f"{notebook.stem}.html").read_text()
        title = re.search(r"<title>(.*?) &#8212;", html).group(1)
        assert re.match(rf"{notebook.name[:2]} · \S", title), f"{notebook.name}: title {title!r} is not 'NN · …'"
        assert not re.search(r"(/home/|/work/|/tmp/|site-packages|\\.venv)", re.sub(r"<[^>]+>", "", html)), \
            f"{notebook.name}'s page shows a local path"
        titles.append(title)
    assert len(set(titles)) == len(titles)
    for exercise in sorted((ROOT / "notebooks" / "exercises").glob("*.ipynb")):
        page = site / "notebooks" / "exercises" / f"{exercise.stem}.html"
        assert page.exists(), f"{exercise.name} is not in the site"
    listing = (site / "notebooks.html").read_text()
    assert 'href="guide/grading.html"' in listing and "notebooks/exercises/" in listing


def test_every_guide_page_is_in_a_section_of_the_guide(site):
    sections = _load(ROOT / "docs" / "_ext" / "guide_sections.py", "dyntools_docs_guide_sections")
    text = "# G\n\n```{toctree}\n:caption: A\n\nalpha\n```\n"
    assert sections.unlisted(text, ["alpha", "beta", "index"]) == ["beta"]
    html = (site / "guide" / "index.html").read_text()
    assert sections.MORE not in html, "a guide page is not in a section of docs/guide/index.md: add it there"


def _tiny_site(tmp_path: Path) -> tuple[Path, Path]:
    """A site of one page and one notebook, configured with the real docs/conf.py's notebook settings (its
    ``nb_`` lines); the notebook counts its executions in the file named by $DYNTOOLS_TEST_RUNS."""
    import nbformat

    docs, notebooks = tmp_path / "docs", tmp_path / "notebooks"
    docs.mkdir()
    notebooks.mkdir()
    settings = [line for line in (ROOT / "docs" / "conf.py").read_text().splitlines() if line.startswith("nb_")]
    assert any(line.startswith("nb_execution_mode") for line in settings)
    (docs / "conf.py").write_text("import os\nextensions = ['myst_nb']\nexclude_patterns = ['_build']\n"
                                  + "\n".join(settings) + "\n")
    (docs / "index.md").write_text("# Tiny\n\n```{toctree}\n:glob:\n\nnotebooks/*\n```\n")
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 — A tiny notebook"),
                nbformat.v4.new_code_cell("import os\nwith open(os.environ['DYNTOOLS_TEST_RUNS'], 'a') as f:\n"
                                          "    f.write('run\\n')\nprint('six times seven is', 6 * 7)"),
                nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()")]
    nbformat.write(nb, notebooks / "01_tiny.ipynb")
    return docs, notebooks


def test_the_default_build_executes_each_notebook_once_and_caches_it(tmp_path, monkeypatch):
    build = _load(ROOT / "docs" / "build.py", "dyntools_docs_build")
    docs, notebooks = _tiny_site(tmp_path)
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("DYNTOOLS_TEST_RUNS", str(runs))
    out = tmp_path / "site" / "html"
    for attempt in (1, 2):
        proc = build.build(out, docs=docs, notebooks=notebooks, timeout=600)      # the default: execute, cached
        assert proc.returncode == 0, f"build {attempt} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        html = (out / "notebooks" / "01_tiny.html").read_text()
        assert "six times seven is 42" in html and "cell_output" in html, f"build {attempt} shows no output"
        assert re.search(r'<img[^>]+src="[^"]*\.png"', html), f"build {attempt}: the figure is not in the page"
        assert runs.read_text().count("run") == 1, f"build {attempt}: the notebook ran again (the cache missed)"
    assert build.cache_dir(out).is_dir() and build.cache_dir(out).name == dyntools.__version__
    proc = build.build(out, docs=docs, notebooks=notebooks, execute=False, timeout=600)
    assert proc.returncode == 0 and "six times seven is 42" not in (out / "notebooks" / "01_tiny.html").read_text()


def test_the_build_command_executes_by_default_and_fails_on_a_local_path(tmp_path, monkeypatch, capsys):
    import subprocess

    build = _load(ROOT / "docs" / "build.py", "dyntools_docs_build")
    calls = []
    shown = {"text": "a figure"}

    def fake(out, **kw):
        calls.append(kw)
        (Path(out) / "notebooks").mkdir(parents=True, exist_ok=True)
        (Path(out) / "notebooks" / "01_x.html").write_text(f"<html><p>{shown['text']}</p></html>")
        return subprocess.CompletedProcess([], 0)

    monkeypatch.setattr(build, "build", fake)
    assert build.main(["--out", str(tmp_path / "html")]) == 0 and calls[-1]["execute"] is True
    assert build.main(["--out", str(tmp_path / "html"), "--no-execute"]) == 0 and calls[-1]["execute"] is False
    for path in ("/home/ann/venv/lib/python3.12/site-packages/tqdm/auto.py", "C:\\Users\\ann\\nb.py",
                 "/tmp/dyntools-docs-x1/src/notebooks/out.png"):
        shown["text"] = f"Warning: {path}: 3 steps"
        capsys.readouterr()
        assert build.main(["--out", str(tmp_path / "html")]) == 1, path
        assert "01_x.html shows a local path" in capsys.readouterr().err


@pytest.mark.parametrize("tex, text", [("M_t", "Mₜ"), (r"\beta_2", "β₂"), ("x^{2}", "x²"), (r"\(M_t\)", "Mₜ"),
                                       (r"\mathrm{lr}_{t}", "lrₜ"), (r"\eta_{b}", "η_b"),
                                       (r"\sqrt{v_t} + \epsilon", "√vₜ + ε"), (r"\Sigma", "Σ")])
def test_a_titles_math_reads_as_plain_text(tex, text):
    titles = _load(ROOT / "docs" / "_ext" / "plain_titles.py", "dyntools_docs_plain_titles")
    assert titles.plain(tex) == text


def test_no_page_title_or_navigation_entry_shows_raw_math(site):
    pages = [page for page in sorted(site.rglob("*.html")) if "_static" not in page.parts]   # the theme's macros
    assert len(pages) > 100
    for page in pages:
        html = page.read_text()
        title = re.search(r"<title>(.*?)</title>", html, flags=re.S).group(1)
        assert "\\(" not in title and "$" not in title, f"{page.relative_to(site)}: <title> {title!r}"
        for nav in re.findall(r"<nav\b.*?</nav>", html, flags=re.S):
            assert "\\(" not in nav and 'class="math' not in nav, f"{page.relative_to(site)}: math in navigation"
    exercise = (site / "notebooks" / "exercises" / "02_preconditioner_Mt.html").read_text()
    assert "<title>Exercise 2 — the preconditioner Mₜ of RMSProp with L2" in exercise
    heading = re.search(r"<h1>(.*?)</h1>", exercise, flags=re.S).group(1)
    assert 'class="math notranslate nohighlight"' in heading, "the heading itself lost its math"
