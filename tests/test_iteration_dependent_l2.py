"""Q1.c's iteration-dependent L2 as an optimizer: AdamW to round-off exactly where the derivation applies
(no momentum, preconditioner from the loss gradient), and measurably not outside it."""

from __future__ import annotations

from dyntools.simulations import iteration_dependent_l2 as Q


def test_the_derivations_setting_is_adamw_and_the_others_are_not():
    res = Q.gaps(steps=60)
    values = [r["max_relative_gap"] for r in res.values()]
    assert values[0] <= Q.ROUND_OFF
    assert values[1] > 1e-4 and values[2] > 1e-4


def test_a_wrong_coefficient_is_caught(monkeypatch):
    """λ' = λ/α read with torch's λ (whose decay is already αλ) decays α⁻¹ times too much: caught."""
    from dyntools.dynamics.full_batch import spiral_gradient

    theta0, gradient = spiral_gradient()
    ref = Q.adamw_run(theta0, gradient, 0.0, 20)
    monkeypatch.setattr(Q, "LAM", Q.LAM / Q.LR)
    run = Q.iteration_dependent_run(theta0, gradient, 0.0, False, 20)
    assert abs(run - ref).max() > 1e-3
