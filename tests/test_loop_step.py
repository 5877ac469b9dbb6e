"""The loops' side of issue 37: the runs' compiled optimizer step (dyntools.optim.compiled) and the typed run
(dyntools.dynamics.path_loop.LoopArrays) — every way a loop gets the step computes the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyntools as dt
from dyntools.dynamics import path_loop, run_plan
from dyntools.optim import compiled, kernels
from dyntools.optim import optimizers as O
from dyntools.optim.decay_groups import adamw_decay

OPTS = [O.sgd(0.1), O.sgd(0.1, momentum=0.9, nesterov=True), O.sgdw(0.1, weight_decay=0.01),
        O.adam(0.01, weight_decay=0.1), O.adamw(0.01, weight_decay=0.1, amsgrad=True), O.adagrad(0.1),
        O.rmsprop(0.01, momentum=0.5, centered=True), O.rmsprop_bc(0.01)]


def test_plain_sgd_is_read_per_run_from_the_optimizers():
    runs = compiled.compile_runs(OPTS)
    assert runs.plain_sgd == (True,) + (False,) * (len(OPTS) - 1)
    assert runs.hps.shape[0] == len(OPTS) and runs.hps.flags.c_contiguous and runs.n_slots == O.N_SLOTS
    for g, o in enumerate(OPTS):
        np.testing.assert_array_equal(runs.initial_state(g, 7), kernels.init_state(o, 7))


def test_runs_with_and_without_per_parameter_decay_cannot_share_a_state_layout():
    grouped = adamw_decay("l2", weight_decay=0.1, weights=np.ones(4), groups=np.zeros(4, dtype=np.int64))
    runs = compiled.compile_runs([grouped, O.adam(0.01)])
    assert runs.n_slots == O.N_SLOTS + 2 and runs.plain_sgd == (False, False)
    assert runs.initial_state(0, 4).shape == (O.N_SLOTS + 2, 4)
    with pytest.raises(ValueError, match="state rows"):
        runs.initial_state(1, 4)


@settings(max_examples=25, deadline=None)
@given(g=st.integers(0, len(OPTS) - 1), t=st.integers(1, 400), seed=st.integers(0, 2**32 - 1),
       lr=st.floats(1e-4, 1.0))
def test_the_step_is_the_runs_fused_kernel_and_its_twin_the_kernels_twin(g, t, seed, lr):
    """The stand-in's step gives the fused kernel's bits for run g, its twin the twin kernel's; the two agree
    to rounding (the compiled kernel may round a power or a square root differently from NumPy)."""
    runs = compiled.compile_runs(OPTS)
    rng = np.random.default_rng(seed)
    theta, grad = rng.standard_normal(13), rng.standard_normal(13)
    state = runs.initial_state(g, 13) + np.abs(rng.standard_normal((O.N_SLOTS, 13)))
    out = {}
    for name, fn in (("step", runs.step), ("step_np", runs.step_np),
                     ("fused", lambda *a: kernels.fused_step(OPTS[g].precond, OPTS[g].hparams, *a[1:6])),
                     ("fused_np", lambda *a: kernels.fused_step_np(OPTS[g].precond, OPTS[g].hparams, *a[1:6]))):
        th, sta = theta.copy(), state.copy()
        with np.errstate(invalid="ignore"):
            fn(g, th, grad, sta, t, lr, runs.hps)
        out[name] = (th, sta)
    for mine, kernel in (("step", "fused"), ("step_np", "fused_np")):
        for x, y in zip(out[mine], out[kernel]):
            assert x.tobytes() == y.tobytes(), mine
    np.testing.assert_allclose(out["step"][0], out["step_np"][0], rtol=1e-12, atol=1e-15)
    assert not np.array_equal(out["step"][0], theta)               # it moved: the test can fail


def _built(opt, **kw):
    model = dt.MLP((3, 8, 1))
    data = dt.data.sparse_regression(24, 3, 2, seed=3)
    pb = run_plan.check_problem(model, data, steps=40, kernel="numba", sampler="epoch", label_noise=0.1, seeds=2,
                                batch=4)
    rs = run_plan.check_runs(opt, None, None)
    return run_plan.build_run(pb, rs, record_steps=None, records=5, grid="linear", seed=0, theta0=None, bound=None,
                              indices=None, common_stream=False, stream_key=(), drop_last=True, step_loss=True,
                              keep_lrs=True, fast=False, check_gradient=False, **kw)


def _advance(run, how):
    """Every path 40 steps by the loop ``how``; what the loop leaves (its written fields, records, divergence)."""
    a = run.arrays._replace(**{f: getattr(run.arrays, f).copy() for f in path_loop.WRITTEN},
                            lrs=run.rates.window(0, 40))
    rec = np.full_like(run.theta_rec, np.nan)
    div = np.full(run.P, -1, dtype=np.int64)
    paths = np.arange(run.P, dtype=np.int64)
    step, kernel = run.compiled.step, run.problem.model.loss_grad
    args = (a, 0, 40, run.record_steps, rec, float(run.bound), div, True)
    if how == "named":
        run.cached(paths, *args)
    elif how == "pointer":
        path_loop.by_pointer(kernel, step, a)(paths, *args)
    elif how == "argument":
        path_loop.advance_paths(paths, kernel, step, *args)
    else:
        for p in paths:
            path_loop.advance_path_numpy(run.problem.model.loss_grad_np, run.compiled.step_np, p, *args)
    return [getattr(a, f) for f in path_loop.WRITTEN] + [rec, div]


@pytest.mark.parametrize("opt", [[O.adam(0.01), O.sgd(0.05, momentum=0.9)], O.adagrad(0.05)],
                         ids=["adam+momentum", "adagrad"])
def test_named_pointer_and_argument_steps_give_the_generic_loops_bits(opt):
    """The cached loop naming the step, the loop taking kernel and step as function pointers and the uncached
    loop taking them as arguments leave bitwise the same state; the NumPy twin agrees to the tuned-loop probe's
    tolerance (its kernel rounds differently, 40 steps amplify it)."""
    run = _built(opt)
    named = _advance(run, "named")
    assert np.isfinite(named[0]).all() and not np.array_equal(named[0], run.arrays.thetas)
    for how in ("pointer", "argument"):
        for x, y in zip(named, _advance(run, how)):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), how
    for x, y in zip(named, _advance(run, "numpy")):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_the_typed_run_names_every_field_a_loop_writes():
    assert set(path_loop.WRITTEN) <= set(path_loop.LoopArrays._fields)
    assert "precond_of" not in path_loop.LoopArrays._fields       # the loops read no optimizer codes
