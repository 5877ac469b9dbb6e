"""Claims and models from a user's Python file (``dyntools prove --file my_claims.py``,
``dyntools simulate model --file my_model.py``).

The file is ordinary Python and is **executed**: only run files you trust. It defines its claims
either as a list ``CLAIMS`` of :class:`~dyntools.symbolic.core.Claim` objects or as module-level
``Claim`` objects (taken in definition order). Everything that can go wrong while loading — the
file does not exist, has a syntax error, raises, defines no claims, two claims share a name —
is a ``ValueError`` whose one-line message names the file (and the claim, where there is one).
A model file defines ``MODEL``, a :class:`dyntools.models.base.Model` (typically a
:class:`dyntools.models.symbolic.SymbolicModel`); it may define claims too (:func:`load_model`).
"""

from __future__ import annotations

import sys
import traceback
import types
from pathlib import Path

from dyntools.symbolic.core import Claim


def _where(path: Path, tb) -> str:
    """``file:line`` of the deepest frame of the traceback that is in the user's file."""
    line = None
    for frame in traceback.extract_tb(tb):
        if Path(frame.filename).resolve() == path:
            line = frame.lineno
    return f"{path.name}:{line}" if line else path.name


def execute(path) -> types.ModuleType:
    """Execute the user's file ``path`` as a module (errors: one-line ``ValueError`` naming the file)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--file {path}: no such file" if not path.exists() else f"--file {path}: not a file")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--file {path}: cannot read it ({exc})") from None
    resolved = path.resolve()
    try:
        code = compile(source, str(resolved), "exec")
    except SyntaxError as exc:
        raise ValueError(f"--file {path}:{exc.lineno}: syntax error: {exc.msg}") from None
    module = types.ModuleType(f"dyntools_user_claims_{abs(hash(str(resolved)))}")
    module.__file__ = str(resolved)
    sys.path.insert(0, str(resolved.parent))  # the file may import its neighbours
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:        # a file that calls sys.exit() is an error, not an exit
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ValueError(
            f"--file {_where(resolved, exc.__traceback__)}: executing the file raised "
            f"{type(exc).__name__}: {first}"
        ) from None
    finally:
        sys.path.remove(str(resolved.parent))
    return module


def load_model(path):
    """Execute ``path`` and return its ``MODEL`` (a :class:`~dyntools.models.base.Model`)."""
    from dyntools.models.base import Model

    module = execute(path)
    model = module.__dict__.get("MODEL")
    if model is None:
        raise ValueError(f"--file {path}: defines no MODEL (expected MODEL = dt.SymbolicModel(...))")
    if not isinstance(model, Model):
        raise ValueError(f"--file {path}: MODEL is a {type(model).__name__}, not a dyntools model")
    return model


def load_claims(path) -> list[Claim]:
    """Execute ``path`` and return its claims (see the module docstring)."""
    module = execute(path)
    if "CLAIMS" in module.__dict__:
        claims = module.CLAIMS
        if isinstance(claims, Claim):
            claims = [claims]
        try:
            claims = list(claims)
        except TypeError:
            raise ValueError(f"--file {path}: CLAIMS must be a list of Claim objects") from None
        bad = [c for c in claims if not isinstance(c, Claim)]
        if bad:
            raise ValueError(f"--file {path}: CLAIMS contains a {type(bad[0]).__name__}, not a Claim")
    else:
        claims = [v for k, v in module.__dict__.items() if isinstance(v, Claim) and not k.startswith("_")]
    if not claims:
        raise ValueError(
            f"--file {path}: defines no claims (expected a list CLAIMS of dyntools.symbolic.Claim "
            "or module-level Claim objects)"
        )
    seen: set[str] = set()
    for c in claims:
        if c.name in seen:
            raise ValueError(f"--file {path}: two claims are named {c.name!r}")
        seen.add(c.name)
    return claims
