"""Interleaved spirals in the plane (the problem set's data set, seed 001)."""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import ClassificationData
from dyntools.engine import streams

_SPIRALS_KEY = streams.KEYS["data.spirals"]


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

    Parameters
    ----------
    n : int, default 1000
        Training points (≥ 2).
    classes : int, default 2
        The number of spirals K (≥ 2).
    turns : float, default 1.5
        Turns of each arm (> 0).
    noise : float, default 0.05
        Standard deviation of the Gaussian noise (≥ 0).
    n_val : int, optional
        Validation points (``n`` by default).
    seed : int, default 0
        The seed of the data's stream.

    Returns
    -------
    ClassificationData
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
