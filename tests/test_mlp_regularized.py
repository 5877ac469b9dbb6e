"""Dropout and batch norm in the MLP: the compiled pass against its NumPy twin, finite differences and
equations; the masks and running statistics; the training loop; the options' errors; the report entry's
verdicts. (PyTorch: tests/test_mlp_regularized_torch.py.)"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.dynamics.train import train
from dyntools.engine import streams
from dyntools.models import mlp_regularized as R
from dyntools.models.mlp import MLP, loss_grad_cross_entropy
from dyntools.optim import optimizers as O


class Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


def setup(widths, head="cross-entropy", dropout=0.0, batch_norm=False, batch=6, seed=0, biases=True):
    rs = np.random.default_rng(seed)
    model = MLP(widths, head=head, dropout=dropout, batch_norm=batch_norm, biases=biases)
    theta = 0.7 * rs.standard_normal(model.n_params)
    X = rs.standard_normal((12, widths[0]))
    y = rs.integers(0, widths[-1], 12) if head == "cross-entropy" else rs.standard_normal(12)
    idx = rs.permutation(12)[:batch]
    H = model.n_hidden
    masks = (rs.random((batch, H)) >= dropout).astype(float) if dropout else np.zeros((0, H))
    running = np.vstack([rs.standard_normal(H), 0.5 + rs.random(H)])
    return model, theta, X, y, idx, masks, running


def run_pass(fn, model, theta, X, y, idx, masks, running, train_mode, grad=True):
    H = model.n_hidden
    g = np.zeros(model.n_params if grad else 0)
    stats = np.zeros((2, H))
    w, wo, bo = model.arrays()
    head = R.HEAD_REGRESSION if model.head == "regression" else R.HEAD_CROSS_ENTROPY
    loss = fn(theta, w, wo, bo, model._g_off, model._h_off, X, y, idx, np.zeros(idx.size), head, train_mode, masks,
              1.0 / (1.0 - model.dropout), model.bn_eps, stats, running, g, np.zeros(R.scratch_size(w, idx.size)))
    return loss, g, stats


CASES = [dict(dropout=0.3), dict(batch_norm=True), dict(dropout=0.2, batch_norm=True),
         dict(dropout=0.2, batch_norm=True, head="regression")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("train_mode", [True, False], ids=["train", "eval"])
def test_compiled_pass_equals_numpy_twin_and_finite_differences(case, train_mode):
    head = case.get("head", "cross-entropy")
    widths = (3, 9, 7, 3) if head == "cross-entropy" else (3, 9, 7, 1)
    model, theta, X, y, idx, masks, running = setup(widths, **case)
    loss, g, stats = run_pass(R.forward_backward, model, theta, X, y, idx, masks, running, train_mode)
    loss_np, g_np, stats_np = run_pass(R.forward_backward_np, model, theta, X, y, idx, masks, running, train_mode)
    assert abs(loss - loss_np) <= 1e-13 * abs(loss_np)
    np.testing.assert_allclose(g, g_np, rtol=0, atol=1e-13 * np.abs(g_np).max())
    np.testing.assert_allclose(stats, stats_np, rtol=1e-13, atol=1e-14)
    h = 1e-6
    fd = np.array([(run_pass(R.forward_backward_np, model, theta + e, X, y, idx, masks, running, train_mode,
                             grad=False)[0]
                    - run_pass(R.forward_backward_np, model, theta - e, X, y, idx, masks, running, train_mode,
                               grad=False)[0]) / (2 * h) for e in h * np.eye(model.n_params)])
    np.testing.assert_allclose(g_np, fd, rtol=0, atol=1e-7 * np.abs(g_np).max())


def test_batch_norm_train_mode_from_the_equations():
    """One hidden layer written from the definition: ẑ = (z − mean)/√(biased var + ε), u = γ ẑ + β; the batch
    statistics written are the mean and Σ (z − mean)²; a constant added to the bias changes nothing."""
    model, theta, X, y, idx, _, running = setup((2, 5, 3), batch_norm=True, batch=7)
    loss, _, stats = run_pass(R.forward_backward, model, theta, X, y, idx, np.zeros((0, 5)), running, True)
    (W1, b1), (W2, b2) = model.unpack(theta)
    (gamma, beta), = model.bn_params(theta)
    z = X[idx] @ W1.T + b1
    mu = z.sum(axis=0) / 7
    ss = ((z - mu) ** 2).sum(axis=0)
    u = gamma * (z - mu) / np.sqrt(ss / 7 + 1e-5) + beta
    logits = np.maximum(u, 0) @ W2.T + b2
    ref = np.mean(np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(7), y[idx]])
    assert abs(loss - ref) <= 1e-13
    np.testing.assert_allclose(stats, np.vstack([mu, ss]), rtol=1e-13)
    shifted = theta.copy()
    shifted[model._b_off[0]:model._b_off[0] + 5] += 3.0
    assert abs(run_pass(R.forward_backward, model, shifted, X, y, idx, np.zeros((0, 5)), running, True)[0]
               - loss) <= 1e-12


@settings(max_examples=15, deadline=None)
@given(widths=st.lists(st.integers(1, 9), min_size=1, max_size=3), batch=st.integers(1, 12),
       classes=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_without_dropout_or_batch_norm_the_pass_is_the_plain_kernel(widths, batch, classes, seed):
    """Neither masks nor γ, β: the regularized pass computes the plain cross-entropy MLP's loss and gradient."""
    widths = (2, *widths, classes)
    plain = MLP(widths, head="cross-entropy")
    rs = np.random.default_rng(seed)
    theta = rs.standard_normal(plain.n_params)
    X, y = rs.standard_normal((12, 2)), rs.integers(0, classes, 12)
    idx = rs.integers(0, 12, batch)
    g_ref = np.zeros(plain.n_params)
    iargs, fargs = plain.kernel_args()
    ref = loss_grad_cross_entropy(theta, X, y, idx, batch, np.zeros(batch), g_ref,
                                  np.zeros(plain.workspace_size(batch)), iargs, fargs)
    g_off, h_off, H = R.bn_layout(plain.arrays()[0], plain.n_params, False)
    g = np.zeros(plain.n_params)
    loss = R.forward_backward(theta, *plain.arrays(), g_off, h_off, X, y, idx, np.zeros(batch), R.HEAD_CROSS_ENTROPY,
                              True, np.zeros((0, H)), 1.0, 1e-5, np.zeros((2, H)), np.zeros((2, H)), g,
                              np.zeros(R.scratch_size(plain.arrays()[0], batch)))
    assert abs(loss - ref) <= 1e-13 * max(1.0, abs(ref))
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-13 * max(1.0, np.abs(g_ref).max()))


