"""Parameter declarations: a parameter is a dataclass field with its kind, range, default and help.

:func:`param` makes the field (its :class:`Param` in the field's metadata), :func:`check_value` checks one
value against its declaration (one-line ``ValueError`` naming the parameter and the allowed range),
:func:`coerce` reads a command-line string, :func:`validate` and :func:`with_preset` check a whole
parameter set. The kinds and the size rules are described in :mod:`dyntools.spec`, whose experiments are
built from these declarations; the result schemas (:mod:`dyntools.result_schema`) check a stored result's
config with the same declarations. This module knows nothing of experiments or results.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyntools import validation

KINDS = ("int", "float", "str", "flag", "floats", "ints", "strs", "grid", "file")
_LISTS = {"floats": float, "ints": int, "strs": str}


@dataclass(frozen=True)
class Param:
    """What a field of a parameter dataclass declares besides its default."""

    help: str
    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    flag: str | None = None            # the command-line option; default ``--field-name``
    group: str | None = None           # a heading in ``--help``
    label: str | None = None           # the name in error messages; default the field's name
    max_len: int | None = None         # lists: most entries; grids: largest N
    #: grids: the value's own check ``check(name, (A, B, N)) -> (A, B, N)`` in place of "A, B finite, N >= 1"
    #: (declared once here, the experiment runs the same function: one check site, e.g. the weight-decay axis)
    check: Callable | None = None

    def range_text(self) -> str:
        """``> 0``, ``in [0, 1)``, ``>= 2``, ``one of a | b`` … ('' when unbounded)."""
        if self.choices:
            return "one of " + " | ".join(self.choices)
        if self.kind == "grid":
            return f"N <= {self.max_len}" if self.max_len is not None else ""
        if self.kind in _LISTS and self.max_len is not None:
            bounds = self._bounds()
            return f"at most {self.max_len} entries" + (f", each {bounds}" if bounds else "")
        return self._bounds()

    def _bounds(self) -> str:
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}"
                    f"{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_num(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_num(self.high)}"
        return ""


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def param(default: Any, *, help: str, kind: str | None = None, low: float | None = None,  # noqa: A002
          high: float | None = None, low_open: bool = False, high_open: bool = False,
          choices: tuple[str, ...] | None = None, metavar: str | None = None, flag: str | None = None,
          group: str | None = None, label: str | None = None, max_len: int | None = None,
          check: Callable | None = None):
    """A dataclass field carrying its :class:`Param` declaration (see the module docstring)."""
    if kind is None:
        kind = {bool: "flag", int: "int", float: "float", str: "str"}.get(type(default))
        if kind is None:
            raise TypeError(f"param(default={default!r}): give kind= (one of {', '.join(KINDS)})")
    if kind not in KINDS:
        raise ValueError(f"Invalid kind: {kind!r} (must be one of {', '.join(KINDS)})")
    if isinstance(default, list):
        default = tuple(default)
    if check is not None and kind != "grid":
        raise ValueError(f"Invalid check: only a grid parameter declares its own check (kind {kind!r})")
    meta = Param(help, kind, low, high, low_open, high_open, tuple(choices) if choices else None, metavar,
                 flag, group, label, max_len, check)
    return field(default=default, metadata={"param": meta})


def params_of(cls) -> list[tuple[dataclasses.Field, Param]]:
    """The fields of a parameter dataclass (type or instance) declared with :func:`param`."""
    return [(f, f.metadata["param"]) for f in dataclasses.fields(cls) if "param" in f.metadata]


def flag_of(f: dataclasses.Field, p: Param) -> str:
    return p.flag or "--" + f.name.replace("_", "-")


# ----------------------------------------------------------------------------------- values

def coerce(name: str, p: Param, text: str, flag: str | None = None):
    """The value of a command-line string for a list, grid or file parameter (others pass through).

    Malformed text (or a list entry out of range) is a ``ValueError`` naming the option (a list entry:
    the parameter's ``label`` if it has one), e.g. ``Invalid --hidden: '32,x' (...)``."""
    where = flag or name
    if p.kind in _LISTS:
        cast = _LISTS[p.kind]
        what = {"floats": "numbers", "ints": "integers", "strs": "names"}[p.kind]
        entries = [v.strip() for v in str(text).split(",")]
        if len(entries) > 1 and not entries[-1]:                  # a trailing comma is harmless
            entries.pop()
        if any(not v for v in entries) and any(entries):          # "4,,4": an empty entry
            raise ValueError(f"Invalid {where}: {text!r} (an empty entry between commas)")
        try:
            values = tuple(cast(v) for v in entries if v)
        except ValueError:
            raise ValueError(f"Invalid {where}: {text!r} (expected comma-separated {what}"
                             + (f", e.g. {p.metavar}" if p.metavar else "") + ")") from None
        if not values:
            raise ValueError(f"Invalid {where}: {text!r} (expected comma-separated {what})")
        return check_value(p.label or where, p, values)
    if p.kind == "grid":
        parts = str(text).split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            return float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"Invalid {where}: {text!r} (expected {p.metavar or 'A:B:N'} with numbers, "
                             "N an integer)") from None
    if p.kind == "file":
        if p.choices is not None and text in p.choices:
            return text
        path = Path(text)
        if not _readable_file(path):
            raise ValueError(f"Invalid {where}: {text[:80]} is not a readable file")
        return path
    return text


