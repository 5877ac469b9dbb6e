"""``dyntools simulate sde``: the SDE engine on a built-in model, the order study, label-noise studies."""

from __future__ import annotations

from dyntools import store, validation
from dyntools.commands import CommandOutput
from dyntools.tables import key_values

HELP = "SDE engine (Euler-Maruyama / Milstein): GBM, OU, the quadratic toy, diagonal-net label noise"
EXAMPLE = "dyntools simulate sde --model gbm --scheme milstein --h 1e-3 --paths 1000 --out runs/gbm"

MODELS = ("gbm", "ou", "toy", "diag-net")
SCHEMES = ("em", "milstein")
STUDIES = ("none", "sgd-vs-sde", "sparsity")


def add_arguments(p) -> None:
    p.add_argument("--model", default="gbm", help="gbm | ou | toy | diag-net (default gbm)")
    p.add_argument("--scheme", default="em", help="em | milstein (milstein: diagonal noise only; default em)")
    p.add_argument("--convergence", action="store_true",
                   help="order study instead of one run: strong/weak errors on GBM and OU vs exact solutions")
    p.add_argument("--levels", default="4:8", metavar="J0:J1", help="order study: h = T 2^-j for j in J0..J1")
    p.add_argument("--study", default="none", help="diag-net only: none | sgd-vs-sde | sparsity")
    p.add_argument("--h", type=float, default=None, help="time step h > 0 (default 1e-3; diag-net eta/10)")
    p.add_argument("--t1", type=float, default=None, help="final time (default 1; diag-net 20)")
    p.add_argument("--paths", type=int, default=256, help="independent paths (default 256)")
    p.add_argument("--records", type=int, default=101, help="saved times (default 101)")
    p.add_argument("--substeps", type=int, default=1, help="fine Brownian increments per step (default 1)")
    p.add_argument("--x0", type=float, default=None, help="initial state (default 1; toy 0.5)")
    p.add_argument("--mu", type=float, default=None, help="GBM drift (default 0.5) / OU mean (default 0)")
    p.add_argument("--sigma", type=float, default=0.3, help="GBM/OU volatility (default 0.3)")
    p.add_argument("--theta", type=float, default=1.0, help="OU mean-reversion rate (default 1)")
    p.add_argument("--eta", type=float, default=0.1, help="SGD step eta in the label-noise SDE (default 0.1)")
    p.add_argument("--delta", type=float, default=0.05,
                   help="SDE noise intensity delta >= 0: label noise of std n*sqrt(delta) (default 0.05)")
    p.add_argument("--method", default="sde", help="diag-net: sde (EM of the SDE) | sgd (label-noise GD)")
    p.add_argument("--n", type=int, default=40, help="diag-net samples (default 40) / toy data points")
    p.add_argument("--d", type=int, default=100, help="diag-net dimension (default 100)")
    p.add_argument("--r", type=int, default=5, help="diag-net sparsity of beta* (default 5)")
    p.add_argument("--alpha", type=float, default=0.5,
                   help="diag-net initialization u = v = alpha (default 0.5)")
    p.add_argument("--bound", type=float, default=1e10,
                   help="paths with |x| above this are stopped (default 1e10)")


def _levels(text: str) -> tuple[int, int]:
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise ValueError(f"Invalid --levels: {text!r} (expected J0:J1, e.g. 4:8)") from None
    if not 0 <= a < b <= 14:
        raise ValueError(f"Invalid --levels: {text!r} (need 0 <= J0 < J1 <= 14)")
    return a, b


