"""numba's slice-assignment error path without its unicode formatting (dyntools.numba_errors): the cold compile
of a function that assigns an array to a slice compiles no string machinery; a mismatch is still a ValueError
naming both shapes; a correct assignment gives the same bits either way."""

import json
import subprocess
import sys

import numpy as np
import pytest

import dyntools.dynamics  # noqa: F401  (installs the hook, as every compiling package does)
from dyntools import numba_errors

CHILD = """
import json, sys
import numpy as np
from numba import njit
from numba.core import event
import dyntools.dynamics   # the hook (unless DYNTOOLS_NUMBA_ERRORS=numba)
from dyntools import numba_errors

names = []
class Names(event.Listener):
    def on_start(self, ev):
        f = getattr(ev.data["dispatcher"], "py_func", None)
        names.append(f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}")
    def on_end(self, ev):
        pass
event.register("numba:compile", Names())

@njit
def rows_into(dst, src, k):
    for i in range(src.shape[0]):
        dst[i, :k] = src[i]
    return dst

out = rows_into(np.zeros((3, 5)), np.arange(12.0).reshape(3, 4), 4)
print(json.dumps({"state": numba_errors.STATE, "names": names, "sum": float(out.sum())}))
"""


def _child(tmp_path, **env):
    import os

    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), **env))
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_slice_assignment_compiles_no_string_machinery(tmp_path):
    ours = _child(tmp_path)
    theirs = _child(tmp_path, DYNTOOLS_NUMBA_ERRORS="numba")      # planted: numba's own error path
    assert ours["state"] == "constant message" and theirs["state"].startswith("numba's")
    assert not [n for n in ours["names"] if "unicode" in n or "str" in n.split(".")[-1]], ours["names"]
    assert [n for n in theirs["names"] if "unicode" in n], theirs["names"]   # the control shows what was saved
    assert len(ours["names"]) < len(theirs["names"])
    assert ours["sum"] == theirs["sum"] == float(np.arange(12.0).sum())


def test_a_mismatch_is_still_a_value_error_naming_both_shapes():
    from numba import njit

    @njit
    def assign(dst, src):
        dst[0, :3] = src

    assert numba_errors.install() == "constant message"
    with pytest.raises(ValueError, match="different size") as info:
        assign(np.zeros((2, 5)), np.ones(4))
    assert info.value.args[1:] == ((4,), (3,))


def test_switched_off_or_absent_hook_leaves_numba_alone(monkeypatch):
    from numba.np import arrayobj

    monkeypatch.setattr(numba_errors, "STATE", "not installed")
    monkeypatch.setenv("DYNTOOLS_NUMBA_ERRORS", "numba")
    assert numba_errors.install().startswith("numba's (DYNTOOLS_NUMBA_ERRORS")
    monkeypatch.setattr(numba_errors, "STATE", "not installed")
    monkeypatch.delenv("DYNTOOLS_NUMBA_ERRORS")
    monkeypatch.delattr(arrayobj, "raise_with_shape_context")
    assert numba_errors.install() == "numba's (no hook in this numba)"
