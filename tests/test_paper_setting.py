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
