"""Figures of a ``"relu"`` result (small ReLU networks, seed 004).

* ``relu_curves``: train loss, test loss (when there is a test set: not in 1-D), feature sparsity
  coefficient (each hidden layer) and Jacobian rank against the iteration, one colour per schedule (log
  iteration axis, log losses); the step-size schedules in the last panel.
* ``relu_predictor`` (1-D): the learned predictor at a few moments of training with its distinct
  kinks marked, for each schedule, over the 12 training points.
* ``relu_predictor_paper`` (1-D): the paper's drawing — one panel per iteration of the authors'
  figure, both runs overlaid, the y-axis limited to the data's range (``[1.3·min y, 1.2·max y]``, as
  the authors' notebook), distinct kinks marked.
* ``relu_column_norms``: column norms of ``φ_θ(X)`` and per-example gradient norms over time next
  to the loss (:mod:`dyntools.plots.column_norms`).
* ``relu_neurons`` (two-layer, d = 2): the student's neurons ``|a_j| w_j`` (each neuron's
  contribution ``a_j σ(⟨w_j, x⟩) = sign(a_j) σ(⟨|a_j| w_j, x⟩)``) against the teacher's ``w_j`` (unit
  norm, ``|a_j| = 1``) in the plane, at the end of training, one panel per schedule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots


def _layout(result):
    from dyntools.models.mlp import MLP

    return MLP(tuple(result.config["widths"]), biases=tuple(result.config["biases"]))


def _steps_axis(steps):
    return np.maximum(steps, 1)


def plot_curves(result, out_dir: Path, formats) -> list[Path]:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator
    labels = [plots.math_label(lab) for lab in result.config["labels"]]
    steps = _steps_axis(result["steps"])
    sp = result["sparsity"]
    has_test = bool(np.isfinite(result["test_loss"]).any())      # 1-D regression has no test set: no panel
    fig, axes = plots.figure(ncols=5 if has_test else 4, nrows=1, width=3.3, height=3.0)
    if has_test:
        ax_tr, ax_te, ax_sp, ax_rk, ax_eta = axes[0]
    else:
        (ax_tr, ax_sp, ax_rk, ax_eta), ax_te = axes[0], None
    for r, lab in enumerate(labels):
        c = plots.PALETTE[r % len(plots.PALETTE)]
        lw = 1.0 + 0.8 * (len(labels) - 1 - r)          # later runs thinner: runs equal until a decay stay visible
        ax_tr.plot(steps, result["train_loss"][r], color=c, lw=lw, label=lab)
        if has_test and np.isfinite(result["test_loss"][r]).any():
            ax_te.plot(steps, result["test_loss"][r], color=c, lw=lw)
        for l in range(sp.shape[2]):
            ax_sp.plot(steps, sp[r, :, l], color=c, lw=lw, ls="-" if l == sp.shape[2] - 1 else "--")
        rank = result["jac_rank"][r].astype(float)
        rank[rank < 0] = np.nan
        ax_rk.plot(steps, rank, color=c, lw=lw)
        etas = result["etas"][r]
        jumps = np.flatnonzero(np.abs(np.diff(etas)) > 0.01 * etas[:-1]) + 1     # decays, not the ramp
        at = np.unique(np.concatenate([np.geomspace(1, etas.size, 400).astype(np.int64), jumps, jumps + 1]))
        at = at[(at >= 1) & (at <= etas.size)]
        ax_eta.plot(at, etas[at - 1], color=c, lw=lw)   # step t (1-based) uses etas[t − 1]; jumps kept
        div = int(result["diverged_at"][r])
        if div >= 0:
            for ax in (ax_tr, ax_rk):
                ax.axvline(max(div, 1), color=c, ls=":", lw=1)
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_xlabel("iteration")
    ax_tr.set_yscale("log")
    ax_tr.set_ylabel(r"train loss $\sum_i (h(x_i) - y_i)^2 / n$")
    ax_tr.set_title("train loss")
    if has_test:
        ax_te.set_yscale("log")
        ax_te.set_ylabel("test loss (1000 points)")
        ax_te.set_title("test loss")
    ax_sp.set_ylabel("feature sparsity coefficient")
    ax_sp.set_title("feature sparsity")
    ax_rk.set_ylabel(r"rank $\varphi_\theta(X)$")
    ax_rk.set_title(f"Jacobian rank (rel. thr. {result.config['rank_threshold']:g})")
    ax_rk.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_eta.set_yscale("log")
    ax_eta.set_ylabel(r"step size $\eta_t$")
    ax_eta.set_title("schedules")
    handles, names = ax_tr.get_legend_handles_labels()
    if sp.shape[2] > 1:
        handles += [Line2D([], [], color="0.3"), Line2D([], [], color="0.3", ls="--")]
        names += ["sparsity: last layer", "sparsity: first layer"]
    if np.any(result["diverged_at"] >= 0):
        handles.append(Line2D([], [], color="0.3", ls=":", lw=1))
        names.append("step where the run diverged")
    wide = max(len(n) for n in names) > 30
    fig.legend(handles, names, loc="outside lower center", ncol=min(2 if wide else 4, len(names)), frameon=False)
    fig.suptitle(f"setting {result.config['setting']}: {result.config['steps']} iterations of "
                 f"{result.config['method'].upper()} (batch {result.config['batch']}), seed {result.seed}")
    return plots.save(fig, out_dir, "relu_curves", formats)


def plot_predictor_1d(result, out_dir: Path, formats) -> list[Path]:
    from matplotlib.lines import Line2D

    from dyntools.metrics import kinks_1d

    layout = _layout(result)
    X, y = result["X"][:, 0], result["y"]
    grid = np.linspace(X.min() - 0.25, X.max() + 0.25, 600)[:, None]
    steps = result["steps"]
    labels = [plots.math_label(lab) for lab in result.config["labels"]]
    moments = [int(v) for v in np.geomspace(max(steps[-1] // 30, 1), steps[-1], 4)]
    picks = np.unique(np.searchsorted(steps, moments).clip(0, steps.size - 1))
    fig, axes = plots.figure(ncols=len(labels), nrows=1, width=4.2, height=3.4)
    cmap = plots.PALETTE
    for r, lab in enumerate(labels):
        ax = axes[0][r]
        ax.scatter(X, y, color="black", zorder=5, s=14, label="training points")
        for q, k in enumerate(picks):
            th = result["theta"][r, k]
            if not np.all(np.isfinite(th)):
                continue
            c = cmap[(q + 1) % len(cmap)]
            ax.plot(grid[:, 0], layout.predict(th, grid), color=c, lw=1.2,
                    label=f"iteration {int(steps[k])}")
            (W1, b1), (W2, _) = layout.unpack(th)
            loc, _ = kinks_1d(W1[:, 0], b1, W2[0], lo=float(X.min()), hi=float(X.max()))
            ax.plot(loc, layout.predict(th, loc[:, None]), "o", mfc="none", color=c, ms=6)
        ax.set_title(lab, fontsize=8)
        ax.set_xlabel("x")
        ax.set_ylabel(r"$h_\theta(x)$  (circles: distinct kinks in the data range)")
    handles, names = axes[0][0].get_legend_handles_labels()
    handles.append(Line2D([], [], ls="none", marker="o", mfc="none", color="0.3", ms=6))
    names.append("a distinct kink")
    axes[0][0].legend(handles, names, loc="best", fontsize=7)
    return plots.save(fig, out_dir, "relu_predictor", formats)


def plot_predictor_paper_1d(result, out_dir: Path, formats, snapshots=None) -> list[Path]:
    """The 1-D predictor figure as the paper draws it: at each iteration of ``snapshots`` (default
    the recorded ones of the authors' figure) every run's predictor over the 12 points."""
    from matplotlib.lines import Line2D

    from dyntools.metrics import kinks_1d

    layout = _layout(result)
    X, y = result["X"][:, 0], result["y"]
    if "snapshot_theta" in result.arrays and snapshots is None:     # recorded at the paper's iterations
        steps, thetas = result["snapshot_steps"], result["snapshot_theta"]
        snapshots = steps
    else:
        steps, thetas = result["steps"], result["theta"]
        if snapshots is None:
            snapshots = steps[np.linspace(0, steps.size - 1, 6).astype(int)]
    picks = [int(np.searchsorted(steps, t)) for t in snapshots if t in set(steps.tolist())]
    labels = [plots.math_label(lab) for lab in result.config["labels"]]
    grid = np.linspace(X.min() - 0.05, X.max() + 0.05, 600)[:, None]
    lo, hi = 1.3 * float(y.min()), 1.2 * float(y.max())
    fig, axes = plots.figure(ncols=len(picks), nrows=1, width=3.0, height=2.9, sharey=True)
    for q, k in enumerate(picks):
        ax = axes[0][q]
        for r in range(len(labels)):
            th = thetas[r, k]
            c = plots.PALETTE[r % len(plots.PALETTE)]
            if not np.all(np.isfinite(th)):
                ax.plot([], [], color=c, lw=1.6, label="diverged")
                continue
            (W1, b1), (W2, _) = layout.unpack(th)
            loc, _ = kinks_1d(W1[:, 0], b1, W2[0], lo=float(X.min()), hi=float(X.max()))
            ax.plot(grid[:, 0], layout.predict(th, grid), color=c, lw=1.6, label=f"{loc.size} kinks")
            ax.plot(loc, layout.predict(th, loc[:, None]), "o", mfc="none", color=c, ms=6)
        ax.scatter(X, y, color="black", zorder=5, s=14)
        ax.set_ylim(lo, hi)
        ax.set_title(f"iteration {int(steps[k])}")
        ax.set_xlabel("x")
        ax.legend(loc="best", fontsize=6)
    axes[0][0].set_ylabel(r"$h_\theta(x)$  (circles: distinct kinks)")
    runs = [Line2D([], [], color=plots.PALETTE[r % len(plots.PALETTE)], lw=1.6, label=lab)
            for r, lab in enumerate(labels)]
    runs.append(Line2D([], [], ls="none", marker="o", mfc="none", color="0.3", ms=6, label="a distinct kink"))
    fig.legend(handles=runs, loc="outside lower center", ncols=1, frameon=False, fontsize=7)
    fig.suptitle(f"setting {result.config['setting']}: predictors at the iterations of the paper's figure")
    return plots.save(fig, out_dir, "relu_predictor_paper", formats)


def plot_neurons_2d(result, out_dir: Path, formats) -> list[Path]:
    from dyntools.models.mlp import MLP

    layout = _layout(result)
    labels = [plots.math_label(lab) for lab in result.config["labels"]]
    teacher_layout = MLP((2, *result.config["teacher"], 1), biases=False)
    (Wt, _), (at, _) = teacher_layout.unpack(result["teacher"])
    fig, axes = plots.figure(ncols=len(labels), nrows=1, width=3.4, height=3.4)
    for r, lab in enumerate(labels):
        ax = axes[0][r]
        th = result["theta"][r, -1]
        circle = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(circle), np.sin(circle), color="0.8", lw=0.8)
        for j in range(Wt.shape[0]):
            col = plots.PALETTE[0] if at[0, j] >= 0 else plots.PALETTE[1]
            ax.annotate("", xy=Wt[j], xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": col, "lw": 1.8})
        if np.all(np.isfinite(th)):
            (W, _), (a, _) = layout.unpack(th)
            v = W * np.abs(a[0])[:, None]
            pos = a[0] >= 0
            ax.scatter(v[pos, 0], v[pos, 1], color=plots.PALETTE[0], s=18, label=r"student, $a_j > 0$")
            ax.scatter(v[~pos, 0], v[~pos, 1], color=plots.PALETTE[1], s=18, marker="s",
                       label=r"student, $a_j < 0$")
        else:
            ax.text(0.5, 0.5, f"diverged at step {int(result['diverged_at'][r])}", ha="center",
                    transform=ax.transAxes)
        ax.set_aspect("equal")
        ax.set_title(lab, fontsize=8)
        ax.set_xlabel("first coordinate")
        ax.set_ylabel("second coordinate")
    axes[0][0].plot([], [], color="0.3", label=r"teacher $w_j$ (arrows, colour = sign of $a_j$)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=3, frameon=False, fontsize=7)
    fig.suptitle(r"student neurons $|a_j|\,w_j$ at the end of training vs the teacher's neurons")
    return plots.save(fig, out_dir, "relu_neurons", formats)


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    from dyntools.plots.column_norms import plot_column_norms

    out_dir = Path(out_dir)
    paths = plot_curves(result, out_dir, formats)
    if "col_norm_q" in result.arrays:
        paths += plot_column_norms(result, out_dir, formats, stem="relu_column_norms")
    if result.config["task"] == "1d":
        paths += plot_predictor_1d(result, out_dir, formats)
        paths += plot_predictor_paper_1d(result, out_dir, formats)
    elif result.config["d"] == 2 and len(result.config["widths"]) == 3:
        paths += plot_neurons_2d(result, out_dir, formats)
    return paths
