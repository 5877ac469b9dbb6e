"""The registry of claims: one ``proofs/<module>.py`` per family, each exporting ``CLAIMS``.

Families are imported lazily (sympy work happens only when a claim runs). A family is
addressed by its module name with dashes (``loss-stabilization``); a claim by its own name.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from dyntools.symbolic.core import Claim, ClaimResult

#: family name → module defining ``CLAIMS: list[Claim]``
FAMILIES: dict[str, str] = {
    "sgd-weight-decay": "proofs.sgd_weight_decay",
    "adaptive-preconditioners": "proofs.adaptive_preconditioners",
    "decoupled-decay": "proofs.decoupled_decay",
    "gd-quadratic": "proofs.gd_quadratic",
    "loss-stabilization": "proofs.loss_stabilization",
    "sgd-noise": "proofs.sgd_noise",
    "diagonal-nets": "proofs.diagonal_nets",
    "voronoi": "proofs.voronoi",
}


def family_claims(family: str) -> list[Claim]:
    module = importlib.import_module(FAMILIES[family])
    claims = list(module.CLAIMS)
    for c in claims:
        c.family = family
    return claims


def all_claims() -> dict[str, Claim]:
    """Every registered claim (controls included), in registry order."""
    out: dict[str, Claim] = {}
    for family in FAMILIES:
        for claim in family_claims(family):
            if claim.name in out or claim.name in FAMILIES:
                raise RuntimeError(f"duplicate claim name {claim.name!r}")
            out[claim.name] = claim
    return out


def select(names: Iterable[str] = (), *, controls: bool = False) -> list[Claim]:
    """Claims named by ``names`` (claim or family names; all families when empty).

    A family or the default selection includes its false controls only with ``controls=True``;
    a control named explicitly is always included. Unknown names raise ``ValueError``.
    """
    claims = all_claims()
    names = list(names)
    unknown = [n for n in names if n not in claims and n not in FAMILIES]
    if unknown:
        raise ValueError(
            f"Invalid claim name(s): {', '.join(unknown)} "
            "(see `dyntools prove --list` for the claims and families)"
        )
    chosen: list[Claim] = []
    for n in names or list(FAMILIES):
        group = [claims[n]] if n in claims else [c for c in claims.values() if c.family == n]
        for c in group:
            if (n in claims or controls or not c.control) and c not in chosen:
                chosen.append(c)
    return chosen


def run(claims: Iterable[Claim], progress=None) -> list[ClaimResult]:
    results = []
    for claim in claims:
        results.append(claim.run())
        if progress is not None:
            progress(results[-1])
    return results
