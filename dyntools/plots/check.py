"""Defects a careful reader finds in a figure, measured with matplotlib's own renderer.

:func:`figure_problems` draws a figure once with the Agg renderer and reads the window extents (in
pixels) of its axes, texts and legends. It reports, one sentence per defect:

* **a panel without data** — a visible axes with no finite data inside its view limits (lines drawn in
  data coordinates with at least two finite points, or one with a marker; scatter offsets; images;
  meshes; bars). An empty panel must say why it is empty (a text note: "diverged at step k") and show no
  ticks (``ax.set_axis_off()``): ticks around nothing (matplotlib's default ±0.04) read as a real scale;
* **an unlabelled axis** — a panel with data whose x or y axis shows tick labels but has no label
  (a colorbar needs its label too);
* **text outside the figure** — for figures saved uncropped (animation frames), any visible text whose
  extent leaves the canvas (a still saved with ``bbox_inches="tight"`` grows to hold its texts);
* **text on a spine** — a note of a panel that straddles the panel's frame (half inside, half outside),
  or any other text (title, label, legend) crossed by a drawn spine;
* **overlapping texts** — two text boxes (titles, axis labels, tick labels, notes, legends) whose
  intersection is more than :data:`OVERLAP_PX` pixels² and more than :data:`OVERLAP_FRACTION` of the
  smaller box;
* **a legend over the data** — a legend box (a panel's or the figure's) over any drawn data of any panel,
  as pixels: the panel's lines (segments as well as vertices, reference lines included), markers,
  filled bands, bars, images and meshes are rasterized alone with matplotlib's Agg renderer, and more
  than :data:`LEGEND_PIXELS` of their pixels under the legend (less a 2-pixel margin) is a defect.
  ``loc="best"`` is no excuse: it minimises the vertices covered, not the pixels;
* **a hidden curve** — a line named in a legend of which less than :data:`VISIBLE_FRACTION` of its pixels
  is left visible by the lines drawn after it (``zorder``, then order; occluders with alpha ≥ 0.6):
  the same data drawn twice, or a curve under a thicker one;
* **literal ``_`` or ``^``** — a visible text with ``eta_t``, ``phi_theta`` or ``10^3`` outside ``$…$``:
  mathtext (``$\\eta_t$``) or Unicode (η_t → ηₜ) was meant;
* **an unused canvas** — the panels (frames, ticks, axis labels, titles; not their legends or notes)
  covering less than :data:`CANVAS_FRACTION` of the saved canvas (a legend or note larger than the plot,
  a tiny panel);
* **coarse contours** — a contour set computed on a grid coarser than :data:`MIN_CONTOUR_GRID` ² points
  (contours through the cell centres of a 4×6 grid are drawn guesses: show the cells instead);
* **styles without a legend entry** — where a panel or the figure has a legend, a line style (dashes,
  dots, markers) drawn in the panel that no legend handle shows: the reader cannot tell what it means;
* **counts in a title** — "1 seeds" (a plural after 1), and a stated count that differs from the
  number of drawn artists where the figure declares them (:func:`declare_count`);
* for animations (:func:`frame_problems`), frames narrower than :data:`MIN_GIF_WIDTH` pixels, and
  (:func:`motion_problems`) axes whose position moves between frames by more than 1 pixel.

:func:`enforce` applies the check where figures are written (``dyntools.plots.save`` and the GIF
writer) according to the environment variable ``DYNTOOLS_FIGURE_CHECK``: unset — nothing (a user's
figures are never refused); ``strict`` — a :class:`FigureDefect` naming the figure and its defects
(the test suite's setting); a file path — one JSON line per checked figure appended to that file.
Inside :func:`collect` every figure is checked and its defects gathered (``dyntools reproduce`` lists
them at the end of its report).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.transforms import Bbox

#: Two text boxes overlap when they share more than this many square pixels …
OVERLAP_PX = 4.0
#: … and more than this fraction of the smaller box.
OVERLAP_FRACTION = 0.05
#: Width in pixels below which an animation frame is unreadable once embedded in a page.
MIN_GIF_WIDTH = 600
#: Pixels of data under a legend (inside a 2-pixel margin) that make it a defect.
LEGEND_PIXELS = 4
#: A curve named in a legend with less than this fraction of its pixels visible is hidden.
VISIBLE_FRACTION = 0.05
#: Panels must cover at least this fraction of the saved canvas.
CANVAS_FRACTION = 0.5
#: Contours need a grid of at least this many points along each side.
MIN_CONTOUR_GRID = 8
#: Nouns a title counts (a plural after "1" is a defect).
COUNT_NOUNS = ("seeds", "runs", "paths", "curves", "draws", "samples", "trials", "networks", "cells", "lines")
#: Environment variable that switches the check on (see :func:`enforce`).
ENV = "DYNTOOLS_FIGURE_CHECK"


class FigureDefect(ValueError):
    """A figure failed the check; the message names the figure and each defect."""


def _renderer(fig):
    """The Agg renderer of ``fig`` after a draw without rendering: the layout, ticks, legend places and text
    extents of a real draw, no pixel painted — nothing here reads the canvas's pixels (the rasters the check
    counts are drawn apart, :func:`_raster`). Drawing again the figures of a quick report's 27 results with the
    check on took 76–79 s instead of 84 s (two alternated pairs, AMD EPYC Zen 4)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    return canvas.get_renderer()


