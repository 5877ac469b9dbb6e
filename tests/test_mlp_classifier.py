"""The spiral data and the numba MLP classifier: twins, finite differences, training."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import data
from dyntools.engine import streams
from dyntools.models import mlp_classifier as M
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S


@pytest.fixture(scope="module")
def spiral():
    return data.spirals(200, turns=1.0, noise=0.05, n_val=100, seed=3)


def test_spirals_shapes_balance_and_determinism():
    d = data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=1)
    assert d.X.shape == (300, 2) and d.X_val.shape == (300, 2)
    assert np.bincount(d.y).tolist() == [100, 100, 100]
    d2 = data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=1)
    np.testing.assert_array_equal(d.X, d2.X)
    assert not np.array_equal(d.X, data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=2).X)
    # without noise every point lies on its arm: angle − 2π·turns·r ≡ 2πk/K
    clean = data.spirals(90, classes=3, turns=1.25, noise=0.0, seed=0)
    r = np.hypot(*clean.X.T)
    phase = np.arctan2(clean.X[:, 1], clean.X[:, 0]) - 2 * np.pi * 1.25 * r - 2 * np.pi * clean.y / 3
    np.testing.assert_allclose(np.cos(phase), 1.0, atol=1e-9)


@pytest.mark.parametrize("kwargs, match", [({"n": 1}, "Invalid n"), ({"turns": 0}, "Invalid turns"),
                                           ({"noise": -1}, "Invalid noise"),
                                           ({"classes": 1}, "Invalid classes")])
def test_spirals_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        data.spirals(**kwargs)


@settings(max_examples=20, deadline=None)
@given(hidden=st.lists(st.integers(1, 9), min_size=1, max_size=3), classes=st.integers(2, 4),
       seed=st.integers(0, 1000))
def test_compiled_forward_backward_equals_numpy_twin(hidden, classes, seed):
    d = data.spirals(40, classes=classes, seed=seed)
    model = M.MLPClassifier.make(2, hidden, classes)
    theta = model.init_params(seed, 7)
    idx = np.arange(0, 40, 3)
    loss, grad = M.loss_and_grad(model, theta, d.X, d.y, idx)
    loss_np, grad_np = M.loss_and_grad_np(model, theta, d.X[idx], d.y[idx])
    assert loss == pytest.approx(loss_np, rel=1e-13)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-11, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 5), kdim=st.integers(1, 20), n=st.integers(1, 9), transposed=st.booleans(),
       seed=st.integers(0, 1000))
def test_grouped_product_kernel_equals_matmul(m, kdim, n, transposed, seed):
    """``_gemm`` (groups of 8 along the contraction, two rows at a time, remainders) is ``out + C @ In``:
    exactly on small integers (every partial sum is representable), to rounding on floats."""
    rng = np.random.default_rng(seed)
    for ints in (True, False):
        draw = (lambda *s: rng.integers(-9, 10, s).astype(float)) if ints else (lambda *s: rng.standard_normal(s))
        C = draw(kdim, m).T if transposed else draw(m, kdim)
        In, out0 = draw(kdim, n), draw(m, n)
        out = out0.copy()
        M._gemm(out, C, In, m, kdim, n)
        want = out0 + C @ In
        if ints:
            np.testing.assert_array_equal(out, want)
        else:
            assert np.all(np.abs(out - want) <= 1e-14 * (np.abs(out0) + np.abs(C) @ np.abs(In)))


def test_gradient_matches_central_finite_differences(spiral):
    model = M.MLPClassifier.make(2, (6, 5, 4), 2)
    theta = model.init_params(1, 2) * 3.0
    idx = np.arange(32)
    _, grad = M.loss_and_grad(model, theta, spiral.X, spiral.y, idx)
    h = 1e-6
    fd = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (M.loss_and_grad(model, theta + e, spiral.X, spiral.y, idx)[0]
                 - M.loss_and_grad(model, theta - e, spiral.X, spiral.y, idx)[0]) / (2 * h)
    assert np.max(np.abs(fd - grad)) < 1e-7 * max(1.0, np.abs(grad).max())
    # false control: a perturbed gradient is caught by the same check
    bad = grad.copy()
    bad[5] += 1e-4
    assert np.max(np.abs(fd - bad)) > 1e-7


def test_init_stream_twin_and_bounds():
    state = streams.path_states(2, 1, 3)
    np.testing.assert_array_equal(M._uniform_pm(state.copy(), 50), M._uniform_pm_np(state.copy(), 50))
    model = M.MLPClassifier.make(2, (4, 9), 3)
    theta = model.init_params(0, 1)
    for (W, b), fan_in in zip(model.unflatten(theta), (2, 4, 9)):
        assert np.all(np.abs(W) <= fan_in ** -0.5) and np.all(np.abs(b) <= fan_in ** -0.5)
    assert not np.array_equal(theta, model.init_params(0, 2))


def test_epoch_batches_twin_and_coverage():
    state = streams.path_states(5, 1, 9)
    a = M.epoch_batches(state.copy(), 50, 14, 7)
    b = M.epoch_batches_np(state.copy(), 50, 14, 7)
    np.testing.assert_array_equal(a, b)
    flat = a.ravel()
    assert sorted(flat[:50].tolist()) == list(range(50))     # one epoch = one permutation


@pytest.mark.parametrize("opt", [O.adamw(5e-3, weight_decay=0.05),
                                 O.sgd(0.1, momentum=0.9, weight_decay=1e-3),
                                 O.rmsprop(1e-3, centered=True), O.adagrad(0.05)], ids=lambda o: o.name)
def test_compiled_training_equals_numpy_twin(spiral, opt):
    model = M.MLPClassifier.make(2, (8, 8, 8), 2)
    theta0 = model.init_params(0, 1)
    batches = M.epoch_batches(streams.path_states(0, 1, 2), len(spiral.y), 40, 16)
    mults = S.CosineAnnealingLR(40).multipliers(40)
    th_c, curve_c, div_c = M.train_compiled(model, theta0, spiral.X, spiral.y, batches, opt, mults, 10)
    th_n, curve_n, div_n = M.train_np(model, theta0, spiral.X, spiral.y, batches, opt, mults, 10)
    assert div_c == div_n == -1
    np.testing.assert_allclose(th_c, th_n, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(curve_c, curve_n, rtol=1e-10)


def test_training_learns_the_spirals_and_divergence_is_reported(spiral):
    model = M.MLPClassifier.make(2, (32, 32, 32), 2)
    theta0 = model.init_params(0, 1)
    batches = M.epoch_batches(streams.path_states(0, 1, 2), len(spiral.y), 600, 32)
    th, curve, div = M.train_compiled(model, theta0, spiral.X, spiral.y, batches, O.adam(1e-2), None, 100)
    assert div == -1 and curve[-1] < 0.5 * curve[0]
    loss, acc = M.evaluate(th, model.sizes_array, model.offsets, spiral.X_val, spiral.y_val)
    assert acc > 0.8
    _, _, div = M.train_compiled(model, theta0, spiral.X, spiral.y, batches, O.sgd(1e300), None, 100)
    assert 0 <= div < 600


def test_digits_extra_is_clear_about_scikit_learn():
    from simulations.adamw_heatmaps import GridConfig

    try:
        import sklearn  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="Invalid data set: 'digits' needs scikit-learn"):
            GridConfig(dataset="digits")
    else:
        cfg = GridConfig(dataset="digits", n_lr=1, n_wd=1)
        assert cfg.classes == 10 and cfg.n + cfg.n_val == 1797
    with pytest.raises(ValueError, match="Invalid dataset"):
        GridConfig(dataset="mnist")


def test_plateau_schedule_in_chunks_equals_replayed_multipliers(spiral):
    """Chunked training with ReduceLROnPlateau equals one run with the multipliers it produced."""
    model = M.MLPClassifier.make(2, (8, 8, 8), 2)
    theta0 = model.init_params(0, 1)
    batches = M.epoch_batches(streams.path_states(0, 1, 2), len(spiral.y), 120, 20)
    plateau = S.ReduceLROnPlateau(factor=0.5, patience=1, threshold=0.05)
    opt = O.adam(2e-2)
    th_p, curve_p, div = M.train_compiled(model, theta0, spiral.X, spiral.y, batches, opt, None, 10,
                                          plateau=plateau, plateau_every=10)
    assert div == -1
    metrics = curve_p[:-1]                       # one chunk = one record here
    mults = np.repeat(plateau.multipliers_from_metrics(metrics), 10)
    assert mults.min() < 1.0                     # the schedule did act
    th_r, curve_r, _ = M.train_compiled(model, theta0, spiral.X, spiral.y, batches, opt, mults, 10)
    np.testing.assert_allclose(th_p, th_r, rtol=1e-12, atol=1e-14)
