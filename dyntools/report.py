"""``dyntools reproduce``: the catalogue of headline results → figures + ``report.md``.

Each catalogue entry (a :class:`dyntools.spec.Entry`, declared in ``simulations/`` or ``proofs/`` and
handed in by the command-line layer, which finds them) has a function
``reproduce(ctx: ReportContext) -> Section``. It runs its experiment at the size
``ctx.quick`` asks for, saves figures under ``ctx.figure_dir`` and returns the Markdown text
with the measured numbers. The report is assembled in a temporary directory and renamed into
place, so an interrupted run leaves no half report.

Two lanes: an entry declared ``single_core`` (its work runs mostly on one processor: no worker processes,
processor seconds at most ~1.2 × wall seconds alone) runs in a side process — one, taking such entries one
after another — while this process runs the others, so on a machine of two cores the single-core entries
fill the core the others leave idle. Each entry is seeded on its own, so where it ran does not change its
results (nor the report: sections are assembled in catalogue order); an entry's seconds are its wall time,
which a neighbour in the other lane may lengthen.

Budget: issue 38's goal for ``--quick`` on 2 cores is 150 s with empty caches (numba compilation included) and
60 s in a second process; not met yet — the measured times are in docs/performance.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyntools import store, validation
from dyntools.markdown_text import protect


@dataclass
class ReportContext:
    out_dir: Path            # the report directory being written (temporary until done)
    quick: bool
    seed: int
    progress: bool = False

    @property
    def figure_dir(self) -> Path:
        path = self.out_dir / "figures"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        """Path of a written file relative to the report (for Markdown links)."""
        return Path(path).resolve().relative_to(self.out_dir.resolve()).as_posix()

    def timed_run(self, run: Callable, name: str, *args, **options) -> tuple[Any, float]:
        """``run(*args, out_dir / "runs" / name, seed=seed, progress=progress, **options)`` — how an entry runs its
        sweep into the report's folder — and its wall seconds, the time the entry's text quotes (the section's
        own seconds, :func:`timed_section`, count its figures and text too)."""
        start = time.perf_counter()
        result = run(*args, self.out_dir / "runs" / name, seed=self.seed, progress=self.progress, **options)
        return result, time.perf_counter() - start


@dataclass
class Section:
    """One catalogue entry's part of the report."""

    title: str
    markdown: str                      # body text with numbers and figure links
    numbers: dict[str, Any] = field(default_factory=dict)   # headline numbers (for --json)
    figures: list[str] = field(default_factory=list)        # paths relative to the report
    ok: bool = True                    # False when a headline check failed (reported, not hidden)
    seconds: float = 0.0               # wall time of the entry
    headline: str = ""                 # the verdict and the one number that matters, shown first
    cpu_seconds: float = 0.0           # processor time of the entry: this process and its finished workers
    inconclusive: str = ""             # why a result is incomplete though nothing failed ("budget": a budget
    #                                    stopped a search); shown as the status, never a failed check

    @property
    def status(self) -> str:
        """``ok``, ``inconclusive: <why>`` (still ok: exit 0) or ``CHECK FAILED``."""
        if not self.ok:
            return "CHECK FAILED"
        return f"inconclusive: {self.inconclusive}" if self.inconclusive else "ok"


def cpu_seconds() -> float:
    """User + system time of this process and of its children that have ended (the pools of sweeps and
    experiments are joined before an entry returns, so an entry's difference counts its workers)."""
    import resource

    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def select(catalogue: Mapping, only: str | None) -> list[str]:
    if only is None:
        return list(catalogue)
    names = [n.strip() for n in only.split(",") if n.strip()]
    if not names:
        raise ValueError(f"Invalid --only: {only!r} (name catalogue entries: {', '.join(catalogue)})")
    for n in names:
        validation.one_of("catalogue entry", n, tuple(catalogue))
    return names


class Sections(list):
    """The sections of a report in catalogue order, and ``seconds``: the wall time of running them all
    (less than the sum of theirs when two lanes ran at once)."""

    seconds: float = 0.0


