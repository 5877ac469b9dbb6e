"""``dyntools sweep adamw-grid``: (learning rate × weight decay) heatmaps, coupled vs decoupled decay."""

from __future__ import annotations

from dyntools import sweep, validation
from dyntools.commands import CommandOutput, parse_list
from dyntools.tables import key_values, text_table

HELP = "spiral MLP heatmaps over (lr, weight decay): Adam+L2 vs AdamW, SGD+L2 vs SGDW (seed 001)"
EXAMPLE = ("dyntools sweep adamw-grid --optimizers adam,adamw --lr-grid 1e-4:1e-1:16 --wd-grid 1e-6:1:24 "
           "--dask-local 2 --out runs/adamw-grid")


def add_arguments(p) -> None:
    p.add_argument("--optimizers", default="adam,adamw",
                   help="comma-separated optimizers, e.g. adam,adamw or sgd,sgdw (default adam,adamw)")
    p.add_argument("--lr-grid", default=None, metavar="LOW:HIGH:N",
                   help="log-spaced learning rates (default per optimizer: Adam-like 1e-4:1e-1:16, "
                        "SGD/SGDW/AdaGrad 1e-3:1:16)")
    p.add_argument("--wd-grid", default="1e-6:1:24", metavar="LOW:HIGH:N",
                   help="log-spaced weight decays (default 1e-6:1:24)")
    p.add_argument("--normalized-wd", action="store_true",
                   help="read the wd axis as λ_norm, λ = λ_norm √(b/(B·T)) (Loshchilov & Hutter)")
    p.add_argument("--dataset", default="spirals",
                   help="spirals (default) or digits (scikit-learn's bundled 8x8 digits, an optional extra)")
    p.add_argument("--n", type=int, default=1000, help="training points (default 1000)")
    p.add_argument("--n-val", type=int, default=1000, help="validation points (default 1000)")
    p.add_argument("--classes", type=int, default=2, help="number of spiral arms/classes (default 2)")
    p.add_argument("--turns", type=float, default=1.5, help="turns of each arm: difficulty (default 1.5)")
    p.add_argument("--noise", type=float, default=0.05, help="Gaussian noise std: difficulty (default 0.05)")
    p.add_argument("--hidden", default="32,32,32", help="hidden widths (default 32,32,32)")
    p.add_argument("--batch-size", type=int, default=64, help="minibatch size (default 64)")
    p.add_argument("--epochs", type=float, default=128, help="epochs (default 128 = 2000 steps at n=1000)")
    p.add_argument("--schedule", default="constant",
                   help="constant, cosine, warmup-cosine, sgdr or plateau (default constant)")
    p.add_argument("--plateau-factor", type=float, default=0.5,
                   help="schedule plateau: lr multiplier when the training loss stalls, in (0, 1) (default 0.5)")
    p.add_argument("--plateau-patience", type=int, default=5,
                   help="schedule plateau: epochs without improvement before reducing (default 5)")
    p.add_argument("--momentum", type=float, default=0.9, help="momentum of sgd/sgdw (default 0.9)")
    p.add_argument("--threshold", type=float, default=0.9,
                   help="'good cell' validation accuracy (default 0.9)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--dask-local", type=int, default=None, metavar="N",
                   help="run on a Dask LocalCluster of N worker processes")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run on an existing Dask cluster")
    p.add_argument("--connect-timeout", type=float, default=10.0,
                   help="seconds to reach --scheduler (default 10)")


def build_config(args):
    from simulations.adamw_heatmaps import GridConfig, parse_grid

    optimizers = tuple(o.strip() for o in args.optimizers.split(",") if o.strip())
    if not optimizers:
        raise ValueError(f"Invalid --optimizers: {args.optimizers!r}")
    lr = parse_grid("lr-grid", args.lr_grid) if args.lr_grid else (None, None, 16)
    wd = parse_grid("wd-grid", args.wd_grid)
    return GridConfig(optimizers=optimizers, lr_range=None if lr[0] is None else lr[:2], n_lr=lr[2],
                      wd_range=wd[:2], n_wd=wd[2], n=args.n,
                      n_val=args.n_val, classes=args.classes, turns=args.turns, noise=args.noise,
                      hidden=parse_list("--hidden", args.hidden, int, minimum=1),
                      batch_size=args.batch_size, epochs=args.epochs,
                      schedule=args.schedule, momentum=args.momentum, normalized_wd=args.normalized_wd,
                      threshold=args.threshold, dataset=args.dataset, plateau_factor=args.plateau_factor,
                      plateau_patience=args.plateau_patience)


def run(args, progress: bool) -> CommandOutput:
    from simulations.adamw_heatmaps import run_grid

    validation.seed(args.seed)
    cfg = build_config(args)                                   # everything checked before writing
    sweep.check_backend(args.workers, args.dask_local, args.scheduler)
    validation.positive("--connect-timeout", args.connect_timeout)
    sweep.check_out(args.out)
    result = run_grid(cfg, args.out, seed=args.seed, workers=args.workers, dask_local=args.dask_local,
                      scheduler=args.scheduler, connect_timeout=args.connect_timeout, progress=progress)
    s = result.summary
    rows = [{"optimizer": k, "best val acc": v["best_val_acc"], "at lr": v["best_lr"], "at wd": v["best_wd"],
             f"cells >= {cfg.threshold:g}": v["cells_above_threshold"],
             "fraction": v["fraction_above_threshold"], "diverged": v["diverged_cells"]}
            for k, v in s["optimizers"].items()]
    table = "\n".join([text_table(rows), "", key_values({"message": result.message,
                                                          "steps per cell": cfg.steps,
                                                          "seconds": result.timings["sweep"],
                                                          "wrote": str(args.out)})])
    summary = {"out": str(args.out), "status": result.status, "message": result.message, **s,
               "seconds": result.timings["sweep"]}
    return CommandOutput(summary, table, written=[str(args.out)])
