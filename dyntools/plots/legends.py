"""Legends placed where they cover no drawn pixel.

matplotlib's ``loc="best"`` minimises the number of data *vertices* under the legend: a long segment
between two vertices, a filled band or a reference span can still run under it, and the figure check
(:mod:`dyntools.plots.check`) counts drawn pixels. :func:`place_legends` (called by
:func:`dyntools.plots.save` before the check) gives every panel legend left at ``loc="best"`` the first
of :data:`PLACES` whose box, grown by :data:`CLEARANCE` pixels, covers none of the panel's drawn pixels
(lines, markers, bands, images, rasterized alone with the Agg renderer). When every place covers
something the legend leaves the panel: to its right in a one-panel figure; in a figure of several panels
(where a legend to the right of one panel pushes its neighbours away) it becomes the figure's legend
under the panels, if the figure has none yet, else it goes to the right of its panel. A legend placed by
hand is left where it is (the check judges it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.transforms import Bbox

from dyntools.plots import check

#: Places tried inside a panel, in order (corners first: they hide the least of a typical curve).
PLACES = ("upper right", "upper left", "lower left", "lower right", "center right", "center left",
          "upper center", "lower center")
#: Pixels of clearance around a legend (a later layout pass may move the data by a pixel or two).
CLEARANCE = 3.0
#: Layout passes: a legend moved outside its panel shrinks the panels, which moves their data.
PASSES = 3


def _auto_legends(fig) -> list:
    found = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None and leg.get_visible() and (leg._loc == 0 or getattr(leg, "_dyntools_auto", False)):
            leg._dyntools_auto = True
            found.append(leg)
    return found


def _covered(alpha, box: Bbox) -> int:
    return int((check._window(alpha, box, margin=-CLEARANCE) > 0.1).sum())


def _place(leg, renderer) -> str:
    """Move ``leg`` to the first free place of its panel (or outside); return where it went."""
    ax = leg.axes
    fig = ax.figure
    alpha = check._raster(fig, check._drawn_data(ax))
    leg.set_bbox_to_anchor(None)
    for loc in PLACES:
        leg.set_loc(loc)
        if _covered(alpha, leg.get_window_extent(renderer)) == 0:
            return loc
    panels = [a for a in fig.axes if a.get_visible() and not check._is_colorbar(a)]
    if len(panels) > 1 and not fig.legends:
        handles, texts = list(leg.legend_handles), [t.get_text() for t in leg.get_texts()]
        size = leg.get_texts()[0].get_fontsize() if texts else None
        leg.remove()
        fig.legend(handles, texts, loc="outside lower center", ncols=min(len(texts), 4), fontsize=size,
                   frameon=False)
        return "figure"
    leg.set_loc("upper left")
    leg.set_bbox_to_anchor((1.01, 1.0), transform=ax.transAxes)
    return "outside"


def place_legends(fig):
    """Place every panel legend of ``fig`` left at ``loc="best"`` on no drawn pixel (see the module docstring).

    Returns the renderer of the last draw when the legends ended where that draw had them (a pass that moved
    nothing: the figure is as drawn, so the figure check can read that draw instead of drawing it again), else
    ``None``."""
    legends = _auto_legends(fig)
    if not legends:
        return None
    where = [None] * len(legends)
    for _ in range(PASSES):
        renderer = check._renderer(fig)
        now = [_place(leg, renderer) if w != "figure" else w for leg, w in zip(legends, where)]
        if now == where:
            return renderer
        where = now
    return None
