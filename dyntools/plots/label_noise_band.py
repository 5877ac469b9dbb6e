"""The band of label-noise SGD around the sparse solution's manifold: its level (distance to M, RMS over the
measured part of the run) against ηδ on log–log axes, one colour per η (median over the seeds, q10–q90 bars),
with the least-squares line of the median exponent and the predicted slope ½ through the data's centre."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools.plots import PALETTE, count, figure, save

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def plot_result(result, out_dir: Path, formats=("png", "pdf"), stem: str = "label_noise_band") -> list[Path]:
    cfg = result.config
    etas, deltas = np.asarray(cfg["etas"]), np.asarray(cfg["deltas"])
    level = result["level"]                                           # (S, E, Δ)
    fig, axes = figure(1, 1, width=4.6, height=3.4)
    ax = axes[0][0]
    xs, ys = [], []
    for i, eta in enumerate(etas):
        x = eta * deltas
        with np.errstate(all="ignore"):
            ok = np.isfinite(level[:, i, :]).any(axis=0)
            if not ok.any():
                continue
            lo, med, hi = (np.nanquantile(level[:, i, ok], q, axis=0) for q in (0.1, 0.5, 0.9))
        ax.errorbar(x[ok], med, yerr=[med - lo, hi - med], fmt=MARKERS[i % len(MARKERS)], ms=4, capsize=2,
                    color=PALETTE[i % len(PALETTE)], label=f"η = {eta:g}")
        xs += list(x[ok])
        ys += list(med)
    if len(xs) >= 2:
        lx, ly = np.log(xs), np.log(ys)
        grid = np.geomspace(min(xs), max(xs), 50)
        slope, icpt = np.polyfit(lx, ly, 1)
        ax.plot(grid, np.exp(icpt) * grid ** slope, color="0.3", lw=1.2,
                label=f"fit: slope {slope:.3f} (medians)")
        centre = np.exp(ly.mean() + 0.5 * (np.log(grid) - lx.mean()))
        ax.plot(grid, centre, color="0.3", lw=1.0, ls="--", label="predicted slope ½: O(√(ηδ))")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ηδ (step × SDE intensity)")
    ax.set_ylabel("distance to M = {u ⊙ v = β*} (RMS)")
    ax.legend(loc="best")     # placed by save() where it covers no drawn pixel
    ax.set_title(f"label-noise SGD, diagonal net (n = {cfg['n']}, d = {cfg['d']}, r = {cfg['r']}; "
                 f"{count(cfg['seeds'], 'seed')}, median, q10–q90)", fontsize=8)
    return save(fig, out_dir, stem, formats)