def _name(ax) -> str:
    title = ax.get_title() or ax.get_title("left") or ax.get_title("right")
    if title:
        return repr(title.splitlines()[0][:60])
    label = ax.get_ylabel() or ax.get_xlabel()
    return f"with label {label[:40]!r}" if label else f"#{ax.figure.axes.index(ax) + 1}"


def _is_colorbar(ax) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def _in_view(ax, xy: np.ndarray) -> np.ndarray:
    """Rows of ``xy`` (data coordinates) that are finite and inside the axes' view limits."""
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    x, y = xy[:, 0], xy[:, 1]
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & np.isfinite(y) & (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def _data_lines(ax):
    """Lines drawn in data coordinates (reference lines such as ``axhline`` are in mixed coordinates)."""
    return [ln for ln in ax.get_lines() if ln.get_visible() and ln.get_transform() == ax.transData]


def _line_shows_data(ax, line) -> bool:
    xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
    if xy.size == 0:
        return False
    shown = int(_in_view(ax, xy).sum())
    has_marker = line.get_marker() not in (None, "None", "", " ")
    has_stroke = line.get_linestyle() not in ("None", "", " ") and line.get_linewidth() > 0
    return shown >= 1 if has_marker else (has_stroke and shown >= 2)


def _collection_shows_data(ax, coll) -> bool:
    if not coll.get_visible():
        return False
    offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
    if offsets.size and coll.get_offset_transform() == ax.transData and len(coll.get_paths()):
        return bool(_in_view(ax, offsets).any())
    arr = coll.get_array()
    if arr is not None and np.size(arr):
        return bool(np.isfinite(np.ma.filled(np.ma.asarray(arr, dtype=float), np.nan)).any())
    return any(len(p.vertices) for p in coll.get_paths())


def _image_shows_data(img) -> bool:
    arr = img.get_array()
    if not img.get_visible() or arr is None or np.size(arr) == 0:
        return False
    data = np.ma.asarray(arr)
    if data.dtype.kind in "fc":
        return bool(np.isfinite(np.ma.filled(data.astype(float), np.nan)).any())
    return not bool(np.ma.getmaskarray(data).all())


def has_data(ax) -> bool:
    """Whether ``ax`` shows any data (see the module docstring)."""
    return (any(_line_shows_data(ax, ln) for ln in _data_lines(ax))
            or any(_collection_shows_data(ax, c) for c in ax.collections)
            or any(_image_shows_data(im) for im in ax.images)
            or any(p.get_visible() and p.get_transform() == ax.transData for p in ax.patches)
            or bool(ax.tables))


def _has_note(ax) -> bool:
    return any(t.get_visible() and t.get_text().strip() for t in ax.texts)


def _panel_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def _drawn_ticklabels(axis) -> list:
    """The tick labels matplotlib draws: visible, non-empty, at a tick inside the view interval on the axis's
    own scale (the lists of ``get_ticklabels`` also hold labels of ticks beyond the limits, which are not
    drawn; a log axis's locator returns a decade beyond the view)."""
    scale = axis.get_transform()          # compared on the axis's scale: a linear slack means nothing on a log axis
    with np.errstate(all="ignore"):
        lo, hi = sorted(scale.transform(np.asarray(axis.get_view_interval(), dtype=float)))
        slack = 1e-9 * max(abs(lo), abs(hi), 1e-300)
        labels = []
        current = axis.get_major_ticks() + axis.get_minor_ticks()          # (reading them creates none)
        where = scale.transform(np.array([tick.get_loc() for tick in current], dtype=float).reshape(-1))
    for tick, loc in zip(current, where):
        if lo - slack <= loc <= hi + slack:
            labels += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip()]
    return labels


