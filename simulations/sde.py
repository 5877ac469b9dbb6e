"""``dyntools simulate sde``: the SDE engine on a built-in model, the order study, the label-noise studies.

Models: geometric Brownian motion, Ornstein–Uhlenbeck, the quadratic toy's label-noise SDE, and the
label-noise SDE of a diagonal linear network on sparse regression (seed 004). ``--convergence`` runs the
order study of :mod:`dyntools.dynamics.sde_order_study` on GBM and OU; ``--study`` runs a study of
:mod:`dyntools.dynamics.label_noise_sde_study` on the diagonal network. The study settings that the command line
does not expose are the constants below.
"""

from __future__ import annotations

from dataclasses import dataclass

from dyntools import memory, validation
from dyntools.plots import sde as sde_figures
from dyntools.result_schema import derive, known
from dyntools.spec import Experiment, Param, RunContext, param

#: Defaults that depend on the model (a flag left out takes the model's value).
H = 1e-3                         # time step of the GBM / OU / toy runs
T1 = 1.0                         # final time of the GBM / OU / toy runs
TAU = 20.0                       # final SDE time of the diagonal-network runs (their h defaults to η/10)
X0 = {"gbm": 1.0, "ou": 1.0, "toy": 0.5}
MU = {"gbm": 0.5, "ou": 0.0}     # GBM drift / OU mean

#: The sgd-vs-sde study compares the step sizes η/2^k, k < ETA_HALVINGS, with at least MIN_SUBSTEPS
#: Brownian sub-steps per GD step and at most MAX_RECORDS saved times.
ETA_HALVINGS, MIN_SUBSTEPS, MAX_RECORDS = 4, 8, 81
#: The sparsity study divides η by STEP_DROP after the switch.
STEP_DROP = 100
#: The order study's finest Brownian level: at least 2 levels below J1 and at least this.
MIN_FINE = 10


@dataclass(frozen=True)
class SDEParams:
    """The options of ``dyntools simulate sde``."""

    model: str = param("gbm", choices=("gbm", "ou", "toy", "diag-net"), help="the SDE")
    scheme: str = param("em", choices=("em", "milstein"), help="scheme; milstein needs diagonal noise")
    convergence: bool = param(False, help="order study instead of one run: strong/weak errors on GBM and OU "
                                          "vs exact solutions")
    levels: str = param("4:8", metavar="J0:J1", help="order study: h = T 2^-j for j in J0..J1, 0 <= J0 < J1 <= 14")
    study: str = param("none", choices=("none", "sgd-vs-sde", "sparsity"), help="diag-net only: a study")
    h: float | None = param(None, kind="float", low=0.0, low_open=True, high=1e6,
                            help=f"time step; default {H:g}, diag-net eta/10 (t1/h × substeps ≤ 1e9 steps)")
    t1: float | None = param(None, kind="float", low=0.0, low_open=True, high=1e9,
                             help=f"final time; default {T1:g}, diag-net {TAU:g}")
    paths: int = param(256, low=1, high=10**7, help="independent paths (paths × records × dimension ≤ 2^28)")
    records: int = param(101, low=2, high=10**6, help="saved times")
    substeps: int = param(1, low=1, high=10**6, help="fine Brownian increments per step")
    x0: float | None = param(None, kind="float", low=-1e150, high=1e150, help=f"initial state; default {X0['gbm']:g}, toy {X0['toy']:g}")
    mu: float | None = param(None, kind="float", low=-1e150, high=1e150,
                             help=f"GBM drift / OU mean; default {MU['gbm']:g} / {MU['ou']:g}")
    sigma: float = param(0.3, low=0.0, high=1e150, help="GBM/OU volatility")
    theta: float = param(1.0, low=0.0, low_open=True, high=1e150, help="OU mean-reversion rate")
    eta: float = param(0.1, low=0.0, help="SGD step eta in the label-noise SDE; > 0 for diag-net")
    label_noise: float = param(9.0, low=0.0,
                               help="label-noise standard deviation delta (labels y + N(0, delta^2), as in simulate "
                                    "diag-net); the SDE's intensity is (delta/n)^2, toy (delta/2n)^2")
    method: str = param("sde", choices=("sde", "sgd"), help="diag-net: sde (EM of the SDE) | sgd (label-noise GD)")
    n: int = param(40, low=1, high=10**6, help="diag-net samples / toy data points")
    d: int = param(100, low=1, high=10**5, help="diag-net dimension (n × d ≤ 2^28)")
    r: int = param(5, low=1, high=10**5, help="diag-net sparsity of beta* (<= d)")
    alpha: float = param(0.5, low=0.0, low_open=True, high=1e6, help="diag-net initialization u = v = alpha")
    bound: float = param(1e10, low=0.0, low_open=True, help="paths with |x| above this are stopped")


