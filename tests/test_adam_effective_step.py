"""Adam's effective step size entry: the moments' recurrences, the ratio's bound, the verdict's edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dyntools.simulations import adam_effective_step as A


def test_moments_are_the_bias_corrected_averages():
    rng = np.random.default_rng(1)
    g = rng.standard_normal((7, 3))
    m_hat, v_hat = A.moments(g, betas=(0.5, 0.25))
    t = 7
    w1 = np.array([0.5 ** (t - s) * 0.5 for s in range(1, t + 1)]) / (1 - 0.5 ** t)   # written from the sums
    w2 = np.array([0.25 ** (t - s) * 0.75 for s in range(1, t + 1)]) / (1 - 0.25 ** t)
    np.testing.assert_allclose(m_hat[-1], w1 @ g, rtol=1e-13)
    np.testing.assert_allclose(v_hat[-1], w2 @ (g * g), rtol=1e-13)


def test_ratio_is_one_for_constant_gradients_and_at_most_about_one():
    assert np.allclose(A.ratio(np.full((20, 2), -3.0)), 1.0)
    r = A.ratio(np.random.default_rng(2).standard_normal((200, 5)))
    assert np.nanmax(r) <= 1.0 / math.sqrt(1 - 0.999) and np.nanmedian(r[-50:]) < 0.5     # signs flip: small


def test_quadratic_run_reads_as_the_notes_say():
    distance, r = A.quadratic_run(400)
    v = A.verdict(distance, r)
    assert v["holds"] is True and v["far"] >= A.FAR and v["near"] <= A.NEAR
    assert distance[-1] < 1e-3 * distance[0]


@pytest.mark.parametrize("r, holds", [(np.full((10, 2), np.nan), None), (np.full((10, 2), 0.9), False),
                                      (np.r_[np.full((1, 2), 0.95), np.full((8, 2), 0.6), np.full((1, 2), 0.1)], True)])
def test_verdict_edges(r, holds):
    assert A.verdict(np.linspace(1, 0.1, 10), r)["holds"] is holds
    word = {None: "not shown", False: "contradicted", True: "shown"}[holds]
    v = A.claim_verdict(np.linspace(1, 0.1, 10), r)
    assert v.word == word and v.n == 4 and v.survivors == (0 if holds is None else 4)
