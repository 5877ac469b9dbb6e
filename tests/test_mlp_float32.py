"""The float32 path of the MLP (``MLP(dtype="float32")``, ``--dtype``): kernels against their float32 NumPy
twins and the float64 kernel, training against float64 training, the fused optimizers in float32 against
the torch goldens, the CLI flag, and the optional JAX anchor doing the benchmark cell's work.

Tolerances (stated, measured with margin): one float32 loss-and-gradient ≤ 1e-5 of ‖g‖∞ from the float64
kernel on the same inputs; 300 AdamW steps on the spirals ≤ 1e-3 relative in θ and ≤ 1e-4 in every
step's loss; every torch golden trajectory (500+ steps) ≤ 1e-5 relative (measured ≤ 1.7e-6).
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dyntools import cli, data
from dyntools.dynamics.train import train
from dyntools.engine import samplers, streams
from dyntools.models.mlp import MLP
from dyntools.optim import optimizers as O
from dyntools.optim import torch_names
from tests import optim_step

GOLDEN_DIR = Path(__file__).with_name("goldens")
sys.path.insert(0, str(GOLDEN_DIR))
import make_goldens as G  # noqa: E402

GOLDENS = np.load(GOLDEN_DIR / "torch_goldens.npz")
OPT_CASES = json.loads(str(GOLDENS["meta"]))["optimizer_cases"]


def _kernel(model, fn, theta, X, y, idx, dtype):
    b = len(idx)
    iargs, fargs = model.kernel_args()
    grad = np.full(model.n_params, np.nan, dtype=dtype)
    loss = fn(theta.astype(dtype), X.astype(dtype), y, np.asarray(idx, dtype=np.int64), b, np.zeros(b), grad,
              np.zeros(model.workspace_size(b), dtype=dtype), iargs, fargs)
    return float(loss), grad


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from([3, 8, 17, 32]), min_size=1, max_size=3), st.integers(2, 4), st.integers(1, 40),
       st.booleans(), st.integers(0, 10_000))
@example([17, 32, 17], 2, 1, True, 187)      # the deepest case hypothesis found: 1.5e-5 relative in float32
@example([32, 32], 2, 1, True, 30)           # a saturated softmax: the float32 twin's gradient 8e-7 off (see below)
def test_float32_cross_entropy_kernel_equals_twin_and_float64(hidden, classes, batch, bias, seed):
    model = MLP((2, *hidden, classes), biases=bias, head="cross-entropy", dtype="float32")
    rng = np.random.default_rng(seed)
    theta = (rng.standard_normal(model.n_params) * 0.5).astype(np.float32)
    X, y = rng.standard_normal((50, 2)).astype(np.float32), rng.integers(0, classes, 50)
    idx = rng.integers(0, 50, batch)
    l32, g32 = _kernel(model, model.loss_grad, theta, X, y, idx, np.float32)
    t32, h32 = _kernel(model, model.loss_grad_np, theta, X, y, idx, np.float32)
    l64, g64 = _kernel(model, model.loss_grad, theta, X, y, idx, np.float64)
    t64, h64 = _kernel(model, model.loss_grad_np, theta, X, y, idx, np.float64)
    assert g32.dtype == np.float32 and h32.dtype == np.float32
    scale = max(np.abs(g64).max(), 1e-3)
    # the kernel is its twin's function: in float64 the two agree to rounding (fma chains against BLAS sums)
    assert np.abs(g64 - h64).max() <= 1e-10 * scale and abs(l64 - t64) <= 1e-12 * max(1.0, l64)
    # float32 rounding (eps 1.2e-7) accumulated through up to three hidden layers of width ≤ 32 and their
    # backward pass: measured up to 1.5e-5 of the largest gradient entry (the example above); 1e-4 leaves that
    # a margin while a wrong kernel (a dropped term, a transposed weight) errs by 1e-2 or more
    tol = 1e-4
    assert np.abs(g32 - g64).max() <= tol * scale and abs(l32 - l64) <= 1e-5 * max(1.0, l64)
    # the twin in float32 computes its loss to float32's accuracy too. Its gradient is not held to the kernel's
    # bound: its softmax − one-hot cancels in float32 when a probability is near 1 (each error entry keeps ~1e-7
    # absolute), which hypothesis found 8e-7 off at batch 1 where the whole gradient is ~1e-5 (seed 30 below)
    assert abs(t32 - t64) <= 1e-5 * max(1.0, l64)


@pytest.fixture(scope="module")
def runs():
    d = data.spirals(200, seed=3)
    idx = samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench")), 200, 300, 32).ravel()
    out = {}
    for dt in ("float64", "float32"):
        model = MLP((2, 16, 16, 2), head="cross-entropy", init="uniform", dtype=dt)
        for kernel in ("numba", "numpy"):
            if dt == "float64" and kernel == "numpy":
                continue
            out[dt, kernel] = train(model, d, O.adamw(3e-3, weight_decay=1e-2), steps=300, batch=32,
                                    sampler="replay", indices=idx, record_steps=np.array([300]), seed=0,
                                    kernel=kernel, step_loss=True)
    return out


def test_float32_training_follows_float64_to_the_stated_tolerance(runs):
    a, b = runs["float64", "numba"], runs["float32", "numba"]
    assert b.config["model"]["dtype"] == "float32" and a.config["model"]["dtype"] == "float64"
    t64, t32 = a["final_theta"][0, 0], b["final_theta"][0, 0]
    assert t32.dtype == np.float64                    # results come back in float64 (exactly the float32 values)
    np.testing.assert_array_equal(t32, t32.astype(np.float32).astype(np.float64))
    rel = np.abs(t32 - t64).max() / np.abs(t64).max()
    assert 1e-9 < rel <= 1e-3                         # really float32 arithmetic, and close to float64
    assert np.abs(a["step_loss"] - b["step_loss"]).max() <= 1e-4
    assert a.status == b.status


def test_float32_compiled_training_equals_its_numpy_twin(runs):
    a, b = runs["float32", "numba"], runs["float32", "numpy"]
    rel = np.abs(a["final_theta"] - b["final_theta"]).max() / np.abs(b["final_theta"]).max()
    assert rel <= 1e-4
    assert np.abs(a["step_loss"] - b["step_loss"]).max() <= 1e-5


def _golden_run_float32(case):
    opt = torch_names.optimizer_from_torch(case["optimizer"], case["kwargs"])
    steps = case["steps"]
    m = (torch_names.schedule_from_torch(case["schedule"]).multipliers(steps) if case["schedule"]
         else np.ones(steps))
    p0, a, c = G.problem(case["seed"])
    p = p0.astype(np.float32)
    state = optim_step.init_state(opt, p.size).astype(np.float32)
    records = [p.astype(np.float64)]
    for t in range(steps):
        g = G.problem_gradient(p.astype(np.float64), a, c, case["seed"], t).astype(np.float32)
        optim_step.step(opt, p, g, state, t + 1, m[t])
        if (t + 1) % G.RECORD_EVERY == 0 or t + 1 == steps:
            records.append(p.astype(np.float64))
    assert p.dtype == np.float32 and state.dtype == np.float32
    return np.array(records)


@pytest.mark.parametrize("case", OPT_CASES, ids=[c["name"] for c in OPT_CASES])
def test_fused_optimizers_in_float32_follow_the_torch_goldens(case):
    ref = GOLDENS[f"opt/{case['name']}"]
    x = _golden_run_float32(case)
    err = float(np.max(np.max(np.abs(x - ref), axis=1) / np.max(np.abs(ref), axis=1)))
    assert 1e-9 < err <= 1e-5                         # float32 rounding is visible, and small


def test_bad_dtype_is_refused():
    with pytest.raises(ValueError, match="Invalid dtype: 'float16'"):
        MLP((2, 4, 2), head="cross-entropy", dtype="float16")
    assert MLP((2, 4, 2), head="cross-entropy", dtype=np.float32).dtype == np.float32


def test_cli_dtype_float16_one_line_exit_2_nothing_written(tmp_path, capsys):
    out = tmp_path / "bad"
    assert cli.main(["sweep", "adamw-grid", "--out", str(out), "--dtype", "float16"]) == 2
    err = capsys.readouterr().err
    assert "Invalid dtype: 'float16'" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_heatmap_cell_trains_in_the_configured_precision():
    from dyntools.bench.sweep import CELL_CONFIG
    from dyntools.classifier_cell import train_cell

    cfg = {**CELL_CONFIG, "n": 128, "n_val": 64, "hidden": [8, 8], "batch_size": 16, "epochs": 4.0}
    cells = {dt: train_cell({**cfg, "dtype": dt}, {"optimizer": "adamw", "lr": 3e-3, "wd": 1e-2}, 0, 1)
             for dt in ("float64", "float32")}
    a, b = cells["float64"], cells["float32"]
    assert a["curve"].shape == b["curve"].shape and not np.array_equal(a["curve"], b["curve"])
    np.testing.assert_allclose(b["curve"], a["curve"], rtol=1e-4)
    assert abs(a["val_loss"] - b["val_loss"]) <= 1e-4


def test_jax_anchor_does_the_cells_work():
    """The benchmark's JAX version of a grid cell (same network, init, minibatches, AdamW / Adam with L2)
    gives dyntools' float64 step losses: the anchor times the same computation."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from dyntools.bench import sweep as bench

    d = data.spirals(100, seed=1)
    model = MLP((2, 8, 2), head="cross-entropy", init="uniform")
    steps, b = 30, 10
    thetas = np.stack([model.init(0, i) for i in range(2)])
    batches = np.stack([samplers.epoch_batches(streams.path_states(0, 1, streams.key("bench"), i), 100, steps, b)
                        for i in range(2)])
    for decoupled, make in ((True, O.adamw), (False, O.adam)):
        lrs, wds = [1e-2, 3e-2], [1e-3, 1e-1]
        losses = np.asarray(bench.jax_grid(model, d.X, d.y, thetas, batches, lrs, wds, decoupled, "float64")())
        for c in range(2):
            res = train(model, d, make(lrs[c], weight_decay=wds[c]), steps=steps, batch=b, sampler="replay",
                        indices=batches[c].ravel(), theta0=thetas[c], record_steps=np.array([steps]),
                        step_loss=True)
            np.testing.assert_allclose(losses[c], res["step_loss"][0, 0], rtol=1e-9)


