"""The QR factor of a data set is computed once per process and data content, bitwise the uncached one."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.models import diag_net


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 30), d=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_cached_factor_is_bitwise_the_computed_one(m, d, seed):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((m, d)), rng.standard_normal(m)
    R0, z0, c0 = diag_net.loss_factor(X, y)
    for _ in range(2):                                   # computed, then found
        R, z, c = diag_net.cached_loss_factor(X, y)
        assert R.tobytes() == R0.tobytes() and z.tobytes() == z0.tobytes() and c == c0
        assert not R.flags.writeable and not z.flags.writeable


def test_factor_computed_once_and_again_after_an_in_place_change(monkeypatch):
    calls = []
    real = diag_net.loss_factor
    monkeypatch.setattr(diag_net, "loss_factor", lambda X, y: calls.append(1) or real(X, y))
    monkeypatch.setattr(diag_net, "_FACTORS", {})
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((40, 7)), rng.standard_normal(40)
    first = diag_net.stacked_factors([(X, y), (X.copy(), y.copy())])
    assert len(calls) == 1                                 # same content, one QR
    X[0, 0] += 1.0
    second = diag_net.stacked_factors([(X, y)])
    assert len(calls) == 2 and not np.array_equal(first[0][0], second[0][0])


def test_recorded_loss_unchanged_by_the_cache():
    rng = np.random.default_rng(5)
    model = diag_net.DiagNet(6)
    X, y = rng.standard_normal((30, 6)), rng.standard_normal(30)
    theta = rng.standard_normal((2, 3, 12))
    a = model.recorded_loss(theta, [X], [y], [0, 0])
    b = model.recorded_loss(theta, [X], [y], [0, 0])
    ref = diag_net.factored_losses(theta, *[np.ascontiguousarray(v) for v in (
        diag_net.loss_factor(X, y)[0].T[None], diag_net.loss_factor(X, y)[1][None])],
        np.array([diag_net.loss_factor(X, y)[2]]), np.array([0, 0]))
    assert a.tobytes() == b.tobytes() == ref.tobytes()


def test_factor_does_not_depend_on_the_blas_thread_count():
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((2000, 300)), rng.standard_normal(2000)
    with threadpool_limits(2):
        two = diag_net.loss_factor(X, y)
    with threadpool_limits(1):
        one = diag_net.loss_factor(X, y)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(one[:2], two[:2])) and one[2] == two[2]
