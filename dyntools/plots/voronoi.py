"""Figures of the Voronoi study (seed 000): the environment, animations of training, curves, the ladder.

Kinds: ``"voronoi"`` (one rung × one decay over seeds, with recorded snapshots) and
``"voronoi-ladder"`` (the sweep). Animations are GIFs written by matplotlib's animation module with
its Pillow writer, one frame per *recorded* snapshot (the run's ``frames``), never by re-training;
each GIF has PNG/PDF stills of its last frame.

* ``voronoi_env``: cells coloured by label under both partition rules (nearest center; the seed's
  ``argmin_j |xᵀc_j/‖c_j‖² − 1|``), centers marked;
* ``voronoi_plane.gif``: predicted class over the box during training, darkened where it differs
  from the true label, the partition's cell boundaries drawn beneath, centers (learned ones move);
* ``voronoi_centers.gif``: centers coloured by their logit margin ``W₁ⱼ − W₀ⱼ`` (C = 2; otherwise the
  largest logit), and the sorted per-center logits of each class;
* ``voronoi_scalars.gif``: offset, scale and the plus–minus pair against the step;
* ``voronoi_curves``: train/eval loss and accuracy, median and min–max band over seeds, with the
  majority baseline and the exact rule drawn as horizontal lines;
* ``voronoi_ladder`` (a ladder sweep): one column per trained member, the MLP baseline last, with the MLP's
  median final evaluation accuracy drawn across every rung's panel.

The MLP baseline (member ``mlp``) has no centers: its runs draw the curves and the plane, not the centers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.colors import ListedColormap

from dyntools import plots
from dyntools.data.voronoi import label_points
from dyntools.plots import animate

SCALARS = (("offset", "offset o"), ("scale", "scale σ"), ("plus-minus", "plus–minus p"))


def class_cmap(classes: int) -> ListedColormap:
    from matplotlib.colors import ListedColormap
    return ListedColormap([plots.PALETTE[c % len(plots.PALETTE)] for c in range(classes)])


def plane_grid(box: float, res: int) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres of a ``res × res`` grid over ``[−s, s]²`` (points, axis ticks)."""
    ticks = (np.arange(res) + 0.5) / res * 2 * box - box
    gx, gy = np.meshgrid(ticks, ticks)
    return np.column_stack([gx.ravel(), gy.ravel()]), ticks


def _check_2d(dim: int, what: str) -> None:
    if dim != 2:
        raise ValueError(f"Invalid dim (D): {what} draws the plane (D = 2), got D = {dim}")


def _draw_partition(ax, centers, labels, box, rule, classes, res, fill=True):
    pts, _ = plane_grid(box, res)
    lab = label_points(pts, centers, labels, rule).reshape(res, res)
    if fill:
        ax.imshow(lab, origin="lower", extent=(-box, box, -box, box), cmap=class_cmap(classes),
                  vmin=-0.5, vmax=classes - 0.5, alpha=0.55, interpolation="nearest")
    from dyntools.data.voronoi import cells

    cell = cells(pts, centers, rule).reshape(res, res)
    edges = (np.diff(cell, axis=0, prepend=cell[:1]) != 0) | (np.diff(cell, axis=1, prepend=cell[:, :1]) != 0)
    ax.imshow(np.where(edges, 1.0, np.nan), origin="lower", extent=(-box, box, -box, box), cmap="Greys",
              vmin=0, vmax=1.2, alpha=0.6, interpolation="nearest")
    ax.set_xlim(-box, box)
    ax.set_ylim(-box, box)
    ax.set_aspect("equal")
    ax.grid(False)


def env_figure(centers, labels, box: float, classes: int, out_dir: Path, formats=("png", "pdf"),
               stem: str = "voronoi_env", res: int = 300) -> list[Path]:
    """The environment under both partition rules, side by side."""
    _check_2d(np.shape(centers)[1], "the environment figure")
    fig, axes = plots.figure(ncols=2, width=3.6, height=3.6)
    titles = {"nearest": "Voronoi: argmin‖x − c‖", "projection": "seed's rule: argmin |xᵀc/‖c‖² − 1|"}
    for ax, rule in zip(axes[0], ("nearest", "projection")):
        _draw_partition(ax, centers, labels, box, rule, classes, res)
        ax.scatter(centers[:, 0], centers[:, 1], c=[plots.PALETTE[int(c) % 8] for c in labels], s=14,
                   edgecolors="black", linewidths=0.6, zorder=3)
        ax.set_title(titles[rule])
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")
    return plots.save(fig, out_dir, stem, formats)


