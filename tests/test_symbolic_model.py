"""SymbolicModel: the generated kernel against the hand-written ones, its NumPy twin, the code cache,
the derived Jacobian / HVP, and bad declarations (issue 25)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp

import dyntools as dt
from dyntools.models import diag_net, mlp, symbolic_examples
from dyntools.models.symbolic import SymbolicModel
from dyntools.optim import optimizers as O
from tests.conftest import HANG_GUARD


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _data(n, d, seed=0, classes=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, classes, n) if classes else X[:, :3].sum(1) + 0.1 * rng.standard_normal(n)
    return SimpleNamespace(X=X, y=y)


# ------------------------------------------------------------------- trajectories of the re-declared built-ins

@pytest.mark.parametrize("opt,kw", [
    (O.sgd(0.05), dict(batch=1, label_noise=0.3)),
    (O.adam(0.01), dict(batch=4, sampler="epoch")),
    (O.sgd(0.1, momentum=0.9), dict(sampler="full")),
])
def test_diagonal_net_reproduces_the_hand_written_kernel(opt, kw):
    d = 12
    ds = _data(20, d)
    hand = dt.DiagNet(d, init="gaussian")
    sym = symbolic_examples.diagonal_net(d, sampling_stream=hand.sampling_stream)
    theta0 = hand.init(3)
    args = dict(steps=300, theta0=theta0, seed=3, records=20, **kw)
    a = dt.train(hand, ds, opt, **args)
    b = dt.train(sym, ds, opt, **args)
    assert a.status == b.status == "completed"
    assert _rel(b["theta"], a["theta"]) <= 1e-12
    assert _rel(b["train_loss"], a["train_loss"]) <= 1e-12


def test_indexed_sum_declares_the_same_diagonal_net():
    j = sp.Idx("j")
    U, V, X = sp.IndexedBase("u"), sp.IndexedBase("v"), sp.IndexedBase("x")
    by_sum = SymbolicModel(sp.Sum(U[j] * V[j] * X[j], (j, 0, 7)), params=[U, V], inputs=X)
    assert by_sum.coordinates == 8 and by_sum.n_params == 16
    assert by_sum.key == symbolic_examples.diagonal_net(8, name="symbolic").key  # the same expression, the same code


def test_quadratic_toy_reproduces_the_hand_written_kernel():
    toy = dt.QuadraticToy.uniform(n=50, seed=1)
    ds = dt.toy_data(toy)
    hand = dt.ToyModel(toy, theta0=0.5)
    sym = symbolic_examples.quadratic_toy(sampling_stream=hand.sampling_stream)
    args = dict(steps=400, theta0=np.array([0.5]), seed=2, records=30, fast=False)
    eta = 0.9 * toy.eta_interval()[0]                      # below the stabilization range: a stable run
    a = dt.train(hand, ds, O.sgd(eta), **args)
    b = dt.train(sym, ds, O.sgd(eta), **args)
    assert _rel(b["theta"], a["theta"]) <= 1e-12


@pytest.mark.parametrize("head,K", [("regression", 1), ("cross-entropy", 3)])
def test_relu_net_reproduces_the_mlp_kernel(head, K):
    d, m = 3, 6
    ds = _data(24, d, classes=K if K > 1 else None)
    hand = mlp.MLP((d, m, K), head=head)
    sym = symbolic_examples.relu_net(d, m, outputs=K, head=head, sampling_stream=hand.sampling_stream)
    assert sym.n_params == hand.n_params
    theta0 = 0.5 * hand.init(0)
    args = dict(steps=200, theta0=theta0, seed=5, batch=4, records=15, fast=False)
    a = dt.train(hand, ds, O.sgd(0.02), **args)
    b = dt.train(sym, ds, O.sgd(0.02), **args)
    assert _rel(b["theta"], a["theta"]) <= 1e-12
    np.testing.assert_allclose(sym.features(theta0, ds.X)[0], np.maximum(ds.X @ theta0[:m * d].reshape(m, d).T
                                                                         + theta0[m * d:m * d + m], 0))


def test_numba_kernel_equals_its_numpy_twin_in_training():
    d = 5
    sym = symbolic_examples.diagonal_net(d, depth=3, init={"u": 0.5, "v": ("normal", 0.3), "w": ("uniform", -1, 1)})
    ds = _data(15, d)
    args = dict(steps=60, seed=1, batch=3, label_noise=0.2, records=10)
    a = dt.train(sym, ds, O.sgd(0.05), **args)
    b = dt.train(sym, ds, O.sgd(0.05), kernel="numpy", **args)
    assert _rel(b["theta"], a["theta"]) <= 1e-12


# ------------------------------------------------------------------- derived quantities against the equations

def test_jacobian_and_hvp_of_the_diagonal_net_match_the_closed_forms():
    d = 7
    sym = symbolic_examples.diagonal_net(d)
    ds = _data(11, d, seed=4)
    rng = np.random.default_rng(0)
    theta, z = rng.standard_normal(2 * d), rng.standard_normal(2 * d)
    u, v = theta[:d], theta[d:]
    np.testing.assert_allclose(sym.jacobian(theta, ds.X), diag_net.jacobian(u, v, ds.X), rtol=1e-14)
    np.testing.assert_allclose(sym.hvp(theta, ds.X, ds.y, z), diag_net.hessian(u, v, ds.X, ds.y) @ z, rtol=1e-12)
    np.testing.assert_allclose(sym.gradient(theta, ds.X, ds.y), np.concatenate(diag_net.gradients(u, v, ds.X, ds.y)),
                               rtol=1e-12)


def test_hessian_of_the_toy_is_the_second_derivative_of_the_loss():
    toy = dt.QuadraticToy.uniform(n=30, seed=0)
    ds = dt.toy_data(toy)
    sym = symbolic_examples.quadratic_toy()
    th = 0.7
    # L(θ) = ¼ mean (y − xθ²)², L'' = mean(3 x² θ² − x y)  (written from the equation)
    expected = np.mean(3 * ds.X[:, 0] ** 2 * th**2 - ds.X[:, 0] * ds.y)
    assert sym.hessian(np.array([th]), ds.X, ds.y)[0, 0] == pytest.approx(expected, rel=1e-13)


def test_init_is_seeded_from_the_stream_table():
    sym = symbolic_examples.diagonal_net(4, init={"u": ("normal", 1.0, 0.5), "v": 0.0})
    a, b = sym.init(7, 1), sym.init(7, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, sym.init(7, 0)) and np.all(a[4:] == 0.0)


# ------------------------------------------------------------------- the code cache

def test_generated_code_is_cached_by_expression(tmp_path, monkeypatch):
    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path))
    x, a = sp.symbols("x a")
    m1 = SymbolicModel(sp.tanh(a * x) + a**2 / 7, params=[a], inputs=x, name="cached")
    assert (tmp_path / f"kernel_{m1.key}.py").is_file()
    m1.predict(np.array([0.3]), np.ones((2, 1)))
    assert (tmp_path / f"numpy_{m1.key}.py").is_file()

    m3 = SymbolicModel(sp.tanh(a * x) + a**2 / 5, params=[a], inputs=x, name="cached")
    assert m3.key != m1.key

    def no_derivation(*args, **kwargs):
        raise AssertionError("derived again although the code is cached")

    monkeypatch.setattr("dyntools.codegen.derive.jacobian", no_derivation)
    m2 = SymbolicModel(sp.tanh(a * x) + a**2 / 7, params=[a], inputs=x, name="cached")
    assert m2.key == m1.key
    np.testing.assert_allclose(m2.predict(np.array([0.3]), np.ones((2, 1))), np.tanh(0.3) + 0.09 / 7)


# ------------------------------------------------------------------- bad declarations

def test_a_parameter_missing_from_the_expression_is_named():
    u, v, x = sp.symbols("u v x")
    with pytest.raises(ValueError, match="parameter v does not appear"):
        SymbolicModel(u * x, params=[u, v], inputs=x)
    W = sp.Matrix(2, 2, sp.symbols("w0:4"))
    with pytest.raises(ValueError, match=r"parameter W\[1, 1\] does not appear"):
        SymbolicModel(W[0, 0] * x + W[0, 1] + W[1, 0], params={"W": W}, inputs=x)


def test_a_stray_symbol_is_named():
    u, x, c = sp.symbols("u x c")
    with pytest.raises(ValueError, match="symbol 'c' is neither a parameter nor an input"):
        SymbolicModel(c * u * x, params=[u], inputs=x)


def test_a_construct_sympy_cannot_differentiate_is_named():
    u, x = sp.symbols("u x")
    with pytest.raises(ValueError, match=r"cannot differentiate floor\(u\*x\) with respect to u"):
        SymbolicModel(sp.floor(u * x), params=[u], inputs=x)
    f = sp.Function("f")
    with pytest.raises(ValueError, match=r"cannot differentiate f\(u\*x\)"):
        SymbolicModel(f(u * x), params=[u], inputs=x)


def test_an_expression_too_large_for_the_budget_is_refused():
    ws, x = sp.symbols("w0:120"), sp.Symbol("x")
    h = sp.Mul(*[sp.tanh(w * x + 1) for w in ws])        # 120 derivatives of 120 factors each
    with pytest.raises(ValueError, match="takes more than the budget of 0.05 s"):
        SymbolicModel(h, params=list(ws), inputs=x, budget=0.05)


def test_data_of_the_wrong_shape_is_refused_before_training():
    sym = symbolic_examples.diagonal_net(6)
    with pytest.raises(ValueError, match=r"Invalid X: the model 'diagonal-net-2' reads 6 columns"):
        dt.train(sym, _data(10, 5), O.sgd(0.1), steps=2)
    with pytest.raises(ValueError, match="Invalid y"):
        sym.check_data(np.zeros((4, 6)), np.zeros(3))


@pytest.mark.parametrize("kwargs,match", [
    (dict(head="cross-entropy"), "cross-entropy head needs K >= 2"),
    (dict(loss_scale=0.0), "loss_scale"),
    (dict(init={"q": 1.0}), "no parameter block named 'q'"),
    (dict(init={"u": ("normal", -1.0)}), "standard deviation"),
])
def test_bad_options_are_named(kwargs, match):
    u, x = sp.symbols("u x")
    with pytest.raises(ValueError, match=match):
        SymbolicModel(u * x, params=[u], inputs=x, **kwargs)


# ------------------------------------------------------------------- metrics from the one definition

def test_metrics_from_the_derived_hooks():
    d, m = 2, 5
    sym = symbolic_examples.relu_net(d, m)
    ds = _data(14, d, seed=2)
    theta = np.random.default_rng(3).standard_normal(sym.n_params)
    H = sym.hessian(theta, ds.X, ds.y)
    assert np.allclose(H, H.T, atol=1e-12)
    assert sym.sharpness(theta, ds.X, ds.y) == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=1e-6)
    assert sym.jacobian_rank(theta, ds.X) == np.linalg.matrix_rank(sym.jacobian(theta, ds.X), tol=None)
    hidden = np.maximum(ds.X @ theta[:m * d].reshape(m, d).T + theta[m * d:m * d + m], 0)
    assert sym.feature_sparsity(theta, ds.X)["hidden"] == dt.metrics.feature_sparsity(hidden)


def test_the_benchmark_driver_gives_the_same_run_for_both_kernels():
    from dyntools.bench import benchmarks, symbolic_model
    from dyntools.bench.symbolic_model import sgd_with_kernel

    assert benchmarks()["symbolic-model"] is symbolic_model.BENCHMARK
    d = 6
    ds = _data(10, d)
    idx = np.random.default_rng(0).integers(0, 10, 50)
    theta0 = np.concatenate([np.full(d, 0.5), np.full(d, 0.1)])
    out = []
    for model in (dt.DiagNet(d), symbolic_examples.diagonal_net(d)):
        iargs, fargs = model.kernel_args()
        out.append(sgd_with_kernel(model.loss_grad, theta0.copy(), ds.X, ds.y, idx, 0.05,
                                   np.zeros(model.workspace_size(1)), iargs, fargs))
    assert _rel(out[1], out[0]) <= 1e-13


# ------------------------------------------------------------------- the coordinatewise form's limits

def test_coordinatewise_limits_say_what_is_allowed_and_to_declare_densely():
    u, x = sp.symbols("u x")
    dense = "declare the model densely instead"
    with pytest.raises(ValueError, match=rf"Invalid head: regression with 2 output\(s\) — a coordinatewise model has "
                                         rf"one output.*{dense}"):
        SymbolicModel(sp.Matrix([u * x, u * x**2]), params=[u], inputs=x, coordinates=3)
    with pytest.raises(ValueError, match=rf"Invalid head: cross-entropy.*{dense}"):
        SymbolicModel(sp.Matrix([u * x, -u * x]), params=[u], inputs=x, coordinates=3, head="cross-entropy")
    W = sp.Matrix(2, 1, sp.symbols("w0:2"))
    with pytest.raises(ValueError, match=rf"block 'W' is a Matrix.*{dense}"):
        SymbolicModel(W[0] * W[1] * x, params={"W": W}, inputs=x, coordinates=3)


# ------------------------------------------------------------------- sums the coordinatewise form cannot take

def test_a_shared_scalar_in_a_sum_is_compiled_as_the_dense_declaration_of_the_same_model():
    j, d = sp.Idx("j"), 5
    U, X = sp.IndexedBase("u"), sp.IndexedBase("x")
    s = sp.Symbol("s")
    model = SymbolicModel(s * sp.Sum(U[j] * X[j], (j, 0, d - 1)), params=[U, s], inputs=X)
    assert model.coordinates is None and model.expanded_coordinates == d
    assert model.n_params == d + 1 and model.n_inputs == d
    assert model.param_names == [f"u[{k}]" for k in range(d)] + ["s"]
    ds = _data(12, d)
    theta = np.array([0.5, -1.0, 2.0, 0.3, -0.7, 1.3])
    # h = s Σ_j u_j x_j: ∂h/∂u_j = s x_j, ∂h/∂s = Σ_j u_j x_j (written from the equation)
    jac = model.jacobian(theta, ds.X)
    np.testing.assert_allclose(jac[:, :d], theta[d] * ds.X, rtol=1e-14)
    np.testing.assert_allclose(jac[:, d], ds.X @ theta[:d], rtol=1e-14)
    # the same run as the model declared densely by hand (same θ layout, same columns of X)
    us, xs = sp.Matrix(sp.symbols(f"u0:{d}")), sp.Matrix(sp.symbols(f"x0:{d}"))
    by_hand = SymbolicModel(s * (us.T * xs)[0], params={"u": us, "s": s}, inputs=xs)
    args = dict(steps=200, theta0=theta, seed=2, records=10, batch=1, label_noise=0.2)
    a, b = dt.train(by_hand, ds, O.sgd(0.02), **args), dt.train(model, ds, O.sgd(0.02), **args)
    assert a.status == b.status == "completed"
    assert _rel(b["theta"], a["theta"]) <= 1e-12
    # the compiled kernel and its NumPy twin agree on the expanded model
    iargs, fargs = model.kernel_args()
    idx = np.arange(12)
    grads = []
    for fn in (model.loss_grad, model.loss_grad_np):
        g = np.zeros(model.n_params)
        fn(theta, ds.X, ds.y, idx, 12, np.zeros(12), g, np.zeros(model.workspace_size(12)), iargs, fargs)
        grads.append(g)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_a_sum_inside_an_expression_and_two_sums_expand():
    j, d = sp.Idx("j"), 4
    U, V, X = sp.IndexedBase("u"), sp.IndexedBase("v"), sp.IndexedBase("x")
    c = sp.Symbol("c")
    model = SymbolicModel(c * sp.tanh(sp.Sum(U[j] * X[j], (j, 0, d - 1))) + sp.Sum(V[j] * X[j] ** 2, (j, 0, d - 1)),
                          params={"u": U, "v": V, "c": c}, inputs=X)
    assert model.expanded_coordinates == d and model.n_params == 2 * d + 1
    X_ = _data(7, d, seed=4).X
    theta = np.random.default_rng(1).standard_normal(2 * d + 1)
    u, v, cv = theta[:d], theta[d:2 * d], theta[2 * d]
    z = np.tanh(X_ @ u)
    np.testing.assert_allclose(model.predict(theta, X_), cv * z + X_ ** 2 @ v, rtol=1e-13)
    jac = model.jacobian(theta, X_)
    np.testing.assert_allclose(jac[:, :d], cv * (1 - z ** 2)[:, None] * X_, rtol=1e-12)
    np.testing.assert_allclose(jac[:, d:2 * d], X_ ** 2, rtol=1e-14)
    np.testing.assert_allclose(jac[:, 2 * d], z, rtol=1e-14)


def test_sums_of_different_lengths_and_an_index_outside_its_sum_are_named():
    j = sp.Idx("j")
    U, X = sp.IndexedBase("u"), sp.IndexedBase("x")
    s = sp.Symbol("s")
    with pytest.raises(ValueError, match=r"its sums run over different lengths \[3, 4\]"):
        SymbolicModel(s * sp.Sum(U[j] * X[j], (j, 0, 2)) + sp.Sum(U[j], (j, 0, 3)), params=[U, s], inputs=X)
    with pytest.raises(ValueError, match=r"u\[0\] is outside a Sum|u\[j\] is outside a Sum"):
        SymbolicModel(s * sp.Sum(U[j] * X[j], (j, 0, 2)) + U[j], params=[U, s], inputs=X)
    with pytest.raises(ValueError, match="leave coordinates unset"):
        SymbolicModel(s * sp.Sum(U[j] * X[j], (j, 0, 2)), params=[U, s], inputs=X, coordinates=3)


# ------------------------------------------------------------------- one trainer loop for every generated kernel

_ONE_LOOP_CHILD = """
import json
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(getattr(ev.data.get("dispatcher"), "__qualname__", "?"))
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
import numpy as np
import dyntools as dt
from dyntools.models import symbolic_examples
rng = np.random.default_rng(0)
theta = {}
for d in (4, 5):
    model = symbolic_examples.diagonal_net(d)
    X = rng.standard_normal((12, d))
    run = dt.train(model, type("D", (), {"X": X, "y": X[:, 0]})(), dt.optim.sgd(0.05), steps=50, seed=1, batch=2,
                   label_noise=0.1, records=3)
    theta[d] = run["theta"].tobytes().hex()
