"""MNIST / Fashion-MNIST IDX files and CIFAR-10 python batches: written here in exactly the published formats
(IDX magic numbers and big-endian sizes, gzipped or not; pickled dicts with b'data' uint8 N×3072 and b'labels'),
read back, subsampled through the stream table, and damaged files refused with the file named."""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyntools as dt
from dyntools.data import cifar_batches, idx_files, image_formats, image_sets
from dyntools.engine import streams

IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of a uint8 array: 00 00 08 ndim, the sizes as big-endian uint32, the bytes."""
    array = np.asarray(array, dtype=np.uint8)
    return bytes([0, 0, 8, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_idx_set(d, n_train=12, n_test=7, *, gz=False, seed=0):
    """Four IDX files of random images/labels in ``d``; returns the arrays written."""
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8)}
    for name, arr in arrays.items():
        raw = idx_bytes(arr)
        if gz:
            (d / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (d / name).write_bytes(raw)
    return arrays


def cifar_batch(images, labels) -> bytes:
    """A batch as CIFAR-10 publishes it: a pickled dict with byte-string keys (protocol 2)."""
    return pickle.dumps({b"batch_label": b"testing batch 1 of 1", b"labels": [int(v) for v in labels],
                         b"data": np.asarray(images, dtype=np.uint8), b"filenames": [b"x.png"] * len(labels)},
                        protocol=2)


def write_cifar(d, per_batch=4, n_test=5, seed=0):
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = {}
    for name in (*cifar_batches.TRAIN_BATCHES, cifar_batches.TEST_BATCH):
        n = n_test if name == cifar_batches.TEST_BATCH else per_batch
        out[name] = (rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n))
        (d / name).write_bytes(cifar_batch(*out[name]))
    return out


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("reader", [dt.data.mnist, dt.data.fashion_mnist])
def test_idx_files_load_exactly(tmp_path, gz, reader):
    arrays = write_idx_set(tmp_path, gz=gz)
    d = reader(tmp_path)
    assert d.X.shape == (12, 784) and d.X_val.shape == (7, 784) and d.n_classes == 10
    np.testing.assert_array_equal(d.X * 255, arrays["train-images-idx3-ubyte"].reshape(12, 784))
    np.testing.assert_array_equal(d.y, arrays["train-labels-idx1-ubyte"])
    np.testing.assert_array_equal(d.X_val * 255, arrays["t10k-images-idx3-ubyte"].reshape(7, 784))
    np.testing.assert_array_equal(d.y_val, arrays["t10k-labels-idx1-ubyte"])
    assert d.X.dtype == np.float64 and d.y.dtype == np.int64 and 0.0 <= d.X.min() and d.X.max() <= 1.0


def test_a_gzipped_file_is_recognised_by_its_magic_bytes_under_either_name(tmp_path):
    arrays = write_idx_set(tmp_path)
    name = "train-images-idx3-ubyte"
    (tmp_path / name).write_bytes(gzip.compress((tmp_path / name).read_bytes()))
    np.testing.assert_array_equal(dt.data.mnist(tmp_path).X * 255, arrays[name].reshape(12, 784))


def test_cifar_batches_load_exactly_from_the_directory_or_its_parent(tmp_path):
    sub = tmp_path / "cifar-10-batches-py"
    sub.mkdir()
    written = write_cifar(sub)
    for where in (sub, tmp_path):
        d = dt.data.cifar10(where, dtype="float32")
        imgs = np.concatenate([written[n][0] for n in cifar_batches.TRAIN_BATCHES])
        labels = np.concatenate([written[n][1] for n in cifar_batches.TRAIN_BATCHES])
        assert d.X.shape == (20, 3072) and d.X.dtype == np.float32
        np.testing.assert_array_equal(np.round(d.X * 255).astype(np.uint8), imgs)
        np.testing.assert_array_equal(d.y, labels)
        np.testing.assert_array_equal(np.round(d.X_val * 255).astype(np.uint8), written["test_batch"][0])


@settings(max_examples=25, deadline=None)
@given(n_rows=st.integers(1, 200), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_subsets_are_seeded_sorted_distinct_and_independent_of_the_other_part(n_rows, data, seed):
    n = data.draw(st.integers(1, n_rows))
    rows = image_sets.subset_rows(n_rows, n, seed, 0)
    assert rows.size == n and np.all(np.diff(rows) > 0) and 0 <= rows[0] and rows[-1] < n_rows
    np.testing.assert_array_equal(rows, image_sets.subset_rows(n_rows, n, seed, 0))
    assert image_sets.subset_rows(n_rows, None, seed, 0).tolist() == list(range(n_rows))


def test_subsets_come_from_the_image_files_stream(tmp_path):
    write_idx_set(tmp_path, n_train=50, n_test=30)
    a = dt.data.mnist(tmp_path, n_train=10, n_test=5, seed=3)
    b = dt.data.mnist(tmp_path, n_train=10, n_test=20, seed=3)      # the other part's size does not matter
    np.testing.assert_array_equal(a.X, b.X)
    full = dt.data.mnist(tmp_path)
    seq = np.random.SeedSequence(3, spawn_key=(streams.key("data.image-files"), 0))
    gen = np.random.Generator(np.random.PCG64(seq))
    rows = np.sort(gen.choice(50, size=10, replace=False))
    np.testing.assert_array_equal(a.X, full.X[rows])
    np.testing.assert_array_equal(a.y, full.y[rows])
    assert not np.array_equal(a.X, dt.data.mnist(tmp_path, n_train=10, n_test=5, seed=4).X)
    with pytest.raises(ValueError, match="n_train: 51"):
        dt.data.mnist(tmp_path, n_train=51)


def damage(path, how):
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[:-1])
    elif how == "longer":
        path.write_bytes(raw + b"\0")
    elif how == "magic":
        path.write_bytes(b"\0\0\x09" + raw[3:])
    elif how == "header":
        path.write_bytes(raw[:6])
    elif how == "bad-gzip":
        path.write_bytes(b"\x1f\x8b" + raw[2:])


@pytest.mark.parametrize("name", IDX_NAMES)
@pytest.mark.parametrize("how", ["truncated", "longer", "magic", "header", "bad-gzip"])
def test_damaged_idx_files_are_refused_naming_the_file(tmp_path, name, how):
    write_idx_set(tmp_path)
    damage(tmp_path / name, how)
    with pytest.raises(ValueError, match=f"Invalid data file: .*{name}.*expected IDX files") as err:
        dt.data.mnist(tmp_path)
    assert "\n" not in str(err.value)


def test_truncated_gzip_stream_and_wrong_counts_are_refused(tmp_path):
    write_idx_set(tmp_path, gz=True)
    p = tmp_path / "t10k-images-idx3-ubyte.gz"
    p.write_bytes(p.read_bytes()[:-20])
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte.gz: unreadable"):
        dt.data.mnist(tmp_path)
    write_idx_set(tmp_path, gz=True)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(np.zeros(11, np.uint8))))
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte.gz: 11 labels for the 12 images"):
        dt.data.mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(np.full(12, 10, np.uint8))))
    with pytest.raises(ValueError, match="label 10 outside"):
        dt.data.mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(np.zeros((12, 8, 8), np.uint8))))
    with pytest.raises(ValueError, match="8 × 8 pixels, expected 28 × 28"):
        dt.data.mnist(tmp_path)


def test_a_missing_file_names_it_and_the_layout(tmp_path):
    write_idx_set(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte \(or t10k-labels-idx1-ubyte.gz\) missing"):
        dt.data.fashion_mnist(tmp_path)
    with pytest.raises(ValueError, match="data_batch_1 missing .*b'data' uint8 N×3072"):
        dt.data.cifar10(tmp_path)


class Evil:
    def __reduce__(self):
        import os
        return os.system, ("echo pwned > pwned.txt",)


@pytest.mark.parametrize("content", [
    pytest.param(lambda: pickle.dumps(Evil(), protocol=2), id="code"),
    pytest.param(lambda: pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 2], b"x": Evil()}),
                 id="code-inside"),
    pytest.param(lambda: cifar_batch(np.zeros((3, 3072)), [0, 1, 2])[:-9], id="truncated"),
    pytest.param(lambda: cifar_batch(np.zeros((3, 3071)), [0, 1, 2]), id="shape"),
    pytest.param(lambda: pickle.dumps({b"data": np.zeros((2, 3072), np.float64), b"labels": [1, 2]}), id="dtype"),
    pytest.param(lambda: cifar_batch(np.zeros((3, 3072)), [0, 1]), id="count"),
    pytest.param(lambda: cifar_batch(np.zeros((2, 3072)), [0, 10]), id="label"),
    pytest.param(lambda: pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [1.0, 2.0]}), id="floats"),
    pytest.param(lambda: pickle.dumps({b"labels": [1]}), id="keys"),
    pytest.param(lambda: pickle.dumps([1, 2]), id="list"),
    pytest.param(lambda: b"not a pickle", id="garbage"),
])
def test_damaged_or_hostile_cifar_batches_are_refused_without_running_code(tmp_path, monkeypatch, content):
    monkeypatch.chdir(tmp_path)
    write_cifar(tmp_path)
    (tmp_path / "data_batch_3").write_bytes(content())
    with pytest.raises(ValueError, match="Invalid data file: .*data_batch_3: .*expected CIFAR-10's python batches"):
        dt.data.cifar10(tmp_path)
    assert not (tmp_path / "pwned.txt").exists()


def test_image_set_dispatches_by_the_command_line_name(tmp_path):
    write_idx_set(tmp_path)
    np.testing.assert_array_equal(dt.data.image_set("fashion-mnist", tmp_path, n_train=3).X,
                                  dt.data.fashion_mnist(tmp_path, n_train=3).X)
    with pytest.raises(ValueError, match="Invalid dataset: 'svhn'"):
        dt.data.image_set("svhn", tmp_path)
    assert set(image_formats.IMAGE_SETS) == {"mnist", "fashion-mnist", "cifar10"}
    assert idx_files.read_idx.__module__ == "dyntools.data.idx_files"


def test_a_batch_naming_numpy_core_as_older_numpy_did_loads(tmp_path):
    """The published batches were pickled by Python 2 with ``numpy.core.multiarray._reconstruct``; NumPy 2
    writes ``numpy._core``: both names resolve."""
    written = write_cifar(tmp_path)
    for name in (*cifar_batches.TRAIN_BATCHES, cifar_batches.TEST_BATCH):
        raw = (tmp_path / name).read_bytes()
        assert b"numpy._core.multiarray\n" in raw or b"numpy.core.multiarray\n" in raw
        (tmp_path / name).write_bytes(raw.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n"))
    images, labels = cifar_batches.read_batch(tmp_path / "test_batch")
    np.testing.assert_array_equal(images, written["test_batch"][0])
    np.testing.assert_array_equal(labels, written["test_batch"][1])


# ------------------------------------------------------------------------------- size caps (gzip bombs, oversized)

def gzip_of_zeros(head: bytes, n_zeros: int, chunk: int = 1 << 22) -> bytes:
    """A gzip stream of ``head`` then ``n_zeros`` zero bytes, compressed chunk by chunk (small on disk)."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [z.compress(head)]
    for start in range(0, n_zeros, chunk):
        parts.append(z.compress(bytes(min(chunk, n_zeros - start))))
    return b"".join(parts) + z.flush()


