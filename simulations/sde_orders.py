"""The order study of the SDE engine (seed 004, issue 5) in the report: measured strong/weak orders of
Euler–Maruyama and Milstein on GBM and OU against their exact solutions (fitted slopes, tolerances stated).

The study is :func:`dyntools.dynamics.sde_order_study.convergence_study`. ``REPORT`` is the catalogue entry
``sde-orders``; ``dyntools simulate sde --convergence`` runs the study (:mod:`simulations.sde`).
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "SDE engine: strong and weak orders (GBM, OU)"


def png_link(ctx, paths) -> str:
    return ctx.relative([p for p in paths if str(p).endswith(".png")][0])


def reproduce(ctx):
    from dyntools.dynamics.sde_order_study import TOLERANCES, convergence_study
    from dyntools.plots.sde import convergence_figure
    from dyntools.report import Section
    from dyntools.tables import markdown_table
    from dyntools.verdicts import check

    res = convergence_study(paths=1500 if ctx.quick else 10_000, levels=(4, 8), fine=10, seed=ctx.seed)
    figs = convergence_figure(res, ctx.figure_dir, ("png", "pdf"))
    s = res.summary["slopes"]
    rows = [{"quantity": k, "fitted slope": round(v, 3), "expected": TOLERANCES[k][0],
             "tolerance": TOLERANCES[k][1],
             "verdict": check(bool(res.summary["checks"][k]), "", 1, 1, "").word}
            for k, v in s.items()]
    md = (f"Fixed-step schemes of `dyntools.dynamics.sde` against exact solutions; coarse steps "
          f"aggregate the fine Brownian increments (one path per sample at all levels). "
          f"GBM dX = 2X dt + X dW, X0 = 1, T = 1, "
          f"{res.config['paths']} paths; OU dX = −X dt + 0.2 dW, X0 = 2, {res.config['ou_paths']} paths "
          f"(weak), {res.config['ou_strong_paths']} paths (strong, against the pathwise solution on the "
          f"grid T·2^-{res.config['ou_strong_fine']}; additive noise, so EM = Milstein with strong order 1)."
          f"\n\n"
          f"{markdown_table(rows)}\n\n![orders]({png_link(ctx, figs)})\n\n{res.message}.")
    held = sum(bool(v) for v in res.summary["checks"].values())
    v = check(held == len(res.summary["checks"]), "fitted slope within the stated tolerance of the scheme's order",
              len(res.summary["checks"]), len(res.summary["checks"]),
              f"{held} of {len(res.summary['checks'])} fitted orders within their tolerance "
              f"({res.config['paths']} GBM paths)", why_not="a fitted order lies outside its tolerance.")
    return Section("SDE engine: strong and weak orders (GBM, OU)", md, numbers={"slopes": s},
                   figures=[ctx.relative(p) for p in figs], ok=bool(res.summary["ok"]), headline=v.text())


REPORT = Entry("sde-orders", TITLE, reproduce, order=40, single_core=True)
