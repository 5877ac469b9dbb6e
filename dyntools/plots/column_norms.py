"""The quantity of the label-noise conjecture over time: column norms of ``φ_θ(X)`` and per-example
gradient norms, next to the train loss, for a small-step and a large-step run.

Andriushchenko et al. (2023) conjecture that during loss stabilization SGD's noise minimizes the ℓ2
norms of the columns of ``φ_θ(X) = [∇_θ h_θ(x_i)]_i``. A run records, at every recording, the quantiles
(:data:`dyntools.metrics.NORM_QUANTILES`) of the p column norms and of the n row norms
``‖∇_θ h(x_i)‖``; this figure draws the median with the 10–90 % band and the maximum dotted.
Works for a ``"diag-net"`` result (arrays ``[run, seed, record, q]``: one seed shown) and a
``"relu"`` result (``[run, record, q]``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots


def _runs(result, seed: int):
    """(labels, steps, train loss (R, K), col quantiles (R, K, Q), grad quantiles (R, K, Q))."""
    if result.kind == "diag-net":
        labels = [plots.math_label(r["label"]) for r in result.config["runs"]]
        pick = (slice(None), seed)
    else:
        labels = [plots.math_label(lab) for lab in result.config["labels"]]
        pick = (slice(None),)
    return (labels, result["steps"], result["train_loss"][pick], result["col_norm_q"][pick],
            result["grad_norm_q"][pick])


def plot_column_norms(result, out_dir: Path, formats=("png", "pdf"), *, runs=None, seed: int = 0,
                      stem: str = "column_norms", title: str | None = None) -> list[Path]:
    """Three panels against the iteration: train loss; column norms of φ_θ(X); per-example gradient
    norms — ``runs`` (indices; default all) in distinct colours, median solid, 10–90 % band, max dotted."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator, NullFormatter

    from dyntools.metrics import NORM_QUANTILES

    labels, steps, loss, colq, gradq = _runs(result, seed)
    runs = range(len(labels)) if runs is None else runs
    q = list(NORM_QUANTILES)
    i10, i50, i90, imax = q.index(0.1), q.index(0.5), q.index(0.9), q.index(1.0)
    x = np.maximum(steps, 1)
    fig, axes = plots.figure(ncols=3, nrows=1, width=3.8, height=3.1)
    ax_l, ax_c, ax_g = axes[0]
    for j, r in enumerate(runs):
        c = plots.PALETTE[j % len(plots.PALETTE)]
        ax_l.plot(x, loss[r], color=c, label=labels[r])
        for ax, arr in ((ax_c, colq[r]), (ax_g, gradq[r])):
            ax.plot(x, arr[:, i50], color=c)
            ax.fill_between(x, arr[:, i10], arr[:, i90], color=c, alpha=0.2, lw=0)
            ax.plot(x, arr[:, imax], color=c, ls=":", lw=1)
    for ax in axes[0]:
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlabel("iteration")
        ax.set_yscale("log")
    ax_l.set_ylabel("train loss")
    ax_l.set_title("train loss")
    p = 2 * int(result.config["d"]) if result.kind == "diag-net" and "d" in result.config else None
    ax_c.set_ylabel(r"$\|\varphi_\theta(X)_{:,j}\|_2$ over its columns")
    ax_c.set_title(r"column norms of $\varphi_\theta(X)$" + (f" (p = 2d = {p})" if p else ""))
    ax_g.set_ylabel(r"$\|\nabla_\theta h_\theta(x_i)\|_2$ over the n examples")
    ax_g.set_title("per-example gradient norms")
    for ax in axes[0]:
        low, high = ax.get_ylim()
        ax.yaxis.set_minor_formatter(NullFormatter())    # minor labels crowd a short log axis
        if 0 < low and high / low < 100:            # under two decades: 1-2-5 ticks keep it readable
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    handles, names = ax_l.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", lw=1.5), Line2D([], [], color="0.3", ls=":", lw=1)]
    names += ["median", "maximum"]
    wide = max(len(n) for n in names) > 30
    fig.legend(handles, names, loc="outside lower center", ncol=min(2 if wide else 6, len(names)), frameon=False)
    fig.suptitle(title or "median (solid), 10–90 % band, maximum (dotted) over columns / examples")
    return plots.save(fig, out_dir, stem, formats)