def _model(result):
    from dyntools.models.voronoi import VoronoiLadder

    m = result.config["model"]
    if m.get("rung") == "mlp":
        from dyntools.models.voronoi_mlp import VoronoiMLP

        return VoronoiMLP.from_config(m)
    return VoronoiLadder(m["rung"], centers=result["env_centers"], center_labels=result["env_labels"],
                         classes=m["classes"], dim=m["dim"], n_centers=m["k"], box=m["box"],
                         fixed_scale=m["fixed_scale"], scale_init=m["scale_init"])


def plane_frames(result, res: int = 80, seed_index: int = 0) -> np.ndarray:
    """Predicted class on the ``res × res`` grid at every recorded snapshot: int array (frames, res, res)."""
    model = _model(result)
    pts, _ = plane_grid(result.config["params"]["box"], res)
    thetas = result["theta"][seed_index]
    return np.stack([model.predict(th, pts).reshape(res, res) if np.all(np.isfinite(th))
                     else np.full((res, res), -1) for th in thetas])


def plane_animation(result, out_dir: Path, formats=("png", "pdf"), stem: str = "voronoi_plane",
                    res: int = 80) -> list[Path]:
    p = result.config["params"]
    _check_2d(p["dim"], "the plane animation")
    model = _model(result)
    box, C = p["box"], p["classes"]
    preds = plane_frames(result, res)
    pts, _ = plane_grid(box, res)
    truth = label_points(pts, result["env_centers"], result["env_labels"], p["rule"]).reshape(res, res)
    steps, acc = result["steps"], result["test_acc"][0]
    fig, axes = plots.figure(width=4.4, height=4.2)
    ax = axes[0, 0]

    def draw(i):
        ax.clear()
        ax.imshow(preds[i], origin="lower", extent=(-box, box, -box, box), cmap=class_cmap(C), vmin=-0.5,
                  vmax=C - 0.5, alpha=0.75, interpolation="nearest")
        ax.imshow(np.where(preds[i] != truth, 1.0, np.nan), origin="lower", extent=(-box, box, -box, box),
                  cmap="Greys", vmin=0, vmax=1, alpha=0.35, interpolation="nearest")
        _draw_partition(ax, result["env_centers"], result["env_labels"], box, p["rule"], C, 200, fill=False)
        cen = model.current_centers(result["theta"][0, i])
        inside = np.all(np.abs(cen) <= box, axis=1)
        if inside.any():                           # the MLP baseline has no centers
            ax.scatter(cen[inside, 0], cen[inside, 1], s=4 if model.centers is None else 12, c="black",
                       marker="." if model.centers is None else "x", linewidths=0.6, zorder=3)
        fig.suptitle(f"{model.rung}, {p['decay']} decay: step {int(steps[i])}\n"
                     f"evaluation accuracy {acc[i]:.3f} (dark: wrongly classified)", fontsize=10)
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")

    out = [animate.write_gif(fig, draw, len(steps), Path(out_dir) / f"{stem}.gif")]
    draw(len(steps) - 1)
    return out + plots.save(fig, out_dir, stem, formats)


def centers_animation(result, out_dir: Path, formats=("png", "pdf"), stem: str = "voronoi_centers") -> list[Path]:
    p = result.config["params"]
    _check_2d(p["dim"], "the centers animation")
    model = _model(result)
    C, box = p["classes"], p["box"]
    W = model.parts(result["theta"][0])["logits"]                     # (frames, C, k)
    margin = W[:, 1] - W[:, 0] if C == 2 else W.max(axis=1)
    lim = float(np.nanmax(np.abs(margin))) or 1.0
    steps = result["steps"]
    fig, axes = plots.figure(ncols=2, width=4.0, height=3.6)
    ax, ax2 = axes[0]
    Wf = W[np.isfinite(W).all(axis=(1, 2))]
    lo, hi = (float(Wf.min()), float(Wf.max())) if Wf.size else (-1.0, 1.0)
    every = np.concatenate([model.current_centers(th) for th in result["theta"][0] if np.all(np.isfinite(th))]
                           or [np.zeros((1, 2))])
    reach = max(1.5 * box, 1.05 * float(np.abs(every).max()))     # every centre of every frame in view

    def draw(i):
        ax.clear()
        ax2.clear()
        cen = model.current_centers(result["theta"][0, i])
        sc = ax.scatter(cen[:, 0], cen[:, 1], c=margin[i], cmap="coolwarm", vmin=-lim, vmax=lim, s=8)
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
        ax.set_aspect("equal")
        ax.set_title(f"centers, colour = {'W₁ − W₀' if C == 2 else 'max logit'} (step {int(steps[i])})")
        ax.set_xlabel("c₁")
        ax.set_ylabel("c₂")
        if not hasattr(fig, "_voronoi_cbar"):
            fig._voronoi_cbar = fig.colorbar(sc, ax=ax, shrink=0.8,
                                             label="logit margin W₁ − W₀" if C == 2 else "largest logit")
        for c in range(C):
            ax2.plot(np.sort(W[i, c])[::-1], color=plots.PALETTE[c % 8], lw=1.2 + 0.8 * (C - 1 - c),
                     label=f"class {c}")                   # a stack: equal logits (at the start) stay visible
        ax2.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax2.set_xlabel("center (sorted by logit)")
        ax2.set_ylabel(r"per-center logit $W_{cj}$")
        ax2.legend(loc="upper right")
        ax2.set_title(f"{p['decay']} decay")

    out = [animate.write_gif(fig, draw, len(steps), Path(out_dir) / f"{stem}.gif")]
    draw(len(steps) - 1)
    return out + plots.save(fig, out_dir, stem, formats)


