"""How the suite runs on two workers (tests/conftest.py, pyproject's ``addopts``): one worker takes a whole test
file, so that a file's kernels compile once and its module fixtures run once; the notebooks and the docs that
render them go to one worker, in that order. Checked on a small suite run with the project's own ``addopts``."""

import os
import shlex
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from tests.conftest import HANG_GUARD, LAST_UNITS, SHARED_KERNELS, UNIT_SECONDS, work_unit

ROOT = Path(__file__).resolve().parents[1]

#: each test appends "<worker> <file> <test>" to one log (O_APPEND: whole lines)
TESTS = """
import os
import pytest


@pytest.mark.parametrize("k", range(4))
def test_k(k):
    with open(os.environ["SCHEDULE_LOG"], "a") as fh:
        fh.write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {name} {{k}}\\n")
"""


def test_a_file_is_one_unit_and_the_notebooks_share_the_docs_unit():
    assert work_unit("tests/test_mlp.py::test_a[x-1]") == work_unit("tests/test_mlp.py::test_b") == "tests/test_mlp.py"
    assert work_unit("tests/test_mlp.py::test_a") != work_unit("tests/test_mlp_float32.py::test_a")
    assert work_unit("tests/test_notebooks.py::test_n[01.ipynb]") == work_unit("tests/test_docs.py::test_d")


def test_files_compiling_the_same_kernels_are_one_unit_and_the_costs_name_real_units():
    """The AdamW-grid files share a unit (one worker compiles their kernels); every unit in the measured-cost
    table is a test file of the suite or a group of SHARED_KERNELS (a renamed file would silently lose its
    place)."""
    units = {work_unit(f"tests/{name}::test_x") for name in SHARED_KERNELS}
    assert units == {"adamw-grid-kernels"}
    assert work_unit("tests/test_adamw_grid_cli.py::t") != work_unit("tests/test_adamw.py::t")
    for unit in (*UNIT_SECONDS, *LAST_UNITS):
        assert unit in SHARED_KERNELS.values() or (ROOT / unit).is_file(), unit
    assert all((ROOT / "tests" / name).is_file() for name in SHARED_KERNELS)


def test_two_workers_run_each_file_whole_and_the_docs_after_the_notebooks(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    for name in ("test_one", "test_two", "test_three", "test_notebooks", "test_docs"):
        (suite / f"{name}.py").write_text(textwrap.dedent(TESTS.format(name=name)))
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    log = tmp_path / "schedule.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCHEDULE_LOG": str(log)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           "-c", os.devnull, *shlex.split(addopts), str(suite)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [line.split() for line in log.read_text().splitlines()]
    assert len(rows) == 20 and {w for w, _, _ in rows} == {"gw0", "gw1"}, rows       # both workers worked
    workers = {name: {w for w, n, _ in rows if n == name} for _, name, _ in rows}
    assert all(len(w) == 1 for w in workers.values()), workers                      # a file on one worker
    assert workers["test_notebooks"] == workers["test_docs"], workers
    order = [n for _, n, _ in rows if n in ("test_notebooks", "test_docs")]
    assert order == ["test_notebooks"] * 4 + ["test_docs"] * 4, order


def test_the_last_units_run_after_every_other_unit_but_the_docs():
    """The quick report's unit (:data:`tests.conftest.LAST_UNITS`) is sorted after the costliest units and the
    other files, before tests/test_docs.py only: by then the other tests have compiled the kernels it shares
    with them."""
    from tests.conftest import pytest_collection_modifyitems

    class Item:
        def __init__(self, nodeid, slow=False):
            self.nodeid, self.path, self.slow = nodeid, ROOT / nodeid.split("::")[0], slow

        def get_closest_marker(self, name):
            return object() if name == "slow" and self.slow else None

    names = [f"{LAST_UNITS[0]}::test_q", "tests/test_docs.py::test_d", "tests/test_transformer.py::test_u",
             "tests/test_mlp.py::test_m", "tests/test_notebooks.py::test_n", "tests/test_lowlevel.py::test_s"]
    items = [Item(n, slow=n.endswith("test_s") or n.endswith("test_q")) for n in names]
    pytest_collection_modifyitems(None, items)
    order = [item.nodeid for item in items]
    assert order[-2:] == [names[0], names[1]], order
    assert order[0] == names[2], order
