"""Experiment specs: a parameter is declared once, as a dataclass field with its type, range, default and help.

An experiment (in ``simulations/``) is one :class:`Experiment`: a name, a parameter dataclass whose fields
are made with :func:`param`, presets (named overrides of the defaults), and the hooks that run it and
present the result. The command-line layer turns the spec into flags, their validation and ``--help``
(:mod:`dyntools.commands.experiment`); Python callers build the dataclass directly and call
:func:`validate`. Nothing here knows about argparse or about any particular experiment.

Kinds of parameter (``kind=``, inferred from the default where it is a plain int, float, str or bool):

* ``int``, ``float`` — numbers; ``low``/``high`` bound them (``low_open``/``high_open`` exclude the bound);
* ``str`` — free text, or one of ``choices``;
* ``flag`` — a boolean switch (default ``False``);
* ``floats``, ``ints``, ``strs`` — comma-separated lists (a tuple; ``low``/``high`` bound each entry,
  ``max_len`` the number of entries);
* ``grid`` — ``A:B:N`` (a ``(float, float, int)`` tuple, A and B finite, ``1 <= N <= max_len``; the
  experiment checks what A, B and N mean — or declares that check with the parameter, ``check=``, which then
  replaces "A and B finite": e.g. the weight-decay axis of ``adamw-grid``, checked in one place);
* ``file`` — a path that must name an existing readable file (or one of ``choices``: named built-in data).

A default of ``None`` means "not given": the experiment (or the model it runs) decides.

Sizes are bounded: every ``int`` and ``ints`` parameter declares ``high`` and every list and grid
``max_len`` (``tests/test_fuzz_values.py`` checks), chosen from the memory or time the size costs, so that a
request the machine cannot hold is refused with one line before anything is allocated or written.
Products of sizes (``paths × records``) are checked by the experiment's ``check`` as an estimate of the run's
peak memory against the memory available (:func:`dyntools.memory.require`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dyntools import result_schema, validation
from dyntools.params import (  # noqa: F401  (the declarations, re-exported: experiments import them from here)
    KINDS,
    Param,
    check_value,
    coerce,
    flag_of,
    param,
    params_of,
    validate,
    with_preset,
)

# ----------------------------------------------------------------------------------- experiments

@dataclass
class RunContext:
    """What a run needs besides its parameters."""

    seed: int = 0
    progress: bool = False
    out: Path | None = None          # the result directory (sweeps write there as they go)
    preset: str | None = None


@dataclass(frozen=True)
class Experiment:
    """One experiment of ``simulations/``, declared once; the CLI is generated from it.

    ``run(params, ctx)`` returns a :class:`~dyntools.engine.result.RunResult`; ``check(params)`` holds
    the cross-field checks (and may read given files) and runs before anything is written;
    ``summary(params, result)`` is the JSON summary, ``table(params, result)`` the human one.
    ``verb="simulate"``: the CLI saves the result to ``--out``; ``verb="sweep"``: ``run`` writes
    there itself (cells as they finish, resumable). ``results`` declares, per kind of result it writes, the
    schema of ``config``/``summary`` (derived from ``params``) that every load checks; ``figures`` maps some of
    those kinds to their plotter, the function ``plotter(result, out_dir, formats) -> [paths]`` that draws every
    figure of a result of that kind (``dyntools plot`` and the report find it through
    :func:`dyntools.plugins.figures`).
    """

    name: str
    verb: str
    help: str
    example: str
    params: type
    run: Callable
    table: Callable
    summary: Callable
    check: Callable | None = None
    presets: dict[str, dict] = field(default_factory=dict)   # the first is the default
    conditional: Callable | None = None   # (preset, given options) -> defaults implied by them
    #: what its results hold, per kind (:func:`dyntools.result_schema.derive`); checked on every load
    results: tuple = ()
    #: result kind → its plotter (a kind among ``results``)
    figures: Mapping[str, Callable] = field(default_factory=dict)

    def __post_init__(self):
        validation.one_of("verb", self.verb, ("simulate", "sweep"))
        for schema in self.results:
            result_schema.register(schema)
        kinds = {schema.kind for schema in self.results}
        for kind, plotter in self.figures.items():
            if kind not in kinds:
                raise TypeError(f"{self.name}: a figure of kind {kind!r}, which it declares no result of "
                                f"(results: {', '.join(sorted(kinds)) or 'none'})")
            if not callable(plotter):
                raise TypeError(f"{self.name}: the plotter of kind {kind!r} is {plotter!r}, not a function")
        names = {f.name for f in dataclasses.fields(self.params)}
        for preset, values in self.presets.items():
            unknown = set(values) - names
            if unknown:
                raise TypeError(f"{self.name}: preset {preset!r} sets unknown parameters "
                                f"{', '.join(sorted(unknown))}")

    #: the module-level names :meth:`declare` reads, by field
    CONVENTIONAL_HOOKS = {"run": "run", "table": "table", "summary": "summary", "check": "check", "results": "RESULTS"}

    @classmethod
    def declare(cls, hooks: Mapping, **fields) -> Experiment:
        """The experiment of a module whose hooks have their conventional names: ``run``, ``table``, ``summary``,
        ``check`` and the ``RESULTS`` schemas are read from ``hooks`` (the module's ``globals()``) unless given in
        ``fields``; ``EXPERIMENT = Experiment.declare(globals(), name=…, verb=…, help=…, params=…)``."""
        found = {field_name: hooks[name] for field_name, name in cls.CONVENTIONAL_HOOKS.items()
                 if name in hooks and field_name not in fields}
        return cls(**found, **fields)

    def make(self, preset: str | None = None, **overrides):
        """Parameters: defaults ← the preset ← ``overrides``, every field checked, then ``check``."""
        params = with_preset(self.params, self.presets, preset, self.conditional, **overrides)
        if self.check is not None:
            self.check(params)
        return params


@dataclass(frozen=True)
class Entry:
    """One entry of ``dyntools reproduce``'s catalogue: ``reproduce(ctx) -> Section``."""

    name: str
    title: str
    reproduce: Callable
    order: int = 100
    #: its work runs (mostly) on one processor — no worker processes, and its processor seconds at most ~1.2 × its
    #: wall seconds when it runs alone: ``dyntools reproduce`` may run it in its side lane beside the others
    #: (:mod:`dyntools.report`)
    single_core: bool = False
