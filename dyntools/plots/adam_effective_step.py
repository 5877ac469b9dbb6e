"""Adam's effective step size: the ratio ``|m̂|/√v̂`` (median and 10–90 % band over the coordinates)
against the distance to the optimum, one panel per run (:mod:`simulations.adam_effective_step`)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from dyntools import plots


def plot(runs: dict, out_dir: Path, formats=("png", "pdf"), stem: str = "adam_effective_step"):
    fig, axes = plots.figure(ncols=len(runs), width=4.2, height=3.4)
    for ax, (name, (distance, r)) in zip(axes[0], runs.items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q10, med, q90 = np.nanquantile(r, [0.1, 0.5, 0.9], axis=1)
        ok = np.isfinite(med) & (distance > 0)
        ax.fill_between(distance[ok], q10[ok], q90[ok], color=plots.PALETTE[0], alpha=0.2, lw=0,
                        label="10–90 % over coordinates")
        ax.plot(distance[ok], med[ok], color=plots.PALETTE[0], lw=1.3, label="median over coordinates")
        ax.axhline(1.0, color="0.4", ls="--", lw=0.8, label="1: a step of size α")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.invert_xaxis()                          # time runs left to right: far → near
        ax.set_xlabel("distance to the optimum (decreasing →)")
        ax.set_ylabel(r"$|\hat m_t|\,/\sqrt{\hat v_t}$")
        ax.set_title(name)
        ax.legend(loc="best", fontsize=7)
    fig.suptitle(r"$|\hat m|/\sqrt{\hat v}$ along two Adam runs")
    return plots.save(fig, out_dir, stem, formats)
