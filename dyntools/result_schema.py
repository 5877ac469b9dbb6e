"""The declared contents of a result, per kind: what ``config`` and ``summary`` of ``result.json`` may hold.

:mod:`dyntools.store` checks the envelope of every result (its fields, the status, the array specs); this
module checks what is inside, on every load, for each kind an experiment declared:

* **config**: the keys an experiment's run writes that are its own parameters are declared by the spec's
  parameter dataclass (:func:`dyntools.spec.param`: kind, range, choices, most entries), so the schema is
  *derived* from the experiment, never written twice; a few keys that are not parameters (a model's name,
  a nested parameter set) are declared next to the experiment with the same :class:`~dyntools.spec.Param`.
  Every declared key must be present, of its JSON type (a number, a string, a list …), in its range and,
  for names, one of the known ones. The size caps of a request (integers' upper bounds, most entries) do
  not apply to a stored result (:func:`as_stored`): a run made from Python may exceed them.
* **summary**: a mapping; each declared key, when present, of its declared JSON kind
  (:data:`SUMMARY_KINDS`).
* **everywhere**: only JSON values dyntools writes — no ``NaN``/``Infinity`` literal (non-finite numbers
  are written as ``null``).

A violation is one :class:`~dyntools.store.StoreError` line naming the file and the field, e.g.
``Damaged result runs/x/result.json: config['eta'] = -1.0 (must be > 0)``. Kinds are registered by the
experiments that write them (:class:`dyntools.spec.Experiment` ``results=``); the command line imports
every experiment, so ``plot``, ``sweep`` resume and ``reproduce`` know every kind of the catalogue;
:func:`dyntools.train`'s kind ``"train"`` is declared here (:data:`TRAIN`), below the trainer, so that
loading a result never imports the trainer (numba) and nothing here names a module above it. A kind nobody declared (a
user's own) gets the envelope and the "everywhere" checks only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from dyntools.params import Param, check_value

#: JSON kinds a summary value may be declared as (``None`` is allowed for numbers: a non-finite value
#: is written as ``null``).
SUMMARY_KINDS = ("number", "int", "str", "flag", "list", "mapping")


@dataclass(frozen=True)
class ResultSchema:
    """What a result of ``kind`` holds: ``config`` key → declaration (required unless ``optional``; nullable
    when its default is ``None``), ``nested`` key → schema of a config value that is itself a parameter set,
    ``summary`` key → one of :data:`SUMMARY_KINDS`."""

    kind: str
    config: Mapping[str, tuple[Param, bool]] = field(default_factory=dict)     # key → (declaration, nullable)
    nested: Mapping[str, ResultSchema] = field(default_factory=dict)
    summary: Mapping[str, str] = field(default_factory=dict)
    optional: frozenset[str] = frozenset()      # config keys checked when present (written by some runs only)

    def __post_init__(self):
        bad = {k: v for k, v in self.summary.items() if v not in SUMMARY_KINDS}
        if bad:
            raise ValueError(f"{self.kind}: summary kinds {bad} (must be among {', '.join(SUMMARY_KINDS)})")


def derive(kind: str, params, keys: str = "", *, also=(), extra: Mapping[str, Param] | None = None,
           nested: Mapping[str, ResultSchema] | None = None, summary: Mapping[str, str] | None = None,
           nullable: str = "", optional: str = "") -> ResultSchema:
    """The schema of ``kind`` from the parameter dataclass ``params`` (then each of ``also``): every name
    of ``keys`` (space-separated) is a config key declared by the field of that name; ``extra`` declares
    config keys that are no parameter; ``nullable`` names keys that may be ``null`` besides those whose
    default is ``None``; ``optional`` names fields checked only when present (keys that the experiment adds
    to what a library runner writes: a run made from Python lacks them)."""
    fields = {}
    for cls in (params, *also):
        for f in dataclasses.fields(cls):
            if "param" in f.metadata:
                fields.setdefault(f.name, (f.metadata["param"], f.default is None))
    config = {}
    for key in keys.split() + optional.split():
        if key not in fields:
            raise KeyError(f"{kind}: config key {key!r} is no field of {params.__name__}"
                           + "".join(f" or {c.__name__}" for c in also) + " (declare it in extra=)")
        config[key] = fields[key]
    for key, p in (extra or {}).items():
        config[key] = (p, False)
    for key in nullable.split():
        config[key] = (config[key][0], True)
    return ResultSchema(kind, config, dict(nested or {}), dict(summary or {}), frozenset(optional.split()))


REGISTRY: dict[str, ResultSchema] = {}


def schema_of(kind: str) -> ResultSchema | None:
    """The schema of ``kind`` (declared by its experiment, or :data:`TRAIN` here), or None."""
    return REGISTRY.get(kind)


def register(schema: ResultSchema) -> None:
    """Declare what results of ``schema.kind`` hold (an experiment does, when it is defined)."""
    old = REGISTRY.get(schema.kind)
    if old is not None and old != schema:
        raise RuntimeError(f"two different schemas declared for results of kind {schema.kind!r}")
    REGISTRY[schema.kind] = schema


class SchemaError(ValueError):
    """A value of a result that its kind's schema does not allow (the message names the field)."""


_JSON = {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list",
         dict: "an object", type(None): "null"}


def _got(value) -> str:
    return _JSON.get(type(value), type(value).__name__)


