"""The 2-D surfaces of the trajectory gallery (dyntools.models.surfaces): gradients against sympy's
derivatives of independently written formulas and against finite differences, the compiled kernel against
its NumPy twin, seeded gradient noise through dt.train, and the domain checks."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dyntools as dt
from dyntools.models import surfaces as S

x, y = sp.symbols("x y", real=True)
#: the surfaces written again from their textbook definitions (not from the module's code)
FORMULAS = {
    "quadratic": sp.Rational(1, 2) * (x**2 + 20 * y**2),
    "rosenbrock": (1 - x) ** 2 + 100 * (y - x**2) ** 2,
    "beale": (sp.Rational(3, 2) - x + x * y) ** 2 + (sp.Rational(9, 4) - x + x * y**2) ** 2
    + (sp.Rational(21, 8) - x + x * y**3) ** 2,
    "saddle": x**2 + y**4 / 4 - y**2 / 2,
    "himmelblau": (x**2 + y - 11) ** 2 + (x + y**2 - 7) ** 2,
    "diag-net": (x * y - 1) ** 2,
}
SYMPY = {name: (sp.lambdify((x, y), f), sp.lambdify((x, y), [sp.diff(f, x), sp.diff(f, y)]))
         for name, f in FORMULAS.items()}


def point_in(spec, a, b):
    x0, x1, y0, y1 = spec.box
    return x0 + a * (x1 - x0), y0 + b * (y1 - y0)


@pytest.mark.parametrize("name", S.NAMES)
@settings(max_examples=25, deadline=None)
@given(a=st.floats(0, 1), b=st.floats(0, 1))
def test_gradient_is_sympys_derivative(name, a, b):
    spec = S.surface(name)
    px, py = point_in(spec, a, b)
    grad = np.empty(2)
    f = S.value_grad(spec.code, px, py, np.array(spec.fargs or (0.0,)), grad)
    f_ref, g_ref = SYMPY[name]
    scale = 1.0 + abs(f_ref(px, py))
    assert f == pytest.approx(f_ref(px, py), rel=1e-12, abs=1e-12 * scale)
    np.testing.assert_allclose(grad, g_ref(px, py), rtol=1e-11, atol=1e-10 * scale)


@pytest.mark.parametrize("name", S.NAMES)
def test_gradient_matches_central_differences(name):
    model = dt.Surface(name)
    rng = np.random.default_rng(0)
    x0, x1, y0, y1 = model.spec.box
    px, py = rng.uniform(x0, x1, 20), rng.uniform(y0, y1, 20)
    h = 1e-6
    fd_x = (model.value(px + h, py) - model.value(px - h, py)) / (2 * h)
    fd_y = (model.value(px, py + h) - model.value(px, py - h)) / (2 * h)
    gx, gy = model.gradient(px, py)
    scale = 1.0 + np.abs(model.value(px, py))
    assert np.all(np.abs(gx - fd_x) <= 1e-5 * (np.abs(fd_x) + scale))
    assert np.all(np.abs(gy - fd_y) <= 1e-5 * (np.abs(fd_y) + scale))


@pytest.mark.parametrize("name", S.NAMES)
@settings(max_examples=20, deadline=None)
@given(a=st.floats(0, 1), b=st.floats(0, 1), n0=st.floats(-2, 2), n1=st.floats(-2, 2))
def test_kernel_equals_twin(name, a, b, n0, n1):
    model = dt.Surface(name)
    theta = np.array(point_in(model.spec, a, b))
    iargs, fargs = model.kernel_args()
    noise = np.array([n0, n1])
    data = model.data()
    g1, g2 = np.empty(2), np.empty(2)
    idx = np.arange(2)
    f1 = S.loss_grad(theta, data.X, data.y, idx, 2, noise, g1, np.zeros(0), iargs, fargs)
    f2 = S.loss_grad_np(theta, data.X, data.y, idx, 2, noise, g2, np.zeros(0), iargs, fargs)
    assert f1 == pytest.approx(f2, rel=1e-13, abs=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-13, atol=1e-12 * (1 + abs(f1)))


def test_minima_are_stationary_and_at_f_star():
    for name in S.NAMES:
        model = dt.Surface(name)
        pts = list(model.spec.minima) + ([] if model.minimum_curve() is None else list(model.minimum_curve()[::50]))
        for px, py in pts:
            assert model.value(px, py) == pytest.approx(model.spec.f_min, abs=1e-10)
            np.testing.assert_allclose(model.gradient(px, py), 0.0, atol=1e-4)


def test_gradient_noise_is_seeded_and_the_numpy_twin_draws_the_same():
    model = dt.Surface("quadratic")
    opt = dt.sgd(0.01)
    kw = dict(steps=300, sampler="full", label_noise=0.3, record_steps=np.arange(301))
    a = dt.train(model, model.data(), opt, seed=4, **kw)
    b = dt.train(model, model.data(), opt, seed=4, **kw)
    c = dt.train(model, model.data(), opt, seed=5, **kw)
    twin = dt.train(model, model.data(), opt, seed=4, kernel="numpy", **kw)
    np.testing.assert_array_equal(a["theta"], b["theta"])
    assert not np.allclose(a["theta"], c["theta"])
    np.testing.assert_allclose(a["theta"], twin["theta"], rtol=1e-12, atol=1e-14)
    # noise-free SGD on ½(x² + 20y²) is θ_t = (1 − η diag(1, 20))^t θ_0 exactly
    quiet = dt.train(model, model.data(), opt, seed=4, **{**kw, "label_noise": 0.0})
    t = np.arange(301)[:, None]
    expect = model.start * (1 - 0.01 * np.array([1.0, 20.0])) ** t
    np.testing.assert_allclose(quiet["theta"][0, 0], expect, rtol=1e-12, atol=1e-300)
    # the noise is σ ξ_t added to the gradient: d = noisy − quiet obeys d_{t+1} = (1 − ηA) d_t − η σ ξ_t, and the
    # recovered ξ are standard normals (600 draws)
    d = a["theta"][0, 0] - quiet["theta"][0, 0]
    xi = -(d[1:] - (1 - 0.01 * np.array([1.0, 20.0])) * d[:-1]) / (0.01 * 0.3)
    assert abs(xi.mean()) < 0.15 and 0.85 < xi.std() < 1.15


@pytest.mark.parametrize("call, match", [
    (lambda: dt.Surface("sphere"), "Invalid surface"),
    (lambda: dt.Surface("rosenbrock", start=(5.0, 0.0)), "Invalid start: .* outside the rosenbrock"),
    (lambda: dt.Surface("beale", start=(1.0,)), "Invalid start"),
    (lambda: dt.Surface("beale", start=(np.nan, 0.0)), "Invalid start"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
