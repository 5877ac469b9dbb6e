"""The containers the data sets come in: frozen dataclasses of plain arrays (train and held-out sets)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RegressionData:
    """Train and test sets of a linear teacher ``y = Xβ* (+ noise)``.

    Parameters
    ----------
    X, y : ndarray
        Training inputs (n, d) and labels (n,).
    X_test, y_test : ndarray
        Test inputs (n_test, d) and noiseless labels (n_test,).
    beta_star : ndarray
        The teacher's coefficients :math:`β^*` (d,).
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    beta_star: np.ndarray


@dataclass(frozen=True)
class TeacherStudentData:
    """Train/test sets labelled by a ReLU teacher network ``y = h_teacher(x)``.

    ``teacher`` is the teacher's flat parameter vector for ``teacher_layout``
    (a regression :class:`dyntools.models.mlp.MLP` without biases).

    Parameters
    ----------
    X, y : ndarray
        Training inputs (n, d) and labels (n,).
    X_test, y_test : ndarray
        Test inputs and labels.
    teacher : ndarray
        The teacher's flat parameter vector.
    teacher_layout : object
        The teacher's layout (an MLP's), which reads ``teacher``.
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    teacher: np.ndarray
    teacher_layout: object


@dataclass(frozen=True)
class ClassificationData:
    """Train and validation sets of a K-class problem (``y`` integer labels in ``0..K−1``).

    Parameters
    ----------
    X, y : ndarray
        Training inputs (n, d) and integer labels (n,).
    X_val, y_val : ndarray
        Validation inputs and labels.
    n_classes : int
        The number of classes K.
    """

    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    n_classes: int
