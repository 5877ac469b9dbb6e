"""Figures: one function per kind of figure; matplotlib with no global state.

Each module draws one kind of figure: its ``plot_result(result, out_dir, formats)`` draws every figure of a
result and returns the written paths. The experiment that writes a kind of result declares that plotter
(``Experiment.figures``; ``dt.train``'s kind ``"train"``: :data:`dyntools.plots.train.FIGURES`),
and :func:`dyntools.plugins.figures` finds them. The modules import matplotlib inside their functions, so that
declaring a plotter costs no matplotlib import (``dyntools --help`` stays light). Shared style lives here:
:func:`figure` (a fresh ``Figure``, not pyplot's global state), :data:`PALETTE` (Okabe–Ito,
colour-blind safe) and :func:`save` (PNG and PDF; a legend left at ``loc="best"`` is first moved where it
covers no drawn pixel, :mod:`dyntools.plots.legends`; every file is written with the layout the check read).

A figure of a run that diverged says so: :func:`plot_result` finds the divergence in the result
(:func:`divergence_note`: ``diverged_at`` per path, a ``diverged`` mask of cells, or the status) and every
figure :func:`save` writes while it draws carries that line at its top, whichever module drew it. A run
trained in float32 (:func:`precision_note`, from the result's config) is marked the same way, so that its
figures are not mistaken for the float64 ones.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dyntools.store import StoreError

if TYPE_CHECKING:
    import matplotlib.figure

#: The divergence line of the result being drawn (set by :func:`plot_result`, read by :func:`save`).
_NOTE: contextvars.ContextVar[str | None] = contextvars.ContextVar("divergence_note", default=None)

#: Okabe & Ito (2008) colour-blind safe palette.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

#: Dash patterns for curves that may coincide over long stretches (schedules equal until a decay): a curve
#: drawn over another with gaps in it leaves the one below visible. Cycle with the colours.
DASHES = ["-", (0, (5, 2)), (0, (6, 2, 1, 2)), (0, (2, 2)), (0, (9, 3)), (0, (3, 1, 1, 1, 1, 1)),
          (0, (4, 1, 1, 1)), (0, (1, 1.5))]

RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.25, "savefig.dpi": 200, "figure.dpi": 100,
}


def figure(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.2, **kwargs):
    """A new ``Figure`` and its axes, styled by :data:`RC` (applied locally, never globally).

    Parameters
    ----------
    ncols, nrows : int, default 1
        The grid of axes.
    width, height : float, default 4.2, 3.2
        The size of one panel in inches.
    **kwargs
        Passed to ``Figure.subplots`` (``sharex``, ``sharey``, …).

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : ndarray of Axes, shape (nrows, ncols)
    """
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def math_label(text: str) -> str:
    """A label read from a result with its plain-text sub/superscripts as mathtext: ``"rising as t^0.5"`` →
    ``"rising as $t^{0.5}$"``, ``"v from ∇f_t"`` → ``"v from ∇$f_{t}$"`` (text already in ``$…$`` is kept).

    Parameters
    ----------
    text : str
        The label; a single letter followed by ``_`` or ``^`` and a number or a letter becomes mathtext.

    Returns
    -------
    str
    """
    import re

    parts = re.split(r"(\$[^$]*\$)", str(text))
    pattern = r"(?<![\w$])([A-Za-z])([_^])([-+]?[0-9.]*[0-9]|[A-Za-z]\b)"
    return "".join(p if p.startswith("$") else re.sub(pattern, r"$\1\2{\3}$", p) for p in parts)


def count(n: int, noun: str) -> str:
    """``"1 seed"``, ``"5 seeds"``: a count with its noun in the right number (``noun`` singular).

    Parameters
    ----------
    n : int
        The count.
    noun : str
        The noun in the singular (an ``s`` is added for any count but 1).

    Returns
    -------
    str
    """
    return f"{n} {noun}" if int(n) == 1 else f"{n} {noun}s"


def save(fig: matplotlib.figure.Figure, out_dir: Path, name: str,
         formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Write ``fig`` as ``out_dir/name.<fmt>`` for each format; return the paths.

    ``name`` must be a plain file stem (letters, digits, ``_ . -``; no separator, no leading dot): figure
    names may carry words read from a result (a model name), and nothing read from a file may steer
    where a figure is written.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure; it is checked as a reader sees it before it is written.
    out_dir : path
        The directory (created when missing).
    name : str
        The file stem.
    formats : sequence of str, default ("png", "pdf")
        The formats written.

    Raises
    ------
    ValueError
        When ``name`` is not a plain file stem.
    """
    import re

    import matplotlib

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", name) or ".." in name:
        raise ValueError(f"Invalid figure name {name!r}: not a plain file name (a damaged or crafted result?)")
    out_dir = Path(out_dir)
    stamp_note(fig)
    from dyntools.plots import check
    from dyntools.plots.legends import place_legends
    from dyntools.plots.log_labels import plain_log_labels

    plain_log_labels(fig)                   # log-axis labels as text, not mathtext (the same labels, faster drawn)

    drawn = place_legends(fig)              # legends left at loc="best" go where they cover no drawn pixel

    def problems():                         # its last draw, when still true; else a draw kept for the box below
        nonlocal drawn
        drawn = drawn or check._renderer(fig)
        return check.figure_problems(fig, renderer=drawn)

    check.enforce(problems, name)
    paths = []
    made = not out_dir.exists()
    with matplotlib.rc_context(RC):
        box = tight_box(fig, drawn)         # lays the figure out when nothing has drawn it yet
        with layout_kept(fig):
            for fmt in dict.fromkeys(formats):
                path = out_dir / f"{name}.{fmt}"
                try:
                    out_dir.mkdir(parents=True, exist_ok=True)
                    fig.savefig(path, bbox_inches=box)
                except OSError as exc:      # a full disk, a quota: one line, no half-written figure left
                    path.unlink(missing_ok=True)
                    if made:
                        with contextlib.suppress(OSError):
                            out_dir.rmdir()     # made here and empty: removed (rmdir never removes content)
                    raise StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
                paths.append(path)
    return paths


