"""``dyntools simulate stabilization``: SGD/GD on the quadratic toy, or a phase diagram over η."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dyntools import store, validation
from dyntools.commands import CommandOutput, parse_list
from dyntools.tables import key_values

HELP = "quadratic-parametrization toy of seed 004: loss stabilization of large-step SGD"
EXAMPLE = ("dyntools simulate stabilization --eta 1.08 --x-min 1 --x-max 1.05 --steps 100000 "
           "--paths 64 --seed 0 --out runs/stab")


def parse_grid(text: str) -> np.ndarray:
    """``START:STOP:N`` → N values, geometric when ``--grid-scale log`` (checked by the caller)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"Invalid --eta-grid: {text!r} (expected START:STOP:N, e.g. 0.5:1.5:41)")
    try:
        start, stop, n = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ValueError(f"Invalid --eta-grid: {text!r} (expected START:STOP:N with numbers)") from None
    validation.positive("--eta-grid START", start)
    validation.positive("--eta-grid STOP", stop)
    validation.count("--eta-grid N", n, minimum=2)
    if stop <= start:
        raise ValueError(f"Invalid --eta-grid: STOP {stop} must exceed START {start}")
    return np.linspace(start, stop, n)


def add_arguments(p) -> None:
    p.add_argument("--eta", type=float, default=1.08, help="step size η (default 1.08)")
    p.add_argument("--eta-grid", default=None, metavar="START:STOP:N",
                   help="phase diagram over N step sizes instead of one run")
    p.add_argument("--theta-star", type=float, default=1.0, help="θ* > 0 (default 1)")
    p.add_argument("--x-min", type=float, default=None, help="lower end of the data support (> 0; default 1)")
    p.add_argument("--x-max", type=float, default=None, help="upper end of the data support (default 1.05)")
    p.add_argument("--n", type=int, default=1000, help="number of data points drawn uniformly (default 1000)")
    p.add_argument("--samples", type=Path, default=None, metavar="FILE",
                   help="use these x samples (.npy or whitespace-separated text) instead of uniform data; "
                        "the support is [--x-min, --x-max] if given, else [min x, max x]")
    p.add_argument("--decay-at", default=None, metavar="F1,F2,…",
                   help="fractions of the run after which η is divided (with --decay-by), e.g. 0.1,0.3,0.5")
    p.add_argument("--decay-by", default=None, metavar="D1,D2,…", help="the division factors, e.g. 4.8,3.4,1.5")
    p.add_argument("--indices", type=Path, default=None, metavar="FILE",
                   help="replay: .npy of sample indices, shape (steps,) or (paths, steps)")
    p.add_argument("--theta0", type=float, default=0.5, help="initial θ_0 in units of θ* (default 0.5)")
    p.add_argument("--steps", type=int, default=100_000, help="number of updates (default 1e5)")
    p.add_argument("--paths", type=int, default=64, help="independent SGD paths (default 64)")
    p.add_argument("--method", choices=("sgd", "gd"), default="sgd", help="SGD (default) or full-batch GD")
    p.add_argument("--records", type=int, default=200, help="recorded steps per path (default 200)")
    p.add_argument("--grid", choices=("log", "linear"), default="log", help="recording grid (default log)")


def _schedule(args):
    from dyntools.optim.schedules import Constant, PiecewiseDecay

    if (args.decay_at is None) != (args.decay_by is None):
        raise ValueError("Invalid --decay-at/--decay-by: give both or neither")
    if args.decay_at is None:
        return Constant()
    return PiecewiseDecay(parse_list("--decay-at", args.decay_at), parse_list("--decay-by", args.decay_by))


def _load_array(name: str, path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False) if path.suffix == ".npy" else np.loadtxt(path, ndmin=1)
    except (OSError, ValueError) as exc:
        raise ValueError(f"Invalid {name}: cannot read {path} ({exc})") from None


def _toy(args):
    from dyntools.models.quadratic_toy import QuadraticToy

    if args.samples is not None:
        x = _load_array("--samples", args.samples)
        return QuadraticToy.from_samples(x, theta_star=args.theta_star, x_min=args.x_min, x_max=args.x_max)
    return QuadraticToy.uniform(theta_star=args.theta_star, x_min=1.0 if args.x_min is None else args.x_min,
                                x_max=1.05 if args.x_max is None else args.x_max, n=args.n, seed=args.seed)


def _validate(args):
    validation.positive("eta", args.eta)
    validation.count("steps", args.steps)
    validation.count("paths", args.paths)
    validation.count("records", args.records, minimum=2)
    validation.positive("theta0", args.theta0)
    validation.seed(args.seed)
    grid = parse_grid(args.eta_grid) if args.eta_grid else None
    toy = _toy(args)
    schedule = _schedule(args)
    schedule.multipliers(args.steps)
    indices = _load_array("--indices", args.indices) if args.indices is not None else None
    if indices is not None and not np.issubdtype(indices.dtype, np.integer):
        if not np.all(np.isfinite(indices)) or np.any(indices != np.round(indices)):
            raise ValueError(f"Invalid --indices: {args.indices} must hold integers")
        indices = indices.astype(np.int64)
    if grid is not None and indices is not None:
        raise ValueError("Invalid --indices: replay applies to a single run, not to --eta-grid")
    store.check_writable(args.out)
    return toy, grid, schedule, indices


def run(args, progress: bool) -> CommandOutput:
    from dyntools.dynamics.toy_sgd import simulate_toy
    from dyntools.engine import record as recording
    from dyntools.stabilization import check_proposition, phase_diagram

    toy, grid, schedule, indices = _validate(args)     # everything checked before any writing
    theta0 = args.theta0 * toy.theta_star
    if grid is not None:
        result = phase_diagram(toy, grid, steps=args.steps, paths=args.paths, theta0=theta0,
                               seed=args.seed, method=args.method, progress=progress)
        store.save(result, args.out)
        summary = {"out": str(args.out), "status": result.status, "message": result.message,
                   **result.summary, "etas": grid.tolist(),
                   "stationary_loss": result["stationary_loss"].tolist(),
                   "diverged_fraction": result["diverged"].tolist()}
        return CommandOutput(summary, key_values({"status": result.status, "message": result.message,
                                                  "wrote": str(args.out)}))
    record_steps = recording.with_dense_tail(recording.make_grid(args.grid, args.steps, args.records), args.steps)
    result = simulate_toy(toy, args.eta, steps=args.steps, paths=args.paths, theta0=theta0, seed=args.seed,
                          method=args.method, record_steps=record_steps, chunks=50, progress=progress,
                          schedule=schedule, indices=indices)
    check = check_proposition(result, toy)
    result.summary["proposition"] = check
    store.save(result, args.out)
    summary = {"out": str(args.out), "status": result.status, "message": result.message,
               **{k: v for k, v in result.summary.items() if k != "proposition"}, "proposition": check,
               "seconds": result.timings.get("simulate")}
    human = {"status": result.status, "message": result.message, "regime": check["regime"],
             "proposition": check["statement"], "diverged paths": check["diverged_paths"],
             "band fraction (all steps)": check["band_fraction_all_steps"],
             "bounce fraction": check["bounce_fraction"], "entry time quantiles": check["entry_time_quantiles"],
             "wrote": str(args.out)}
    return CommandOutput(summary, key_values(human))