def reproduce(out_dir: str | Path, catalogue: Mapping, *, quick: bool = False, seed: int = 0,
              only: str | None = None, progress: bool = False, self_contained: bool = False) -> Sections:
    """Run the selected entries of ``catalogue`` (name → object with ``reproduce(ctx) -> Section``, in
    report order; with ``single_core=True``, in the side lane when both lanes have work: see the module
    docstring) and write ``out_dir/report.md``, its rendering ``out_dir/report.html`` (figures linked as the
    files beside it under ``figures/``; embedded in the page only with ``self_contained``)."""
    names = select(catalogue, only)
    seed = validation.seed(seed)
    out_dir = store.check_writable(out_dir)
    from dyntools.plots import check

    side = [n for n in names if getattr(catalogue[n], "single_core", False)]
    main = [n for n in names if n not in side]
    if not main or not side:                  # one lane has nothing to do: everything in this process
        main, side = names, []
    with store.atomic_directory(out_dir) as tmp, check.collect() as checked:
        ctx = ReportContext(out_dir=tmp, quick=quick, seed=seed, progress=progress)
        start = time.perf_counter()
        done: dict[str, Section] = {}
        with _side_lane([catalogue[n].reproduce for n in side], ctx) as pending:
            for name in main:
                done[name] = timed_section(catalogue[name].reproduce, ctx)
            for name, future in zip(side, pending):
                done[name], found = future.result()
                checked.extend(found)
        sections = Sections(done[n] for n in names)
        sections.seconds = time.perf_counter() - start
        text = render(sections, quick=quick, seed=seed) + figure_check_text(checked)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        (tmp / "report.html").write_text(render_html(text, tmp, self_contained=self_contained), encoding="utf-8")
    return sections


def timed_section(reproduce_entry: Callable, ctx: ReportContext) -> Section:
    """``reproduce_entry(ctx)`` with its wall and processor seconds filled in."""
    start, cpu = time.perf_counter(), cpu_seconds()
    section = reproduce_entry(ctx)
    section.seconds = time.perf_counter() - start
    section.cpu_seconds = cpu_seconds() - cpu
    return section


def _side_lane_entry(reproduce_entry: Callable, ctx: ReportContext) -> tuple[Section, list]:
    """One entry in the side process: its section and the figure check's findings on its figures."""
    from dyntools.plots import check

    with check.collect() as found:
        section = timed_section(reproduce_entry, ctx)
    return section, found


@contextmanager
def _side_lane(entries: list[Callable], ctx: ReportContext):
    """Futures of ``entries`` run one after another in one spawned process (none when empty); an error
    in this process cancels those not started."""
    if not entries:
        yield []
        return
    from multiprocessing import get_context

    pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
    try:
        yield [pool.submit(_side_lane_entry, entry, ctx) for entry in entries]
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


#: Markdown tables with more body rows than this are folded in ``<details>`` (the headline says what they hold).
FOLD_ROWS = 12


def anchor(title: str) -> str:
    """The HTML id of a section: lower case, words joined by ``-`` (stable, ASCII)."""
    import re

    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


def fold_long_tables(markdown: str, rows: int = FOLD_ROWS) -> str:
    """Wrap every Markdown table of more than ``rows`` body rows in a ``<details>`` block."""
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        if j - i >= 2 and set(lines[i + 1].replace("|", "").strip()) <= set("-: "):
            body = j - i - 2
            table = lines[i:j]
            if body > rows:
                table = ["<details><summary>table of " + f"{body} rows</summary>", ""] + table + ["", "</details>"]
            out += table
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def render(sections: list[Section], *, quick: bool, seed: int) -> str:
    """The report as one Markdown page: a contents table (status, seconds, headline of every entry), then
    each entry with its headline before its text, long tables folded; the entries' text with its accidental
    markup escaped (:func:`dyntools.markdown_text.protect`: ``θ*²`` is no emphasis, ``E[x²](…)`` no link)."""
    from dyntools.engine.result import package_versions

    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items())
    total = getattr(sections, "seconds", None) or sum(s.seconds for s in sections)
    lines = ["# dyntools: reproduced results", "",
             f"Mode: {'quick (reduced sizes)' if quick else 'full'}; seed {seed}; {versions}; "
             f"{len(sections)} entries in {total:.0f} s.", "", "## Contents", "",
             "| entry | status | seconds | CPU seconds | headline |", "|---|---|---|---|---|"]
    cell = lambda text: protect(text).replace("|", "\\|")
    lines += [f"| [{cell(s.title)}](#{anchor(s.title)}) | {s.status} | {s.seconds:.1f} | "
              f"{s.cpu_seconds:.1f} | {cell(s.headline)} |" for s in sections]
    lines += [f"| total | {sum(s.ok for s in sections)} of {len(sections)} ok | {total:.1f} | "
              f"{sum(s.cpu_seconds for s in sections):.1f} | |"]
    for s in sections:
        lines += ["", f'<a id="{anchor(s.title)}"></a>', "", f"## {protect(s.title)}", ""]
        if s.headline:
            lines += [f"**{protect(s.headline)}**", ""]
        lines.append(fold_long_tables(protect(s.markdown.strip())))
    return "\n".join(lines) + "\n"


