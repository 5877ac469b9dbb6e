"""The Voronoi classification environment of seed 000 (a 2-D task that is hard for deep networks).

An environment is drawn from one seed (stream ``data.voronoi`` of :mod:`dyntools.engine.streams`):

1. ``k`` centers ``c_1 … c_k`` uniform in the box ``[−s, s]^D`` (``k`` given, or uniform on the
   integers of ``k_range``; the study: ``s = 100``, ``k ∈ {100, …, 150}``, ``D = 2``);
2. each center a label uniform in ``{0, …, C − 1}`` (the study: ``C = 2``);
3. ``n`` training points and ``n_test`` evaluation points uniform in the box;
4. every point labelled by the label of its cell under a *partition rule*.

Two partition rules are offered and named, because seed 000 uses two without saying so:

``"nearest"`` (the Voronoi partition the seed describes)
    ``cell(x) = argmin_j ‖x − c_j‖₂``;
``"projection"`` (the seed's "exact algorithm", and how the study's own code labels its points)
    ``cell(x) = argmin_j |xᵀc_j / ‖c_j‖₂² − 1|``.

The second is *not* a Voronoi partition: ``|xᵀc/‖c‖² − 1| = dist(x, H_c)/‖c‖`` where ``H_c`` is the
hyperplane through ``c`` orthogonal to ``c``, so a point is assigned to the center whose tangent
hyperplane is nearest relative to the center's norm. ``x = (1, 5)`` with ``c₁ = (1, 0)`` and
``c₂ = (0, 1)`` is an exact counterexample (projection picks ``c₁``, nearest picks ``c₂``;
``proofs/voronoi.py`` holds it as a refuted control). :func:`disagreement` measures how often the
two rules disagree on sampled points. Ties are broken by the lowest index (NumPy's ``argmin``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.engine import streams
from dyntools.models.voronoi_rules import RULES, cells  # noqa: F401  (re-exported: dt.data.voronoi.cells)


@dataclass(frozen=True)
class VoronoiData:
    """A drawn environment: centers, their labels, labelled train (``X, y``) and evaluation
    (``X_test, y_test``) points, and how they were made (``box`` = s, ``rule``, ``n_classes`` = C).

    Parameters
    ----------
    X, y : ndarray
        Training points (n, D) and labels (n,).
    X_test, y_test : ndarray
        Evaluation points and labels.
    centers : ndarray, shape (k, D)
        The cells' centers.
    center_labels : ndarray of int, shape (k,)
        Each center's label.
    n_classes : int
        C.
    box : float
        s: the box is ``[−s, s]^D``.
    rule : str
        How points were labelled (``"nearest"`` or ``"projection"``).
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    centers: np.ndarray
    center_labels: np.ndarray
    n_classes: int
    box: float
    rule: str

    @property
    def dim(self) -> int:
        return int(self.X.shape[1])

    @property
    def k(self) -> int:
        return int(self.centers.shape[0])

    def config(self) -> dict:
        return {"n": int(self.X.shape[0]), "n_test": int(self.X_test.shape[0]), "k": self.k, "dim": self.dim,
                "classes": self.n_classes, "box": self.box, "rule": self.rule}


def label_points(X, centers, center_labels, rule: str = "nearest") -> np.ndarray:
    """Labels of the rows of ``X``: ``center_labels[cell(x)]``.

    Parameters
    ----------
    X : ndarray, shape (m, D)
        The points.
    centers : ndarray, shape (k, D)
        The centers.
    center_labels : ndarray of int, shape (k,)
        Each center's label.
    rule : {"nearest", "projection"}, default "nearest"
        Which cell a point falls in.
    """
    return np.asarray(center_labels, dtype=np.int64)[cells(X, centers, rule)]


def disagreement(X, centers, center_labels=None) -> dict:
    """How often the two rules disagree on the points ``X``: the fraction of points put in a different
    *cell*, and (with ``center_labels``) the fraction given a different *label*.

    Parameters
    ----------
    X, centers
        As in :func:`label_points`.
    center_labels : ndarray of int, optional
        Each center's label (for the label disagreement).
    """
    a, b = cells(X, centers, "nearest"), cells(X, centers, "projection")
    out = {"cells": float(np.mean(a != b))}
    if center_labels is not None:
        lab = np.asarray(center_labels)
        out["labels"] = float(np.mean(lab[a] != lab[b]))
    return out