def _validate(args) -> dict:
    model = validation.one_of("model", args.model, MODELS)
    scheme = validation.one_of("scheme", args.scheme, SCHEMES)
    study = validation.one_of("study", args.study, STUDIES)
    method = validation.one_of("method", args.method, ("sde", "sgd"))
    if args.h is not None:
        validation.positive("h", args.h)
    if args.t1 is not None:
        validation.positive("t1", args.t1)
    validation.count("paths", args.paths)
    validation.count("records", args.records, minimum=2)
    validation.count("substeps", args.substeps)
    validation.non_negative("eta", args.eta)
    validation.non_negative("delta", args.delta)
    validation.non_negative("sigma", args.sigma)
    validation.positive("theta", args.theta)
    validation.positive("bound", args.bound)
    if args.x0 is not None:
        validation.finite("x0", args.x0)
    if args.mu is not None:
        validation.finite("mu", args.mu)
    validation.seed(args.seed)
    if model == "diag-net" and scheme == "milstein":
        raise ValueError("Invalid scheme: 'milstein' needs diagonal noise; the diag-net SDE has "
                         "general noise "
                         "(v ⊙ Xᵀ dB), use --scheme em")
    if study != "none" and model != "diag-net":
        raise ValueError(f"Invalid study: {study!r} runs on --model diag-net only")
    if args.convergence and model not in ("gbm", "ou"):
        raise ValueError("Invalid --convergence: the order study uses GBM and OU (--model gbm or ou)")
    if model == "diag-net":
        validation.positive("eta", args.eta)
        validation.positive("alpha", args.alpha)
    levels = _levels(args.levels) if args.convergence else None
    store.check_writable(args.out)
    return {"model": model, "scheme": scheme, "study": study, "method": method, "levels": levels}


def run(args, progress: bool) -> CommandOutput:
    from dyntools import sde_studies
    from dyntools.data import sparse_regression
    from dyntools.dynamics import sde_models
    from dyntools.dynamics.sde import solve
    from dyntools.models.quadratic_toy import QuadraticToy

    v = _validate(args)                                   # everything checked before any work
    model = v["model"]
    if args.convergence:
        j0, j1 = v["levels"]
        result = sde_studies.convergence_study(paths=args.paths, levels=(j0, j1), fine=max(j1 + 2, 10),
                                               seed=args.seed)
    elif model == "diag-net":
        data = sparse_regression(n=args.n, d=args.d, r=args.r, seed=args.seed)
        tau = 20.0 if args.t1 is None else args.t1
        if v["study"] == "sgd-vs-sde":
            etas = [args.eta / 2**k for k in range(4)]
            result = sde_studies.sgd_vs_sde(data, etas=etas, delta=args.delta, tau=tau, paths=args.paths,
                                            substeps=max(args.substeps, 8), alpha=args.alpha, seed=args.seed,
                                            records=min(args.records, 81))
        elif v["study"] == "sparsity":
            result = sde_studies.sparsity_mechanism(data, eta=args.eta, delta=args.delta, tau=tau, h=args.h,
                                                    paths=args.paths, alpha=args.alpha, seed=args.seed,
                                                    records=args.records, eta_after=args.eta / 100)
        else:
            result = sde_models.simulate_diag_net(data, eta=args.eta, tau=tau, h=args.h,
                                                  delta=sde_models.label_noise_std(args.delta, args.n),
                                                  method=v["method"], paths=args.paths, init="balanced",
                                                  alpha=args.alpha, seed=args.seed, records=args.records,
                                                  bound=args.bound, substeps=args.substeps)
    else:
        if model == "gbm":
            sde = sde_models.gbm(0.5 if args.mu is None else args.mu, args.sigma)
            x0 = 1.0 if args.x0 is None else args.x0
        elif model == "ou":
            sde = sde_models.ou(args.theta, 0.0 if args.mu is None else args.mu, args.sigma)
            x0 = 1.0 if args.x0 is None else args.x0
        else:
            toy = QuadraticToy.uniform(n=args.n, seed=args.seed)
            sde = sde_models.toy_sde(toy, args.eta, sde_models.label_noise_std(args.delta, toy.x.size,
                                                                               sde_models.TOY_SCALE))
            x0 = 0.5 if args.x0 is None else args.x0
        result = solve(sde, x0, t1=1.0 if args.t1 is None else args.t1, h=1e-3 if args.h is None else args.h,
                       paths=args.paths, scheme=v["scheme"], seed=args.seed, records=args.records,
                       substeps=args.substeps, bound=args.bound)
        result.config["x0"] = x0
    store.save(result, args.out)
    summary = {"out": str(args.out), "kind": result.kind, "status": result.status, "message": result.message,
               **result.summary, "seconds": result.timings.get("simulate")}
    human = {"kind": result.kind, "status": result.status, "message": result.message,
             "seconds": result.timings.get("simulate"), "wrote": str(args.out)}
    return CommandOutput(summary, key_values(human))