def _readable_file(path: Path) -> bool:
    """A regular file this process may read (``False`` also for a name the system refuses: too long, a loop)."""
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False


def check_value(name: str, p: Param, value):
    """Check one value against its declaration; returns it (ints as int, floats as float)."""
    if value is None:
        return None
    if p.kind == "flag":
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
        return value
    if p.kind == "file":
        if p.choices is not None and isinstance(value, str) and value in p.choices:
            return value
        if not _readable_file(Path(value)):
            raise ValueError(f"Invalid {name}: {str(value)[:80]} is not a readable file")
        return Path(value)
    if p.kind == "str":
        if p.choices is not None:
            validation.one_of(name, value, p.choices)
        return value
    if p.kind == "grid":
        return _check_grid(name, p, value)
    if p.kind in _LISTS:
        if p.max_len is not None and len(value) > p.max_len:
            raise ValueError(f"Invalid {name}: {len(value)} entries (at most {p.max_len})")
        return tuple(_check_scalar(name, p, v, "strs" if p.kind == "strs" else p.kind[:-1]) for v in value)
    return _check_scalar(name, p, value, p.kind)


def _check_grid(name: str, p: Param, value) -> tuple[float, float, int]:
    """``(A, B, N)`` with A, B finite and ``1 <= N <= max_len`` — A, B and N as the parameter's own ``check``
    says when it declares one (that check is then the value's only one)."""
    if len(value) != 3:
        raise ValueError(f"Invalid {name}: {value!r} (expected {p.metavar or 'A:B:N'})")
    if p.check is not None:
        a, b, n = p.check(name, value)
    else:
        a, b = (validation.finite(name, v) for v in value[:2])
        n = validation.count(f"{name} N", value[2])
    if p.max_len is not None and n > p.max_len:
        raise ValueError(f"Invalid {name}: N = {n} points (at most {p.max_len})")
    return a, b, n


def _check_scalar(name: str, p: Param, value, kind: str):
    if kind == "strs":
        if p.choices is not None:
            validation.one_of(name, value, p.choices)
        return value
    if kind == "int":
        value = validation.count(name, value, minimum=-(2**63) if p.low is None else math.floor(p.low))
        if p.high is not None and value > p.high:
            raise ValueError(f"Invalid {name}: {value} (must be <= {_num(p.high)})")
        return value
    if p.low is not None and p.high is not None:
        return validation.in_interval(name, value, p.low, p.high, closed_low=not p.low_open,
                                      closed_high=not p.high_open)
    if p.low is not None:
        value = validation.finite(name, value)
        if value < p.low or (p.low_open and value == p.low):
            raise ValueError(f"Invalid {name}: {value} (must be {p.range_text()})")
        return value
    if p.high is not None:
        value = validation.finite(name, value)
        if value > p.high or (p.high_open and value == p.high):
            raise ValueError(f"Invalid {name}: {value} (must be {p.range_text()})")
        return value
    return validation.finite(name, value)


def validate(params):
    """Check every declared field of ``params`` against its declaration (one-line ``ValueError``s
    naming the parameter and the allowed range); returns ``params`` with ints/floats normalized."""
    changes = {f.name: check_value(p.label or (flag_of(f, p) if p.kind == "grid" else f.name), p,
                                   getattr(params, f.name)) for f, p in params_of(params)}
    return dataclasses.replace(params, **changes)


def with_preset(cls, presets: dict[str, dict], preset: str | None, conditional: Callable | None = None,
                **overrides):
    """``cls()`` with the preset's overrides, then the ``conditional(preset, given)`` defaults (values
    that follow from the given options, e.g. a named data set's own settings), then ``overrides``
    (``None`` values ignored), validated."""
    base: dict = {}
    if preset is not None:
        base = dict(presets[validation.one_of("preset", preset, tuple(presets))])
    given = {k: v for k, v in overrides.items() if v is not None}
    if conditional is not None:
        base.update(conditional(preset, given))
    base.update(given)
    unknown = set(base) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"unknown parameters: {', '.join(sorted(unknown))}")
    return validate(cls(**base))
