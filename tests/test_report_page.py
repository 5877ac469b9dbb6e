"""The report as one page a person reads: contents, headlines before the text, long tables folded, and
``report.html`` (figures embedded) opened in a real headless browser."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from dyntools import plots, report

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
    assert 'src="data:image/png;base64,' in html and "figures/square.png" not in html
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
