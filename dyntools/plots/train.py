"""Figures of a ``dt.train`` result (kind ``"train"``): the loss curves and every recorded metric.

``train_loss.<fmt>``: the full-data train loss at the recordings against the step, one colour per run
(the mean over seeds, the band from the smallest to the largest seed), the test loss dashed when the
data had a test set, and the mean mini-batch loss per step (thin) when the run kept ``step_loss``.
``train_metrics.<fmt>``: one panel per other array recorded on the same grid (``[run, seed, record]``,
e.g. metrics a tuned loop adds), drawn the same way. Log scales where the values are positive.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots

_LOSSES = ("train_loss", "test_loss", "step_loss")


def _labels(result) -> list[str]:
    return [str(r.get("label", r.get("optimizer", f"run {g}"))) for g, r in enumerate(result.config["runs"])]


def _draw(ax, x, values, labels, *, ls="-", lw=1.5, band=True, with_labels=True):
    """``values`` [run, seed, k]: the mean over seeds per run, the min–max band over seeds."""
    for g, label in enumerate(labels):
        c = plots.PALETTE[g % len(plots.PALETTE)]
        v = np.asarray(values[g], dtype=float)
        with np.errstate(all="ignore"):
            mean = np.nanmean(v, axis=0) if np.isfinite(v).any() else np.full(v.shape[1], np.nan)
        ax.plot(x, mean, color=c, ls=ls, lw=lw, label=label if with_labels else None)
        if band and v.shape[0] > 1:
            ax.fill_between(x, np.nanmin(v, axis=0), np.nanmax(v, axis=0), color=c, alpha=0.15, lw=0)


def _scales(ax, values) -> None:
    ax.set_xscale("symlog", linthresh=10)
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size and finite.min() > 0:
        ax.set_yscale("log")


def recorded_metrics(result) -> list[str]:
    """Arrays of the result recorded on its grid ``[run, seed, record]``, losses excluded."""
    G, S, K = len(result.config["runs"]), int(result.config["seeds"]), len(result["steps"])
    return sorted(k for k, v in result.arrays.items()
                  if k not in _LOSSES and np.ndim(v) == 3 and np.shape(v) == (G, S, K))


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    labels = _labels(result)
    steps = np.asarray(result["steps"])
    fig, axes = plots.figure()
    ax = axes[0, 0]
    _draw(ax, steps, result["train_loss"], labels)
    if "test_loss" in result.arrays:
        _draw(ax, steps, result["test_loss"], labels, ls="--", band=False, with_labels=False)
    if "step_loss" in result.arrays:
        per_step = np.asarray(result["step_loss"])
        _draw(ax, np.arange(per_step.shape[-1]), per_step, labels, lw=0.5, band=False, with_labels=False)
    _scales(ax, result["train_loss"])
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    model = result.config.get("model", {}).get("name", "model")
    ax.set_title(f"{model}: train loss" + (" (test dashed)" if "test_loss" in result.arrays else ""))
    ax.legend(frameon=False)
    paths = plots.save(fig, out_dir, "train_loss", formats)
    names = recorded_metrics(result)
    if names:
        fig, axes = plots.figure(ncols=len(names), width=3.6)
        for ax, name in zip(axes[0], names):
            _draw(ax, steps, result[name], labels)
            _scales(ax, result[name])
            ax.set_xlabel("step")
            ax.set_title(name)
        axes[0, 0].legend(frameon=False)
        paths += plots.save(fig, out_dir, "train_metrics", formats)
    return paths


#: the figures of the library's own result kind (``dt.train`` writes kind ``"train"``; no experiment owns it),
#: found by :func:`dyntools.plugins.figures`
FIGURES = {"train": plot_result}
