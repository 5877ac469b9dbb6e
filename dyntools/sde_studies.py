"""Studies with the SDE engine: the order study, SGD ↔ SDE, and the sparsity mechanism (seed 004).

* :func:`convergence_study` — GBM and OU against their exact solutions. Strong error
  ``E|X_h(T) − X(T)|`` on GBM with the exact solution on the *same* Brownian path (the engine
  records ``W_T``; coarse runs aggregate the fine increments), for EM (expected order ½) and
  Milstein (order 1). Weak error ``|E X_h(T) − E X(T)|`` for EM: on GBM estimated as
  ``|mean(X_h(T) − X(T))|`` (same expectation, since ``E X(T) = x0 e^{μT}`` is the exact mean, with
  far less Monte-Carlo noise) and on OU against the exact mean ``μ + (x0 − μ)e^{−θT}``
  (order 1 expected). Slopes are least-squares fits of log error on log h; the tolerances are
  :data:`TOLERANCES`.
* :func:`sgd_vs_sde` — label-noise GD at step η against the label-noise SDE at τ = tη on the
  diagonal network, coupled through one Brownian path per pair (GD at η with ``r`` sub-steps,
  SDE at ``h = η/r``): means and variances over paths of the loss and of β over time, and the
  weak gap ``max_τ |E L_GD − E L_SDE|``, which should shrink like η.
* :func:`sparsity_mechanism` — the SDE with a large step then a small one: coordinates of β off
  the support of β* shrink exponentially, those on the support fluctuate at O(√(ηδ)); decreasing
  the step recovers the sparse predictor. Compared with noiseless GD (δ = 0) from the same start.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.dynamics import sde_models
from dyntools.dynamics.sde import solve
from dyntools.engine.result import RunResult, timed

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
                      ou_levels: tuple[int, int] = (1, 5), seed: int = 0, gbm_sde=None) -> RunResult:
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


# --------------------------------------------------------------------------------- SGD ↔ SDE

def _moments(res: RunResult) -> dict[str, np.ndarray]:
    beta = res["u"] * res["v"]
    return {"loss_mean": np.nanmean(res["loss"], axis=0), "loss_var": np.nanvar(res["loss"], axis=0),
            "beta_mean": np.nanmean(beta, axis=0), "beta_var": np.nanvar(beta, axis=0)}


def sgd_vs_sde(data, *, etas=(0.2, 0.1, 0.05, 0.025), delta: float = 1e-3, tau: float = 5.0, paths: int = 128,
               substeps: int = 8, alpha: float = 0.5, records: int = 41, seed: int = 0) -> RunResult:
    """Label-noise GD at each step η versus the SDE (h = η/substeps) on a coupled Brownian path.
    Saved at ``records`` multiples of the largest η (so on every run's step grid).

    Arrays (E = number of step sizes, K = records): ``tau`` (K,), ``etas`` (E,),
    ``loss_mean_{sgd,sde}``/``loss_var_{sgd,sde}`` (E, K), ``beta_mean_{sgd,sde}``/``beta_var_{sgd,sde}``
    (E, K, d), ``gap_loss`` (E,) = max_τ |E L_GD − E L_SDE|, ``gap_beta`` (E,) = max_τ ‖E β_GD − E β_SDE‖_∞,
    ``gap_se`` (E,) = the standard error of the loss gap at the worst time (paired differences).
    """
    etas = validation.finite_array("etas", etas, ndim=1)
    if np.any(etas <= 0):
        raise ValueError("Invalid etas: every step size must be > 0")
    delta = validation.non_negative("delta", delta)
    tau = validation.positive("tau", tau)
    timings: dict[str, float] = {}
    out: dict[str, list] = {k: [] for k in ("loss_mean_sgd", "loss_var_sgd", "beta_mean_sgd", "beta_var_sgd",
                                            "loss_mean_sde", "loss_var_sde", "beta_mean_sde", "beta_var_sde",
                                            "gap_loss", "gap_beta", "gap_se")}
    coarse = float(etas.max())
    n_coarse = int(round(tau / coarse))
    save_tau = coarse * np.unique(np.round(np.linspace(0, n_coarse, min(records, n_coarse + 1))))
    grid = None
    statuses = []
    with timed(timings, "simulate"):
        for e, eta in enumerate(etas):
            common = dict(eta=float(eta), delta=sde_models.label_noise_std(delta, data.X.shape[0]), tau=tau,
                          paths=paths, init="balanced", alpha=alpha, seed=seed, save_tau=save_tau, stream_key=(e,))
            gd = sde_models.simulate_diag_net(data, method="sgd", substeps=substeps, **common)
            sde = sde_models.simulate_diag_net(data, method="sde", h=float(eta) / substeps, **common)
            statuses += [gd.status, sde.status]
            if grid is None:
                grid = gd["tau"]
            mg, ms = _moments(gd), _moments(sde)
            for k in mg:
                out[k + "_sgd"].append(mg[k])
                out[k + "_sde"].append(ms[k])
            dl = gd["loss"] - sde["loss"]
            worst = int(np.nanargmax(np.abs(np.nanmean(dl, axis=0))))
            out["gap_loss"].append(float(np.abs(np.nanmean(dl, axis=0)).max()))
            out["gap_se"].append(float(np.nanstd(dl[:, worst]) / np.sqrt(paths)))
            out["gap_beta"].append(float(np.abs(mg["beta_mean"] - ms["beta_mean"]).max()))
    arrays = {k: np.array(v) for k, v in out.items()}
    arrays.update(tau=grid, etas=etas, beta_star=data.beta_star)
    positive = len(etas) > 1 and np.all(arrays["gap_loss"] > 0)
    slope = fit_slope(etas, arrays["gap_loss"]) if positive else float("nan")
    shrinking = bool(np.all(np.diff(arrays["gap_loss"]) < 0))
    diverged = [s for s in statuses if s == "diverged"]
    status = "diverged" if diverged else "completed"
    message = ("weak gap max_tau |E L_GD - E L_SDE| = "
               + ", ".join(f"{g:.3g} (eta {e:g})" for g, e in zip(arrays["gap_loss"], etas))
               + f"; fitted order {slope:.2f}" + (f"; {len(diverged)} runs diverged" if diverged else ""))
    config = {"etas": etas.tolist(), "delta": delta, "tau": tau, "paths": paths, "substeps": substeps,
              "alpha": alpha, "n": int(data.X.shape[0]), "d": int(data.X.shape[1])}
    summary = {"gap_loss": arrays["gap_loss"].tolist(), "gap_beta": arrays["gap_beta"].tolist(),
               "gap_order": slope, "shrinking": shrinking,
               "verdict": "shrinking" if shrinking else "not-shrinking"}
    return RunResult("sde-sgd-vs-sde", config, arrays, status, message, seed=seed, summary=summary,
                     timings=timings)


# ------------------------------------------------------------------------ sparsity mechanism

def sparsity_mechanism(data, *, eta: float = 0.1, delta: float = 0.01, tau: float = 60.0,
                       switch_frac: float = 0.6,
                       eta_after: float = 0.001, h: float | None = None, paths: int = 8, alpha: float = 0.5,
                       records: int = 121, seed: int = 0) -> RunResult:
    """SDE with ηδ large until ``switch_frac·tau``, then η → ``eta_after`` (noise ηδ drops), against
    noiseless gradient flow (δ = 0, same h) from the same start. Arrays: ``tau`` (K,), ``off``/``on``
    (P, K) the mean |β_j| off the support and the mean |β_j − β*_j| on it, ``off_gd``/``on_gd`` for
    the noiseless run, ``test_loss``/``test_loss_gd`` (P, K), ``rank`` (K,) Jacobian rank of path 0,
    ``level`` = √(ηδ)."""
    from dyntools.metrics import jacobian_rank

    tau = validation.positive("tau", tau)
    switch_frac = validation.in_interval("switch_frac", switch_frac, 0.0, 1.0, closed_high=True)
    timings: dict[str, float] = {}
    h = eta / 10 if h is None else h
    with timed(timings, "simulate"):
        sde = sde_models.simulate_diag_net(data, method="sde", eta=eta, tau=tau, h=h, paths=paths,
                                           delta=sde_models.label_noise_std(delta, data.X.shape[0]),
                                           init="balanced", alpha=alpha, seed=seed, records=records,
                                           eta_after=eta_after, switch_tau=switch_frac * tau)
        gd = sde_models.simulate_diag_net(data, method="sde", eta=eta, delta=0.0, tau=tau, h=h, paths=1,
                                          init="balanced", alpha=alpha, seed=seed, records=records)
    support = data.beta_star != 0
    Xt, yt = data.X_test, data.y_test

    def parts(res):
        beta = res["u"] * res["v"]
        off = np.abs(beta[..., ~support]).mean(axis=-1)
        on = np.abs(beta[..., support] - data.beta_star[support]).mean(axis=-1)
        test = 0.5 * np.mean((beta @ Xt.T - yt) ** 2, axis=-1)
        return beta, off, on, test

    beta, off, on, test = parts(sde)
    _, off_gd, on_gd, test_gd = parts(gd)
    phi = sde_models.diag_net_jacobian(sde["u"][0], sde["v"][0], data.X)
    rank = jacobian_rank(phi, 1e-3)
    level = float(np.sqrt(eta * delta))
    k_switch = int(np.searchsorted(sde["tau"], switch_frac * tau))
    final_test, final_test_gd = float(np.nanmedian(test[:, -1])), float(test_gd[0, -1])
    recovered = final_test < 0.1 * final_test_gd
    shrink_off = float(np.nanmedian(off[:, max(k_switch - 1, 0)]) / np.nanmedian(off[:, 0]))
    status = "diverged" if sde.status == "diverged" else "completed"
    message = (f"off-support mean |beta| shrank by {shrink_off:.2e} before the step decrease; "
               "final test loss "
               f"{final_test:.3g} with label noise vs {final_test_gd:.3g} for noiseless gradient flow; "
               f"sqrt(eta delta) = {level:.3g}")
    arrays = {"tau": sde["tau"], "off": off, "on": on, "off_gd": off_gd, "on_gd": on_gd, "test_loss": test,
              "test_loss_gd": test_gd, "train_loss": sde["loss"], "rank": np.asarray(rank),
              "beta_final": beta[:, -1],
              "beta_star": data.beta_star, "beta_final_gd": gd["u"][0, -1] * gd["v"][0, -1]}
    config = {"eta": eta, "delta": delta, "tau": tau, "switch_tau": switch_frac * tau, "eta_after": eta_after,
              "h": h, "paths": paths, "alpha": alpha, "n": int(data.X.shape[0]), "d": int(data.X.shape[1]),
              "r": int(support.sum())}
    summary = {"level": level, "off_shrink_before_switch": shrink_off, "final_test_loss": final_test,
               "final_test_loss_gd": final_test_gd, "recovered": bool(recovered),
               "final_rank": int(rank[-1]), "initial_rank": int(rank[0]),
               "verdict": "sparse-recovery" if recovered else "no-recovery"}
    return RunResult("sde-sparsity", config, arrays, status, message, seed=seed, summary=summary,
                     timings=timings)
