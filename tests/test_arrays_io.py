"""Array files of the wrong kind: every loader names the option and the file, and coerces nothing."""

from __future__ import annotations

import numpy as np
import pytest

from dyntools.arrays_io import MAX_ENTRIES, load_array, load_npz

BAD = {
    "strings": np.array(["a", "b"]),
    "structured": np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]),
    "datetime": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
    "bool": np.array([True, False]),
    "complex": np.array([1 + 2j, 3.0]),
    "empty": np.zeros(0),
    "nan": np.array([1.0, np.nan]),
}


@pytest.mark.parametrize("name", list(BAD))
def test_wrong_dtypes_and_values_are_refused(tmp_path, name):
    path = tmp_path / f"{name}.npy"
    np.save(path, BAD[name])
    with pytest.raises(ValueError, match=r"Invalid --samples: .*" + name):
        load_array("--samples", path)


def test_integers_text_and_shapes(tmp_path):
    np.save(tmp_path / "i.npy", np.array([0, 3, 1]))
    assert load_array("--indices", tmp_path / "i.npy", kind="int").dtype == np.int64
    (tmp_path / "f.txt").write_text("0 1 2.5\n")
    with pytest.raises(ValueError, match="--indices: .*must hold integers"):
        load_array("--indices", tmp_path / "f.txt", kind="int")
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(ValueError, match="--samples: cannot read .*e.txt"):
        load_array("--samples", tmp_path / "e.txt")
    np.save(tmp_path / "m.npy", np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        load_array("--samples", tmp_path / "m.npy", ndim=1)
    with pytest.raises(ValueError, match="not a readable file"):
        load_array("--samples", "/dev/zero")


def test_a_header_claiming_too_many_entries_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (MAX_ENTRIES + 1,)})
    with pytest.raises(ValueError, match="claims"):
        load_array("--samples", path)


def test_npz_members_and_kinds(tmp_path):
    np.savez(tmp_path / "d.npz", u0=np.ones(3), v0=np.zeros(3))
    assert set(load_npz("--init-file", tmp_path / "d.npz", ("u0", "v0"))) == {"u0", "v0"}
    with pytest.raises(ValueError, match="lacks v1"):
        load_npz("--init-file", tmp_path / "d.npz", ("u0", "v1"))
    np.save(tmp_path / "a.npy", np.ones(3))
    with pytest.raises(ValueError, match="single .npy array"):
        load_npz("--data", tmp_path / "a.npy", ("X",))
    np.savez(tmp_path / "c.npz", u0=np.ones(3) * 1j, v0=np.zeros(3))
    with pytest.raises(ValueError, match="complex"):
        load_npz("--init-file", tmp_path / "c.npz", ("u0", "v0"))
    with pytest.raises(ValueError, match="an .npz archive"):
        load_array("--samples", tmp_path / "c.npz")
