"""``dyntools simulate diag-net``: diagonal linear networks trained by GD/SGD over seeds and schedules."""

from __future__ import annotations

import numpy as np

from dyntools import store, validation
from dyntools.commands import CommandOutput
from dyntools.tables import text_table

HELP = ("diagonal linear network h(x) = <u*v, x> on sparse regression (seed 004): "
        "GD/SGD over schedules and seeds")
EXAMPLE = "dyntools simulate diag-net --preset paper-sgd --seeds 16 --out runs/diag-sgd"


def parse_floats(name: str, text: str | None):
    """``"0.1,0.3,0.5"`` → (0.1, 0.3, 0.5); ``""`` → ()."""
    if text is None:
        return None
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"Invalid {name}: {text!r} (expected comma-separated numbers)") from None


def add_arguments(p) -> None:
    from simulations.diag_nets import DECAY_MODES, PRESETS, SCHEDULE_NAMES

    p.add_argument("--preset", default="paper-sgd", help=f"parameter set: {' | '.join(PRESETS)} (default "
                   "paper-sgd); every option below overrides it")
    g = p.add_argument_group("data (sparse regression: X ~ N(0, I), r-sparse non-negative unit-norm beta*)")
    g.add_argument("--n", type=int, help="training samples (paper-sgd 80, paper-gd 40)")
    g.add_argument("--d", type=int, help="dimension (paper-sgd 200, paper-gd 100)")
    g.add_argument("--r", type=int, help="sparsity of beta* (20)")
    g.add_argument("--n-test", type=int, help="test samples (1000)")
    g.add_argument("--noise", type=float, help="std of the Gaussian label noise of the training set (0)")
    g.add_argument("--data", default=None, metavar="FILE.npz",
                   help="a given data set (X, y, X_test, y_test, optional beta_star) for every seed")
    g = p.add_argument_group("training")
    g.add_argument("--method", choices=("gd", "sgd", "sgd-noreplace"),
                   help="full batch, or batches drawn with / "
                   "without replacement (epoch shuffling)")
    g.add_argument("--batch", type=int, help="SGD batch size (1, the paper's)")
    g.add_argument("--label-noise", type=float,
                   help="label-noise SGD: fresh N(0, delta^2) added to each label (0)")
    g.add_argument("--momentum", type=float, help="heavy-ball momentum in [0, 1) (0)")
    g.add_argument("--weight-decay", type=float, help="L2 weight decay >= 0 (0)")
    g.add_argument("--steps", type=int, help="iterations (100000)")
    g.add_argument("--seeds", type=int, help="independent seeds (data set + SGD stream) per schedule (16)")
    g = p.add_argument_group("step-size schedules")
    g.add_argument("--schedules", default=None,
                   help=f"comma-separated runs among {', '.join(SCHEDULE_NAMES)} "
                   "(default small,large)")
    g.add_argument("--eta-small", type=float, help="small constant step (paper-sgd 0.25, paper-gd 2.0)")
    g.add_argument("--eta-large", type=float, help="large initial step (paper-sgd 0.282, paper-gd 3.51)")
    g.add_argument("--decay-at", default=None, metavar="FRACS",
                   help="decay points as fractions of the run (0.1,0.3,0.5)")
    g.add_argument("--decay-factors", default=None, metavar="FACTORS",
                   help="step divided by these (4.8,3.4,1.5)")
    g.add_argument("--decay-mode", choices=DECAY_MODES, help="separate: one large-step run per decay point "
                   "(the paper's); cumulative: one run with every decay")
    g.add_argument("--warmup", type=int, help="linear warm-up steps of the large-step runs (0)")
    g = p.add_argument_group("initialization")
    g.add_argument("--init", choices=("paper", "gaussian"),
                   help="paper: u0 = alpha*1, v0 = 0; gaussian: N(0, s^2)")
    g.add_argument("--alpha", type=float, help="scale of the paper's init (0.1)")
    g.add_argument("--init-scale", type=float, help="std of the gaussian init (0.1)")
    g.add_argument("--init-file", default=None, metavar="FILE.npz",
                   help="given initial point: an .npz with arrays u0 and v0 of length d (overrides --init)")
    g.add_argument("--indices", default=None, metavar="FILE",
                   help="replay: sample indices (.npy or text), shape (steps·batch,) shared or (seeds·runs, …)")
    g = p.add_argument_group("recording and metrics")
    g.add_argument("--records", type=int, help="about this many recorded steps (350)")
    g.add_argument("--grid", choices=("log", "linear"), help="recording grid (log, with a dense start)")
    g.add_argument("--dense-start", type=int, help="record every step up to this one (10)")
    g.add_argument("--rank-threshold", type=float, default=None,
                   help="relative singular-value threshold of the Jacobian rank (1e-4)")
    g.add_argument("--l0-threshold", type=float, default=None, help="|beta_j| above this counts in l0 (1e-3)")
    g.add_argument("--bound", type=float, default=None,
                   help="divergence when |u|_1 + |v|_1 exceeds this (1e6)")
    g.add_argument("--sharpness-iters", type=int, default=None,
                   help="power iterations per recording for lambda_max of the Hessian (1000; 0 skips it)")
    g.add_argument("--keep-params", action="store_true", help="also save u and v at every recording")


