"""A SymbolicModel in the SDE engine: dt.sde_models.label_noise_sde(model, X, y, eta, delta) (issue 25.3)."""

from __future__ import annotations

import numpy as np
import pytest

import dyntools as dt
from dyntools.dynamics import sde_models
from dyntools.models import symbolic_examples


def _data(n=9, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, X[:, 0] + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("depth", [2, 3])
def test_drift_is_minus_the_gradient_and_diffusion_is_the_scaled_jacobian(depth):
    X, y = _data()
    model = symbolic_examples.diagonal_net(4, depth=depth)
    eta, delta = 0.1, 0.5
    sde = sde_models.label_noise_sde(model, X, y, eta, delta)
    theta = np.random.default_rng(1).standard_normal(model.n_params)
    drift = np.empty(model.n_params)
    sde.drift(0.0, theta, sde.args, drift)
    np.testing.assert_allclose(drift, -model.gradient(theta, X, y), rtol=1e-13, atol=1e-15)
    diff = np.empty((model.n_params, X.shape[0]))
    sde.diffusion(0.0, theta, sde.args, diff)
    intensity = (delta / X.shape[0]) ** 2                    # δ̃ = (scale δ / n)², scale = 2 · ½
    np.testing.assert_allclose(diff, np.sqrt(eta * intensity) * model.jacobian(theta, X).T, rtol=1e-13)


def test_symbolic_diagonal_net_sde_paths_equal_the_hand_written_model():
    X, y = _data(n=6, d=3)
    sym = symbolic_examples.diagonal_net(3)
    a = sde_models.label_noise_sde(sym, X, y, 0.05, 1.0)
    b = sde_models.label_noise_sde(sde_models.diag_net_model, X, y, 6, 0.05, 1.0)
    theta0 = np.concatenate([np.full(3, 0.5), np.full(3, 0.5)])
    ra = dt.solve(a, theta0, t1=0.5, h=0.01, paths=4, seed=2, records=11, kernel="numpy")   # the solver's twin:
    rb = dt.solve(b, theta0, t1=0.5, h=0.01, paths=4, seed=2, records=11, kernel="numpy")   # no solver compile
    np.testing.assert_allclose(ra["x"], rb["x"], rtol=1e-12)


def test_a_cross_entropy_model_has_no_label_noise_sde():
    model = symbolic_examples.relu_net(2, 3, outputs=2, head="cross-entropy")
    with pytest.raises(ValueError, match="regression head"):
        sde_models.label_noise_sde(model, np.zeros((3, 2)), np.zeros(3), 0.1, 1.0)
