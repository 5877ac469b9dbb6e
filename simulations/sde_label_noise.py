"""Label-noise GD versus the label-noise SDE on a diagonal linear network, and the sparsity mechanism
(issue 5, seed 004), in the report; the studies are :mod:`dyntools.dynamics.label_noise_sde_study`.

* ``sgd_vs_sde`` — label-noise GD at step η against the label-noise SDE at τ = tη on the
  diagonal network, coupled through one Brownian path per pair (GD at η with ``r`` sub-steps,
  SDE at ``h = η/r``): means and variances over paths of the loss and of β over time, and the
  weak gap ``max_τ |E L_GD − E L_SDE|``, which should shrink like η.
* ``sparsity_mechanism`` — the SDE with a large step then a small one: coordinates of β off
  the support of β* shrink exponentially, those on the support fluctuate at O(√(ηδ)); decreasing
  the step recovers the sparse predictor. Compared with noiseless GD (δ = 0) from the same start.

``REPORT`` is the catalogue entry ``sde-label-noise``; ``dyntools simulate sde --model diag-net
--study ...`` runs the studies (:mod:`simulations.sde`).
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Label-noise SDE: GD vs SDE and the sparsity mechanism"
#: the SDE intensity δ̃ of both studies in the report (label-noise std δ = n√δ̃)
INTENSITY = 0.05


def reproduce(ctx):
    from dyntools.data import sparse_regression
    from dyntools.dynamics.label_noise_sde_study import sgd_vs_sde, sparsity_mechanism
    from dyntools.dynamics.sde_models import label_noise_std
    from dyntools.plots.sde import sgd_vs_sde_figure, sparsity_figure
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    quick = ctx.quick
    data = sparse_regression(n=40, d=100, r=5, seed=ctx.seed)
    # both studies run at the SDE intensity δ̃ = 0.05, i.e. label noise of standard deviation δ = n√δ̃
    cmp_ = sgd_vs_sde(data, etas=(0.1, 0.05, 0.025, 0.0125), label_noise=label_noise_std(INTENSITY, 40), tau=5.0, paths=32 if quick else 256,
                      substeps=8, alpha=0.5, seed=ctx.seed, records=41)
    f1 = sgd_vs_sde_figure(cmp_, ctx.figure_dir, ("png", "pdf"))
    sdata = data if quick else sparse_regression(n=80, d=200, r=10, seed=ctx.seed)
    sp = sparsity_mechanism(sdata, eta=0.1, label_noise=label_noise_std(INTENSITY, sdata.X.shape[0]), tau=100.0, switch_frac=0.6, eta_after=0.001,
                            paths=4 if quick else 16, alpha=0.5, seed=ctx.seed, records=101)
    f2 = sparsity_figure(sp, ctx.figure_dir, ("png", "pdf"))
    gaps = [{"eta": e, "max_τ abs(E L_GD − E L_SDE)": g, "2 s.e.": 2 * s, "max_tau ‖E β_GD − E β_SDE‖∞": b}
            for e, g, s, b in zip(cmp_["etas"], cmp_["gap_loss"], cmp_["gap_se"], cmp_["gap_beta"])]
    ss = sp.summary
    md = (
        "Label-noise GD with step η (full batch, label noise of standard deviation δ, which matches "
        "√(ηδ̃)φᵀdB with the intensity δ̃ = (δ/n)² for L = (1/2n)‖Xβ − y‖²; see `dyntools.dynamics.sde_models`) "
        "against the SDE at τ = tη "
        f"(h = η/8), on one Brownian path per pair. n = 40, d = 100, r = 5, δ = {cmp_.config['label_noise']:.4g} "
        f"(δ̃ = {INTENSITY:g}), u = v = 0.5 at start, "
        f"{cmp_.config['paths']} path pairs.\n\n{markdown_table(gaps)}\n\n"
        f"![SGD vs SDE]({ctx.relative(_png(f1))})\n\n{cmp_.message} "
        f"(the gap shrinks: {cmp_.summary['shrinking']}).\n\n"
        f"Sparsity mechanism (n = {sp.config['n']}, d = {sp.config['d']}, r = {sp.config['r']}; "
        f"η = 0.1, δ = {sp.config['label_noise']:.4g} (δ̃ = {INTENSITY:g}) "
        f"until τ = {sp.config['switch_tau']:g}, then η = 0.001): {sp.message}. Jacobian rank of φ (relative "
        f"threshold 1e-3, path 0): {ss['initial_rank']} → {ss['final_rank']}.\n\n"
        f"![sparsity]({ctx.relative(_png(f2))})")
    ok = bool(cmp_.summary["shrinking"]) and bool(ss["recovered"]) and cmp_.status != "diverged"
    numbers = {"gap_loss": cmp_.summary["gap_loss"], "gap_order": cmp_.summary["gap_order"],
               "off_shrink_before_switch": ss["off_shrink_before_switch"],
               "final_test_loss": ss["final_test_loss"],
               "final_test_loss_gradient_flow": ss["final_test_loss_gd"]}
    from dyntools.verdicts import measured

    ratio = (f"{ss['final_test_loss_gd'] / ss['final_test_loss']:.0f}× lower"
             if measured(ss["final_test_loss"], ss["final_test_loss_gd"]) and ss["final_test_loss"] > 0 else "not measured")
    from dyntools.verdicts import check

    gaps_ = cmp_.summary["gap_loss"]
    shrink = check(bool(cmp_.summary["shrinking"]) if measured(*gaps_) else None,
                   "the gap falls at every smaller η (mean over the path pairs)", len(gaps_) * cmp_.config["paths"],
                   (len(gaps_) if cmp_.status != "diverged" else 0) * cmp_.config["paths"],
                   "gap " + " → ".join(f"{g:.2g}" for g in gaps_) + f", fitted order {cmp_.summary['gap_order']:.2g}",
                   why_not="the gap does not fall at some smaller η.")
    headline = (f"the GD–SDE gap shrinks with η: {shrink.text()}; final test loss "
                f"with label noise {ss['final_test_loss']:.2g} vs gradient flow {ss['final_test_loss_gd']:.2g} ({ratio})")
    numbers["claims"] = {"gap shrinks with η": shrink.as_dict()}
    return Section("Label-noise SDE: GD vs SDE and the sparsity mechanism", md, numbers=numbers,
                   figures=[ctx.relative(p) for p in f1 + f2], ok=ok, headline=headline)


def _png(paths):
    return next(p for p in paths if str(p).endswith(".png"))


REPORT = Entry("sde-label-noise", TITLE, reproduce, order=50, single_core=True)
