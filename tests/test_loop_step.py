"""The loops' side of issue 37: the runs' compiled optimizer step (dyntools.optim.compiled) and the typed run
(dyntools.dynamics.path_loop.LoopArrays) — every way a loop gets the step computes the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import dyntools as dt
from dyntools.dynamics import loops, path_loop, run_plan
from dyntools.engine import samplers
from dyntools.optim import compiled
from dyntools.optim import optimizers as O

OPTS = [O.sgd(0.1), O.sgd(0.1, momentum=0.9, nesterov=True), O.sgdw(0.1, weight_decay=0.01),
        O.adam(0.01, weight_decay=0.1), O.adamw(0.01, weight_decay=0.1, amsgrad=True), O.adagrad(0.1),
        O.rmsprop(0.01, momentum=0.5, centered=True), O.rmsprop_bc(0.01)]


def test_plain_sgd_and_the_initial_states_per_run():
    """The interface, not the layout: ``plain_sgd`` per run, a path's zero state (K × p; AdaGrad's accumulator
    at its initial value), one float64 row of ``hps`` per run."""
    runs = compiled.compile_runs(OPTS)
    assert runs.plain_sgd == (True,) + (False,) * (len(OPTS) - 1)
    assert runs.hps.shape[0] == len(OPTS) and runs.hps.dtype == np.float64 and runs.hps.flags.c_contiguous
    for g, o in enumerate(OPTS):
        state = runs.initial_state(g, 7)
        assert state.shape == (runs.n_slots, 7)
        assert np.all(state == 0.0) or o.name == "adagrad"
    acc = compiled.compile_runs([O.adagrad(0.1, initial_accumulator_value=0.25)]).initial_state(0, 3)
    assert np.any(acc == 0.25)


@settings(max_examples=25, deadline=None)
@given(g=st.integers(0, len(OPTS) - 1), t=st.integers(1, 400), seed=st.integers(0, 2**32 - 1),
       lr=st.floats(1e-4, 1.0))
def test_the_step_and_its_twin_agree_and_move_theta(g, t, seed, lr):
    """``step`` and ``step_np`` of run g on the same inputs: the same θ and state to rounding (a compiled power or
    square root may round differently from NumPy's), θ moved, ``grad`` untouched."""
    runs = compiled.compile_runs(OPTS)
    rng = np.random.default_rng(seed)
    theta, grad = rng.standard_normal(13), rng.standard_normal(13)
    state = runs.initial_state(g, 13) + np.abs(rng.standard_normal((runs.n_slots, 13)))
    out = []
    for fn in (runs.step, runs.step_np):
        th, sta, gr = theta.copy(), state.copy(), grad.copy()
        with np.errstate(invalid="ignore"):
            fn(g, th, gr, sta, t, lr, runs.hps)
        assert gr.tobytes() == grad.tobytes()
        out.append((th, sta))
    for x, y in zip(*out):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)
    assert not np.array_equal(out[0][0], theta)                    # it moved: the test can fail


def _built(opt, sampler="epoch", label_noise=0.1, **kw):
    model = dt.MLP((3, 8, 1))
    data = dt.data.sparse_regression(24, 3, 2, seed=3)
    pb = run_plan.check_problem(model, data, steps=40, kernel="numba", sampler=sampler, label_noise=label_noise,
                                seeds=2, batch=4)
    rs = run_plan.check_runs(opt, None, None)
    return run_plan.build_run(pb, rs, record_steps=None, records=5, grid="linear", seed=0, theta0=None, bound=None,
                              indices=None, common_stream=False, stream_key=(), drop_last=True, step_loss=True,
                              keep_lrs=True, fast=False, check_gradient=False, **kw)