import sys
from dyntools.dynamics import path_loop
assert not [name for name in sys.modules if name.startswith("dyntools_user_")]   # no loop of a step module
loops = list(path_loop._BY_POINTER.values())
assert len(loops) == 1, loops            # one loop for both kernels and the SGD step (short runs: all by pointer)
loop = loops[0]
print(json.dumps({"theta": theta, "signatures": len(loop.signatures), "hits": sum(loop.stats.cache_hits.values()),
                  "misses": sum(loop.stats.cache_misses.values()), "compiled": compiled}))
"""


@pytest.mark.slow
def test_every_generated_kernel_trains_through_one_cached_loop(tmp_path):
    """dt.train calls a generated kernel through a function pointer from one loop (a short run: kernel and step by
    pointer, path_loop.by_pointer; a long one names its step, loops.pointer_loop, see tests/test_byo_kernel.py):
    two models in a process compile it once, a second process loads it and the kernels from numba's cache (nothing
    compiles: a kernel first compiled by argument types in the twin check was cached under a key the pointer's
    signature missed), and the cache load gives the fresh compile's bits (one machine)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), DYNTOOLS_SYMBOLIC_CACHE=str(tmp_path / "sym"),
               DYNTOOLS_LOOP_CACHE=str(tmp_path / "loops"), PYTHONPATH=str(root))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _ONE_LOOP_CHILD], env=env, capture_output=True, text=True,
                              timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert (first["signatures"], first["misses"], first["hits"]) == (1, 1, 0), first
    assert (second["signatures"], second["misses"], second["hits"]) == (1, 0, 1), second
    assert first["compiled"] and second["compiled"] == [], second["compiled"]
    assert second["theta"] == first["theta"]