def scalars_animation(result, out_dir: Path, formats=("png", "pdf"), stem: str = "voronoi_scalars") -> list[Path]:
    model = _model(result)
    names = [(n, lab) for n, lab in SCALARS if n in model.slices]
    if not names:
        return []
    parts = model.parts(result["theta"])              # [seeds, frames, …]
    steps = result["steps"]
    fig, axes = plots.figure(ncols=len(names), width=3.0, height=2.8)
    series = {n: np.asarray(parts[n]).reshape(parts[n].shape[:2] + (-1,)) for n, _ in names}

    def draw(i):
        for ax, (n, lab) in zip(axes[0], names):
            ax.clear()
            v = series[n]
            for j in range(v.shape[2]):
                for s in range(v.shape[0]):
                    ax.plot(steps[:i + 1], v[s, :i + 1, j], color=plots.PALETTE[j % 8], lw=1.0, marker="o",
                            markevery=[i], ms=3, alpha=1.0 if s == 0 else 0.35,
                            label=(f"p{j}" if v.shape[2] > 1 and s == 0 else None))
            ax.set_xlim(0, steps[-1])
            fin = v[np.isfinite(v)]
            if fin.size:
                pad = 0.05 * (fin.max() - fin.min() + 1e-12)
                ax.set_ylim(fin.min() - pad, fin.max() + pad)
            ax.set_xlabel("step")
            ax.set_ylabel(lab)
            if v.shape[2] > 1:
                ax.legend(loc="best")
        axes[0, 0].set_title(f"{model.rung}, {result.config['params']['decay']} decay (seed 0 dark)")

    out = [animate.write_gif(fig, draw, len(steps), Path(out_dir) / f"{stem}.gif")]
    draw(len(steps) - 1)
    return out + plots.save(fig, out_dir, stem, formats)


def _band(ax, x, v, colour, label, ls="-", lw=1.3):
    v = np.asarray(v, dtype=float)
    ok = np.isfinite(v).any(axis=0)
    if not ok.any():
        return
    med = np.nanmedian(v[:, ok], axis=0)
    ax.plot(x[ok], med, color=colour, lw=lw, ls=ls, label=label)
    if v.shape[0] > 1:
        ax.fill_between(x[ok], np.nanmin(v[:, ok], axis=0), np.nanmax(v[:, ok], axis=0), color=colour,
                        alpha=0.15, lw=0)


def curves(result, out_dir: Path, formats=("png", "pdf"), stem: str = "voronoi_curves") -> list[Path]:
    p = result.config["params"]
    x = result["steps"].astype(float)
    fig, axes = plots.figure(ncols=2, width=3.8, height=3.0)
    for key, ax, ylabel in (("loss", axes[0, 0], "cross-entropy"), ("acc", axes[0, 1], "accuracy")):
        _band(ax, x, result[f"train_{key}"], plots.PALETTE[0], "train", "--")
        _band(ax, x, result[f"test_{key}"], plots.PALETTE[1], "eval")
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
    ax = axes[0, 1]
    ax.axhline(np.median(result["ref_majority"]), color="grey", ls=":", lw=1, label="majority class")
    ax.axhline(np.median(result[f"ref_exact_{p['rule']}"]), color="black", ls="-.", lw=1, label="exact rule")
    ax.legend(loc="best")
    axes[0, 0].set_yscale("log")
    axes[0, 0].legend(loc="best")
    seeds = plots.count(p["seeds"], "seed")
    fig.suptitle(f"rung {p['rung']}, AdamW {p['decay']} decay, {seeds}: median and min–max band")
    return plots.save(fig, out_dir, stem, formats)


