"""Figures of an ``adamw-schedules`` result: the anytime curves — validation error and validation loss
against epochs, one panel per optimizer, one colour per schedule (median over seeds, band min–max) — and
the final validation accuracy of every seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots
from dyntools.plots.adamw_heatmaps import LABELS


def plot_result(result, out_dir: Path, formats=("png", "pdf")) -> list[Path]:
    names, schedules = result.config["optimizers"], result.config["schedules"]
    epochs = result["curve_epochs"]
    fig, axes = plots.figure(ncols=len(names), nrows=2, width=4.3, height=3.1, sharex=True)
    for o, name in enumerate(names):
        for s, sched in enumerate(schedules):
            color = plots.PALETTE[s % len(plots.PALETTE)]
            for row, (key, transform) in enumerate((("curve_val_acc", lambda a: 1.0 - a),
                                                    ("curve_val_loss", lambda a: a))):
                values = transform(result[key][o, s])                  # [seed, point]
                ax = axes[row, o]
                ax.plot(epochs, np.nanmedian(values, axis=0), color=color, label=sched)
                ax.fill_between(epochs, np.nanmin(values, axis=0), np.nanmax(values, axis=0), color=color,
                                alpha=0.2, lw=0)
        seeds = plots.count(result.config["seeds"], "seed")
        axes[0, o].set_title(f"{LABELS.get(name, name)}: anytime curves ({seeds})")
        axes[0, o].set_ylabel("validation error (1 − accuracy)")
        axes[1, o].set_ylabel("validation cross-entropy")
        axes[1, o].set_xlabel("epoch")
        for row in range(2):
            axes[row, o].set_yscale("log")
    handles, labels = axes[0, 0].get_legend_handles_labels()          # the same schedules in every panel
    fig.legend(handles, labels, title="schedule (median, band min–max)", loc="outside lower center",
               ncols=min(len(labels), 4), frameon=False)
    paths = plots.save(fig, out_dir, "adamw_schedules_anytime", formats)

    fig, axes = plots.figure(ncols=1, nrows=1, width=1.2 + 1.1 * len(names) * len(schedules), height=3.2)
    ax = axes[0, 0]
    ticks = []
    for o, name in enumerate(names):
        for s, sched in enumerate(schedules):
            x = len(ticks)
            acc = result["val_acc"][o, s]
            ax.plot(np.full(acc.size, x) + np.linspace(-0.15, 0.15, acc.size), acc, "o", ms=4,
                    color=plots.PALETTE[s % len(plots.PALETTE)])
            ax.plot([x - 0.3, x + 0.3], [np.nanmean(acc)] * 2, color="black", lw=1.5)
            ticks.append(f"{name}\n{sched}")
    ax.set_xticks(range(len(ticks)), ticks)
    ax.set_ylabel("final validation accuracy (bar: mean)")
    ax.set_xlabel("optimizer and schedule (dots: seeds)")
    ax.set_title("Final validation accuracy per seed at equal budget")
    return paths + plots.save(fig, out_dir, "adamw_schedules_final", formats)
