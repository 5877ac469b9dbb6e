"""The report as one page a person reads: contents, headlines before the text, long tables folded, mathematics
in the text not turned into markup, ``report.html`` with its figures as files beside it (embedded only with
``--self-contained``) and no broken link, opened in a real headless browser."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from dyntools import markdown_text, plots, report

ORANGE = (0xD5, 0x5E, 0x00)                       # PALETTE[1]: the planted figure's colour


class _Entry:
    def __init__(self, title, headline, rows, draw, single_core=False):
        self.title, self.headline, self.rows, self.draw = title, headline, rows, draw
        self.single_core = single_core

    def reproduce(self, ctx):
        figures = []
        if self.draw:
            fig, axes = plots.figure(width=6, height=4)
            ax = axes[0, 0]
            ax.fill_between([0, 1], [0, 0], [1, 1], color=plots.PALETTE[1])
            ax.set_xlabel("x")
            ax.set_ylabel("y")
            ax.set_title("an orange square")
            figures = [ctx.relative(p) for p in plots.save(fig, ctx.figure_dir, "square", ("png",))]
        table = "\n".join(["| k | v |", "|---|---|"] + [f"| {i} | {i * i} |" for i in range(self.rows)])
        links = "".join(f"\n\n![the square]({f})" for f in figures)
        return report.Section(self.title, f"Some text.{links}\n\n{table}", headline=self.headline,
                              figures=figures, numbers={"pid": os.getpid()})


def _catalogue():
    return {"first": _Entry("A figure first", "verified: the square is orange (1 of 1)", 3, True),
            "second": _Entry("Long | table", "measured: 40 rows", 40, False)}


def test_the_page_has_contents_headlines_and_folded_tables(tmp_path):
    sections = report.reproduce(tmp_path / "r", _catalogue())
    text = (tmp_path / "r" / "report.md").read_text()
    contents = text.index("## Contents")
    assert text.index("[A figure first](#a-figure-first)") > contents
    assert "| verified: the square is orange (1 of 1) |" in text
    assert "| [Long \\| table](#long-table) |" in text
    body = text[text.index('<a id="long-table">'):]
    assert body.index("**measured: 40 rows**") < body.index("<details><summary>table of 40 rows</summary>")
    first = text[text.index('<a id="a-figure-first">'):text.index('<a id="long-table">')]
    assert "<details>" not in first                               # 3 rows stay open
    assert f"{len(sections)} entries in" in text
    assert "## Figure check" in text and "GIF width): 1; no defect found." in text
    assert "no defect found" in text


def test_single_core_entries_run_in_a_side_process_beside_the_others(tmp_path):
    lone = report.reproduce(tmp_path / "lone", _catalogue())
    catalogue = _catalogue()
    catalogue["first"].single_core = True
    sections = report.reproduce(tmp_path / "r", catalogue)
    assert [s.title for s in sections] == ["A figure first", "Long | table"]          # catalogue order
    assert sections[0].numbers["pid"] != os.getpid() == sections[1].numbers["pid"]
    assert 0 < sections.seconds and all(s.seconds > 0 and s.cpu_seconds >= 0 for s in sections)
    text = (tmp_path / "r" / "report.md").read_text()
    assert "GIF width): 1; no defect found." in text                    # the side lane's figure was checked
    assert (tmp_path / "r" / sections[0].figures[0]).is_file()
    strip = lambda t: "\n".join(line for line in t.splitlines() if "entries in" not in line and "| " not in line[:2])
    assert strip(text) == strip((tmp_path / "lone" / "report.md").read_text())     # the same page
    # one lane with work: everything in this process
    alone = report.reproduce(tmp_path / "a", {"first": catalogue["first"]})
    assert alone[0].numbers["pid"] == os.getpid() and lone[0].numbers["pid"] == os.getpid()


def test_fold_long_tables_keeps_every_row():
    rows = [f"| {i} |" for i in range(30)]
    md = "\n".join(["before", "", "| a |", "|---|", *rows, "", "after"])
    folded = report.fold_long_tables(md, rows=12)
    assert folded.count("<details>") == 1 and all(r in folded for r in rows)
    assert report.fold_long_tables(md, rows=30) == md


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _run_browser(exe, *args, timeout=120):
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(_browser() is None, reason="no Chromium on this machine (.ci/run installs Debian's chromium)")
def test_report_html_opens_in_a_headless_browser(tmp_path):
    report.reproduce(tmp_path / "r", _catalogue())
    page = tmp_path / "r" / "report.html"
    html = page.read_text()
    assert 'src="figures/square.png"' in html and "data:image" not in html     # the figure as a file beside it
    assert report.broken_links(page) == []
    exe = _browser()
    dom = _run_browser(exe, "--dump-dom", page.as_uri()).stdout
    assert "<title>dyntools: reproduced results</title>" in dom
    assert "verified: the square is orange" in dom
    shot = tmp_path / "shot.png"
    _run_browser(exe, f"--screenshot={shot}", "--window-size=1200,1400", page.as_uri())
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    orange = (np.abs(pixels - np.array(ORANGE)).sum(axis=2) < 30)
    rows, cols = np.nonzero(orange)
    assert orange.sum() > 20_000, "the first figure is not on the screen"
    assert cols.max() - cols.min() > 200 and rows.max() - rows.min() > 100


# ------------------------------------------------------------------ issue 36, item 8: escaping, links, figure files

MATH = "F = ¼E[x²](1−(1−ε₀)²)²θ*⁴ ≈ 0.17θ*⁴ < ε₀θ*² with η_t and φ_θ(X), a<b and c>d, ref [a][b]"


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def test_mathematics_in_the_text_is_not_markup():
    """The issue's two defects: θ*² … θ*⁴ became italics, E[x²](…) a broken link; and a<b … c>d a tag."""
    html = _html(markdown_text.protect(MATH))
    assert "<em>" not in html and "<a " not in html and "<b " not in html
    assert "θ*⁴ ≈ 0.17θ*⁴ &lt; ε₀θ*²" in html and "E[x²](1−(1−ε₀)²)²" in html and "η_t" in html
    assert "a&lt;b and c&gt;d" in html and "[a][b]" in html
    raw = _html(MATH)
    assert "<em>" in raw and "<a " in raw                   # the control: unprotected, both defects appear


