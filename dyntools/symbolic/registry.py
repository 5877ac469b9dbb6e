"""A plain registry of claims, grouped into named families.

The registry knows nothing about where claims come from: :mod:`dyntools.claims` fills one with the
families that plugin modules declare (``proofs/``, a user's package), ``dyntools prove --file`` with the
claims of a user's file, and a library user can fill one with their own::

    reg = Registry()
    reg.register_family("mine", [claim_a, claim_b])          # Claim objects
    reg.register_family("lazy", lambda: load_my_claims())     # loaded on first use
    results = run(reg.select(["mine"]))

A family source is an iterable of :class:`~dyntools.symbolic.core.Claim`, an object with a
``CLAIMS`` attribute (a module), or a zero-argument callable returning either (so that sympy work
and imports happen only when the family is used). A family is addressed by its name, a claim by
its own name; the two namespaces must not collide.

A plugin module declares its family with :class:`ClaimFamily` (see :mod:`dyntools.plugins`)::

    FAMILY = ClaimFamily("sgd-weight-decay", order=10)   # its claims: the module's CLAIMS
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dyntools.symbolic.core import Claim, ClaimResult, claim_list


def _claims_of(source) -> list[Claim]:
    if callable(source) and not isinstance(source, Claim) and not hasattr(source, "CLAIMS"):
        source = source()
    if hasattr(source, "CLAIMS"):
        source = source.CLAIMS
    return claim_list(source, "a family must contain")


@dataclass(frozen=True)
class ClaimFamily:
    """A family of claims as a plugin module declares it (module level, ``FAMILY`` or ``FAMILIES``).

    Parameters
    ----------
    name : str
        The family's name (``dyntools prove NAME``, ``dt.builtin_claims([NAME])``); a non-empty string.
    order : float, default inf
        Where the family comes in ``dyntools prove --list`` and the report: by increasing ``order``, ties by
        discovery order (modules by name, then the entry points').
    claims : family source or None, default None
        Anything :meth:`Registry.register_family` accepts; None means the declaring module's ``CLAIMS``.
    """

    name: str
    order: float = math.inf
    claims: object = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ClaimFamily name must be a non-empty string, got {self.name!r}")
        if isinstance(self.order, bool) or not isinstance(self.order, int | float) or math.isnan(self.order):
            raise TypeError(f"ClaimFamily order must be a number, got {self.order!r}")


def families_of(modules) -> dict[str, ClaimFamily]:
    """The claim families that ``modules`` declare (``FAMILY``/``FAMILIES``), by name, in increasing ``order``
    (ties: the modules' order); a family without its own ``claims`` gets its module's ``CLAIMS``.

    Raises
    ------
    TypeError
        When a declaration is not a :class:`ClaimFamily`, or a family without ``claims`` is declared by a module
        without ``CLAIMS``.
    RuntimeError
        When two modules declare the same family name.
    """
    found: dict[str, ClaimFamily] = {}
    for module in modules:
        declared = list(getattr(module, "FAMILIES", ())) + ([module.FAMILY] if hasattr(module, "FAMILY") else [])
        for family in declared:
            if not isinstance(family, ClaimFamily):
                raise TypeError(f"{module.__name__}: FAMILY must be a ClaimFamily, got {type(family).__name__}")
            if family.claims is None:
                if not hasattr(module, "CLAIMS"):
                    raise TypeError(f"{module.__name__}: family {family.name!r} has no claims (no CLAIMS list)")
                family = dataclasses.replace(family, claims=module.CLAIMS)
            if family.name in found:
                raise RuntimeError(f"two claim families named {family.name!r} ({module.__name__})")
            found[family.name] = family
    return dict(sorted(found.items(), key=lambda item: item[1].order))


def registry_of(families: dict[str, ClaimFamily]) -> Registry:
    """A :class:`Registry` filled with ``families`` (name → :class:`ClaimFamily`), in their order."""
    reg = Registry()
    for name, family in families.items():
        reg.register_family(name, family.claims)
    return reg


class Registry:
    """Named families of claims, loaded lazily, with name selection."""

    def __init__(self) -> None:
        self._sources: dict[str, object] = {}
        self._loaded: dict[str, list[Claim]] = {}

    def register_family(self, name: str, source: Iterable[Claim] | Callable | object) -> None:
        """Add the family ``name`` (see the module docstring for the accepted sources)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"family name must be a non-empty string, got {name!r}")
        if name in self._sources:
            raise ValueError(f"family {name!r} is already registered")
        self._sources[name] = source

    @property
    def families(self) -> list[str]:
        return list(self._sources)

    def family_claims(self, family: str) -> list[Claim]:
        if family not in self._loaded:
            claims = _claims_of(self._sources[family])
            for c in claims:
                c.family = family
            self._loaded[family] = claims
        return self._loaded[family]

    def all_claims(self) -> dict[str, Claim]:
        """Every registered claim (controls included), in registration order."""
        out: dict[str, Claim] = {}
        for family in self._sources:
            for claim in self.family_claims(family):
                if claim.name in out or claim.name in self._sources:
                    raise ValueError(f"duplicate claim name {claim.name!r} (family {family})")
                out[claim.name] = claim
        return out

    def select(self, names: Iterable[str] = (), *, controls: bool = False) -> list[Claim]:
        """Claims named by ``names`` (claim or family names; every family when empty).

        A family or the default selection includes its false controls only with
        ``controls=True``; a control named explicitly is always included. Unknown names raise
        ``ValueError``.
        """
        claims = self.all_claims()
        names = list(names)
        unknown = [n for n in names if n not in claims and n not in self._sources]
        if unknown:
            raise ValueError(
                f"Invalid claim name(s): {', '.join(unknown)} "
                "(see `dyntools prove --list` for the claims and families)"
            )
        chosen: list[Claim] = []
        for n in names or list(self._sources):
            group = [claims[n]] if n in claims else [c for c in claims.values() if c.family == n]
            for c in group:
                if (n in claims or controls or not c.control) and c not in chosen:
                    chosen.append(c)
        return chosen


def run(claims: Iterable[Claim], progress=None, *, timeout: float | None = None) -> list[ClaimResult]:
    """Run the claims in order (each under its budget, see :meth:`Claim.run`)."""
    results = []
    for claim in claims:
        results.append(claim.run(timeout=timeout))
        if progress is not None:
            progress(results[-1])
    return results
