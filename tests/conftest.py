import os
import subprocess
import sys

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

#: The one wall-clock limit of a test: a HANG GUARD on a child process (or a notebook cell), never a speed
#: assertion — speed lives in ``dyntools bench``. ≥ 3× the slowest child a test starts on a loaded 2-core
#: machine (the quick report: 1203 s with eight busy neighbours, 27 Nov 2026), so a slow machine never fails a test.
HANG_GUARD = 3600.0


def run_cli(*args, cwd=None, env=None):
    """Run ``python -m dyntools`` as a user would; return the CompletedProcess."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "dyntools", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=full_env, timeout=HANG_GUARD)


def other_cpu_name() -> str:
    """A numba CPU name that is not the one this process compiles for (haswell, or nehalem when the suite
    itself runs as haswell): a subprocess under it computes on another compile target."""
    from dyntools.engine.target import compile_target

    return "nehalem" if compile_target()["cpu_name"] == "haswell" else "haswell"


@pytest.fixture
def cli():
    return run_cli


def assert_usage_error(proc, *needles, out_dir=None):
    """One line on stderr naming the problem, exit 2, no traceback, nothing written."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if out_dir is not None:
        assert not os.path.exists(out_dir), f"{out_dir} was written"


def assert_command_refuses(tmp_path, *argv, needle):
    """``dyntools *argv --out tmp_path/bad`` run as a user runs it is refused (:func:`assert_usage_error`):
    one line naming ``needle``, exit 2, nothing written."""
    out = tmp_path / "bad"
    assert_usage_error(run_cli(*argv, "--out", out, cwd=tmp_path), needle, out_dir=out)


#: tests/test_notebooks.py executes the notebooks and tests/test_docs.py renders the executed copies: one
#: pytest-xdist worker runs both (``--dist loadgroup``), in that order
NOTEBOOKS_THEN_DOCS = ("test_notebooks.py", "test_docs.py")


def pytest_collection_modifyitems(config, items):
    """The long checks (marked ``slow``) first, so that the two workers of ``-n 2`` do not end on one of them
    alone; tests/test_docs.py last, after the notebooks it renders, both on one worker. A stable sort keeps
    every other order."""
    for item in items:
        if item.path.name in NOTEBOOKS_THEN_DOCS:
            item.add_marker(pytest.mark.xdist_group("notebooks-then-docs"))
    items.sort(key=lambda item: (item.path.name == "test_docs.py", item.get_closest_marker("slow") is None))


#: ``DYNTOOLS_OWN_DEPRECATIONS_AS_ERRORS=1`` (set by .ci/run for its run under the newest Python with the newest
#: dependencies): a deprecation raised *from* dyntools' own modules fails the test that meets it (pytest's ``-W``
#: matches one module name exactly; an ini ``filterwarnings`` line takes this regex)
OWN_MODULES = r"(dyntools|simulations|proofs)(\..*)?$"
AS_ERRORS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


def pytest_configure(config):
    if os.environ.get("DYNTOOLS_OWN_DEPRECATIONS_AS_ERRORS") == "1":
        for category in AS_ERRORS:
            config.addinivalue_line("filterwarnings", f"error::{category}:{OWN_MODULES}")
