import os
import subprocess
import sys

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


def run_cli(*args, cwd=None, env=None):
    """Run ``python -m dyntools`` as a user would; return the CompletedProcess."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "dyntools", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=full_env, timeout=600)


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


def pytest_collection_modifyitems(config, items):
    """Run tests/test_docs.py last: the site it builds renders the notebooks tests/test_notebooks.py executed."""
    items.sort(key=lambda item: item.path.name == "test_docs.py")   # a stable sort keeps every other order
