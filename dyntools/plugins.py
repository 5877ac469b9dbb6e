"""Plugins: how dyntools finds its experiments, report entries, figures and claim families.

A plugin is a module. It declares, at module level, any of

* ``EXPERIMENT`` / ``EXPERIMENTS`` (:class:`dyntools.spec.Experiment`): a ``dyntools simulate NAME`` or
  ``dyntools sweep NAME`` command, its parameters, its result schema;
* ``REPORT`` / ``REPORTS`` (:class:`dyntools.spec.Entry`): an entry of ``dyntools reproduce``;
* ``FAMILY`` / ``FAMILIES`` (:class:`dyntools.symbolic.registry.ClaimFamily`): a family of claims of
  ``dyntools prove`` and ``dt.builtin_claims`` — its name, its place in the list, and its claims (by default the
  module's ``CLAIMS``, a list of :class:`dyntools.symbolic.Claim`)::

      FAMILY = ClaimFamily("sgd-weight-decay", order=10)
      CLAIMS = [Claim(...), ...]

An experiment declares the figures of the result kinds it writes (``Experiment.figures``: kind → plotter);
:func:`figures` gathers them with the library's own kinds (``dt.train``'s ``"train"``). A plugin module declares
its own stream purposes as ``STREAMS = {purpose: key word}``; :func:`stream_keys` checks them against the
library's table (:data:`dyntools.engine.streams.KEYS`) and each other. For each result kind it declares, it
gives the arguments of the smallest run that writes one, ``SAMPLE_RUNS = {kind: [arguments]}``: :func:`sample_runs`
gathers them (the fuzz suite runs them and damages every declared field of what they write).

One discovery finds every plugin: the modules of the ``dyntools.simulations`` and ``dyntools.proofs`` packages (the
repository's ``simulations/`` and ``proofs/``), then the modules that installed distributions name in the entry-point
group :data:`ENTRY_POINT_GROUP` — so a researcher's own package adds experiments the same way::

    [project.entry-points."dyntools.plugins"]
    my_experiment = "mypackage.my_experiment"

Modules of the two packages whose name starts with ``_`` are not plugins. Plugins keep their module-level imports
light (heavy code is imported inside ``run``/``reproduce``), so that ``dyntools --help`` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from importlib import metadata

from dyntools.spec import Entry, Experiment

#: the entry-point group through which installed distributions add plugin modules
ENTRY_POINT_GROUP = "dyntools.plugins"

#: the packages scanned for plugin modules, in this order
PACKAGES = ("dyntools.proofs", "dyntools.simulations")

#: the packages scanned for experiments, their figures and their streams (not the proofs: those import sympy)
EXPERIMENT_PACKAGES = PACKAGES[1:]


def _scan(package_name: str) -> list:
    package = importlib.import_module(package_name)
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{package_name}.{name}") for name in names]


@cache
def modules(packages: tuple[str, ...] = PACKAGES) -> tuple:
    """The plugin modules of ``packages`` by name, then the entry points' modules by name.

    The command line's ``--help`` asks for ``dyntools.simulations`` only: the proof modules build their sympy
    claims when imported."""
    found = [module for package in packages for module in _scan(package)]
    for point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        module = point.load()
        if module not in found:
            found.append(module)
    return tuple(found)


def declared(module, one: str, many: str) -> list:
    """What ``module`` declares under the names ``one`` (a single object) and ``many`` (a sequence)."""
    found = list(getattr(module, many, ()))
    if hasattr(module, one):
        found.append(getattr(module, one))
    return found


@cache
def experiments(verb: str) -> dict[str, Experiment]:
    """The experiments of one verb (``"simulate"`` or ``"sweep"``) by name."""
    stream_keys()                                   # a plugin's stream purpose that clashes is refused here
    out: dict[str, Experiment] = {}
    for module in modules(EXPERIMENT_PACKAGES):
        for exp in declared(module, "EXPERIMENT", "EXPERIMENTS"):
            if exp.verb != verb:
                continue
            if exp.name in out:
                raise RuntimeError(f"two experiments named {verb} {exp.name!r} ({module.__name__})")
            out[exp.name] = exp
    return out


@cache
def catalogue() -> dict[str, Entry]:
    """``dyntools reproduce``'s entries by name, in report order (the proofs first)."""
    entries = [entry for module in modules() for entry in declared(module, "REPORT", "REPORTS")]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise RuntimeError(f"duplicate catalogue entries in {names}")
    return {e.name: e for e in sorted(entries, key=lambda e: e.order)}