def test_jax_missing_is_reported_not_raised(monkeypatch):
    from dyntools.bench import sweep as bench

    monkeypatch.setitem(sys.modules, "jax", None)
    assert bench.jax_modules() is None


@pytest.mark.skipif(not __import__("dyntools.dynamics.fast.mlp", fromlist=["X86"]).X86, reason="x86 only")
def test_float32_loop_flushes_subnormals_and_restores_the_thread_mode():
    from numba import njit

    from dyntools.dynamics.fast import mlp as fast

    @njit
    def product_under(mode, a, b):
        # the operands are loaded from and the product stored to arrays, as in the training loops: LLVM may
        # move a multiplication of registers across the MXCSR writes (llvmlite 0.42 did), not these loads/stores
        x, y, out = np.full(1, a), np.full(1, b), np.full(1, a)
        old = fast.get_mxcsr()
        fast.set_mxcsr(mode)
        out[0] = x[0] * y[0]
        fast.set_mxcsr(old)
        return out[0]

    @njit
    def mode():
        return fast.get_mxcsr()

    tiny, half = np.float32(1e-30), np.float32(1e-10)
    before = mode()
    assert product_under(before, tiny, half) > 0                                    # a subnormal float32
    assert product_under(before | np.uint32(fast.FTZ_DAZ), tiny, half) == 0         # flushed
    d = data.spirals(120, seed=2)
    model = MLP((2, 8, 2), head="cross-entropy", init="uniform", dtype="float32")
    kw = dict(steps=60, batch=12, sampler="epoch", record_steps=np.array([60]), seed=1, step_loss=True)
    tuned = train(model, d, O.adamw(1e-2, weight_decay=1e-3), **kw)
    generic = train(model, d, O.adamw(1e-2, weight_decay=1e-3), fast=False, **kw)
    assert tuned.config["path"] == "tuned" and generic.config["path"] == "generic"
    assert mode() == before
    np.testing.assert_array_equal(tuned["final_theta"], generic["final_theta"])     # nothing subnormal here
    np.testing.assert_array_equal(tuned["step_loss"], generic["step_loss"])


