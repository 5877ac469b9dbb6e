"""Sparse linear regression (seed 004): a synthetic teacher ``y = Xβ*`` with an r-sparse ``β*``, and the
paper's own diagonal-net data set and SGD sample sequence drawn as the authors' notebook draws them."""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import RegressionData
from dyntools.engine import streams

_SPARSE_REGRESSION_KEY = streams.KEYS["data.sparse-regression"]


def sparse_regression(n: int = 80, d: int = 200, r: int = 20, *, n_test: int = 1000, noise: float = 0.0,
                      beta_star=None, seed: int = 0, stream_key: tuple[int, ...] = ()) -> RegressionData:
    """Andriushchenko et al. (2023) sparse regression: ``X ~ N(0, I_d)`` (n × d), an r-sparse
    non-negative unit-norm ``β*`` (support uniform at random, entries ``|N(0,1)|`` normalized),
    labels ``y = Xβ* + noise·ξ`` with ``ξ ~ N(0, I)``; the test set (``n_test`` points) is
    noiseless. A given ``beta_star`` (length d) replaces the random one.

    ``stream_key`` (integers) namespaces the random stream, e.g. ``(i,)`` for the i-th data set of
    an ensemble over seeds: data set i is then the same whatever the ensemble size.

    Parameters
    ----------
    n, d, r : int, default 80, 200, 20
        Training examples, dimension and support size (``r ≤ d``; unused with ``beta_star``).
    n_test : int, default 1000
        Test examples.
    noise : float, default 0.0
        Standard deviation of the training labels' Gaussian noise (≥ 0).
    beta_star : array_like, optional
        A teacher of length ``d`` instead of the random sparse one.
    seed : int, default 0
        The seed of the data's stream.
    stream_key : tuple of int, default ()
        Integers appended to the stream's key.

    Returns
    -------
    RegressionData

    Raises
    ------
    ValueError
        When a size is not a positive integer, ``r > d``, ``noise < 0`` or ``beta_star`` has the wrong length.

    Examples
    --------
    >>> import dyntools as dt
    >>> data = dt.data.sparse_regression(n=20, d=50, r=5, seed=1)
    >>> data.X.shape, int((data.beta_star != 0).sum())
    ((20, 50), 5)
    """
    n = validation.count("n", n)
    d = validation.count("d", d)
    n_test = validation.count("n_test", n_test)
    noise = validation.non_negative("noise", noise)
    seq = streams.root_sequence(seed, _SPARSE_REGRESSION_KEY, *stream_key)
    rng = np.random.Generator(np.random.PCG64(seq))
    if beta_star is None:
        r = validation.count("r", r)
        if r > d:
            raise ValueError(f"Invalid r: {r} (must be <= d = {d})")
        beta_star = np.zeros(d)
        support = rng.choice(d, size=r, replace=False)
        values = np.abs(rng.standard_normal(r))
        beta_star[support] = values / np.linalg.norm(values)
    else:
        beta_star = validation.finite_array("beta_star", beta_star, ndim=1)
        if beta_star.shape[0] != d:
            raise ValueError(f"Invalid beta_star: length {beta_star.shape[0]} does not match d = {d}")
    X = rng.standard_normal((n, d))
    X_test = rng.standard_normal((n_test, d))
    y = X @ beta_star + noise * rng.standard_normal(n)
    return RegressionData(X, y, X_test, X_test @ beta_star, beta_star)


#: The authors' seeds (diag_nets.ipynb): the data from the legacy global generator seeded 0, the SGD
#: sample indices from the same generator re-seeded 1 right before the run.
PAPER_DATA_SEED, PAPER_INDEX_SEED = 0, 1
#: The sizes of the paper's two diagonal-net data sets: the SGD one and the GD one.
PAPER_SIZES = {"sgd": (80, 200, 20), "gd": (40, 100, 20)}


def _legacy_seed(seed) -> int:
    """A seed of NumPy's legacy generator: an integer in ``[0, 2³²)``."""
    seed = validation.seed(seed)
    if seed >= 2**32:
        raise ValueError(f"Invalid seed: {seed} (the legacy generator takes seeds below 2**32)")
    return seed


def paper_diag_net_data(n: int = 80, d: int = 200, r: int = 20, *, n_test: int = 1000,
                        seed: int = PAPER_DATA_SEED) -> RegressionData:
    """The paper's own diagonal-net data set, as the authors' notebook draws it.

    NumPy's legacy generator (``np.random.seed(seed)`` semantics, here a private
    ``RandomState(seed)`` in the same state) draws, in this order, ``X`` (n × d) and ``X_test``
    (n_test × d) by ``multivariate_normal(0, I_d)``, then ``g = randn(d)``; the teacher is
    ``β* = |g ⊙ 1[j < r]| / ‖g ⊙ 1[j < r]‖₂`` (the first r coordinates, non-negative, unit norm) and
    the labels are noiseless, ``y = Xβ*``, ``y_test = X_test β*``. With ``(n, d, r) = (80, 200, 20)``
    (the SGD figure) or ``(40, 100, 20)`` (the GD figure) and ``seed = 0`` this is the published data.

    Parameters
    ----------
    n, d, r : int, default 80, 200, 20
        Training examples, dimension and support size (``r ≤ d``).
    n_test : int, default 1000
        Test examples.
    seed : int, default PAPER_DATA_SEED (0)
        The legacy generator's seed, below 2³².

    Returns
    -------
    RegressionData
    """
    n = validation.count("n", n)
    d = validation.count("d", d)
    r = validation.count("r", r)
    if r > d:
        raise ValueError(f"Invalid r: {r} (must be <= d = {d})")
    n_test = validation.count("n_test", n_test)
    from threadpoolctl import threadpool_limits

    legacy = np.random.RandomState(_legacy_seed(seed))
    mean, cov = np.zeros(d), np.eye(d)
    with threadpool_limits(1):              # its SVD of I_d: a threaded LAPACK only fights a busy machine
        X = legacy.multivariate_normal(mean, cov, n)
        X_test = legacy.multivariate_normal(mean, cov, n_test)
    g = legacy.randn(d)
    g[r:] = 0.0
    beta_star = np.abs(g) / np.linalg.norm(g)
    return RegressionData(X, X @ beta_star, X_test, X_test @ beta_star, beta_star)


def paper_sgd_indices(n: int, steps: int, *, seed: int = PAPER_INDEX_SEED) -> np.ndarray:
    """The authors' SGD sample sequence: ``RandomState(seed)``, one ``randint(n)`` per step
    (``int64[steps]``; one vectorized call draws the same integers as ``steps`` scalar calls,
    which the tests check). Feed it to a run through the replay sampler.

    Parameters
    ----------
    n : int
        The number of training examples (indices are in ``0..n−1``).
    steps : int
        The number of SGD steps.
    seed : int, default PAPER_INDEX_SEED (1)
        The legacy generator's seed, below 2³².
    """
    n = validation.count("n", n)
    steps = validation.count("steps", steps)
    return np.random.RandomState(_legacy_seed(seed)).randint(n, size=steps).astype(np.int64)
