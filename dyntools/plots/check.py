"""Defects a careful reader finds in a figure, measured with matplotlib's own renderer.

:func:`figure_problems` draws a figure once with the Agg renderer and reads the window extents (in
pixels) of its axes, texts and legends. It reports, one sentence per defect:

* **a panel without data** — a visible axes with no finite data inside its view limits (lines drawn in
  data coordinates with at least two finite points, or one with a marker; scatter offsets; images;
  meshes; bars). A panel that holds a text note instead ("diverged at step k", "not recorded") passes:
  an empty panel must say why it is empty;
* **an unlabelled axis** — a panel with data whose x or y axis shows tick labels but has no label
  (a colorbar needs its label too);
* **text outside the figure** — for figures saved uncropped (animation frames), any visible text whose
  extent leaves the canvas (a still saved with ``bbox_inches="tight"`` grows to hold its texts);
* **overlapping texts** — two text boxes (titles, axis labels, tick labels, notes, legends) whose
  intersection is more than :data:`OVERLAP_PX` pixels² and more than :data:`OVERLAP_FRACTION` of the
  smaller box;
* **a legend over the data** — a legend inside an axes that covers an image or mesh, or one placed by
  hand that covers more data than the best of matplotlib's nine standard places would (vertices of the
  data lines and scatter points under the legend, plus the data lines that cross it); a legend placed
  with ``loc="best"`` is matplotlib's own search for the place that covers least, and passes;
* for animations (:func:`frame_problems`), frames narrower than :data:`MIN_GIF_WIDTH` pixels.

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
from itertools import combinations

import numpy as np
from matplotlib.transforms import Bbox

#: Two text boxes overlap when they share more than this many square pixels …
OVERLAP_PX = 4.0
#: … and more than this fraction of the smaller box.
OVERLAP_FRACTION = 0.05
#: Width in pixels below which an animation frame is unreadable once embedded in a page.
MIN_GIF_WIDTH = 600
#: Environment variable that switches the check on (see :func:`enforce`).
ENV = "DYNTOOLS_FIGURE_CHECK"


class FigureDefect(ValueError):
    """A figure failed the check; the message names the figure and each defect."""


def _renderer(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
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


def _inside(pts: np.ndarray, box: Bbox) -> int:
    return int(((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)).sum())


def _coverage(ax, box: Bbox) -> int:
    """Data under ``box`` (pixels): vertices of data lines and scatter points inside it, plus data lines
    that cross it."""
    covered = 0
    for ln in _data_lines(ax):
        xy = np.asarray(ln.get_xydata(), dtype=float).reshape(-1, 2)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if not xy.size:
            continue
        pts = ax.transData.transform(xy)
        covered += _inside(pts, box)
        path = ln.get_transform().transform_path(ln.get_path())
        if len(xy) > 1 and path.intersects_bbox(box, filled=False):
            covered += 1
    for coll in ax.collections:
        offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
        if offsets.size and coll.get_offset_transform() == ax.transData:
            covered += _inside(ax.transData.transform(offsets[np.all(np.isfinite(offsets), axis=1)]), box)
    return covered


def _is_mesh(coll) -> bool:
    """A filled field (pcolormesh, contourf, hexbin, …): a collection coloured by an array of values that
    is not a scatter of markers placed at data offsets."""
    from matplotlib.collections import PathCollection

    return (coll.get_visible() and coll.get_array() is not None and np.size(coll.get_array()) > 1
            and not isinstance(coll, PathCollection))


def _legend_problems(fig, renderer) -> list[str]:
    problems = []
    for ax in _panel_axes(fig):
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        frame = ax.get_window_extent(renderer)
        inter = Bbox.intersection(box, frame)
        if inter is None or inter.width * inter.height < 0.5 * box.width * box.height:
            continue                                           # a legend outside its axes covers nothing
        if any(_image_shows_data(im) for im in ax.images) or any(_is_mesh(c) for c in ax.collections):
            problems.append(f"legend of panel {_name(ax)} covers the image/mesh data (place it outside)")
            continue
        here = _coverage(ax, box)
        if here == 0 or getattr(leg, "_loc", None) == 0:
            continue                     # loc="best": matplotlib itself chose the place that covers least
        pad = 0.01 * min(frame.width, frame.height)
        w, h = box.width, box.height
        xs = (frame.x0 + pad, (frame.x0 + frame.x1 - w) / 2, frame.x1 - pad - w)
        ys = (frame.y0 + pad, (frame.y0 + frame.y1 - h) / 2, frame.y1 - pad - h)
        best = min(_coverage(ax, Bbox.from_bounds(x, y, w, h)) for x in xs for y in ys)
        if here > 1.5 * best + 1:
            problems.append(f"legend of panel {_name(ax)} covers {here} data points/lines where another place "
                            f"in the panel covers {best} (use loc='best' or move it outside)")
    return problems


def figure_problems(fig, *, cropped: bool = True) -> list[str]:
    """Every defect of ``fig`` (see the module docstring); ``cropped``: the figure is saved with
    ``bbox_inches="tight"``, so text beyond the canvas is kept (an animation frame is not)."""
    renderer = _renderer(fig)
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
            continue
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            if _shows_ticklabels(axis) and not axis.label.get_text().strip():
                problems.append(f"panel {_name(ax)} has no {which}-label")
    boxes = _text_boxes(fig, renderer)
    problems += _overlap_problems(boxes)
    if not cropped:
        problems += _outside_problems(fig, boxes)
    problems += _legend_problems(fig, renderer)
    return problems


def frame_problems(fig, frame: int, dpi: float, content: bool = True) -> list[str]:
    """Defects of one animation frame, drawn already into ``fig`` (uncropped; width in pixels at ``dpi``);
    ``content=False``: the width only (frames that are pre-rendered pictures)."""
    problems = [f"frame {frame}: {p}" for p in figure_problems(fig, cropped=False)] if content else []
    width = fig.get_figwidth() * dpi
    if width < MIN_GIF_WIDTH:
        problems.append(f"frames are {width:.0f} px wide (< {MIN_GIF_WIDTH})")
    return problems


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
