"""Animated GIFs: one writer for every animation of the library.

:func:`write_gif` renders ``draw(i)`` for each frame once (matplotlib's Pillow writer grabs the canvas;
``FuncAnimation.save`` would render every frame twice), at a resolution that makes the frame at least
:data:`dyntools.plots.check.MIN_GIF_WIDTH` pixels wide, with the run's note (diverged, float32) in the
title of every frame. Frames are not cropped to their contents, so the figure check
(:mod:`dyntools.plots.check`, when ``DYNTOOLS_FIGURE_CHECK`` is set) looks at the first, the middle and
the last frame as they are written: a title cut by the edge, a panel without data or an unlabelled axis
in any of them is a defect; and the axes of every frame must stay where they are in the first
(:func:`dyntools.plots.check.motion_problems`). The layout (``constrained``) is computed once, on the first
frame, then frozen: a tick label growing in a later frame would otherwise shift the panels under the eye.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from dyntools import plots
from dyntools.plots import check


def gif_dpi(fig, dpi: float = 90.0) -> float:
    """``dpi``, raised until the frame is at least ``check.MIN_GIF_WIDTH`` pixels wide."""
    return max(float(dpi), check.MIN_GIF_WIDTH / fig.get_figwidth())


def write_gif(fig, draw: Callable[[int], None], frames: int, path: Path, *, fps: float = 5.0,
              dpi: float | None = None, checked: bool = True) -> Path:
    """Write ``frames`` frames (``draw(i)`` for ``i < frames``) of ``fig`` to the GIF ``path``.

    ``dpi`` defaults to :func:`gif_dpi`; ``checked=False`` skips the figure check of the frames for
    figures whose frames are pre-rendered pictures (the check then only measures the width)."""
    from matplotlib.animation import PillowWriter

    from dyntools.plots.log_labels import plain_log_labels

    if frames < 2:
        raise ValueError(f"Invalid frames: {frames} (an animation needs >= 2)")
    dpi = gif_dpi(fig) if dpi is None else float(dpi)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plots.stamp_note(fig, inside=True)
    looked_at = {0, frames // 2, frames - 1}
    writer = PillowWriter(fps=fps)
    positions = []
    with writer.saving(fig, path, dpi), contextlib.ExitStack() as frozen:
        for i in range(frames):
            draw(i)
            plain_log_labels(fig)       # log-axis labels as text (a frame may set its scales anew)
            writer.grab_frame()
            if i == 0:          # the first frame's layout holds for every frame; a still drawn after gets its own
                frozen.enter_context(plots.layout_kept(fig))
            positions.append(check.axes_positions(fig))
            if i in looked_at:
                check.enforce(lambda i=i: check.frame_problems(fig, i, dpi, content=checked), path.name)
    check.enforce(lambda: check.motion_problems(positions), path.name)
    return path
