"""Small ReLU networks (issue 7): kernels vs NumPy twins and finite differences, metrics, schedules,
data, the runner, and the CLI as a user runs it (including bad input)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import data, metrics
from dyntools.dynamics.relu_sgd import evaluate, train
from dyntools.models.relu_net import (
    Layout,
    init_gaussian,
    init_regression_1d,
    jacobian,
    jacobian_fd,
    jacobian_np,
    predict,
    predict_np,
)
from dyntools.optim.schedules import PiecewiseDecay, PowerWarmup

ROOT = Path(__file__).resolve().parents[1]


def _net(d, hidden, biases, seed):
    layout = Layout.mlp(d, hidden, biases=biases)
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(layout.n_params)
    X = rng.standard_normal((5, d))
    return layout, theta, X


# ------------------------------------------------------------------------------------------ model

@settings(max_examples=25, deadline=None)
@given(d=st.integers(1, 4), hidden=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       bias=st.booleans(), seed=st.integers(0, 10_000))
def test_jacobian_matches_numpy_twin_and_finite_differences(d, hidden, bias, seed):
    layout, theta, X = _net(d, hidden, bias, seed)
    J = jacobian(theta, X, *layout.arrays())
    np.testing.assert_allclose(J, jacobian_np(layout, theta, X), rtol=1e-12, atol=1e-12)
    # finite differences are exact up to O(eps²) away from ReLU kinks; skip draws too close to one
    pre = np.abs(np.concatenate([h.ravel() for h in _preacts(layout, theta, X)]))
    if pre.size and pre.min() < 1e-4:
        return
    np.testing.assert_allclose(J, jacobian_fd(layout, theta, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predict(theta, X, *layout.arrays()), predict_np(layout, theta, X), rtol=1e-12,
                               atol=1e-12)


def _preacts(layout, theta, X):
    a, out = X, []
    for l, (W, b) in enumerate(layout.unpack(theta)):
        z = a @ W.T + (0 if b is None else b)
        if l < layout.n_layers - 1:
            out.append(z)
        a = np.maximum(z, 0)
    return out


def test_jacobian_false_control_detects_a_wrong_gradient():
    layout, theta, X = _net(3, [4, 4], True, 1)
    J = jacobian(theta, X, *layout.arrays())
    J_bad = J.copy()
    J_bad[:, -1] += 1e-3                       # the output-bias column (all ones)
    assert not np.allclose(J_bad, jacobian_fd(layout, theta, X), rtol=1e-5, atol=1e-6)


def test_layout_pack_unpack_and_bad_widths():
    layout = Layout.two_layer(1, 7, hidden_bias=True)
    assert layout.n_params == 7 + 7 + 7
    theta = np.arange(layout.n_params, dtype=float)
    np.testing.assert_array_equal(layout.pack(layout.unpack(theta)), theta)
    with pytest.raises(ValueError, match="hidden width"):
        Layout.mlp(2, [3, 0])
    with pytest.raises(ValueError, match="input dimension"):
        Layout.mlp(0, [3])


def test_regression_1d_init_statistics():
    layout = Layout.two_layer(1, 4000, hidden_bias=True)
    (W1, b1), (W2, _) = layout.unpack(init_regression_1d(layout, 0.5, seed=3))
    assert set(np.unique(W1)) == {-1.25, 1.25}
    assert abs(np.std(b1) - 1.25) < 0.05 and abs(np.std(W2) - 2.0) < 0.1
    g = init_gaussian(Layout.mlp(2, [20]), (0.5, 0.0), seed=0)
    (W, _), (a, _) = Layout.mlp(2, [20]).unpack(g)
    assert np.all(a == 0) and np.std(W) > 0.2


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
    np.testing.assert_allclose(ts.y, predict_np(ts.teacher_layout, ts.teacher, ts.X))
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

@pytest.mark.parametrize("method,batch", [("sgd", 1), ("sgd", 3), ("gd", 1)])
def test_training_kernel_matches_numpy_twin(method, batch):
    layout = Layout.mlp(3, [6, 5], biases=True)
    ts = data.teacher_student(10, 3, [2, 2], n_test=20, seed=1)
    theta0 = init_gaussian(layout, 0.8, seed=1)
    etas = np.stack([np.full(80, 0.02), np.linspace(0.01, 0.05, 80)])
    out_nb = train(layout, theta0, ts.X, ts.y, etas, steps=80, batch=batch, method=method, records=10, seed=5)
    out_np = train(layout, theta0, ts.X, ts.y, etas, steps=80, batch=batch, method=method, records=10, seed=5,
                   kernel="numpy")
    np.testing.assert_allclose(out_nb[1], out_np[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(out_nb[2], out_np[2])


def test_sgd_step_is_the_gradient_of_the_mean_squared_error():
    layout = Layout.mlp(2, [4], biases=True)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((6, 2)), rng.standard_normal(6)
    theta0 = rng.standard_normal(layout.n_params)
    eta = 1e-3
    _, rec, _, _ = train(layout, theta0, X, y, [[eta]], steps=1, method="gd", record_steps=np.array([0, 1]))
    J = jacobian_np(layout, theta0, X)
    grad = 2 / 6 * J.T @ (predict_np(layout, theta0, X) - y)
    np.testing.assert_allclose(rec[0, 1], theta0 - eta * grad, rtol=1e-12, atol=1e-14)


def test_divergence_is_reported_with_its_step_and_same_seed_is_bitwise():
    layout = Layout.mlp(2, [10], biases=False)
    ts = data.teacher_student(15, 2, [3], n_test=10, seed=0)
    theta0 = init_gaussian(layout, (0.5, 0.0), seed=0)
    steps, rec, div, _ = train(layout, theta0, ts.X, ts.y, [[50.0], [0.05]], steps=200, records=20, seed=2)
    assert div[0] >= 0 and div[1] == -1
    assert np.isnan(rec[0, -1]).all() and np.isfinite(rec[1]).all()
    again = train(layout, theta0, ts.X, ts.y, [[50.0], [0.05]], steps=200, records=20, seed=2)
    np.testing.assert_array_equal(rec, again[1])
    ev = evaluate(layout, rec, ts.X, ts.y, ts.X_test, ts.y_test)
    assert np.isnan(ev["train_loss"][0, -1]) and ev["jac_rank"][0, -1] == -1
    with pytest.raises(ValueError, match="input dimension"):
        train(layout, theta0, np.ones((4, 3)), np.ones(4), [[0.1]], steps=5)


def test_setting_runs_and_reports():
    from simulations.relu_nets import simulate

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
    proc = _cli("simulate", "relu", *args, "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], proc.stderr
    assert not out.exists()


def test_bench_quick_reports_the_target_without_asserting_timings():
    from dyntools.bench import relu as bench_relu

    rep = bench_relu.run(quick=True)
    assert rep.targets[0].goal == 10.0 and rep.targets[0].value > 0
    assert rep.measurements["max |numba - numpy| over the first records"] < 1e-8
    assert "numba us per step" in rep.measurements


def test_bench_workload_is_the_teacher3_setting():
    """dyntools/bench/relu.py states its workload itself (the library does not import simulations/)."""
    from dyntools.bench import relu as bench_relu
    from simulations.relu_nets import build, get_setting, schedules

    s = get_setting("teacher3", log10_steps=3.0)
    layout, theta0, X, y, *_ = build(s, 0)
    etas = np.stack([sc.etas(eta, s.steps) * np.ones(s.steps) for _, eta, sc in schedules(s)])
    b_layout, b_theta0, b_X, b_y, b_etas = bench_relu.workload(s.steps)
    assert (b_layout.widths, b_layout.biases) == (layout.widths, layout.biases) and s.batch == 1
    for mine, theirs in ((b_theta0, theta0), (b_X, X), (b_y, y), (b_etas, etas)):
        np.testing.assert_array_equal(mine, theirs)
    assert get_setting("teacher3").steps == 10_000


def test_runs_share_the_sample_stream_unless_asked_not_to():
    layout = Layout.mlp(2, [5], biases=True)
    ts = data.teacher_student(12, 2, [3], n_test=10, seed=3)
    theta0 = init_gaussian(layout, 0.5, seed=3)
    etas = [[0.05], [0.05]]
    rec_common = train(layout, theta0, ts.X, ts.y, etas, steps=50, records=6, seed=1)[1]
    np.testing.assert_array_equal(rec_common[0], rec_common[1])
    rec_own = train(layout, theta0, ts.X, ts.y, etas, steps=50, records=6, seed=1, common_stream=False)[1]
    assert not np.array_equal(rec_own[0, -1], rec_own[1, -1])


def test_parallel_kernel_and_chunking_give_identical_runs():
    layout = Layout.mlp(3, [4, 4], biases=True)
    ts = data.teacher_student(9, 3, [2, 2], n_test=5, seed=2)
    theta0 = init_gaussian(layout, 0.8, seed=2)
    etas = np.stack([np.full(60, 0.03), np.linspace(0.01, 0.06, 60), np.full(60, 0.02)])
    kw = {"steps": 60, "records": 7, "seed": 4, "batch": 2}
    ref = train(layout, theta0, ts.X, ts.y, etas, **kw)[1]
    np.testing.assert_array_equal(ref, train(layout, theta0, ts.X, ts.y, etas, parallel=True, **kw)[1])
    np.testing.assert_array_equal(ref, train(layout, theta0, ts.X, ts.y, etas, chunks=7, **kw)[1])


def test_table_excludes_diverged_and_collapsed_seeds():
    from simulations.relu_nets import table_rows

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