def levels(text: str) -> tuple[int, int]:
    """``"J0:J1"`` → ``(J0, J1)`` with ``0 <= J0 < J1 <= 14``."""
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise ValueError(f"Invalid --levels: {text!r} (expected J0:J1, e.g. 4:8)") from None
    if not 0 <= a < b <= 14:
        raise ValueError(f"Invalid --levels: {text!r} (need 0 <= J0 < J1 <= 14)")
    return a, b


def check(p: SDEParams) -> None:
    if p.model == "diag-net" and p.scheme == "milstein":
        raise ValueError("Invalid scheme: 'milstein' needs diagonal noise; the diag-net SDE has general noise "
                         "(v ⊙ Xᵀ dB), use --scheme em")
    if p.study != "none" and p.model != "diag-net":
        raise ValueError(f"Invalid study: {p.study!r} runs on --model diag-net only")
    if p.convergence and p.model not in ("gbm", "ou"):
        raise ValueError("Invalid --convergence: the order study uses GBM and OU (--model gbm or ou)")
    if p.model == "diag-net":
        validation.positive("eta", p.eta)
    if p.convergence:
        levels(p.levels)
        return
    diag = p.model == "diag-net"
    h = p.h if p.h is not None else (p.eta / 10 if diag else H)
    t1 = p.t1 if p.t1 is not None else (TAU if diag else T1)
    if t1 / h * p.substeps > 1e9:
        raise ValueError(f"Invalid --h: t1/h × substeps = {t1 / h * p.substeps:.3g} steps (at most 1e9; "
                         "raise --h or lower --t1)")
    if diag:
        if p.r > p.d:
            raise ValueError(f"Invalid r: {p.r} (must be <= d = {p.d})")
    dim = 2 * p.d if diag else 1
    K = min(p.records, int(t1 / h * p.substeps) + 1)           # at most one record per step
    memory.require_each({      # float64: the state of every path and its records
        "the records (--paths × --records × dimension)": (8 * p.paths * K * dim, "--paths"),
        "the state of the paths (4 × --paths × dimension)": (32 * p.paths * dim, "--paths"),
        "the data (2 × --n × --d)": (16 * p.n * p.d if diag else 0, "--n")})


def run(p: SDEParams, ctx: RunContext):

    from dyntools.data import sparse_regression
    from dyntools.dynamics import label_noise_sde_study as sde_label_noise
    from dyntools.dynamics import sde_models
    from dyntools.dynamics import sde_order_study as sde_orders
    from dyntools.dynamics.sde import solve
    from dyntools.models.quadratic_toy import QuadraticToy

    seed = ctx.seed
    if p.convergence:
        j0, j1 = levels(p.levels)
        return sde_orders.convergence_study(paths=p.paths, levels=(j0, j1), fine=max(j1 + 2, MIN_FINE), seed=seed)
    if p.model == "diag-net":
        data = sparse_regression(n=p.n, d=p.d, r=p.r, seed=seed)
        tau = TAU if p.t1 is None else p.t1
        if p.study == "sgd-vs-sde":
            etas = [p.eta / 2**k for k in range(ETA_HALVINGS)]
            return sde_label_noise.sgd_vs_sde(data, etas=etas, label_noise=p.label_noise, tau=tau, paths=p.paths,
                                              substeps=max(p.substeps, MIN_SUBSTEPS), alpha=p.alpha, seed=seed,
                                              records=min(p.records, MAX_RECORDS))
        if p.study == "sparsity":
            return sde_label_noise.sparsity_mechanism(data, eta=p.eta, label_noise=p.label_noise, tau=tau, h=p.h,
                                                      paths=p.paths, alpha=p.alpha, seed=seed, records=p.records,
                                                      eta_after=p.eta / STEP_DROP)
        return sde_models.simulate_diag_net(data, eta=p.eta, tau=tau, h=p.h,
                                            delta=p.label_noise, method=p.method,
                                            paths=p.paths, init="balanced", alpha=p.alpha, seed=seed,
                                            records=p.records, bound=p.bound, substeps=p.substeps)
    mu = MU.get(p.model) if p.mu is None else p.mu
    x0 = X0[p.model] if p.x0 is None else p.x0
    if p.model == "gbm":
        sde = sde_models.gbm(mu, p.sigma)
    elif p.model == "ou":
        sde = sde_models.ou(p.theta, mu, p.sigma)
    else:
        toy = QuadraticToy.uniform(n=p.n, seed=seed)
        sde = sde_models.toy_sde(toy, p.eta, p.label_noise)
    result = solve(sde, x0, t1=T1 if p.t1 is None else p.t1, h=H if p.h is None else p.h, paths=p.paths,
                   scheme=p.scheme, seed=seed, records=p.records, substeps=p.substeps, bound=p.bound)
    result.config["x0"] = x0
    return result


