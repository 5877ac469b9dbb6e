"""The on-disk cache of generated model code: source files keyed by a hash of the expression.

A symbolic model's generated modules (:mod:`dyntools.codegen.kernels`) are written once as
``<kind>_<key>.py`` in :func:`cache_dir` and imported from there as ordinary modules, so that numba's
own ``cache=True`` (compiled code in ``__pycache__`` next to the file) works for them: the second
process that declares the same model neither derives (sympy) nor compiles (numba) again.

``key`` is the first 24 hex digits of the SHA-256 of the model's canonical text (its expressions in
internal symbols, its head, the code generator's version). A file is never rewritten once it exists
(numba invalidates its cache when a source file's time stamp changes); it is written to a temporary
name and renamed, so that concurrent processes never import half a file.

A module may also be code around a user's functions (:mod:`dyntools.dynamics.sde`: the SDE loop around a
user's drift and diffusion): its key then covers the functions' source and everything they read
(:func:`dyntools.user_code.source_fingerprint`) and the compile target (:func:`target_text`), so that a cache
written by another processor or numba version is never used.

Beside the modules, empty stamp files ``<name>.ok`` record checks that passed on this installation
(:func:`stamp`; the generated kernel against its twin, named by both files' :func:`fingerprint`).

The directory is ``$DYNTOOLS_SYMBOLIC_CACHE`` when set, else ``$XDG_CACHE_HOME/dyntools/symbolic``
(default ``~/.cache/dyntools/symbolic``). Deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path


def cache_dir() -> Path:
    """Where generated model code lives (see the module docstring)."""
    env = os.environ.get("DYNTOOLS_SYMBOLIC_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dyntools" / "symbolic"


def key_of(text: str) -> str:
    """The cache key of a canonical text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def target_text() -> str:
    """The compile target as text for a key: CPU name and features as numba compiles for them, numba,
    llvmlite and numpy versions (:func:`dyntools.engine.target.compile_target`) and Python's version."""
    from dyntools.engine import target

    return repr(sorted(target.compile_target().items())) + f" python {sys.version_info[:3]}"


def package_stamp(root: Path | None = None) -> str:
    """A stamp of this installation's dyntools source (``root``: the package folder, default this one): path, size
    and modification time of every ``.py`` file, hashed (~1 ms for the ~180 files, once per process).

    Generated code that calls into the package — the trainer loops of :mod:`dyntools.dynamics.loops`, which link
    the path loop, the engine, the models' kernels and hooks; the optimizer step modules — is keyed by it besides
    its own text: numba's cache checks only the file of the function it caches, not the code linked into it, so
    without the stamp a dyntools edited, upgraded or downgraded under the same cache folder would load machine
    code compiled from the old source, or fail to read an index written by code that types it differently.
    Like numba's own cache, it goes by size and time (a copy of the same files is compiled once more)."""
    if root is None:
        if _PACKAGE_STAMP:
            return _PACKAGE_STAMP[0]
        found = package_stamp(Path(__file__).resolve().parent.parent)
        _PACKAGE_STAMP.append(found)
        return found
    entries = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                st = os.stat(path)
                entries.append(f"{os.path.relpath(path, root)} {st.st_size} {st.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()[:16]


_PACKAGE_STAMP: list[str] = []


def path_of(kind: str, key: str) -> Path:
    return cache_dir() / f"{kind}_{key}.py"


def exists(kind: str, key: str) -> bool:
    return path_of(kind, key).is_file()


def load(kind: str, key: str, make_source=None, namespace: dict | None = None):
    """The module ``<kind>_<key>``: imported from the cache, written first from ``make_source()`` if absent.
    ``namespace``: names set in the module before its code runs (objects its code refers to but cannot import,
    e.g. a user's jitted functions; the key must then cover everything that makes them compile differently)."""
    return load_file(f"dyntools_generated_{kind}_{key}", path_of(kind, key), make_source, namespace)


#: held while a generated module is found, written or executed: threads of one process (the trainer's workers
#: resolve loops at their first call) must never see a module another thread is still executing
_LOADING = threading.RLock()


def load_file(name: str, path: Path, make_source=None, namespace: dict | None = None):
    """The module ``name`` of the file ``path``: imported once per process, the file written first from
    ``make_source()`` when absent (by a rename: a process never reads a half-written file; a file another process
    wrote meanwhile is kept). Under :data:`_LOADING`; a module whose execution fails is not left in
    ``sys.modules``. ``namespace``: as :func:`load`."""
    with _LOADING:
        if name in sys.modules:
            return sys.modules[name]
        if not path.is_file():
            if make_source is None:
                raise FileNotFoundError(path)
            source = make_source()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}_", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(source)
            if path.is_file():                   # another process wrote it meanwhile: keep theirs
                os.unlink(tmp)
            else:
                os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(namespace or {})
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module


def fingerprint(kind: str, key: str) -> str | None:
    """The first 16 hex digits of the SHA-256 of the file ``<kind>_<key>.py`` (None when absent): what a stamp
    of a check done on that file's code is keyed by, so that a file changed since is checked again."""
    path = path_of(kind, key)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def stamped(name: str) -> bool:
    """Whether the empty stamp file ``<name>.ok`` exists (a check passed on this installation)."""
    return (cache_dir() / f"{name}.ok").is_file()


def stamp(name: str) -> None:
    """Write the stamp ``<name>.ok`` (a check passed; best effort: a read-only cache just checks again)."""
    try:
        (cache_dir() / f"{name}.ok").touch()
    except OSError:
        pass