def ladder_curves(result, out_dir: Path, formats=("png", "pdf"), stem: str = "voronoi_ladder") -> list[Path]:
    """One column per trained member of the ladder (eval/train accuracy above, eval cross-entropy below),
    the majority class and the exact rule as horizontal lines; with the MLP baseline in the ladder, its median
    final evaluation accuracy (L2 decay, or the first decay) is drawn as a dashed line in every rung's panel."""
    from matplotlib.lines import Line2D
    rungs, decays = result.config["rungs"], result.config["decays"]
    x = result["steps"].astype(float)
    trained = [i for i, r in enumerate(rungs) if r != "exact"]
    fig, axes = plots.figure(ncols=max(len(trained), 1), nrows=2, width=3.0, height=2.6, sharex=True)
    exact = rungs.index("exact") if "exact" in rungs else None
    mlp, mlp_decay = None, None
    if "mlp" in rungs:
        mlp_decay = "l2" if "l2" in decays else decays[0]
        mlp = float(np.nanmedian(result["final_test_acc"][rungs.index("mlp"), decays.index(mlp_decay)]))
    for col, i in enumerate(trained):
        for j, d in enumerate(decays):
            colour = plots.PALETTE[j % 8]
            width = 1.0 + 0.8 * (len(decays) - 1 - j)             # a stack: decays that coincide stay visible
            _band(axes[0, col], x, result["test_acc"][i, j], colour, f"{d} eval", lw=width)
            _band(axes[0, col], x, result["train_acc"][i, j], colour, None, "--", lw=width)
            _band(axes[1, col], x, result["test_loss"][i, j], colour, f"{d}", lw=width)
        axes[0, col].axhline(np.nanmedian(result["majority"]), color="grey", ls=":", lw=1)
        if exact is not None:
            axes[0, col].axhline(np.nanmedian(result["final_test_acc"][exact]), color="black", ls="-.", lw=1)
        if mlp is not None and rungs[i] != "mlp" and np.isfinite(mlp):
            axes[0, col].axhline(mlp, color="black", ls=(0, (6, 2)), lw=1.3)
        axes[0, col].set_title("mlp (baseline)" if rungs[i] == "mlp" else rungs[i])
        axes[0, col].set_ylabel("accuracy")
        axes[1, col].set_ylabel("eval cross-entropy")
        axes[1, col].set_yscale("log")
        axes[1, col].set_xlabel("step")
    handles = [Line2D([], [], color=plots.PALETTE[j % 8], lw=1.0 + 0.8 * (len(decays) - 1 - j), label=f"{d} decay")
               for j, d in enumerate(decays)]
    handles += [Line2D([], [], color="0.3", lw=1.3, label="eval"), Line2D([], [], color="0.3", ls="--", lw=1.3,
                                                                          label="train"),
                Line2D([], [], color="grey", ls=":", lw=1, label="majority class")]
    if exact is not None:
        handles.append(Line2D([], [], color="black", ls="-.", lw=1, label="exact rule"))
    if mlp is not None:
        handles.append(Line2D([], [], color="black", ls=(0, (6, 2)), lw=1.3,
                              label=f"MLP baseline's final eval accuracy ({mlp_decay})"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), frameon=False)
    fig.suptitle("Voronoi ladder: median and min–max band over seeds")
    return plots.save(fig, out_dir, stem, formats)


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf"), stem: str = "voronoi",
                res: int = 80, env: bool = True) -> list[Path]:
    """Every figure of a ``voronoi`` or ``voronoi-ladder`` result (``env=False``: not the environment)."""
    out_dir = Path(out_dir)
    if result.kind == "voronoi-ladder":
        return ladder_curves(result, out_dir, formats, stem=f"{stem}_ladder")
    p = result.config["params"]
    paths = []
    if p["dim"] == 2 and env:
        paths += env_figure(result["env_centers"], result["env_labels"], p["box"], p["classes"], out_dir, formats,
                            stem=f"{stem}_env")
    if p["rung"] == "exact":
        return paths
    paths += curves(result, out_dir, formats, stem=f"{stem}_curves")
    if p["dim"] == 2:
        paths += plane_animation(result, out_dir, formats, stem=f"{stem}_plane", res=res)
        if p["rung"] != "mlp":                     # the MLP baseline has no centers and no per-center logits
            paths += centers_animation(result, out_dir, formats, stem=f"{stem}_centers")
    paths += scalars_animation(result, out_dir, formats, stem=f"{stem}_scalars")
    return paths
