"""The one MLP (dyntools.models.mlp): layout, kernels against their NumPy twins and finite differences,
the Jacobian, initializations, both heads, and training through dyntools.train (tuned loop == generic
loop, compiled == NumPy twin, reactive plateau schedule, divergence)."""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dyntools import data
from dyntools.dynamics import fast
from dyntools.dynamics.fast import mlp as fast_mlp
from dyntools.dynamics.fast.mlp import sgd_step_checked
from dyntools.dynamics.train import train
from dyntools.engine import guard, streams
from dyntools.metrics import network_metrics
from dyntools.models import mlp as MM
from dyntools.models.mlp import MLP, jacobian_fd
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S
from tests import optim_step


def _loss_grad(model, theta, X, y, idx, noise=None, kernel="numba"):
    b = len(idx)
    iargs, fargs = model.kernel_args()
    grad = np.full(model.n_params, np.nan)
    fn = model.loss_grad if kernel == "numba" else model.loss_grad_np
    noise = np.zeros(b) if noise is None else noise
    loss = fn(np.asarray(theta, dtype=np.float64), X, y, np.asarray(idx, dtype=np.int64), b, noise, grad,
              np.zeros(model.workspace_size(b)), iargs, fargs)
    return loss, grad


def _problem(widths, biases, head, seed, n=12):
    model = MLP(widths, biases=biases, head=head)
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(model.n_params) * 0.7
    X = rng.standard_normal((n, widths[0]))
    y = rng.standard_normal(n) if head == "regression" else rng.integers(0, widths[-1], n)
    return model, theta, X, y


nets = st.tuples(st.integers(1, 4), st.lists(st.integers(1, 9), min_size=0, max_size=3),
                 st.sampled_from(["regression", "cross-entropy"]), st.integers(2, 4), st.integers(0, 10_000))


def _widths(d, hidden, head, classes):
    return (d, *hidden, 1 if head == "regression" else classes)


# ------------------------------------------------------------------------------------------ layout

def test_layout_is_torch_linear_out_by_in_then_bias():
    model = MLP((3, 4, 2), biases=(True, False), head="cross-entropy")
    assert model.n_params == 3 * 4 + 4 + 4 * 2
    theta = np.arange(model.n_params, dtype=float)
    (W1, b1), (W2, b2) = model.unpack(theta)
    assert W1.shape == (4, 3) and b1.shape == (4,) and W2.shape == (2, 4) and b2 is None
    np.testing.assert_array_equal(W1[1], [3, 4, 5])           # row i = the incoming weights of neuron i
    np.testing.assert_array_equal(b1, [12, 13, 14, 15])       # b_1 right after W_1
    np.testing.assert_array_equal(model.pack(model.unpack(theta)), theta)
    x = np.array([[0.5, -1.0, 2.0]])
    np.testing.assert_allclose(model.predict(theta, x)[0], W2 @ np.maximum(W1 @ x[0] + b1, 0))


@pytest.mark.parametrize("kwargs, match", [
    ({"widths": (2,)}, "at least an input"), ({"widths": (2, 0, 1)}, "hidden width m_1"),
    ({"widths": (0, 3, 1)}, "input dimension"), ({"widths": (2, 3, 2)}, "one output"),
    ({"widths": (2, 3, 1), "head": "cross-entropy"}, "n_classes"), ({"widths": (2, 3, 1), "head": "hinge"}, "head"),
    ({"widths": (2, 3, 1), "biases": (True,)}, "one flag per layer"), ({"widths": (2, 3, 1), "init": "xavier"}, "init"),
    ({"widths": (2, 3, 1), "init": "regression-1d"}, "1-D regression init"),
    ({"widths": (2, 3, 1), "init_scales": (1.0, 2.0, 3.0)}, "init_scales"),
    ({"widths": (2, 3, 1), "init_stream": "nope"}, "stream purpose")])
def test_bad_configurations_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLP(**kwargs)
    with pytest.raises(ValueError, match="W_1"):
        MLP((2, 3, 1)).pack([(np.zeros((2, 3)), None), (np.zeros((1, 3)), None)])


# ------------------------------------------------------------------------------------------ kernels