def summary(p: SDEParams, result) -> dict:
    return {"kind": result.kind, "status": result.status, "message": result.message, **result.summary,
            "seconds": result.timings.get("simulate")}


def table(p: SDEParams, result) -> str:
    from dyntools.tables import key_values

    return key_values({"kind": result.kind, "status": result.status, "message": result.message,
                       "seconds": result.timings.get("simulate")})


_DIAG = "alpha d n paths"
RESULTS = (derive("sde", SDEParams, "bound h paths scheme substeps t1", optional="x0",   # model: any SDE of dt.solve
                  extra={"model": Param("the SDE's name", "str"), "t0": Param("start time", "float"),
                         "args": Param("the SDE's parameters", "floats"), "kernel": known("numba", "numpy"),
                         "noise": known("general", "diagonal"), "dim": Param("dimension", "int", low=1),
                         "noise_dim": Param("Brownian dimension", "int", low=1)},
                  summary={"diverged": "int", "final_mean": "list", "paths": "int", "steps": "int"}),
           derive("sde-convergence", SDEParams, "paths", extra={"levels": Param("levels", "ints", low=0, high=14,
                                                                                max_len=15)},
                  summary={"checks": "mapping", "ok": "flag", "slopes": "mapping"}),
           derive("sde-diag-net", SDEParams, f"{_DIAG} bound eta h method model substeps", nullable="h",
                  summary={"diverged": "int", "final_loss_median": "number", "paths": "int", "steps": "int"}),
           derive("sde-sgd-vs-sde", SDEParams, f"{_DIAG} label_noise substeps",
                  summary={"gap_beta": "list", "gap_loss": "list", "gap_order": "number", "shrinking": "flag",
                           "verdict": "str"}),
           derive("sde-sparsity", SDEParams, f"{_DIAG} eta h label_noise r", nullable="h",
                  summary={"final_rank": "number", "final_test_loss": "number", "final_test_loss_gd": "number",
                           "initial_rank": "number", "level": "number", "off_shrink_before_switch": "number",
                           "recovered": "flag", "verdict": "str"}))

EXPERIMENT = Experiment.declare(
    globals(), name="sde", verb="simulate",
    help="SDE engine (Euler-Maruyama / Milstein): GBM, OU, the quadratic toy, diagonal-net label noise",
    example="dyntools simulate sde --model gbm --scheme milstein --h 1e-3 --paths 1000 --out runs/gbm",
    params=SDEParams,
    figures=dict.fromkeys(("sde", "sde-convergence", "sde-diag-net", "sde-sgd-vs-sde", "sde-sparsity"),
                          sde_figures.plot_result))

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "sde": ["--model", "gbm", "--paths", "8", "--records", "11"],
    "sde-convergence": ["--convergence", "--levels", "2:4", "--paths", "16"],
    "sde-diag-net": ["--model", "diag-net", "--method", "sgd", "--n", "10", "--d", "20", "--r", "3", "--t1", "2",
                     "--paths", "4", "--records", "11"],
    "sde-sgd-vs-sde": ["--model", "diag-net", "--study", "sgd-vs-sde", "--n", "10", "--d", "20", "--r", "3", "--t1",
                       "1", "--paths", "2", "--records", "5"],
    "sde-sparsity": ["--model", "diag-net", "--study", "sparsity", "--n", "10", "--d", "20", "--r", "3", "--t1", "1",
                     "--paths", "2", "--records", "5"],
}
