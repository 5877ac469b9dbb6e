"""Data sets, deterministic from a seed: one module per family, every public name re-exported here.

Every generator takes an explicit ``seed`` (a ``numpy.random.SeedSequence`` entropy, through the stream
table of :mod:`dyntools.engine.streams`) and returns plain arrays, so the same seed gives the same data
on every machine.

=========================================  ======================================================================
module                                     family
=========================================  ======================================================================
:mod:`~dyntools.data.containers`           the frozen dataclasses the sets come in
:mod:`~dyntools.data.sparse_linear`        sparse linear regression; the diagonal-net paper's data (seed 004)
:mod:`~dyntools.data.one_dimensional`      the 1-D regression task of twelve points (issue 7)
:mod:`~dyntools.data.teachers`             teacher–student regression on the unit sphere (issue 7)
:mod:`~dyntools.data.interleaved_spirals`  K interleaved spirals in the plane (seed 001)
:mod:`~dyntools.data.handwritten_digits`   scikit-learn's 8×8 digits, split at random
:mod:`~dyntools.data.voronoi`              the Voronoi classification environment (seed 000)
:mod:`~dyntools.data.image_sets`           image files on disk → seeded subsets scaled to [0, 1]
:mod:`~dyntools.data.image_formats`        the image sets by their command-line name → their readers
:mod:`~dyntools.data.idx_files`            MNIST and Fashion-MNIST from their IDX files (gzipped or not)
:mod:`~dyntools.data.cifar_batches`        CIFAR-10 from its python batches (a restricted unpickler)
:mod:`~dyntools.data.modular`              ``a ∘ b mod p`` tables split into train and test (grokking, issue 42)
=========================================  ======================================================================

No module is named after the function it holds, so ``dyntools.data.spirals`` is always the function.
"""

from __future__ import annotations

from dyntools.data import voronoi  # the module (``dt.data.voronoi.voronoi(...)``)
from dyntools.data.cifar_batches import cifar10
from dyntools.data.containers import ClassificationData, RegressionData, TeacherStudentData
from dyntools.data.handwritten_digits import digits
from dyntools.data.idx_files import fashion_mnist, mnist
from dyntools.data.image_formats import IMAGE_SETS, image_set
from dyntools.data.interleaved_spirals import spirals
from dyntools.data.modular import modular_arithmetic
from dyntools.data.one_dimensional import REGRESSION_1D_X, REGRESSION_1D_Y, regression_1d
from dyntools.data.sparse_linear import (
    PAPER_DATA_SEED,
    PAPER_INDEX_SEED,
    PAPER_SIZES,
    paper_diag_net_data,
    paper_sgd_indices,
    sparse_regression,
)
from dyntools.data.teachers import teacher_student, unit_sphere

__all__ = [
    "ClassificationData", "RegressionData", "TeacherStudentData",
    "sparse_regression", "paper_diag_net_data", "paper_sgd_indices", "PAPER_DATA_SEED", "PAPER_INDEX_SEED",
    "PAPER_SIZES", "regression_1d", "REGRESSION_1D_X", "REGRESSION_1D_Y", "teacher_student", "unit_sphere",
    "spirals", "digits", "voronoi", "mnist", "fashion_mnist", "cifar10", "image_set", "IMAGE_SETS",
    "modular_arithmetic",
]
