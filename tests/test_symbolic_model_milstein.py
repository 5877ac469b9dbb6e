"""Milstein for a symbolic model's label-noise SDE (issue 25.3): the exact commutativity decision, the generated
correction against its NumPy twin and hand-derived references, the refusal, and the strong orders."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import dyntools as dt
from dyntools.dynamics import sde_models
from dyntools.models import symbolic_examples


def _tanh_model(coordinates=None):
    a, x = sp.symbols("a x")
    return dt.SymbolicModel(sp.tanh(a * x), params=[a], inputs=x, coordinates=coordinates, name="tanh")


def _two_factor_dense():
    a, b, x = sp.symbols("a b x")
    return dt.SymbolicModel(a * b * x, params=[a, b], inputs=x, name="ab")


def _linear():
    a, b, x0, x1 = sp.symbols("a b x0 x1")
    return dt.SymbolicModel(a * x0 + b * x1, params=[a, b], inputs=[x0, x1], name="linear")


def _commutator_np(model, theta, xa, xb):
    """∇²h(x_b)∇h(x_a) − ∇²h(x_a)∇h(x_b) from the NumPy hooks (a numeric cross-check, not the decision)."""
    mod = model.numpy_module
    Ja, Jb = (mod.jacobian(theta, r[None])[0, 0] for r in (xa, xb))
    return (mod.hessian_direction(theta, xb[None], Ja)[0, 0] - mod.hessian_direction(theta, xa[None], Jb)[0, 0])


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("make,X,scope", [
    (symbolic_examples.quadratic_toy, RNG.standard_normal((3, 1)), "any data"),        # h = xθ²: σ_a ∝ x_a θ
    (lambda: symbolic_examples.diagonal_net(3), RNG.standard_normal((4, 3)), "any data"),
    (lambda: symbolic_examples.diagonal_net(3, depth=3), RNG.standard_normal((4, 3)), "any data"),
    (_two_factor_dense, RNG.standard_normal((3, 1)), "any data"),
    (_linear, RNG.standard_normal((3, 2)), "any data"),                                 # additive noise
    (_tanh_model, np.array([[0.5]]), "this data"),                                    # one noise column
    (_tanh_model, np.array([[0.5], [0.5], [0.5]]), "this data"),                      # copies of one column
])
def test_commutative_noise_is_proved(make, X, scope):
    model = make()
    verdict = model.noise_commutativity(X)
    assert verdict.holds is True and verdict.scope == scope
    theta = np.random.default_rng(0).standard_normal(model.n_params)              # numeric sanity check
    for a in range(X.shape[0]):
        for b in range(a):
            assert np.allclose(_commutator_np(model, theta, X[a], X[b]), 0.0, atol=1e-12)


@pytest.mark.parametrize("make,X,pair", [
    (_tanh_model, np.array([[0.5], [1.5]]), (0, 1)),          # a 1-parameter model on two inputs: not commutative
    (_tanh_model, np.array([[0.5], [0.5], [1.5]]), (0, 2)),   # the copy of row 0 is skipped
    (lambda: _tanh_model(coordinates=2), np.array([[0.5, 1.0], [0.5, -2.0]]), (0, 1)),
    (lambda: symbolic_examples.relu_net(2, 3), RNG.standard_normal((3, 2)), (0, 1)),   # the ReLU net
])
def test_non_commutative_noise_is_refuted_at_a_certified_point(make, X, pair):
    model = make()
    verdict = model.noise_commutativity(X)
    assert verdict.holds is False and verdict.pair == pair
    if model.coordinates is None:         # the certificate: the commutator is non-zero at the exact point given
        names = model.param_names
        theta = np.array([float(verdict.point[nm]) for nm in names])
        value = _commutator_np(model, theta, X[pair[0]], X[pair[1]])[names.index(verdict.component)]
        assert value == pytest.approx(float(sp.sympify(verdict.value)), rel=1e-9) and value != 0
    else:
        assert verdict.component == "a_1"                   # coordinate 1: inputs 1.0 and −2.0 differ


def test_milstein_on_non_commutative_noise_is_one_clear_error():
    X, y = np.array([[0.5], [1.5]]), np.array([0.1, 0.2])
    sde = sde_models.label_noise_sde(_tanh_model(), X, y, 0.1, 1.0)
    with pytest.raises(ValueError, match=r"'milstein' needs commutative noise.*not commutative — columns 0 and 1 "
                                         r"\(data points 0 and 1\).*use scheme='em'"):
        dt.solve(sde, 0.3, t1=0.2, h=0.1, scheme="milstein", kernel="numpy")
    assert dt.solve(sde, 0.3, t1=0.2, h=0.1, kernel="numpy").status == "completed"   # EM needs no decision


def test_generated_correction_equals_its_twin_and_the_hand_derived_terms():
    rng = np.random.default_rng(1)
    h = 0.01
    # quadratic toy (dense): ∇h = 2xθ, ∇²h = 2x ⇒ ½ Σ_i 2x_i (dw_i Σ_a dw_a 2x_a θ − h 2x_i θ) = 2θ((x·dw)² − h‖x‖²)
    toy = symbolic_examples.quadratic_toy()
    X, dw, th = rng.standard_normal((5, 1)), rng.standard_normal(5), np.array([0.7])
    out = np.empty(1)
    toy.milstein_correction(X)(th, X, dw, h, out)
    ref = 2 * th * ((X[:, 0] @ dw) ** 2 - h * X[:, 0] @ X[:, 0])
    np.testing.assert_allclose(out, ref, rtol=1e-13)
    np.testing.assert_allclose(toy.milstein_correction_np(th, X, dw, h), ref, rtol=1e-13)
    # diagonal net u ⊙ v (coordinatewise): ∇²h(x) swaps the blocks times x ⇒ ½ θ ⊙ [(Xᵀdw)² − h Σ_i x_i²] per block
    net = symbolic_examples.diagonal_net(3)
    X, th = rng.standard_normal((5, 3)), rng.standard_normal(6)
    out = np.empty(6)
    net.milstein_correction(X)(th, X, dw, h, out)
    ref = 0.5 * th * np.tile((X.T @ dw) ** 2 - h * (X**2).sum(0), 2)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    np.testing.assert_allclose(net.milstein_correction_np(th, X, dw, h), ref, rtol=1e-12)
    # depth 3 and a dense two-factor model: kernel against the twin; additive noise has no correction
    for model, Xm in ((symbolic_examples.diagonal_net(3, depth=3), X), (_two_factor_dense(), X[:, :1]),
                      (_linear(), X[:, :2])):
        th = rng.standard_normal(model.n_params)
        out = np.empty(model.n_params)
        model.milstein_correction(Xm)(th, Xm, dw, h, out)
        np.testing.assert_allclose(out, model.milstein_correction_np(th, Xm, dw, h), rtol=1e-12, atol=1e-15)
    assert np.all(out == 0.0)


def test_numba_engine_equals_its_twin_on_commutative_noise():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((3, 2))
    sde = sde_models.label_noise_sde(symbolic_examples.diagonal_net(2), X, X[:, 0], 0.5, 2.0)
    args = dict(t1=0.5, h=0.05, paths=3, scheme="milstein", seed=4, records=6)
    a = dt.solve(sde, np.array([0.5, 0.4, 0.3, 0.2]), **args)
    b = dt.solve(sde, np.array([0.5, 0.4, 0.3, 0.2]), kernel="numpy", **args)
    assert a.config["noise"] == "commutative"
    np.testing.assert_allclose(a["x"], b["x"], rtol=1e-12)
    em = dt.solve(sde, np.array([0.5, 0.4, 0.3, 0.2]), **dict(args, scheme="em", kernel="numpy"))
    assert not np.allclose(em["x"][:, -1], b["x"][:, -1], rtol=1e-6)      # the correction is really applied


def test_strong_order_one_against_em_one_half():
    """Strong error E|θ_h(T) − θ_ref(T)| against h on the same Brownian path (fine reference h = 1/256 by Milstein,
    coarse runs summing its increments), 100 paths: fitted slopes ≈ ½ for EM and ≈ 1 for Milstein."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 1))
    sde = sde_models.label_noise_sde(symbolic_examples.quadratic_toy(), X, 0.25 * X[:, 0], 1.0, 3.0)
    href, hs = 1 / 256, np.array([1 / 8, 1 / 16, 1 / 32])
    run = dict(t1=1.0, paths=100, seed=3, records=2, kernel="numpy")
    ref = dt.solve(sde, 0.8, h=href, scheme="milstein", **run)["x"][:, -1, 0]
    slopes, errors = {}, {}
    for scheme in ("em", "milstein"):
        errors[scheme] = [np.mean(np.abs(dt.solve(sde, 0.8, h=h, substeps=int(round(h / href)), scheme=scheme,
                                                  **run)["x"][:, -1, 0] - ref)) for h in hs]
        slopes[scheme] = np.polyfit(np.log(hs), np.log(errors[scheme]), 1)[0]
    assert 0.35 <= slopes["em"] <= 0.8, slopes
    assert 0.8 <= slopes["milstein"] <= 1.4, slopes
    assert np.all(np.array(errors["milstein"]) < np.array(errors["em"]))