def _shows_ticklabels(axis) -> bool:
    return axis.get_visible() and bool(_drawn_ticklabels(axis))


def _text_boxes(fig, renderer) -> list[tuple[str, Bbox]]:
    """(description, window extent) of every visible, non-empty text and of every legend (as one box)."""
    boxes, seen = [], set()

    def add(what, artist):
        if artist is None or not artist.get_visible() or id(artist) in seen:
            return
        seen.add(id(artist))
        if hasattr(artist, "get_text") and not artist.get_text().strip():
            return
        bbox = artist.get_window_extent(renderer)
        if bbox.width > 0 and bbox.height > 0 and np.all(np.isfinite(bbox.get_points())):
            boxes.append((what, bbox))

    if fig._suptitle is not None:
        add(f"title {fig._suptitle.get_text()[:40]!r}", fig._suptitle)
    for t in fig.texts:
        add(f"figure text {t.get_text()[:40]!r}", t)
    for leg in fig.legends:
        add("figure legend", leg)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        name = _name(ax)
        for loc in ("center", "left", "right"):
            title = ax._left_title if loc == "left" else ax._right_title if loc == "right" else ax.title
            add(f"title of panel {name}", title)
        if ax.axison:
            for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
                if not axis.get_visible():
                    continue
                add(f"{which}-label of panel {name}", axis.label)
                for tick in _drawn_ticklabels(axis):
                    add(f"{which}-tick label {tick.get_text()[:12]!r} of panel {name}", tick)
                add(f"{which}-axis offset text of panel {name}", axis.get_offset_text())
        for t in ax.texts:
            add(f"note {t.get_text()[:40]!r} in panel {name}", t)
        if ax.get_legend() is not None:
            add(f"legend of panel {name}", ax.get_legend())
    return boxes


def _overlap_problems(boxes) -> list[str]:
    from matplotlib.transforms import Bbox
    problems = []
    for (a, ba), (b, bb) in combinations(boxes, 2):
        if not ba.overlaps(bb):
            continue
        inter = Bbox.intersection(ba, bb)
        if inter is None:
            continue
        area = inter.width * inter.height
        smaller = min(ba.width * ba.height, bb.width * bb.height)
        if area > OVERLAP_PX and area > OVERLAP_FRACTION * smaller:
            problems.append(f"{a} overlaps {b}")
    return problems


def _outside_problems(fig, boxes) -> list[str]:
    width, height = fig.bbox.width, fig.bbox.height
    problems = []
    for what, box in boxes:
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            problems.append(f"{what} is cut by the edge of the figure")
    return problems


def _raster(fig, artists) -> np.ndarray:
    """Alpha (0 … 1) of ``artists`` drawn alone on a transparent canvas of the figure's size, by the Agg
    renderer matplotlib saves with (rows from the top of the figure; the figure must be drawn already)."""
    from matplotlib.backends.backend_agg import RendererAgg

    width, height = int(round(fig.bbox.width)), int(round(fig.bbox.height))
    renderer = RendererAgg(width, height, fig.dpi)
    for artist in sorted(artists, key=lambda a: a.get_zorder()):
        artist.draw(renderer)
    return np.asarray(renderer.buffer_rgba())[..., 3] / 255.0


def _window(alpha: np.ndarray, box: Bbox, margin: float = 0.0) -> np.ndarray:
    """The pixels of ``alpha`` inside ``box`` (display coordinates, y up) shrunk by ``margin`` pixels."""
    height, width = alpha.shape
    x0, x1 = int(np.ceil(box.x0 + margin)), int(np.floor(box.x1 - margin))
    top, bottom = int(np.ceil(height - box.y1 + margin)), int(np.floor(height - box.y0 - margin))
    x0, top = max(x0, 0), max(top, 0)
    return alpha[top:max(bottom, top), x0:max(x1, x0)]