def test_masks_and_running_statistics_compiled_equal_twins():
    state = streams.path_states(3, 1, streams.key("mlp.dropout"))
    a, b = np.zeros((40, 50)), np.zeros((40, 50))
    R.draw_masks(state.copy(), a, 0.7)
    R.draw_masks_np(state.copy(), b, 0.7)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0.0, 1.0} and abs(a.mean() - 0.7) < 0.03       # keep probability 1 − p
    run, run_np = np.vstack([np.zeros(5), np.ones(5)]), np.vstack([np.zeros(5), np.ones(5)])
    stats = np.vstack([np.arange(5.0), np.full(5, 8.0)])
    R.update_running(run, stats, 0.1, 9)
    R.update_running_np(run_np, stats, 0.1, 9)
    np.testing.assert_array_equal(run, run_np)
    np.testing.assert_allclose(run, [0.1 * np.arange(5.0), np.full(5, 0.9 + 0.1 * 8.0 / 8)], rtol=1e-15)


def test_plain_mlp_keeps_its_kernel_and_config():
    plain = MLP((2, 8, 2), head="cross-entropy")
    assert plain.loss_grad is loss_grad_cross_entropy and not plain.regularized
    assert "dropout" not in plain.config()
    reg = MLP((2, 8, 2), head="cross-entropy", batch_norm=True, init="uniform")
    assert reg.loss_grad is R.loss_grad and reg.n_params == plain.n_params + 16
    theta = reg.init(0)
    np.testing.assert_array_equal(theta[:plain.n_params], MLP((2, 8, 2), head="cross-entropy", init="uniform").init(0))
    np.testing.assert_array_equal(theta[plain.n_params:], np.r_[np.ones(8), np.zeros(8)])


def spirals():
    from dyntools import data

    d = data.spirals(60, classes=2, turns=1.0, noise=0.05, n_val=40, seed=1)
    return Data(d.X, d.y), d


def test_training_loop_compiled_equals_numpy_twin_and_returns_running_statistics():
    ds, d = spirals()
    # no bias before a batch norm: its gradient is rounding noise (zero in exact arithmetic), which Adam's
    # normalization turns into updates that differ between any two summation orders
    model = MLP((2, 6, 5, 2), head="cross-entropy", init="uniform", dropout=0.2, batch_norm=True,
                biases=(False, False, True))
    kw = dict(steps=12, batch=8, sampler="epoch", seed=4, seeds=2, records=4, step_loss=True, chunks=2)
    opts = [O.make("adam", lr=1e-2, weight_decay=1e-3), O.make("adamw", lr=1e-2, weight_decay=1e-2)]
    a = train(model, ds, opts, **kw)
    b = train(model, ds, opts, kernel="numpy", **kw)
    for key in ("final_theta", "step_loss", "bn_running", "bn_running_rec", "train_loss"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-11, atol=1e-13, err_msg=key)
    assert a["bn_running"].shape == (2, 2, 2, 11)
    # the recorded losses are evaluation-mode losses with the running statistics recorded at the same step
    k = -1
    theta, run = a["theta"][1, 0, k], a["bn_running_rec"][1, 0, k]
    assert a["train_loss"][1, 0, k] == model.loss(theta, ds.X, ds.y, running=run)
    np.testing.assert_array_equal(a["bn_running_rec"][:, :, -1], a["bn_running"])
    # a path does not depend on the others (its own dropout and sampling streams)
    one = train(model, ds, opts, **{**kw, "seeds": 1})
    np.testing.assert_array_equal(one["final_theta"][:, 0], a["final_theta"][:, 0])
    # dropout draws matter: another seed, other masks
    other = train(model, ds, opts, **{**kw, "seeds": 1, "seed": 5})
    assert not np.array_equal(other["final_theta"][1, 0], a["final_theta"][1, 0])


