"""Column norms of φ_θ(X) and per-example gradient norms (issue 14): closed forms against the
Jacobian, the Frobenius identity, recording along diagonal-net and ReLU runs, the figures."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dyntools import metrics
from dyntools.models import diag_net

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), d=st.integers(1, 5), data=st.data())
def test_diag_net_closed_forms_equal_the_jacobian(n, d, data):
    X = data.draw(arrays(np.float64, (n, d), elements=finite))
    u = data.draw(arrays(np.float64, (d,), elements=finite))
    v = data.draw(arrays(np.float64, (d,), elements=finite))
    J = diag_net.jacobian(u, v, X)                  # rows: ∇_(u,v) h(x_i) = [x_i ⊙ v, x_i ⊙ u]
    cols_ref = np.array([np.sqrt(sum(J[i, j] ** 2 for i in range(n))) for j in range(2 * d)])
    rows_ref = np.array([np.sqrt(sum(J[i, j] ** 2 for j in range(2 * d))) for i in range(n)])
    assert np.allclose(diag_net.column_norms(u, v, X), cols_ref, atol=1e-12)
    assert np.allclose(diag_net.example_grad_norms(u, v, X), rows_ref, atol=1e-12)
    assert np.allclose(metrics.column_norms(J), cols_ref, atol=1e-12)
    assert np.allclose(metrics.example_grad_norms(J), rows_ref, atol=1e-12)
    # the same matrix seen by columns or by rows: Σ_j col_j² = Σ_i row_i² = ‖φ‖_F²
    assert np.isclose(np.sum(cols_ref ** 2), np.sum(rows_ref ** 2), rtol=1e-12, atol=1e-12)


def test_quantiles_are_ordered_and_hit_min_median_max():
    vals = np.array([[3.0, 1.0, 2.0, 5.0, 4.0]])
    q = metrics.norm_quantiles(vals)
    assert q.shape == (1, len(metrics.NORM_QUANTILES))
    assert q[0, 0] == 1.0 and q[0, metrics.NORM_QUANTILES.index(0.5)] == 3.0 and q[0, -1] == 5.0
    assert np.all(np.diff(q[0]) >= 0)


def test_diag_net_run_records_norm_quantiles_consistently():
    from dyntools.data import sparse_regression
    from dyntools.dynamics.diag_net_sgd import train_diag_net
    from dyntools.optim.schedules import Constant

    data = sparse_regression(10, 6, 2, n_test=8, seed=1)
    res = train_diag_net([data], [("s", 0.05, Constant()), ("l", 0.2, Constant())], steps=40, records=8,
                         sharpness_iters=0, keep_params=True)
    K = res["steps"].size
    assert res["col_norm_q"].shape == (2, 1, K, len(metrics.NORM_QUANTILES))
    for g in range(2):
        for k in range(K):
            u, v = res["u_rec"][g, 0, k], res["v_rec"][g, 0, k]
            J = diag_net.jacobian(u, v, data.X)
            assert np.allclose(res["col_norm_q"][g, 0, k], metrics.norm_quantiles(metrics.column_norms(J)))
            assert np.allclose(res["grad_norm_q"][g, 0, k], metrics.norm_quantiles(metrics.example_grad_norms(J)))
            assert np.isclose(res["phi_fro"][g, 0, k], np.linalg.norm(J))


def test_relu_run_records_norms_and_draws_the_paper_figures(tmp_path):
    from dyntools.simulations.relu_nets import paper_snapshot_steps, simulate

    from dyntools.models.mlp import MLP
    from dyntools.plots import relu as relu_plots

    res = simulate("1d-warmup500", seeds=1, records=10, log10_steps=2.5)
    assert res.config["warmup_factor"] == 500.0 and res.config["snapshots"] == paper_snapshot_steps(316).tolist()
    assert res["snapshot_steps"].tolist() == res.config["snapshots"]
    assert res["snapshot_theta"].shape[:2] == (2, len(res.config["snapshots"]))
    assert not set(res.config["snapshots"]) <= set(res["steps"].tolist())   # kept apart from the log grid
    layout = MLP(tuple(res.config["widths"]), biases=tuple(res.config["biases"]))
    k = -1
    J = layout.jacobian(res["theta"][1, k], res["X"])
    assert np.allclose(res["col_norm_q"][1, k], metrics.norm_quantiles(metrics.column_norms(J)))
    assert np.allclose(res["grad_norm_q"][1, k], metrics.norm_quantiles(metrics.example_grad_norms(J)))
    from dyntools.plots.column_norms import plot_column_norms

    paths = relu_plots.plot_predictor_paper_1d(res, tmp_path, ("png",)) + plot_column_norms(res, tmp_path, ("png",))
    assert all(p.stat().st_size > 10_000 for p in paths) and len(paths) == 2


def test_paper_snapshot_steps_are_the_notebook_grid_entries():
    from dyntools.simulations.relu_nets import paper_snapshot_steps

    T = int(10 ** 4.5) + 1                          # the authors' num_iter
    grid = np.unique(np.concatenate([np.arange(100), np.round(np.linspace(0, T, 151))[:-1]]))
    assert paper_snapshot_steps(T).tolist() == [int(grid[i]) for i in (99, 101, 105, 130, 170, 248)]


def test_decay_after_step_matches_the_authors_loop():
    from dyntools.optim.schedules import DecayAfterStep

    T, eta = 1001, 0.3
    ref, g = [], eta
    for i in range(T):                              # the authors' loop: step i runs, then maybe divide
        ref.append(g)
        if i == int(0.1 * T):
            g = g / 4.8
        if i == int(0.5 * T):
            g = g / 2.0
    got = DecayAfterStep((0.1, 0.5), (4.8, 2.0)).etas(eta, T)
    assert np.allclose(got, ref, rtol=1e-15, atol=0)
