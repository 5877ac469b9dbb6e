"""The schedule family in one figure: ``η_t`` of each schedule over one run (log scale) and the validation
loss each run reached, one colour and one dash pattern per schedule (they coincide until they decay;
:mod:`simulations.schedule_family`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import plots


def plot(names, results, lr: float, out_dir: Path, formats=("png", "pdf"), stem: str = "schedule_family"):
    fig, axes = plots.figure(ncols=2, width=4.6, height=3.4)
    ax_eta, ax_val = axes[0]
    for k, (name, res) in enumerate(zip(names, results)):
        colour = plots.PALETTE[k % len(plots.PALETTE)]
        dash = plots.DASHES[k % len(plots.DASHES)]           # schedules coincide until they decay
        steps = int(res.config["steps"])
        eta = np.broadcast_to(res["lrs"][0], (steps,))
        ax_eta.plot(np.arange(steps), eta, color=colour, ls=dash, lw=1.3, label=name)
        with np.errstate(all="ignore"):
            val = np.nanmedian(res["test_loss"][0], axis=0)
        ax_val.plot(res["steps"], val, color=colour, ls=dash, lw=1.3, label=name)
    ax_eta.set_yscale("log")
    ax_eta.set_xlabel("step t")
    ax_eta.set_ylabel(f"learning rate $\\eta_t$ (base {lr:g})")
    ax_eta.set_title("$\\eta_t$ as each run used it")
    ax_val.set_yscale("log")
    ax_val.set_xlabel("step t")
    ax_val.set_ylabel("validation cross-entropy (median over seeds)")
    ax_val.set_title("validation loss")
    fig.legend(*ax_eta.get_legend_handles_labels(), loc="outside lower center", ncols=4, frameon=False)
    return plots.save(fig, out_dir, stem, formats)