def _advance(run, how, made_for=None):
    """Every path 40 steps by the loop ``how``; what the loop leaves (its written fields, records, divergence).
    ``made_for``: the arrays the pointer loop is made with (default: those it is called with)."""
    a = run.arrays._replace(**{f: getattr(run.arrays, f).copy() for f in path_loop.WRITTEN},
                            lrs=run.rates.window(0, 40))
    rec = np.full_like(run.theta_rec, np.nan)
    div = np.full(run.P, -1, dtype=np.int64)
    paths = np.arange(run.P, dtype=np.int64)
    step, kernel = run.compiled.step, run.problem.model.loss_grad
    args = (a, 0, 40, run.record_steps, rec, float(run.bound), div, True)
    if how == "named":
        loops.user_loop(kernel, step, run.hooks.compiled)(paths, *args)
    elif how == "trainer":
        run.cached(paths, *args)
    elif how == "pointer":
        path_loop.by_pointer(kernel, step, a if made_for is None else made_for)(paths, *args)
    elif how == "argument":
        path_loop.advance_paths(paths, kernel, step, *run.hooks.compiled, *args)
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
    for how in ("pointer", "argument", "trainer"):
        for x, y in zip(named, _advance(run, how)):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), how
    for x, y in zip(named, _advance(run, "numpy")):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("sampler", "label_noise"), [("with-replacement", 0.0), ("distinct", 0.1), ("full", 0.0)])
def test_a_pointer_loop_draws_with_the_sampler_of_the_arrays_it_is_called_with(sampler, label_noise):
    """The pointer loop is compiled per sampler and label noise (issue 38): one made for an epoch run with label
    noise, called with another run's arrays, takes that run's sampler and noise — the bits of the loop with every
    sampler."""
    opt = [O.adam(0.01), O.sgd(0.05, momentum=0.9)]
    run = _built(opt, sampler=sampler, label_noise=label_noise)
    named = _advance(run, "named")
    for x, y in zip(named, _advance(run, "pointer", made_for=_built(opt).arrays)):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.integers(0, 60), max_size=12, unique=True), t0=st.integers(-2, 64))
def test_first_record_is_searchsorted(steps, t0):
    """The loops' start index into the record grid is ``np.searchsorted(record_steps, t0)`` (left side)."""
    grid = np.array(sorted(steps), dtype=np.int64)
    assert path_loop.first_record(grid, t0) == np.searchsorted(grid, t0)
    assert path_loop.first_record.py_func(grid, t0) == np.searchsorted(grid, t0)


def test_the_typed_run_names_every_field_a_loop_writes():
    assert set(path_loop.WRITTEN) <= set(path_loop.LoopArrays._fields)
    assert "precond_of" not in path_loop.LoopArrays._fields       # the loops read no optimizer codes


