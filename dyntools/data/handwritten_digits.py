"""scikit-learn's bundled 8×8 handwritten digits, split at random into train and validation sets."""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import ClassificationData
from dyntools.engine import streams

#: The split's stream: sub-stream 1 of the spirals' key (where it has always been drawn).
_SPLIT_KEY = (streams.KEYS["data.spirals"], 1)


def digits(*, n_val_fraction: float = 0.3, seed: int = 0) -> ClassificationData:
    """scikit-learn's bundled 8×8 digits (1797 images, 10 classes; no download), pixels scaled
    to [0, 1] and split at random into train/validation (scikit-learn is a runtime dependency).

    Parameters
    ----------
    n_val_fraction : float, default 0.3
        The validation set's share of the 1797 images, in (0, 1].
    seed : int, default 0
        The seed of the split.

    Returns
    -------
    ClassificationData
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("Invalid data set: 'digits' needs scikit-learn (pip install scikit-learn)") from None
    frac = validation.in_interval("n_val_fraction", n_val_fraction, 0.0, 1.0, closed_low=False)
    bunch = load_digits()
    X = bunch.data.astype(np.float64) / 16.0
    y = bunch.target.astype(np.int64)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, *_SPLIT_KEY)))
    perm = rng.permutation(len(y))
    n_val = int(round(frac * len(y)))
    val, train = perm[:n_val], perm[n_val:]
    return ClassificationData(X[train], y[train], X[val], y[val], 10)
