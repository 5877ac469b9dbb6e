"""The built-in claims: every family of claims that a plugin module declares, in one registry.

A family is declared where its claims are written — ``FAMILY = ClaimFamily("voronoi", order=110)`` next to the
``CLAIMS`` of ``proofs/voronoi.py`` — and found by the one plugin discovery (:func:`dyntools.plugins.claim_families`:
the modules of ``dyntools.proofs``, then the entry-point group ``dyntools.plugins``, so a user's package adds a
family the same way). This module is the library's face of them, for ``dt.claim_families``,
``dt.builtin_claims``, ``dyntools prove``, ``python -m dyntools.proofs`` and the report.

Example::

    import dyntools as dt
    dt.claim_families()[:2]   # -> ['sgd-weight-decay', 'adaptive-preconditioners']
    report = dt.prove(dt.builtin_claims(["voronoi"], controls=True))
    report["voronoi-exact-rule-is-nearest-center"].verdict   # -> 'refuted'
"""

from __future__ import annotations

from dyntools import plugins


def claim_families() -> list[str]:
    """The names of the built-in families of claims, in their declared order (``dyntools prove --list``);
    public as ``dt.claim_families``."""
    return list(plugins.claim_families())


def builtin_registry():
    """A :class:`~dyntools.symbolic.registry.Registry` filled with the built-in families, in order."""
    from dyntools.symbolic.registry import registry_of

    return registry_of(plugins.claim_families())


def builtin_claims(names=(), *, controls: bool = False) -> list:
    """The built-in claims that ``dyntools prove NAME…`` runs: ``names`` are claim or family names
    (every family when empty); false controls come with ``controls=True`` or when named. Public as
    ``dt.builtin_claims``; run them with ``dt.prove``.

    Parameters
    ----------
    names : sequence of str, default ()
        Claim or family names (every family when empty).
    controls : bool, default False
        Include the false controls.

    Returns
    -------
    list of Claim

    Raises
    ------
    ValueError
        When a name is neither a claim nor a family.
    """
    return builtin_registry().select(names, controls=controls)
