"""The claim families of this package (``proofs/``), for its own runner (``python -m dyntools.proofs``) and its
report entry. They find their sibling modules themselves — the package's own folder, not the plugin discovery a
floor above (:func:`dyntools.claims.builtin_registry`, which also sees the families of installed plugins)."""

from __future__ import annotations

import importlib
import pkgutil


def registry():
    """A :class:`~dyntools.symbolic.registry.Registry` of the families the modules of this package declare."""
    from dyntools.symbolic.registry import families_of, registry_of

    package = importlib.import_module(__package__)
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))
    return registry_of(families_of(importlib.import_module(f"{__package__}.{name}") for name in names))
