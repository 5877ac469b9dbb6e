"""Data sets, deterministic from a seed. One function per data set; sections per source.

Every generator takes an explicit ``seed`` (a ``numpy.random.SeedSequence`` entropy) and returns
plain arrays, so the same seed gives the same data on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.engine import streams

# ------------------------------------------------------------------ sparse regression (seed 004)

_SPARSE_REGRESSION_KEY = streams.KEYS["data.sparse-regression"]


@dataclass(frozen=True)
class RegressionData:
    """Train and test sets of a linear teacher ``y = Xβ* (+ noise)``."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    beta_star: np.ndarray


def sparse_regression(n: int = 80, d: int = 200, r: int = 20, *, n_test: int = 1000, noise: float = 0.0,
                      beta_star=None, seed: int = 0, stream_key: tuple[int, ...] = ()) -> RegressionData:
    """Andriushchenko et al. (2023) sparse regression: ``X ~ N(0, I_d)`` (n × d), an r-sparse
    non-negative unit-norm ``β*`` (support uniform at random, entries ``|N(0,1)|`` normalized),
    labels ``y = Xβ* + noise·ξ`` with ``ξ ~ N(0, I)``; the test set (``n_test`` points) is
    noiseless. A given ``beta_star`` (length d) replaces the random one.

    ``stream_key`` (integers) namespaces the random stream, e.g. ``(i,)`` for the i-th data set of
    an ensemble over seeds: data set i is then the same whatever the ensemble size.
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
    which the tests check). Feed it to a run through the replay sampler."""
    n = validation.count("n", n)
    steps = validation.count("steps", steps)
    return np.random.RandomState(_legacy_seed(seed)).randint(n, size=steps).astype(np.int64)


# ------------------------------------------------ ReLU-network regression (issue 7, seed 004)

_TEACHER_KEY = streams.KEYS["data.teacher"]

#: Inputs and labels of the paper's 1-D regression task (12 points).
REGRESSION_1D_X = (np.arange(12) - 5.5) / 4.0 + 0.07
REGRESSION_1D_Y = 0.345 + np.array([-2, 1.5, 0, 0, 2, 1, 0, -1, 0, 1, 2, -1], dtype=np.float64)


@dataclass(frozen=True)
class TeacherStudentData:
    """Train/test sets labelled by a ReLU teacher network ``y = h_teacher(x)``.

    ``teacher`` is the teacher's flat parameter vector for ``teacher_layout``
    (a regression :class:`dyntools.models.mlp.MLP` without biases)."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    teacher: np.ndarray
    teacher_layout: object


def regression_1d() -> tuple[np.ndarray, np.ndarray]:
    """Andriushchenko et al. (2023)'s 1-D regression: ``x = (−5.5, −4.5, …, 5.5)/4 + 0.07``,
    ``y = 0.345 + (−2, 1.5, 0, 0, 2, 1, 0, −1, 0, 1, 2, −1)``. Returns ``X`` (12, 1) and ``y`` (12,)."""
    return REGRESSION_1D_X[:, None].copy(), REGRESSION_1D_Y.copy()


def unit_sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the unit sphere of ``R^d`` (normalized Gaussians)."""
    Z = rng.standard_normal((n, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def teacher_student(n: int, d: int, teacher_hidden, *, n_test: int = 1000, seed: int = 0,
                    student_d: int | None = None) -> TeacherStudentData:
    """Teacher–student regression with inputs uniform on the unit sphere of ``R^d``.

    * one hidden layer (``teacher_hidden = [k]``): ``h*(x) = Σ_j a_j σ(⟨w_j, x⟩)`` with unit-norm
      rows ``w_j`` (uniform directions) and ``a_j = ±1`` (fair signs), no biases;
    * several hidden layers: every weight ``N(0, 1)``, biases 0.

    ``student_d`` (if given) must equal ``d``: a student reading another input dimension cannot
    be trained on this data.
    """
    from dyntools.models.mlp import MLP

    n = validation.count("n", n)
    d = validation.count("d", d)
    n_test = validation.count("n_test", n_test)
    if student_d is not None and validation.count("student input dimension", student_d) != d:
        raise ValueError(f"Invalid student input dimension: {student_d} (must equal the teacher's d = {d})")
    hidden = [validation.count(f"teacher width {i + 1}", w) for i, w in enumerate(teacher_hidden)]
    if not hidden:
        raise ValueError("Invalid teacher widths: need at least one hidden layer")
    layout = MLP((d, *hidden, 1), biases=False)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, _TEACHER_KEY, d, *hidden)))
    if len(hidden) == 1:
        W = unit_sphere(hidden[0], d, rng)
        a = rng.choice(np.array([-1.0, 1.0]), size=(1, hidden[0]))
        teacher = layout.pack([(W, None), (a, None)])
    else:
        teacher = layout.pack([(rng.standard_normal((layout.widths[l + 1], layout.widths[l])), None)
                               for l in range(layout.n_layers)])
    X = unit_sphere(n, d, rng)
    X_test = unit_sphere(n_test, d, rng)
    return TeacherStudentData(X, layout.predict(teacher, X), X_test, layout.predict(teacher, X_test), teacher, layout)


