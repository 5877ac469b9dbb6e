# ruff: noqa: NPY002 -- the legacy global generator is exactly what the authors used and what is re-derived here
"""The paper's own diagonal-net setting (issue 14): data, sample indices, first steps, metrics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.data import paper_diag_net_data, paper_sgd_indices


def notebook_data(n, d, r, n_test, seed):
    """Re-derivation with the legacy *global* generator, call by call as the authors' notebook."""
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        X = np.random.multivariate_normal(np.zeros(d), np.eye(d), n)
        X_test = np.random.multivariate_normal(np.zeros(d), np.eye(d), n_test)
        b = np.random.randn(d)
        b[r:] = 0
        b = np.abs(b) / np.linalg.norm(b)
        return X, X_test, b
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize("n,d,r", [(80, 200, 20), (40, 100, 20)])
def test_paper_data_equals_the_notebook_draws(n, d, r):
    data = paper_diag_net_data(n, d, r)
    X, X_test, b = notebook_data(n, d, r, 1000, 0)
    assert np.array_equal(data.X, X) and np.array_equal(data.X_test, X_test)
    assert np.array_equal(data.beta_star, b)
    assert np.array_equal(data.y, X @ b) and np.array_equal(data.y_test, X_test @ b)
    assert np.count_nonzero(data.beta_star) == r and np.isclose(np.linalg.norm(data.beta_star), 1.0)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 200), steps=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
def test_paper_indices_equal_one_randint_per_step(n, steps, seed):
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        expected = [np.random.randint(n) for _ in range(steps)]
    finally:
        np.random.set_state(state)
    got = paper_sgd_indices(n, steps, seed=seed)
    assert got.dtype == np.int64 and got.tolist() == expected


@pytest.mark.parametrize("kw,name", [({"r": 0}, "r"), ({"r": 300}, "r"), ({"n": 0}, "n"),
                                     ({"seed": 2**32}, "seed"), ({"n_test": 0}, "n_test")])
def test_paper_data_bad_input_names_the_parameter(kw, name):
    with pytest.raises(ValueError, match=f"Invalid {name}"):
        paper_diag_net_data(**kw)


# ------------------------------------------------------------------------------ the paper's run

