"""Golden arrays of the numerical engine, captured through the ``dyntools`` CLI before the engine refactor.

Each case is a name and a ``dyntools`` argv (CLI only, so the cases survive internal moves of functions),
run in-process via ``dyntools.cli.main(argv + ["--out", DIR])`` at small sizes. Every array of every
result directory written (``arrays.npz``; for sweeps also ``cells/cell_NNNNN.npz``) is stored in
``<case>.npz`` under the key ``<result dir relative to DIR>/<array name>`` (``./<name>`` for the top
directory, ``cells/cell_00000/<name>`` for sweep cells). ``cases.json`` holds the argv of each case and the
status of each result directory / cell. ``tests/test_engine_goldens.py`` re-runs the cases and compares.

Regenerate (only on purpose, e.g. never to paper over a refactor's differences)::

    python tests/goldens/engine/make_engine_goldens.py            # every case
    python tests/goldens/engine/make_engine_goldens.py stab-sgd   # some cases

Input files (``--samples``, ``--indices``, ``--data``, ``--init-file``) are generated from fixed formulas by
:func:`write_inputs` into the run's scratch directory; ``{inputs}`` in an argv is replaced by that directory.

Coverage of ``dyntools reproduce --quick`` (its catalogue: ``dyntools.plugins.catalogue()``):

* ``proofs`` — symbolic, no arrays: not an engine computation (``dyntools prove``), not covered.
* ``loss-stabilization`` (simulations/loss_stabilization.py): 1. ``simulate_toy`` SGD on the log grid with
  dense tail + ``check_proposition`` -> ``stab-sgd``; 2. ``phase_diagram`` -> ``stab-eta-grid``;
  3. ``simulate_toy(method="gd")`` at 0.95/1.05/1.5 x ``toy.gd_step_limit()`` -> ``stab-gd-below``,
  ``stab-gd-above``, ``stab-gd-far`` (the limit's products hard-coded as exact reprs; the 0.5 factor is
  left out); 4. the empty-interval message: no arrays; 5. ``classify_gd`` on a quadratic ``||X b - y||^2``:
  NOT reachable from the CLI (no command runs it).
* ``relu-nets`` (simulations/relu_nets.py ``simulate`` for 1d/teacher2/teacher3): ``relu-1d``,
  ``relu-teacher2``, ``relu-teacher3`` (fewer steps/seeds than quick), ``relu-gd`` (``--method gd``),
  ``relu-numpy`` (the NumPy twin kernel, ``--kernel numpy``).
* ``adamw-heatmaps`` (``sweep adamw-grid``: dyntools/heatmap_grid.py ``run_grid``): ``adamw-adam``, ``adamw-sgd``,
  ``adamw-plateau``, ``adamw-cosine`` (tiny grids; ``--workers 1`` keeps cells in-process).
* ``sde-orders`` (``convergence_study(levels=(4, 8), fine=10)``): ``sde-ou-convergence`` (same levels and
  fine level; 400 paths instead of 1500).
* ``sde-label-noise``: ``sgd_vs_sde`` -> ``sde-sgd-vs-sde`` (exactly the quick arguments: etas 0.1/2^k,
  SDE intensity 0.05, tau 5, 32 paths, substeps 8, records 41); ``sparsity_mechanism`` -> ``sde-sparsity`` (the
  quick arguments: eta 0.1, intensity 0.05, tau 100, eta_after = eta/100 = 0.001, records 101; 2 paths instead of
  4). The SDE cases were captured with ``--delta`` = the intensity; the option is now ``--label-noise`` = the
  label-noise standard deviation δ = n√δ̃/scale, passed as the exact ``repr`` of the value the old code computed
  (n = 40: 40·√0.05 = 8.94427190999916; the toy, scale ½: 40·√1e-6/0.5 = 0.08), so the runs are bitwise the same.
* ``diag-nets``: ``run_experiment("paper-sgd"/"paper-gd")`` -> ``dn-paper-sgd``, ``dn-paper-gd`` (fewer
  steps/seeds/records, fewer power iterations); ``step_scan`` -> ``dn-scan-c0.6`` (the scan's run at scale
  0.6 is the preset with ``eta_small = 0.25*0.6``, ``eta_large = 0.282*0.6`` and ``sharpness_iters = 0``;
  the products are passed as their exact ``repr``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

_ADAMW_TINY = ["--wd-grid", "1e-4:1e-1:2", "--n", "160", "--n-val", "160", "--hidden", "8,8,8",
               "--batch-size", "32", "--workers", "1"]
_DN_SMALL = ["--n-test", "100", "--records", "30", "--sharpness-iters", "30"]

#: (name, argv). ``{inputs}`` is replaced by the directory written by :func:`write_inputs`.
#: label-noise std δ = 40·√0.05 (exact repr) of the SDE cases captured with the intensity --delta 0.05
_DN_NOISE = "8.94427190999916"

CASES: list[tuple[str, list[str]]] = [
    # --- loss stabilization (README + catalogue loss-stabilization 1-3)
    ("stab-sgd", ["simulate", "stabilization", "--eta", "1.08", "--x-min", "1", "--x-max", "1.05",
                  "--steps", "3000", "--paths", "8", "--records", "40"]),
    ("stab-eta-grid", ["simulate", "stabilization", "--eta-grid", "0.6:2.6:9", "--steps", "1000",
                       "--paths", "4"]),
    ("stab-replay", ["simulate", "stabilization", "--samples", "{inputs}/x.npy", "--indices", "{inputs}/idx.npy",
                     "--decay-at", "0.5", "--decay-by", "2", "--steps", "1500", "--paths", "2", "--records", "30"]),
    # GD at 0.95 / 1.05 / 1.5 x toy.gd_step_limit() of the default toy (seed 0), as in the catalogue; the
    # products are written as their exact repr so that the CLI runs the same etas.
    ("stab-gd-below", ["simulate", "stabilization", "--method", "gd", "--eta", "0.9035781939022136",
                       "--steps", "5000", "--paths", "1", "--records", "30"]),
    ("stab-gd-above", ["simulate", "stabilization", "--method", "gd", "--eta", "0.9986916879971834",
                       "--steps", "5000", "--paths", "1", "--records", "30", "--grid", "linear"]),
    ("stab-gd-far", ["simulate", "stabilization", "--method", "gd", "--eta", "1.426702411424548",
                     "--steps", "5000", "--paths", "1", "--records", "30"]),
    # --- ReLU networks (README + catalogue relu-nets)
    ("relu-1d", ["simulate", "relu", "--setting", "1d", "--seeds", "2", "--log10-steps", "3.3", "--records", "15"]),
    ("relu-teacher2", ["simulate", "relu", "--setting", "teacher2", "--seeds", "2", "--log10-steps", "3",
                       "--records", "15"]),
    ("relu-teacher3", ["simulate", "relu", "--setting", "teacher3", "--eta-large", "0.04",
                       "--decays", "0.1:3.5,0.3:2.5,0.5:5", "--seeds", "2", "--log10-steps", "3", "--records", "15"]),
    ("relu-gd", ["simulate", "relu", "--setting", "teacher2", "--method", "gd", "--seeds", "1",
                 "--log10-steps", "2.5", "--records", "10"]),
    ("relu-numpy", ["simulate", "relu", "--setting", "teacher3", "--kernel", "numpy", "--seeds", "1",
                    "--log10-steps", "2.3", "--records", "10"]),
    # --- SDE engine (README + catalogue sde-orders, sde-label-noise)
    ("sde-gbm-milstein", ["simulate", "sde", "--model", "gbm", "--scheme", "milstein", "--h", "1e-2",
                          "--paths", "64", "--records", "21"]),
    ("sde-gbm-em-substeps", ["simulate", "sde", "--model", "gbm", "--h", "1e-2", "--substeps", "4",
                             "--paths", "32", "--records", "11"]),
    ("sde-ou-convergence", ["simulate", "sde", "--model", "ou", "--convergence", "--paths", "400",
                            "--levels", "4:8"]),
    ("sde-toy", ["simulate", "sde", "--model", "toy", "--eta", "0.5", "--label-noise", "0.08", "--x0", "0.3",
                 "--t1", "2", "--h", "0.01", "--paths", "16", "--records", "21"]),
    ("sde-dn-sgd", ["simulate", "sde", "--model", "diag-net", "--method", "sgd", "--eta", "0.1",
                    "--label-noise", _DN_NOISE, "--t1", "2", "--paths", "4", "--records", "11"]),
    ("sde-dn-sde", ["simulate", "sde", "--model", "diag-net", "--eta", "0.1", "--label-noise", _DN_NOISE, "--t1", "2",
                    "--paths", "4", "--records", "11"]),
    ("sde-sgd-vs-sde", ["simulate", "sde", "--model", "diag-net", "--study", "sgd-vs-sde", "--eta", "0.1",
                        "--label-noise", _DN_NOISE, "--t1", "5", "--paths", "32", "--records", "41"]),
    ("sde-sparsity", ["simulate", "sde", "--model", "diag-net", "--study", "sparsity", "--eta", "0.1",
                      "--label-noise", _DN_NOISE, "--t1", "100", "--paths", "2", "--records", "101"]),
    # --- diagonal linear networks (README + catalogue diag-nets)
    ("dn-paper-sgd", ["simulate", "diag-net", "--preset", "paper-sgd", "--steps", "2000", "--seeds", "3",
                      *_DN_SMALL]),
    ("dn-paper-gd", ["simulate", "diag-net", "--preset", "paper-gd", "--steps", "1000", "--seeds", "3",
                     *_DN_SMALL]),
    ("dn-options", ["simulate", "diag-net", "--method", "sgd-noreplace", "--batch", "8", "--label-noise", "0.1",
                    "--momentum", "0.9", "--weight-decay", "1e-4", "--schedules", "small,large",
                    "--decay-at", "0.2,0.6", "--decay-factors", "5,2", "--decay-mode", "cumulative",
                    "--warmup", "500", "--steps", "2000", "--seeds", "2", *_DN_SMALL]),
    ("dn-scan-c0.6", ["simulate", "diag-net", "--preset", "paper-sgd", "--eta-small", repr(0.25 * 0.6),
                      "--eta-large", repr(0.282 * 0.6), "--sharpness-iters", "0", "--steps", "2000",
                      "--seeds", "3", "--n-test", "100", "--records", "30"]),
    ("dn-replay", ["simulate", "diag-net", "--preset", "paper-sgd", "--data", "{inputs}/data.npz",
                   "--init-file", "{inputs}/init.npz", "--indices", "{inputs}/dn_idx.npy", "--steps", "600",
                   "--seeds", "1", "--schedules", "small,large-constant", "--keep-params", "--records", "20",
                   "--sharpness-iters", "20", "--init", "gaussian"]),
    # --- (lr, weight decay) sweeps (README + catalogue adamw-heatmaps)
    ("adamw-adam", ["sweep", "adamw-grid", "--optimizers", "adam,adamw", "--lr-grid", "1e-3:1e-1:2",
                    "--epochs", "3", *_ADAMW_TINY]),
    ("adamw-sgd", ["sweep", "adamw-grid", "--optimizers", "sgd,sgdw", "--lr-grid", "1e-2:1:2", "--turns", "2.5",
                   "--noise", "0.08", "--epochs", "3", *_ADAMW_TINY]),
    ("adamw-plateau", ["sweep", "adamw-grid", "--schedule", "plateau", "--plateau-factor", "0.3",
                       "--plateau-patience", "1", "--optimizers", "adam,adamw", "--lr-grid", "1e-2:1e-1:2",
                       "--epochs", "8", *_ADAMW_TINY]),
    ("adamw-cosine", ["sweep", "adamw-grid", "--schedule", "warmup-cosine", "--normalized-wd",
                      "--optimizers", "adamw,sgdw", "--lr-grid", "1e-3:1e-1:2", "--epochs", "3", *_ADAMW_TINY]),
]


def write_inputs(directory: Path) -> None:
    """Deterministic input files (fixed formulas, no random generator)."""
    directory.mkdir(parents=True, exist_ok=True)
    i = np.arange(200)
    x = 1.0 + 0.05 * ((i * 0.6180339887498949) % 1.0)            # samples in [1, 1.05)
    np.save(directory / "x.npy", x)
    np.save(directory / "idx.npy", ((np.arange(2 * 1500) * 7919) % 200).reshape(2, 1500).astype(np.int64))
    n, d, n_test = 20, 30, 40
    X = np.cos(0.37 * np.arange(n * d).reshape(n, d) + 0.11)
    X_test = np.sin(0.53 * np.arange(n_test * d).reshape(n_test, d) + 0.29)
    beta = np.zeros(d)
    beta[[1, 4, 9, 16, 25]] = 1.0 / np.sqrt(5.0)
    np.savez(directory / "data.npz", X=X, y=X @ beta, X_test=X_test, y_test=X_test @ beta, beta_star=beta)
    np.savez(directory / "init.npz", u0=0.1 + 0.01 * np.cos(np.arange(d)), v0=0.01 * np.sin(np.arange(d)))
    np.save(directory / "dn_idx.npy", ((np.arange(600) * 13) % n).astype(np.int64))


def argv_of(name: str, inputs: Path) -> list[str]:
    argv = dict(CASES)[name]
    return [a.replace("{inputs}", str(inputs)) for a in argv]


def run_case(name: str, workdir: Path, change: dict[str, str] | None = None
             ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Run one case in-process into ``workdir/out``; return (arrays by key, status by result dir).
    ``change`` (for tests that must see a real change fail) maps options of the argv to other values,
    or adds them."""
    from dyntools.cli import main

    inputs = workdir / "inputs"
    write_inputs(inputs)
    out = workdir / "out"
    argv = argv_of(name, inputs)
    for option, value in (change or {}).items():
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv + ["--out", str(out)])
    if code != 0:
        raise RuntimeError(f"case {name}: exit {code}\n{stderr.getvalue()}\n{stdout.getvalue()}")
    return collect(out)


