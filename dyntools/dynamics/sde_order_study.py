"""The measured strong and weak orders of the SDE engine's schemes on GBM and OU (seed 004, issue 5).

:func:`convergence_study` runs Euler–Maruyama and Milstein at ``h = T 2^{-j}`` against exact solutions, every level
driven by the same fine Brownian path. Strong error ``E|X_h(T) − X(T)|`` on GBM with the exact solution on the
*same* Brownian path (the engine records ``W_T``; coarse runs aggregate the fine increments), for EM (expected
order ½) and Milstein (order 1). Weak error ``|E X_h(T) − E X(T)|`` for EM: on GBM estimated as
``|mean(X_h(T) − X(T))|`` (same expectation, since ``E X(T) = x0 e^{μT}`` is the exact mean, with far less
Monte-Carlo noise) and on OU against the exact mean ``μ + (x0 − μ)e^{−θT}`` (order 1 expected). Slopes are
least-squares fits of log error on log h (:func:`fit_slope`); the tolerances are :data:`TOLERANCES`.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation

#: Expected orders and the accepted deviation of the fitted slope.
TOLERANCES = {"strong_em": (0.5, 0.15), "strong_milstein": (1.0, 0.15), "weak_em_gbm": (1.0, 0.2),
              "weak_em_ou": (1.0, 0.2), "strong_em_ou": (1.0, 0.15)}

GBM_PARAMS = {"mu": 2.0, "sigma": 1.0, "x0": 1.0}        # Higham (2001)'s test problem
OU_PARAMS = {"theta": 1.0, "mu": 0.0, "sigma": 0.2, "x0": 2.0}
OU_PATH_FACTOR = 10   # OU weak errors are plain Monte-Carlo means: 10× the paths (1-D, cheap)
OU_STRONG_FINE = 12   # OU strong errors: reference on the grid T·2^-12, >= 32x finer than any scheme tested


def fit_slope(h: np.ndarray, err: np.ndarray) -> float:
    """Least-squares slope of ``log err`` against ``log h``."""
    return float(np.polyfit(np.log(h), np.log(err), 1)[0])


def convergence_study(*, paths: int = 4000, levels: tuple[int, int] = (4, 8), fine: int = 10, T: float = 1.0,
                      ou_levels: tuple[int, int] = (1, 5), seed: int = 0, gbm_sde=None):
    """Strong and weak errors on GBM and OU at ``h = T 2^{-j}``, ``j ∈ [levels[0], levels[1]]``, all
    levels driven by the same fine Brownian path of step ``T 2^{-fine}``.

    The OU weak errors use the coarser ``ou_levels`` (h = T/2 … T/32 by default): the weak error is a
    bias that must stand above the Monte-Carlo noise of a mean (reported as ``weak_em_ou_se``).
    OU's strong errors use the same levels against :func:`~dyntools.dynamics.sde_models.ou_pathwise`
    on a grid of step ``T 2^{-12}`` driven by the same Brownian path. OU's noise is additive, so
    Milstein coincides with EM and EM's strong order is 1 there (not ½ as for GBM).
    ``gbm_sde`` replaces the built-in GBM (e.g. a false control with a wrong Milstein derivative);
    its exact solution is still taken as GBM with :data:`GBM_PARAMS`.
    """
    from dyntools.dynamics import sde_models
    from dyntools.dynamics.sde import solve
    from dyntools.engine.result import RunResult, timed

    paths = validation.count("paths", paths)
    j0, j1 = int(levels[0]), int(levels[1])
    fine = validation.count("fine", fine)
    if not 0 <= j0 < j1 <= fine:
        raise ValueError(f"Invalid levels: {levels} (need 0 <= first < last <= fine = {fine})")
    T = validation.positive("T", T)
    timings: dict[str, float] = {}
    g = GBM_PARAMS
    gbm = sde_models.gbm(g["mu"], g["sigma"]) if gbm_sde is None else gbm_sde
    o = OU_PARAMS
    ou = sde_models.ou(o["theta"], o["mu"], o["sigma"])
    js = np.arange(j0, j1 + 1)
    hs = T / 2.0**js
    strong = {"em": [], "milstein": []}
    weak_gbm, weak_ou, weak_ou_se = [], [], []
    with timed(timings, "simulate"):
        for j, h in zip(js, hs):
            sub = 2 ** (fine - j)
            for scheme in ("em", "milstein"):
                r = solve(gbm, g["x0"], t1=T, h=h, paths=paths, scheme=scheme, seed=seed, records=2,
                          substeps=sub, record_brownian=True, stream_key=(1,))
                exact = sde_models.gbm_exact(g["x0"], g["mu"], g["sigma"], T, r["W"][:, -1, 0])
                diff = r["x"][:, -1, 0] - exact
                strong[scheme].append(float(np.mean(np.abs(diff))))
                if scheme == "em":
                    weak_gbm.append(float(abs(np.mean(diff))))
        ou_js = np.arange(int(ou_levels[0]), int(ou_levels[1]) + 1)
        strong_ou = []
        ou_strong_paths = max(200, paths // 4)
        ref = solve(ou, o["x0"], t1=T, h=T / 2.0**OU_STRONG_FINE, paths=ou_strong_paths, scheme="em", seed=seed,
                    records=2**OU_STRONG_FINE + 1, record_brownian=True, stream_key=(3,))
        exact_ou = sde_models.ou_pathwise(o["x0"], o["theta"], o["mu"], o["sigma"], ref["t"], ref["W"][:, :, 0])
        for j in ou_js:
            r = solve(ou, o["x0"], t1=T, h=T / 2.0**j, paths=ou_strong_paths, scheme="em", seed=seed, records=2,
                      substeps=2 ** (OU_STRONG_FINE - j), stream_key=(3,))
            strong_ou.append(float(np.mean(np.abs(r["x"][:, -1, 0] - exact_ou))))
        for j in ou_js:
            r = solve(ou, o["x0"], t1=T, h=T / 2.0**j, paths=OU_PATH_FACTOR * paths, scheme="em", seed=seed,
                      records=2, substeps=2 ** (fine - j), stream_key=(2,))
            mean, _ = sde_models.ou_moments(o["x0"], o["theta"], o["mu"], o["sigma"], T)
            xT = r["x"][:, -1, 0]
            weak_ou.append(float(abs(xT.mean() - mean)))
            weak_ou_se.append(float(xT.std() / np.sqrt(xT.size)))
    h_ou = T / 2.0**ou_js
    slopes = {"strong_em": fit_slope(hs, np.array(strong["em"])),
              "strong_milstein": fit_slope(hs, np.array(strong["milstein"])),
              "weak_em_gbm": fit_slope(hs, np.array(weak_gbm)),
              "weak_em_ou": fit_slope(h_ou, np.array(weak_ou)),
              "strong_em_ou": fit_slope(h_ou, np.array(strong_ou))}
    checks = {k: bool(abs(slopes[k] - TOLERANCES[k][0]) <= TOLERANCES[k][1]) for k in slopes}
    ok = all(checks.values())
    text = ", ".join(f"{k} {slopes[k]:.3f} (expected {TOLERANCES[k][0]} ± {TOLERANCES[k][1]})"
                     for k in slopes)
    status = "completed" if ok else "failed"
    message = ("measured orders: " + text + ("" if ok else
               "; FAILED: " + ", ".join(k for k, v in checks.items() if not v)))
    arrays = {"h": hs, "strong_em": np.array(strong["em"]), "strong_milstein": np.array(strong["milstein"]),
              "weak_em_gbm": np.array(weak_gbm), "h_ou": h_ou, "weak_em_ou": np.array(weak_ou),
              "weak_em_ou_se": np.array(weak_ou_se), "strong_em_ou": np.array(strong_ou)}
    config = {"paths": paths, "ou_paths": OU_PATH_FACTOR * paths, "ou_strong_paths": ou_strong_paths,
              "ou_strong_fine": OU_STRONG_FINE, "levels": [j0, j1],
              "ou_levels": [int(ou_levels[0]),
                            int(ou_levels[1])], "fine": fine, "T": T, "gbm": GBM_PARAMS, "ou": OU_PARAMS,
              "tolerances": TOLERANCES, "gbm_model": gbm.name}
    summary = {"slopes": slopes, "checks": checks, "ok": ok}
    return RunResult("sde-convergence", config, arrays, status, message, seed=seed, summary=summary,
                     timings=timings)