def load_data(path):
    """A user's data set from an ``.npz`` with X, y, X_test, y_test (and optionally beta_star)."""
    from dyntools.data import RegressionData
    from dyntools.dynamics.diag_net_sgd import check_data

    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"Invalid --data: cannot read {path} ({exc})") from None
    missing = [k for k in ("X", "y", "X_test", "y_test") if k not in arrays]
    if missing:
        raise ValueError(f"Invalid --data: {path} lacks {', '.join(missing)}")
    check_data(arrays["X"], arrays["y"], "X", "y")
    check_data(arrays["X_test"], arrays["y_test"], "X_test", "y_test")
    d = arrays["X"].shape[1]
    if arrays["X_test"].shape[1] != d:
        raise ValueError(f"Invalid X_test: {arrays['X_test'].shape[1]} columns, X has {d}")
    beta = arrays.get("beta_star", np.zeros(d))
    beta = validation.finite_array("beta_star", beta, ndim=1)
    if beta.shape[0] != d:
        raise ValueError(f"Invalid beta_star: length {beta.shape[0]} does not match d = {d}")
    return RegressionData(*(np.asarray(arrays[k], dtype=np.float64) for k in ("X", "y", "X_test", "y_test")),
                          beta)


def _overrides(args) -> dict:
    """The options the user gave, checked (the library re-checks on use)."""
    from simulations import diag_nets

    out = {"n": args.n, "d": args.d, "r": args.r, "n_test": args.n_test, "noise": args.noise,
           "method": args.method, "batch": args.batch, "label_noise": args.label_noise,
           "momentum": args.momentum, "weight_decay": args.weight_decay, "steps": args.steps,
           "seeds": args.seeds, "eta_small": args.eta_small, "eta_large": args.eta_large,
           "decay_at": parse_floats("--decay-at", args.decay_at),
           "decay_factors": parse_floats("--decay-factors", args.decay_factors),
           "decay_mode": args.decay_mode, "warmup": args.warmup, "init": args.init, "alpha": args.alpha,
           "init_scale": args.init_scale, "records": args.records, "grid": args.grid,
           "dense_start": args.dense_start, "rank_threshold": args.rank_threshold,
           "l0_threshold": args.l0_threshold, "bound": args.bound, "keep_params": args.keep_params or None,
           "sharpness_iters": args.sharpness_iters}
    if args.schedules is not None:
        out["schedules"] = tuple(s.strip() for s in args.schedules.split(",") if s.strip())
    p = diag_nets.resolve(args.preset, **out)
    for k in ("n", "d", "r", "n_test", "steps", "seeds", "batch"):
        validation.count(k.replace("_", "-"), p[k])
    validation.count("records", p["records"], minimum=2)
    validation.count("dense-start", p["dense_start"], minimum=0)
    if p["r"] > p["d"]:
        raise ValueError(f"Invalid r: {p['r']} (must be <= d = {p['d']})")
    validation.non_negative("noise", p["noise"])
    validation.non_negative("label-noise", p["label_noise"])
    validation.in_interval("momentum", p["momentum"], 0.0, 1.0)
    validation.non_negative("weight-decay", p["weight_decay"])
    if p["method"] != "gd" and p["batch"] > p["n"] and args.data is None:
        raise ValueError(f"Invalid batch: {p['batch']} (must be <= n = {p['n']})")
    if args.rank_threshold is not None:
        validation.in_interval("rank-threshold", args.rank_threshold, 1e-6, 1.0, closed_high=True)
    if args.l0_threshold is not None:
        validation.non_negative("l0-threshold", args.l0_threshold)
    if args.bound is not None:
        validation.positive("bound", args.bound)
    if args.sharpness_iters is not None:
        validation.count("sharpness-iters", args.sharpness_iters, minimum=0)
    diag_nets.build_runs(p["eta_small"], p["eta_large"], p["decay_at"], p["decay_factors"], p["decay_mode"],
                         p["warmup"], p["schedules"])
    if args.data is not None:
        out["data"] = load_data(args.data)
    d = out["data"].X.shape[1] if args.data is not None else p["d"]
    if args.init_file is not None:
        out["u0"], out["v0"] = load_init(args.init_file, d)
    if args.indices is not None:
        out["indices"] = load_indices(args.indices)
    return out


def load_init(path, d: int):
    """``u0`` and ``v0`` (length ``d`` each) from an ``.npz``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"Invalid --init-file: cannot read {path} ({exc})") from None
    if "u0" not in arrays or "v0" not in arrays:
        raise ValueError(f"Invalid --init-file: {path} needs arrays u0 and v0")
    u0 = validation.finite_array("u0", arrays["u0"], ndim=1)
    v0 = validation.finite_array("v0", arrays["v0"], ndim=1)
    if u0.shape[0] != d or v0.shape[0] != d:
        raise ValueError(f"Invalid --init-file: u0 and v0 must have length d = {d}")
    return u0, v0


def load_indices(path) -> np.ndarray:
    """Replayed sample indices from ``.npy`` or a text file (integers)."""
    try:
        arr = np.load(path, allow_pickle=False) if str(path).endswith(".npy") else np.loadtxt(path, ndmin=1)
    except (OSError, ValueError) as exc:
        raise ValueError(f"Invalid --indices: cannot read {path} ({exc})") from None
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"Invalid --indices: {path} must hold integers")
    return arr.astype(np.int64)


def run(args, progress: bool) -> CommandOutput:
    from simulations import diag_nets

    validation.seed(args.seed)
    overrides = _overrides(args)                 # everything checked before any writing
    store.check_writable(args.out)
    result = diag_nets.run_experiment(args.preset, seed=args.seed, progress=progress, **overrides)
    store.save(result, args.out)
    summary = {"out": str(args.out), "status": result.status, "message": result.message,
               "preset": args.preset, "runs": result.summary["runs"], "seconds": result.timings}
    table = "\n".join([f"status: {result.status}", f"message: {result.message}", "",
                       text_table(diag_nets.table_rows(result)), "", f"wrote {args.out}"])
    return CommandOutput(summary, table)