def test_a_gzip_bomb_stops_past_the_declared_length_without_decompressing_it(tmp_path):
    import tracemalloc

    write_idx_set(tmp_path, gz=True)
    head = bytes([0, 0, 8, 3]) + struct.pack(">3I", 12, 28, 28)
    bomb = gzip_of_zeros(head, 256 * 2**20)                # 256 MiB of zeros behind a 12-image header
    assert len(bomb) < 2**20
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz: more data than its header declares "
                                             r"\(12 × 28 × 28 = 9408 bytes\)") as err:
            dt.data.mnist(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(err.value)
    assert peak < 16 * 2**20, peak                         # decompressing it all would hold 256 MiB


@pytest.mark.parametrize("gz", [False, True])
def test_a_header_declaring_more_than_the_memory_is_refused_naming_the_limit(tmp_path, monkeypatch, gz):
    write_idx_set(tmp_path, gz=gz)
    head = bytes([0, 0, 8, 3]) + struct.pack(">3I", 2**32 - 1, 28, 28)       # 3.4 TB declared
    raw = head + bytes(784)
    name = "t10k-images-idx3-ubyte"
    (tmp_path / (f"{name}.gz" if gz else name)).write_bytes(gzip.compress(raw) if gz else raw)
    with pytest.raises(ValueError, match=rf"{name}(.gz)?: its header declares 4294967295 × 28 × 28 = 3367254359280 "
                                         r"bytes of data, .* than the \d+ bytes of memory available \(the limit\)"):
        dt.data.mnist(tmp_path)
    # the limit is the available memory: a small set is refused when the machine has less than it
    write_idx_set(tmp_path, gz=gz)
    from dyntools import memory
    monkeypatch.setattr(memory, "available_bytes", lambda: 5000)
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte(.gz)?: its header declares 12 × 28 × 28 = 9408 "
                                         r"bytes .* = 9424 bytes, more than the 5000 bytes of memory available"):
        dt.data.mnist(tmp_path)


