"""Andriushchenko et al. (2023)'s 1-D regression task (issue 7, seed 004): twelve points on a line."""

from __future__ import annotations

import numpy as np

#: Inputs and labels of the paper's 1-D regression task (12 points).
REGRESSION_1D_X = (np.arange(12) - 5.5) / 4.0 + 0.07
REGRESSION_1D_Y = 0.345 + np.array([-2, 1.5, 0, 0, 2, 1, 0, -1, 0, 1, 2, -1], dtype=np.float64)


def regression_1d() -> tuple[np.ndarray, np.ndarray]:
    """Andriushchenko et al. (2023)'s 1-D regression: ``x = (−5.5, −4.5, …, 5.5)/4 + 0.07``,
    ``y = 0.345 + (−2, 1.5, 0, 0, 2, 1, 0, −1, 0, 1, 2, −1)``. Returns ``X`` (12, 1) and ``y`` (12,)."""
    return REGRESSION_1D_X[:, None].copy(), REGRESSION_1D_Y.copy()