def _drawn_data(ax) -> list:
    """Everything a panel draws as data: lines (reference lines too), collections (markers, bands, meshes,
    contours), images and patches (bars, spans)."""
    return [a for a in (*ax.lines, *ax.collections, *ax.images, *ax.patches) if a.get_visible()]


def _legends(fig) -> list:
    found = [leg for leg in fig.legends if leg.get_visible()]
    found += [ax.get_legend() for ax in fig.axes if ax.get_visible() and ax.get_legend() is not None]
    return [leg for leg in found if leg.get_visible()]


def _legend_problems(fig, renderer) -> list[str]:
    from matplotlib.transforms import Bbox
    problems = []
    boxes = [(leg, leg.get_window_extent(renderer)) for leg in _legends(fig)]
    if not boxes:
        return problems
    for ax in _panel_axes(fig):
        frame = ax.get_window_extent(renderer)
        near = [(leg, Bbox.intersection(box, frame)) for leg, box in boxes]
        near = [(leg, box) for leg, box in near if box is not None and box.width > 4 and box.height > 4]
        if not near or _is_colorbar(ax):
            continue
        alpha = _raster(fig, _drawn_data(ax))
        for leg, box in near:
            covered = int((_window(alpha, box, margin=2.0) > 0.25).sum())
            if covered > LEGEND_PIXELS:
                whose = "figure legend" if leg in fig.legends else f"legend of panel {_name(leg.axes)}"
                problems.append(f"{whose} covers {covered} px of the data of panel {_name(ax)} "
                                f"(move it to an empty corner or outside the panel)")
    return problems


def _label_of(artist) -> str:
    label = str(artist.get_label() or "")
    return "" if label.startswith("_") else label


def _hidden_problems(fig) -> list[str]:
    """Curves named in a legend that the lines drawn after them cover (see the module docstring)."""
    problems = []
    for ax in _panel_axes(fig):
        if ax.get_legend() is None and not fig.legends:
            continue
        order = sorted(enumerate(ln for ln in ax.lines if ln.get_visible()), key=lambda t: (t[1].get_zorder(), t[0]))
        cover = None
        for _, line in reversed(order):                     # from the top of the drawing down
            alpha = _raster(fig, [line])
            mine = alpha > 0.5
            if _label_of(line) and cover is not None and mine.sum() >= 20:
                visible = float((mine & ~cover).sum()) / float(mine.sum())
                if visible < VISIBLE_FRACTION:
                    problems.append(f"curve {_label_of(line)[:40]!r} of panel {_name(ax)} is hidden: "
                                    f"{100 * visible:.0f} % of it visible under the curves drawn over it")
            opaque = mine if (line.get_alpha() is None or line.get_alpha() >= 0.6) else np.zeros_like(mine)
            cover = opaque if cover is None else cover | opaque
    return problems


def _edges(frame: Bbox, sides=("left", "right", "bottom", "top")) -> list[tuple[str, Bbox]]:
    from matplotlib.transforms import Bbox
    lines = {"left": Bbox([[frame.x0, frame.y0], [frame.x0, frame.y1]]),
             "right": Bbox([[frame.x1, frame.y0], [frame.x1, frame.y1]]),
             "bottom": Bbox([[frame.x0, frame.y0], [frame.x1, frame.y0]]),
             "top": Bbox([[frame.x0, frame.y1], [frame.x1, frame.y1]])}
    return [(side, lines[side]) for side in sides]


def _crosses(box: Bbox, side: str, edge: Bbox, depth: float = 2.0) -> bool:
    """Whether ``box`` lies across the frame edge ``edge`` with more than ``depth`` pixels on each side."""
    if side in ("left", "right"):
        along = min(box.y1, edge.y1) - max(box.y0, edge.y0)
        return along > depth and box.x0 < edge.x0 - depth and box.x1 > edge.x0 + depth
    along = min(box.x1, edge.x1) - max(box.x0, edge.x0)
    return along > depth and box.y0 < edge.y0 - depth and box.y1 > edge.y0 + depth