def test_intended_markup_is_kept():
    text = ("* a bullet\n\n**bold** and *shown* and _also_ [proofs.md](proofs.md) [top](#top) "
            "![f](figures/a_b.png) `θ*² [x](y)` <a id=\"a_b\"></a>\n\n| a | b |\n|---|---|\n| [1, 2] | x* |")
    html = _html(markdown_text.protect(text))
    for piece in ("<li>a bullet</li>", "<strong>bold</strong>", "<em>shown</em>", "<em>also</em>",
                  '<a href="proofs.md">proofs.md</a>', '<a href="#top">top</a>', '<img src="figures/a_b.png"',
                  "<code>θ*² [x](y)</code>", '<a id="a_b"></a>', "<td>[1, 2]</td>", "<td>x*</td>"):
        assert piece in html, piece
    fenced = "```\nθ*² [x](y)\n```"
    assert markdown_text.protect(fenced) == fenced


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab θ*_[]()<>!`#|~+-.1²", min_size=1, max_size=40).map(str.strip).filter(bool))
def test_escaped_text_renders_as_itself(text):
    """``escape`` of any plain string renders to exactly that string (a paragraph of literal text)."""
    import html as H
    import re

    rendered = _html(markdown_text.escape(text)).strip()
    assert re.fullmatch(r"<p>(.*)</p>", rendered, re.S), rendered
    assert H.unescape(rendered[3:-4]) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab θ*[]()²<>/", min_size=1, max_size=40))
@example("[[]]()")                   # brackets inside a link's text: hypothesis found it a link (<a href="">[]</a>)
def test_protected_text_has_no_accidental_link_or_tag(text):
    """Whatever math-like text an entry writes: after ``protect`` no link or tag is made of it."""
    html = _html(markdown_text.protect(text))
    assert "<a " not in html and "<img" not in html and "<b " not in html and "<b>" not in html


def test_the_report_page_protects_titles_headlines_and_text(tmp_path):
    class Entry:
        def reproduce(self, ctx):
            return report.Section("θ* and E[x](y)", MATH, headline="loss 0.17θ*² < ε₀θ*² [shown](n = 5)")

    report.reproduce(tmp_path / "r", {"e": Entry()})
    html = (tmp_path / "r" / "report.html").read_text()
    body = html[html.index("<h2>θ*"):]
    assert "<em>" not in body and "0.17θ*² &lt; ε₀θ*² [shown](n = 5)" in body
    assert report.broken_links(tmp_path / "r" / "report.html") == []


def test_broken_links_finds_missing_anchors_and_files(tmp_path):
    """The link check bites: a planted missing anchor and a missing file are named, URLs are not followed."""
    (tmp_path / "there.png").write_bytes(b"png")
    page = tmp_path / "p.html"
    page.write_text('<a id="here"></a><a href="#here">ok</a><a href="#nowhere">x</a><img src="there.png">'
                    '<img src="figures/gone.png"><a href="https://example.org">u</a>'
                    '<img src="data:image/png;base64,AA">')
    bad = report.broken_links(page)
    assert len(bad) == 2 and "'nowhere'" in bad[0] and "'figures/gone.png'" in bad[1]


def test_figures_are_files_beside_the_page_unless_self_contained(tmp_path):
    report.reproduce(tmp_path / "files", _catalogue())
    report.reproduce(tmp_path / "one", _catalogue(), self_contained=True)
    files, one = (tmp_path / "files" / "report.html").read_text(), (tmp_path / "one" / "report.html").read_text()
    assert 'src="figures/square.png"' in files and "data:image" not in files
    assert 'src="data:image/png;base64,' in one and "figures/square.png" not in one
    assert len(one) > len(files) + 1000
    assert report.broken_links(tmp_path / "files" / "report.html") == []
    assert report.broken_links(tmp_path / "one" / "report.html") == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab θ*_[]()²<>/`\\!#-", min_size=1, max_size=40))
