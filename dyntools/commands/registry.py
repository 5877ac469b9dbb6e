"""Where the command line finds experiments and catalogue entries: by scanning the ``dyntools.simulations``
package (the repository's ``simulations/``) for modules that expose ``EXPERIMENT``/``EXPERIMENTS``
(:class:`dyntools.spec.Experiment`) and ``REPORT``/``REPORTS`` (:class:`dyntools.spec.Entry`), plus the proofs
entry of ``dyntools.proofs.report`` (``proofs/report.py``).

This is the only place (with :mod:`dyntools.commands.prove`) that imports ``simulations`` or ``proofs``; modules of
``simulations/`` keep their imports light (heavy code is imported inside ``run``/``reproduce``), so
``dyntools --help`` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from dyntools.spec import Entry, Experiment


@cache
def _modules() -> tuple:
    from dyntools import simulations

    return tuple(importlib.import_module(f"dyntools.simulations.{m.name}")
                 for m in sorted(pkgutil.iter_modules(simulations.__path__), key=lambda m: m.name)
                 if not m.name.startswith("_"))


def _collect(module, one: str, many: str) -> list:
    found = list(getattr(module, many, ()))
    if hasattr(module, one):
        found.append(getattr(module, one))
    return found


@cache
def experiments(verb: str) -> dict[str, Experiment]:
    """The experiments of one verb (``"simulate"`` or ``"sweep"``) by name."""
    out: dict[str, Experiment] = {}
    for module in _modules():
        for exp in _collect(module, "EXPERIMENT", "EXPERIMENTS"):
            if exp.verb != verb:
                continue
            if exp.name in out:
                raise RuntimeError(f"two experiments named {verb} {exp.name!r} ({module.__name__})")
            out[exp.name] = exp
    return out


@cache
def catalogue() -> dict[str, Entry]:
    """``dyntools reproduce``'s entries by name, in report order (the proofs first)."""
    from dyntools.proofs import report as proofs_report

    entries = [Entry("proofs", proofs_report.TITLE, proofs_report.reproduce, order=0, single_core=True)]
    for module in _modules():
        entries += _collect(module, "REPORT", "REPORTS")
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise RuntimeError(f"duplicate catalogue entries in {names}")
    return {e.name: e for e in sorted(entries, key=lambda e: e.order)}


def load_result(directory):
    """``dt.load``: :func:`dyntools.store.load` once every experiment is imported, so that the ``config`` and
    ``summary`` of a result of any catalogue kind are checked against the schema its experiment declares
    (:mod:`dyntools.result_schema`), as ``dyntools plot`` checks them — and those of :func:`dyntools.train`
    (kind ``"train"``, declared by the trainer's module).

    Parameters
    ----------
    directory : path
        A result directory written by :func:`dyntools.save`.

    Returns
    -------
    RunResult

    Raises
    ------
    dyntools.store.StoreError
        When the directory is missing, damaged or fails its schema.
    """
    from dyntools import store
    from dyntools.dynamics import train  # noqa: F401  (registers the "train" schema)

    experiments("simulate")
    experiments("sweep")
    return store.load(directory)
