"""Regenerate ``tests/goldens/result_samples.json``: the ``config`` and ``summary`` of one small real result of
every kind ``dyntools plot`` draws (the kinds of ``dyntools.plugins.figures()``), as the experiments write them.

    python tests/goldens/make_result_samples.py        # from the repository root, ~1–2 min on 2 cores
    python tests/goldens/make_result_samples.py adamw-grid adamw-schedules    # only these kinds, merged in

The fuzz suite damages these samples field by field (``tests/fuzz_cases.py``: :func:`schema_damages`) and
``tests/test_result_schema.py`` checks that each validates against its kind's declared schema. The argv
below are the smallest runs that produce each kind; regenerate after changing what a kind writes.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

NET = ["--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size", "20", "--workers", "1"]
VOR = ["--n", "200", "--n-test", "50", "--steps", "20", "--batch", "16", "--frames", "2", "--n-centers", "16"]
DIAG = ["--n", "20", "--d", "30", "--r", "3", "--n-test", "50", "--steps", "50", "--seeds", "2", "--records", "10",
        "--sharpness-iters", "3"]

#: kind → the command line of a small run that writes it
RUNS: dict[str, list[str]] = {
    "symbolic-model": ["simulate", "model", "--steps", "50", "--records", "5"],
    "sde": ["simulate", "sde", "--model", "gbm", "--paths", "8", "--records", "11"],
    "sde-convergence": ["simulate", "sde", "--convergence", "--levels", "2:4", "--paths", "16"],
    "sde-diag-net": ["simulate", "sde", "--model", "diag-net", "--method", "sgd", "--n", "10", "--d", "20", "--r", "3",
                     "--t1", "2", "--paths", "4", "--records", "11"],
    "sde-sgd-vs-sde": ["simulate", "sde", "--model", "diag-net", "--study", "sgd-vs-sde", "--n", "10", "--d", "20",
                       "--r", "3", "--t1", "1", "--paths", "2", "--records", "5"],
    "sde-sparsity": ["simulate", "sde", "--model", "diag-net", "--study", "sparsity", "--n", "10", "--d", "20",
                     "--r", "3", "--t1", "1", "--paths", "2", "--records", "5"],
    "stabilization": ["simulate", "stabilization", "--steps", "200", "--paths", "4", "--records", "10"],
    "stabilization-phase": ["simulate", "stabilization", "--eta-grid", "0.5:1.5:3", "--steps", "200", "--paths", "4",
                            "--records", "10"],
    "relu": ["simulate", "relu", "--setting", "1d", "--seeds", "2", "--log10-steps", "2.5", "--records", "8"],
    "diag-net": ["simulate", "diag-net", *DIAG],
    "deep-nets": ["simulate", "deep-nets", "--width", "8", "--depth", "2", "--steps", "40", "--seeds", "1",
                  "--records", "4", "--sparsity-examples", "20"],
    "sgd-vs-label-noise": ["simulate", "sgd-vs-label-noise", "--n", "10", "--d", "20", "--r", "2", "--steps", "200",
                           "--seeds", "2", "--records", "6"],
    "trajectories": ["simulate", "trajectories", "--surface", "saddle", "--optimizers", "sgd,adam", "--steps", "50",
                     "--frames", "3", "--start=-2,0.5"],
    "universal-approximation": ["simulate", "universal-approximation", "--max-width-1d", "4", "--max-width-2d", "4",
                                "--seeds", "1"],
    "label-noise-band": ["simulate", "label-noise-band", "--etas", "0.01,0.02", "--deltas", "0.004,0.016", "--tau", "4",
                         "--records", "4", "--seeds", "2", "--n", "10", "--d", "20", "--r", "2"],
    "grokking": ["simulate", "grokking", "--p", "5", "--steps", "20", "--seeds", "2", "--records", "4", "--width", "8",
                 "--phase-fractions", "0.6", "--phase-seeds", "1", "--workers", "1"],
    "grokking-sweep": ["sweep", "grokking", "--p", "5", "--steps", "20", "--seeds", "2", "--records", "4", "--width",
                       "8", "--decays", "1", "--fractions", "0.6", "--workers", "1"],
    "voronoi": ["simulate", "voronoi", "--seeds", "2", *VOR],
    "voronoi-ladder": ["sweep", "voronoi-ladder", "--rungs", "exact,scale", "--decays", "l2", "--seeds", "1",
                       "--workers", "1", *VOR],
    "adamw-grid": ["sweep", "adamw-grid", "--optimizers", "adam", "--lr-grid", "1e-3:1e-2:2", "--wd-grid",
                   "1e-6:1e-5:1", "--epochs", "1", *NET],
    "adamw-budgets": ["sweep", "adamw-budgets", "--budgets", "1,2", "--lr-grid", "1e-2:1e-2:1", "--wd-grid",
                      "1e-4:1e-1:2", "--wd-norm-grid", "1e-3:1:2", "--replicates", "1", *NET],
    "adamw-schedules": ["sweep", "adamw-schedules", "--seeds", "1", "--epochs", "1", *NET],
    "adamw-difficulty": ["sweep", "adamw-difficulty", "--noises", "0.05", "--turns", "1,1.5", "--lr-grid",
                         "1e-3:1e-2:2", "--wd-grid", "1e-6:1e-5:1", "--replicates", "1", "--epochs", "1", *NET],
}


def train_sample(tmp: str) -> dict:
    """The ``"train"`` kind has no command of its own: a small ``dt.train`` run saved with ``store.save``."""
    import numpy as np

    import dyntools as dt
    from dyntools import store
    from dyntools.models.least_squares import LeastSquares

    class Data:
        X = np.random.default_rng(0).normal(size=(12, 3))
        y = X.sum(axis=1)

    res = dt.train(LeastSquares(3, reduction="mean"), Data(), [dt.sgd(lr=0.01), dt.adamw(lr=0.01)], steps=20,
                   batch=4, seeds=2, records=6)
    out = store.save(res, Path(tmp) / "train")
    meta = json.loads((Path(out) / store.META_FILE).read_text())
    return {"argv": ["python: dt.train(LeastSquares(3), ..., [sgd, adamw], steps=20, seeds=2)"],
            "config": meta["config"], "summary": meta.get("summary", {})}


def main(kinds: list[str]) -> int:
    from dyntools import cli, plugins, store

    path = Path(__file__).with_name("result_samples.json")
    unknown = sorted(set(kinds) - set(RUNS) - {"train"})
    if unknown:
        print(f"unknown kinds {unknown} (one of {', '.join(RUNS)})", file=sys.stderr)
        return 2
    samples = json.loads(path.read_text(encoding="utf-8")) if kinds else {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, argv in RUNS.items():
            if kinds and kind not in kinds:
                continue
            out = Path(tmp) / kind
            code = cli.main([*argv, "--out", str(out), "--json"])
            if code != 0:
                print(f"{kind}: exit {code}", file=sys.stderr)
                return 1
            meta = json.loads((out / store.META_FILE).read_text())
            assert meta["kind"] == kind, (kind, meta["kind"])
            samples[kind] = {"argv": argv, "config": meta["config"], "summary": meta.get("summary", {})}
        if not kinds or "train" in kinds:
            samples["train"] = train_sample(tmp)
    missing = set(plugins.figures()) - set(samples)
    assert not missing, f"no sample run for {sorted(missing)}"
    path.write_text(json.dumps(samples, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(samples)} kinds)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
