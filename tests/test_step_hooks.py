"""The model's step hooks (dyntools.models.base.Hooks) in the one generic loop: called at their fixed points by
every form of the loop (the cached loop that names them, the NumPy twin), with their own state, stream and
constants per path, and recorded with θ when the model asks."""

import numpy as np
import pytest
from numba import njit

import dyntools as dt
from dyntools.engine import rng
from dyntools.models.base import Hooks, no_hook
from dyntools.models.least_squares import LeastSquares


@njit(cache=True)
def draw_hook(t, theta, hstate, hstream, hargs, b, ws):
    """Before the gradient: one uniform from the path's hook stream into state column 2."""
    draw, hstream[0, 0], hstream[0, 1], hstream[0, 2], hstream[0, 3] = rng.xoshiro_next(
        hstream[0, 0], hstream[0, 1], hstream[0, 2], hstream[0, 3])
    hstate[2] = (draw >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def draw_hook_np(t, theta, hstate, hstream, hargs, b, ws):
    hstate[2] = rng.uniform01_np(hstream)[0]


@njit(cache=True)
def count_hook(t, theta, hstate, hstream, hargs, b, ws):
    """After a step that passed the guard: steps counted, hargs[0] · θ_{t+1}[0] summed, the step kept."""
    hstate[0] += 1.0
    hstate[1] += hargs[0] * theta[0]
    hstate[3] = t


def count_hook_np(t, theta, hstate, hstream, hargs, b, ws):
    hstate[0] += 1.0
    hstate[1] += hargs[0] * theta[0]
    hstate[3] = t


class Hooked(LeastSquares):
    """Least squares with three hook columns (steps, Σ c θ[0], last uniform, last step) and per-run c."""

    def hooks(self, setting, P):
        args = np.array([[1.0 + g] for g in range(len(setting["optimizers"]))])
        streams = np.array([[1 + p, 2, 3, 4] for p in range(P)], dtype=np.uint64)
        return Hooks(before_grad=draw_hook, before_grad_np=draw_hook_np, after_step=count_hook,
                     after_step_np=count_hook_np, state=np.zeros((P, 4)), streams=streams, args=args, recorded=True)

    def hook_results(self, state, recorded):
        return {"hook_state": state.copy(), "hook_rec": recorded.copy()}


def _data():
    r = np.random.default_rng(0)
    return type("D", (), {"X": r.standard_normal((20, 3)), "y": r.standard_normal(20)})()


@pytest.mark.parametrize("chunks", [1, 3])
def test_hooks_run_at_their_points_in_the_compiled_loop_and_its_twin(chunks):
    model, data = Hooked(3), _data()
    kw = dict(steps=50, seeds=2, seed=1, records=6, chunks=chunks, batch=2)
    opts = [dt.optim.sgd(0.01), dt.optim.adam(0.01)]
    a = dt.train(model, data, opts, **kw)
    b = dt.train(model, data, opts, kernel="numpy", **kw)
    state, rec = a["hook_state"], a["hook_rec"]
    assert state.shape == (2, 2, 4) and rec.shape == (2, 2, a["steps"].size, 4) and a["steps"][0] == 0
    np.testing.assert_array_equal(state[..., 0], 50)                       # after_step once per step
    np.testing.assert_array_equal(state[..., 3], 49)                       # … with its step index
    np.testing.assert_array_equal(rec[..., -1, 0], 50)                      # recorded with θ at step T
    np.testing.assert_array_equal(rec[..., 0, 0], 0)                        # … and at step 0, before any step
    assert len(np.unique(state[..., 2])) == 4                              # each path its own stream
    np.testing.assert_array_equal(a["hook_state"][..., [0, 2, 3]], b["hook_state"][..., [0, 2, 3]])
    np.testing.assert_allclose(a["hook_state"], b["hook_state"], rtol=1e-12)
    np.testing.assert_allclose(a["theta"], b["theta"], rtol=1e-12)


def test_hooks_by_pointer_and_named_give_the_same_bits():
    """A run shorter than run_plan.POINTER_RUN_PATH_STEPS calls kernel, step and hooks through function pointers
    (path_loop.by_pointer); a longer one names them in a generated loop (loops.user_loop). Both, and the trainer's
    loop, leave bitwise the same θ, optimizer and sampler state, records and hook state (the loop taking kernel and
    step as arguments is held to the named one in tests/test_loop_step.py)."""
    from dyntools.dynamics import loops, path_loop, run_plan

    model, data = Hooked(3), _data()
    pb = run_plan.check_problem(model, data, steps=30, kernel="numba", sampler="with-replacement", label_noise=0.1,
                                seeds=2, batch=2)
    rs = run_plan.check_runs([dt.optim.sgd(0.01), dt.optim.adam(0.01)], None, None)
    run = run_plan.build_run(pb, rs, record_steps=None, records=4, grid="linear", seed=1, theta0=None, bound=None,
                             indices=None, common_stream=False, stream_key=(), drop_last=True, step_loss=True,
                             keep_lrs=True, fast=False, check_gradient=False)
    kernel, hooks = model.loss_grad, run.hooks.compiled
    assert run.P * 30 < run_plan.POINTER_RUN_PATH_STEPS
    loops_by_name = {
        "pointer": path_loop.by_pointer(kernel, run.compiled.own_step, run.arrays, hooks),
        "named": loops.user_loop(kernel, run.compiled.step, hooks),
        "trainer": run.cached}
    assert loops_by_name["named"] is not None
    left = {}
    for how, loop in loops_by_name.items():
        a = run.arrays._replace(**{f: getattr(run.arrays, f).copy() for f in path_loop.WRITTEN},
                                lrs=run.rates.window(0, 30))
        rec, div = np.full_like(run.theta_rec, np.nan), np.full(run.P, -1, dtype=np.int64)
        loop(np.arange(run.P, dtype=np.int64), a, 0, 30, run.record_steps, rec, float(run.bound), div, True)
        left[how] = [getattr(a, f) for f in path_loop.WRITTEN] + [rec, div]
    assert np.all(left["named"][list(path_loop.WRITTEN).index("hook_state")][:, 0] == 30)   # after_step each step
    for how in ("pointer", "trainer"):
        for x, y in zip(left["named"], left[how]):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), how


