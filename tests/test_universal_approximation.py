"""The universal-approximation study (simulations/universal_approximation.py): its pieces against exact
cases, the error falling with the width, reproducibility, and the CLI's bad input."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dyntools.simulations import universal_approximation as U

from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]


def test_sigmoid_is_stable_and_exact():
    z = np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
    s = U.sigmoid(z)
    assert np.all(np.isfinite(s)) and s[0] == 0.0 and s[-1] == 1.0 and s[3] == 0.5
    mid = np.linspace(-20, 20, 101)
    np.testing.assert_allclose(U.sigmoid(mid), 1 / (1 + np.exp(-mid)), rtol=1e-14)


def test_fit_output_recovers_a_network_in_the_span():
    rng = np.random.default_rng(0)
    W, b = U.hidden_layer(2, 20, rng)
    X = U.grid(2, 30)
    coef = rng.standard_normal(21)
    Phi = U.features(X, W, b)
    got = U.fit_output(Phi, Phi @ coef)
    assert np.max(np.abs(Phi @ got - Phi @ coef)) < 1e-5


def test_hidden_units_switch_inside_the_cube():
    rng = np.random.default_rng(2)
    W, b = U.hidden_layer(2, 500, rng)
    assert np.allclose(np.linalg.norm(W, axis=1), U.SLOPE * np.sqrt(500))
    # each unit is 1/2 at some point of the cube: σ(w·c_i + b) = 1/2 with c_i in [0, 1]^2
    X = U.grid(2, 60)
    pre = X @ W.T + b
    assert np.all(pre.min(axis=0) <= 0) and np.all(pre.max(axis=0) >= 0)


def test_error_falls_with_the_width_and_is_reproducible():
    a = U.study(max_width_1d=64, max_width_2d=32, fit=16, seeds=2, seed=1, gd_steps=0)
    b = U.study(max_width_1d=64, max_width_2d=32, fit=16, seeds=2, seed=1, gd_steps=0)
    np.testing.assert_array_equal(a["errors_1d"], b["errors_1d"])
    med = np.median(a["errors_1d"], axis=1)
    assert med[-1] < 0.5 * med[0]
    assert a.status == "completed" and a.summary["decreasing"]
    assert "does not prove" in U.STATEMENT


@pytest.mark.parametrize("args, word", [(["--max-width-1d", "1"], "max"), (["--fit", "x"], "fit"),
                                        (["--gd-steps", "-1"], "gd_steps"), (["--few-2d", "1"], "few_2d"),
                                        (["--gd-steps", "1000000", "--seeds", "1000"], "gd-steps")])
def test_cli_bad_input(tmp_path, args, word):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "bad"
    r = subprocess.run([sys.executable, "-m", "dyntools", "simulate", "universal-approximation", *args, "--out",
                        str(out)], capture_output=True, text=True, env=env, timeout=HANG_GUARD)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0]
    assert not out.exists()


# ----------------------------------------------------------------------------------- the caveats (issue 26 item 8)

def _net(d=2, n=7, seed=3, scale=1.0):
    from dyntools.models.sigmoid_net import SigmoidNet

    rng = np.random.default_rng(seed)
    model = SigmoidNet(d, n)
    theta = scale * rng.standard_normal(model.n_params)
    X = rng.uniform(size=(11, d))
    y = rng.standard_normal(11)
    return model, theta, X, y


@pytest.mark.parametrize("d, scale", [(1, 1.0), (2, 1.0), (2, 60.0)])     # 60: many saturated units
def test_sigmoid_net_kernel_equals_its_numpy_twin(d, scale):
    from dyntools.models import sigmoid_net as S

    model, theta, X, y = _net(d=d, scale=scale)
    iargs, fargs = model.kernel_args()
    idx = np.array([4, 0, 9, 9, 2, 7], dtype=np.int64)
    noise = np.linspace(-0.3, 0.3, idx.size)
    g1, g2 = np.empty(model.n_params), np.empty(model.n_params)
    l1 = S.loss_grad(theta, X, y, idx, idx.size, noise, g1, np.zeros(model.workspace_size(6)), iargs, fargs)
    l2 = S.loss_grad_np(theta, X, y, idx, idx.size, noise, g2, None, iargs, fargs)
    assert l1 == pytest.approx(l2, rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14 * np.abs(g2).max())
    np.testing.assert_allclose(model.predict(theta, X), model.predict(theta, X, kernel="numpy"), rtol=1e-13, atol=1e-15)


def test_sigmoid_net_gradient_against_finite_differences_and_the_equation():
    """The gradient against central differences of the loss written from the equation g = A + Σ v σ(wᵀx + b)."""
    from dyntools.models import sigmoid_net as S

    model, theta, X, y = _net(d=2, n=5, scale=0.8)
    iargs, fargs = model.kernel_args()
    idx = np.arange(X.shape[0])

    def loss(th):                          # the equation, unit by unit: no shared code with the kernels
        W, b, v, A = th[:10].reshape(5, 2), th[10:15], th[15:20], th[20]
        g = [A + sum(v[i] / (1 + np.exp(-(W[i] @ x + b[i]))) for i in range(5)) for x in X]
        return float(np.mean((np.array(g) - y) ** 2))

    grad = np.empty(model.n_params)
    value = S.loss_grad(theta, X, y, idx, idx.size, np.zeros(idx.size), grad, np.zeros(5), iargs, fargs)
    assert value == pytest.approx(loss(theta), rel=1e-12)
    h = 1e-6
    fd = np.array([(loss(theta + h * e) - loss(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_saturation_shortcut_is_exact():
    """σ is exactly 1.0 from SATURATED on and exactly 0.0 below −UNDERFLOW, as the kernel's shortcut assumes."""
    from dyntools.models import sigmoid_net as S

    assert np.all(S.sigmoid_np(np.array([S.SATURATED, 40.0, 1e3, 1e300])) == 1.0)
    assert np.all(S.sigmoid_np(np.array([-S.UNDERFLOW, -800.0, -1e300])) == 0.0)
    z = np.concatenate([S.SATURATED + np.array([-1e-9, 0.0, 1e-9, 5.0]), -S.UNDERFLOW + np.array([-1.0, 0.0, 0.5]),
                        [-30.0, -1.0, 0.0, 2.0, 36.9]])
    compiled = np.array([S._sigmoid(v) for v in z])
    np.testing.assert_array_equal(compiled, S.sigmoid_np(z))          # the shortcut gives the formula's bits