def _check_finite(value, where: str, depth: int = 0) -> None:
    """Only what :func:`dyntools.store.to_json` writes: no NaN/Infinity anywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SchemaError(f"{where} = {value!r} (dyntools writes a non-finite number as null)")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{where}[{k!r}]", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]", depth + 1)


_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "file": (str,), "flag": (bool,),
          "ints": (list,), "floats": (list,), "strs": (list,), "grid": (list,)}
_ENTRY = {"ints": (int,), "floats": (int, float), "strs": (str,), "grid": (int, float)}
_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "file": "a string", "flag": "true/false",
          "ints": "a list of integers", "floats": "a list of numbers", "strs": "a list of strings",
          "grid": "a list [A, B, N]"}


def as_stored(p: Param) -> Param:
    """The declaration a stored value is checked against: ``p`` without its size caps. The upper bounds of
    integers and the most entries of lists and grids are the memory/time a *request* may cost (the spec's
    policy); a run made through the Python API may exceed them, and its result is still a valid result."""
    if p.kind in ("int", "ints"):
        p = dataclasses.replace(p, high=None, high_open=False)
    return dataclasses.replace(p, max_len=None)


def check_param(where: str, p: Param, value, nullable: bool) -> None:
    """``value`` (as parsed from JSON) against the declaration ``p`` (:func:`as_stored`: types, lower bounds,
    semantic upper bounds, known names); :class:`SchemaError` otherwise."""
    p = as_stored(p)
    if value is None:
        if nullable:
            return
        raise SchemaError(f"{where} must be {_NAMES[p.kind]} (got null)")
    types = _TYPES[p.kind]
    ok = isinstance(value, types) and (p.kind == "flag" or not isinstance(value, bool))
    if ok and p.kind in _ENTRY:
        ok = all(isinstance(v, _ENTRY[p.kind]) and not isinstance(v, bool) for v in value)
        ok = ok and (p.kind != "grid" or (len(value) == 3 and isinstance(value[2], int)))
    if not ok:
        raise SchemaError(f"{where} must be {_NAMES[p.kind]} (got {_got(value)})")
    if p.kind == "file":                       # a name or a path as the run saw it: never opened from here
        return
    try:
        check_value(where, p, tuple(value) if isinstance(value, list) else value)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        raise SchemaError(text.removeprefix("Invalid ").replace(f"{where}: ", f"{where} = ", 1)) from None


def _check_summary_value(where: str, kind: str, value) -> None:
    ok = {"number": lambda v: v is None or (isinstance(v, int | float) and not isinstance(v, bool)),
          "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "str": lambda v: isinstance(v, str), "flag": lambda v: isinstance(v, bool),
          "list": lambda v: isinstance(v, list), "mapping": lambda v: isinstance(v, dict)}[kind](value)
    if not ok:
        want = {"number": "a number or null", "int": "an integer", "str": "a string", "flag": "true/false",
                "list": "a list", "mapping": "an object"}[kind]
        raise SchemaError(f"{where} must be {want} (got {_got(value)})")


def _check_config(schema: ResultSchema, config: dict, where: str) -> None:
    for key, (p, nullable) in schema.config.items():
        if key not in config:
            if key in schema.optional:
                continue
            raise SchemaError(f"{where}[{key!r}] is missing")
        check_param(f"{where}[{key!r}]", p, config[key], nullable)
    for key, sub in schema.nested.items():
        if key not in config:
            raise SchemaError(f"{where}[{key!r}] is missing")
        if not isinstance(config[key], dict):
            raise SchemaError(f"{where}[{key!r}] must be an object (got {_got(config[key])})")
        _check_config(sub, config[key], f"{where}[{key!r}]")


def validate(kind: str, config: dict, summary: dict) -> None:
    """Check ``config`` and ``summary`` (already known to be objects) of a result of ``kind``;
    :class:`SchemaError` naming the field (``config['eta'] …``) otherwise."""
    _check_finite(config, "config")
    _check_finite(summary, "summary")
    schema = schema_of(kind)
    if schema is None:
        return
    _check_config(schema, config, "config")
    for key, want in schema.summary.items():
        if key in summary:
            _check_summary_value(f"summary[{key!r}]", want, summary[key])


def known(*choices: str) -> Param:
    """A config key holding one of the known names ``choices`` (a model, a surface …)."""
    return Param("a known name", "str", choices=tuple(choices))


#: the sampler names a result of :func:`dyntools.train` may hold: :data:`dyntools.engine.samplers.NAMES`
#: (a test checks they are equal; that module compiles numba code, which loading a result does not pay for)
TRAIN_SAMPLERS = ("full", "with-replacement", "epoch", "distinct", "replay")

#: What a result of :func:`dyntools.train` (kind ``"train"``) holds: its config's scalar keys (the model's own
#: description and the runs' list are checked for non-finite numbers only) and its summary.
TRAIN = ResultSchema("train", {
    "steps": (Param("iterations", "int", low=1), False), "batch": (Param("minibatch", "int", low=1), False),
    "sampler": (known(*TRAIN_SAMPLERS), False), "drop_last": (Param("drop the last batch", "flag"), False),
    "label_noise": (Param("label-noise std", "float", low=0.0), False),
    "seeds": (Param("data sets", "int", low=1), False), "bound": (Param("divergence bound", "float", low=0.0), True),
    "records": (Param("recorded steps", "int", low=0), False),
    "common_stream": (Param("one stream for all runs", "flag"), False),
    "replayed": (Param("indices replayed", "flag"), False), "kernel": (known("numba", "numpy"), False),
    "path": (known("tuned", "generic"), False), "optimizer_path": (known("fused", "chain"), False)},
    summary={"paths": "int", "diverged": "int", "first": "number"},
    optional=frozenset({"kernel", "path", "optimizer_path"}))
register(TRAIN)
