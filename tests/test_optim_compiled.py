"""The one representation of an optimizer (issue 37, item 1–2): dyntools.optim.compiled.compile_runs fuses the
compiled element updates the transforms carry into one generated step per run set.

For every built-in optimizer and option combination, in float64 and float32: the compiled step keeps the bits the
pre-issue-37 fused kernel recorded (tests/goldens/optim_fused.npz, the reference since that kernel is deleted), its
NumPy twin ``step_np`` is bitwise the compiled step, and both follow the readable chain to 1e-12 relative in
float64. A chain the old kernels could not run (momentum before Adam) compiles from its
structure alone; a transform without a compiled form is refused by name; a second process loads the step from
the cache instead of compiling it."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.optim import decay_groups as D
from dyntools.optim import optimizers as O
from dyntools.optim import transforms as T
from dyntools.optim.compiled import NotCompilable, compile_runs, source_of
from dyntools.validation import KernelMismatch
from tests.byo_lion import lion, scale_by_lion

ROOT = Path(__file__).resolve().parents[1]
N = 23
GROUPS = np.arange(N) % 4


wds = st.sampled_from([0.0, 0.01, 0.3])
betas = st.tuples(st.sampled_from([0.0, 0.5, 0.9]), st.sampled_from([0.25, 0.99, 0.999]))


@st.composite
def optimizers(draw):
    """Every built-in factory with its options drawn (structural switches and numbers)."""
    kind = draw(st.sampled_from(["sgd", "sgdw", "adam", "adamw", "adamw_l1", "adamw_l1l2", "adagrad", "rmsprop",
                                 "rmsprop_bc", "grouped", "min"]))
    wd = draw(wds)
    if kind in ("sgd", "sgdw"):
        mom = draw(st.sampled_from([0.0, 0.5, 0.9]))
        damp = draw(st.sampled_from([0.0, 0.1]))
        nest = mom > 0 and damp == 0 and draw(st.booleans())
        return O.make(kind, lr=0.1, momentum=mom, dampening=damp, nesterov=nest, weight_decay=wd)
    if kind in ("adam", "adamw"):
        bc = draw(st.booleans())
        return O.make(kind, lr=0.01, betas=draw(betas), eps=draw(st.sampled_from([1e-8, 0.1])), weight_decay=wd,
                      amsgrad=draw(st.booleans()), bias_correction=bc)
    if kind in ("adamw_l1", "adamw_l1l2"):
        extra = {"l1_ratio": draw(st.sampled_from([0.25, 1.0]))} if kind == "adamw_l1l2" else {}
        return O.make(kind, lr=0.01, betas=draw(betas), weight_decay=wd, amsgrad=draw(st.booleans()), **extra)
    if kind == "adagrad":
        return O.adagrad(0.1, lr_decay=draw(st.sampled_from([0.0, 0.01])), weight_decay=wd,
                         initial_accumulator_value=draw(st.sampled_from([0.0, 0.1])))
    if kind == "rmsprop":
        return O.rmsprop(0.01, alpha=draw(st.sampled_from([0.5, 0.99])), weight_decay=wd,
                         momentum=draw(st.sampled_from([0.0, 0.9])), centered=draw(st.booleans()))
    if kind == "rmsprop_bc":
        return O.rmsprop_bc(0.01, beta2=draw(st.sampled_from([0.5, 0.999])), weight_decay=wd,
                            decoupled=draw(st.booleans()))
    weights = np.linspace(0.0, 1.0, N)
    if kind == "min":
        return D.adamw_min(0.01, weight_decay=draw(st.sampled_from([0.1, 1.0])), groups=GROUPS)
    return D.adamw_decay(draw(st.sampled_from(["l2", "l1", "l1l2"])), 0.01, weight_decay=max(wd, 0.01),
                         weights=weights, groups=GROUPS)


def run_two(opt, dtype, seed, steps, mult=0.7, state_dtype=np.float64):
    """``steps`` steps of the compiled step and its twin from one start (the state in ``state_dtype``: the loops
    keep a float32 run's state in float32)."""
    rng = np.random.default_rng(seed)
    cr = compile_runs([opt])
    theta = rng.standard_normal(N).astype(dtype)
    new = (theta.copy(), cr.initial_state(0, N).astype(state_dtype))
    twin = (theta.copy(), cr.initial_state(0, N).astype(state_dtype))
    for t in range(1, steps + 1):
        g = rng.standard_normal(N).astype(dtype)
        cr.step(0, new[0], g, new[1], t, opt.lr * mult, cr.hps)
        cr.step_np(0, twin[0], g, twin[1], t, opt.lr * mult, cr.hps)
    return new, twin


@settings(max_examples=100, deadline=None)
@given(opt=optimizers(), dtype=st.sampled_from([np.float64, np.float32]), seed=st.integers(0, 10_000),
       same_state=st.booleans())
def test_compiled_step_is_bitwise_its_twin(opt, dtype, seed, same_state):
    """(The old fused kernel's bits: test_the_compiled_step_keeps_the_recorded_bits_of_the_old_fused_kernel.)"""
    new, twin = run_two(opt, dtype, seed, steps=6, state_dtype=dtype if same_state else np.float64)
    np.testing.assert_array_equal(twin[0], new[0])
    np.testing.assert_array_equal(twin[1], new[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adam_across_the_step_where_its_bias_correction_rounds_to_one(dtype):
    """β₁ = ½: 1 − β₁ᵗ rounds to 1 at t = 54 (float64), 25 (float32); the loop without the division takes over
    there, and the bits stay the twin's on every step across it (and the old kernel's: the golden case
    ``adamw-bc1-rounds-to-1``, 70 steps, of tests/goldens/optim_fused.npz)."""
    new, twin = run_two(O.adamw(0.01, betas=(0.5, 0.25)), dtype, 3, steps=70, state_dtype=dtype)
    np.testing.assert_array_equal(twin[0], new[0])
    np.testing.assert_array_equal(twin[1], new[1])
    assert "if bc1_0 != 1.0:" in source_of([O.adamw(0.01)])


@settings(max_examples=40, deadline=None)
@given(opt=optimizers(), seed=st.integers(0, 10_000))
def test_compiled_step_follows_the_readable_chain(opt, seed):
    rng = np.random.default_rng(seed)
    cr = compile_runs([opt])
    theta = rng.standard_normal(N)
    fast, state = theta.copy(), cr.initial_state(0, N)
    chain_theta, chain_state = theta.copy(), opt.init(theta)
    for t in range(1, 6):
        g = rng.standard_normal(N)
        cr.step(0, fast, g, state, t, opt.lr * 0.7, cr.hps)
        chain_theta, chain_state = opt.step(chain_theta, g, chain_state, t, 0.7)
    np.testing.assert_allclose(fast, chain_theta, rtol=1e-12, atol=1e-14)


def test_one_step_for_a_run_set_dispatches_each_run_to_its_chain():
    """Runs of four structures (two of them twice, with other numbers) in one step: each run moves exactly as
    the step compiled for it alone."""
    opts = [O.adamw(0.01), O.sgd(0.1), O.adamw(0.02, betas=(0.5, 0.9), weight_decay=0.3),
            O.rmsprop(0.01, momentum=0.9), O.sgd(0.05), O.adam(0.01, amsgrad=True)]
    together = compile_runs(opts)
    assert together.plain_sgd == (False, True, False, False, True, False)
    assert len(set(together.hps[:, 0])) == 4 and together.n_slots == 3
    rng = np.random.default_rng(0)
    for g, opt in enumerate(opts):
        alone = compile_runs([opt])
        theta = rng.standard_normal(N)
        a, sa = theta.copy(), together.initial_state(g, N)
        b, sb = theta.copy(), alone.initial_state(0, N)
        for t in range(1, 4):
            grad = rng.standard_normal(N)
            together.step(g, a, grad, sa, t, opt.lr, together.hps)
            alone.step(0, b, grad, sb, t, opt.lr, alone.hps)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_step_of_the_runs_own_chains_is_bitwise_the_full_step(dtype):
    """``own_step`` (what the pointer loop calls) holds only the run set's structures, under the full step's
    indices and ``hps`` rows: every run moves bitwise as with ``step`` (which holds the built-ins' fifteen when the
    run set's chains are all among them, else only its own)."""
    opts = [O.adamw(0.01, betas=(0.5, 0.9), weight_decay=0.3), O.sgd(0.05),
            O.Optimizer("mom-adam", 0.01, T.chain(T.trace(0.5), T.scale_by_adam(0.9, 0.99))),
            lion(0.01, compiled="element"), lion(0.02, compiled=True)]
    cr = compile_runs(opts)
    own = sys.modules[cr.own_step.py_func.__module__]
    chains = sorted(int(n.split("_")[2]) for n in vars(own) if n.startswith("_chain_") and n.count("_") == 2)
    assert chains == sorted(cr.own) == sorted({int(k) for k in cr.hps[:, 0]})
    assert len(cr.structures) == len(chains) == 5        # a chain outside the built-ins: no built-in compiled in
    builtins = compile_runs(opts[:2])                       # built-ins only: their one module, own_step a part
    assert len(builtins.structures) > len({int(k) for k in builtins.hps[:, 0]}) == 2
    rng = np.random.default_rng(5)
    for runs, g in [(cr, g) for g in range(len(opts))] + [(builtins, 0), (builtins, 1)]:
        theta = rng.standard_normal(N).astype(dtype)
        a, sa = theta.copy(), runs.initial_state(g, N).astype(dtype)
        b, sb = theta.copy(), runs.initial_state(g, N).astype(dtype)
        for t in range(1, 5):
            grad = rng.standard_normal(N).astype(dtype)
            runs.step(g, a, grad, sa, t, 0.01, runs.hps)
            runs.own_step(g, b, grad, sb, t, 0.01, runs.hps)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sa, sb)
        assert not np.array_equal(a, theta)


def test_a_chain_the_old_kernels_had_no_code_for_compiles_from_its_structure():
    """Heavy-ball momentum before Adam's preconditioner, decay between: no precond code ever named it."""
    chain = T.chain(T.trace(0.5), T.add_decay(0.1, 0.5), T.scale_by_adam(0.9, 0.99))
    opt = O.Optimizer("momentum_adam", 0.01, chain)
    cr = compile_runs([opt])
    rng = np.random.default_rng(1)
    theta = rng.standard_normal(N)
    fast, state = theta.copy(), cr.initial_state(0, N)
    twin, twin_state = theta.copy(), cr.initial_state(0, N)
    ref, ref_state = theta.copy(), opt.init(theta)
    for t in range(1, 8):
        g = rng.standard_normal(N)
        cr.step(0, fast, g, state, t, opt.lr, cr.hps)
        cr.step_np(0, twin, g, twin_state, t, opt.lr, cr.hps)
        ref, ref_state = opt.step(ref, g, ref_state, t)
    np.testing.assert_array_equal(twin, fast)
    np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-14)
    assert cr.n_slots == 4


def test_initial_state_has_adagrads_accumulator_and_the_decay_groups():
    cr = compile_runs([O.adagrad(0.1, initial_accumulator_value=0.25), D.adamw_min(0.01, groups=GROUPS)])
    assert cr.n_slots == 5
    np.testing.assert_array_equal(cr.initial_state(0, 4), [[0.25] * 4] + [[0.0] * 4] * 4)
    grouped = cr.initial_state(1, N)
    np.testing.assert_array_equal(grouped[:3], 0.0)
    np.testing.assert_array_equal(grouped[3], 1.0)
    np.testing.assert_array_equal(grouped[4], GROUPS)
    with pytest.raises(ValueError, match="Invalid weights: 23 decay weights for 5 parameters"):
        cr.initial_state(1, 5)


def test_a_transform_without_a_compiled_form_is_refused_by_name():
    with pytest.raises(NotCompilable, match="transform scale_by_lion has no compiled form"):
        compile_runs([O.adamw(0.01), lion()])


def test_a_second_process_loads_the_step_instead_of_compiling_it(tmp_path):
    """numba's cache of the generated module: the first process compiles (misses), the second only loads."""
    script = (
        "import json, numpy as np\n"
        "from dyntools.optim import optimizers as O\n"
        "from dyntools.optim.compiled import compile_runs\n"
        "cr = compile_runs([O.adamw(0.01), O.sgd(0.1, momentum=0.9)])\n"
        "th = np.ones(5); st = cr.initial_state(0, 5)\n"
        "cr.step(0, th, np.ones(5), st, 1, 0.01, cr.hps)\n"
        "cr.step(1, th, np.ones(5), st, 1, 0.01, cr.hps)\n"
        "print(json.dumps([sum(cr.step.stats.cache_misses.values()), sum(cr.step.stats.cache_hits.values()),"
        " th.tolist()]))\n")
    env = dict(os.environ, DYNTOOLS_SYMBOLIC_CACHE=str(tmp_path), PYTHONPATH=str(ROOT))
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                      check=True, timeout=600).stdout) for _ in range(2)]
    assert runs[0][0] > 0 and runs[0][1] == 0
    assert runs[1][0] == 0 and runs[1][1] > 0
    assert runs[0][2] == runs[1][2]
    assert len(list(tmp_path.glob("optim_*.py"))) == 1


