"""Results on disk: one directory per run, arrays in ``arrays.npz``, the rest in ``result.json``.

Writes are atomic: everything is written into a hidden temporary directory next to the target,
which is then renamed into place, so a reader (or a killed process) never sees half a result.
Loading validates the directory and says plainly when it is damaged or not a dyntools result.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dyntools.engine.result import RunResult

SCHEMA = "dyntools.result/1"
META_FILE = "result.json"
ARRAYS_FILE = "arrays.npz"
#: A sweep's lock file (:mod:`dyntools.folder_lock`): not content of its own — a folder holding only it is empty.
LOCK_FILE = ".dyntools.lock"


class StoreError(ValueError):
    """A result directory that cannot be read or written."""


def _jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays and tuples inside config/summary to plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None  # JSON has no NaN/inf: null (never a "nan" string)
    return value


def to_json(value: Any, **kwargs) -> str:
    return json.dumps(_jsonable(value), **kwargs)


def resolve_path(path: str | os.PathLike) -> Path:
    """``Path(path).resolve()`` (new names allowed) that raises ``OSError`` (ELOOP) for a symbolic-link loop on
    every Python: 3.11 and 3.12's ``resolve`` raised ``RuntimeError`` there, 3.13's returns the path unresolved.

    ``os.path.realpath`` resolves every link it can follow; a link that is still on its answer could not be
    followed, so the deepest existing entry of the answer is ``stat``-ed and the kernel names the loop.
    """
    real = Path(os.path.realpath(path))
    for entry in (real, *real.parents):
        if os.path.lexists(entry):
            os.stat(entry)                          # a link loop (ELOOP), a dangling link on the way …
            break
    return real


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early (before any work) if ``path`` cannot become a result directory.

    ``path`` may be an existing result directory (it will be replaced), an empty directory,
    or a new name inside a writable directory. Refused with one line naming ``--out``: an empty
    path, the current directory or a root, a name longer than the file system allows, a dangling
    symbolic link or a link loop, a file, a foreign non-empty directory, an unwritable place.
    """
    if str(path).strip() == "":
        raise StoreError("Invalid --out: empty path (name a directory to write)")
    path = Path(path)
    try:
        resolved = resolve_path(path)
        if resolved == Path.cwd().resolve() or resolved.parent == resolved:
            raise StoreError(f"Invalid --out: {str(path)!r} is the current directory or a root; name a new "
                             "directory inside it")
        for part in resolved.parts[1:]:
            if len(os.fsencode(part)) > 255:
                raise StoreError(f"Invalid --out: a path component of {path} is longer than 255 bytes")
        if path.is_symlink() and not path.exists():
            raise StoreError(f"Invalid --out: {path} is a dangling symbolic link")
        if path.exists():
            if not path.is_dir():
                raise StoreError(f"Invalid --out: {path} exists and is not a directory")
            if any(p.name != LOCK_FILE for p in path.iterdir()) and not (path / META_FILE).exists() \
                    and not (path / "report.md").exists():
                raise StoreError(f"Invalid --out: {path} is a non-empty directory that dyntools did not write")
            _probe(path, path, "--out")     # an existing directory must itself take new entries (a sweep
            probe_dir = resolved.parent     # writes into it) and its parent too (a result replaces it)
        else:
            probe_dir = resolved.parent
            while not probe_dir.exists():
                probe_dir = probe_dir.parent
    except (OSError, RuntimeError) as exc:      # a link loop, a permission error on the way …
        raise StoreError(f"Invalid --out: cannot use {path} ({getattr(exc, 'strerror', None) or exc})") from None
    if not probe_dir.is_dir():
        raise StoreError(f"Invalid --out: {path} lies below {probe_dir}, which is not a directory")
    _probe(probe_dir, path, "--out")
    return path


