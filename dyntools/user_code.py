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