# ------------------------------------------------------------------ interleaved spirals (seed 001)

_SPIRALS_KEY = streams.KEYS["data.spirals"]


@dataclass(frozen=True)
class ClassificationData:
    """Train and validation sets of a K-class problem (``y`` integer labels in ``0..K−1``)."""

    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    n_classes: int


def _spiral_points(rng: np.random.Generator, n: int, classes: int, turns: float, noise: float):
    y = np.arange(n, dtype=np.int64) % classes
    r = np.sqrt(rng.uniform(0.0, 1.0, n))          # uniform density along the arm's area
    phase = 2.0 * np.pi * turns * r + 2.0 * np.pi * y / classes
    X = np.stack([r * np.cos(phase), r * np.sin(phase)], axis=1) + noise * rng.standard_normal((n, 2))
    perm = rng.permutation(n)
    return X[perm], y[perm]


def spirals(n: int = 1000, *, classes: int = 2, turns: float = 1.5, noise: float = 0.05,
            n_val: int | None = None, seed: int = 0) -> ClassificationData:
    """K interleaved spirals in the plane (the problem set's data set, seed 001).

    Point ``i`` of class ``k`` sits at radius ``r = √u`` (``u ~ U(0, 1)``) and angle
    ``2π·turns·r + 2πk/K``, plus isotropic Gaussian noise of standard deviation ``noise``. The
    difficulty knobs are ``n``, ``turns`` (how often the arms wind around each other) and
    ``noise``. Classes are balanced; the validation set (``n_val``, default ``n``) is drawn
    independently from the same distribution.
    """
    n = validation.count("n", n, minimum=2)
    classes = validation.count("classes", classes, minimum=2)
    turns = validation.positive("turns", turns)
    noise = validation.non_negative("noise", noise)
    n_val = n if n_val is None else validation.count("n_val", n_val, minimum=1)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, _SPIRALS_KEY)))
    X, y = _spiral_points(rng, n, classes, turns, noise)
    X_val, y_val = _spiral_points(rng, n_val, classes, turns, noise)
    return ClassificationData(X, y, X_val, y_val, classes)


def digits(*, n_val_fraction: float = 0.3, seed: int = 0) -> ClassificationData:
    """scikit-learn's bundled 8×8 digits (1797 images, 10 classes; no download), pixels scaled
    to [0, 1] and split at random into train/validation (scikit-learn is a runtime dependency)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("Invalid data set: 'digits' needs scikit-learn (pip install scikit-learn)") from None
    frac = validation.in_interval("n_val_fraction", n_val_fraction, 0.0, 1.0, closed_low=False)
    bunch = load_digits()
    X = bunch.data.astype(np.float64) / 16.0
    y = bunch.target.astype(np.int64)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, _SPIRALS_KEY, 1)))
    perm = rng.permutation(len(y))
    n_val = int(round(frac * len(y)))
    val, train = perm[:n_val], perm[n_val:]
    return ClassificationData(X[train], y[train], X[val], y[val], 10)
