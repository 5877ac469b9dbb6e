"""Figures of the optimizer trajectory gallery (result kind ``"trajectories"``).

Per surface: the contours of ``log10(f − f* + ε)`` with every optimizer's trajectory, the start, the
minima (stars), saddle points (crosses), the valley of minima of ``diag-net`` (dashed) and, when
recorded, the gradient-flow reference (black dashes), as PNG/PDF stills; an animated GIF of all
optimizers moving together, drawn from the recorded snapshots (frames on a geometric grid of steps,
since most of the motion is early). For the whole result: a gallery of every surface, and the
loss gap ``f(θ_t) − f*`` against the step on log–log axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots
from dyntools.plots import animate, check

GAP_FLOOR = 1e-12          # f − f* is drawn clipped below at this value (log axes)
GRID = 160                 # contour resolution per axis
THIN = 1500                # points per line on the stills


def _labels():
    from dyntools.dynamics.trajectories import LABELS

    return LABELS


def _background(ax, surface: str, levels: int = 14):
    """Filled log-contours of ``f − f*`` and the surface's marked points; returns nothing."""
    from matplotlib.colors import BoundaryNorm

    from dyntools.models.surfaces import Surface

    model = Surface(surface)
    spec = model.spec
    x0, x1, y0, y1 = spec.box
    X, Y = np.meshgrid(np.linspace(x0, x1, GRID), np.linspace(y0, y1, GRID))
    Z = np.log10(np.maximum(model.value(X, Y) - spec.f_min, 0.0) + 1e-3)
    bounds = np.linspace(Z.min(), Z.max(), levels + 1)
    # filled levels as one image (an animation frame renders in a fraction of contourf's time)
    ax.imshow(Z, origin="lower", extent=spec.box, aspect="auto", cmap="Greys_r", alpha=0.55,
              norm=BoundaryNorm(bounds, 256), interpolation="nearest")
    ax.contour(X, Y, Z, levels=bounds, colors="white", linewidths=0.4, alpha=0.7)
    curve = model.minimum_curve()
    if curve is not None:
        ax.plot(curve[:, 0], curve[:, 1], color="black", ls="--", lw=0.8, label="minima (u v = 1)")
    if spec.minima:
        m = np.array(spec.minima)
        ax.plot(m[:, 0], m[:, 1], "*", color="gold", mec="black", ms=11, ls="none", zorder=5, label="minima")
    if spec.saddles:
        s = np.array(spec.saddles)
        ax.plot(s[:, 0], s[:, 1], "X", color="white", mec="black", ms=8, ls="none", zorder=5, label="saddle")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("u" if surface == "diag-net" else "x")
    ax.set_ylabel("v" if surface == "diag-net" else "y")
    ax.set_title(f"{surface}: {spec.formula}", pad=10)      # clear of the top y-tick label (matplotlib 3.8)


def _arrays(result, surface: str) -> dict:
    from dyntools.dynamics.trajectories import key_of

    k = key_of(surface)
    names = ("path", "loss", "steps", "diverged_at", "lrs", "start", "flow")
    return {n: result[f"{k}_{n}"] for n in names if f"{k}_{n}" in result.arrays}


def thin(n: int, points: int = THIN) -> np.ndarray:
    """At most about ``points`` of the indices ``0 … n−1``, geometric (every early step, fewer late ones:
    on the figures the early motion is what moves)."""
    if n <= points:
        return np.arange(n)
    return np.union1d(np.unique(np.round(np.geomspace(1, n, points)).astype(np.int64) - 1), [0, n - 1])


def _draw_paths(ax, result, surface: str, upto: int | None = None):
    """The trajectories (thinned, :func:`thin`; or up to record index ``upto``); returns the line artists."""
    a = _arrays(result, surface)
    labels = _labels()
    lines = []
    keep = thin(a["path"].shape[1])
    for g, name in enumerate(result.config["optimizers"]):
        path = a["path"][g, keep] if upto is None else a["path"][g, :upto + 1]
        width = 0.9 + 0.45 * (len(result.config["optimizers"]) - 1 - g)     # a stack: shared paths stay visible
        (ln,) = ax.plot(path[:, 0], path[:, 1], color=plots.PALETTE[g % 8], lw=width, alpha=0.9,
                        label=f"{labels[name]} (lr {a['lrs'][g]:g})")
        lines.append(ln)
    if "flow" in a:
        ax.plot(a["flow"][:, 0], a["flow"][:, 1], color="black", ls=(0, (3, 2)), lw=1.3, label="gradient flow")
    ax.plot(*a["start"], "o", color="white", mec="black", ms=6, zorder=6, label="start")
    return lines