@dataclass(frozen=True)
class forgetful_lion(scale_by_lion):
    """An element update that never moves Lion's momentum (the planted defect)."""

    def element_update(self):
        return T.ElementUpdate((), (self.b1, self.b2), 1, "b1$j = $h0",
                               "u = np.sign(b1$j * state[$s0$i] + (1 - b1$j) * u)")


@pytest.mark.parametrize("form", ["element", True])
def test_a_users_lion_runs_inside_the_compiled_step_beside_adamw(form):
    """Lion as an element update (fused into the chain's loop) or as a whole-array kernel (the loop stops around
    it), in one run set with AdamW: each follows its readable chain to 1e-12, the twin is bitwise the step, and
    the two forms of Lion give the same bits."""
    opts = [O.adamw(0.01), lion(0.01, 0.1, compiled=form), lion(0.01, 0.1, compiled="element")]
    cr = compile_runs(opts)
    rng = np.random.default_rng(2)
    finals, starts = [], [rng.standard_normal(N), rng.standard_normal(N)]
    for g, opt in enumerate(opts):
        theta = starts[min(g, 1)]               # both Lions from one start, on one gradient sequence
        fast, state = theta.copy(), cr.initial_state(g, N)
        twin, twin_state = theta.copy(), cr.initial_state(g, N)
        ref, ref_state = theta.copy(), opt.init(theta)
        grads = np.random.default_rng(min(g, 1)).standard_normal((8, N))
        for t in range(1, 9):
            cr.step(g, fast, grads[t - 1], state, t, opt.lr, cr.hps)
            cr.step_np(g, twin, grads[t - 1], twin_state, t, opt.lr, cr.hps)
            ref, ref_state = opt.step(ref, grads[t - 1], ref_state, t)
        np.testing.assert_array_equal(twin, fast)
        np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-14)
        finals.append(fast)
    np.testing.assert_array_equal(finals[1], finals[2])


