"""Image files on disk → a :class:`ClassificationData`: seeded subsets, pixels scaled to [0, 1].

The readers of the published formats (:mod:`~dyntools.data.idx_files` for MNIST and Fashion-MNIST,
:mod:`~dyntools.data.cifar_batches` for CIFAR-10) hand over ``uint8`` images ``(N, d)`` and integer labels;
this module takes a subset and scales it.

**Subsets.** ``n_train`` (``n_test``) images are drawn without replacement from the training (test) file,
uniformly, by ``Generator(PCG64(SeedSequence(seed, (KEYS["data.image-files"], part))))`` with part 0 for the
training set and 1 for the test set, and kept in file order. ``None`` keeps every image (in file order, no
draw), so the subset of a seed is the same on every machine and does not depend on the other part's size.
Only the chosen rows are converted to floating point (CIFAR-10's 50 000 × 3072 images in float64 would be
1.2 GB): ``x = pixel / 255``.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.data.containers import ClassificationData
from dyntools.engine import streams


def subset_rows(n_rows: int, n: int | None, seed: int, part: int) -> np.ndarray:
    """Indices (increasing) of ``n`` of ``n_rows`` rows drawn uniformly without replacement from the
    ``data.image-files`` stream, sub-stream ``part``; every row when ``n`` is ``None``."""
    if n is None:
        return np.arange(n_rows)
    n = validation.count("n_train" if part == 0 else "n_test", n)
    if n > n_rows:
        raise ValueError(f"Invalid {'n_train' if part == 0 else 'n_test'}: {n} (the file holds {n_rows} images)")
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, streams.key("data.image-files"), part)))
    return np.sort(rng.choice(n_rows, size=n, replace=False))


def assemble(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], n_classes: int, *,
             n_train: int | None, n_test: int | None, seed: int, dtype="float64") -> ClassificationData:
    """The seeded subsets of ``train = (images, labels)`` and ``test`` (module docstring) as a
    :class:`ClassificationData` with pixels ``/ 255`` in ``dtype`` (float64 or float32)."""
    seed = validation.seed(seed)
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"Invalid dtype: {dtype} (expected float64 or float32)")
    rows = subset_rows(len(train[1]), n_train, seed, 0), subset_rows(len(test[1]), n_test, seed, 1)
    (X, y), (Xt, yt) = ((imgs[r].astype(dtype) / dtype.type(255), labels[r].astype(np.int64))
                        for (imgs, labels), r in zip((train, test), rows))
    return ClassificationData(X, y, Xt, yt, n_classes)


#: the numpydoc sections every image reader shares (``{pixels}``: the length of a row of ``X``;
#: :func:`dyntools.docstrings.with_sections` appends them)
READER_SECTIONS = """Parameters
----------
data_dir : str or path-like
    The folder holding the files (``~`` expanded).
n_train, n_test : int, optional
    Sizes of the seeded subsets drawn without replacement from the training / test files (kept in file
    order); ``None`` keeps every image.
seed : int, default 0
    Root seed of the ``data.image-files`` stream the subsets are drawn from.
dtype : {{"float64", "float32"}}, default "float64"
    Floating type of ``X`` and ``X_val``.

Returns
-------
ClassificationData
    ``X`` the training images (n_train, {pixels}) scaled to [0, 1], ``y`` their labels 0…9, ``X_val`` /
    ``y_val`` the test images.

Raises
------
ValueError
    A file missing or damaged (named, with the expected layout), or a subset larger than the file.
"""
