"""``MLP(…, sparse_inputs=True)``: the cross-entropy kernel whose first layer skips the zero inputs of a batch gives
the dense kernel's loss and gradient to the bit (the same fma chains without their zero terms), takes the sparse
path where it should (seen through an infinite weight that only the dense chains multiply by zero), equals the
NumPy twin written from the equations, and trains to the dense model's bits."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.data import modular
from dyntools.models import mlp_gemm
from dyntools.models.mlp import MLP, loss_grad_cross_entropy, loss_grad_cross_entropy_sparse_inputs


def one_hot_pairs(p: int):
    """The grokking task's inputs: one-hot ``a`` then one-hot ``b`` for every pair, label ``(a + b) mod p``."""
    a, b, c = modular.table(p, "+")
    return modular.encode(a, b, p, "one-hot"), c


def kernel_pass(model, kernel, theta, X, y, idx):
    n = len(idx)
    grad = np.zeros(model.n_params, dtype=model.dtype)
    ws = np.zeros(model.workspace_size(n), dtype=model.dtype)
    loss = kernel(theta.astype(model.dtype), X.astype(model.dtype), y, idx, n, np.zeros(n), grad, ws,
                  *model.kernel_args())
    return loss, grad


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hidden=st.lists(st.integers(1, 40), min_size=0, max_size=2),
       batch=st.integers(1, 60), density=st.sampled_from([0.02, 0.1, 0.25, 0.4, 1.0]), biases=st.booleans(),
       dtype=st.sampled_from(["float64", "float32"]))
def test_the_sparse_kernel_gives_the_dense_kernels_bits(seed, hidden, batch, density, biases, dtype):
    rng = np.random.default_rng(seed)
    d, K = int(rng.integers(1, 50)), int(rng.integers(2, 12))
    X = rng.standard_normal((80, d)) * (rng.random((80, d)) < density)
    y = rng.integers(0, K, 80)
    model = MLP((d, *hidden, K), head="cross-entropy", biases=biases, dtype=dtype)
    theta, idx = model.init(seed % 1000), rng.integers(0, 80, batch)
    dense = kernel_pass(model, loss_grad_cross_entropy, theta, X, y, idx)
    sparse = kernel_pass(model, loss_grad_cross_entropy_sparse_inputs, theta, X, y, idx)
    assert dense[0] == sparse[0] and np.array_equal(dense[1], sparse[1])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_sparse_path_runs_on_sparse_batches_and_only_there(dtype):
    """A weight of ∞ on an input that is zero in every example of the batch: the dense chains add 0 · ∞ = NaN to a
    logit (no hidden layer: no ReLU to turn NaN into 0), the sparse ones never read it. A batch with more than
    ``SPARSE_INPUT`` nonzero inputs runs dense."""
    X, y = one_hot_pairs(5)
    model = MLP((10, 5), head="cross-entropy", biases=False, dtype=dtype)
    theta = model.init(0)
    theta[0] = np.inf                           # W[0, 0]: the weight of input 0 (a = 0) into logit 0
    idx = np.arange(5, 25)                      # a = 1 … 4: input 0 is zero throughout
    assert np.isnan(kernel_pass(model, loss_grad_cross_entropy, theta, X, y, idx)[0])
    loss, grad = kernel_pass(model, loss_grad_cross_entropy_sparse_inputs, theta, X, y, idx)
    assert np.isfinite(loss) and np.isfinite(grad[1:]).all()
    assert 2 / 10 <= mlp_gemm.SPARSE_INPUT
    crowded = X.copy()
    crowded[:, 1:] += 1.0                       # every input nonzero but input 0: above the threshold
    assert np.isnan(kernel_pass(model, loss_grad_cross_entropy_sparse_inputs, theta, crowded, y, idx)[0])


def test_the_sparse_kernel_equals_the_numpy_twin():
    X, y = one_hot_pairs(23)
    model = MLP((46, 128, 23), head="cross-entropy", biases=False, sparse_inputs=True)
    theta, idx = model.init(3), np.arange(370)
    loss, grad = kernel_pass(model, model.loss_grad, theta, X, y, idx)
    twin_grad = np.zeros(model.n_params)
    twin = model.loss_grad_np(theta, X, y, idx, 370, np.zeros(370), twin_grad, None, *model.kernel_args())
    assert abs(loss - twin) <= 1e-13 * abs(twin)
    assert np.abs(grad - twin_grad).max() <= 1e-13 * np.abs(twin_grad).max()


def test_training_with_sparse_inputs_gives_the_dense_models_bits():
    import dyntools as dt

    X, y = one_hot_pairs(7)
    data = type("Data", (), {"X": X[:35], "y": y[:35], "X_test": X[35:], "y_test": y[35:]})()
    runs = [dt.train(MLP((14, 16, 7), head="cross-entropy", biases=False, sparse_inputs=sparse), data,
                     dt.optim.adamw(1e-2, weight_decay=0.1), steps=40, sampler="full", seed=0, records=3, seeds=2)
            for sparse in (False, True)]
    assert np.array_equal(runs[0]["theta"], runs[1]["theta"])
    assert not np.array_equal(runs[0]["theta"][..., 0, :], runs[0]["theta"][..., -1, :])     # it trained


def test_sparse_inputs_is_refused_where_there_is_no_sparse_kernel():
    with pytest.raises(ValueError, match="Invalid sparse_inputs"):
        MLP((4, 3, 1), sparse_inputs=True)                                 # the regression head
    with pytest.raises(ValueError, match="Invalid sparse_inputs"):
        MLP((4, 3, 2), head="cross-entropy", dropout=0.1, sparse_inputs=True)
    with pytest.raises(TypeError, match="Invalid sparse_inputs"):
        MLP((4, 3, 2), head="cross-entropy", sparse_inputs="yes")
