"""No experiment imports another: code two experiments share lives in the library (dyntools/).

Every module of ``simulations/`` is parsed with ``ast``; an import at the top or inside a function counts, and so
does a string that names another experiment's module (``"dyntools.simulations.x:f"`` is imported at run time). A
module may name itself (a sweep's cell function).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SIMULATIONS = Path(__file__).resolve().parents[1] / "simulations"
PACKAGES = ("simulations", "dyntools.simulations")
#: a module path written in a string: ``[dyntools.]simulations.NAME`` (then ``:``, ``.`` or the end)
_IN_STRING = re.compile(r"^(?:dyntools\.)?simulations\.(\w+)(?:[.:]\w+)*$")


def _targets(node: ast.AST) -> list[str]:
    """The experiment modules one node imports or names (``[]`` when none)."""
    if isinstance(node, ast.Import):
        return [a.name.split(".")[len(p.split("."))] for a in node.names for p in PACKAGES
                if a.name.startswith(p + ".")]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level:                                      # from . import x / from .x import y
            return [module.split(".")[0]] if module else [a.name for a in node.names]
        if module in PACKAGES:                              # from dyntools.simulations import x
            return [a.name for a in node.names]
        return [module.split(".")[len(p.split("."))] for p in PACKAGES if module.startswith(p + ".")]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = _IN_STRING.match(node.value.strip())
        return [match.group(1)] if match else []
    return []


def imports_of_others(name: str, source: str) -> list[str]:
    """``"line N: other"`` for every place module ``name`` (its source ``source``) imports or names another
    experiment module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        found += [f"line {node.lineno}: {other}" for other in _targets(node) if other != name]
    return found


def _modules() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(SIMULATIONS.glob("*.py"))}


def test_no_experiment_imports_another():
    bad = {name: hits for name, source in _modules().items() if (hits := imports_of_others(name, source))}
    assert not bad, ("experiments that import another (move the shared code down into dyntools/):\n"
                     + "\n".join(f"simulations/{n}.py {h}" for n, hits in bad.items() for h in hits))


@pytest.mark.parametrize("planted", [
    "from dyntools.simulations.relu_nets import build\n",
    "def f():\n    from dyntools.simulations import diag_nets as D\n",
    "import dyntools.simulations.sde_orders\n",
    "def f():\n    import simulations.grokking as G\n",
    "from simulations import adamw_heatmaps\n",
    "from . import voronoi\n",
    "from .voronoi import ladder_cell\n",
    "CELL = 'dyntools.simulations.adamw_heatmaps:train_cell'\n",
])
def test_a_planted_import_of_another_experiment_is_caught(planted):
    assert imports_of_others("sgd_vs_adam", planted)


@pytest.mark.parametrize("allowed", [
    "from dyntools.heatmap_grid import run_grid\n",
    "CELL_FN = 'dyntools.simulations.sgd_vs_adam:cell'\n",          # the module names itself
    "from dyntools import simulations_helpers\n",
    "TEXT = 'see simulations/relu_nets.py'\n",                       # a file path in prose, not a module path
])
def test_library_imports_and_a_module_naming_itself_pass(allowed):
    assert not imports_of_others("sgd_vs_adam", allowed)