def figure_check_text(checked: list[tuple[str, list[str]]]) -> str:
    """The report's last section: how many figures (and GIF frames) the figure check looked at, and
    every defect it found."""
    bad = [(name, problems) for name, problems in checked if problems]
    lines = ["", "## Figure check", "",
             f"Figures and animation frames checked by `dyntools.plots.check` (empty panels and their ticks, "
             f"unlabelled axes, clipped, overlapping or on-spine text, legends over drawn pixels, hidden curves, "
             f"literal `_`/`^`, unused canvas, coarse contours, unexplained line styles, title counts, moving GIF "
             f"axes, GIF width): {len(checked)}; "
             + (f"{len(bad)} with defects:" if bad else "no defect found.")]
    lines += [f"- `{name}`: " + protect("; ".join(problems)) for name, problems in bad]
    return "\n".join(lines) + "\n"


def render_html(markdown: str, base: Path, title: str = "dyntools: reproduced results", *,
                self_contained: bool = False) -> str:
    """``markdown`` (the report) as one HTML page beside its figures (relative links to the files under
    ``base``), figures shown at most the page's width, tables scrollable; with ``self_contained``, the images
    under ``base`` are embedded as data URIs instead (one file to send, many times the size)."""
    import base64
    import html
    import mimetypes

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = md.render(markdown)

    def embed(match):
        src = html.unescape(match.group(1))
        path = Path(os.path.realpath(base / src))     # never raises (a link loop is simply not a file)
        if src.startswith(("http:", "https:", "data:")) or not path.is_file() or base.resolve() not in path.parents:
            return match.group(0)
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return f'src="data:{kind};base64,{base64.b64encode(path.read_bytes()).decode("ascii")}"'

    import re

    if self_contained:
        body = re.sub(r'src="([^"]+)"', embed, body)
    style = ("body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
             "img{max-width:min(100%,56rem);height:auto;display:block;margin:1rem 0}table{border-collapse:collapse;"
             "display:block;overflow-x:auto;font-size:.9em}td,th{border:1px solid #ccc;padding:.2rem .5rem}"
             "details{margin:.5rem 0}summary{cursor:pointer;color:#0072B2}")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n{body}</body></html>\n")


def broken_links(page: Path) -> list[str]:
    """Every ``href``/``src`` of the HTML file ``page`` that leads nowhere: an ``#anchor`` no element of the
    page has as ``id`` (or ``name``), or a relative path with no file behind it (URLs and data URIs are not
    followed). Each is described in one line; an empty list means every link resolves."""
    from html.parser import HTMLParser
    from urllib.parse import unquote, urlsplit

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.ids, self.links = set(), []

        def handle_starttag(self, tag, attrs):
            for key, value in attrs:
                if key in ("id", "name") and value:
                    self.ids.add(value)
                if key in ("href", "src") and value is not None:
                    self.links.append((tag, key, value))

    page = Path(page)
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    bad = []
    for tag, key, value in parser.links:
        parts = urlsplit(value)
        if parts.scheme in ("http", "https", "mailto", "data"):
            continue
        if parts.scheme or parts.netloc:
            bad.append(f"<{tag} {key}={value!r}>: a link outside the report")
        elif not parts.path:
            if unquote(parts.fragment) not in parser.ids:
                bad.append(f"<{tag} {key}={value!r}>: no element with id {unquote(parts.fragment)!r}")
        elif not (page.parent / unquote(parts.path)).is_file():
            bad.append(f"<{tag} {key}={value!r}>: no file {unquote(parts.path)!r} beside the page")
    return bad
