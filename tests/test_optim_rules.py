"""Optimizers torch does not have (SGDW, bias-corrected RMSProp, AdamW-L1/L1+L2, normalized weight
decay) against updates derived by hand from the papers, the chain structure, and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S
from dyntools.optim import transforms as T
from tests import optim_step


def run(opt, theta0, grads, mult=None, fused=True):
    theta = np.array(theta0, dtype=float)
    mult = np.ones(len(grads)) if mult is None else mult
    state = optim_step.init_state(opt, theta.size) if fused else opt.init(theta)
    out = []
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g(theta) if callable(g) else g, dtype=float)
        if fused:
            optim_step.step(opt, theta, g, state, t, mult[t - 1])
        else:
            theta, state = opt.step(theta, g, state, t, mult[t - 1])
        out.append(theta.copy())
    return np.array(out)


def grads_of(theta):
    return 0.7 * theta - np.array([0.3, -0.2, 0.5])[: theta.size]


def test_sgdw_momentum_is_loshchilov_hutter_algorithm_1():
    lr, mu, lam = 0.1, 0.9, 0.05
    th, b, hand = np.array([1.0, -2.0, 0.5]), None, []
    for t in range(1, 30):
        g = grads_of(th)
        b = g.copy() if t == 1 else mu * b + g          # b_t = μ b_{t−1} + g_t (loss gradient only)
        th = th - lr * (b + lam * th)                    # θ_t = θ_{t−1} − η (b_t + λ θ_{t−1})
        hand.append(th.copy())
    got = run(O.sgdw(lr, momentum=mu, weight_decay=lam), [1.0, -2.0, 0.5], [grads_of] * 29)
    np.testing.assert_array_equal(got, np.array(hand))


def test_sgd_l2_equals_sgdw_without_momentum_up_to_rounding():
    """Seed 001 Q 1.a.i: for plain SGD, L2 with λ is weight decay with λ (same lr)."""
    a = run(O.sgd(0.1, weight_decay=0.3), [1.0, 2.0, -1.0], [grads_of] * 50)
    b = run(O.sgdw(0.1, weight_decay=0.3), [1.0, 2.0, -1.0], [grads_of] * 50)
    np.testing.assert_allclose(a, b, rtol=1e-13)


def test_rmsprop_bias_corrected_by_hand():
    lr, b2, eps, lam = 0.01, 0.99, 1e-8, 0.1
    th, v, hand = np.array([1.0, -2.0, 0.5]), np.zeros(3), []
    for t in range(1, 40):
        g = grads_of(th) + lam * th                      # coupled: L2 gradient enters M_t
        v = v * b2 + (1 - b2) * g * g
        th = th - lr * (g / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps))
        hand.append(th.copy())
    got = run(O.rmsprop_bc(lr, beta2=b2, eps=eps, weight_decay=lam), [1.0, -2.0, 0.5], [grads_of] * 39)
    np.testing.assert_allclose(got, np.array(hand), rtol=1e-14)   # numba's β**t may differ by 1 ulp


def test_rmsprop_bias_corrected_decoupled_by_hand():
    lr, b2, eps, lam = 0.01, 0.9, 1e-8, 0.2
    th, v, hand = np.array([1.0, -2.0, 0.5]), np.zeros(3), []
    for t in range(1, 40):
        g = grads_of(th)
        v = v * b2 + (1 - b2) * g * g
        th = th - lr * (g / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps) + lam * th)
        hand.append(th.copy())
    got = run(O.rmsprop_bc(lr, beta2=b2, eps=eps, weight_decay=lam, decoupled=True), [1.0, -2.0, 0.5],
              [grads_of] * 39, fused=False)
    np.testing.assert_array_equal(got, np.array(hand))


def _adam_hand(th, steps, lr, lam, decay, mult):
    b1, b2, eps = 0.9, 0.999, 1e-8
    m, v, out = np.zeros_like(th), np.zeros_like(th), []
    for t in range(1, steps + 1):
        g = grads_of(th)
        m = m + (1 - b1) * (g - m)
        v = v * b2 + (1 - b2) * g * g
        u = (m / (1 - b1 ** t)) / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
        th = th - lr * mult[t - 1] * (u + lam * decay(th))
        out.append(th.copy())
    return np.array(out)


def test_adamw_l1_and_l1l2_by_hand():
    mult = S.CosineAnnealingLR(40).multipliers(40)
    th0 = np.array([1.0, -2.0, 0.5])
    l1 = run(O.adamw_l1(0.05, weight_decay=0.3), th0, [grads_of] * 40, mult, fused=False)
    np.testing.assert_allclose(l1, _adam_hand(th0, 40, 0.05, 0.3, np.sign, mult), rtol=1e-14)
    mix = run(O.adamw_l1l2(0.05, weight_decay=0.3, l1_ratio=0.25), th0, [grads_of] * 40, mult)
    hand = _adam_hand(th0, 40, 0.05, 0.3, lambda th: 0.75 * th + 0.25 * np.sign(th), mult)
    np.testing.assert_allclose(mix, hand, rtol=1e-13)
    l2 = run(O.adamw(0.05, weight_decay=0.3), th0, [grads_of] * 40, mult)
    assert np.max(np.abs(l2 - l1)) > 1e-3                   # false control: L1 is not L2


def test_schedule_multiplier_scales_the_decoupled_decay():
    """With zero gradient AdamW is pure decay: θ_T = θ_0 ∏ (1 − lr η_t λ) (L&H 2019, Alg. 2 line 12)."""
    mult = S.warmup_cosine(10, 100).multipliers(100)
    th0 = np.array([1.5, -0.25, 3.0])
    got = run(O.adamw(0.1, weight_decay=0.5), th0, [np.zeros(3)] * 100, mult)
    expected = th0 * np.cumprod(1 - 0.1 * mult * 0.5)[:, None]
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    flat = run(O.adamw(0.1, weight_decay=0.5), th0, [np.zeros(3)] * 100)   # no schedule: different
    assert np.max(np.abs(flat[-1] - got[-1])) > 1e-3


def test_normalized_weight_decay_formula():
    assert O.normalized_weight_decay(0.05, 128, 50_000, 200) == 0.05 * math.sqrt(128 / (50_000 * 200))
    # total decay over the run ∝ λ · updates ∝ √(B T / b): doubling epochs scales λ by 1/√2
    r = O.normalized_weight_decay(1.0, 64, 1000, 20) / O.normalized_weight_decay(1.0, 64, 1000, 40)
    assert r == pytest.approx(math.sqrt(2), rel=1e-15)
    with pytest.raises(ValueError, match="batch_size"):
        O.normalized_weight_decay(1.0, 2000, 1000, 10)


def test_decay_position_is_the_difference():
    assert [type(t).__name__ for t in O.adam(1e-3, weight_decay=0.1).chain.transforms] == \
        ["add_decay", "scale_by_adam"]
    assert [type(t).__name__ for t in O.adamw(1e-3, weight_decay=0.1).chain.transforms] == \
        ["scale_by_adam", "add_decay"]
    assert O.adam(1e-3, weight_decay=0.1).decay_position.startswith("coupled")
    assert O.sgdw(1e-3, weight_decay=0.1).decay_position.startswith("decoupled")
    # without momentum sgd and sgdw have one chain (add_decay alone): the factory's record tells them apart
    assert O.sgd(1e-3, weight_decay=0.1).decay_position.startswith("coupled")
    assert O.sgdw(1e-3, weight_decay=0.1).chain == O.sgd(1e-3, weight_decay=0.1).chain
    assert O.adamw(1e-3, weight_decay=0.0).decay_position == "none"
    assert O.Optimizer("mine", 1e-3, O.adamw(1e-3).chain).decay_position == "as its chain says"


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(O.FACTORIES)), lr=st.floats(1e-4, 0.5), wd=st.floats(0, 1),
       seed=st.integers(0, 2**16))
def test_compiled_step_equals_chain(name, lr, wd, seed):
    opt = O.make(name, lr=lr, weight_decay=wd)
    rng = np.random.default_rng(seed)
    th0 = rng.standard_normal(7)
    grads = [rng.standard_normal(7) for _ in range(25)]
    mult = rng.uniform(0.1, 1.0, 25)
    a, b = run(opt, th0, grads, mult, fused=True), run(opt, th0, grads, mult, fused=False)
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13 * np.abs(b).max())


def test_chain_composes_in_order():
    ch = T.chain(T.add_decay(0.5), T.trace(0.9))
    state = ch.init(np.ones(2))
    u, state = ch.update(np.array([1.0, 2.0]), state, np.array([2.0, 2.0]), 1, 0.1)
    np.testing.assert_array_equal(u, [2.0, 3.0])


@pytest.mark.parametrize("call, match", [
    (lambda: O.sgd(0.0), "Invalid learning rate: 0.0"),
    (lambda: O.adam(-1e-3), "Invalid learning rate: -0.001"),
    (lambda: O.adam(1e-3, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda: O.adamw(1e-3, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda: O.adam(1e-3, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda: O.adamw(1e-3, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda: O.sgd(0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda: O.sgd(0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda: O.rmsprop(0.1, alpha=1.5), "Invalid alpha value: 1.5"),
    (lambda: O.rmsprop_bc(0.1, beta2=1.0), "Invalid beta2 parameter: 1.0"),
    (lambda: O.adagrad(0.1, lr_decay=-1), "Invalid lr_decay value"),
    (lambda: O.adamw_l1l2(0.1, l1_ratio=2), "Invalid l1_ratio"),
    (lambda: S.StepLR(0), "Invalid step_size"),
    (lambda: S.MultiStepLR((30, 10)), "Invalid milestones"),
    (lambda: S.LinearLR(start_factor=0.0), "Starting multiplicative factor"),
    (lambda: S.CosineAnnealingWarmRestarts(0), "Expected positive integer T_0"),
    (lambda: S.CosineAnnealingWarmRestarts(10, T_mult=0), "Expected integer T_mult >= 1"),
    (lambda: S.CosineAnnealingLR(100, eta_min=-1), "Invalid eta_min"),
    (lambda: S.ReduceLROnPlateau(factor=1.0), "Factor should be < 1.0"),
    (lambda: S.SequentialLR((S.StepLR(5),), (10,)), "one more than the number of milestone"),
    (lambda: S.warmup_cosine(100, 50), "Invalid total_steps"),
    (lambda: S.ReduceLROnPlateau().multipliers(10), "depends on the losses"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_plateau_stateful_step_api():
    sched = S.ReduceLROnPlateau(factor=0.5, patience=2, threshold=0.0)
    ms = [sched.step(v) for v in [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]]
    assert ms == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]
