"""Legends placed where they cover no drawn pixel.

matplotlib's ``loc="best"`` minimises the number of data *vertices* under the legend: a long segment
between two vertices, a filled band or a reference span can still run under it, and the figure check
(:mod:`dyntools.plots.check`) counts drawn pixels. :func:`place_legends` (called by
:func:`dyntools.plots.save` before the check) gives every panel legend left at ``loc="best"`` the first
of :data:`PLACES` whose box, grown by :data:`CLEARANCE` pixels, covers none of the panel's drawn pixels
(lines, markers, bands, images, rasterized alone with the Agg renderer), and puts it outside the panel,
to its right, when every place covers something. A legend placed by hand is left where it is (the check
judges it).
"""

from __future__ import annotations

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
    alpha = check._raster(ax.figure, check._drawn_data(ax))
    leg.set_bbox_to_anchor(None)
    for loc in PLACES:
        leg.set_loc(loc)
        if _covered(alpha, leg.get_window_extent(renderer)) == 0:
            return loc
    leg.set_loc("upper left")
    leg.set_bbox_to_anchor((1.01, 1.0), transform=ax.transAxes)
    return "outside"


def place_legends(fig) -> None:
    """Place every panel legend of ``fig`` left at ``loc="best"`` on no drawn pixel (see the module docstring)."""
    legends = _auto_legends(fig)
    if not legends:
        return
    where = [None] * len(legends)
    for _ in range(PASSES):
        renderer = check._renderer(fig)
        now = [_place(leg, renderer) for leg in legends]
        if now == where:
            return
        where = now