@settings(max_examples=60, deadline=None)
@given(net=nets, bias_bits=st.integers(0, 15), batch=st.integers(1, 9), noisy=st.booleans())
def test_compiled_kernel_equals_numpy_twin(net, bias_bits, batch, noisy):
    d, hidden, head, classes, seed = net
    widths = _widths(d, hidden, head, classes)
    biases = tuple(bool(bias_bits >> l & 1) for l in range(len(widths) - 1))
    model, theta, X, y = _problem(widths, biases, head, seed)
    rng = np.random.default_rng(seed + 1)
    idx = rng.integers(0, X.shape[0], batch)                       # repeats allowed
    noise = rng.standard_normal(batch) if noisy and head == "regression" else None
    loss, grad = _loss_grad(model, theta, X, y, idx, noise)
    loss_np, grad_np = _loss_grad(model, theta, X, y, idx, noise, kernel="numpy")
    assert loss == pytest.approx(loss_np, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-13)
    assert np.isfinite(grad).all()                                # every entry written (no stale NaN)


@settings(max_examples=30, deadline=None)
@given(net=nets, bias=st.booleans())
def test_gradient_matches_central_finite_differences(net, bias):
    d, hidden, head, classes, seed = net
    model, theta, X, y = _problem(_widths(d, hidden, head, classes), bias, head, seed, n=6)
    # finite differences are exact to O(h²) away from ReLU kinks: skip draws too close to one
    pre = [z for z in _preacts(model, theta, X)]
    if pre and min(np.abs(z).min() for z in pre) < 1e-4:
        return
    idx = np.arange(6)
    _, grad = _loss_grad(model, theta, X, y, idx)
    h = 1e-6
    fd = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (_loss_grad(model, theta + e, X, y, idx)[0] - _loss_grad(model, theta - e, X, y, idx)[0]) / (2 * h)
    scale = max(1.0, np.abs(grad).max())
    assert np.max(np.abs(fd - grad)) < 1e-6 * scale
    bad = grad.copy()                                             # false control: a wrong entry is caught
    bad[-1] += 1e-4 * scale
    assert np.max(np.abs(fd - bad)) > 1e-6 * scale


def _preacts(model, theta, X):
    a, out = X, []
    for l, (W, b) in enumerate(model.unpack(theta)):
        z = a @ W.T + (0 if b is None else b)
        if l < model.n_layers - 1:
            out.append(z)
        a = np.maximum(z, 0)
    return out


@settings(max_examples=25, deadline=None)
@given(d=st.integers(1, 4), hidden=st.lists(st.integers(1, 5), min_size=0, max_size=3), bias=st.booleans(),
       seed=st.integers(0, 10_000))
