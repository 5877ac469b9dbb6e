"""The conjecture SGD ≈ GD with label noise: the matching δ, the MLP's label-noise SDE, the experiment and its CLI."""

import functools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.dynamics import label_noise_match as lnm
from dyntools.models.mlp import MLP
from tests.conftest import assert_command_refuses, run_cli

# ------------------------------------------------------------------------------------------ matching δ

@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 12), p=st.integers(1, 6), rho=st.floats(0.01, 3.0), c=st.sampled_from([1.0, 2.0]),
       seed=st.integers(0, 2**31))
def test_matching_delta_equates_the_noise_covariances(n, p, rho, c, seed):
    """Independent check from the definitions, on a linear model h = Xθ (φ = X) with residuals of equal
    size ρ: the second moment of the batch-1 SGD gradient c·r_i·x_i over the n equally likely samples
    equals the covariance (cδ/n)² XᵀX of the label-noise GD gradient exactly at δ = matching_delta."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    r = rho * rng.choice([-1.0, 1.0], size=n)
    grads = c * r[:, None] * X                                   # the n possible SGD gradients
    second_moment = grads.T @ grads / n
    delta = lnm.matching_delta(rho**2, n)
    label_noise_cov = (c * delta / n) ** 2 * X.T @ X
    np.testing.assert_allclose(second_moment, label_noise_cov, rtol=1e-10, atol=1e-12)
    # a batch of b examples (with replacement) divides the covariance by b; so does δ² at batch b
    b = max(1, n // 2)
    assert lnm.matching_delta(rho**2, n, b) ** 2 == pytest.approx(delta**2 / b, rel=1e-12)


def test_matching_delta_and_level_input_checks():
    assert np.isnan(lnm.matching_delta(np.array([np.nan, 1.0]), 4)[0])
    with pytest.raises(ValueError, match="mean_sq_residual"):
        lnm.matching_delta(-1.0, 4)
    with pytest.raises(ValueError, match="batch"):
        lnm.matching_delta(1.0, 4, 5)
    steps = np.array([0, 10, 20, 50, 100])
    loss = np.array([[5.0, 1.0, 2.0, 3.0, 9.0], [1.0, np.inf, 1.0, 1.0, 1.0]])
    level = lnm.stabilized_level(steps, loss, (0.1, 0.5))
    assert level[0] == pytest.approx(2.0) and np.isnan(level[1])
    with pytest.raises(ValueError, match="window"):
        lnm.stabilized_level(steps, loss, (0.5, 0.1))
    with pytest.raises(ValueError, match="window"):
        lnm.stabilized_level(steps, loss, (0.6, 0.7))


# ------------------------------------------------------------------------------------------ the MLP's SDE

def _net():
    layout = MLP((2, 5, 1), biases=(True, False), init_scales=(0.8, 0.5))
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((6, 2)), rng.standard_normal(6)
    return layout, layout.init(1), X, y


@functools.cache
def _sde(eta, delta):
    """The SDE of :func:`_net` (its terms are compiled per build: a few (η, δ) pairs, built once)."""
    layout, _, X, y = _net()
    return lnm.mlp_label_noise_sde(layout, X, y, eta=eta, delta=delta)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), eta_delta=st.sampled_from([(0.3, 0.0), (0.3, 0.7), (1.0, 2.0)]))
def test_mlp_sde_terms_match_their_numpy_twins_and_the_loss_gradient(seed, eta_delta):
    eta, delta = eta_delta
    layout, _, X, y = _net()
    theta = np.random.default_rng(seed).standard_normal(layout.n_params)
    sde = _sde(eta, delta)
    drift, diff = np.empty(layout.n_params), np.empty((layout.n_params, X.shape[0]))
    sde.drift(0.0, theta, sde.args, drift)
    sde.diffusion(0.0, theta, sde.args, diff)
    np.testing.assert_allclose(drift, lnm.mlp_drift_np(layout, theta, X, y), rtol=1e-10, atol=1e-12)
    grad = np.empty(layout.n_params)          # the MLP's own mean-square gradient (another code path)
    layout.loss_grad_np(theta, X, y, np.arange(6), 6, np.zeros(6), grad, np.zeros(layout.workspace_size(6)),
                        *layout.kernel_args())
    np.testing.assert_allclose(drift, -grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(diff, np.sqrt(eta) * 2 * delta / 6 * layout.jacobian_np(theta, X).T,
                               rtol=1e-10, atol=1e-14)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), r=st.integers(1, 8), delta=st.sampled_from([0.01, 0.7]))
def test_em_step_of_the_sde_is_label_noise_gd_at_h_with_delta_sqrt_r(seed, r, delta):
    """The identity the experiment relies on: θ + h b(θ) + σ(θ)·√h Z equals the label-noise GD step at step
    h = η/r whose labels are y + δ√r Z (the MLP's kernel twin computes the latter)."""
    layout, _, X, y = _net()
    eta = 0.3
    h = eta / r
    rng = np.random.default_rng(seed)
    theta, Z = rng.standard_normal(layout.n_params), rng.standard_normal(6)
    sde = _sde(eta, delta)
    b, s = np.empty(layout.n_params), np.empty((layout.n_params, 6))
    sde.drift(0.0, theta, sde.args, b)
    sde.diffusion(0.0, theta, sde.args, s)
    em = theta + h * b + s @ (np.sqrt(h) * Z)
    grad = np.empty(layout.n_params)
    layout.loss_grad_np(theta, X, y, np.arange(6), 6, np.sqrt(r) * delta * Z, grad,
                        np.zeros(layout.workspace_size(6)), *layout.kernel_args())
    np.testing.assert_allclose(em, theta - h * grad, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------ the experiment

def test_small_diag_net_experiment_shapes_delta_and_verdict():
    from dyntools.simulations.sgd_vs_label_noise import EXPERIMENT, simulate

    p = EXPERIMENT.make("diag-net", n=10, d=20, r=2, steps=300, seeds=2, records=8, delta_scales=(1.0, 3.0))
    res = simulate(p, seed=1)
    M = len(res.config["methods"])
    assert M == 5 and res["sparsity"].shape == (M, 2, res["steps"].size)
    assert np.allclose(res["delta"], np.sqrt(2 * 10 * res["level"]), equal_nan=True)
    assert res.summary["verdict"] in ("holds", "partly holds", "does not hold", "not checkable")
    # SGD and noiseless GD start at the same point: the same metrics at step 0
    assert np.array_equal(res["train_loss"][0, :, 0], res["train_loss"][-1, :, 0])
    again = simulate(p, seed=1)
    assert np.array_equal(res["test_loss"], again["test_loss"], equal_nan=True)


def test_small_relu_experiment_runs():
    from dyntools.simulations.sgd_vs_label_noise import EXPERIMENT, simulate

    res = simulate(EXPERIMENT.make("relu", steps=200, seeds=2, records=6, delta_scales=(1.0,)), seed=0)
    assert res["rank"].shape == (4, 2, res["steps"].size)
    ok = np.isfinite(res["sparsity"])
    assert np.all((res["sparsity"][ok] >= 0) & (res["sparsity"][ok] <= 1))
    assert np.allclose(res["delta"], np.sqrt(15 * res["level"]), equal_nan=True)


@pytest.mark.slow
def test_cli_runs_with_json(tmp_path):
    out = tmp_path / "cj"
    proc = run_cli("simulate", "sgd-vs-label-noise", "--n", "10", "--d", "20", "--r", "2", "--steps", "200",
                   "--seeds", "2", "--records", "6", "--json", "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] in ("holds", "partly holds", "does not hold", "not checkable")
    assert out.is_dir()


@pytest.mark.parametrize("args,word", [
    (["--window", "0.5,0.1"], "window"),
    (["--delta-scales", "2,1"], "delta_scales"),
])
def test_cli_bad_input_one_line_exit_2_nothing_written(tmp_path, args, word):
    assert_command_refuses(tmp_path, "simulate", "sgd-vs-label-noise", *args, needle=word)