@njit(cache=True)
def valued_hook(t, theta, hstate, hstream, hargs, b, ws):
    """A hook that returns a value (the loop that names it ignores it)."""
    hstate[0] += 1.0
    return hstate[0]


def test_a_hook_that_returns_a_value_is_kept_out_of_the_pointer_loop():
    """The pointer's signature returns nothing: such a hook cannot be called through it, so a short run of its
    model takes the loop that names it (which ignores the value) instead of failing in numba's typing."""
    from dyntools.dynamics import path_loop, run_plan

    model, data = Hooked(3), _data()
    pb = run_plan.check_problem(model, data, steps=5, kernel="numba", sampler="with-replacement", label_noise=0.0,
                                seeds=1, batch=2)
    rs = run_plan.check_runs([dt.optim.sgd(0.01)], None, None)
    arrays = run_plan.build_run(pb, rs, record_steps=None, records=2, grid="linear", seed=1, theta0=None,
                                bound=None, indices=None, common_stream=False, stream_key=(), drop_last=True,
                                step_loss=False, keep_lrs=False, fast=False, check_gradient=False).arrays
    assert path_loop.hooks_take_pointers((draw_hook, no_hook, count_hook), arrays)
    assert not path_loop.hooks_take_pointers((draw_hook, no_hook, valued_hook), arrays)


def test_a_hook_not_compiled_with_numba_is_one_clear_error():
    class PythonHook(LeastSquares):
        def hooks(self, setting, P):
            return Hooks(after_step=count_hook.py_func, after_step_np=count_hook_np, state=np.zeros((P, 4)),
                         args=np.ones((1, 1)))

    with pytest.raises(ValueError, match="step hook after_step must be compiled with numba.njit"):
        dt.train(PythonHook(3), _data(), dt.optim.sgd(0.01), steps=3)


def test_the_run_constant_reaches_the_hook():
    """hargs row = the path's run: run 1 sums 2 θ[0], run 0 sums θ[0]; with the same optimizer both equal."""
    model, data = Hooked(3), _data()
    res = dt.train(model, data, [dt.optim.sgd(0.01)] * 2, steps=20, seed=1, records=3, common_stream=True)
    np.testing.assert_array_equal(res["hook_state"][1, :, 1], 2 * res["hook_state"][0, :, 1])


def test_a_model_without_hooks_gets_the_no_ops_and_no_state():
    hooks = LeastSquares(3).hooks({}, 4)
    assert hooks.none and hooks.state is None and hooks.compiled == (no_hook,) * 3
    res = dt.train(LeastSquares(3), _data(), dt.optim.sgd(0.01), steps=5, records=2)
    assert "hook_state" not in res.arrays


def test_a_generated_kernel_model_with_hooks_leaves_the_no_hook_pointer_loop():
    """A symbolic model's kernel runs in the one pointer loop that names the no-op hooks; a subclass that declares
    hooks must get a loop that calls them (planted: the pointer loop taken anyway leaves the counts at 0)."""
    import sympy as sp

    from dyntools.models.symbolic import SymbolicModel

    a, c, x = sp.symbols("a c x")

    class HookedSymbolic(SymbolicModel):
        def hooks(self, setting, P):
            return Hooks(after_step=count_hook, after_step_np=count_hook_np, state=np.zeros((P, 4)),
                         args=np.ones((len(setting["optimizers"]), 1)))

        def hook_results(self, state, recorded):
            return {"hook_state": state.copy()}

    model = HookedSymbolic(a * sp.tanh(c * x) + c**2 / 9, params=[a, c], inputs=x, name="hooked-tanh")
    r = np.random.default_rng(3)
    data = type("D", (), {"X": r.standard_normal((12, 1)), "y": r.standard_normal(12)})()
    res = dt.train(model, data, dt.optim.sgd(0.01), steps=7, seeds=2, seed=0, records=2, batch=3)
    np.testing.assert_array_equal(res["hook_state"][..., 0], 7)