def _spine_problems(fig, renderer, boxes) -> list[str]:
    problems = []
    for ax in _panel_axes(fig):
        frame = ax.get_window_extent(renderer)
        name = _name(ax)
        for t in ax.texts:
            if not (t.get_visible() and t.get_text().strip()):
                continue
            box = t.get_window_extent(renderer)
            for side, edge in _edges(frame):
                if _crosses(box, side, edge):
                    problems.append(f"note {t.get_text()[:40]!r} lies on the {side} edge of panel {name}")
                    break
        drawn = [side for side in ("left", "right", "bottom", "top") if ax.spines[side].get_visible()]
        for what, box in boxes:
            if what.startswith(("note ", "x-tick", "y-tick")):
                continue
            for side, edge in _edges(frame, drawn):
                if _crosses(box, side, edge):
                    problems.append(f"{what} lies on the {side} spine of panel {name}")
    return problems


def _texts(fig) -> list[tuple[str, str]]:
    """(where, string) of every visible text of the figure, legend entries and tick labels included."""
    found = []
    if fig._suptitle is not None and fig._suptitle.get_visible():
        found.append(("figure title", fig._suptitle.get_text()))
    found += [("figure text", t.get_text()) for t in fig.texts if t.get_visible()]
    for leg in _legends(fig):
        found += [("legend entry", t.get_text()) for t in leg.get_texts()]
        if leg.get_title().get_visible():
            found.append(("legend title", leg.get_title().get_text()))
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        name = _name(ax)
        found += [(f"title of panel {name}", t.get_text()) for t in (ax.title, ax._left_title, ax._right_title)]
        found += [(f"note in panel {name}", t.get_text()) for t in ax.texts if t.get_visible()]
        if ax.axison:
            for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
                if axis.get_visible():
                    found.append((f"{which}-label of panel {name}", axis.label.get_text()))
                    found += [(f"{which}-tick label of panel {name}", t.get_text()) for t in _drawn_ticklabels(axis)]
    return [(where, text) for where, text in found if text and text.strip()]


#: A letter or digit, ``_`` or ``^``, and a letter, digit, brace, backslash or signed digit: a sub/superscript.
_LITERAL_SCRIPT = re.compile(r"[^\W_][\u0300-\u036f]*[_^](?:[{\\]|[-+−]?\d|[^\W_])")


def _mathtext_problems(fig) -> list[str]:
    problems = []
    for where, text in _texts(fig):
        outside = re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", text)          # mathtext spans render as intended
        hit = _LITERAL_SCRIPT.search(outside)
        if hit:
            problems.append(f"{where} shows a literal {hit.group(0)!r} in {text[:40]!r} "
                            f"(write it as mathtext, $..._t$, or with Unicode)")
    return problems


