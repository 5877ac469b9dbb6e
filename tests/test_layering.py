"""Layering: nothing in dyntools/ below the command-line layer uses simulations/ or proofs/.

Every ``.py`` under ``dyntools/`` is parsed with ``ast``. A module outside the command-line layer
(``dyntools/cli.py`` and ``dyntools/commands/``) violates the rule when it

* imports ``simulations``/``proofs`` (``import simulations.x``, ``from proofs import y``), or
* names one of their modules in a string literal that is a module path — ``"simulations.x"``,
  ``"proofs.y"``, ``"simulations.x:function"`` — since such strings are imported dynamically
  (``importlib.import_module``, registries of module names, sweep cell functions).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("simulations", "proofs")
COMMAND_LINE = ("dyntools/cli.py", "dyntools/commands/")

#: Known violations being fixed elsewhere (``"dyntools/<file>.py"``). Each entry must still violate (else:
#: delete it here). Was {"dyntools/symbolic/registry.py"} until branch issue15 merged.
PENDING: set[str] = set()

_MODULE_PATH = re.compile(r"^(simulations|proofs)(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")


def _forbidden(name: str) -> bool:
    return name.split(".")[0] in FORBIDDEN


def violations(source: str) -> list[str]:
    """What in ``source`` refers to simulations/ or proofs/ (one line each, with the line number)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _forbidden(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _forbidden(node.module):
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.match(node.value):
            found.append(f"line {node.lineno}: module path {node.value!r}")
    return found


def library_modules() -> list[str]:
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "dyntools").rglob("*.py"))
    return [f for f in files if not f.startswith(COMMAND_LINE)]


def test_library_does_not_use_simulations_or_proofs():
    bad = {f: v for f in library_modules() if f not in PENDING
           for v in [violations((ROOT / f).read_text(encoding="utf-8"))] if v}
    assert not bad, "below the command-line layer, dyntools/ must not use simulations/ or proofs/:\n" + "\n".join(
        f"{f}: {'; '.join(v)}" for f, v in bad.items())


def test_pending_exceptions_are_still_needed():
    for f in PENDING:
        path = ROOT / f
        assert path.is_file() and violations(path.read_text(encoding="utf-8")), \
            f"{f} no longer uses simulations/ or proofs/: delete it from PENDING in tests/test_layering.py"


def test_the_scan_covers_the_library():
    files = library_modules()
    assert "dyntools/report.py" in files and "dyntools/bench/relu.py" in files and "dyntools/spec.py" in files
    assert not any(f.startswith("dyntools/commands/") for f in files) and "dyntools/cli.py" not in files


@pytest.mark.parametrize("source", [
    "import simulations",
    "import simulations.diag_nets as dn",
    "import numpy, proofs.report",
    "from simulations import relu_nets",
    "from proofs.report import reproduce",
    "def f():\n    from simulations.relu_nets import build\n",
    "import importlib\nm = importlib.import_module('simulations.diag_nets')",
    "__import__('proofs')",
    "FAMILIES = {'gd': 'proofs.gd_quadratic'}",
    "spec = ('adamw', 'simulations.adamw_heatmaps:train_cell')",
])
def test_the_scan_catches(source):
    assert violations(source)


@pytest.mark.parametrize("source", [
    "import dyntools.simulations_helper",
    "from . import proofs",
    "from dyntools.symbolic import proofs_of",
    '"""See :func:`simulations.diag_nets.step_scan` for the scan."""',
    "x = 'the proofs are in proofs/'",
    "name = 'proofs/report.py'",
])
def test_the_scan_allows(source):
    assert not violations(source)
