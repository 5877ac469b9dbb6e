"""Fuzz: array files of the wrong kind for every file option and loader (issue 16, "input files of the
wrong kind"): wrong dtypes and shapes, damaged and lying headers, devices, fifos, links, npy/npz mix-ups."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests import fuzz_cases as F


def test_every_file_option_refuses_every_wrong_file(tmp_path):
    cases = F.file_cases()
    failures = F.run_cases(cases, tmp_path)
    print(f"files: {len(cases) - len(failures)} of {len(cases)} wrong files handled")
    assert not failures, F.describe(failures)


DTYPES = st.sampled_from(["f8", "f4", "f2", "i8", "i4", "u1", "?", "c16", "U3", "S2", "M8[D]", "m8[s]",
                          [("a", "f8")]])


def _expected(dtype: np.dtype, arr: np.ndarray, kind: str, ndims) -> bool:
    """Is ``arr`` acceptable? (from arrays_io's documented contract, not its code)"""
    if dtype.fields is not None or dtype.kind not in "iuf" or arr.ndim not in ndims or arr.size == 0:
        return False
    if dtype.kind in "iu":         # exactly: int64 holds [-2^63, 2^63); a float64 copy rounds 2^63 - 512 up
        return kind == "float" or all(-(2**63) <= int(v) < 2**63 for v in arr.ravel())
    values = arr.astype(np.float64)
    if not np.all(np.isfinite(values)):
        return False
    return kind == "float" or bool(np.all(values == np.round(values))          # int64: [-2^63, 2^63)
                                     and np.all((values >= -(2.0**63)) & (values < 2.0**63)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=DTYPES, shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       kind=st.sampled_from(["float", "int"]), ndims=st.sampled_from([(1,), (1, 2)]),
       suffix=st.sampled_from([".npy", ".txt"]), data=st.data())
def test_load_array_accepts_exactly_what_it_documents(tmp_path_factory, dtype, shape, kind, ndims, suffix, data):
    from dyntools.arrays_io import load_array

    dtype = np.dtype(dtype)
    if dtype.fields is None and dtype.kind in "iuf":
        arr = data.draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(dtype, allow_subnormal=False)))
    else:
        arr = np.zeros(shape, dtype=dtype)
    path = tmp_path_factory.mktemp("arr") / f"a{suffix}"
    if suffix == ".npy":
        np.save(path, arr)
    else:
        if dtype.fields is not None or dtype.kind not in "iuf" or arr.ndim > 2:
            return                                          # text holds numbers in at most 2-d
        np.savetxt(path, arr.reshape(arr.shape if arr.ndim else (1,)), fmt="%.17g" if dtype.kind == "f" else "%d")
        arr = np.loadtxt(path, ndmin=1) if arr.size else arr
    ok = suffix == ".npy" and _expected(dtype, arr, kind, ndims) or \
        suffix == ".txt" and arr.size > 0 and _expected(np.dtype("f8"), np.asarray(arr, float), kind, ndims)
    if ok:
        out = load_array("--opt", path, kind=kind, ndim=ndims)
        assert out.dtype == (np.int64 if kind == "int" else np.float64)
        assert np.array_equal(out, np.asarray(arr).astype(out.dtype))
    else:
        with pytest.raises(ValueError) as info:
            load_array("--opt", path, kind=kind, ndim=ndims)
        assert "--opt" in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("why", [why for why, _ in F.array_file_damages(".npz")])
def test_load_npz_refuses_damaged_archives_naming_option_and_file(tmp_path, why):
    from dyntools.arrays_io import load_npz

    make = dict(F.array_file_damages(".npz"))[why]
    make(tmp_path)
    with pytest.raises(ValueError, match=r"Invalid --x: .*bad\.npz") as info:
        load_npz("--x", tmp_path / "bad.npz", ("a",))
    assert "\n" not in str(info.value)


def test_a_member_whose_header_lies_is_refused_before_it_is_read(tmp_path):
    import zipfile

    from dyntools.arrays_io import load_npz

    with zipfile.ZipFile(tmp_path / "big.npz", "w") as z, z.open("a.npy", "w") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (10**7, 10**6)})
        fh.write(b"\0" * 64)
    with pytest.raises(ValueError, match=r"Invalid --x: .*big\.npz\[a\] claims shape"):
        load_npz("--x", tmp_path / "big.npz", ("a",))