def test_gd_starts_from_the_least_squares_draw_and_trains_equal_with_the_twin():
    from types import SimpleNamespace

    import dyntools as dt
    from dyntools.engine import streams
    from dyntools.models import sigmoid_net as S

    model = S.SigmoidNet(2, 16, slope=U.SLOPE)
    rng = streams.path_generators(5, 2, streams.key("universal.features"), 2, 16)[1]
    W, b = U.hidden_layer(2, 16, rng)
    np.testing.assert_array_equal(model.init(5, 1), S.pack(W, b, np.zeros(16), 0.0))
    X = U.grid(2, 6)
    data = SimpleNamespace(X=X, y=U.target_2d(X))
    runs = [dt.train(model, data, dt.adam(U.GD_LR), steps=30, sampler="full", seeds=2, seed=5,
                     record_steps=np.array([30]), kernel=k) for k in ("numba", "numpy")]
    np.testing.assert_allclose(runs[0]["theta"], runs[1]["theta"], rtol=1e-10, atol=1e-12)
    assert model.loss(runs[0]["theta"][0, 0, -1], X, data.y) < model.loss(model.init(5, 0), X, data.y)


def test_fit_output_dual_form_equals_the_normal_equations():
    rng = np.random.default_rng(4)
    Phi, y = rng.standard_normal((6, 15)), rng.standard_normal(6)
    lam = U.RIDGE * float(np.sum(Phi * Phi)) / Phi.shape[1]
    c = U.fit_output(Phi, y)
    # the normal equations of the ridge problem hold (they are too ill-conditioned to solve directly here)
    np.testing.assert_allclose(Phi.T @ (Phi @ c) + lam * c, Phi.T @ y, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Phi @ c, y, atol=1e-7)                      # 6 equations, 15 unknowns: interpolates
    np.testing.assert_allclose(c, np.linalg.pinv(Phi) @ y, rtol=1e-6)      # the minimum-norm solution as λ → 0


def test_caveat_verdicts_from_constructed_numbers():
    ls = np.array([[1.0, 1.0], [0.5, 0.5], [0.1, 0.1]])
    gd = np.array([[0.8, 0.9], [0.4, 0.6], [0.2, 0.3]])
    assert U.gd_comparison(ls, gd) == ["GD below the bound", "mixed", "GD above the bound"]
    assert U.gd_comparison(ls[:1], np.array([[np.nan, 0.1]])) == ["not measured"]
    widths = np.array([2, 4, 8, 16, 32])
    test = np.array([[1.0], [0.5], [0.9], [3.0], [0.8]])
    train = np.array([[0.9], [0.4], [0.1], [1e-9], [1e-10]])
    v = U.overfitting(widths, train, test, points=10)
    assert v["overfits"] and v["best_width"] == 4 and v["peak_width"] == 16 and v["rise"] == pytest.approx(6.0)
    assert not U.overfitting(widths, train, test * np.array([[1], [1], [1], [0.3], [1]]), points=10)["overfits"]
    assert U.overfitting(widths, train, test, points=2)["overfits"] is None          # no width below the points
    test[0, 0] = np.nan
    assert U.overfitting(widths, train, test, points=10)["overfits"] is None


def test_tiny_study_with_both_caveats():
    res = U.study(max_width_1d=32, max_width_2d=16, fit=8, seeds=2, seed=1, gd_steps=40, few_1d=6, few_2d=10)
    assert res["gd_errors_1d"].shape == (5, 2, 2) and res["gd_errors_2d"].shape == (3, 2, 2)
    assert np.isfinite(res["gd_errors_1d"][..., -1]).all() and np.isfinite(res["gd_errors_1d"][-1]).all()
    for k in ("ls_train", "ls_test", "gd_train", "gd_test"):
        assert res[f"few_{k}_1d"].shape == (5, 2)
    # the least-squares fit of 32 units interpolates the 6 points
    assert np.all(res["few_ls_train_1d"][-1] < 1e-6) and res.summary["few"]["1d"]["ls"]["interpolates"]
    assert set(res.summary["gd"]) == {"1d", "2d"} and len(res.summary["gd"]["1d"]["comparison"]) == 5
    none = U.study(max_width_1d=8, max_width_2d=8, fit=4, seeds=1, gd_steps=0)
    assert "gd_errors_1d" not in none.arrays and "few_gd_train_1d" not in none.arrays
    assert none.summary["gd"] == {} and "ls" in none.summary["few"]["1d"]
