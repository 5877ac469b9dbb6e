"""Execute every notebook in notebooks/ at a small size (DYNTOOLS_SMALL=1), and hold the notebooks to the
public API: their code imports ``dyntools`` only as a whole (``import dyntools as dt``), never a submodule
(``import dyntools.x``, ``from dyntools[.x] import y``) and never the experiments (``simulations``) or the
proofs (``proofs``) — a notebook is what a researcher writes with ``dt.train``, ``dt.solve``, ``dt.metrics``, …"""

import ast
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

#: Deep imports a notebook is allowed for now, with the reason (none: every notebook uses the public API).
#: Each entry must still occur (else delete it here).
PENDING: dict[str, set[str]] = {}

FORBIDDEN_ROOTS = ("simulations", "proofs")
_MAGIC = re.compile(r"^\s*[%!]")


def code_of(path: Path) -> str:
    """The code cells of a notebook as one Python source (IPython magics and shell lines blanked)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in nb["cells"] if c["cell_type"] == "code"]
    return "\n".join("" if _MAGIC.match(line) else line for cell in cells for line in cell.splitlines())


def violations(source: str) -> set[str]:
    """Imports in ``source`` beyond the public API: any import of simulations/proofs, any import of
    a dyntools submodule or of names from dyntools (only ``import dyntools [as name]`` is allowed)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in FORBIDDEN_ROOTS or (root == "dyntools" and alias.name != "dyntools"):
                    found.add(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if node.level == 0 and (root in FORBIDDEN_ROOTS or root == "dyntools"):
                found.add(f"from {node.module} import {', '.join(a.name for a in node.names)}")
    return found


def executed_notebooks_dir(tmp_path_factory) -> Path:
    """Where this session keeps the notebooks it executed, with their outputs."""
    return tmp_path_factory.getbasetemp() / "executed-notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_uses_only_the_public_api(path):
    extra = violations(code_of(path)) - PENDING.get(path.name, set())
    assert not extra, (f"{path.name} imports beyond `import dyntools as dt` (use the public names: dt.train, "
                       f"dt.metrics, …; or add a public name to dyntools/__init__.py's _LAZY): {sorted(extra)}")


def test_pending_notebook_imports_are_still_there():
    for name, allowed in PENDING.items():
        path = next((p for p in NOTEBOOKS if p.name == name), None)
        assert path is not None, f"{name} is gone: delete it from PENDING in tests/test_notebooks.py"
        stale = allowed - violations(code_of(path))
        assert not stale, f"{name} no longer has {sorted(stale)}: delete them from PENDING in tests/test_notebooks.py"


@pytest.mark.parametrize("source, bad", [
    ("import dyntools as dt\nimport numpy as np", set()),
    ("import dyntools", set()),
    ("import simulations.diag_nets as dn", {"import simulations.diag_nets"}),
    ("from simulations import adamw_heatmaps", {"from simulations import adamw_heatmaps"}),
    ("from proofs import report", {"from proofs import report"}),
    ("import dyntools.dynamics.sde", {"import dyntools.dynamics.sde"}),
    ("from dyntools import metrics", {"from dyntools import metrics"}),
    ("from dyntools.models.mlp import MLP", {"from dyntools.models.mlp import MLP"}),
    ("def f():\n    from dyntools.engine import record\n", {"from dyntools.engine import record"}),
    ("text = 'from dyntools.symbolic import Claim'", set()),           # a string is not an import
])
def test_violations_finds_deep_imports(source, bad):
    assert violations(source) == bad


def test_magics_are_not_code(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["%matplotlib inline\n", "import dyntools as dt\n"]},
                    {"cell_type": "markdown", "source": "from simulations import x"}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert violations(code_of(path)) == set()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch, tmp_path_factory):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("DYNTOOLS_SMALL", "1")
    # figures shown as outputs (the documentation site renders them); no display needed either way
    inline = importlib.util.find_spec("matplotlib_inline") is not None
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline" if inline else "Agg")
    root = str(Path(__file__).resolve().parents[1])        # also run from a source checkout
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks without outputs"
    client = nbclient.NotebookClient(nb, timeout=HANG_GUARD, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # the documentation site renders the executed copy (tests/test_docs.py runs after this file)
    executed = executed_notebooks_dir(tmp_path_factory)
    executed.mkdir(exist_ok=True)
    nbformat.write(nb, str(executed / path.name))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ is empty"
    assert os.path.exists(NOTEBOOKS[0])