def test_protect_is_idempotent(text):
    """Protecting protected text changes nothing (an entry may escape its own text first)."""
    once = markdown_text.protect(text)
    assert markdown_text.protect(once) == once


@pytest.mark.parametrize("flag", [[], ["--self-contained"]])
def test_reproduce_command_self_contained_flag(tmp_path, monkeypatch, capsys, flag):
    """`dyntools reproduce` links its figures as files; `--self-contained` embeds them (the flag reaches the page)."""
    from dyntools import plugins
    from dyntools.cli import main

    monkeypatch.setattr(plugins, "catalogue", _catalogue)
    assert main(["reproduce", "--out", str(tmp_path / "r"), "--json", *flag]) == 0
    capsys.readouterr()
    page = (tmp_path / "r" / "report.html").read_text()
    assert ('src="data:image/png;base64,' in page) == bool(flag)
    assert report.broken_links(tmp_path / "r" / "report.html") == []


def test_an_entrys_timed_run_runs_into_the_reports_runs_folder_with_its_seed(tmp_path):
    """``ReportContext.timed_run``: the entry's run gets its own arguments, then ``runs/<name>`` under the report,
    the report's seed and progress, and its options; its result comes back beside the call's seconds."""
    calls = []

    def run(cfg, networks, out, *, seed, progress, workers):
        calls.append((cfg, networks, out, seed, progress, workers))
        return "the result"

    ctx = report.ReportContext(tmp_path, quick=True, seed=7, progress=True)
    result, seconds = ctx.timed_run(run, "grid", "cfg", {"mlp": {}}, workers=2)
    assert result == "the result" and isinstance(seconds, float)
    assert calls == [("cfg", {"mlp": {}}, tmp_path / "runs" / "grid", 7, True, 2)]