def test_a_users_element_update_that_forgets_its_momentum_is_refused_before_it_runs():
    bad = O.Optimizer("lion", 0.01, T.chain(forgetful_lion()))
    with pytest.raises(KernelMismatch, match="Invalid transform forgetful_lion: .* state"):
        compile_runs([O.adamw(0.01), bad])


def test_a_users_whole_array_kernel_that_forgets_its_momentum_is_refused_before_it_runs():
    from tests.test_compiled_checks import forgetful_lion as forgetful_kernel

    with pytest.raises(KernelMismatch, match="Invalid transform forgetful_lion"):
        compile_runs([O.Optimizer("lion", 0.01, T.chain(forgetful_kernel()))])


def test_the_optimizer_chain_benchmark_reports_its_ratios():
    """``dyntools bench optimizer-chain`` (quick): per-step times of the user's Lion and the built-in AdamW, and the
    ratio it is judged by (its value is the bench's business, not a test's)."""
    from dyntools.bench import benchmarks

    report = benchmarks()["optimizer-chain"].run(True)
    assert [t.name for t in report.targets] == [
        f"{where}: user Lion / built-in AdamW per step" for where in ("heatmap MLP cell", "diagonal net")]
    assert all(np.isfinite(t.value) and t.value > 0 for t in report.targets)
    assert sorted(report.measurements) == sorted(f"{where}: {name} µs/step" for name in ("adamw", "lion")
                                                 for where in ("heatmap MLP cell", "diagonal net"))


