"""Figures and metrics for any model (issue 30, item 4): ``dyntools plot`` draws a ``train`` result."""

from pathlib import Path

import numpy as np

import dyntools as dt
from dyntools import store
from tests.byo_model import Affine
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
X = np.random.default_rng(1).normal(size=(24, 3))


class Data:
    X, y = X, X @ np.array([1.0, -1.0, 2.0]) + 0.5
    X_test, y_test = X[:6] * 1.1, X[:6] @ np.array([1.0, -1.0, 2.0]) + 0.5


def test_plot_draws_a_train_result_of_a_user_model(tmp_path):
    res = dt.train(Affine(3), Data(), [dt.sgd(lr=0.05), dt.adam(lr=0.05)], steps=60, batch=4, seeds=2,
                   records=8, step_loss=True)
    res.arrays["grad_norm"] = np.abs(res["train_loss"]) ** 0.5      # a metric recorded on the same grid
    out = store.save(res, tmp_path / "run")
    proc = run_cli("plot", out, "--format", "png", env={"PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    figures = Path(out) / "figures"
    assert (figures / "train_loss.png").stat().st_size > 10_000
    assert (figures / "train_metrics.png").stat().st_size > 10_000


def test_metrics_of_a_user_model_quadratic_exact_hessian():
    """Affine model, L = (1/2n)‖Jθ − y‖² with J = [X, 1]: ∇²L = JᵀJ/n exactly. Lanczos on the finite-difference
    Hessian–vector products gives its λ_max to 1e-6 relative; rank and column norms are those of J."""
    from dyntools.model_metrics import model_metrics

    model, theta = Affine(3), np.array([0.5, -0.2, 0.0, 1.0])
    J = np.hstack([X, np.ones((X.shape[0], 1))])
    out = model_metrics(model, theta, X, Data.y, block=slice(0, 3))
    exact = np.linalg.eigvalsh(J.T @ J / X.shape[0])[-1]
    assert abs(out["sharpness"] - exact) <= 1e-6 * exact
    assert out["jacobian_rank"] == 4 and out["l0"] == 2
    np.testing.assert_allclose(out["column_norms"], np.linalg.norm(J, axis=0), rtol=1e-12)


def test_metrics_of_the_diagonal_net_match_its_exact_hessian():
    """The diagonal net (a non-quadratic loss): sharpness by Lanczos on finite differences of its gradient
    kernel equals λ_max of the closed-form Hessian (models.diag_net.hessian) to 1e-5 relative."""
    from dyntools.model_metrics import model_metrics
    from dyntools.models import diag_net

    rng = np.random.default_rng(4)
    Xd, d = rng.normal(size=(10, 6)), 6
    yd = Xd @ np.r_[1.0, -1.0, np.zeros(4)]
    model = diag_net.DiagNet(d)
    theta = model.init(0)
    u, v = theta[:d], theta[d:]
    exact = np.linalg.eigvalsh(diag_net.hessian(u, v, Xd, yd))[-1]
    out = model_metrics(model, theta, Xd, yd)
    assert abs(out["sharpness"] - exact) <= 1e-5 * abs(exact), (out["sharpness"], exact)
    assert out["jacobian_rank"] == np.linalg.matrix_rank(model.jacobian(theta, Xd))


def test_network_metrics_of_a_model_without_layers_names_the_generic_function():
    """The layered-network metrics need an MLP's hooks; any other model gets one error that says which hooks
    are missing and where its metrics are (was: "'LinNet' object has no attribute 'n_layers'")."""
    import pytest

    with pytest.raises(TypeError, match=r"model 'my-affine' has no n_layers, forward_np.*dt.model_metrics"):
        dt.metrics.network_metrics(Affine(3), np.zeros((1, 1, 4)), X, Data.y)