def _probe(directory: Path, path, option: str) -> None:
    """Refuse ``path`` unless ``directory`` really takes a new entry: a directory is made there and removed
    at once (``os.access`` says yes to root on /proc, a read-only mount …)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dyntools-probe-", dir=directory))
    except OSError as exc:
        raise StoreError(f"Invalid {option}: {path} is not writable ({exc.strerror or exc})") from None


def check_output_file(path: str | os.PathLike, option: str) -> Path:
    """Fail early (before any work) if the text file ``path`` cannot be written by :func:`atomic_write_text`:
    an empty path, a directory, a symbolic link or a device (never replaced), a missing or unwritable
    directory, a name longer than the file system allows — one line naming ``option``."""
    if str(path).strip() == "":
        raise StoreError(f"Invalid {option}: empty path (name a file)")
    path = Path(path)
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise StoreError(f"Invalid {option}: {path} is a link, a device or a directory (never replaced)")
        parent = resolve_path(path).parent
        if len(os.fsencode(path.name)) > 255:
            raise StoreError(f"Invalid {option}: the name {path.name[:20]}… is longer than 255 bytes")
        if not parent.is_dir():
            raise StoreError(f"Invalid {option}: cannot write {path} (directory {parent} does not exist)")
    except OSError as exc:                          # a link loop, a permission error on the way …
        raise StoreError(f"Invalid {option}: cannot use {path} ({getattr(exc, 'strerror', None) or exc})") from None
    _probe(parent, path, option)
    return path


def atomic_directory(target: str | os.PathLike):
    """Context manager yielding a temporary directory that replaces ``target`` on success.

    On an exception the temporary directory is removed and ``target`` is left as it was.
    """
    return _AtomicDirectory(Path(target))


class _AtomicDirectory:
    def __init__(self, target: Path):
        self.target = target

    def __enter__(self) -> Path:
        try:
            parent = resolve_path(self.target).parent
            parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.tmp-", dir=parent))
        except OSError as exc:
            raise StoreError(f"Invalid --out: cannot write to {self.target} ({exc.strerror})") from None
        return self.tmp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if isinstance(exc, OSError):          # a full disk, a quota …: one line, nothing left behind
                raise StoreError(f"Cannot write {self.target}: {exc.strerror or exc}") from None
            return False
        old = None
        try:
            fsync_tree(self.tmp)
            if self.target.exists():
                old = self.target.with_name(f".{self.target.name}.old-{os.getpid()}")
                os.replace(self.target, old)
            os.replace(self.tmp, self.target)
            fsync_path(self.target.parent)
        except OSError as err:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if old is not None and not self.target.exists():
                os.replace(old, self.target)
            raise StoreError(f"Cannot write {self.target}: {err.strerror or err}") from None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return False


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file's (or a directory's entries') data to disk, so that a rename that follows cannot
    leave an empty file after a power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(directory: Path) -> None:
    """fsync every file of ``directory`` and the directory itself."""
    for item in directory.iterdir():
        if item.is_file():
            fsync_path(item)
    fsync_path(directory)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file by temp file + fsync + ``os.replace`` (+ fsync of the directory)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise StoreError(f"Invalid output file {path}: a link, a device or a directory is never replaced")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_path(path.parent)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_result_files(result: RunResult, directory: Path) -> None:
    """Write ``result`` into an existing (normally temporary) directory."""
    arrays = {k: np.asarray(v) for k, v in result.arrays.items()}
    np.savez(directory / ARRAYS_FILE, **arrays)
    meta = {
        "schema": SCHEMA,
        "kind": result.kind,
        "status": result.status,
        "message": result.message,
        "seed": result.seed,
        "config": result.config,
        "summary": result.summary,
        "timings": result.timings,
        "versions": result.versions,
        "arrays": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
    }
    (directory / META_FILE).write_text(to_json(meta, indent=2) + "\n", encoding="utf-8")


def save(result: RunResult, directory: str | os.PathLike) -> Path:
    """Save ``result`` atomically as the directory ``directory`` (replacing an older result).

    Parameters
    ----------
    result : RunResult
        The result to save.
    directory : path
        The result's directory (written whole into a temporary sibling, then renamed).

    Returns
    -------
    Path
        The directory.
    """
    directory = check_writable(directory)
    with atomic_directory(directory) as tmp:
        write_result_files(result, tmp)
    return directory


def is_result_dir(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a ``result.json`` (``False`` also for a path the system refuses: a name
    too long, a link loop)."""
    try:
        return (Path(directory) / META_FILE).is_file()
    except OSError:
        return False