def tight_box(fig: matplotlib.figure.Figure, renderer=None):
    """The box (inches) ``savefig(bbox_inches="tight")`` would crop ``fig`` to, padded by ``savefig.pad_inches``,
    from ``renderer``: a draw of ``fig`` as it is now (else a layout pass without rendering is made here).

    :func:`save` hands this box to ``savefig`` and keeps the layout of that draw (:func:`layout_kept`): with
    ``"tight"`` matplotlib lays the figure out again for every file, at the file's resolution. The constrained
    layout was the largest single cost of a warm ``dyntools reproduce --quick`` (59 of its 235 seconds under
    cProfile, in one process); drawing again the figures of its 27 results, ``savefig`` took 46–53 s before and
    31 s after (three alternated pairs, AMD EPYC Zen 4). The file shows the geometry the figure check read.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, drawn as it is now when ``renderer`` is given.
    renderer : matplotlib renderer, optional
        The renderer of that draw; without it a layout pass without rendering is made.

    Returns
    -------
    matplotlib.transforms.Bbox
        The box in inches, for ``savefig(bbox_inches=...)``.
    """
    import matplotlib

    if renderer is None:
        fig.draw_without_rendering()
    return fig.get_tightbbox(renderer).padded(matplotlib.rcParams["savefig.pad_inches"])


@contextlib.contextmanager
def layout_kept(fig: matplotlib.figure.Figure):
    """Inside the block, draws of ``fig`` keep the positions of its last layout (its layout engine is set aside),
    restored on exit (:func:`save`'s files; the frames of a GIF after its first,
    :func:`dyntools.plots.animate.write_gif`).

    The figure has no engine at all inside, not matplotlib's ``"none"`` placeholder: ``savefig`` draws a figure
    that has an engine once more before it paints (a layout pass, even for the placeholder), which was 11–14 % of
    the time drawing again the figures of a quick report's 26 results. Leaving the engine and coming back to it
    are always allowed (matplotlib refuses only a switch between two engines of different colorbar layouts).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, laid out already (drawn, or ``draw_without_rendering``).
    """
    engine = fig.get_layout_engine()
    if engine is not None:
        drop_layout_engine(fig)
    try:
        yield
    finally:
        if engine is not None:
            fig.set_layout_engine(engine)