@pytest.mark.parametrize("sampler,batch,noise,opt", [("with-replacement", 1, 0.0, O.adam(1e-2)),
                                                     ("with-replacement", 3, 0.1, O.sgd(0.05, momentum=0.9)),
                                                     ("distinct", 2, 0.0, O.sgd(0.05))])
def test_float32_regression_loop_is_the_generic_loop_bit_for_bit(sampler, batch, noise, opt, tuned_short_runs):
    """The tuned regression loop in float32 (dyntools.dynamics.fast.mlp, now also dt.train's default
    with-replacement sampler) and the generic loop named for the float32 kernel: the same bits, on 2 threads."""
    model = MLP((4, 7, 5, 1), dtype="float32")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 4))
    d = type("Data", (), {"X": X, "y": X[:, 0] - 0.5 * X[:, 1]})()
    kw = dict(steps=80, batch=batch, sampler=sampler, label_noise=noise, records=7, seed=2, seeds=2, step_loss=True,
              workers=2)
    tuned, generic = train(model, d, opt, **kw), train(model, d, opt, fast=False, **kw)
    assert tuned.config["path"] == "tuned" and generic.config["path"] == "generic"
    assert not np.array_equal(tuned["theta"][..., -1, :], tuned["theta"][..., 0, :])       # it trained
    for key in ("theta", "final_theta", "diverged_at", "step_loss"):
        np.testing.assert_array_equal(tuned[key], generic[key], err_msg=key)
