"""MNIST and Fashion-MNIST from their published IDX files (gzipped or not), e.g. ``dt.data.mnist("~/mnist")``.

**The IDX format** (LeCun et al.'s MNIST page; Fashion-MNIST keeps it and the file names): a 4-byte magic
number ``00 00 tt dd`` — two zero bytes, the element type ``tt`` (``0x08``: unsigned byte, the only one these
sets use) and the number of dimensions ``dd`` —, then ``dd`` sizes as big-endian unsigned 32-bit integers, then
the ``∏ sizes`` elements in row-major order. Image files are ``0x00000803`` (N × 28 × 28), label files
``0x00000801`` (N). A directory holds the four files

    train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte

each possibly gzipped (the same name + ``.gz``, as published; recognised by gzip's magic bytes ``1f 8b``).
A missing file, a wrong magic number, a size other than 28 × 28, a file shorter or longer than its header
says, label counts that differ from image counts or labels outside 0…9 are refused with a ``ValueError``
naming the file and the expected layout. **Size cap**: the content is read in chunks and never past the length
the header declares (+ 1 byte, to see a longer file), so a gzip bomb decompresses no further than that; a
header declaring more bytes than the machine has available (:func:`dyntools.memory.available_bytes`) is refused,
naming the limit, before the data are read. Images are returned flattened (N, 784), row-major, pixel / 255;
subsets as :mod:`~dyntools.data.image_sets` draws them.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from dyntools.data.containers import ClassificationData
from dyntools.data.image_sets import READER_SECTIONS, assemble
from dyntools.docstrings import with_sections

SIDE = 28
N_CLASSES = 10
IMAGES_MAGIC, LABELS_MAGIC = 0x00000803, 0x00000801
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
GZIP_MAGIC = b"\x1f\x8b"
#: bytes decompressed (or read) per call: memory held beyond the declared content stays below this
CHUNK = 1 << 20
LAYOUT = ("IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
          "t10k-labels-idx1-ubyte (each optionally .gz)")


def _damaged(path: Path, what: str) -> ValueError:
    return ValueError(f"Invalid data file: {path}: {what} (expected {LAYOUT}: magic 0x00000803 with big-endian "
                      f"sizes N, 28, 28 for images, 0x00000801 with N for labels, then N·784 or N bytes)")


def find_file(data_dir, name: str) -> Path:
    """``data_dir/name`` or ``data_dir/name.gz`` (``ValueError`` naming both when neither exists)."""
    d = Path(data_dir).expanduser()
    for candidate in (d / name, d / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise ValueError(f"Invalid data file: {d / name} (or {name}.gz) missing (expected {LAYOUT} in {d})")


def open_content(path: Path):
    """A binary reader of the file's content: decompressing (gzip members concatenated) when it starts with
    gzip's magic ``1f 8b``, the file itself otherwise. Nothing is read beyond what the caller asks for."""
    with open(path, "rb") as fh:
        zipped = fh.read(2) == GZIP_MAGIC
    return gzip.open(path, "rb") if zipped else open(path, "rb")


def read_upto(fh, n: int) -> bytearray:
    """At most ``n`` bytes of ``fh``, read in chunks of :data:`CHUNK` (the buffer grows with what arrives, so a
    file shorter than ``n`` never costs ``n`` bytes)."""
    buf = bytearray()
    while len(buf) < n:
        chunk = fh.read(min(CHUNK, n - len(buf)))
        if not chunk:
            break
        buf += chunk
    return buf


def check_fits(path: Path, declared: int, what: str) -> None:
    """Refuse ``declared`` bytes (``what`` says where the size comes from) beyond the machine's available
    memory (:func:`dyntools.memory.available_bytes`), naming the file and the limit."""
    from dyntools import memory

    free = memory.available_bytes()
    if free is not None and declared > free:
        raise ValueError(f"Invalid data file: {path}: {what} = {declared} bytes, more than the {free} bytes of "
                         f"memory available (the limit); not read")


