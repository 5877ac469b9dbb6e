"""The command-line layer: one module per command, each light to import (heavy code is imported inside ``run``),
so ``dyntools --help`` stays fast.

``simulate``/``sweep`` have no module per experiment: :mod:`dyntools.commands.experiment` generates
them from the experiment specs that :mod:`dyntools.plugins` finds.
A command module defines ``run(args, progress: bool) -> CommandOutput`` and validates *before*
writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CommandOutput:
    """What a command hands back to the CLI: a JSON-able summary and a human table."""

    summary: dict[str, Any]
    table: str
    exit_code: int = 0
    written: list[str] = field(default_factory=list)