def test_evaluation_mode_compiled_equals_numpy():
    ds, d = spirals()
    model = MLP((2, 6, 5, 2), head="cross-entropy", dropout=0.5, batch_norm=True)
    rs = np.random.default_rng(2)
    theta = rs.standard_normal(model.n_params)
    running = np.vstack([rs.standard_normal(11), 0.5 + rs.random(11)])
    logits = model.predict(theta, d.X_val, running=running)
    ref = np.mean(np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(len(d.y_val)), d.y_val])
    loss, acc = model.evaluate(theta, d.X_val, d.y_val, chunk=16, running=running)
    assert abs(loss - ref) <= 1e-12 and acc == np.mean(np.argmax(logits, axis=1) == d.y_val)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(dropout=1.0), "Invalid dropout"), (dict(dropout=-0.1), "Invalid dropout"),
    (dict(batch_norm=True, dtype="float32"), "Invalid dtype"), (dict(batch_norm="yes"), "Invalid batch_norm"),
    (dict(batch_norm=True, bn_momentum=1.5), "Invalid bn_momentum"), (dict(batch_norm=True, bn_eps=0.0),
                                                                       "Invalid bn_eps"),
])
def test_bad_options(kwargs, needle):
    with pytest.raises((ValueError, TypeError), match=needle):
        MLP((2, 4, 2), head="cross-entropy", **kwargs)
    with pytest.raises(ValueError, match="hidden layers"):
        MLP((2, 2), head="cross-entropy", dropout=0.1)


def test_bad_training_settings():
    ds, d = spirals()
    model = MLP((2, 4, 2), head="cross-entropy", batch_norm=True)
    with pytest.raises(ValueError, match="at least 2 examples"):
        train(model, ds, O.make("adam", lr=1e-3), steps=2, batch=1)
    with pytest.raises(ValueError, match="running statistics"):
        model.evaluate(model.init(0), d.X_val, d.y_val)


def test_dropout_and_batch_norm_are_hooks_of_the_one_generic_loop():
    """No loop special-cases them: fast=False (the generic loop) is the loop a regularized network always trains
    through, so both give the same bits; the optimizer chains stepped from Python call the same hooks (the NumPy
    twins), to the twin's tolerance."""
    from dyntools.dynamics import fast

    ds, d = spirals()
    model = MLP((2, 6, 5, 2), head="cross-entropy", init="uniform", dropout=0.2, batch_norm=True,
                biases=(False, False, True))
    kw = dict(steps=12, batch=8, sampler="epoch", seed=4, seeds=2, records=4, step_loss=True)
    assert fast.select(model, {"kernel": "numba", "sampler": "distinct"}) is None
    opt = O.make("sgd", lr=1e-2, momentum=0.9)
    a = train(model, ds, opt, **kw)
    b = train(model, ds, opt, fast=False, **kw)
    assert a.config["path"] == b.config["path"] == "generic"
    for key in ("final_theta", "step_loss", "bn_running", "bn_running_rec", "train_loss"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    hooks = model.hooks({"batch": 8, "optimizers": [opt], "seed": 4, "stream_key": (), "common_stream": False}, 2)
    assert hooks.recorded and hooks.state.shape == (2, 22) and not hooks.none
    assert MLP((2, 6, 1)).hooks({}, 2).none               # a plain network declares nothing


def test_report_verdicts():
    from dyntools.simulations.regularized_heatmaps import effect, verdicts

    assert effect((5, 6), (3, 4)) == "larger" and effect((1, 2), (3, 4)) == "smaller"
    assert effect((3, 5), (4, 4)) == "same within the borderline cells"
    v = verdicts({"plain": {"adam": (3, 3), "adamw": (5, 6)}, "dropout": {"adam": (1, 2), "adamw": (1, 1)}})
    assert v["decoupled"] == {"plain": "at least as large", "dropout": "undecided"}
    assert v["effect"] == {"dropout": {"adam": "smaller", "adamw": "smaller"}}