def _canvas_problems(fig, renderer, cropped: bool) -> list[str]:
    """Panels (frames, ticks, axis labels and titles; not legends or notes) covering less than CANVAS_FRACTION
    of the canvas."""
    if cropped:
        canvas = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    else:
        canvas = fig.bbox
    if canvas.width < 1 or canvas.height < 1:
        return []
    cell = 4.0
    nx, ny = int(np.ceil(canvas.width / cell)), int(np.ceil(canvas.height / cell))
    used = np.zeros((ny, nx), dtype=bool)
    parts = [ax.get_tightbbox(renderer, bbox_extra_artists=[]) for ax in fig.axes if ax.get_visible() and ax.axison]
    for box in parts:
        if box is None:
            continue
        i0, i1 = int((box.x0 - canvas.x0) // cell), int(np.ceil((box.x1 - canvas.x0) / cell))
        j0, j1 = int((box.y0 - canvas.y0) // cell), int(np.ceil((box.y1 - canvas.y0) / cell))
        used[max(j0, 0):max(j1, 0), max(i0, 0):max(i1, 0)] = True
    share = float(used.mean())
    if share < CANVAS_FRACTION:
        return [f"the panels use {100 * share:.0f} % of the canvas (< {100 * CANVAS_FRACTION:.0f} %: "
                f"shrink the figure or give the panels the room)"]
    return []


def _contour_problems(fig) -> list[str]:
    from matplotlib.contour import QuadContourSet

    problems = []
    for ax in _panel_axes(fig):
        for coll in ax.collections:
            generator = getattr(coll, "_contour_generator", None)
            if not isinstance(coll, QuadContourSet) or generator is None or not coll.get_visible():
                continue
            (cy, cx), (ky, kx) = generator.chunk_size, generator.chunk_count
            ny, nx = cy * ky + 1, cx * kx + 1
            if min(ny, nx) < MIN_CONTOUR_GRID:
                problems.append(f"panel {_name(ax)} draws contours on a {ny}×{nx} grid (coarser than "
                                f"{MIN_CONTOUR_GRID}×{MIN_CONTOUR_GRID}: draw the cells, or compute a finer grid)")
    return problems


def _style(line) -> tuple[str, str]:
    ls, marker = line.get_linestyle(), line.get_marker()
    ls = "None" if ls is None or str(ls).strip().lower() in ("none", "") or line.get_linewidth() <= 0 else ls
    return ls, "None" if marker is None or str(marker).strip().lower() in ("none", "") else str(marker)


def _style_problems(fig) -> list[str]:
    from matplotlib.lines import Line2D

    problems = []
    figure_handles = [h for leg in fig.legends if leg.get_visible() for h in leg.findobj(Line2D)]
    for ax in _panel_axes(fig):
        leg = ax.get_legend()
        handles = figure_handles + (leg.findobj(Line2D) if leg is not None and leg.get_visible() else [])
        if not handles:
            continue
        shown = {_style(h) for h in handles}           # every line the legends draw (errorbar handles too)
        missing = set()
        for line in ax.lines:
            style = _style(line)
            split = (style[0], "None") in shown and ("None", style[1]) in shown     # errorbar handles: two lines
            if line.get_visible() and style not in (("-", "None"), ("None", "None")) and style not in shown \
                    and not split:
                missing.add(style)
        for ls, marker in sorted(missing):
            what = " with ".join(w for w in (None if ls == "None" else f"linestyle {ls!r}",
                                             None if marker == "None" else f"marker {marker!r}") if w)
            problems.append(f"panel {_name(ax)} draws lines ({what}) that no legend entry shows")
    return problems


def declare_count(ax, noun: str, artists) -> None:
    """Declare that ``artists`` are what a title's "<n> ``noun``" counts (e.g. ``declare_count(ax, "seeds",
    lines)``): the check compares n with how many of them show data."""
    ax._dyntools_counts = [*getattr(ax, "_dyntools_counts", []), (noun, list(artists))]


def _shows(ax, artist) -> bool:
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        return artist.get_visible() and _line_shows_data(ax, artist)
    return _collection_shows_data(ax, artist)


def _count_problems(fig) -> list[str]:
    problems = []
    titles = [("figure title", fig._suptitle.get_text() if fig._suptitle is not None else "")]
    for ax in fig.axes:
        own = " ".join(t.get_text() for t in (ax.title, ax._left_title, ax._right_title))
        titles.append((f"title of panel {_name(ax)}", own))
        for noun, artists in getattr(ax, "_dyntools_counts", []):
            singular = noun[:-1] if noun.endswith("s") else noun
            stated = re.search(rf"(\d+)\s+(?:{re.escape(singular)}s?)\b", own + " " + titles[0][1])
            drawn = sum(_shows(ax, a) for a in artists)
            if stated and int(stated.group(1)) != drawn:
                problems.append(f"panel {_name(ax)}: the title says {stated.group(0)!r} but {drawn} are drawn")
    for where, text in titles:
        hit = re.search(rf"(?<![\d.])1\s+({'|'.join(COUNT_NOUNS)})\b", text)
        if hit:
            problems.append(f"{where} says {hit.group(0)!r} (one of them is singular)")
    return problems


def figure_problems(fig, *, cropped: bool = True, renderer=None) -> list[str]:
    """Every defect of ``fig`` (see the module docstring); ``cropped``: the figure is saved with
    ``bbox_inches="tight"``, so text beyond the canvas is kept (an animation frame is not); ``renderer``: the
    renderer of a draw of ``fig`` as it is now (nothing changed since), read instead of drawing it again."""
    renderer = _renderer(fig) if renderer is None else renderer
    problems = []
    for ax in _panel_axes(fig):
        if _is_colorbar(ax):
            cbar_axis = ax.yaxis if ax._colorbar.orientation == "vertical" else ax.xaxis
            if not cbar_axis.label.get_text().strip():
                problems.append("a colorbar has no label")
            continue
        if not has_data(ax):
            if not _has_note(ax):
                problems.append(f"panel {_name(ax)} has no data (draw a note saying why, e.g. 'diverged at step k')")
            if _shows_ticklabels(ax.xaxis) or _shows_ticklabels(ax.yaxis):
                problems.append(f"panel {_name(ax)} has no data but shows ticks (ax.set_axis_off(), keep the note)")
            continue
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            if _shows_ticklabels(axis) and not axis.label.get_text().strip():
                problems.append(f"panel {_name(ax)} has no {which}-label")
    boxes = _text_boxes(fig, renderer)
    problems += _overlap_problems(boxes)
    if not cropped:
        problems += _outside_problems(fig, boxes)
    problems += _spine_problems(fig, renderer, boxes)
    problems += _legend_problems(fig, renderer)
    problems += _hidden_problems(fig)
    problems += _mathtext_problems(fig)
    problems += _canvas_problems(fig, renderer, cropped)
    problems += _contour_problems(fig)
    problems += _style_problems(fig)
    problems += _count_problems(fig)
    return problems


def frame_problems(fig, frame: int, dpi: float, content: bool = True) -> list[str]:
    """Defects of one animation frame, drawn already into ``fig`` (uncropped; width in pixels at ``dpi``);
    ``content=False``: the width only (frames that are pre-rendered pictures)."""
    problems = [f"frame {frame}: {p}" for p in figure_problems(fig, cropped=False)] if content else []
    width = fig.get_figwidth() * dpi
    if width < MIN_GIF_WIDTH:
        problems.append(f"frames are {width:.0f} px wide (< {MIN_GIF_WIDTH})")
    return problems


def axes_positions(fig) -> np.ndarray:
    """The window extents (x0, y0, x1, y1 in pixels) of the figure's visible axes, as drawn last."""
    return np.array([ax.get_window_extent().extents for ax in fig.axes if ax.get_visible()], dtype=float)


def motion_problems(positions: list[np.ndarray], tolerance: float = 1.0) -> list[str]:
    """Axes that move between animation frames: ``positions[i]`` is :func:`axes_positions` after frame i."""
    if not positions:
        return []
    first = positions[0]
    for i, here in enumerate(positions[1:], start=1):
        if here.shape != first.shape:
            return [f"frame {i} has {len(here)} axes where frame 0 has {len(first)}"]
        shift = float(np.abs(here - first).max()) if here.size else 0.0
        if shift > tolerance:
            return [f"the axes move by {shift:.0f} px between frame 0 and frame {i} (fix the layout)"]
    return []


#: Where :func:`collect` gathers the results of the check in this context (``None``: not collecting).
_COLLECTED: contextvars.ContextVar[list | None] = contextvars.ContextVar("figure_check", default=None)


def mode() -> str | None:
    """The check's setting from :data:`ENV`: ``None`` (off), ``"strict"`` or a log file path."""
    value = os.environ.get(ENV, "").strip()
    return value or None


@contextlib.contextmanager
def collect():
    """Check every figure written inside the block and gather ``(name, problems)`` into the yielded list
    (``dyntools reproduce`` reports them); the environment's setting still applies on top."""
    found: list[tuple[str, list[str]]] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


def enforce(problems_of, name: str) -> None:
    """Apply the check's setting to the figure called ``name``; ``problems_of()`` computes its defects
    (called only when the check is on: the environment variable, or inside :func:`collect`)."""
    setting, collected = mode(), _COLLECTED.get()
    if setting is None and collected is None:
        return
    problems = problems_of()
    if collected is not None:
        collected.append((name, problems))
    if setting is None:
        return
    if setting == "strict":
        if problems:
            raise FigureDefect(f"Figure {name!r} has {len(problems)} defect(s): " + "; ".join(problems))
        return
    with open(setting, "a", encoding="utf-8") as log:
        log.write(json.dumps({"figure": name, "problems": problems}) + "\n")