def _step_loop(func):
    """The ``for t in range(...)`` loop of ``func``'s source."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(func.py_func)))
    return next(node for node in ast.walk(tree) if isinstance(node, ast.For) and getattr(node.target, "id", "") == "t")


def test_the_step_loop_reads_its_fields_once_per_path():
    """Issue 37 item 6: the fields a step reads are taken out of ``LoopArrays`` before the loop and the step's end is
    written in the loop itself; each read of a field in the loop (``a.iargs`` …) and each array handed to an inlined
    helper cost reference-count updates per step (14 → 12 calls of NRT_incref per SGD step, counted) and ~9 % of a
    Rosenbrock step. Only the record branch (not every step) reads a field."""
    import ast

    loop = _step_loop(path_loop.advance_path_drawn)
    record_branch = loop.body[0]
    assert isinstance(record_branch, ast.If) and "record" in ast.unparse(record_branch.test)
    read = {node.attr for stmt in loop.body[1:] for node in ast.walk(stmt)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "a"}
    assert read == set()
    helpers = {name for name, f in vars(path_loop).items() if hasattr(f, "py_func") and f.targetoptions.get("inline")}
    called = {node.func.id for node in ast.walk(loop) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not helpers & called, helpers & called


_FIELD_ARRAYS = st.sampled_from(["c", "f", "strided", "readonly", "float32", "int64", "2d", "empty"])


def _array(kind: str) -> np.ndarray:
    base = np.zeros((4, 3))
    return {"c": base, "f": np.asfortranarray(base), "strided": base[:, ::2], "readonly": _readonly(base),
            "float32": base.astype(np.float32), "int64": base.astype(np.int64), "2d": base[:2],
            "empty": np.zeros((2, 0))}[kind]


def _readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


@settings(max_examples=60, deadline=None)
@given(st.lists(_FIELD_ARRAYS, min_size=len(path_loop.LoopArrays._fields),
                max_size=len(path_loop.LoopArrays._fields)), _FIELD_ARRAYS,
       st.integers(0, len(path_loop.LoopArrays._fields) - 3),
       st.integers(-2**63, 2**64 - 1), st.booleans())
def test_one_entry_key_means_one_numba_type(kinds, other, field, number, flag):
    """with_pointers finds a loop's compiled entry by _arg_key (~10 µs for a LoopArrays) instead of numba's typeof
    (~200 µs, paid per thread and window): two runs with one key must have one numba type — any mix of field
    layouts, dtypes, read-only arrays, ints beyond int64 (numba's uint64). (Two keys for one type only cost a
    lookup: an empty array is both C- and F-contiguous, numba calls it C.)"""
    from numba import typeof

    values = [_array(k) for k in kinds]
    values[-1], values[-2] = number, flag
    a = path_loop.LoopArrays(*values)
    b = a._replace(**{a._fields[field]: _array(other)})
    if path_loop._arg_key(a) == path_loop._arg_key(b):
        assert typeof(a) == typeof(b)
    else:                                           # a key that differs is a type that differs, but for empty arrays
        assert typeof(a) != typeof(b) or 0 in np.shape(values[field]) + np.shape(b[field])
    c = a._replace(thetas=_readonly(np.zeros(3)))
    assert path_loop._arg_key(c) != path_loop._arg_key(a._replace(thetas=np.zeros(3)))


@njit(cache=False)
def _twice(x):
    return 2.0 * x


@njit(cache=False)
def _thrice(x):
    return 3.0 * x


@njit(cache=False)
def _apply(f, xs, out):
    for i in range(xs.shape[0]):
        out[i] = f(xs[i])


def test_pointers_are_looked_up_once_not_per_call(monkeypatch):
    """with_pointers passes a function as a Pointer (its addresses found once): numba's own unboxing of a dispatcher
    as a FunctionType looks both addresses up in Python on every call (~0.1 ms per call with the GIL held). Counted:
    five calls look the addresses up once per function, and each call computes with the function it was given
    (two functions through one compiled entry)."""
    from numba import types
    from numba.experimental import function_type

    calls = []
    real = function_type._get_wrapper_address
    monkeypatch.setattr(function_type, "_get_wrapper_address", lambda f, sig: calls.append(f) or real(f, sig))
    fn = types.FunctionType(types.float64(types.float64))
    call = path_loop.with_pointers(_apply, {0: fn})
    xs, out = np.arange(4.0), np.empty(4)
    for f, k in [(_twice, 2.0), (_thrice, 3.0)] * 3:
        call(f, xs, out)
        assert np.array_equal(out, k * xs)
    assert calls.count(_twice) == 1 and calls.count(_thrice) == 1
    by_pointer = [sig for sig in _apply.overloads if isinstance(sig[0], path_loop.PointerType)]
    assert len(by_pointer) == 1                           # one compiled loop for both functions (in any test order)
    assert path_loop.pointer(_twice, path_loop.PointerType(fn.signature)).jit_address != 0


def test_a_pointer_without_its_addresses_is_an_error_not_a_crash():
    """The unboxing reads the two addresses as attributes: an object without them raises (numba's error on
    entry), it is never called."""
    from numba import types

    ptype = path_loop.PointerType(types.FunctionType(types.float64(types.float64)).signature)
    _apply.compile((ptype, types.float64[::1], types.float64[::1]))
    entry = _apply.overloads[(ptype, types.float64[::1], types.float64[::1])].entry_point
    with pytest.raises(AttributeError):
        entry(object(), np.arange(2.0), np.empty(2))


# ------------------------------------------------------------------------------- the draw of one sampler (issue 38)

@njit
def _draw_with(draw, sampler, label_noise, b, n, replay, t, perm, cur, st):
    idx = np.empty(b, dtype=np.int64)
    noise = np.zeros(b)
    cur = draw(sampler, idx, noise, label_noise, b, n, replay, 0, t, perm, cur, st, True)
    return idx, noise, cur


@settings(max_examples=30, deadline=None)
@given(sampler=st.sampled_from(sorted(samplers.CODES.values())), noisy=st.booleans(), seed=st.integers(0, 2**63),
       n=st.integers(1, 9), b=st.integers(1, 9), steps=st.integers(1, 6))
def test_the_draw_of_one_sampler_gives_the_bits_of_the_draw_of_every_sampler(sampler, noisy, seed, n, b, steps):
    """samplers.drawer(kind, noisy) — the pointer loops' draw, the other samplers pruned — draws what draw_batch
    draws for that sampler, in the same order, for several steps from the same stream (indices, label noise,
    the permutation, the epoch position and the stream after)."""
    b = n if sampler == samplers.FULL else min(b, n) if sampler == samplers.DISTINCT else b
    label_noise = 0.3 if noisy else 0.0
    replay = np.random.default_rng(seed % 2**32).integers(0, n, size=(1, steps * b))
    sides = []
    for draw in (samplers.draw_batch, samplers.drawer(sampler, noisy)):
        st_ = np.array([[seed, seed ^ 0x9E3779B97F4A7C15, 7, 11]], dtype=np.uint64)
        perm, cur, out = np.arange(n), n, []
        for t in range(steps):
            idx, noise, cur = _draw_with(draw, sampler, label_noise, b, n, replay, t, perm, cur, st_)
            out.append((idx.tobytes(), noise.tobytes(), cur))
        sides.append((out, perm.tobytes(), st_.tobytes()))
    assert sides[0] == sides[1]


def test_the_draw_of_one_sampler_compiles_none_of_the_others():
    """The pruning bites: a loop with the epoch sampler's draw links the Fisher–Yates shuffle and one with label
    noise the normal draw's logarithm; the full-batch draw without noise links neither, the draw of every sampler
    both."""
    def ir(draw):
        replay, st_ = np.zeros((1, 4), dtype=np.int64), np.zeros((1, 4), dtype=np.uint64)
        _draw_with(draw, 0, 0.0, 2, 2, replay, 0, np.arange(2), 2, st_)
        return "\n".join(_draw_with.inspect_llvm(sig) for sig in _draw_with.signatures
                         if sig[0].dispatcher is draw)

    def links(text):
        return {"shuffle": "samplers7shuffle" in text, "log": "@log" in text or "llvm.log" in text}

    assert links(ir(samplers.draw_batch)) == {"shuffle": True, "log": True}
    assert links(ir(samplers.drawer(samplers.FULL, False))) == {"shuffle": False, "log": False}
    assert links(ir(samplers.drawer(samplers.EPOCH, False))) == {"shuffle": True, "log": False}
    assert links(ir(samplers.drawer(samplers.REPLAY, True))) == {"shuffle": False, "log": True}
    assert samplers.drawer(samplers.EPOCH, False) is samplers.drawer(samplers.EPOCH, False)


def test_a_generated_loop_module_asked_for_by_many_threads_is_executed_once_and_seen_whole(tmp_path, monkeypatch):
    """The trainer's threads ask for the same pointer loop at once (loops.pointer_loop resolves its sampler at the
    first call): each must get the module only after it ran to its end, never the half-executed module that another
    thread has put in ``sys.modules`` (a warm quick report failed so: "module ... has no attribute 'paths_loop'")."""
    import sys
    import threading

    from dyntools.dynamics import loops

    monkeypatch.setenv("DYNTOOLS_LOOP_CACHE", str(tmp_path))
    digest = "test" + str(id(tmp_path))
    text = "import time\ntime.sleep(0.3)\npaths_loop = 'whole'\n"
    go, seen = threading.Barrier(4), []

    def ask():
        go.wait()
        seen.append(getattr(loops._generated("ptrloop", digest, lambda: text), "paths_loop", None))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.modules.pop(f"dyntools_user_ptrloop_{digest}", None)
    assert seen == ["whole"] * 4


@pytest.mark.parametrize("model, loop", [
    ("least_squares", "pointer"), ("diag_net", "pointer"), ("resnet", "pointer"), ("voronoi", "pointer"),
    ("sigmoid_net", "pointer"), ("surface", "user"),
])
def test_which_kernels_take_the_pointer_loop(monkeypatch, model, loop):
    """A run of at least POINTER_RUN_PATH_STEPS path-steps of a kernel without step hooks trains through the one
    pointer loop of its step module, unless the model sets ``inline_kernel`` (measured > 3 % slower per step by
    pointer: the 2-D surfaces), which keeps the loop generated for its kernel; models with hooks keep it too. A
    shorter run takes the loop with kernel, step and hooks all by pointer (``inline_kernel`` models excepted). Only
    the choice is run (no loop compiles)."""
    from types import SimpleNamespace

    from dyntools.models.base import no_hook
    from dyntools.models.diag_net import DiagNet
    from dyntools.models.least_squares import LeastSquares
    from dyntools.models.resnet import ResNet
    from dyntools.models.sigmoid_net import SigmoidNet
    from dyntools.models.surfaces import Surface
    from dyntools.models.voronoi import VoronoiLadder

    made = {"least_squares": lambda: LeastSquares(3), "diag_net": lambda: DiagNet(3), "resnet": lambda: ResNet(),
            "voronoi": lambda: VoronoiLadder("centers", dim=2, n_centers=4), "sigmoid_net": lambda: SigmoidNet(1, 4),
            "surface": lambda: Surface("rosenbrock")}[model]()
    monkeypatch.setattr(loops, "pointer_loop", lambda kernel, step, arrays: ("pointer", kernel, step))
    monkeypatch.setattr(loops, "user_loop", lambda kernel, step, hooks=None: ("user", kernel, step))
    monkeypatch.setattr(path_loop, "by_pointer", lambda kernel, step, arrays, hooks, **_: ("all", kernel, step, hooks))
    monkeypatch.setattr(path_loop, "hooks_take_pointers", lambda hooks, arrays: hooks[2] is no_hook)
    runs = SimpleNamespace(step="all-structures", own_step="own-structures")
    pb = SimpleNamespace(kernel="numba", model=made)
    no_hooks, some_hooks = (no_hook,) * 3, (no_hook, lambda: None, no_hook)
    long = run_plan.POINTER_RUN_PATH_STEPS
    chosen = run_plan._cached_loop(pb, None, runs, SimpleNamespace(compiled=no_hooks), long)
    assert chosen == (loop, made.loss_grad, "own-structures" if loop == "pointer" else "all-structures")
    hooked = run_plan._cached_loop(pb, None, runs, SimpleNamespace(compiled=some_hooks), long)
    assert hooked[0] == "user"
    for hooks in (no_hooks, some_hooks):
        short = run_plan._cached_loop(pb, None, runs, SimpleNamespace(compiled=hooks), long - 1)
        assert short[0] == ("user" if loop == "user" else "all")
        if loop != "user":
            assert short == ("all", made.loss_grad, "own-structures", hooks)
    valued = (no_hook, no_hook, lambda: 1.0)               # a hook that cannot take the pointer's signature
    assert run_plan._cached_loop(pb, None, runs, SimpleNamespace(compiled=valued), long - 1)[0] == "user"
