"""Running a user's Python file (a claims file, a student's optimizers, a model or an optimizer file).

The file is ordinary Python and is **executed**: only run files you trust. :func:`run_file` executes it
in a fresh module (its folder first on ``sys.path`` while it runs, so that it may import its
neighbours) and returns the module's namespace. Everything that can go wrong — the file does not
exist, cannot be read, has a syntax error, raises (``sys.exit`` included) — is a ``ValueError`` with a
one-line message naming the option, the file and, where there is one, the line.
"""

from __future__ import annotations

import sys
import traceback
import types
from pathlib import Path


def _where(path: Path, tb) -> str:
    """``file:line`` of the deepest frame of the traceback that is in the user's file."""
    line = None
    for frame in traceback.extract_tb(tb):
        if Path(frame.filename).resolve() == path:
            line = frame.lineno
    return f"{path.name}:{line}" if line else path.name


def compiled(path, option: str = "--file"):
    """The code object of ``path`` — read and compiled, not executed (so a command can refuse a missing,
    unreadable or malformed file before it starts any work); the same one-line errors as :func:`run_file`."""
    path = Path(path)
    try:
        is_file, exists = path.is_file(), path.exists()
    except OSError as exc:                      # a name too long, a link loop …
        raise ValueError(f"{option} {str(path)[:80]}: cannot use it ({exc.strerror or type(exc).__name__})") from None
    if not is_file:
        raise ValueError(f"{option} {path}: no such file" if not exists else f"{option} {path}: not a file")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{option} {path}: cannot read it ({exc})") from None
    try:
        return compile(source, str(path.resolve()), "exec")
    except SyntaxError as exc:
        raise ValueError(f"{option} {path}:{exc.lineno}: syntax error: {exc.msg}") from None


def run_file(path, option: str = "--file") -> dict:
    """Execute ``path`` and return its namespace (see the module docstring); ``option`` names the
    command-line option in the messages."""
    path = Path(path)
    code = compiled(path, option)
    resolved = path.resolve()
    module = types.ModuleType(f"dyntools_user_{abs(hash(str(resolved)))}")
    module.__file__ = str(resolved)
    sys.path.insert(0, str(resolved.parent))
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:        # a file that calls sys.exit() is an error, not an exit
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ValueError(f"{option} {_where(resolved, exc.__traceback__)}: executing the file raised "
                         f"{type(exc).__name__}: {first}") from None
    finally:
        sys.path.remove(str(resolved.parent))
    return module.__dict__


def _value_text(value, seen: set) -> str | None:
    """A text that changes whenever ``value`` (a global or closure value a user's function reads) would make
    compiled code differ: modules by name, numbers and strings by ``repr``, arrays by dtype, shape and a
    digest of their bytes, jitted functions by :func:`source_fingerprint`. None for anything else (then the
    function has no fingerprint and is never cached)."""
    import hashlib
    import types as _types

    import numpy as np

    if isinstance(value, _types.ModuleType):
        return f"module {value.__name__}"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return f"array {data.dtype.str} {data.shape} {hashlib.blake2b(data.view(np.uint8).ravel()).hexdigest()}"
    if isinstance(value, tuple):
        parts = [_value_text(v, seen) for v in value]
        return None if None in parts else "tuple(" + ", ".join(parts) + ")"
    if hasattr(value, "py_func") and hasattr(value, "targetoptions"):
        return source_fingerprint(value, seen)
    if isinstance(value, type) or callable(value) and getattr(value, "__module__", "") in ("numpy", "math", "cmath"):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    return None


def _names(code) -> set[str]:
    """The global names read by ``code`` and by the functions and comprehensions nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def _code_text(code) -> str:
    """The bytecode, names and constants of ``code`` and of the code nested in it (line numbers left out)."""
    consts = [_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()} {code.co_names} {code.co_varnames} {consts}"


def source_fingerprint(fn, seen: set | None = None) -> str | None:
    """The SHA-256 (hex) of what a user's numba function compiles from: its source text, its compile options,
    and every global and closure value its code reads (:func:`_value_text`; jitted callees recursively).
    Equal fingerprints mean the same compiled code on one compile target. None when the source cannot be
    read (a function typed at an interactive prompt) or a value it reads cannot be named."""
    import hashlib
    import inspect

    seen = set() if seen is None else seen
    func = getattr(fn, "py_func", fn)
    if id(func) in seen:                           # recursion: already being fingerprinted higher up
        return f"recursive {func.__qualname__}"
    seen.add(id(func))
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    # the bytecode too: a file edited after it was imported shows new source for old code
    parts = [source, _code_text(func.__code__),
             repr(sorted((k, repr(v)) for k, v in getattr(fn, "targetoptions", {}).items()))]
    scope = dict(func.__globals__)
    if func.__closure__:
        scope.update(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__)))
    for name in sorted(_names(func.__code__) | set(func.__code__.co_freevars)):
        if name in scope:
            text = _value_text(scope[name], seen)
            if text is None:
                return None
            parts.append(f"{name} = {text}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
