"""Label-noise SDEs: diagonal-network kernel vs twin, (a) general vs (b) specialized, GD ↔ SDE, sparsity."""

import numpy as np
import pytest

from dyntools.data import sparse_regression
from dyntools.dynamics import sde_models
from dyntools.dynamics.label_noise_sde_study import sgd_vs_sde, sparsity_mechanism
from dyntools.dynamics.sde import builtin_drift, solve
from dyntools.dynamics.train import train
from dyntools.engine import guard
from dyntools.models import diag_net
from dyntools.models.diag_net import DiagNet
from dyntools.models.quadratic_toy import QuadraticToy
from dyntools.optim.optimizers import sgd

DATA = sparse_regression(n=10, d=20, r=3, seed=1)


@pytest.mark.parametrize("method,init", [("sde", "paper"), ("sgd", "balanced"), ("sde", "gaussian")])
def test_diag_net_kernel_equals_numpy_twin(method, init):
    kw = dict(eta=0.2, delta=0.3, tau=2.0, paths=6, records=11, method=method, substeps=2, init=init,
              eta_after=0.05, switch_tau=1.0)        # 6 paths: a full block of 4 and a partial one
    a = sde_models.simulate_diag_net(DATA, **kw)
    b = sde_models.simulate_diag_net(DATA, kernel="numpy", **kw)
    np.testing.assert_allclose(a["u"], b["u"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-12, atol=1e-14)
    assert a.status == "completed" and a["u"].shape == (6, 11, 20)


@pytest.mark.parametrize("init", ["paper", "gaussian"])
def test_default_initialization_is_the_diag_net_runners(init):
    """u₀, v₀ of path i are DiagNet(d, init=…).init(seed, i): "paper" u₀ = 0.1·1, v₀ = 0 by default."""
    r = sde_models.simulate_diag_net(DATA, eta=0.1, delta=0.1, tau=0.1, paths=5, records=2, seed=7,
                                     **({} if init == "paper" else {"init": init}))
    model = DiagNet(20, init=init)
    theta0 = np.array([model.init(7, i) for i in range(5)])
    assert np.array_equal(r["u"][:, 0], theta0[:, :20]) and np.array_equal(r["v"][:, 0], theta0[:, 20:])
    if init == "paper":
        assert (r["u"][:, 0] == 0.1).all() and (r["v"][:, 0] == 0.0).all()


def test_intensity_and_std_are_inverse():
    assert sde_models.sde_intensity(0.5, 10) == pytest.approx(0.0025)
    assert sde_models.sde_intensity(0.5, 10, sde_models.TOY_SCALE) == pytest.approx(0.000625)
    for scale in (1.0, 0.5):
        assert sde_models.sde_intensity(sde_models.label_noise_std(0.05, 40, scale), 40, scale) == \
            pytest.approx(0.05, rel=1e-15)


def test_general_label_noise_sde_equals_diag_net_kernel_pathwise():
    """(a) with h_θ = ⟨u⊙v, x⟩ and its Jacobian reproduces (b) draw for draw (same δ: the label std)."""
    spec = sde_models.simulate_diag_net(DATA, eta=0.2, delta=1.0, tau=1.0, h=0.02, paths=5, records=6)
    sde = sde_models.label_noise_sde(sde_models.diag_net_model, DATA.X, DATA.y, 40, 0.2, 1.0)
    x0 = np.concatenate([np.full(20, 0.1), np.zeros(20)])           # the default "paper" init
    gen = solve(sde, x0, t1=1.0, h=0.02, paths=5, save_at=spec["tau"], stream="sde.label-noise")
    np.testing.assert_allclose(gen["x"][:, :, :20], spec["u"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gen["x"][:, :, 20:], spec["v"], rtol=1e-10, atol=1e-12)


def test_label_noise_gd_is_em_at_h_equal_eta():
    """The documented normalization: GD with label noise std δ at step η = EM of the SDE (δ̃ = δ²/n²) at h = η."""
    kw = dict(eta=0.1, delta=0.4, tau=1.0, paths=4, records=6)
    gd = sde_models.simulate_diag_net(DATA, method="sgd", **kw)
    em = sde_models.simulate_diag_net(DATA, method="sde", h=0.1, **kw)
    np.testing.assert_allclose(gd["u"], em["u"], rtol=1e-12)
    np.testing.assert_allclose(gd["v"], em["v"], rtol=1e-12, atol=1e-15)
    assert gd.config["delta"] == 0.4 and gd.config["delta_sde"] == pytest.approx((0.4 / 10) ** 2)


def _increment_cov(theta0: np.ndarray, theta1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inc = theta1 - theta0
    return inc.mean(axis=0), np.cov(inc, rowvar=False)


def test_one_delta_gd_label_noise_and_sde_covariances_match_over_one_step():
    """The derivation of dyntools.dynamics.train ("Label noise δ"), numerically: from the same point, one
    step of GD whose targets are y + δξ (the generic trainer, DiagNet, lr η) and one step of the SDE at
    h = η with the same δ have the same increment covariance (ηδ/n)² φᵀφ (and the same mean −η∇L).
    False control: reading δ as the SDE intensity (the old meaning) is off by a factor n²/δ."""
    n, d = DATA.X.shape
    eta, delta, alpha, M = 0.1, 0.5, 0.7, 6000
    theta0 = np.full(2 * d, alpha)
    phi = sde_models.diag_net_jacobian(theta0[:d], theta0[d:], DATA.X)
    expected = (eta * delta / n) ** 2 * phi.T @ phi
    drift = -eta * np.concatenate(diag_net.gradients(theta0[:d], theta0[d:], DATA.X, DATA.y))
    gd = train(DiagNet(d), DATA, sgd(eta), steps=1, sampler="full", label_noise=delta, seeds=M,
               theta0=np.tile(theta0, (M, 1)), record_steps=np.array([0, 1]), seed=3)
    sde = sde_models.simulate_diag_net(DATA, method="sde", eta=eta, h=eta, tau=eta, delta=delta, paths=M,
                                       init="balanced", alpha=alpha, records=2, seed=3)
    sde_theta1 = np.concatenate([sde["u"][:, -1], sde["v"][:, -1]], axis=1)
    mean_gd, cov_gd = _increment_cov(theta0, gd["final_theta"].reshape(M, 2 * d))
    mean_sde, cov_sde = _increment_cov(theta0, sde_theta1)
    scale = np.linalg.norm(expected)
    assert np.linalg.norm(cov_gd - expected) < 0.1 * scale
    assert np.linalg.norm(cov_sde - expected) < 0.1 * scale
    assert np.linalg.norm(cov_gd - cov_sde) < 0.1 * scale
    se = np.sqrt(np.diag(expected) / M) + 1e-15
    assert np.all(np.abs(mean_gd - mean_sde) < 6 * se)
    assert np.all(np.abs(mean_sde - drift) < 6 * se) and np.all(np.abs(mean_gd - drift) < 6 * se)
    old_meaning = eta * delta * eta * phi.T @ phi                   # σ² = ηδ with δ the intensity
    assert np.linalg.norm(cov_gd - old_meaning) > 0.9 * np.linalg.norm(old_meaning)


def test_diag_net_noise_level_matches_theory_one_step():
    """One EM step from u = v = 1 with zero residual: Var(Δu_j) = ηδ̃ h Σ_i X_ij² (v_j = 1), δ̃ = δ²/n²."""
    X = DATA.X
    data = type(DATA)(X, X @ np.ones(20), DATA.X_test, DATA.y_test, np.ones(20))
    r = sde_models.simulate_diag_net(data, eta=0.5, delta=3.0, tau=0.01, h=0.01, paths=4000, init="balanced",
                                     alpha=1.0, records=2)
    du = r["u"][:, -1] - 1.0
    expected = 0.5 * (3.0 / 10) ** 2 * 0.01 * (X**2).sum(axis=0)
    np.testing.assert_allclose(du.var(axis=0), expected, rtol=0.12)


def test_toy_sde_uses_the_toy_loss():
    toy = QuadraticToy.uniform(n=30, seed=2)
    sde = sde_models.toy_sde(toy, 0.5, 0.6)
    for theta in (0.3, 0.9, 1.2):
        out = np.empty(1)
        builtin_drift(0.0, np.array([theta]), sde.args, out)
        assert out[0] == pytest.approx(-toy.gradient(theta))
    # label std δ on the loss ½·(1/2n)Σ(·)²: δ̃ = δ²/(4n²)
    assert sde.args[3] == pytest.approx(2 * np.sqrt(0.5 * 0.6**2 / (4 * 30**2)) * np.linalg.norm(toy.x))


def test_diag_net_blow_up_reported_and_later_recordings_nan():
    kw = dict(eta=5.0, delta=0.0, tau=50.0, h=5.0, paths=3, init="balanced", alpha=2.0, bound=1e3, records=11)
    r = sde_models.simulate_diag_net(DATA, **kw)
    assert r.status == "diverged" and (r["diverged_at"] > 0).all() and "first at step" in r.message
    steps = np.round(r["tau"] / 5.0).astype(int)
    for p in range(3):
        later = steps >= r["diverged_at"][p]          # step k = the state after k steps: not recorded
        assert np.isnan(r["loss"][p, later]).all() and np.isnan(r["u"][p, later]).all()
        assert np.isfinite(r["loss"][p, ~later]).all()
    twin = sde_models.simulate_diag_net(DATA, kernel="numpy", **kw)
    assert np.array_equal(twin["diverged_at"], r["diverged_at"])
    assert np.array_equal(np.isnan(twin["loss"]), np.isnan(r["loss"]))
    assert r["diverged_at"].dtype == np.int64 and guard.NEVER == -1


def test_bad_diag_net_input():
    with pytest.raises(ValueError, match="Invalid delta"):
        sde_models.simulate_diag_net(DATA, eta=0.1, delta=-1.0, tau=1.0)
    with pytest.raises(ValueError, match="Invalid eta"):
        sde_models.simulate_diag_net(DATA, eta=-0.1, delta=0.1, tau=1.0)
    with pytest.raises(ValueError, match="Invalid h"):
        sde_models.simulate_diag_net(DATA, eta=0.1, delta=0.1, tau=1.0, h=0.0)


def test_gd_sde_gap_shrinks_with_eta():
    data = sparse_regression(n=20, d=40, r=3, seed=0)
    res = sgd_vs_sde(data, etas=(0.1, 0.05, 0.025), label_noise=sde_models.label_noise_std(0.05, 20), tau=2.0,
                     paths=64, substeps=8, records=21)
    assert res.status == "completed" and res.summary["verdict"] == "shrinking", res.message
    assert res["gap_loss"][-1] < 0.5 * res["gap_loss"][0]
    assert res["loss_mean_sgd"].shape == (3, res["tau"].size)


def test_sparsity_mechanism_and_noiseless_control():
    data = sparse_regression(n=40, d=100, r=5, seed=0)
    res = sparsity_mechanism(data, eta=0.1, label_noise=sde_models.label_noise_std(0.05, 40), tau=60.0,
                             switch_frac=0.6, paths=2, records=31)
    assert res.status == "completed" and res.summary["verdict"] == "sparse-recovery", res.message
    assert res.summary["off_shrink_before_switch"] < 0.05
    # false control: without label noise (gradient flow) the predictor is not sparse
    assert res.summary["final_test_loss_gd"] > 10 * res.summary["final_test_loss"]
    assert np.median(res["off_gd"][0, -5:]) > 10 * np.median(res["off"][:, -5:])
