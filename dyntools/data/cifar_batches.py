"""CIFAR-10 from its published "python version" batches, without running the code a pickle may hold.

**The format** (Krizhevsky's CIFAR page, ``cifar-10-python.tar.gz`` unpacked): a directory
``cifar-10-batches-py`` with ``data_batch_1`` … ``data_batch_5`` (10 000 images each, the 50 000 training
images) and ``test_batch`` (10 000 test images). Each is a pickled dict (written by Python 2: keys are byte
strings) whose ``b"data"`` is a ``uint8`` array N × 3072 — one row per 32 × 32 colour image, the 1024 red
pixels first, then green, then blue, each row-major — and whose ``b"labels"`` is a list of N integers in 0…9.

**Safety.** Unpickling runs whatever callables a file names, so a pickle is code. These batches are read by
a restricted unpickler (:class:`BatchUnpickler`) that resolves only the few names a NumPy array needs
(``numpy.ndarray``, ``numpy.dtype``, NumPy's ``_reconstruct``, ``_codecs.encode``) and refuses any other, then
accepts only a dict with those keys and dtypes. Even so: only point dyntools at files you trust.

**Size cap.** A batch whose unpickling would need more than the machine's available memory
(:data:`UNPICKLE_FACTOR` × its size against :func:`dyntools.memory.available_bytes`) is refused, naming the file
and the limit, before it is read; an array the pickle declares larger than the file is refused before it is
allocated.

A missing or damaged batch (truncated, another object, another shape or dtype, a label outside 0…9) is refused
with a ``ValueError`` naming the file and the expected layout. ``data_dir`` may be the
``cifar-10-batches-py`` directory itself or the one that contains it. Images come flattened (N, 3072) in the
file's channel-major order, pixel / 255; subsets as :mod:`~dyntools.data.image_sets` draws them.
"""

from __future__ import annotations

import codecs
import io
import pickle
from pathlib import Path

import numpy as np

from dyntools import memory
from dyntools.data.containers import ClassificationData
from dyntools.data.image_sets import READER_SECTIONS, assemble
from dyntools.docstrings import with_sections

N_CLASSES = 10
PIXELS = 3 * 32 * 32
SUBDIR = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
LAYOUT = (f"CIFAR-10's python batches {', '.join(TRAIN_BATCHES)}, {TEST_BATCH} in DIR or DIR/{SUBDIR}: each a "
          "pickled dict with b'data' uint8 N×3072 and b'labels' N integers in 0…9")

#: the only globals a batch may name, and what they resolve to
_ALLOWED = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
            ("numpy.core.multiarray", "_reconstruct"): np.ndarray.__reduce__(np.zeros(0))[0],
            ("numpy._core.multiarray", "_reconstruct"): np.ndarray.__reduce__(np.zeros(0))[0],
            ("_codecs", "encode"): codecs.encode}


#: what unpickling a batch holds at its peak, per byte of the file: the file's bytes, the latin-1 text of the
#: array's data (``_codecs.encode``'s argument, one byte per character) and the bytes it encodes to
UNPICKLE_FACTOR = 3


class BatchUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals of :data:`_ALLOWED` (those of a pickled NumPy array); an
    array it reconstructs may hold at most ``limit`` elements (a pickle naming a larger shape is refused before
    anything is allocated: a batch's arrays cannot be larger than its file)."""

    def __init__(self, file, *, limit: int | None = None, **kwargs):
        super().__init__(file, **kwargs)
        self.limit = limit

    def find_class(self, module: str, name: str):
        try:
            found = _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR-10 batch") from None
        return self._capped(found) if name == "_reconstruct" and self.limit is not None else found

    def _capped(self, reconstruct):
        def capped(subtype, shape, dtype):
            size = int(np.prod(np.asarray(shape, dtype=object))) if np.ndim(shape) else int(shape)
            if size > self.limit:
                raise pickle.UnpicklingError(f"an array of {size} elements, more than its file's {self.limit} bytes")
            return reconstruct(subtype, shape, dtype)
        return capped


def _damaged(path: Path, what: str) -> ValueError:
    return ValueError(f"Invalid data file: {path}: {what} (expected {LAYOUT})")


def batch_dir(data_dir) -> Path:
    """``data_dir`` if it holds ``test_batch``, else ``data_dir/cifar-10-batches-py`` if that does."""
    d = Path(data_dir).expanduser()
    return d / SUBDIR if not (d / TEST_BATCH).is_file() and (d / SUBDIR / TEST_BATCH).is_file() else d


def read_batch(path) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, 3072)`` and labels ``(N,)`` (both ``uint8``) of one batch file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Invalid data file: {path} missing (expected {LAYOUT})")
    size = path.stat().st_size
    free = memory.available_bytes()
    if free is not None and UNPICKLE_FACTOR * size > free:
        raise ValueError(f"Invalid data file: {path}: {size} bytes need about {UNPICKLE_FACTOR * size} bytes to "
                         f"unpickle, more than the {free} bytes of memory available (the limit); not read")
    try:
        obj = BatchUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes", limit=size).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            OSError, UnicodeDecodeError, MemoryError) as exc:
        raise _damaged(path, f"not a readable batch ({type(exc).__name__}: {exc})") from None
    if not isinstance(obj, dict) or b"data" not in obj or b"labels" not in obj:
        keys = sorted(map(repr, obj)) if isinstance(obj, dict) else type(obj).__name__
        raise _damaged(path, f"holds {keys}, not a dict with b'data' and b'labels'")
    images, labels = obj[b"data"], obj[b"labels"]
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 2 or images.shape[1] != PIXELS:
        what = (f"{images.dtype} array of shape {images.shape}" if isinstance(images, np.ndarray)
                else type(images).__name__)
        raise _damaged(path, f"b'data' is a {what}")
    if not isinstance(labels, list | np.ndarray) or not all(isinstance(v, int | np.integer) for v in labels):
        raise _damaged(path, "b'labels' is not a list of integers")
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    if labels.size != images.shape[0]:
        raise _damaged(path, f"{labels.size} labels for {images.shape[0]} images")
    if labels.size and (labels.min() < 0 or labels.max() >= N_CLASSES):
        raise _damaged(path, f"labels outside 0…9 (range {labels.min()}…{labels.max()})")
    return np.ascontiguousarray(images), labels.astype(np.uint8)


def read_batches(data_dir, names) -> tuple[np.ndarray, np.ndarray]:
    """The batches ``names`` of :func:`batch_dir` ``(data_dir)``, concatenated in that order."""
    d = batch_dir(data_dir)
    parts = [read_batch(d / name) for name in names]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@with_sections(READER_SECTIONS, pixels=3072)
def cifar10(data_dir, *, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
            dtype="float64") -> ClassificationData:
    """CIFAR-10 (50 000 train / 10 000 test colour images of 32 × 32, 10 classes) from its python batches in
    ``data_dir`` (module docstring): ``X`` (n_train, 3072) in [0, 1], ``X_val`` the test images; ``n_train`` /
    ``n_test`` draw seeded subsets (:mod:`~dyntools.data.image_sets`), ``None`` keeps all."""
    return assemble(read_batches(data_dir, TRAIN_BATCHES), read_batches(data_dir, (TEST_BATCH,)), N_CLASSES,
                    n_train=n_train, n_test=n_test, seed=seed, dtype=dtype)
