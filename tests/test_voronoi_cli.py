"""``dyntools simulate voronoi``, ``dyntools sweep voronoi-ladder``, ``dyntools plot DIR`` and ``bench voronoi``
as a user runs them, including bad input (one line on stderr, exit 2, nothing written)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD, assert_usage_error

pytest.importorskip("dyntools.spec", reason="the commands are generated from dyntools.spec")

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--n", "400", "--n-test", "100", "--steps", "30", "--batch", "16", "--frames", "3", "--n-centers", "32"]


def dyntools(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=HANG_GUARD)


def test_simulate_then_plot(tmp_path):
    out = tmp_path / "run"
    r = dyntools("simulate", "voronoi", "--rung", "plus-minus", "--decay", "l1l2", "--no-decay", "offset,scale",
                 "--seeds", "2", *SMALL, "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["status"] == "completed" and 0.0 <= summary["test_acc_median"] <= 1.0
    p = dyntools("plot", str(out), "--format", "png")
    assert p.returncode == 0, p.stderr
    names = {Path(line.split()[-1]).name for line in p.stdout.splitlines() if line.startswith("wrote")}
    assert {"voronoi_plane.gif", "voronoi_centers.gif", "voronoi_scalars.gif", "voronoi_env.png"} <= names


def test_simulate_the_mlp_baseline_then_plot(tmp_path):
    out = tmp_path / "run"
    r = dyntools("simulate", "voronoi", "--rung", "mlp", "--mlp-hidden", "8,8", "--mlp-inputs", "raw", "--seeds", "2",
                 *SMALL, "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["status"] == "completed" and 0.0 <= summary["test_acc_median"] <= 1.0
    assert set(summary["param_stats"]) == {"W1", "b1", "W2", "b2", "W3", "b3"}
    p = dyntools("plot", str(out), "--format", "png")
    assert p.returncode == 0, p.stderr
    names = {Path(line.split()[-1]).name for line in p.stdout.splitlines() if line.startswith("wrote")}
    assert {"voronoi_plane.gif", "voronoi_curves.png", "voronoi_env.png"} <= names
    assert "voronoi_centers.gif" not in names                   # the MLP has no centers
    h = dyntools("simulate", "voronoi", "--help")
    assert "--mlp-hidden" in h.stdout and "--mlp-inputs" in h.stdout and "mlp" in h.stdout


def test_sweep_ladder_resumes(tmp_path):
    out = tmp_path / "ladder"
    args = ["sweep", "voronoi-ladder", "--rungs", "exact,scale", "--decays", "l2,min", "--seeds", "2",
            "--workers", "1", *SMALL, "--out", str(out), "--json"]
    first = dyntools(*args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["computed"] == 6
    again = dyntools(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["reused"] == 6
    table = dyntools(*args[:-1])
    assert "eval acc" in table.stdout


@pytest.mark.parametrize("args,word", [
    (["simulate", "voronoi", "--dim", "0"], "dim"),
    (["simulate", "voronoi", "--k", "0"], "k"),
    (["simulate", "voronoi", "--k", "500"], "k"),
    (["simulate", "voronoi", "--classes", "1"], "classes"),
    (["simulate", "voronoi", "--box", "0"], "box"),
    (["simulate", "voronoi", "--rung", "deep"], "rung"),
    (["simulate", "voronoi", "--decay", "l3"], "decay"),
    (["simulate", "voronoi", "--frames", "1"], "frames"),
    (["sweep", "voronoi-ladder", "--rungs", "exact,deep"], "rung"),
    (["sweep", "voronoi-ladder", "--decays", "l2,l0"], "decay"),
    (["sweep", "voronoi-ladder", "--rungs", "mlp,deep"], "rung"),
    (["simulate", "voronoi", "--rung", "mlp", "--mlp-hidden", "8,0"], "mlp-hidden"),
    (["simulate", "voronoi", "--rung", "mlp", "--mlp-hidden", "8,x"], "mlp-hidden"),
    (["simulate", "voronoi", "--rung", "mlp", "--mlp-inputs", "log"], "mlp_inputs"),
    (["sweep", "voronoi-ladder", "--rungs", "mlp", "--mlp-hidden", ""], "mlp-hidden"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args, word):
    out = tmp_path / "out"
    given = {a for a in args if a.startswith("--")}
    pairs = [(SMALL[i], SMALL[i + 1]) for i in range(0, len(SMALL), 2) if SMALL[i] not in given]
    extra = [x for pair in pairs for x in pair]
    assert_usage_error(dyntools(*args, *extra, "--out", str(out)), word, out_dir=out)


def test_bench_lists_voronoi():
    from dyntools.bench import benchmarks

    assert "voronoi" in benchmarks()
