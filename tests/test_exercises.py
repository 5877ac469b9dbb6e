"""The problem set's exercise notebooks (notebooks/exercises/): each exercise is its solution with the
answers blanked (make_blanks.py, kept in sync), every solution passes its checks, and every exercise as
handed out fails one of its check cells (an AssertionError there, not an error anywhere else)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "notebooks" / "exercises"
SOLUTIONS = sorted((HERE / "solutions").glob("*.ipynb"))


def _maker():
    spec = importlib.util.spec_from_file_location("make_blanks", HERE / "make_blanks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _execute(path: Path, tmp_path, monkeypatch):
    """Run the notebook; return (cell, error output) of the first failing cell, or None."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=HANG_GUARD, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError:
        pass
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                return cell, out
    return None


def test_there_are_three_exercises():
    assert [p.name for p in SOLUTIONS] == ["01_sgdw_momentum.ipynb", "02_preconditioner_Mt.ipynb",
                                           "03_adam_adamw.ipynb"]


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_exercise_is_its_solution_blanked(solution):
    make = _maker()
    expected = make.blank_notebook(json.loads(solution.read_text(encoding="utf-8")))
    handed_out = json.loads((HERE / solution.name).read_text(encoding="utf-8"))
    assert handed_out == expected, f"run python notebooks/exercises/make_blanks.py ({solution.name} changed)"
    code = "\n".join("".join(c["source"]) for c in handed_out["cells"] if c["cell_type"] == "code")
    assert "# YOUR CODE HERE" in code and "BEGIN SOLUTION" not in code and "BLANK:" not in code


def test_blank_source_rules():
    make = _maker()
    src = "def f(x):\n    # BEGIN SOLUTION\n    # BLANK: return 0\n    return x + 1\n    # END SOLUTION\n"
    assert make.blank_source(src) == "def f(x):\n    # YOUR CODE HERE\n    return 0"
    with pytest.raises(ValueError, match="without # END"):
        make.blank_source("# BEGIN SOLUTION\nx = 1\n")


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solution_passes_its_checks(solution, tmp_path, monkeypatch):
    failure = _execute(solution, tmp_path, monkeypatch)
    assert failure is None, f"{solution.name}: {failure[1].get('ename')}: {failure[1].get('evalue')}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_exercise_as_handed_out_fails_its_check(solution, tmp_path, monkeypatch):
    failure = _execute(HERE / solution.name, tmp_path, monkeypatch)
    assert failure is not None, f"{solution.name}: the blank exercise passes its checks"
    cell, out = failure
    assert "check" in cell.metadata.get("tags", []), f"{solution.name}: failed outside a check cell: {out}"
    assert out["ename"] == "AssertionError"
