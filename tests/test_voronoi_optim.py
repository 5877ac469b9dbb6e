"""Per-group decoupled decay and the "min" decay (dyntools.optim.decay_groups): the readable chain
against the compiled step, and the unchanged optimizers bit for bit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.optim import decay_groups as DG
from dyntools.optim import optimizers as O
from dyntools.optim.compiled import signature
from tests import optim_step


def _run_both(opt, theta, grads):
    th_chain, state = theta.copy(), opt.init(theta)
    th_fused, fstate = theta.copy(), optim_step.init_state(opt, theta.size)
    for t, g in enumerate(grads, start=1):
        th_chain, state = opt.step(th_chain, g, state, t)
        optim_step.step(opt, th_fused, g, fstate, t)
    return th_chain, th_fused


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(DG.KINDS), seed=st.integers(0, 10_000), n_groups=st.integers(1, 4),
       lr=st.floats(1e-4, 1e-1), wd=st.floats(0.0, 0.5))
def test_grouped_chain_equals_fused_kernel(kind, seed, n_groups, lr, wd):
    rng = np.random.default_rng(seed)
    p = 37
    weights = (rng.random(p) > 0.3).astype(float) * rng.random(p)
    groups = rng.integers(0, n_groups, p)
    opt = DG.adamw_decay(kind, lr=lr, weight_decay=wd, weights=weights, groups=groups)
    a, b = _run_both(opt, rng.standard_normal(p), rng.standard_normal((15, p)))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_min_decay_rule_by_hand():
    """One step from zero moments with g = 0: θ ← θ − lr λ min_G|θ| sign θ exactly."""
    theta = np.array([3.0, -0.5, 2.0, -7.0])
    groups = np.array([0, 0, 1, 1])
    opt = DG.adamw_min(lr=0.1, weight_decay=1.0, groups=groups)
    state = optim_step.init_state(opt, 4)
    th = theta.copy()
    optim_step.step(opt, th, np.zeros(4), state, 1)
    np.testing.assert_allclose(th, theta - 0.1 * np.array([0.5, -0.5, 2.0, -2.0]), rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind,factory", [("l2", O.adamw), ("l1", O.adamw_l1), ("l1l2", O.adamw_l1l2)])
def test_unit_weights_are_bitwise_the_plain_optimizers(kind, factory):
    rng = np.random.default_rng(1)
    p = 64
    plain = factory(lr=3e-3, weight_decay=0.05)
    grouped = DG.adamw_decay(kind, lr=3e-3, weight_decay=0.05, weights=np.ones(p))
    same = DG.adamw_decay(kind, lr=3e-3, weight_decay=0.05)
    assert same.name == plain.name and signature(same) == signature(plain)
    theta = rng.standard_normal(p)
    a, sa = theta.copy(), optim_step.init_state(plain, p)
    b, sb = theta.copy(), optim_step.init_state(grouped, p)
    assert sb.shape == (5, p) and sa.shape == (3, p)
    for t in range(1, 30):
        g = rng.standard_normal(p)
        optim_step.step(plain, a, g, sa, t)
        optim_step.step(grouped, b, g, sb, t)
    assert np.array_equal(a, b)


def test_zero_weight_means_no_decay():
    opt = DG.adamw_decay("l2", lr=0.1, weight_decay=0.5, weights=np.array([0.0, 1.0]))
    th = np.array([2.0, 2.0])
    optim_step.step(opt, th, np.zeros(2), optim_step.init_state(opt, 2), 1)
    assert th[0] == 2.0 and th[1] == pytest.approx(2.0 - 0.1 * 0.5 * 2.0)


@pytest.mark.parametrize("kwargs,word", [({"kind": "l3"}, "decay"), ({"weights": [1.0, -1.0]}, "weights"),
                                         ({"groups": [0.5, 1.0]}, "groups"), ({"kind": "min"}, "weights"),
                                         ({"lr": -1.0, "weights": [1.0]}, "learning rate")])
def test_bad_input_names_the_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        DG.adamw_decay(**kwargs)


@pytest.mark.parametrize("kind", DG.KINDS)
def test_grouped_numpy_twin_is_the_kernel(kind):
    """step_np (the twin the trainer's NumPy path uses) equals the compiled grouped step."""
    rng = np.random.default_rng(3)
    p = 41
    opt = DG.adamw_decay(kind, lr=1e-2, weight_decay=0.1, weights=rng.random(p), groups=rng.integers(0, 3, p))
    a = rng.standard_normal(p)
    b = a.copy()
    sa, sb = optim_step.init_state(opt, p), optim_step.init_state(opt, p)
    for t in range(1, 12):
        g = rng.standard_normal(p)
        optim_step.step(opt, a, g, sa, t)
        optim_step.step_np(opt, b, g, sb, t)
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
