"""`dyntools simulate diag-net` / `plot` / `bench diag-net` as a user runs them, including bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from dyntools import store
from tests.conftest import assert_usage_error

SMALL = ["--steps", "300", "--seeds", "2", "--records", "20", "--n-test", "50"]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dyntools", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


def test_simulate_json_then_plot(tmp_path):
    out = tmp_path / "run"
    proc = cli("simulate", "diag-net", *SMALL, "--seed", 3, "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["preset"] == "paper-sgd"
    assert len(summary["runs"]) == 4                      # small + three large-step decays
    res = store.load(out)
    assert res.kind == "diag-net" and res.seed == 3
    assert res["train_loss"].shape == (4, 2, res["steps"].size)
    assert res.config["n"] == 80 and res.config["d"] == 200 and res.config["batch"] == 1
    assert res.config["decay_factors"] == [4.8, 3.4, 1.5]
    at = np.minimum(res["steps"], 299)                     # the step size at each recorded step
    assert res["eta_rec"].shape == (4, at.size) and "etas" not in res.arrays      # nothing per step is kept
    assert res["eta_rec"][1] == pytest.approx(np.where(at >= 30, 0.282 / 4.8, 0.282))   # decay after 10% of 300
    assert res["eta_rec"][3] == pytest.approx(np.where(at >= 150, 0.282 / 1.5, 0.282))
    proc = cli("plot", out, "--format", "png")
    assert proc.returncode == 0, proc.stderr
    assert (out / "figures" / "diag_net.png").stat().st_size > 10_000


def test_gd_preset_and_options(tmp_path):
    out = tmp_path / "gd"
    proc = cli("simulate", "diag-net", "--preset", "paper-gd", *SMALL, "--schedules", "small,large-constant",
               "--decay-mode", "cumulative", "--warmup", "10", "--sharpness-iters", "300", "--out", out,
               "--json")
    assert proc.returncode == 0, proc.stderr
    res = store.load(out)
    assert res.config["method"] == "gd" and res.config["n"] == 40 and res.config["d"] == 100
    assert res.config["sharpness_iters"] == 300
    assert [r["eta"] for r in res.config["runs"]] == [2.0, 3.51]
    assert res["steps"][0] == 0 and res["eta_rec"][1, 0] == pytest.approx(3.51 / 10)     # warm-up
    assert res["sharpness"].shape == res["train_loss"].shape          # λ_max at every recording
    table = cli("simulate", "diag-net", "--preset", "paper-gd", *SMALL, "--schedules", "large",
                "--decay-mode", "cumulative", "--out", tmp_path / "gd2")
    assert table.returncode == 0 and "÷4.8 at 10%, ÷3.4 at 30%, ÷1.5 at 50%" in table.stdout


def test_given_data_file(tmp_path):
    rng = np.random.default_rng(0)
    X, Xt = rng.standard_normal((10, 6)), rng.standard_normal((20, 6))
    beta = np.array([1.0, 0, 0, 0.5, 0, 0])
    np.savez(tmp_path / "d.npz", X=X, y=X @ beta, X_test=Xt, y_test=Xt @ beta, beta_star=beta)
    proc = cli("simulate", "diag-net", "--data", tmp_path / "d.npz", "--steps", "200", "--seeds", "2",
               "--eta-small", "0.05", "--eta-large", "0.1", "--out", tmp_path / "r", "--json")
    assert proc.returncode == 0, proc.stderr
    res = store.load(tmp_path / "r")
    assert res.config["n"] == 10 and res.config["d"] == 6 and res.config["data"] == "given"


BAD = [          # the list; finer checks of the library's arguments are in test_diag_net_dynamics
    (["--r", "300"], "Invalid r"),
    (["--n", "0"], "Invalid n"),
    (["--decay-at", "0.1,1.5"], "decay fraction"),
    (["--decay-at", "0,0.5", "--decay-factors", "2,2"], "decay fraction"),
    (["--decay-at", "0.1", "--decay-factors", "2,3"], "decay_factors"),
    (["--schedules", "small,cosine"], "Invalid schedule"),
    (["--preset", "paper-adam"], "Invalid preset"),
    (["--noise", "nan"], "Invalid noise"),
    (["--batch", "81"], "Invalid batch"),
    (["--sharpness-iters", "-1"], "Invalid sharpness-iters"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, message):
    out = tmp_path / "never"
    assert_usage_error(cli("simulate", "diag-net", "--steps", "50", *args, "--out", out), message, out_dir=out)


@pytest.mark.parametrize("arrays, message", [
    (dict(X=np.ones((5, 3)), y=np.ones(4), X_test=np.ones((2, 3)), y_test=np.ones(2)), "Invalid y"),
    (dict(X=np.full((5, 3), np.inf), y=np.ones(5), X_test=np.ones((2, 3)), y_test=np.ones(2)), "non-finite"),
    (dict(X=np.ones((5, 3)), y=np.ones(5)), "lacks X_test, y_test"),
    (dict(X=np.ones((5, 3)), y=np.ones(5), X_test=np.ones((2, 4)), y_test=np.ones(2)), "X_test"),
])
def test_bad_data_files(tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    out = tmp_path / "never"
    proc = cli("simulate", "diag-net", "--data", tmp_path / "bad.npz", "--steps", "20", "--out", out)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_bench_quick_reports_every_target():
    proc = cli("bench", "diag-net", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr
    (rep,) = json.loads(proc.stdout)["benchmarks"]
    names = [t["name"] for t in rep["targets"]]
    has_jax = any("JAX" in n for n in names)          # the optional anchor: a row, or a note saying it is skipped
    assert has_jax or any("jax not installed" in n for n in rep["notes"])
    assert len(names) == 4 + has_jax and any("NumPy loop" in n for n in names) and any("ensemble" in n for n in names)
    m = rep["measurements"]
    assert m["kernel_vs_loop_max_rel_diff_first_2000_steps"] < 1e-8       # the two runs are the same run
    assert m["gemm_flop_rate_1_thread"] > 0 and m["flops_per_step"] == 1600


def test_given_init_and_replayed_indices(tmp_path):
    import numpy as np

    from tests.conftest import assert_usage_error, run_cli

    np.savez(tmp_path / "init.npz", u0=np.full(30, 0.2), v0=np.full(30, 0.01))
    np.savetxt(tmp_path / "idx.txt", np.random.default_rng(0).integers(0, 20, 300))
    out = tmp_path / "run"
    proc = run_cli("simulate", "diag-net", "--n", "20", "--d", "30", "--r", "3", "--steps", "300", "--seeds", "2",
                   "--init-file", tmp_path / "init.npz", "--indices", tmp_path / "idx.txt", "--keep-params",
                   "--out", out)
    assert proc.returncode == 0, proc.stderr
    r = store.load(out)
    assert r.config["init_given"] and r.config["replayed"]
    np.testing.assert_array_equal(r["u_rec"][..., 0, :], 0.2)
    np.testing.assert_array_equal(r["v_rec"][..., 0, :], 0.01)
    np.savez(tmp_path / "short.npz", u0=np.ones(3), v0=np.ones(3))
    bad = tmp_path / "bad"
    assert_usage_error(run_cli("simulate", "diag-net", "--n", "20", "--d", "30", "--r", "3", "--steps", "10",
                               "--init-file", tmp_path / "short.npz", "--out", bad), "--init-file", out_dir=bad)
    assert_usage_error(run_cli("simulate", "diag-net", "--n", "20", "--d", "30", "--r", "3", "--steps", "10",
                               "--indices", tmp_path / "missing.npy", "--out", bad), "--indices", out_dir=bad)
