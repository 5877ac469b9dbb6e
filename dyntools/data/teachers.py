"""Teacher–student regression (issue 7, seed 004): inputs uniform on the unit sphere, labels from a ReLU teacher."""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import TeacherStudentData
from dyntools.engine import streams

_TEACHER_KEY = streams.KEYS["data.teacher"]


def unit_sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the unit sphere of ``R^d`` (normalized Gaussians).

    Parameters
    ----------
    n : int
        The number of points.
    d : int
        The dimension.
    rng : numpy.random.Generator
        The generator that draws them.
    """
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

    Parameters
    ----------
    n : int
        Training examples.
    d : int
        Input dimension.
    teacher_hidden : sequence of int
        The teacher's hidden widths (at least one layer).
    n_test : int, default 1000
        Test examples.
    seed : int, default 0
        The seed of the data's stream.
    student_d : int, optional
        The student's input dimension, checked equal to ``d``.

    Returns
    -------
    TeacherStudentData

    Raises
    ------
    ValueError
        When a size is not a positive integer, ``teacher_hidden`` is empty or ``student_d != d``.
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
