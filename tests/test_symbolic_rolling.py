"""Rolled kernels of large dense symbolic models (dyntools/codegen/rolling.py) and the reverse-mode
derivation (derive.gradient), issue 25: the rolled kernel against the straight-line kernel of the same
model and against the NumPy twin on identical inputs, in dt.train, and the adjoint derivatives against
sympy.diff."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dyntools as dt
from dyntools.codegen import derive, kernels, rolling
from dyntools.models import mlp, symbolic_examples
from dyntools.models.symbolic import SymbolicModel
from dyntools.optim import optimizers as O


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _smooth_net(roll):
    """tanh units with θ-only subexpressions (hoisted before the loop over examples), a Pow and a Piecewise:
    ``h = Σ_i a_i² tanh(w_i·x + b_i) + exp(c) + (c x_0 if x_0 > 0 else c²)``."""
    W = sp.Matrix(3, 2, lambda i, j: sp.Symbol(f"W{i}_{j}"))
    b, a = sp.Matrix(sp.symbols("b0:3")), sp.Matrix(sp.symbols("a0:3"))
    c = sp.Symbol("c")
    x = sp.symbols("x0:2")
    h = sum(a[i] ** 2 * sp.tanh(W[i, 0] * x[0] + W[i, 1] * x[1] + b[i]) for i in range(3)) + sp.exp(c)
    h += sp.Piecewise((c * x[0], x[0] > 0), (c ** 2, True))
    return SymbolicModel(h, params={"W": W, "b": b, "a": a, "c": c}, inputs=list(x), roll=roll,
                         name="smooth")


@pytest.fixture(scope="module")
def pairs():
    """(rolled, straight-line) declarations of the same models (the straight-line ReLU nets are those of
    tests/test_symbolic_model.py, so their compiled code is shared through the code cache)."""
    return {"relu": (symbolic_examples.relu_net(3, 6, roll=True), symbolic_examples.relu_net(3, 6)),
            "relu-ce": (symbolic_examples.relu_net(3, 6, outputs=3, head="cross-entropy", roll=True),
                        symbolic_examples.relu_net(3, 6, outputs=3, head="cross-entropy")),
            "smooth": (_smooth_net(True), _smooth_net(False))}


def _call(model, kernel, theta, X, y, noise):
    grad = np.zeros(model.n_params)
    iargs, fargs = model.kernel_args()
    idx = np.arange(X.shape[0], dtype=np.int64)
    loss = kernel(theta, X, y, idx, X.shape[0], noise, grad, np.zeros(model.workspace_size(X.shape[0])), iargs,
                  fargs)
    return loss, grad


def _inputs(model, seed, n=9):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, model.n_inputs))
    y = rng.integers(0, model.n_outputs, n) if model.head == "cross-entropy" else rng.standard_normal(n)
    noise = 0.3 * rng.standard_normal(n) if model.head == "regression" else np.zeros(n)
    return rng.standard_normal(model.n_params), X, y, noise


def test_the_rolled_source_is_loops_and_the_straight_one_is_not(pairs):
    rolled, straight = pairs["relu"]
    src_r, src_s = (open(m.code_paths["kernel"]).read() for m in (rolled, straight))
    assert "_ROLL0 = numpy.array(" in src_r and "for g in range(18):" in src_r     # ∂h/∂W_ij: m·d = 18 entries
    assert "_ROLL" not in src_s and "tmp" not in src_s
    assert rolled.key != straight.key


@pytest.mark.parametrize("name", ["relu", "relu-ce", "smooth"])
def test_rolled_kernel_equals_the_straight_line_kernel_and_the_numpy_twin(pairs, name):
    rolled, straight = pairs[name]
    for seed in range(3):
        theta, X, y, noise = _inputs(rolled, seed)
        loss_r, grad_r = _call(rolled, rolled.loss_grad, theta, X, y, noise)
        loss_s, grad_s = _call(straight, straight.loss_grad, theta, X, y, noise)
        loss_n, grad_n = _call(rolled, rolled.loss_grad_np, theta, X, y, noise)
        assert abs(loss_r - loss_s) <= 1e-12 * abs(loss_s) and abs(loss_r - loss_n) <= 1e-12 * abs(loss_n)
        assert _rel(grad_r, grad_s) <= 1e-12 and _rel(grad_r, grad_n) <= 1e-12


@pytest.mark.parametrize("name", ["relu", "smooth"])
def test_rolled_predict_jacobian_equals_the_numpy_twin(pairs, name):
    rolled = pairs[name][0]
    theta, X, _, _ = _inputs(rolled, 5)
    predict_jacobian = rolled.sde_terms()[0]
    h, J = np.zeros(X.shape[0]), np.full((X.shape[0], rolled.n_params), np.nan)
    predict_jacobian(theta, X, h, J)
    assert _rel(h, rolled.predict(theta, X)) <= 1e-12
    assert _rel(J, rolled.jacobian(theta, X)) <= 1e-12


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.01, 100.0), n=st.integers(1, 6))
def test_property_rolled_equals_straight_line_for_any_inputs(pairs, seed, scale, n):
    for name in ("relu", "smooth"):
        rolled, straight = pairs[name]
        theta, X, y, noise = _inputs(rolled, seed, n)
        theta, X = scale * theta, scale * X
        loss_r, grad_r = _call(rolled, rolled.loss_grad, theta, X, y, noise)
        loss_s, grad_s = _call(straight, straight.loss_grad, theta, X, y, noise)
        assert abs(loss_r - loss_s) <= 1e-12 * max(abs(loss_s), 1e-300)
        assert np.max(np.abs(grad_r - grad_s)) <= 1e-12 * max(np.max(np.abs(grad_s)), 1e-300)


def test_training_a_rolled_model_follows_the_straight_line_kernel(pairs):
    rolled, straight = pairs["relu"]
    hand = mlp.MLP((3, 6, 1))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3))
    ds = SimpleNamespace(X=X, y=X.sum(1) + 0.1 * rng.standard_normal(24))
    args = dict(steps=200, theta0=0.5 * hand.init(0), seed=5, batch=4, records=15, fast=False, label_noise=0.1)
    a = dt.train(rolled, ds, O.sgd(0.02), **args)
    b = dt.train(straight, ds, O.sgd(0.02), **args)
    assert _rel(a["theta"], b["theta"]) <= 1e-12
    assert np.all(np.isfinite(a["theta"])) and _rel(a["theta"][-1], args["theta0"]) > 1e-3    # it moved


def test_the_size_threshold_decides_rolling(monkeypatch):
    small = symbolic_examples.relu_net(2, 3)
    der, jac = small.derivation, small._jacobian_exprs()

    def source():
        return kernels.kernel_source(der, jac, "regression", 1.0, str, name="t", key="k")

    assert "_ROLL" not in source()
    monkeypatch.setattr(kernels, "ROLL_STATEMENTS", 5)
    assert "_ROLL0" in source()
    assert "_ROLL" not in kernels.kernel_source(der, jac, "regression", 1.0, str, name="t", key="k", roll=False)


def test_a_bad_roll_option_is_named():
    u, x = sp.symbols("u x")
    with pytest.raises(ValueError, match="Invalid roll: 'yes'"):
        SymbolicModel(u * x, params=[u], inputs=x, roll="yes")


def test_templates_ignore_the_names_of_the_leaves():
    t, x = sp.symbols("t0:12", real=True), sp.symbols("x0:2", real=True)
    leaves = rolling.Leaves({}, list(t), list(x))
    show = kernels._printer("scalar", str)
    first = template_of(t[0] * x[0] + t[1] * x[1] + t[10], leaves, show)
    second = template_of(t[11] + t[9] * x[0] + t[2] * x[1], leaves, show)
    assert first[0] == second[0]
    assert sorted(first[1]) == [("Q", 0), ("Q", 1), ("Q", 10), ("X", 0), ("X", 1)]


def template_of(expr, leaves, show):
    return rolling.template(expr, leaves, show, {})


# ------------------------------------------------------------------- the reverse-mode derivation

def test_adjoint_derivatives_equal_sympy_diff():
    a, b, c, x = sp.symbols("a b c x", real=True)
    exprs = [a * b * x, sp.tanh(a * x + b) ** 2 * sp.exp(c * a), derive.relu(a * x + b) * c + c ** 2, a ** a * x,
             sp.Piecewise((a * x, x > 0), (b * x ** 2, True)), sp.Max(a, b, c * x), sp.log(1 + sp.exp(a * b)),
             (a * x + b) ** 3 / (1 + c ** 2), sp.sqrt(a ** 2 + b ** 2) * sp.sin(a * c), (a * b + 1) * (a * b + 2)]
    point = {a: 0.7, b: -0.3, c: 1.3, x: 0.9}
    for e in exprs:
        for got, sym in zip(derive.gradient(e, [a, b, c], str), (a, b, c)):
            want = sp.diff(e, sym)
            assert abs(float((got - want).subs(point))) <= 1e-13, (e, sym, got, want)


def test_the_dense_jacobian_of_a_relu_net_is_the_closed_form():
    d, m = 2, 3
    sym = symbolic_examples.relu_net(d, m)
    (row,) = sym._jacobian_exprs()
    der = sym.derivation
    t, x = der.theta, der.inputs
    W, bias, A = [t[i * d:(i + 1) * d] for i in range(m)], t[m * d:m * d + m], t[m * d + m:m * d + 2 * m]
    for i in range(m):
        z = sum(W[i][j] * x[j] for j in range(d)) + bias[i]
        for j in range(d):
            assert sp.simplify(row[i * d + j] - A[i] * sp.Heaviside(z) * x[j]) == 0
        assert sp.simplify(row[m * d + i] - A[i] * sp.Heaviside(z)) == 0
        assert row[m * d + m + i] == derive.relu(z)
    assert row[-1] == 1


# ------------------------------------------------------------------- long sums added in chunks

def test_a_long_sum_is_added_in_chunks_and_still_equals_the_equation():
    """h = s·Σ_j u_j x_j over d = 50 inputs (a shared scalar: the dense expansion of a Sum): rolled, the
    50-term sum is four chunk temporaries (three of 16 terms in one loop, one of 2) and their sum; the
    kernel, the straight-line kernel and the NumPy twin agree with the gradient written from the equation."""
    d = 50
    j = sp.Idx("j")
    U, Xb = sp.IndexedBase("u"), sp.IndexedBase("x")
    s = sp.Symbol("s")
    rolled = SymbolicModel(s * sp.Sum(U[j] * Xb[j], (j, 0, d - 1)), params=[U, s], inputs=Xb, roll=True)
    straight = SymbolicModel(s * sp.Sum(U[j] * Xb[j], (j, 0, d - 1)), params=[U, s], inputs=Xb, roll=False)
    replacements, reduced = kernels._chunk_sums([], [rolled.derivation.outputs[0]])
    sizes = sorted(len(e.args) for _, e in replacements)
    assert sizes == [2, 16, 16, 16] and len(reduced[0].args) == 2          # s · (s0 + s1 + s2 + s3)
    src = open(rolled.code_paths["kernel"]).read()
    assert "for g in range(3):" in src
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((11, d)), rng.standard_normal(11)
    theta, noise = rng.standard_normal(d + 1), np.zeros(11)
    r = theta[d] * (X @ theta[:d]) - y
    expected = np.concatenate([(r[:, None] * theta[d] * X).mean(0), [(r * (X @ theta[:d])).mean()]])
    for model, kernel in ((rolled, rolled.loss_grad), (straight, straight.loss_grad), (rolled, rolled.loss_grad_np)):
        loss, grad = _call(model, kernel, theta, X, y, noise)
        assert _rel(grad, expected) <= 1e-13
        assert loss == pytest.approx(0.5 * np.mean(r ** 2), rel=1e-13)


def test_input_columns_count_toward_rolling():
    """A dense model over many inputs rolls although it has fewer than ROLL_STATEMENTS expressions: each
    column is a load statement of straight-line code, each a term of its sums."""
    d = 130
    xs = sp.Matrix(sp.symbols(f"x0:{d}"))
    us = sp.Matrix(sp.symbols(f"u0:{d}"))
    c = sp.Symbol("c")
    model = SymbolicModel(sp.tanh((us.T * xs)[0]) + c, params={"u": us, "c": c}, inputs=xs)
    assert "_ROLL" in open(model.code_paths["kernel"]).read()      # 1 + 131 expressions + 130 columns > 250
