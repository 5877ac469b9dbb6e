"""Figures of the SDE engine: paths, the order study, diagonal-net label noise, SGD ↔ SDE, sparsity."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dyntools import plots


def plot_result(result, out_dir: Path, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    draw = {"sde": paths_figure, "sde-convergence": convergence_figure, "sde-diag-net": diag_net_figure,
            "sde-sgd-vs-sde": sgd_vs_sde_figure, "sde-sparsity": sparsity_figure}[result.kind]
    return draw(result, Path(out_dir), formats)


def _exact_moments(result, t):
    from dyntools.dynamics import sde_models

    cfg = result.config
    args = cfg["args"]
    x0 = cfg.get("x0")
    if x0 is None or cfg["model"] not in ("gbm", "ou"):
        return None
    if cfg["model"] == "gbm":
        return sde_models.gbm_moments(x0, args[1], args[2], t)
    return sde_models.ou_moments(x0, args[1], args[2], args[3], t)


def paths_figure(result, out_dir, formats):
    """Sample paths (first coordinate), the ensemble mean ± 1 sd, and the exact moments where known."""
    t, x = result["t"], result["x"][:, :, 0]
    fig, axes = plots.figure(1, 1, width=5.0)
    ax = axes[0, 0]
    for p in range(min(20, x.shape[0])):
        ax.plot(t, x[p], color=plots.PALETTE[5], lw=0.5, alpha=0.5)
    mean, sd = np.nanmean(x, axis=0), np.nanstd(x, axis=0)
    ax.plot(t, mean, color=plots.PALETTE[0], lw=1.8,
            label=f"mean of {x.shape[0]} paths ({result.config['scheme']})")
    ax.fill_between(t, mean - sd, mean + sd, color=plots.PALETTE[0], alpha=0.15, label="± 1 sd (paths)")
    exact = _exact_moments(result, t)
    if exact is not None:
        m, v = exact
        ax.plot(t, m, "--", color=plots.PALETTE[1], lw=1.2, label="exact mean")
        ax.plot(t, m + np.sqrt(v), ":", color=plots.PALETTE[1], lw=1.0, label="exact mean ± sd")
        ax.plot(t, m - np.sqrt(v), ":", color=plots.PALETTE[1], lw=1.0)
    ax.set_xlabel("time t")
    ax.set_ylabel("X_t" if result.config["model"] != "toy" else "θ_τ (toy)")
    ax.set_title(f"{result.config['model']}: h = {result.config['h']:g}, {result.status}")
    ax.legend(loc="best")
    model = result.config.get("model")
    if model not in ("gbm", "ou", "toy", "diag-net"):                # a name from the file: a fixed set
        raise ValueError(f"Invalid result: config.model {model!r} is not an SDE model of dyntools")
    return plots.save(fig, out_dir, f"sde_{model}_paths", formats)


def convergence_figure(result, out_dir, formats):
    """Strong and weak errors against h on log-log axes with reference slopes ½ and 1."""
    h, s = result["h"], result.summary["slopes"]
    fig, axes = plots.figure(2, 1, width=4.4)
    ax = axes[0, 0]
    ax.loglog(h, result["strong_em"], "o-", color=plots.PALETTE[0], label=f"EM (fitted {s['strong_em']:.2f})")
    ax.loglog(h, result["strong_milstein"], "s-", color=plots.PALETTE[1],
              label=f"Milstein (fitted {s['strong_milstein']:.2f})")
    for order, anchor, style in ((0.5, result["strong_em"][-1], ":"), (1.0, result["strong_milstein"][-1],
                                                                       "--")):
        ax.loglog(h, anchor * (h / h[-1]) ** order, style, color="0.4", lw=0.9, label=f"slope {order:g}")
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("step h")
    ax.set_ylabel(r"strong error $E|X_h(T) - X(T)|$")
    if "strong_em_ou" in result.arrays:
        ax.loglog(result["h_ou"], result["strong_em_ou"], "^-", color=plots.PALETTE[2],
                  label=f"OU, EM = Milstein (fitted {s['strong_em_ou']:.2f})")
    ax.set_title("strong error against the exact solution on the same path")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    ax = axes[0, 1]
    ax.loglog(h, result["weak_em_gbm"], "o-", color=plots.PALETTE[0],
              label=f"GBM, EM (fitted {s['weak_em_gbm']:.2f})")
    h_ou = result["h_ou"]
    ax.errorbar(h_ou, result["weak_em_ou"], yerr=2 * result["weak_em_ou_se"], fmt="^-",
                color=plots.PALETTE[2],
                label=f"OU, EM (fitted {s['weak_em_ou']:.2f}; ± 2 s.e.)")
    hh = np.concatenate([h_ou, h])
    ax.loglog(hh, result["weak_em_ou"][0] * hh / h_ou[0], "--", color="0.4", lw=0.9, label="slope 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step h")
    ax.set_ylabel(r"weak error $|E X_h(T) - E X(T)|$")
    ax.set_title("weak order of Euler–Maruyama")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    return plots.save(fig, out_dir, "sde_convergence", formats)


def diag_net_figure(result, out_dir, formats):
    """Training loss over SDE time and |β_j| for coordinates on / off the support of β*."""
    tau, loss = result["tau"], result["loss"]
    cfg = result.config
    fig, axes = plots.figure(2, 1, width=4.4)
    ax = axes[0, 0]
    for p in range(loss.shape[0]):
        ax.semilogy(tau, loss[p], color=plots.PALETTE[0], lw=0.6, alpha=0.6)
    ax.semilogy(tau, np.nanmedian(loss, axis=0), color=plots.PALETTE[1], lw=1.6, label="median over paths")
    ax.set_xlabel("SDE time τ = tη")
    ax.set_ylabel("training loss L = (1/2n)‖Xβ − y‖²")
    # δ is the label-noise std and δ̃ = δ²/n² the SDE's intensity (results written before "delta_sde"
    # existed stored the intensity as "delta")
    noise = f"δ = {cfg['delta']:g}, δ̃ = {cfg['delta_sde']:.3g}" if "delta_sde" in cfg else f"δ̃ = {cfg['delta']:g}"
    ax.set_title(f"diag net, {cfg['method'].upper()}: η = {cfg['eta']:g}, {noise}")
    ax.legend()
    ax = axes[0, 1]
    if "u" in result.arrays:
        beta = result["u"][0] * result["v"][0]
        support = result["beta_star"] != 0
        for j in np.flatnonzero(support):
            ax.semilogy(tau, np.abs(beta[:, j]), color=plots.PALETTE[1], lw=0.8)
        for j in np.flatnonzero(~support)[:40]:
            ax.semilogy(tau, np.abs(beta[:, j]), color=plots.PALETTE[5], lw=0.5, alpha=0.6)
        ax.plot([], [], color=plots.PALETTE[1], label="on the support of β*")
        ax.plot([], [], color=plots.PALETTE[5], label="off the support (≤ 40 shown)")
        ax.set_xlabel("SDE time τ")
        ax.set_ylabel(r"$|\beta_j|$ (path 0)")
        ax.legend()
    if cfg.get("method") not in ("sgd", "sde"):
        raise ValueError(f"Invalid result: config.method {cfg.get('method')!r} is not sgd or sde")
    return plots.save(fig, out_dir, f"sde_diag_net_{cfg['method']}", formats)


def _noise(cfg: dict) -> str:
    """The label noise of a study's config: its standard deviation δ and the SDE intensity δ̃ = (δ/n)²
    (results written before the studies took δ stored the intensity as "delta")."""
    if "label_noise" in cfg:
        return f"δ = {cfg['label_noise']:.3g}, δ̃ = {cfg['intensity']:.3g}"
    return f"δ̃ = {cfg['delta']:g}"


def sgd_vs_sde_figure(result, out_dir, formats):
    """Means and variances over paths of the loss and of β (GD dashed, SDE solid), and the gap vs η."""
    from matplotlib.ticker import NullFormatter
    tau, etas = result["tau"], result["etas"]
    fig, axes = plots.figure(2, 2, width=4.2, height=3.0)
    j = int(np.argmax(result["beta_star"]))          # the largest coordinate of β*
    for e, eta in enumerate(etas):
        c = plots.PALETTE[e % len(plots.PALETTE)]
        axes[0, 0].semilogy(tau, result["loss_mean_sde"][e], color=c, lw=1.4, label=f"SDE, η = {eta:g}")
        axes[0, 0].semilogy(tau, result["loss_mean_sgd"][e], "--", color=c, lw=1.0,
                            label=f"label-noise GD, η = {eta:g}")
        axes[0, 1].semilogy(tau[1:], result["loss_var_sde"][e][1:], color=c, lw=1.4)   # τ = 0: no spread
        axes[0, 1].semilogy(tau[1:], result["loss_var_sgd"][e][1:], "--", color=c, lw=1.0)
        for kind, style in (("sde", "-"), ("sgd", "--")):
            mean = result[f"beta_mean_{kind}"][e][:, j]
            sd = np.sqrt(result[f"beta_var_{kind}"][e][:, j])
            axes[1, 0].plot(tau, mean, style, color=c, lw=1.2 if kind == "sde" else 0.9)
            if kind == "sde":
                axes[1, 0].fill_between(tau, mean - sd, mean + sd, color=c, alpha=0.12)
    axes[1, 0].axhline(result["beta_star"][j], color="0.3", ls=":", lw=1.0, label=r"$\beta^*_j$")
    axes[1, 0].plot([], [], color="0.3", lw=1.2, label="SDE: mean, ± sd band")
    axes[1, 0].plot([], [], "--", color="0.3", lw=0.9, label="label-noise GD: mean")
    axes[0, 0].set_xlabel("SDE time τ = tη")
    axes[0, 0].set_ylabel("E L (mean over paths)")
    axes[0, 0].legend(fontsize=6, ncol=1)
    axes[0, 0].set_title(f"{_noise(result.config)}, {result.config['paths']} coupled path pairs")
    axes[0, 1].set_xlabel("SDE time τ = tη")
    axes[0, 1].set_ylabel("Var L over paths")
    axes[0, 1].set_title("variance of the loss: GD dashed, SDE solid")
    axes[0, 1].plot([], [], color="0.3", lw=1.4, label="SDE")
    axes[0, 1].plot([], [], "--", color="0.3", lw=1.0, label="label-noise GD")
    axes[0, 1].legend(fontsize=6)
    axes[1, 0].set_xlabel("SDE time τ = tη")
    axes[1, 0].set_ylabel(f"$\\beta_{{{j}}}$: mean (lines) ± sd (SDE, band)")
    axes[1, 0].set_title("largest coordinate of β*: GD dashed, SDE solid")
    axes[1, 0].legend(fontsize=7)
    ax = axes[1, 1]
    ax.errorbar(etas, result["gap_loss"], yerr=2 * result["gap_se"], fmt="o-", color=plots.PALETTE[0],
                label=r"$\max_\tau |E L_{GD} - E L_{SDE}|$ (± 2 s.e.)")
    ax.loglog(etas, result["gap_beta"], "s-", color=plots.PALETTE[1],
              label=r"$\max_\tau \|E \beta_{GD} - E \beta_{SDE}\|_\infty$")
    ax.loglog(etas, result["gap_loss"][-1] * etas / etas[-1], "--", color="0.4", lw=0.9,
              label="slope 1 (weak order)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(etas, [f"{e:g}" for e in etas])            # the step sizes run, not crowded minor labels
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("step size η")
    ax.set_ylabel("weak gap")
    ax.set_title(f"gap vs η (fitted order {result.summary['gap_order']:.2f})")
    ax.legend(fontsize=6)
    return plots.save(fig, out_dir, "sde_sgd_vs_sde", formats)


def sparsity_figure(result, out_dir, formats):
    """Off-support shrinkage and on-support fluctuations at O(√(ηδ)); the test loss before and after the step
    decrease (its title states the two values, whatever they show)."""
    tau = result["tau"]
    cfg = result.config
    level = result.summary["level"]
    fig, axes = plots.figure(3, 1, width=4.0)
    ax = axes[0, 0]
    ax.semilogy(tau, np.nanmedian(result["off"], axis=0), color=plots.PALETTE[0], lw=1.6,
                label=r"label-noise SDE: mean $|\beta_j|$ off supp $\beta^*$")
    ax.semilogy(tau, np.nanmedian(result["on"], axis=0), color=plots.PALETTE[1], lw=1.6,
                label=r"label-noise SDE: mean $|\beta_j - \beta^*_j|$ on supp")
    ax.semilogy(tau, result["off_gd"][0], "--", color=plots.PALETTE[0], lw=1.0,
                label="gradient flow (δ = 0): off supp")
    ax.semilogy(tau, result["on_gd"][0], "--", color=plots.PALETTE[1], lw=1.0, label="gradient flow: on supp")
    ax.axhline(level, color="0.3", ls=":", lw=1.0, label="√(ηδ)")
    ax.axvline(cfg["switch_tau"], color="0.5", lw=0.8)
    ax.text(cfg["switch_tau"], ax.get_ylim()[1], f" η → {cfg['eta_after']:g}", va="top", fontsize=7)
    ax.set_xlabel("SDE time τ")
    ax.set_ylabel("coordinate size (median over paths)")
    ax.set_title(f"η = {cfg['eta']:g}, {_noise(cfg)}\nn = {cfg['n']}, d = {cfg['d']}, r = {cfg['r']}")
    ax.legend(fontsize=6, loc="best")
    ax = axes[0, 1]
    ax.semilogy(tau, np.nanmedian(result["test_loss"], axis=0), color=plots.PALETTE[0], lw=1.6,
                label="label-noise SDE")
    ax.semilogy(tau, result["test_loss_gd"][0], "--", color=plots.PALETTE[3], lw=1.2,
                label="gradient flow (δ = 0)")
    ax.semilogy(tau, np.nanmedian(result["train_loss"], axis=0), color=plots.PALETTE[2], lw=1.0, alpha=0.8,
                label="training loss (SDE)")
    ax.axvline(cfg["switch_tau"], color="0.5", lw=0.8)
    ax.set_xlabel("SDE time τ")
    ax.set_ylabel("loss")
    test = np.nanmedian(result["test_loss"], axis=0)
    at = min(int(np.searchsorted(tau, cfg["switch_tau"])), tau.size - 1)
    ax.set_title(f"test loss (median) {test[at]:.2g} at η → {cfg['eta_after']:g}, {test[-1]:.2g} at the end\n"
                 f"(gradient flow {result['test_loss_gd'][0][-1]:.2g})")
    ax.legend(fontsize=7)
    ax = axes[0, 2]
    j = np.arange(result["beta_star"].size)
    ax.stem(j, result["beta_star"], linefmt="0.6", markerfmt=" ", basefmt=" ", label="β*")
    ax.plot(j, result["beta_final"][0], "o", ms=2.5, color=plots.PALETTE[0], label="label-noise SDE, final")
    ax.plot(j, result["beta_final_gd"], "x", ms=2.5, color=plots.PALETTE[3], label="gradient flow, final")
    ax.set_xlabel("coordinate j")
    ax.set_ylabel(r"$\beta_j$")
    ax.set_title("final predictors")
    ax.legend(fontsize=7)
    return plots.save(fig, out_dir, "sde_sparsity", formats)