def cell_grid_ticks(ax) -> None:
    """The ticks of a heatmap of grid cells on log axes: no minor ticks on an axis whose view spans at least two
    decades (its decades are labelled; the cells are the resolution), matplotlib's own where it spans fewer (its
    labelled minor ticks are then the only numbers on the axis). Call it after the axis limits are set.

    Each minor tick is a tick object with its label, measured on every layout pass: drawing again the AdamW
    heatmaps of six results of a quick report (log axes over four to seven decades) took 34–36 s with them and
    21 s without (AMD EPYC Zen 4).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        A heatmap's axes (an axis on another scale than log is left as it is).
    """
    from matplotlib.ticker import NullLocator

    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() == "log" and abs(np.log10(high / low)) >= 2:
            axis.set_minor_locator(NullLocator())


def drop_layout_engine(fig: matplotlib.figure.Figure) -> None:
    """Take ``fig``'s layout engine away (its axes stay where the last layout put them): ``savefig`` then paints
    without the extra layout pass it makes for a figure with any engine, matplotlib's ``"none"`` placeholder too.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, laid out already.
    """
    import matplotlib

    # set_layout_engine(None) installs the rc's automatic layout when the rc asks for one: here it does not
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


def stamp_note(fig: matplotlib.figure.Figure, inside: bool = False) -> None:
    """Write the note of the result being drawn (divergence, float32) on ``fig``, once per figure (a GIF's
    figure is saved as a still too): above everything, the figure's own title included, or with ``inside``
    (an animation's frames are not cropped to their contents) as the first line of the figure's title.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to mark.
    inside : bool, default False
        Put the note in the figure's title (animations) rather than above it.
    """
    note = _NOTE.get()
    if not note or getattr(fig, "_dyntools_note", False):
        return
    if inside:
        title = fig._suptitle.get_text() if fig._suptitle is not None else ""
        fig.suptitle(f"{note}\n{title}" if title else note, color=PALETTE[1], fontweight="bold", fontsize=9)
    else:
        fig.text(0.5, 1.0, note, ha="center", va="bottom", color=PALETTE[1], fontweight="bold", fontsize=9)
    fig._dyntools_note = True


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf"), *, plotter: Callable) -> list[Path]:
    """Draw every figure of ``result`` with ``plotter``, the function its kind's experiment declares
    (``Experiment.figures``, found by :func:`dyntools.plugins.figures`), each figure marked
    with the result's divergence and precision notes.

    Parameters
    ----------
    result : RunResult
        A run's result (its ``config``, ``arrays``, ``status``).
    out_dir : path
        The directory the figures are written to.
    formats : sequence of str, default ("png", "pdf")
        The formats written.
    plotter : callable
        ``plotter(result, out_dir, formats) -> list of Path``: draws and saves (:func:`save`) the figures.

    Returns
    -------
    list of Path
        The written files.
    """
    notes = [n for n in (precision_note(result), divergence_note(result)) if n]
    token = _NOTE.set(" · ".join(notes) or None)
    try:
        return plotter(result, Path(out_dir), formats)
    finally:
        _NOTE.reset(token)


def precision_note(result) -> str | None:
    """"trained in float32" when the result's config says so (``dtype`` at its top, in its ``params`` or
    its ``model``); ``None`` for float64 (the default) and for results without a precision.

    Parameters
    ----------
    result : RunResult
        A run's result (its ``config``, ``arrays``, ``status``).
    """
    config = getattr(result, "config", {}) or {}
    places = (config, config.get("params"), config.get("model"))
    if any(isinstance(c, dict) and c.get("dtype") == "float32" for c in places):
        return "trained in float32"
    return None


def divergence_note(result) -> str | None:
    """"diverged: k of n paths (first at step s)" / "diverged: k of n cells" / the message of a diverged
    status; ``None`` when nothing diverged.

    Parameters
    ----------
    result : RunResult
        A run's result (its ``config``, ``arrays``, ``status``).
    """
    arrays = getattr(result, "arrays", {})
    if "diverged_at" in arrays and np.asarray(arrays["diverged_at"]).dtype.kind in "iu":
        div = np.asarray(arrays["diverged_at"]).ravel()
        bad = div[div >= 0]
        if bad.size:
            return f"diverged: {bad.size} of {div.size} paths (first at step {int(bad.min())})"
    elif "diverged" in arrays and np.asarray(arrays["diverged"]).dtype.kind == "b":
        mask = np.asarray(arrays["diverged"])
        if mask.any():
            return f"diverged: {int(mask.sum())} of {mask.size} cells"
    if getattr(result, "status", None) == "diverged":
        return f"diverged: {result.message}"[:120]
    return None
