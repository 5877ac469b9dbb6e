"""Reading a user's array files (``.npy``, ``.npz`` members, text): exactly the dtypes and shapes asked for.

Every option that takes an array file goes through :func:`load_array` / :func:`load_npz`:

* the file must exist and be a regular file (``/dev/zero`` and directories are refused);
* an ``.npy`` header is read first (:func:`numpy.lib.format.read_array_header_1_0` / ``2_0``), so a
  header that claims more entries than :data:`MAX_ENTRIES` is refused before any data is read;
* only real numbers are accepted: bool, complex, string, bytes, datetime, timedelta, object and
  structured arrays are refused, naming the dtype (nothing is silently coerced: a datetime never
  becomes days, a complex number never loses its imaginary part);
* ``kind="int"`` also requires integral values within int64; ``kind="float"`` finite values;
* text files are parsed as numbers with NumPy's warnings turned into one error (an empty file is an
  error, not a warning on stderr);
* every error is a ``ValueError`` naming the option and the file.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np

#: The most entries an array file may declare (2**28: 2 GiB of float64): a real limit of the format this
#: reader accepts, checked against the header before anything is read (a run's memory is checked by
#: :mod:`dyntools.memory`, not by a count).
MAX_ENTRIES = 2**28


def _check_dtype(option: str, path, dtype: np.dtype) -> None:
    if dtype.fields is not None or dtype.kind not in "iuf":
        raise ValueError(f"Invalid {option}: {path} holds {dtype} values (expected real numbers)")


def _check_values(option: str, path, arr: np.ndarray, kind: str, ndim) -> np.ndarray:
    _check_dtype(option, path, arr.dtype)
    if ndim is not None and arr.ndim not in ((ndim,) if isinstance(ndim, int) else tuple(ndim)):
        raise ValueError(f"Invalid {option}: {path} holds an array of shape {arr.shape} "
                         f"(expected {ndim} dimension{'s' if ndim != 1 else ''})")
    if arr.size == 0:
        raise ValueError(f"Invalid {option}: {path} holds no values")
    if kind == "int":
        if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
            raise ValueError(f"Invalid {option}: {path} must hold integers")
        info = np.iinfo(np.int64)
        if arr.dtype.kind == "u":
            beyond = np.any(arr > np.uint64(info.max))
        elif arr.dtype.kind == "i":
            beyond = False                       # every signed integer dtype fits in int64
        else:                                    # floats (integral): int64 is [-2^63, 2^63), compared in float64
            wide = arr.astype(np.float64)        # (exact; 2^63 cast to a float16 array's dtype overflowed, warning)
            beyond = np.any(wide >= 2.0**63) or np.any(wide < -(2.0**63))
        if beyond:
            raise ValueError(f"Invalid {option}: {path} holds integers beyond the int64 range")
        return arr.astype(np.int64)
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Invalid {option}: {path} holds non-finite values")
    return arr


def _regular_file(option: str, path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Invalid {option}: {path} is not a readable file")
    return path


def _check_header(option: str, where, fh) -> None:
    """Read an ``.npy`` header from ``fh``: dtype and size checked before any data is read."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"Invalid {option}: {where} is not a .npy array ({exc})") from None
    _check_dtype(option, where, dtype)
    if float(np.prod(shape, dtype=np.float64)) > MAX_ENTRIES:
        raise ValueError(f"Invalid {option}: {where} claims shape {shape} (at most {MAX_ENTRIES:,} entries)")


def _npy(option: str, path: Path) -> np.ndarray:
    with open(path, "rb") as fh:
        _check_header(option, path, fh)
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"Invalid {option}: cannot read {path} ({exc})") from None


def load_array(option: str, path, *, kind: str = "float", ndim=1) -> np.ndarray:
    """An array from ``path`` (``.npy``, or whitespace/comma-separated text), checked as the module
    docstring says; ``kind`` is "float" (finite float64) or "int" (int64)."""
    path = _regular_file(option, path)
    if path.suffix == ".npz":
        raise ValueError(f"Invalid {option}: {path} is an .npz archive (expected one array: .npy or text)")
    if path.suffix == ".npy":
        arr = _npy(option, path)
    else:
        if path.stat().st_size > 16 * MAX_ENTRIES:
            raise ValueError(f"Invalid {option}: {path} is too large for a text array")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                arr = np.loadtxt(path, ndmin=1, delimiter=None if b"," not in path.read_bytes()[:4096] else ",")
        except (ValueError, OSError, UserWarning) as exc:
            raise ValueError(f"Invalid {option}: cannot read {path} as numbers ({exc})") from None
    return _check_values(option, path, arr, kind, ndim)


def load_npz(option: str, path, names, *, optional=(), ndims: dict | None = None) -> dict[str, np.ndarray]:
    """The arrays ``names`` (and any of ``optional`` present) of an ``.npz`` archive, as finite float64;
    ``ndims`` gives a member's required number of dimensions. Each member's header is checked (dtype,
    size) before its data is read."""
    path = _regular_file(option, path)
    ndims = ndims or {}
    if path.suffix == ".npy":
        raise ValueError(f"Invalid {option}: {path} is a single .npy array (expected an .npz with "
                         f"{', '.join(names)})")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"Invalid {option}: {path} is not an .npz archive")
    try:
        with zipfile.ZipFile(path) as archive:
            members = {n[:-4]: n for n in archive.namelist() if n.endswith(".npy")}
            missing = [k for k in names if k not in members]
            if missing:
                raise ValueError(f"Invalid {option}: {path} lacks {', '.join(missing)}")
            out = {}
            for key in [*names, *(k for k in optional if k in members)]:
                where = f"{path}[{key}]"
                with archive.open(members[key]) as fh:
                    _check_header(option, where, fh)
                with archive.open(members[key]) as fh:
                    out[key] = np.lib.format.read_array(fh, allow_pickle=False)
    except (OSError, EOFError, zipfile.BadZipFile, RuntimeError) as exc:
        raise ValueError(f"Invalid {option}: cannot read {path} ({exc})") from None
    except ValueError as exc:
        if str(exc).startswith(f"Invalid {option}"):
            raise
        raise ValueError(f"Invalid {option}: cannot read {path} ({exc})") from None
    return {k: _check_values(option, f"{path}[{k}]", v, "float", ndims.get(k)) for k, v in out.items()}
