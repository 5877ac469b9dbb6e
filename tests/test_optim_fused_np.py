"""dyntools.optim.compiled: the generated step's NumPy twin ``step_np`` gives the bits of the generated element
loop run as Python (each chain function's ``.py_func``) and of the compiled step, for every optimizer of the
family; Adam's step matches its equations bit for bit across the step where its bias correction rounds to 1."""

import inspect
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.optim import optimizers as O
from dyntools.optim.compiled import compile_runs


def python_body(cr, run, theta, g, state, t, lr_t):
    """The compiled step with its chain's element loop run as Python (``.py_func``; float64 only): the chain takes
    the arguments its body reads (:func:`dyntools.optim.compiled.chain_args`), by name."""
    module = sys.modules[cr.module]
    body = getattr(module, f"_chain_{int(cr.hps[run, 0])}").py_func
    given = {"theta": theta, "grad": g, "state": state, "t": t, "lr_t": lr_t, "h": cr.hps[run]}
    body(*(given[name] for name in inspect.signature(body).parameters))


OPTIMIZERS = [O.sgd(0.1), O.sgd(0.1, momentum=0.9, nesterov=True), O.sgd(0.1, momentum=0.9, dampening=0.1,
              weight_decay=0.01), O.sgdw(0.1, momentum=0.5, weight_decay=0.1), O.adam(1e-2, weight_decay=0.01),
              O.adam(1e-2, amsgrad=True), O.adamw(1e-2), O.adamw_l1(1e-2), O.adamw_l1l2(1e-2),
              O.adagrad(0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1),
              O.rmsprop(0.01, momentum=0.9, centered=True, weight_decay=0.1), O.rmsprop(0.01), O.rmsprop_bc(0.01),
              O.rmsprop_bc(0.01, weight_decay=0.1, decoupled=True)]
RUNS = compile_runs(OPTIMIZERS)


@pytest.mark.parametrize("run", range(len(OPTIMIZERS)), ids=[o.name for o in OPTIMIZERS])
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 1000), mult=st.floats(0.1, 2.0),
       dtype=st.sampled_from([np.float64, np.float32]), state_dtype=st.sampled_from([np.float64, np.float32]))
def test_step_np_is_bitwise_the_python_body_and_the_compiled_step(run, n, seed, mult, dtype, state_dtype):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n).astype(dtype)
    copies = [(theta.copy(), RUNS.initial_state(run, n).astype(state_dtype)) for _ in range(3)]
    lr = OPTIMIZERS[run].lr * mult
    for t in range(1, 6):
        g = rng.standard_normal(n).astype(dtype)
        RUNS.step(run, copies[0][0], g, copies[0][1], t, lr, RUNS.hps)
        python_body(RUNS, run, copies[1][0], g, copies[1][1], t, lr)
        RUNS.step_np(run, copies[2][0], g, copies[2][1], t, lr, RUNS.hps)
        # as Python, float32 scalars do not widen as numba's typing does (a float32 ``u`` and a float64
        # ``buf`` unify to float64 in numba): the Python body is the reference in float64
        for other in copies[:2] if dtype == state_dtype == np.float64 else copies[:1]:
            np.testing.assert_array_equal(copies[2][0], other[0])
            np.testing.assert_array_equal(copies[2][1], other[1])


def adam_reference(theta, g, m, v, t, lr, lam, decoupled, b1=0.5, b2=0.25):
    """One Adam / AdamW step written from its equations, every scalar rounded to θ's precision first
    (β₁ = 1/2, β₂ = 1/4: the bias corrections are exact powers, however computed):
        u = g (+ λθ, Adam);  m ← m + ½(u − m) as torch.lerp (b − (b − a)·½ for a weight ≥ ½);
        v ← β₂ v + (1 − β₂) u u;  θ ← θ − lr ((m / bc₁) / (√v / √bc₂ + ε) (+ λθ, AdamW))."""
    f = theta.dtype.type
    u = g if decoupled else g + f(lam) * theta
    m_new = u - (u - m) * f(b1)
    v_new = v * f(b2) + f(1 - b2) * u * u
    bc1, bc2_sqrt = f(1.0 - b1 ** t), f((1.0 - b2 ** t) ** 0.5)
    step = (m_new / bc1) / (np.sqrt(v_new) / bc2_sqrt + f(1e-8))
    new = theta - f(lr) * (step + f(lam) * theta) if decoupled else theta - f(lr) * step
    return new, m_new, v_new


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_without_the_bias_division_once_it_rounds_to_one(dtype, decoupled):
    """The compiled Adam skips ``m / bc1`` once ``bc1 = 1 − β₁ᵗ`` rounds to 1 in θ's precision (float64: from
    t = 54 with β₁ = 1/2; float32: from t = 25). The compiled step must equal the step written from the
    equations (:func:`adam_reference`) bit for bit on every step across that boundary — a division
    skipped one step early would change the bits."""
    opt = (O.adamw if decoupled else O.adam)(1e-2, betas=(0.5, 0.25), weight_decay=0.01)
    rng = np.random.default_rng(7)
    n = 37
    theta = rng.standard_normal(n).astype(dtype)
    cr = compile_runs([opt])
    state = cr.initial_state(0, n).astype(dtype)       # the loops keep a float32 run's state in float32
    ref = (theta.copy(), np.zeros(n, dtype), np.zeros(n, dtype))
    skipped = 0
    for t in range(1, 71):
        g = rng.standard_normal(n).astype(dtype)
        cr.step(0, theta, g, state, t, opt.lr, cr.hps)
        ref = adam_reference(*ref[:1], g, *ref[1:], t, opt.lr, 0.01, decoupled)
        np.testing.assert_array_equal(theta, ref[0], err_msg=f"step {t}")
        np.testing.assert_array_equal(state[0], ref[1], err_msg=f"step {t}")
        skipped += dtype(1.0 - 0.5 ** t) == 1.0
    assert 0 < skipped < 70