def test_the_compiled_step_keeps_the_recorded_bits_of_the_old_fused_kernel():
    """tests/goldens/optim_fused.npz holds what the pre-issue-37 ladder (kernels.fused_step) made of every built-in
    optimizer and option combination (float64; float32 θ with a float32 or a float64 state), recorded by
    tests/goldens/make_optim_goldens.py: the compiled step gives the same bits on the compile target they were
    recorded on, and within 1e-13 of each array's scale on another (libm's pow, no-FMA targets)."""
    import tests.goldens.make_optim_goldens as M
    from dyntools.engine.target import compile_target

    golden = np.load(ROOT / "tests" / "goldens" / "optim_fused.npz")
    meta = json.loads((ROOT / "tests" / "goldens" / "optim_fused.json").read_text())
    same_target = meta["target"] == {k: str(v) for k, v in compile_target().items()}
    cases = M.cases()
    assert meta["cases"] == len(cases) >= 60
    opts = [M.build(factory, kwargs) for factory, kwargs, _ in cases.values()]
    cr = compile_runs(opts)
    for g, (case, (_, _, steps)) in enumerate(cases.items()):
        for mode, (_, state_dtype) in M.MODES.items():
            theta, grads, mults = M.inputs(case, mode, steps)
            state = cr.initial_state(g, M.N).astype(state_dtype)
            for t in range(1, steps + 1):
                cr.step(g, theta, grads[t - 1], state, t, opts[g].lr * mults[t - 1], cr.hps)
            for what, new in (("theta", theta), ("state", state)):
                ref = golden[f"{case}/{mode}/{what}"]
                new = new[:ref.shape[0]]
                if same_target:
                    np.testing.assert_array_equal(new, ref, err_msg=f"{case} {mode} {what}")
                else:
                    scale = np.max(np.abs(ref)) + 1e-300
                    np.testing.assert_allclose(new, ref, rtol=1e-13, atol=1e-13 * scale, err_msg=f"{case} {mode}")