def direct_sgd(data, indices, eta_steps, steps):
    """The paper's equations, batch 1: e = <x_i, u*v> - y_i; u -= eta e x_i*v; v -= eta e x_i*u."""
    u, v = 0.1 * np.ones(data.X.shape[1]), np.zeros(data.X.shape[1])
    out = [(u, v)]
    for t in range(steps):
        x = data.X[indices[t]]
        e = x @ (u * v) - data.y[indices[t]]
        u, v = u - eta_steps[t] * e * x * v, v - eta_steps[t] * e * x * u
        out.append((u, v))
    return out


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_paper_run_first_steps_equal_direct_numpy_sgd(kernel):
    from dyntools.simulations.diag_nets import run_experiment

    steps = 60
    res = run_experiment("paper-sgd", data="paper", steps=steps, schedules=("small", "large"),
                         decay_at=(0.5,), decay_factors=(1.5,), grid="linear", records=steps + 1, kernel=kernel,
                         sharpness_iters=0, keep_params=True, rank_points=20)
    assert res.config["data"] == "paper" and res.config["replayed"] and res.config["decay_rule"] == "after"
    data = paper_diag_net_data()
    idx = paper_sgd_indices(80, steps)
    for g, eta in enumerate((0.25, 0.282)):
        etas = np.full(steps, eta)
        if g == 1:
            etas[steps // 2 + 1:] /= 1.5                           # after step floor(0.5 T) has run
        assert np.allclose(res["eta_rec"][g], etas[np.minimum(res["steps"], steps - 1)], rtol=0, atol=1e-15)
        ref = direct_sgd(data, idx, etas, steps)
        for k, t in enumerate(res["steps"]):
            u, v = ref[t]
            assert np.allclose(res["u_rec"][g, 0, k], u, rtol=1e-9, atol=1e-12)
            assert np.allclose(res["v_rec"][g, 0, k], v, rtol=1e-9, atol=1e-12)


def test_paper_defaults_and_metrics():
    from dyntools.simulations.diag_nets import EXPERIMENT, paper_record_steps

    p = EXPERIMENT.make("paper-sgd", data="paper")
    assert (p.n, p.d, p.r, p.n_test, p.steps, p.seeds) == (80, 200, 20, 1000, 100_001, 1)
    assert (p.rank_points, p.rank_threshold, p.l0_threshold, p.decay_rule) == (400, 1e-15, 1e-50, "after")
    g = EXPERIMENT.make("paper-gd", data="paper")
    assert (g.n, g.d, g.method, g.rank_points, g.eta_large) == (40, 100, "gd", 200, 3.53)
    assert EXPERIMENT.make("paper-sgd", data="paper", steps=500).steps == 500      # explicit options win
    assert EXPERIMENT.make("paper-sgd").steps == 100_000                           # no --data paper: unchanged
    grid = paper_record_steps(100_001)
    assert grid[:100].tolist() == list(range(100)) and grid[-1] < 100_001
    expected = np.unique(np.concatenate([np.arange(100), np.round(np.linspace(0, 100_001, 250))[:-1]]))
    assert grid.tolist() == expected.astype(int).tolist()


def test_heldout_rank_is_the_svd_count_on_test_points():
    from dyntools.dynamics.diag_net_sgd import heldout_ranks

    rng = np.random.default_rng(1)
    X = rng.standard_normal((1, 12, 5))
    u = rng.standard_normal((1, 3, 5))
    v = rng.standard_normal((1, 3, 5))
    u[0, 1, 2] = v[0, 1, 2] = 0.0                     # a dead coordinate: rank 4
    v[0, 2] = 0.0                                      # v = 0: phi = [X*u, 0], rank 5
    got = heldout_ranks(X, np.zeros(1, np.int64), u, v, 1e-10)
    for k in range(3):
        phi = np.hstack([X[0] * u[0, k], X[0] * v[0, k]])
        s = np.linalg.svd(phi, compute_uv=False)
        assert got[0, k] == np.sum(s > 1e-10 * s[0]) <= 5   # columns j and d+j are parallel: rank <= d
    assert got[0].tolist() == [5, 4, 5]


# ------------------------------------------------------------------------------- bad input (CLI)

def cli(*args, cwd=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "dyntools", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


@pytest.mark.parametrize("args,name", [
    (["--data", "paper", "--n", "50"], "n"),
    (["--data", "paper", "--d", "150"], "d"),
    (["--data", "paper", "--r", "10"], "r"),
    (["--preset", "paper-gd", "--data", "paper", "--n", "80"], "n"),
    (["--data", "paper", "--rank-threshold", "0"], "rank"),
    (["--data", "paper", "--l0-threshold=-1e-3"], "l0"),
    (["--data", "paper", "--l0-threshold", "0"], "l0"),
    (["--data", "paper", "--rank-points", "1001"], "rank_points"),
    (["--n-test", "100", "--rank-points", "101"], "rank_points"),
    (["--rank-threshold", "1e-9"], "rank_threshold"),
    (["--data", "nonsense"], "--data"),
])
def test_cli_bad_paper_options_one_line_exit_2_nothing_written(tmp_path, args, name):
    out = tmp_path / "run"
    proc = cli("simulate", "diag-net", *args, "--out", out)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], proc.stderr
    assert not out.exists()


def test_python_bad_rank_points_names_the_parameter():
    from dyntools.dynamics.diag_net_sgd import train_diag_net
    from dyntools.optim.schedules import Constant

    data = paper_diag_net_data(40, 100, 20, n_test=50)
    with pytest.raises(ValueError, match="Invalid rank_points"):
        train_diag_net([data], [("s", 0.1, Constant())], steps=5, rank_points=51)
    with pytest.raises(ValueError, match="Invalid rank_threshold"):
        train_diag_net([data], [("s", 0.1, Constant())], steps=5, rank_points=10, rank_threshold=0.0)


def test_cli_data_paper_runs_the_authors_setting(tmp_path):
    import json

    from dyntools import store

    out = tmp_path / "own"
    proc = cli("simulate", "diag-net", "--data", "paper", "--steps", "300", "--records", "10", "--dense-start", "3",
               "--rank-points", "20", "--schedules", "small", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["runs"]
    res = store.load(out)
    assert res.config["data"] == "paper" and res.config["replayed"] and res.config["kernel"] == "numpy"
    assert res.config["l0_threshold"] == 1e-50 and res.config["rank_threshold"] == 1e-15
    assert res.config["rank_on"] == "first 20 test points" and res.config["seeds"] == 1
    assert res["col_norm_q"].shape[-1] == 7 and np.all(np.isfinite(res["col_norm_q"]))


def test_notebook_comparison_of_one_run_shows_its_fate_and_no_nan():
    from dyntools.simulations.diag_nets import NOTEBOOK_FINAL, compare_with_notebook, kernel_survival_verdict

    class Fake(dict):
        config = {"runs": [{"label": f"r{g}"} for g in range(4)]}

    ref = np.array(NOTEBOOK_FINAL["paper-sgd"], dtype=float)                # (run, [train, test, l0])
    res = Fake(train_loss=ref[:, 0, None, None].copy(), test_loss=ref[:, 1, None, None].copy(),
               l0=ref[:, 2, None, None].copy(), rank=np.full((4, 1, 1), 5.0), diverged_at=np.array([[-1]] * 4))
    res["diverged_at"][3] = 7128
    res["l0"][3], res["test_loss"][3] = np.nan, np.nan
    rows = compare_with_notebook(res, "paper-sgd")
    assert [r["fate"] for r in rows] == ["finished"] * 3 + ["diverged at step 7128"]
    assert rows[3]["ℓ0"] == "—" and rows[3]["test loss"] == "—" and "nan" not in str(rows).lower()
    assert all("verdict" not in r for r in rows)                         # one run is one draw: no verdict
    assert kernel_survival_verdict(4, 8, 16) and kernel_survival_verdict(6, 6, 16)
    assert not kernel_survival_verdict(0, 14, 16)


def test_survival_under_perturbed_starts_is_the_same_experiment_for_both_kernels():
    """The report's perturbed-start study: at a stable step nobody diverges, at a far too large one
    everybody does (at the same step for both kernels: the first updates are far from round-off), and
    the starts are drawn per index, so a repeat gives the same list."""
    from dyntools.simulations.diag_nets import survival_under_perturbation

    calm = {k: survival_under_perturbation(k, eta=0.05, steps=300, draws=2) for k in ("numba", "numpy")}
    assert calm == {"numba": [-1, -1], "numpy": [-1, -1]}
    wild = {k: survival_under_perturbation(k, eta=50.0, steps=300, draws=2) for k in ("numba", "numpy")}
    assert all(x > 0 for x in wild["numba"]) and wild["numba"] == wild["numpy"]
    assert survival_under_perturbation("numba", eta=50.0, steps=300, draws=2) == wild["numba"]