def test_jacobian_matches_twin_and_finite_differences(d, hidden, bias, seed):
    model, theta, X, _ = _problem((d, *hidden, 1), bias, "regression", seed, n=5)
    J = model.jacobian(theta, X)
    assert J.shape == (5, model.n_params)
    np.testing.assert_allclose(J, model.jacobian_np(theta, X), rtol=1e-12, atol=1e-12)
    pre = _preacts(model, theta, X)
    if pre and min(np.abs(z).min() for z in pre) < 1e-4:
        return
    np.testing.assert_allclose(J, jacobian_fd(model, theta, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(MM.predict_kernel(theta, X, *model.arrays()), model.predict(theta, X), rtol=1e-12,
                               atol=1e-12)


def test_jacobian_false_control_and_regression_gradient_is_the_jacobian():
    model, theta, X, y = _problem((3, 4, 4, 1), True, "regression", 1, n=5)
    J = model.jacobian(theta, X)
    bad = J.copy()
    bad[:, -1] += 1e-3                                            # the output-bias column (all ones)
    assert not np.allclose(bad, jacobian_fd(model, theta, X), rtol=1e-5, atol=1e-6)
    _, grad = _loss_grad(model, theta, X, y, np.arange(5))
    np.testing.assert_allclose(grad, 2 / 5 * J.T @ (model.predict(theta, X) - y), rtol=1e-12, atol=1e-14)
    with pytest.raises(NotImplementedError, match="regression head"):
        MLP((2, 3, 2), head="cross-entropy").jacobian(np.zeros(17), X[:, :2])


def test_cross_entropy_hooks_evaluate_and_loss_agree():
    d = data.spirals(300, seed=2)
    model = MLP((2, 15, 7, 3), head="cross-entropy", init="uniform")     # widths ≡ 7 (mod 8): bias in a group
    theta = model.init(0)
    loss, acc = model.evaluate(theta, d.X, d.y, chunk=64)
    assert loss == pytest.approx(model.loss(theta, d.X, d.y), rel=1e-12)
    assert acc == pytest.approx(np.mean(np.argmax(model.predict(theta, d.X), axis=1) == d.y))
    with pytest.raises(ValueError, match="cross-entropy"):
        MLP((2, 3, 1)).evaluate(np.zeros(13), d.X, d.y)


# ------------------------------------------------------------------------------------------ inits

def test_initializations_schemes_streams_and_bounds():
    m1 = MLP((1, 4000, 1), biases=(True, False), init="regression-1d", init_scales=0.5)
    (W1, b1), (W2, _) = m1.unpack(m1.init(3))
    assert set(np.unique(W1)) == {-1.25, 1.25}
    assert abs(np.std(b1) - 1.25) < 0.05 and abs(np.std(W2) - 2.0) < 0.1
    g = MLP((2, 20, 1), biases=False, init_scales=(0.5, 0.0))
    (W, _), (a, _) = g.unpack(g.init(0))
    assert np.all(a == 0) and np.std(W) > 0.2
    u = MLP((2, 4, 9, 3), head="cross-entropy", init="uniform")
    theta = u.init(0)
    for (W, b), fan_in in zip(u.unpack(theta), (2, 4, 9)):
        assert np.all(np.abs(W) <= fan_in ** -0.5) and np.all(np.abs(b) <= fan_in ** -0.5)
    assert not np.array_equal(theta, u.init(0, 1)) and not np.array_equal(theta, u.init(1))
    keyed = MLP((2, 4, 9, 3), head="cross-entropy", init="uniform", init_key=(5,))
    assert not np.array_equal(theta, keyed.init(0))
    np.testing.assert_array_equal(theta, MLP((2, 4, 9, 3), head="cross-entropy", init="uniform").init(0))
    state = streams.path_states(2, 1, 3)
    np.testing.assert_array_equal(MM._uniform_pm(state.copy(), 50), MM.uniform_pm_np(state.copy(), 50))


# ------------------------------------------------------------------------------------------ training

def _teacher(n=12, d=3, hidden=(2, 2), seed=1):
    ts = data.teacher_student(n, d, list(hidden), n_test=20, seed=seed)
    return SimpleNamespace(X=ts.X, y=ts.y, X_test=ts.X_test, y_test=ts.y_test)


def test_a_short_regression_run_takes_the_pointer_loop_and_a_longer_one_the_tuned_loop():
    """Below its limit (fast.short_run_limit: 2000 path-steps) the regression MLP trains through the pointer loop
    shared by every model (no loop of its own to compile: ~4 s in a cold process), from there on through its tuned
    loop; the bits are the same either way (:func:`test_tuned_regression_loop_equals_generic_loop_bitwise`)."""
    limit = fast.short_run_limit(fast_mlp.regression_loop)
    assert limit == 2_000
    model = MLP((3, 6, 5, 1))
    ds = _teacher(seed=1)
    short_run = train(model, ds, O.sgd(1e-3), steps=limit // 2 - 1, seeds=2, records=3, seed=0)
    long_run = train(model, ds, O.sgd(1e-3), steps=limit // 2, seeds=2, records=3, seed=0)
    assert short_run.config["path"] == "generic" and long_run.config["path"] == "tuned"


@pytest.mark.parametrize("sampler,batch,noise,opt", [
    ("distinct", 1, 0.0, O.sgd(0.05)), ("distinct", 3, 0.1, O.sgd(0.03, momentum=0.9)),
    ("full", 1, 0.0, O.adam(1e-2)), ("full", 1, 0.05, O.sgdw(0.05, weight_decay=0.1)),
    ("with-replacement", 1, 0.0, O.sgd(0.05)), ("with-replacement", 1, 0.0, O.sgd(0.03, momentum=0.9)),
    ("with-replacement", 1, 0.1, O.adam(1e-2)), ("with-replacement", 4, 0.05, O.sgd(0.05, nesterov=True,
                                                                                     momentum=0.5)),
    ("with-replacement", 1, 0.0, O.sgd(40.0)), ("with-replacement", 3, 0.0, O.sgd(20.0, momentum=0.9))])
def test_tuned_regression_loop_equals_generic_loop_bitwise(sampler, batch, noise, opt, tuned_short_runs):
    """The tuned regression loop (taken for these short runs by :func:`tuned_short_runs`) and the generic loop
    (fast=False: the pointer loop): the same parameters, records, per-step losses and divergence steps, bit for
    bit, for each of its samplers (full, distinct, with-replacement: dt.train's default), batch 1 and more, label
    noise, SGD, momentum, Nesterov, Adam, SGDW, and diverging runs (SGD at 40, momentum at 20), on 2 threads in 3
    windows and on 1 thread. The same bits are why a short run may take the pointer loop instead."""
    model = MLP((3, 6, 5, 1), biases=(True, False, True), init_scales=0.8)
    ds = [_teacher(seed=1), _teacher(seed=2)]
    kw = {"steps": 60, "batch": batch, "sampler": sampler, "label_noise": noise, "records": 9, "seed": 5,
          "schedule": [S.Constant(), S.CosineAnnealingLR(60)], "step_loss": True}
    assert fast.select(model, {"kernel": "numba", "sampler": sampler}) is fast_mlp.regression_loop
    tuned = train(model, ds, opt, chunks=3, workers=2, **kw)
    generic = train(model, ds, opt, fast=False, workers=2, **kw)
    one_thread = train(model, ds, opt, workers=1, **kw)
    assert tuned.config["path"] == "tuned" and generic.config["path"] == "generic"
    if opt.lr >= 20.0:
        assert (tuned["diverged_at"] > 0).all() and tuned.status == "diverged"
    for key in ("theta", "final_theta", "diverged_at", "step_loss", "train_loss", "test_loss"):
        np.testing.assert_array_equal(tuned[key], generic[key], err_msg=key)
        np.testing.assert_array_equal(tuned[key], one_thread[key], err_msg=key)
    twin = train(model, ds, opt, kernel="numpy", **kw)
    np.testing.assert_allclose(twin["theta"], tuned["theta"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(twin["diverged_at"], tuned["diverged_at"])


def test_divergence_step_convention_and_same_seed_is_bitwise():
    model = MLP((2, 10, 1), biases=False, init_scales=(0.5, 0.0))
    ds = _teacher(15, 2, (3,), seed=0)
    kw = {"steps": 200, "records": 20, "seed": 2, "sampler": "distinct", "common_stream": True}
    res = train(model, ds, [O.sgd(50.0), O.sgd(0.05)], **kw)
    div = res["diverged_at"][:, 0]
    assert div[0] >= 1 and div[1] == -1 and res.status == "diverged"
    assert np.isnan(res["theta"][0, 0, -1]).all() and np.isfinite(res["theta"][1]).all()
    np.testing.assert_array_equal(res["theta"], train(model, ds, [O.sgd(50.0), O.sgd(0.05)], **kw)["theta"])
    ev = network_metrics(model, res["theta"][:, 0], ds.X, ds.y, ds.X_test, ds.y_test)
    assert np.isnan(ev["train_loss"][0, -1]) and ev["jac_rank"][0, -1] == -1 and ev["jac_rank"][1, -1] > 0
    generic = train(model, ds, [O.sgd(50.0), O.sgd(0.05)], fast=False, **kw)
    np.testing.assert_array_equal(generic["diverged_at"], res["diverged_at"])
    # the recording before the divergence step is finite; the one at or after it is NaN
    steps = res["steps"]
    assert np.isfinite(res["theta"][0, 0, steps < div[0]]).all()
    assert np.isnan(res["theta"][0, 0, steps >= div[0]]).all()


def test_gd_step_is_the_gradient_of_the_mean_squared_error():
    model = MLP((2, 4, 1), biases=True)
    rng = np.random.default_rng(0)
    ds = SimpleNamespace(X=rng.standard_normal((6, 2)), y=rng.standard_normal(6))
    theta0 = rng.standard_normal(model.n_params)
    res = train(model, ds, O.sgd(1e-3), steps=1, sampler="full", record_steps=np.array([0, 1]), theta0=theta0)
    J = model.jacobian_np(theta0, ds.X)
    grad = 2 / 6 * J.T @ (model.predict(theta0, ds.X) - ds.y)
    np.testing.assert_allclose(res["theta"][0, 0, 1], theta0 - 1e-3 * grad, rtol=1e-12, atol=1e-14)


def test_runs_share_the_sample_stream_only_when_asked():
    model = MLP((2, 5, 1))
    ds = _teacher(12, 2, (3,), seed=3)
    kw = {"steps": 50, "records": 6, "seed": 1, "sampler": "distinct", "theta0": model.init(3)}
    common = train(model, ds, [O.sgd(0.05), O.sgd(0.05)], common_stream=True, **kw)["theta"]
    np.testing.assert_array_equal(common[0], common[1])
    own = train(model, ds, [O.sgd(0.05), O.sgd(0.05)], **kw)["theta"]
    assert not np.array_equal(own[0, 0, -1], own[1, 0, -1])


@pytest.fixture(scope="module")
def spiral():
    return data.spirals(200, turns=1.0, noise=0.05, n_val=100, seed=3)


def test_cross_entropy_training_compiled_equals_numpy_twin(spiral):
    """Four optimizers as one run set (one step module to compile, not four), each run against the twin's."""
    opt = [O.adamw(5e-3, weight_decay=0.05), O.sgd(0.1, momentum=0.9, weight_decay=1e-3),
           O.rmsprop(1e-3, centered=True), O.adagrad(0.05)]
    model = MLP((2, 8, 8, 8, 2), head="cross-entropy", init="uniform")
    kw = {"steps": 40, "batch": 16, "sampler": "epoch", "drop_last": False, "records": 5, "seed": 0,
          "schedule": S.CosineAnnealingLR(40), "step_loss": True}
    nb = train(model, spiral, opt, **kw)
    nv = train(model, spiral, opt, kernel="numpy", **kw)
    assert nb.config["path"] == "tuned" and (nb["diverged_at"] == -1).all()   # kernel and step through pointers
    np.testing.assert_allclose(nb["theta"], nv["theta"], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(nb["step_loss"], nv["step_loss"], rtol=1e-10)


@pytest.mark.parametrize("sampler,drop_last", [("epoch", False), ("epoch", True), ("with-replacement", True),
                                               ("distinct", True), ("full", True)])
def test_cross_entropy_loop_does_not_depend_on_chunks_or_threads(spiral, sampler, drop_last):
    model = MLP((2, 7, 9, 3), biases=(True, False, True), head="cross-entropy", init="uniform")
    d3 = data.spirals(90, classes=3, seed=1)
    kw = {"steps": 30, "batch": 16, "sampler": sampler, "drop_last": drop_last, "records": 5, "seed": 2,
          "step_loss": True, "seeds": 2, "schedule": [S.Constant(), S.CosineAnnealingLR(30)]}
    opts = [O.adamw(5e-3, weight_decay=0.05), O.sgd(0.1, momentum=0.9)]
    chunked = train(model, d3, opts, chunks=2, workers=2, **kw)
    whole = train(model, d3, opts, workers=1, **kw)
    assert chunked.config["path"] == whole.config["path"] == "tuned"
    for key in ("theta", "final_theta", "diverged_at", "step_loss", "train_loss"):
        np.testing.assert_array_equal(chunked[key], whole[key], err_msg=key)


@pytest.mark.parametrize("opt,sampler", [(O.adamw(5e-3, weight_decay=0.05), "epoch"), (O.sgd(0.1), "with-replacement"),
                                         (O.sgd(0.1, momentum=0.9, nesterov=True), "distinct"),
                                         (O.rmsprop(1e-3, centered=True), "full"), (O.sgd(1e200), "epoch")],
                         ids=lambda v: getattr(v, "name", v))
def test_cross_entropy_loop_through_pointers_is_the_generic_loop_bit_for_bit(opt, sampler):
    """The float64 cross-entropy loop of dyntools.dynamics.fast.mlp (kernel and step called through function
    pointers) and the generic loop named for the kernel (fast=False): the same parameters, losses, records and
    divergence steps, bit for bit (SGD at 1e200 diverges), on threads and in windows."""
    model = MLP((3, 9, 11, 4), biases=(True, False, True), head="cross-entropy", init="uniform")
    rng = np.random.default_rng(5)
    d4 = SimpleNamespace(X=rng.standard_normal((70, 3)), y=rng.integers(0, 4, 70))
    kw = {"steps": 40, "batch": 7, "sampler": sampler, "records": 6, "seed": 4, "step_loss": True, "seeds": 2,
          "workers": 2}
    assert fast.select(model, {"kernel": "numba", "sampler": sampler}) is fast_mlp.cross_entropy_loop
    tuned, generic = train(model, d4, opt, **kw), train(model, d4, opt, fast=False, **kw)
    assert tuned.config["path"] == "tuned" and generic.config["path"] == "generic"
    for key in ("theta", "final_theta", "diverged_at", "step_loss", "train_loss"):
        np.testing.assert_array_equal(tuned[key], generic[key], err_msg=key)


def test_cross_entropy_learns_the_spirals_and_divergence_is_reported(spiral):
    model = MLP((2, 32, 32, 32, 2), head="cross-entropy", init="uniform")
    kw = {"steps": 600, "batch": 32, "sampler": "epoch", "drop_last": False, "seed": 0, "step_loss": True,
          "record_steps": np.array([0, 600])}
    res = train(model, spiral, O.adam(1e-2), **kw)
    curve = res["step_loss"][0, 0]
    assert res.status == "completed" and curve[-100:].mean() < 0.5 * curve[:100].mean()
    assert model.evaluate(res["final_theta"][0, 0], spiral.X_val, spiral.y_val)[1] > 0.8
    bad = train(model, spiral, O.sgd(1e300), **kw)
    assert 1 <= bad["diverged_at"][0, 0] <= 600 and bad.status == "diverged"


class _Given(S.Schedule):
    def __init__(self, m):
        self.m = np.asarray(m, dtype=np.float64)

    def multipliers(self, steps):
        return self.m


def test_reactive_plateau_equals_replaying_its_multipliers(spiral):
    """Stepping ReduceLROnPlateau on each epoch's mean mini-batch loss inside dyntools.train equals one run
    with the multipliers it produced; the per-step learning rates are lr · factor."""
    model = MLP((2, 8, 8, 8, 2), head="cross-entropy", init="uniform")
    kw = {"steps": 120, "batch": 20, "sampler": "epoch", "drop_last": False, "records": 4, "seed": 0,
          "step_loss": True}
    plateau = S.ReduceLROnPlateau(factor=0.5, patience=1, threshold=0.05)
    res = train(model, spiral, O.adam(2e-2), schedule=plateau, **kw)     # one epoch = 200 // 20 = 10 steps
    epoch_means = res["step_loss"][0, 0].reshape(12, 10).mean(axis=1)
    mults = np.repeat(S.ReduceLROnPlateau(factor=0.5, patience=1, threshold=0.05)
                      .multipliers_from_metrics(epoch_means[:-1]), 10)
    assert mults.min() < 1.0                                      # the schedule did act
    np.testing.assert_array_equal(res["lrs"][0], 2e-2 * mults)
    replay = train(model, spiral, O.adam(2e-2), schedule=_Given(mults), **kw)
    np.testing.assert_array_equal(res["theta"], replay["theta"])


# ------------------------------------------------------------------------------------------ size

@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 30), seed=st.integers(0, 1000))
def test_l1_size_and_its_twin(n, seed):
    theta = np.random.default_rng(seed).standard_normal(n)
    size = guard.l1_size(theta)
    assert size == pytest.approx(np.abs(theta).sum(), rel=1e-14, abs=0.0)
    assert guard.l1_size_np(theta) == size                        # the twin: the same additions, same bits
    if n:
        theta[seed % n] = np.nan
        assert np.isnan(guard.l1_size(theta))
        assert np.isnan(guard.l1_size_np(theta))


@njit
def _sgd_checked(theta, grad, lr, bound):
    return sgd_step_checked(theta, grad, lr, bound)


@njit
def _l1_clearing(theta, grad):
    return guard.l1_size_clearing(theta, grad)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300), st.floats(1e-4, 1.0), st.integers(0, 10_000), st.sampled_from(["float64", "float32"]),
       st.sampled_from([-4, -1, 0, 1, 4, None]), st.booleans())
def test_checked_sgd_step_decides_like_the_guard(n, lr, seed, dtype, ulps, poison):
    """The tuned loop's step: θ bitwise the optimizer's SGD step, g cleared, and beyond(size, bound) the
    guard's decision on its own four-chain sum — also for bounds a few ulps around that sum, and NaN."""
    rng = np.random.default_rng(seed)
    theta, grad = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    if poison:
        grad[seed % n] = np.nan
    t1, g1 = theta.copy(), grad.copy()
    opt = O.sgd(lr)
    optim_step.step(opt, theta, grad, optim_step.init_state(opt, n).astype(dtype), 1)
    exact = _l1_clearing(theta, grad)
    if ulps is None:
        bound = 10.0 * exact if np.isfinite(exact) else 1e6
    else:
        bound = exact
        for _ in range(abs(ulps)):
            bound = np.nextafter(bound, np.inf if ulps > 0 else -np.inf)
    size = _sgd_checked(t1, g1, lr, bound)
    np.testing.assert_array_equal(t1, theta)
    assert not g1.any() and not grad.any()
    assert guard.beyond(size, bound) == guard.beyond(exact, bound)
    assert np.isnan(size) == bool(poison)