def test_dt_train_refuses_a_users_element_update_that_forgets_its_momentum():
    """The trainer's chain path steps a user's element update by the kernel generated from it, checked first."""
    import dyntools as dt
    from dyntools.models.least_squares import LeastSquares

    X = np.random.default_rng(0).normal(size=(8, 3))
    data = type("Data", (), {"X": X, "y": X @ np.array([1.0, -2.0, 0.5])})()
    with pytest.raises(KernelMismatch, match="Invalid transform forgetful_lion"):
        dt.train(LeastSquares(3), data, O.Optimizer("lion", 0.01, T.chain(forgetful_lion())), steps=3)


@pytest.mark.parametrize("kind", ["l2", "l1", "l1l2"])
def test_grouped_decay_with_a_float32_state_weights_its_decay_in_float64(kind):
    """The old kernel typed the decay direction as float64 (the "min" branch's type), so a float32 state's weight
    multiplied it in float64 (seeds 1, 7, 13 of this case changed a last bit before the compiled form did too; the
    old kernel's bits are the golden cases ``grouped-*/f32``): the step equals its twin on those seeds."""
    opt = D.adamw_decay(kind, 0.01, weight_decay=0.3, weights=np.linspace(0.0, 1.0, N), groups=GROUPS)
    for seed in (1, 7, 13, 14, 17):
        new, twin = run_two(opt, np.float32, seed, steps=6, state_dtype=np.float32)
        np.testing.assert_array_equal(twin[0], new[0])
        np.testing.assert_array_equal(twin[1], new[1])


def test_a_chain_of_built_in_transforms_is_one_pass_over_the_parameters():
    """AdamW (Adam then decoupled decay) and SGD with momentum and L2: one element loop per value of Adam's switch,
    none for the decay; a user's whole-array kernel in the chain is what splits a pass in two."""
    from tests.byo_lion import lion

    adamw = source_of([O.adamw(0.01)])
    assert adamw.count("for i in range(theta.shape[0]):") == 2 and adamw.count("if bc1_0 != 1.0:") == 1
    assert source_of([O.sgd(0.1, momentum=0.9, weight_decay=0.1)]).count("for i in range") == 1
    assert source_of([lion(0.01, 0.1, compiled=True)]).count("for i in range") == 2
    assert source_of([lion(0.01, 0.1, compiled="element")]).count("for i in range") == 1


