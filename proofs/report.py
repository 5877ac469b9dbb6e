"""``dyntools reproduce`` entry: every claim and false control, the verdict table with per-claim
times, and the Markdown (and LaTeX) derivation documents written next to report.md.

The headline check: every claim verified, every false control refuted with a counterexample. Time never
fails it: the wall time of the whole set is reported as a measurement beside its 60 s target (the issue's
target on 2 cores; a busy machine stretches it), and a claim that its budget stopped is *inconclusive:
budget* — said in the headline, not a failed check (the report still exits 0). Only a wrong verdict (a claim
refuted, a control verified) or a broken derivation fails the entry.
"""

from __future__ import annotations

from dyntools.spec import Entry

TITLE = "Symbolic proofs (seeds 001–004)"
BUDGET_SECONDS = 60.0       # the target for the whole set: a measurement, never a check
#: per-claim budget in seconds handed to the runner (None: each claim's own, else 60 s)
CLAIM_BUDGET: float | None = None


def simulation_crosscheck(*, steps: int = 20000, paths: int = 32, seed: int = 0) -> dict:
    """Measured, not proved: SGD on the seed-004 toy (θ* = 1, x uniform on [1, 1.05], η = 1.08).

    Compares the recorded losses after each path's bounce-entry time with the verified
    bounce-regime bounds of ``stab-loss-bounds`` (¼E[x²]ε₀²(2−ε₀)² ≤ F < ¼E[x²]·0.5775²) and
    reports how often F falls below the printed band's lower edge ε₀θ*²."""
    import numpy as np

    from dyntools.dynamics.toy_sgd import simulate_toy
    from dyntools.models.quadratic_toy import QuadraticToy

    toy = QuadraticToy.uniform(theta_star=1.0, x_min=1.0, x_max=1.05, n=1000, seed=seed)
    eta = 1.08
    r = simulate_toy(toy, eta, steps=steps, paths=paths, seed=seed, record_steps=np.arange(0, steps + 1, 7))
    after = r["steps"][None, :] > r["entry"][:, None]
    loss = r["loss"][after]
    eps0 = toy.eps0(eta)
    lower = 0.25 * toy.second_moment * (2 * eps0 - eps0**2) ** 2
    upper = 0.25 * toy.second_moment * (1 - 0.65**2) ** 2
    return {
        "paths": paths, "steps": steps, "eta": eta, "eps0": eps0,
        "paths_bouncing_at_end": float((r["entry"] < steps).mean()),
        "fraction_below_eps0": float((loss < eps0).mean()) if loss.size else float("nan"),
        "min_loss_after_entry": float(loss.min()) if loss.size else float("nan"),
        "max_loss_after_entry": float(loss.max()) if loss.size else float("nan"),
        "verified_lower": lower, "verified_upper": upper,
        "consistent": bool(loss.size and loss.min() >= lower and loss.max() < upper),
    }


def reproduce(ctx):
    from dyntools.proofs import _package

    from dyntools import tables
    from dyntools.report import Section
    from dyntools.symbolic import registry, render

    results = registry.run(_package.registry().select(controls=True), timeout=CLAIM_BUDGET)
    md_path = ctx.out_dir / "proofs.md"
    tex_path = ctx.out_dir / "proofs.tex"
    md_path.write_text(render.markdown(results), encoding="utf-8")
    tex_path.write_text(render.latex(results), encoding="utf-8")
    summary = render.summary(results)
    total = summary["seconds"]
    claims = [r for r in results if not r.claim.control]
    controls = [r for r in results if r.claim.control]
    n_ver = sum(r.verdict == "verified" for r in claims)
    n_ref = sum(r.verdict == "refuted" and bool(r.counterexample) for r in controls)
    stopped = [r for r in results if r.timed_out]                      # the budget stopped them: inconclusive
    ok = all(r.as_expected or r.timed_out for r in results)
    sim_lines = ["Simulation cross-check of the loss band (measured, not part of any proof): runs in full "
                 "mode only (`dyntools reproduce --only proofs`)."]
    sim = None
    if not ctx.quick:
        sim = simulation_crosscheck(seed=ctx.seed)
        ok = ok and sim["consistent"]
        observed = ("the printed band fails on simulated paths too" if sim["fraction_below_eps0"] > 0
                    else "no violation of the printed band observed")
        verdict = "consistent." if sim["consistent"] else "INCONSISTENT with the verified bounds."
        sim_lines = [
            f"Simulation cross-check (measured, not a proof): SGD on θ* = 1, x ∼ U[1, 1.05], η = 1.08, "
            f"{sim['paths']} paths × {sim['steps']} steps. {sim['paths_bouncing_at_end']:.0%} of paths "
            f"bounce; after the bounce entry F < ε₀θ*² = {sim['eps0']:g} on "
            f"{sim['fraction_below_eps0']:.1%} of recorded steps ({observed}); the verified bounce-regime "
            f"bounds are [{sim['verified_lower']:.3g}, {sim['verified_upper']:.3g}), measured "
            f"[{sim['min_loss_after_entry']:.3g}, {sim['max_loss_after_entry']:.3g}]: {verdict}"
        ]
    rows = render.table_rows(results)
    markdown = "\n".join(
        [
            f"{n_ver}/{len(claims)} claims verified, {n_ref}/{len(controls)} false controls refuted with a "
            f"counterexample; all {len(results)} in {total:.1f} s ({timing_note(total)}). "
            + (f"Inconclusive (budget): {', '.join(f'`{r.claim.name}`' for r in stopped)} — stopped by their "
               f"time budget, neither verified nor refuted; not a failed check. " if stopped else "") +
            f"Derivations: [proofs.md]({ctx.relative(md_path)}) (LaTeX: "
            f"[proofs.tex]({ctx.relative(tex_path)})).",
            "",
            tables.markdown_table(rows),
            "",
            *sim_lines,
        "",
        "Counterexamples of the false controls:",
            "",
            *[
                f"- `{r.claim.name}`: " + ", ".join(f"{k} = {v}" for k, v in (r.counterexample or {}).items())
                for r in controls if r.counterexample
            ],
        ]
    )
    numbers = {
        "claims": len(claims),
        "verified": n_ver,
        "controls": len(controls),
        "controls_refuted": n_ref,
        "inconclusive_budget": [r.claim.name for r in stopped],
        "seconds_total": round(total, 3),
        "seconds_per_claim": {r.claim.name: round(r.seconds, 4) for r in results},
    }
    headline = f"{n_ver} of {len(claims)} claims verified; {n_ref} of {len(controls)} false controls refuted"
    if stopped:
        headline += f"; {len(stopped)} inconclusive: budget"
    return Section(TITLE, markdown, numbers=numbers, ok=ok, headline=headline,
                   inconclusive="budget" if stopped else "")


def timing_note(total: float) -> str:
    """The wall time against the set's target, as a measurement (load from other processes stretches it)."""
    side = "within" if total <= BUDGET_SECONDS else "over"
    return (f"{side} the {BUDGET_SECONDS:.0f} s target: a measurement on this machine under its load at the time, "
            "not a check")


#: the first entry of ``dyntools reproduce`` (one process: the claims' own timeouts need the main thread)
REPORT = Entry("proofs", TITLE, reproduce, order=0, single_core=True)
