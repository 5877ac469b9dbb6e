"""Diagonal linear network model and the sparse-feature metrics: analytic vs numerical, kernels vs LAPACK."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import metrics
from dyntools.dynamics.diag_net_sgd import jacobian_ranks
from dyntools.models import diag_net

SETTINGS = settings(max_examples=25, deadline=None)


def problem(seed, n=7, d=5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(d), rng.standard_normal(d), rng.standard_normal((n, d)),
            rng.standard_normal(n))


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 9), st.integers(1, 9))
def test_gradients_match_central_differences(seed, n, d):
    u, v, X, y = problem(seed, n, d)
    gu, gv = diag_net.gradients(u, v, X, y)
    h = 1e-6
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        fd_u = (diag_net.loss(u + e, v, X, y) - diag_net.loss(u - e, v, X, y)) / (2 * h)
        fd_v = (diag_net.loss(u, v + e, X, y) - diag_net.loss(u, v - e, X, y)) / (2 * h)
        assert fd_u == pytest.approx(gu[j], rel=1e-5, abs=1e-7)
        assert fd_v == pytest.approx(gv[j], rel=1e-5, abs=1e-7)


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 9), st.integers(1, 9))
def test_hvp_equals_dense_hessian_and_gradient_differences(seed, n, d):
    u, v, X, y = problem(seed, n, d)
    rng = np.random.default_rng(seed + 1)
    du, dv = rng.standard_normal(d), rng.standard_normal(d)
    hu, hv = diag_net.hvp(u, v, X, y, du, dv)
    H = diag_net.hessian(u, v, X, y)
    np.testing.assert_allclose(np.concatenate([hu, hv]), H @ np.concatenate([du, dv]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, H.T, atol=1e-14)
    h = 1e-6
    gp = np.concatenate(diag_net.gradients(u + h * du, v + h * dv, X, y))
    gm = np.concatenate(diag_net.gradients(u - h * du, v - h * dv, X, y))
    np.testing.assert_allclose((gp - gm) / (2 * h), np.concatenate([hu, hv]), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(st.integers(0, 10_000))
def test_jacobian_rows_are_prediction_gradients_and_gram_matches(seed):
    u, v, X, y = problem(seed)
    phi = diag_net.jacobian(u, v, X)
    assert phi.shape == (X.shape[0], 2 * X.shape[1])
    rng = np.random.default_rng(seed)
    du, dv = rng.standard_normal(u.size), rng.standard_normal(v.size)
    h = 1e-6
    fd = (diag_net.predict(u + h * du, v + h * dv, X) - diag_net.predict(u - h * du, v - h * dv, X)) / (2 * h)
    np.testing.assert_allclose(phi @ np.concatenate([du, dv]), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(diag_net.jacobian_gram(u, v, X), phi @ phi.T, rtol=1e-12, atol=1e-12)
    # Gauss–Newton part of the Hessian is φᵀφ/n; at an interpolating point it is the whole Hessian
    y0 = diag_net.predict(u, v, X)
    np.testing.assert_allclose(diag_net.hessian(u, v, X, y0), phi.T @ phi / X.shape[0], atol=1e-12)


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(1, 12))
def test_loss_factor_reproduces_the_loss(seed, m, d):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((m, d)), rng.standard_normal(m)
    R, z, c = diag_net.loss_factor(X, y)
    assert np.allclose(np.tril(R, -1), 0)
    for _ in range(3):
        u, v = rng.standard_normal(d), rng.standard_normal(d)
        direct = diag_net.loss(u, v, X, y)
        assert 0.5 * (np.sum((R @ (u * v) - z) ** 2) + c) == pytest.approx(direct, rel=1e-10, abs=1e-13)


def test_initial_params():
    u, v = diag_net.initial_params(6, "paper", alpha=0.1)
    assert np.all(u == 0.1) and np.all(v == 0)
    u, v = diag_net.initial_params(6, "gaussian", scale=0.5, rng=np.random.default_rng(0))
    assert u.std() > 0 and v.std() > 0
    with pytest.raises(ValueError, match="init"):
        diag_net.initial_params(6, "uniform")


# ------------------------------------------------------------------------------------------ metrics

def random_stack(seed, k, n, d):
    """Parameters with coordinates at very different scales (some exactly zero): ranks vary."""
    rng = np.random.default_rng(seed)
    mask = rng.random((k, d)) < 0.4
    scale = 10.0 ** rng.integers(-7, 1, (k, d))
    u = rng.standard_normal((k, d)) * mask * scale
    v = rng.standard_normal((k, d)) * mask * scale
    return rng.standard_normal((n, d)), u, v


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 15))
def test_rank_routes_agree_with_svd(seed, n, d):
    X, u, v = random_stack(seed, 8, n, d)
    svd = metrics.jacobian_rank(np.stack([diag_net.jacobian(a, b, X) for a, b in zip(u, v)]), 1e-4)
    gram = metrics.gram_rank(diag_net.jacobian_gram(u, v, X), 1e-4)
    compiled = jacobian_ranks(X[None], np.zeros(1, dtype=np.int64), u[None], v[None], 1e-4)[0]
    np.testing.assert_array_equal(gram, svd)
    np.testing.assert_array_equal(compiled, svd)
    assert np.all(svd <= min(n, d))


def test_rank_of_known_structure_and_unrecorded_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 50))
    u = np.zeros((3, 50))
    v = np.zeros((3, 50))
    u[0, :7] = 1.0               # 7 active coordinates -> rank 7
    u[1, :40] = 1.0              # 40 active > n = 30 -> rank 30
    u[2] = np.nan                # not recorded -> -1
    out = jacobian_ranks(X[None], np.zeros(1, dtype=np.int64), u[None], v[None], 1e-4)[0]
    assert out.tolist() == [7, 30, -1]
    assert metrics.jacobian_rank(diag_net.jacobian(np.zeros(50), np.zeros(50), X)) == 0


def test_gram_rank_refuses_thresholds_it_cannot_resolve():
    with pytest.raises(ValueError, match="rel_threshold"):
        metrics.gram_rank(np.eye(3), 1e-9)


def test_sparsity_and_support_metrics():
    beta = np.array([0.5, 0.0, 1e-5, -0.2, 0.0])
    star = np.array([1.0, 0.0, 0.0, 0.0, 2.0])
    assert metrics.l0(beta, 1e-3) == 2
    assert metrics.l0(beta, 0.0) == 3
    assert metrics.l1(beta) == pytest.approx(0.70001)
    prec, rec = metrics.support_recovery(beta, star, 1e-3)
    assert prec == pytest.approx(0.5) and rec == pytest.approx(0.5)
    prec, rec = metrics.support_recovery(np.zeros(5), star)
    assert prec == 1.0 and rec == 0.0
    stack_p, stack_r = metrics.support_recovery(np.stack([beta, star]), star)
    assert stack_p.tolist() == [0.5, 1.0] and stack_r.tolist() == [0.5, 1.0]
    assert metrics.balancedness(np.array([1.0, -2.0]), np.array([-1.0, 2.0])) == 0.0
    assert metrics.balancedness(np.array([3.0, 0.0]), np.array([0.0, 4.0])) == pytest.approx(5.0)


@SETTINGS
@given(st.integers(0, 10_000))
def test_sharpness_by_power_iteration_matches_eigvalsh(seed):
    u, v, X, y = problem(seed, n=6, d=4)
    H = diag_net.hessian(u, v, X, y)
    lam = np.linalg.eigvalsh(H)

    def hvp(z):
        hu, hv = diag_net.hvp(u, v, X, y, z[:4], z[4:])
        return np.concatenate([hu, hv])

    est = metrics.sharpness(hvp, 8, iters=5000, tol=1e-13, seed=seed)
    assert est == pytest.approx(lam[-1], rel=1e-5, abs=1e-7)


@SETTINGS
@given(st.integers(0, 10_000))
def test_batched_hvp_and_sharpness_match_one_point_at_a_time(seed):
    """A stack of K points through hvp_operator / sharpness_batch gives each point's own answer."""
    rng = np.random.default_rng(seed)
    u, v, X, y = problem(seed, n=6, d=4)
    U, V = u + 0.3 * rng.standard_normal((5, 4)), v + 0.3 * rng.standard_normal((5, 4))
    Z = rng.standard_normal((5, 8))
    batched = diag_net.hvp_operator(U, V, X, y)(Z)
    rows = np.array([3, 1])
    np.testing.assert_allclose(diag_net.hvp_operator(U, V, X, y)(Z[rows], rows), batched[rows], rtol=1e-12,
                               atol=1e-14)
    for k in range(5):
        hu, hv = diag_net.hvp(U[k], V[k], X, y, Z[k, :4], Z[k, 4:])
        np.testing.assert_allclose(np.concatenate([hu, hv]), batched[k], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(diag_net.hessian(U[k], V[k], X, y) @ Z[k], batched[k], rtol=1e-10,
                                   atol=1e-12)
    lam, conv = metrics.sharpness_batch(diag_net.hvp_operator(U, V, X, y), 8, 5, iters=5000, tol=1e-13)
    exact = [np.linalg.eigvalsh(diag_net.hessian(U[k], V[k], X, y))[-1] for k in range(5)]
    np.testing.assert_allclose(lam, exact, rtol=1e-5, atol=1e-7)
    assert conv.all()


def test_power_iteration_batch_reports_operators_that_did_not_converge():
    # eigenvalues 1 and 0.999: convergence of the Rayleigh quotient is far slower than 10 iterations
    slow = np.diag([1.0, 0.999, 0.1])
    fast = np.diag([1.0, 0.01, 0.01])
    ops = np.stack([slow, fast])
    lam, used, conv = metrics.power_iteration_batch(lambda Z, rows: np.einsum("kij,kj->ki", ops[rows], Z), 3, 2,
                                                    iters=10, tol=1e-12)
    assert conv.tolist() == [False, True] and used[0] == 10 and used[1] < 10
    assert lam[1] == pytest.approx(1.0, rel=1e-10)


def test_sharpness_of_an_indefinite_operator_is_the_top_eigenvalue_not_the_largest_magnitude():
    A = np.diag([-5.0, 1.0, 2.0])
    assert metrics.sharpness(lambda z: A @ z, 3, iters=3000, tol=1e-14) == pytest.approx(2.0, rel=1e-6)
    mu, _ = metrics.power_iteration(lambda z: A @ z, 3, iters=3000, tol=1e-14)
    assert mu == pytest.approx(-5.0, rel=1e-6)       # the control: plain power iteration finds -5


def test_sharpness_batch_groups_start_each_stacked_batch_as_it_would_alone():
    """Two batches stacked with ``groups`` start from their own seeds' vectors: the same answers and iteration
    counts as two calls (recorded_sharpness stacks the paths of one data set this way)."""
    ops = np.stack([np.diag([3.0, 1.0, 0.5]), np.diag([-4.0, 1.0, 2.0]), np.diag([2.0, 1.9, 0.1])])
    matvec = lambda Z, rows: np.einsum("kij,kj->ki", ops[rows], Z)    # noqa: E731
    first = metrics.power_iteration_batch(lambda Z, rows: matvec(Z, rows), 3, 2, iters=300, tol=1e-12, seed=5)
    second = metrics.power_iteration_batch(lambda Z, rows: matvec(Z, rows + 2), 3, 1, iters=300, tol=1e-12, seed=7)
    stacked = metrics.power_iteration_batch(matvec, 3, 3, iters=300, tol=1e-12, seed=5, groups=[0, 0, 2])
    for got, want in zip(stacked, (np.concatenate(pair) for pair in zip(first, second))):
        np.testing.assert_array_equal(got, want)
    lam, _ = metrics.sharpness_batch(matvec, 3, 3, iters=3000, tol=1e-14, groups=[0, 1, 1])
    np.testing.assert_allclose(lam, [3.0, 2.0, 2.0], rtol=1e-6)
    with pytest.raises(ValueError, match="groups"):
        metrics.power_iteration_batch(matvec, 3, 3, groups=[0, 1])