@pytest.mark.parametrize("gz", [False, True])
def test_a_header_declaring_more_than_the_file_holds_is_refused(tmp_path, gz):
    write_idx_set(tmp_path, gz=gz)
    raw = bytes([0, 0, 8, 3]) + struct.pack(">3I", 60000, 28, 28) + bytes(3 * 784)
    name = "train-images-idx3-ubyte"
    (tmp_path / (f"{name}.gz" if gz else name)).write_bytes(gzip.compress(raw) if gz else raw)
    with pytest.raises(ValueError, match=rf"{name}(.gz)?: 2352 bytes of data, its header says 60000 × 28 × 28"):
        dt.data.mnist(tmp_path)


def test_concatenated_gzip_members_read_as_one_file(tmp_path):
    arrays = write_idx_set(tmp_path)
    raw = (tmp_path / "train-images-idx3-ubyte").read_bytes()
    (tmp_path / "train-images-idx3-ubyte").unlink()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(raw[:100]) + gzip.compress(raw[100:]))
    data = dt.data.mnist(tmp_path)
    np.testing.assert_array_equal(data.X * 255, arrays["train-images-idx3-ubyte"].reshape(12, 784))


def test_an_oversized_cifar_batch_or_array_is_refused_naming_the_limit(tmp_path, monkeypatch):
    from dyntools import memory

    write_cifar(tmp_path)
    size = (tmp_path / "data_batch_1").stat().st_size
    monkeypatch.setattr(memory, "available_bytes", lambda: 2 * size)
    with pytest.raises(ValueError, match=rf"data_batch_1: {size} bytes need about {3 * size} bytes to unpickle, "
                                         rf"more than the {2 * size} bytes of memory available \(the limit\)"):
        dt.data.cifar10(tmp_path)
    monkeypatch.undo()
    # a pickle whose array reconstruction names a shape far beyond its file: refused before any allocation
    recon = np.ndarray.__reduce__(np.zeros(0))[0]

    class Huge:
        def __reduce__(self):
            return recon, (np.ndarray, (2**40,), b"b")

    (tmp_path / "data_batch_4").write_bytes(pickle.dumps({b"data": Huge(), b"labels": [1]}, protocol=2))
    with pytest.raises(ValueError, match=r"data_batch_4: not a readable batch \(UnpicklingError: an array of "
                                         r"1099511627776 elements, more than its file's \d+ bytes\)"):
        dt.data.cifar10(tmp_path)