def load_result(directory):
    """``dt.load``: :func:`dyntools.store.load` once every plugin is imported, so that the ``config`` and
    ``summary`` of a result of any catalogue kind are checked against the schema its experiment declares
    (:mod:`dyntools.result_schema`), as ``dyntools plot`` checks them — and those of :func:`dyntools.train`
    (kind ``"train"``, declared by :mod:`dyntools.result_schema` itself).

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

    modules(EXPERIMENT_PACKAGES)                    # the experiments declare the schemas (no sympy for a load)
    return store.load(directory)


@cache
def claim_families() -> dict:
    """The claim families that every plugin module declares (``FAMILY``/``FAMILIES``: the proofs', an
    experiment's, an entry point's), by name, in increasing ``order`` (ties: discovery order); a family without
    its own ``claims`` gets its module's ``CLAIMS``. The library's face is :mod:`dyntools.claims`.

    Raises
    ------
    TypeError
        When a declaration is not a :class:`~dyntools.symbolic.registry.ClaimFamily`, or a family without
        ``claims`` is declared by a module without ``CLAIMS``.
    RuntimeError
        When two modules declare the same family name.
    """
    from dyntools.symbolic.registry import families_of

    return families_of(modules())


def _library_figures() -> dict[str, Callable]:
    """The plotters of the result kinds the library writes itself (no experiment owns them)."""
    from dyntools.plots import train

    return dict(train.FIGURES)


@cache
def figures() -> dict[str, Callable]:
    """Result kind → its plotter ``plotter(result, out_dir, formats) -> [paths]``: the library's kinds, then what
    every experiment declares (``Experiment.figures``), of both verbs and of every plugin module.

    Raises
    ------
    RuntimeError
        When two plugins declare different plotters for one kind.
    """
    out = _library_figures()
    for module in modules(EXPERIMENT_PACKAGES):
        for exp in declared(module, "EXPERIMENT", "EXPERIMENTS"):
            for kind, plotter in exp.figures.items():
                if out.setdefault(kind, plotter) is not plotter:
                    raise RuntimeError(f"two plotters declared for results of kind {kind!r} "
                                       f"({module.__name__} {exp.name!r} and {out[kind].__module__})")
    return out


def plotter(kind: str) -> Callable:
    """The plotter of ``kind`` (:func:`figures`); ``ValueError`` naming the known kinds otherwise."""
    found = figures()
    if kind not in found:
        raise ValueError(f"Invalid result kind: {kind!r} has no figures (known: {', '.join(sorted(found))})")
    return found[kind]


def plot_result(result, out_dir, formats=("png", "pdf")) -> list:
    """``dt.plot``: every figure of ``result``, drawn by the plotter its kind's experiment declares
    (:func:`plotter`), each marked when the run diverged or ran in float32 (:func:`dyntools.plots.plot_result`).

    Parameters
    ----------
    result : RunResult
        A run's result, e.g. from :func:`dyntools.train` (kind ``"train"``) or ``dt.load``.
    out_dir : path
        The directory the figures are written to (created when missing).
    formats : sequence of str, default ("png", "pdf")
        The formats written.

    Returns
    -------
    list of Path
        The written files.

    Raises
    ------
    ValueError
        When no experiment declares a figure for ``result.kind``.
    """
    from dyntools import plots

    return plots.plot_result(result, out_dir, formats, plotter=plotter(result.kind))


@cache
def stream_keys() -> dict[str, int]:
    """Every stream purpose → its key word: the library's (:data:`dyntools.engine.streams.KEYS`), then each
    plugin module's ``STREAMS``; ``ValueError`` (:func:`dyntools.engine.streams.combine`) when two purposes share a
    name or a key word."""
    from dyntools.engine import streams

    tables = [("dyntools.engine.streams", streams.KEYS)]
    tables += [(m.__name__, m.STREAMS) for m in modules(EXPERIMENT_PACKAGES) if hasattr(m, "STREAMS")]
    return streams.combine(tables)


@cache
def sample_runs() -> dict[str, tuple[str, ...]]:
    """Result kind → the command line (``dyntools`` arguments, without ``--out``) of the smallest run that writes a
    result of that kind: the verb and name of the experiment declaring the kind, then the arguments its module gives
    in ``SAMPLE_RUNS = {kind: [arguments]}``.

    Raises
    ------
    TypeError
        When a module's ``SAMPLE_RUNS`` names a kind that none of its experiments declares a result of, or gives
        arguments that are not a list of strings.
    RuntimeError
        When two modules declare a sample run of one kind.
    """
    out: dict[str, tuple[str, ...]] = {}
    for module in modules(EXPERIMENT_PACKAGES):
        commands = {schema.kind: (exp.verb, exp.name)
                    for exp in declared(module, "EXPERIMENT", "EXPERIMENTS") for schema in exp.results}
        for kind, args in getattr(module, "SAMPLE_RUNS", {}).items():
            if kind not in commands:
                raise TypeError(f"{module.__name__}: SAMPLE_RUNS names kind {kind!r}, which none of its experiments "
                                f"writes (its kinds: {', '.join(sorted(commands)) or 'none'})")
            if isinstance(args, str) or not all(isinstance(a, str) for a in args):
                raise TypeError(f"{module.__name__}: the sample run of kind {kind!r} is {args!r}, not a list of "
                                f"strings (the arguments after {' '.join(commands[kind])!r})")
            if kind in out:
                raise RuntimeError(f"two sample runs declared for results of kind {kind!r} ({module.__name__})")
            out[kind] = (*commands[kind], *args)
    return out