def still(result, surface: str, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Contours with every trajectory of one surface."""
    fig, axes = plots.figure(width=5.4, height=4.4)
    ax = axes[0, 0]
    _background(ax, surface)
    _draw_paths(ax, result, surface)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return plots.save(fig, out_dir, f"trajectories_{surface}", formats)


def gallery(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Every surface of the result in one figure (a shared legend)."""
    surfaces = result.config["surfaces"]
    ncols = min(2, len(surfaces))       # two columns: at a page's width (~1000 px) the ticks stay readable
    nrows = -(-len(surfaces) // ncols)
    fig, axes = plots.figure(ncols=ncols, nrows=nrows, width=3.6, height=3.2)
    for i, s in enumerate(surfaces):
        ax = axes[i // ncols, i % ncols]
        _background(ax, s)
        _draw_paths(ax, result, s)
    for j in range(len(surfaces), nrows * ncols):
        axes[j // ncols, j % ncols].set_visible(False)
    entries = {}                                  # every optimizer and marker of any panel, once (lr per panel)
    for ax in axes.flat:
        for h, n in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(n.split(" (lr")[0], h)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center",   # no wider than the panels
               ncols=min(2 * ncols, len(entries)), frameon=False)
    noise = result.config["noise"]
    fig.suptitle(f"{result.config['steps']} steps" + (f", gradient noise σ = {noise:g}" if noise else ""))
    return plots.save(fig, out_dir, "trajectories_gallery", formats)


def losses(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """``f(θ_t) − f*`` against the step, log–log, one panel per surface."""
    from dyntools.models.surfaces import surface as spec_of

    surfaces = result.config["surfaces"]
    ncols = min(2, len(surfaces))       # two columns: at a page's width (~1000 px) the ticks stay readable
    nrows = -(-len(surfaces) // ncols)
    fig, axes = plots.figure(ncols=ncols, nrows=nrows, width=3.6, height=2.8)
    labels = _labels()
    for i, s in enumerate(surfaces):
        ax = axes[i // ncols, i % ncols]
        a = _arrays(result, s)
        keep = thin(a["steps"].size)
        for g, name in enumerate(result.config["optimizers"]):
            gap = np.maximum(a["loss"][g, keep] - spec_of(s).f_min, GAP_FLOOR)
            width = 0.9 + 0.45 * (len(result.config["optimizers"]) - 1 - g)    # a stack, as on the surfaces
            ax.plot(a["steps"][keep] + 1, gap, color=plots.PALETTE[g % 8], lw=width, label=labels[name])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("step t + 1")
        ax.set_ylabel(r"$f(\theta_t) - f^*$")
        ax.set_title(s)
    for j in range(len(surfaces), nrows * ncols):
        axes[j // ncols, j % ncols].set_visible(False)
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=min(2 * ncols, len(names)), frameon=False)
    fig.suptitle(f"loss gap against the step (clipped at {GAP_FLOOR:g})")
    return plots.save(fig, out_dir, "trajectories_loss", formats)


def frame_indices(n_records: int, frames: int) -> np.ndarray:
    """``frames`` record indices from 0 to the last, geometric in the step (early motion is fast); fewer
    when the run has fewer records."""
    if frames < 2:
        raise ValueError(f"Invalid frames: {frames} (an animation needs >= 2)")
    idx = np.unique(np.round(np.geomspace(1, n_records, frames)).astype(np.int64) - 1)
    return np.union1d([0], idx)


def _freeze(fig, ax, moving, dpi: float) -> None:
    """Render everything but the ``moving`` artists once, show that picture as a figure image and hide
    the artists it shows: a frame then draws one image and a few lines instead of the contours, ticks
    and legend again (10× faster)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(dpi)
    for artist in moving:
        artist.set_visible(False)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    picture = np.asarray(canvas.buffer_rgba()).copy()
    plots.drop_layout_engine(fig)
    keep = {id(a) for a in moving}
    for child in ax.get_children():
        if id(child) not in keep:
            child.set_visible(False)
    for artist in moving:
        artist.set_visible(True)
    ax.set_axis_off()
    fig.patch.set_visible(False)
    fig.figimage(picture, zorder=-1)


def animation(result, surface: str, out_dir: Path, fps: float = 12.0) -> Path:
    """Animated GIF: every optimizer moving together on one surface (a head marker and its track)."""
    a = _arrays(result, surface)
    fig, axes = plots.figure(width=4.6, height=3.6)
    ax = axes[0, 0]
    _background(ax, surface)
    lines = _draw_paths(ax, result, surface, upto=0)
    heads = [ax.plot([], [], "o", color=ln.get_color(), ms=4, mec="black", mew=0.4)[0] for ln in lines]
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=8)
    idx = frame_indices(a["steps"].size, int(result.config["frames"]))
    text = ax.text(0.02, 0.02, "", transform=ax.transAxes, fontsize=7,
                   bbox={"facecolor": "white", "alpha": 0.7, "lw": 0})

    dpi = animate.gif_dpi(fig, 130.0)
    check.enforce(lambda: check.figure_problems(fig), f"trajectories_{surface}.gif (before its frames)")
    _freeze(fig, ax, lines + heads + [text], dpi)

    def draw(i):
        k = idx[i]
        for g, (ln, hd) in enumerate(zip(lines, heads)):
            path = a["path"][g, :k + 1]
            ln.set_data(path[:, 0], path[:, 1])
            ok = np.isfinite(path[:, 0])
            last = path[ok][-1] if ok.any() else path[0]
            hd.set_data([last[0]], [last[1]])
        text.set_text(f"step {int(a['steps'][k])}")

    return animate.write_gif(fig, draw, idx.size, Path(out_dir) / f"trajectories_{surface}.gif", fps=fps,
                             dpi=dpi, checked=False)


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf"), gifs: bool = True) -> list[Path]:
    """Every figure of a ``trajectories`` result: one still (and GIF) per surface, the gallery, the losses."""
    out_dir = Path(out_dir)
    paths = []
    for s in result.config["surfaces"]:
        paths += still(result, s, out_dir, formats)
        if gifs:
            paths.append(animation(result, s, out_dir))
    if len(result.config["surfaces"]) > 1:
        paths += gallery(result, out_dir, formats)
    paths += losses(result, out_dir, formats)
    return paths
