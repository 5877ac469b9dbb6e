"""Claims and models from a user's Python file (``dyntools prove --file my_claims.py``,
``dyntools simulate model --file my_model.py``).

The file is ordinary Python and is **executed**: only run files you trust. It defines its claims
either as a list ``CLAIMS`` of :class:`~dyntools.symbolic.core.Claim` objects or as module-level
``Claim`` objects (taken in definition order). Everything that can go wrong while loading — the
file does not exist, has a syntax error, raises, defines no claims, two claims share a name —
is a ``ValueError`` whose one-line message names the file (and the claim, where there is one).
A model file defines ``MODEL``, a :class:`dyntools.models.base.Model` (typically a
:class:`dyntools.models.symbolic.SymbolicModel`), and may define claims about it too (:func:`load_model`).
"""

from __future__ import annotations

from pathlib import Path

from dyntools.symbolic.core import Claim
from dyntools.user_code import run_file


def load_model(path):
    """Execute ``path`` and return its ``MODEL`` (a :class:`~dyntools.models.base.Model`)."""
    from dyntools.models.base import Model

    model = run_file(Path(path), "--file").get("MODEL")
    if model is None:
        raise ValueError(f"--file {path}: defines no MODEL (expected MODEL = dt.SymbolicModel(...))")
    if not isinstance(model, Model):
        raise ValueError(f"--file {path}: MODEL is a {type(model).__name__}, not a dyntools model")
    return model


def load_claims(path) -> list[Claim]:
    """Execute ``path`` and return its claims (see the module docstring).

    Parameters
    ----------
    path : path
        A Python file that defines claims.

    Returns
    -------
    list of Claim
    """
    path = Path(path)
    namespace = run_file(path, "--file")
    if "CLAIMS" in namespace:
        claims = namespace["CLAIMS"]
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
        claims = [v for k, v in namespace.items() if isinstance(v, Claim) and not k.startswith("_")]
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
