"""Label-noise SDEs: diagonal-network kernel vs twin, (a) general vs (b) specialized, GD ↔ SDE, sparsity."""

import numpy as np
import pytest

from dyntools.data import sparse_regression
from dyntools.dynamics import sde_models
from dyntools.dynamics.sde import builtin_drift, solve
from dyntools.models.quadratic_toy import QuadraticToy
from simulations.sde_label_noise import sgd_vs_sde, sparsity_mechanism

DATA = sparse_regression(n=10, d=20, r=3, seed=1)


@pytest.mark.parametrize("method", ["sde", "sgd"])
def test_diag_net_kernel_equals_numpy_twin(method):
    kw = dict(eta=0.2, delta=0.01, tau=2.0, paths=6, records=11, method=method, substeps=2,
              eta_after=0.05, switch_tau=1.0)        # 6 paths: a full block of 4 and a partial one
    a = sde_models.simulate_diag_net(DATA, **kw)
    b = sde_models.simulate_diag_net(DATA, kernel="numpy", **kw)
    np.testing.assert_allclose(a["u"], b["u"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-12, atol=1e-14)
    assert a.status == "completed" and a["u"].shape == (6, 11, 20)


def test_general_label_noise_sde_equals_diag_net_kernel_pathwise():
    """(a) with h_θ = ⟨u⊙v, x⟩ and its Jacobian reproduces (b) draw for draw."""
    spec = sde_models.simulate_diag_net(DATA, eta=0.2, delta=0.01, tau=1.0, h=0.02, paths=5, records=6)
    sde = sde_models.label_noise_sde(sde_models.diag_net_model, DATA.X, DATA.y, 40, 0.2, 0.01)
    gen = solve(sde, np.full(40, 0.1), t1=1.0, h=0.02, paths=5, save_at=spec["tau"], stream_key=(0xD1A6,))
    np.testing.assert_allclose(gen["x"][:, :, :20], spec["u"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gen["x"][:, :, 20:], spec["v"], rtol=1e-10, atol=1e-12)


def test_label_noise_gd_is_em_at_h_equal_eta():
    """The documented normalization: GD with label noise std n√δ at step η = EM of the SDE at h = η."""
    kw = dict(eta=0.1, delta=0.02, tau=1.0, paths=4, records=6)
    gd = sde_models.simulate_diag_net(DATA, method="sgd", **kw)
    em = sde_models.simulate_diag_net(DATA, method="sde", h=0.1, **kw)
    np.testing.assert_allclose(gd["u"], em["u"], rtol=1e-12)
    assert gd.config["label_noise_std"] == pytest.approx(10 * np.sqrt(0.02))


def test_diag_net_noise_level_matches_theory_one_step():
    """One EM step from u = v = 1 with zero residual: Var(Δu_j) = ηδ h Σ_i X_ij² (v_j = 1)."""
    X = DATA.X
    data = type(DATA)(X, X @ np.ones(20), DATA.X_test, DATA.y_test, np.ones(20))
    r = sde_models.simulate_diag_net(data, eta=0.5, delta=0.1, tau=0.01, h=0.01, paths=4000, alpha=1.0,
                                     records=2)
    du = r["u"][:, -1] - 1.0
    expected = 0.5 * 0.1 * 0.01 * (X**2).sum(axis=0)
    np.testing.assert_allclose(du.var(axis=0), expected, rtol=0.12)


def test_toy_sde_uses_the_toy_loss():
    toy = QuadraticToy.uniform(n=30, seed=2)
    sde = sde_models.toy_sde(toy, 0.5, 1e-4)
    for theta in (0.3, 0.9, 1.2):
        out = np.empty(1)
        builtin_drift(0.0, np.array([theta]), sde.args, out)
        assert out[0] == pytest.approx(-toy.gradient(theta))
    assert sde.args[3] == pytest.approx(2 * np.sqrt(0.5e-4) * np.linalg.norm(toy.x))


def test_diag_net_blow_up_reported():
    r = sde_models.simulate_diag_net(DATA, eta=5.0, delta=0.0, tau=50.0, h=5.0, paths=3, alpha=2.0, bound=1e3)
    assert r.status == "diverged" and (r["stopped_at"] > 0).all()


def test_bad_diag_net_input():
    with pytest.raises(ValueError, match="Invalid delta"):
        sde_models.simulate_diag_net(DATA, eta=0.1, delta=-1.0, tau=1.0)
    with pytest.raises(ValueError, match="Invalid eta"):
        sde_models.simulate_diag_net(DATA, eta=-0.1, delta=0.1, tau=1.0)
    with pytest.raises(ValueError, match="Invalid h"):
        sde_models.simulate_diag_net(DATA, eta=0.1, delta=0.1, tau=1.0, h=0.0)


def test_gd_sde_gap_shrinks_with_eta():
    data = sparse_regression(n=20, d=40, r=3, seed=0)
    res = sgd_vs_sde(data, etas=(0.1, 0.05, 0.025), delta=0.05, tau=2.0, paths=64, substeps=8, records=21)
    assert res.status == "completed" and res.summary["verdict"] == "shrinking", res.message
    assert res["gap_loss"][-1] < 0.5 * res["gap_loss"][0]
    assert res["loss_mean_sgd"].shape == (3, res["tau"].size)


def test_sparsity_mechanism_and_noiseless_control():
    data = sparse_regression(n=40, d=100, r=5, seed=0)
    res = sparsity_mechanism(data, eta=0.1, delta=0.05, tau=60.0, switch_frac=0.6, paths=2, records=31)
    assert res.status == "completed" and res.summary["verdict"] == "sparse-recovery", res.message
    assert res.summary["off_shrink_before_switch"] < 0.05
    # false control: without label noise (gradient flow) the predictor is not sparse
    assert res.summary["final_test_loss_gd"] > 10 * res.summary["final_test_loss"]
    assert np.median(res["off_gd"][0, -5:]) > 10 * np.median(res["off"][:, -5:])
