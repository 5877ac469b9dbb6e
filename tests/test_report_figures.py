"""The whole quick report, as a user runs it, with the figure check strict: every figure and GIF frame the
report draws passes dyntools.plots.check (a defect fails the command), every entry has a headline, and the
report exists as Markdown and as an HTML page with its figures as files beside it and no broken link."""

from __future__ import annotations

import json
import re

import pytest

from dyntools import report
from dyntools.plots import check
from tests.conftest import run_cli


@pytest.mark.slow
def test_quick_report_figures_pass_the_check(tmp_path):
    out = tmp_path / "report"
    proc = run_cli("reproduce", "--quick", "--out", out, "--json", env={check.ENV: "strict"})
    assert proc.returncode in (0, 1), proc.stderr[-2000:]          # 1: a headline check failed (reported)
    assert "FigureDefect" not in proc.stderr and "defect(s)" not in proc.stderr, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Figure check" in text and "no defect found." in text
    n_checked = int(re.search(r"GIF width\): (\d+);", text).group(1))
    stills = {f for e in summary["entries"].values() for f in e["figures"] if f.endswith(".png")}
    assert n_checked >= len(stills) > 20                       # every still (and GIF frames on top) was checked
    rows = [line for line in text.split("## Contents")[1].split("\n## ")[0].splitlines()
            if line.startswith("| [")]
    assert len(rows) == len(summary["entries"])
    assert all(not row.rstrip().endswith("|  |") for row in rows), "an entry without a headline"
    page = (out / "report.html").read_text(encoding="utf-8")
    sources = re.findall(r'<img[^>]* src="([^"]*)"', page)
    assert len(sources) > 20 and not any(s.startswith("data:") for s in sources)     # figures as files beside it
    assert report.broken_links(out / "report.html") == []                          # every href/src resolves
