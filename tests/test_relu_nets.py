"""Small ReLU networks (issue 7): metrics, schedules, data, the runner, and the CLI as a user runs it
(including bad input). The network itself and its training loops are tested in tests/test_mlp.py."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import data, metrics
from dyntools.optim.schedules import PiecewiseDecay, PowerWarmup
from tests.conftest import assert_usage_error

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ data

def test_data_1d_and_teacher_student():
    X, y = data.regression_1d()
    np.testing.assert_allclose(X[:, 0], np.arange(-5.5, 6, 1) / 4 + 0.07)
    assert y[0] == pytest.approx(0.345 - 2) and y.shape == (12,)
    ts = data.teacher_student(15, 2, [3], seed=4)
    np.testing.assert_allclose(np.linalg.norm(ts.X, axis=1), 1.0)
    assert ts.X_test.shape == (1000, 2)
    (W, _), (a, _) = ts.teacher_layout.unpack(ts.teacher)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    assert set(np.abs(a).ravel()) == {1.0}
    np.testing.assert_allclose(ts.y, ts.teacher_layout.predict(ts.teacher, ts.X))
    with pytest.raises(ValueError, match="student input dimension"):
        data.teacher_student(15, 2, [3], student_d=3)


# ------------------------------------------------------------------------------------------ schedules

def test_power_warmup_matches_formula():
    T = 1000
    m = PowerWarmup(6.0, 0.3, 0.5, inner=PiecewiseDecay((0.3,), (2.5,))).multipliers(T)
    t = np.arange(T)
    expect = 1 + 5 * (np.minimum(t, 300) / T) ** 0.5
    expect[300:] /= 2.5
    np.testing.assert_allclose(m, expect)
    assert m[0] == 1.0
    with pytest.raises(ValueError, match="warmup fraction"):
        PowerWarmup(2.0, 1.5)


# ------------------------------------------------------------------------------------------ metrics

def test_feature_sparsity_merges_correlated_neurons():
    rng = np.random.default_rng(0)
    base = np.maximum(rng.standard_normal((30, 3)), 0)
    F = np.concatenate([base, 2.0 * base[:, :1], np.zeros((30, 2))], axis=1)   # neuron 3 duplicates neuron 0
    nnz_distinct = np.count_nonzero(base)
    assert metrics.feature_sparsity(F, 0.99, normalize=False) == pytest.approx(nnz_distinct / F.size)
    kept = metrics.merge_correlated(F, 0.99)
    assert len(kept) == 3 and 4 not in kept and 5 not in kept
    # false control: a copy perturbed below the threshold's correlation is no longer merged
    noisy = F.copy()
    noisy[:, 3] += 0.5 * rng.random(30) * (noisy[:, 3] > 0)
    assert len(metrics.merge_correlated(noisy, 0.999)) == 4
    with pytest.raises(ValueError, match="correlation threshold"):
        metrics.feature_sparsity(F, 1.5)
    with pytest.raises(ValueError, match="correlation threshold"):
        metrics.feature_sparsity(F, 0.0)


def test_kinks_1d_counts_merged_and_cancelling_kinks():
    w = np.array([1.0, 2.0, -1.0, 1.0, 1.0])
    b = np.array([0.0, 0.0, 0.5, -1.0, -1.0])     # kinks at 0, 0, 0.5, 1, 1
    a = np.array([1.0, 1.0, 1.0, 1.0, -1.0])     # the two at x = 1 cancel
    loc, jump = metrics.kinks_1d(w, b, a, lo=-2, hi=2)
    np.testing.assert_allclose(loc, [0.0, 0.5])
    np.testing.assert_allclose(jump, [3.0, 1.0])
    assert metrics.n_kinks_1d(w, b, a, lo=0.25, hi=2) == 1


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 12), p=st.integers(12, 40), r=st.integers(1, 6), seed=st.integers(0, 1000))
def test_gram_rank_equals_svd_rank(n, p, r, seed):
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((n, min(r, n))) @ rng.standard_normal((min(r, n), p))
    assert metrics.jacobian_rank_gram(J, 1e-4) == metrics.jacobian_rank(J, 1e-4) == min(r, n)


# ------------------------------------------------------------------------------------------ training

def test_setting_runs_and_reports():
    from dyntools.simulations.relu_nets import simulate

    r = simulate("teacher3", seeds=2, records=8, log10_steps=2.5)
    assert r.kind == "relu" and r["table_final_test_loss"].shape == (2, 4)
    assert r["sparsity"].shape[2] == 2 and np.all((r["sparsity"] >= 0) | np.isnan(r["sparsity"]))
    assert r.summary["table"][0]["schedule"].startswith("small step")


# ------------------------------------------------------------------------------------------ CLI

def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_cli_runs_and_plots(tmp_path):
    out = tmp_path / "r1d"
    proc = _cli("simulate", "relu", "--setting", "1d", "--seeds", "2", "--log10-steps", "3",
                "--records", "12", "--json", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["setting"] == "1d" and len(summary["table"]) == 2 and "kinks" in summary["table"][0]
    proc = _cli("plot", str(out), "--format", "png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    figs = out / "figures"
    assert (figs / "relu_predictor.png").is_file() and (figs / "relu_curves.png").is_file()


@pytest.mark.parametrize("args,word", [
    (["--setting", "2d"], "setting"),
    (["--setting", "teacher3", "--width", "10,0"], "--width"),
    (["--setting", "teacher2", "--teacher-widths", "0"], "--teacher-widths"),
    (["--setting", "teacher2", "--student-d", "3"], "student input dimension"),
    (["--setting", "teacher3", "--threshold", "1.5"], "threshold"),
    (["--setting", "teacher3", "--threshold", "0"], "threshold"),
    (["--setting", "teacher3", "--rank-threshold", "-1"], "rank threshold"),
    (["--setting", "teacher3", "--decays", "0.1"], "--decays"),
])
def test_cli_bad_input_one_line_exit_2_nothing_written(tmp_path, args, word):
    out = tmp_path / "bad"
    assert_usage_error(_cli("simulate", "relu", *args, "--out", str(out), cwd=tmp_path), word, out_dir=out)


def test_bench_quick_reports_the_target_without_asserting_timings():
    from dyntools.bench import relu as bench_relu

    rep = bench_relu.run(quick=True)
    assert rep.targets[0].goal == 10.0 and rep.targets[0].value > 0
    assert rep.measurements["max |numba - numpy| over the first records"] < 1e-8
    assert "numba us per step" in rep.measurements


def test_bench_workload_is_the_teacher3_setting():
    """dyntools/bench/relu.py states its workload itself (the library does not import simulations/)."""
    from dyntools.simulations.relu_nets import build, get_setting, schedules

    from dyntools.bench import relu as bench_relu

    s = get_setting("teacher3", log10_steps=3.0)
    model, theta0, X, y, *_ = build(s, 0)
    b_model, b_theta0, b_X, b_y, b_runs = bench_relu.workload(s.steps)
    assert b_model.widths == model.widths and b_model.config() == model.config() and s.batch == 1
    for mine, theirs in ((b_theta0, theta0), (b_X, X), (b_y, y)):
        np.testing.assert_array_equal(mine, theirs)
    ours = np.stack([sc.etas(eta, s.steps) * np.ones(s.steps) for eta, sc in b_runs])
    etas = np.stack([sc.etas(eta, s.steps) * np.ones(s.steps) for _, eta, sc in schedules(s)])
    np.testing.assert_array_equal(ours, etas)
    assert get_setting("teacher3").steps == 10_000


def test_table_excludes_diverged_and_collapsed_seeds():
    from dyntools.simulations.relu_nets import table_rows

    nan = np.nan
    table = {"final_test_loss": np.array([[0.1, 0.2], [0.3, nan], [0.5, 2.0]]),
             "final_train_loss": np.array([[0.01, 0.02], [0.03, nan], [0.05, 1.0]]),
             "final_sparsity": np.array([[0.4, 0.2], [0.5, nan], [0.6, 0.0]]),
             "final_rank": np.array([[10, 8], [9, nan], [10, 1]], dtype=float),
             "final_kinks": np.full((3, 2), nan), "phase_loss": np.full((3, 2), 0.1)}
    rows = table_rows(table, ["small", "large"])
    assert rows[1]["diverged seeds"] == 1 and rows[1]["collapsed seeds"] == 1
    assert rows[1]["sparsity mean"] == pytest.approx(0.2)
    assert rows[1]["Jacobian rank mean"] == pytest.approx(8)
    assert rows[0]["sparsity mean"] == pytest.approx(0.5) and rows[0]["collapsed seeds"] == 0