def read_idx(path, magic: int) -> np.ndarray:
    """The ``uint8`` array of the IDX file ``path`` whose magic number must be ``magic`` (module docstring).

    The content is read in chunks and never past what the header declares: at most ``header + ∏ sizes + 1``
    bytes are decompressed (a gzip bomb stops there), and a header declaring more than the available memory is
    refused before the data are read."""
    path = Path(path)
    try:
        with open_content(path) as fh:
            head = read_upto(fh, 4)
            if len(head) < 4:
                raise _damaged(path, f"{len(head)} bytes, shorter than the magic number")
            (found,) = struct.unpack(">I", head)
            if found != magic:
                raise _damaged(path, f"magic number 0x{found:08X}, expected 0x{magic:08X}")
            ndim = magic & 0xFF
            header = 4 + 4 * ndim
            head += read_upto(fh, header - 4)
            if len(head) < header:
                raise _damaged(path, f"{len(head)} bytes, shorter than its {header}-byte header")
            shape = struct.unpack(f">{ndim}I", head[4:header])
            expected = int(np.prod(shape, dtype=np.int64))
            sizes = f"{' × '.join(map(str, shape))} = {expected}"
            check_fits(path, header + expected, f"its header declares {sizes} bytes of data, with the header")
            data = read_upto(fh, expected + 1)          # one byte more: a longer file is seen, nothing beyond
    except (OSError, EOFError, zlib.error) as exc:      # gzip.BadGzipFile is an OSError
        raise _damaged(path, f"unreadable ({exc})") from None
    if len(data) > expected:
        raise _damaged(path, f"more data than its header declares ({sizes} bytes); read stopped there")
    if len(data) < expected:
        raise _damaged(path, f"{len(data)} bytes of data, its header says {sizes}")
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def read_part(data_dir, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, 784)`` and labels ``(N,)`` (both ``uint8``) of ``part`` ("train" or "test")."""
    images_name, labels_name = FILES[part]
    images_path, labels_path = find_file(data_dir, images_name), find_file(data_dir, labels_name)
    images, labels = read_idx(images_path, IMAGES_MAGIC), read_idx(labels_path, LABELS_MAGIC)
    if images.shape[1:] != (SIDE, SIDE):
        raise _damaged(images_path, f"images of {images.shape[1]} × {images.shape[2]} pixels, expected 28 × 28")
    if labels.shape[0] != images.shape[0]:
        raise _damaged(labels_path, f"{labels.shape[0]} labels for the {images.shape[0]} images of {images_path.name}")
    if labels.size and labels.max() >= N_CLASSES:
        raise _damaged(labels_path, f"label {int(labels.max())} outside 0…9")
    return images.reshape(images.shape[0], SIDE * SIDE), labels


def _idx_set(data_dir, n_train, n_test, seed, dtype) -> ClassificationData:
    return assemble(read_part(data_dir, "train"), read_part(data_dir, "test"), N_CLASSES, n_train=n_train,
                    n_test=n_test, seed=seed, dtype=dtype)


@with_sections(READER_SECTIONS, pixels=784)
def mnist(data_dir, *, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
          dtype="float64") -> ClassificationData:
    """MNIST's handwritten digits (60 000 train / 10 000 test images of 28 × 28, 10 classes) from the IDX
    files in ``data_dir`` (module docstring): ``X`` (n_train, 784) in [0, 1], ``X_val`` the test images;
    ``n_train`` / ``n_test`` draw seeded subsets (:mod:`~dyntools.data.image_sets`), ``None`` keeps all."""
    return _idx_set(data_dir, n_train, n_test, seed, dtype)


@with_sections(READER_SECTIONS, pixels=784)
def fashion_mnist(data_dir, *, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
                  dtype="float64") -> ClassificationData:
    """Zalando's Fashion-MNIST (clothing, the same sizes, file names and IDX format as MNIST) from
    ``data_dir``; arguments and result as :func:`mnist`."""
    return _idx_set(data_dir, n_train, n_test, seed, dtype)