#: The declared schema of ``result.json``: field → (JSON type(s), required).
FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "schema": ((str,), True), "kind": ((str,), True), "status": ((str,), True), "message": ((str,), True),
    "seed": ((int, type(None)), False), "config": ((dict,), True), "summary": ((dict,), False),
    "timings": ((dict,), False), "versions": ((dict,), False), "arrays": ((dict,), True),
}
_JSON_NAMES = {str: "a string", int: "an integer", dict: "an object", list: "a list", type(None): "null",
               float: "a number", bool: "true/false"}


def _type_name(value) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def validate_meta(meta, where: str) -> dict:
    """Check a parsed ``result.json`` against :data:`FIELDS`, its kind's declared ``config``/``summary``
    (:mod:`dyntools.result_schema`) and the array specs; ``StoreError`` naming the file and the field
    otherwise. Returns ``meta`` with the status in the fixed vocabulary."""
    from dyntools.engine.result import check_status

    if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
        raise StoreError(f"Invalid result directory: {where} is not a {SCHEMA} file")
    for name, (types, required) in FIELDS.items():
        if name not in meta:
            if required:
                raise StoreError(f"Damaged result {where}: field {name!r} is missing")
            continue
        value = meta[name]
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join(_JSON_NAMES[t] for t in types)
            raise StoreError(f"Damaged result {where}: field {name!r} must be {want} (got {_type_name(value)})")
    try:
        meta["status"] = check_status(meta["status"])
    except ValueError as exc:       # e.g. "ok", a word of the statuses before their vocabulary was fixed
        raise StoreError(f"Unreadable result {where}: {exc}; written by an older dyntools? Run it again") from None
    for key, value in meta.get("timings", {}).items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StoreError(f"Damaged result {where}: timings[{key!r}] must be a number")
    from dyntools import result_schema

    try:
        result_schema.validate(meta["kind"], meta["config"], meta.get("summary", {}))
    except result_schema.SchemaError as exc:
        raise StoreError(f"Damaged result {where}: {exc}") from None
    for array, spec in meta["arrays"].items():
        ok = (isinstance(spec, dict) and isinstance(spec.get("shape"), list) and isinstance(spec.get("dtype"), str)
              and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in spec["shape"]))
        if not ok:
            raise StoreError(f"Damaged result {where}: arrays[{array!r}] must be {{'shape': [non-negative "
                             "integers], 'dtype': a string}")
    return meta


def load(directory: str | os.PathLike) -> RunResult:
    """Load and validate a result directory written by :func:`save`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise StoreError(f"Invalid result directory: {directory} does not exist")
    meta_path = directory / META_FILE
    if not meta_path.is_file():
        raise StoreError(f"Invalid result directory: {directory} has no {META_FILE} (not a dyntools result)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(f"Damaged result directory {directory}: {META_FILE} is not valid JSON ({exc})") from None
    except RecursionError:
        raise StoreError(f"Damaged result directory {directory}: {META_FILE} is nested too deeply") from None
    except OSError as exc:
        raise StoreError(f"Invalid result directory {directory}: cannot read {META_FILE} ({exc.strerror})") from None
    meta = validate_meta(meta, str(meta_path))
    try:
        with open(directory / ARRAYS_FILE, "rb") as fh, np.load(fh, allow_pickle=False) as npz:
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive")
            arrays = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise StoreError(f"Damaged result directory {directory}: {ARRAYS_FILE} is missing") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise StoreError(f"Damaged result directory {directory}: {ARRAYS_FILE} cannot be read ({exc})") from None
    for name, spec in meta["arrays"].items():
        if name not in arrays:
            raise StoreError(f"Damaged result directory {directory}: array {name!r} is missing")
        if list(arrays[name].shape) != list(spec["shape"]) or str(arrays[name].dtype) != spec["dtype"]:
            raise StoreError(f"Damaged result directory {directory}: array {name!r} has the wrong shape or dtype")
    return RunResult(
        kind=meta["kind"], config=meta["config"], arrays=arrays, status=meta["status"],
        message=meta["message"], seed=meta.get("seed"), summary=meta.get("summary", {}),
        timings=meta.get("timings", {}), versions=meta.get("versions", {}),
    )