def test_the_twin_of_an_element_update_that_binds_a_state_row_reads_the_row_before_its_write():
    """Lion's element update binds ``m = state[k, i]`` and then writes the row: on whole arrays that binding was a
    view, so the twin read the new momentum (β₂ = 0: m_new = g flips the sign of β₁m + (1 − β₁)g here)."""
    from tests.byo_lion import scale_by_lion_fused

    cr = compile_runs([O.Optimizer("lion", 0.1, T.chain(scale_by_lion_fused(0.9, 0.0)))])
    g = np.full(3, -0.5)
    for step in (cr.step, cr.step_np):
        theta, state = np.zeros(3), np.ones((1, 3))
        step(0, theta, g, state, 1, 0.1, cr.hps)
        np.testing.assert_array_equal(theta, -0.1)      # u = sign(0.9·1 + 0.1·(−0.5)) = +1
        np.testing.assert_array_equal(state, [g])


def test_a_compiled_chain_takes_only_the_arguments_its_body_reads():
    """Each ``_chain_k`` of the compiled step names only what it reads (θ, the gradient and the rate always; the state,
    t and the run's row h when used), and the dispatch makes no row view: an array an inlined chain takes for nothing
    costs its reference count every step (the plain SGD chain: ~30 ns of a 200 ns step). The NumPy twin keeps the
    full signature. Planted: a chain that takes an argument it does not read is caught."""
    import ast

    from tests.byo_lion import lion

    def unread(source):
        """Per generated module of ``source`` (source_of's "# ---- module" parts) holding a chain function (the
        ``chain`` of a chain structure's own module), the arguments it takes but does not read."""
        found = {}
        for part in source.split("# ---- module ")[1:]:
            name, text = part.split("\n", 1)
            for fn in ast.parse(text).body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "chain":
                    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                    found[name.split()[0]] = [a.arg for a in fn.args.args if a.arg not in names]
        return found

    opts = [O.sgd(0.1), O.sgd(0.1, momentum=0.9, weight_decay=0.1), O.adamw(0.01), O.adagrad(0.1),
            lion(0.01, 0.1, compiled=True), lion(0.01, 0.1, compiled="element")]
    source = source_of(opts)
    chains = unread(source)
    assert len(chains) >= len(opts) and all(not args for args in chains.values()), chains
    sgd = source_of([O.sgd(0.1)])
    assert "_chain_0(theta, grad, lr_t)" in sgd and "h = hps[run]" not in sgd
    assert list(unread(sgd.replace("def chain(theta, grad, lr_t)", "def chain(theta, grad, lr_t, state)")).values()) \
        == [["state"]]
    # the twin: every chain keeps the full signature and the same bits (held by the tests above)
    twin = Path(sys.modules[compile_runs([O.sgd(0.1)]).step_np.__module__].__file__).read_text()
    assert "def _chain_0(theta, grad, state, t, lr_t, h)" in twin


def test_a_chain_structure_is_one_compiled_function_whatever_step_module_holds_it():
    """Each chain structure lives in a generated module of its own, keyed by its text (ChainModule): the full step of
    a run set, its ``own_step`` and the step of another run set holding the same structure call the same compiled
    function, so it compiles once (before: once per step module holding it; the suite compiled 196 chain functions
    for 45 distinct structures)."""
    from tests.byo_lion import lion

    def chain_of(module_name, runs, g):
        return getattr(sys.modules[module_name], f"_chain_{int(runs.hps[g, 0])}")

    builtins = compile_runs([O.adamw(0.01), O.sgd(0.1)])             # the built-ins' fifteen structures
    mixed = compile_runs([O.sgd(0.1), lion(0.01, compiled="element"), O.adamw(0.02, weight_decay=0.5)])
    assert builtins.module != mixed.module and len(mixed.structures) == 3
    own = builtins.own_step.py_func.__module__
    for (a, ga), (b, gb) in (((builtins, 0), (mixed, 2)), ((builtins, 1), (mixed, 0))):
        shared = chain_of(a.module, a, ga)
        assert shared is chain_of(b.module, b, gb) is chain_of(own, a, ga)
        assert shared.__module__.startswith("dyntools_generated_optimchain_")
    assert chain_of(mixed.module, mixed, 1) is not chain_of(mixed.module, mixed, 0)