def majority_baseline(y_train, y_eval=None) -> float:
    """Accuracy of predicting the most frequent training class (on ``y_eval``, default ``y_train``).

    Parameters
    ----------
    y_train : array_like of int
        The training labels.
    y_eval : array_like of int, optional
        The labels it is scored on (``y_train`` by default).
    """
    y_train = np.asarray(y_train, dtype=np.int64)
    top = np.bincount(y_train).argmax()
    y_eval = y_train if y_eval is None else np.asarray(y_eval, dtype=np.int64)
    return float(np.mean(y_eval == top))


def check_k_range(k_range) -> tuple[int, int]:
    """The range of the number of cells ``k`` as a validated pair of ints ``1 ≤ k_min ≤ k_max``.

    Parameters
    ----------
    k_range : pair of int
        ``(k_min, k_max)``.

    Raises
    ------
    ValueError
        When it is not a pair of integers with ``1 ≤ k_min ≤ k_max``.
    """
    try:
        lo, hi = (int(v) for v in k_range)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid k_range: {k_range!r} (expected a pair (k_min, k_max))") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"Invalid k_range: {k_range!r} (need 1 <= k_min <= k_max)")
    return lo, hi


def voronoi(n: int = 10000, *, n_test: int = 2000, k: int | None = None, k_range=(100, 150), classes: int = 2,
            dim: int = 2, box: float = 100.0, rule: str = "nearest", seed: int = 0,
            stream_key: tuple[int, ...] = ()) -> VoronoiData:
    """Draw the environment of seed 000 (see the module docstring).

    Parameters
    ----------
    n, n_test : int, default 10000, 2000
        Training and evaluation points (uniform in the box).
    k : int, optional
        The number of centers; None draws it uniformly from ``k_range``.
    k_range : pair of int, default (100, 150)
        The inclusive range of ``k`` when it is drawn.
    classes : int, default 2
        C ≥ 2 labels.
    dim : int, default 2
        D ≥ 1.
    box : float, default 100.0
        s > 0: the box is ``[−s, s]^D``.
    rule : {"nearest", "projection"}, default "nearest"
        Voronoi cells, or the seed's exact algorithm.
    seed : int, default 0
        The root seed.
    stream_key : tuple of int, default ()
        Namespaces the stream (e.g. ``(i,)`` for environment i of an ensemble).

    Returns
    -------
    VoronoiData

    Raises
    ------
    ValueError
        Naming the parameter, for D < 1, k < 1 or k > n, C < 2, s ≤ 0.
    """
    dim = validation.count("dim (D)", dim)
    n = validation.count("n", n)
    n_test = validation.count("n_test", n_test)
    classes = validation.count("classes (C)", classes, minimum=2)
    box = validation.positive("box (s)", box)
    validation.one_of("rule", rule, RULES)
    if k is not None:
        k = validation.count("k", k)
        if k > n:
            raise ValueError(f"Invalid k: {k} (must be <= n = {n}, the number of points)")
    else:
        lo, hi = check_k_range(k_range)
        if lo > n:
            raise ValueError(f"Invalid k_range: {k_range!r} (k_min must be <= n = {n}, the number of points)")
        hi = min(hi, n)
    gen = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, streams.key("data.voronoi"), *stream_key)))
    if k is None:
        k = int(gen.integers(lo, hi + 1))
    centers = gen.uniform(-box, box, size=(k, dim))
    center_labels = gen.integers(0, classes, size=k).astype(np.int64)
    X = gen.uniform(-box, box, size=(n, dim))
    X_test = gen.uniform(-box, box, size=(n_test, dim))
    return VoronoiData(X, label_points(X, centers, center_labels, rule), X_test,
                       label_points(X_test, centers, center_labels, rule), centers, center_labels, classes, box, rule)
