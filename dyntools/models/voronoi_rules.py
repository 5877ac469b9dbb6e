"""The two partition rules of the Voronoi environment: which cell around the centers a point falls in.

``"nearest"`` (the Voronoi partition): ``cell(x) = argmin_j ‖x − c_j‖₂``; ``"projection"`` (seed 000's
"exact algorithm"): ``cell(x) = argmin_j |xᵀc_j / ‖c_j‖₂² − 1|``. Ties go to the lowest index (NumPy's
``argmin``). :mod:`dyntools.data.voronoi` labels the environment's points with them (its docstring says
why the second is not a Voronoi partition), and rung 0 of :class:`dyntools.models.voronoi.VoronoiLadder`
(the exact rule) predicts with them; the rules sit here, below both.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation

RULES = ("nearest", "projection")


def cells(X, centers, rule: str = "nearest") -> np.ndarray:
    """Index of the cell of every row of ``X`` under ``rule`` (see the module docstring).

    Evaluated in blocks of rows, so memory stays O(block × k)."""
    validation.one_of("rule", rule, RULES)
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    out = np.empty(X.shape[0], dtype=np.int64)
    if rule == "nearest":
        sq = np.sum(C * C, axis=1)
        for lo in range(0, X.shape[0], 4096):
            xb = X[lo:lo + 4096]
            # ‖x − c‖² = ‖x‖² − 2xᵀc + ‖c‖²; ‖x‖² is common to a row and does not change the argmin
            out[lo:lo + 4096] = np.argmin(sq[None, :] - 2.0 * (xb @ C.T), axis=1)
    else:
        U = C / np.sum(C * C, axis=1, keepdims=True)
        for lo in range(0, X.shape[0], 4096):
            out[lo:lo + 4096] = np.argmin(np.abs(X[lo:lo + 4096] @ U.T - 1.0), axis=1)
    return out
