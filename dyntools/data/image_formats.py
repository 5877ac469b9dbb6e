"""The image data sets by their command-line name (``--dataset mnist``) → the function that reads them.

The readers are imported, not named in strings: :mod:`~dyntools.data.idx_files` (MNIST, Fashion-MNIST) and
:mod:`~dyntools.data.cifar_batches` (CIFAR-10) both draw their subsets through :mod:`~dyntools.data.image_sets`,
which therefore knows none of them.
"""

from __future__ import annotations

from dyntools import validation
from dyntools.data.cifar_batches import cifar10
from dyntools.data.containers import ClassificationData
from dyntools.data.idx_files import fashion_mnist, mnist

#: the command line's names of the image data sets → the function that reads one from a directory
IMAGE_SETS = {"mnist": mnist, "fashion-mnist": fashion_mnist, "cifar10": cifar10}


def image_set(name: str, data_dir, **kwargs) -> ClassificationData:
    """The image data set ``name`` (a key of :data:`IMAGE_SETS`) read from ``data_dir``; ``kwargs`` go to
    its reader (``n_train``, ``n_test``, ``seed``, ``dtype``).

    Parameters
    ----------
    name : {"mnist", "fashion-mnist", "cifar10"}
        The data set, by its command-line name.
    data_dir : str or path-like
        The folder holding its files.
    **kwargs
        Passed to the reader: ``n_train``, ``n_test``, ``seed``, ``dtype`` (:func:`~dyntools.data.mnist`).

    Returns
    -------
    ClassificationData
    """
    validation.one_of("dataset", name, tuple(IMAGE_SETS))
    return IMAGE_SETS[name](data_dir, **kwargs)
