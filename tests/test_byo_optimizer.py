"""Your own optimizer through dt.train and the sweep (issue 30, item 1)."""

import math
from pathlib import Path

import numpy as np
import pytest

import dyntools as dt
from dyntools.models.least_squares import LeastSquares
from dyntools.optim import optimizers as O
from dyntools.optim import transforms as T
from tests.byo_lion import lion, lion_reference

RNG = np.random.default_rng(3)
X = RNG.normal(size=(12, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * RNG.normal(size=12)


class Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


def _ls_gradient(theta):            # F(β) = ‖Xβ − y‖²: ∇F = 2Xᵀ(Xβ − y) (least_squares' convention)
    return 2.0 * X.T @ (X @ theta - Y)


@pytest.mark.parametrize("compiled", [False, True, "element"])
@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_user_lion_trains_as_its_equations(compiled, kernel):
    """Lion as a user chain, full batch, decoupled decay: equal to the NumPy loop written from Lion's
    equations to 1e-12 relative (the same operations; sign() makes it exact unless a sign flips)."""
    steps, lr, wd = 40, 0.05, 0.1
    theta0 = np.array([0.3, -0.2, 0.1])
    res = dt.train(LeastSquares(3), Data(X, Y), lion(lr, wd, compiled=compiled), steps=steps, sampler="full",
                   record_steps=np.arange(steps + 1), theta0=theta0, kernel=kernel)
    ref = lion_reference(theta0, [_ls_gradient] * steps, lr, wd)
    np.testing.assert_allclose(res["theta"][0, 0], np.array(ref), rtol=1e-12, atol=1e-14)
    # compiled: a whole-array kernel (True) or an element update ("element"): either runs in the compiled loop
    assert res.config["optimizer_path"] == ("fused" if compiled else "chain")
    assert res.config["runs"][0]["optimizer_step"] == ("fused" if compiled else "chain (numpy)")


def test_builtin_and_user_optimizers_in_one_run_by_chain_equal_fused():
    """A run mixing AdamW (compiled) and Lion without a compiled form steps every run by its chain; AdamW by its
    chain equals AdamW by the compiled step to 1e-12 relative (the same arithmetic in another order of calls)."""
    opts = [dt.adamw(lr=0.01, weight_decay=0.1), lion(0.01)]
    both = dt.train(LeastSquares(3), Data(X, Y), opts, steps=30, batch=4, seed=5)
    fused = dt.train(LeastSquares(3), Data(X, Y), opts[0], steps=30, batch=4, seed=5)
    assert both.config["optimizer_path"] == "chain" and fused.config["optimizer_path"] == "fused"
    np.testing.assert_allclose(both["final_theta"][0], fused["final_theta"][0], rtol=1e-12)


def test_the_old_fused_kernel_arguments_are_refused_never_another_optimizer():
    """Optimizer(name, lr, chain, options): a preconditioner code and hyperparameter slots (the representation
    before issue 37) are an error, not silently some other optimizer."""
    chain = lion().chain
    with pytest.raises(TypeError):
        O.Optimizer("lion", 1e-3, chain, 1, np.zeros(9))
    with pytest.raises(TypeError, match="Invalid options of optimizer 'lion': 1 "):
        O.Optimizer("lion", 1e-3, chain, 1)
    assert not hasattr(O, "PRECONDS") and not hasattr(O, "N_HPARAMS") and not hasattr(O, "NO_FUSED_KERNEL")


@pytest.mark.parametrize("name", sorted(O.FACTORIES))
def test_every_builtin_optimizer_compiles_to_its_chain(name):
    """Every alias runs in the compiled step ("fused"), which follows its readable chain to 1e-12 relative."""
    from dyntools.optim.chain_step import describe
    from dyntools.optim.compiled import compile_runs

    opt = (O.make(name, lr=0.01, weight_decay=0.01) if name not in ("sgd", "sgdw")
           else O.make(name, lr=0.01, momentum=0.9, weight_decay=0.01))
    assert describe(opt) == "fused"
    cr = compile_runs([opt])
    theta = np.array([0.7, -1.3, 0.05, 2.0])
    fast, state = theta.copy(), cr.initial_state(0, 4)
    ref, ref_state = theta.copy(), opt.init(theta)
    for t, g in enumerate(np.random.default_rng(4).normal(size=(3, 4)), 1):
        cr.step(0, fast, g, state, t, opt.lr, cr.hps)
        ref, ref_state = opt.step(ref, g, ref_state, t)
    assert not np.array_equal(fast, theta)
    np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-14)


def test_compiled_transform_equals_its_numpy_update():
    from dyntools.optim.chain_step import ChainStepper

    th_a = np.array([0.5, -1.0, 2.0])
    th_b = th_a.copy()
    a, b = ChainStepper(lion(0.1, 0.1), th_a), ChainStepper(lion(0.1, 0.1, compiled=True), th_b)
    for t, g in enumerate(RNG.normal(size=(6, 3)), 1):
        a(th_a, g, t, 0.1)
        b(th_b, g, t, 0.1)
        assert np.array_equal(th_a, th_b)


def test_chain_must_be_a_transform():
    with pytest.raises(TypeError, match="Invalid chain of optimizer 'x'"):
        O.Optimizer("x", 1e-3, "not a chain")
    assert T.chain().init(np.zeros(2)) == ()


# ------------------------------------------------------------------------------------ the sweep

SWEEP = ["--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-3:1e-1:2", "--n", "40", "--n-val", "40", "--epochs", "2",
         "--hidden", "4", "--batch-size", "8", "--seed", "3", "--json"]


def test_user_lion_in_a_4_cell_sweep_resumes_and_runs_on_dask(tmp_path):
    """``--optimizer-file tests/byo_lion.py --optimizers lion``: 4 cells computed, then all reused on resume;
    every cell is the in-process cell with the user's Lion (bitwise, one machine), not AdamW's, and equals a
    NumPy loop written from Lion's equations on the cell's data, θ₀ and batches (1e-9 relative); the module
    reference ``tests.byo_lion:lion`` on a Dask local cluster gives the same cells bit for bit."""
    import json

    from dyntools import store
    from dyntools.classifier_cell import train_cell
    from tests.conftest import run_cli

    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root)}
    out = tmp_path / "grid"
    args = ["sweep", "adamw-grid", "--optimizer-file", root / "tests" / "byo_lion.py", "--optimizers", "lion", *SWEEP]
    proc = run_cli(*args, "--workers", "1", "--out", out, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["computed"] == 4
    again = run_cli(*args, "--workers", "1", "--out", out, env=env, cwd=root)
    assert json.loads(again.stdout)["computed"] == 0 and json.loads(again.stdout)["reused"] == 4
    result = store.load(out)
    [name] = result.config["optimizers"]
    assert name == f"{root / 'tests' / 'byo_lion.py'}:lion"        # the reference a worker rebuilds it from
    cells = [{"optimizer": name, "lr": lr, "wd": wd} for lr in (1e-3, 1e-2) for wd in (1e-3, 1e-1)]
    for k, cell in enumerate(cells):
        mine = train_cell(result.config, cell, result.seed, k)
        assert mine["val_loss"] == result["val_loss"][0].ravel()[k]
        # and the cell is Lion's equations: a NumPy loop over the cell's own data, θ₀ and batches
        train_ref, val_ref = _lion_cell_reference(result.config, result.seed, k, cell["lr"], cell["wd"])
        np.testing.assert_allclose([result["train_loss"][0].ravel()[k], result["val_loss"][0].ravel()[k]],
                                   [train_ref, val_ref], rtol=1e-9)
    assert train_cell(result.config, {**cells[3], "optimizer": "adamw"}, result.seed, 3)["val_loss"] != \
        result["val_loss"][0].ravel()[3]
    dask_out = tmp_path / "dask"
    proc = run_cli("sweep", "adamw-grid", "--optimizers", "tests.byo_lion:lion", *SWEEP, "--dask-local", "1",
                   "--out", dask_out, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(store.load(dask_out)["val_loss"], result["val_loss"])


def _lion_cell_reference(config, seed, index, lr, wd):
    """Cell ``index`` of a spiral sweep trained by Lion written from its equations (:func:`lion_reference`'s
    update, plain NumPy) on the cell's data set, initial θ and epoch batches (the same streams as
    ``dyntools.classifier_cell.train_cell``), the gradient by the MLP's NumPy twin: (train loss, val loss)."""
    from dyntools import data
    from dyntools.engine import samplers, streams
    from dyntools.models.mlp import MLP, loss_grad_cross_entropy_np

    d = data.spirals(config["n"], classes=config["classes"], turns=config["turns"], noise=config["noise"],
                     n_val=config["n_val"], seed=seed)
    model = MLP((2, *config["hidden"], config["classes"]), head="cross-entropy", init="uniform",
                init_stream="sweep.adamw-grid", init_key=(index,))
    n, b = config["n"], config["batch_size"]
    steps = math.ceil(config["epochs"] * n / b)
    state = streams.path_states(seed, 1, streams.key("sweep.adamw-grid"), index, 1).copy()    # (1, 4): one path
    batches = samplers.epoch_batches_np(state, n, steps, b)
    iargs, fargs = model.kernel_args()
    grad_at = [lambda th, i=i: _grad(loss_grad_cross_entropy_np, th, d, i, iargs, fargs) for i in batches]
    theta = lion_reference(model.init(seed, 0), grad_at, lr, wd)[-1]
    return model.evaluate(theta, d.X, d.y)[0], model.evaluate(theta, d.X_val, d.y_val)[0]


def _grad(loss_grad, theta, d, idx, iargs, fargs):
    g = np.empty_like(theta)
    loss_grad(theta, d.X, d.y, idx, idx.size, np.zeros(idx.size), g, np.empty(0), iargs, fargs)
    return g


def test_bad_user_optimizer_reference_is_a_usage_error(tmp_path):
    from tests.conftest import assert_usage_error, run_cli

    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root)}
    for refs, needle in [("tests.byo_lion:nope", "has no function 'nope'"),
                         ("no_such_module_xyz:lion", "cannot import module 'no_such_module_xyz'")]:
        proc = run_cli("sweep", "adamw-grid", "--optimizers", refs, *SWEEP, "--out", tmp_path / "x", env=env, cwd=root)
        assert_usage_error(proc, "Invalid --optimizers", needle, out_dir=tmp_path / "x")
    proc = run_cli("sweep", "adamw-grid", "--optimizer-file", tmp_path / "missing.py", "--optimizers", "lion", *SWEEP,
                   "--out", tmp_path / "x", env=env, cwd=root)
    assert_usage_error(proc, "Invalid --optimizer-file", out_dir=tmp_path / "x")