#: Arrays that measure wall-clock time, not computation: never captured nor compared.
VOLATILE = frozenset({"seconds"})


def collect(out: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    arrays: dict[str, np.ndarray] = {}
    statuses: dict[str, str] = {}
    for meta in sorted(out.rglob("result.json")):
        rel = meta.parent.relative_to(out).as_posix()
        statuses[rel] = json.loads(meta.read_text(encoding="utf-8"))["status"]
        with np.load(meta.parent / "arrays.npz", allow_pickle=False) as z:
            for k in z.files:
                if k not in VOLATILE:
                    arrays[f"{rel}/{k}"] = z[k]
    for cell in sorted(out.rglob("cells/cell_*.npz")):
        rel = cell.relative_to(out).with_suffix("").as_posix()
        with np.load(cell, allow_pickle=False) as z:
            for k in z.files:
                if k == "_meta":
                    statuses[rel] = json.loads(str(z[k]))["status"]
                elif k not in VOLATILE:
                    arrays[f"{rel}/{k}"] = z[k]
    return arrays, statuses


def main(names: list[str]) -> None:
    import time

    names = names or [n for n, _ in CASES]
    cases_file = HERE / "cases.json"
    index = json.loads(cases_file.read_text()) if cases_file.exists() else {}
    for name in names:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            arrays, statuses = run_case(name, Path(tmp))
        np.savez_compressed(HERE / f"{name}.npz", **arrays)
        index[name] = {"argv": dict(CASES)[name], "status": statuses}
        size = (HERE / f"{name}.npz").stat().st_size
        print(f"{name}: {len(arrays)} arrays, {size / 1024:.1f} KiB, {time.perf_counter() - start:.2f} s",
              flush=True)
    index = {n: index[n] for n, _ in CASES if n in index}
    cases_file.write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[2]))
    main(sys.argv[1:])
