"""The command-line layer: one module per command, imported lazily so ``dyntools --help`` stays fast.

``simulate``/``sweep`` have no module per experiment: :mod:`dyntools.commands.experiment` generates
them from the experiment specs that :mod:`dyntools.commands.registry` finds in ``simulations/``.
A command module defines ``run(args, progress: bool) -> CommandOutput`` and validates *before*
writing anything.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CommandOutput:
    """What a command hands back to the CLI: a JSON-able summary and a human table."""

    summary: dict[str, Any]
    table: str
    exit_code: int = 0
    written: list[str] = field(default_factory=list)


def load(registry: dict[str, str], name: str):
    return importlib.import_module(registry[name])


def parse_list(name: str, text: str | None, kind: type = float, minimum=None) -> tuple | None:
    """``"1,2,3"`` → ``(1, 2, 3)`` of ``kind`` (``None`` stays ``None``); a ``ValueError`` naming the
    option for malformed, empty, or (with ``minimum``) too small entries."""
    if text is None:
        return None
    what = "integers" if kind is int else "numbers"
    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"Invalid {name}: {text!r} (expected comma-separated {what}, e.g. 10,10)") from None
    if not values:
        raise ValueError(f"Invalid {name}: {text!r} (expected comma-separated {what})")
    for v in values:
        if minimum is not None and v < minimum:
            raise ValueError(f"Invalid {name}: {v} (must be >= {minimum})")
    return values
