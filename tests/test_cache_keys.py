"""One disk-cache entry for a kernel called from Python and taken as a function pointer (issue 38).

numba files a compile under its key: the argument types for a call from Python, the whole signature for a
first-class function (the pointer loop's kernel and step). A kernel compiled one way was compiled again the other
way in the next process (the transformer's kernel: 30 s and again 11 s in one run of the suite).
:func:`dyntools.dynamics.path_loop.one_cache_entry` loads an entry found under the argument types and files a new
compile under both keys. Checked both ways round, each in two children on the same empty caches, by numba's
compile events (the cold-start bench's listener).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dyntools.bench.cold_start import LISTENER
from dyntools.child import environment
from tests.conftest import HANG_GUARD

SETUP = LISTENER + """
import json
import numpy as np
import dyntools as dt
from dyntools.models.least_squares import LeastSquares

rng = np.random.default_rng(0)
X = np.ascontiguousarray(rng.standard_normal((12, 3)))
data = type("Data", (), {"X": X, "y": X[:, 0].copy(), "X_test": None, "y_test": None})()
model = LeastSquares(3)
"""

#: the kernel called from Python with the types the trainer hands it (the argument-types key)
BY_CALL = SETUP + """
theta, grad, ws = np.zeros(3), np.zeros(3), np.zeros(0)
idx, noise = np.arange(4, dtype=np.int64), np.zeros(4)
model.loss_grad(theta, X, data.y, idx, 4, noise, grad, ws, *model.kernel_args())
print(json.dumps([name for _, name in _compiles.outer]))
"""

#: a short run: the pointer loop takes the kernel as a function pointer (the signature key)
BY_POINTER = SETUP + """
run = dt.train(model, data, dt.optim.sgd(1e-3), steps=5, seed=0, records=2, batch=4)
assert run.config["path"] == "generic", run.config["path"]
print(json.dumps([name for _, name in _compiles.outer]))
"""

KERNEL = "dyntools.models.least_squares.loss_grad"


def _child(code: str, caches: Path) -> list:
    env = environment(**{variable: str(caches / variable.lower())
                         for variable in ("NUMBA_CACHE_DIR", "DYNTOOLS_LOOP_CACHE", "DYNTOOLS_SYMBOLIC_CACHE")})
    run = subprocess.run([sys.executable, "-c", code], cwd=caches, env=env, capture_output=True, text=True,
                         timeout=HANG_GUARD)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("first,second", [(BY_CALL, BY_POINTER), (BY_POINTER, BY_CALL)],
                         ids=["call-then-pointer", "pointer-then-call"])
def test_a_kernel_compiled_one_way_is_loaded_the_other_way(tmp_path, first, second):
    assert KERNEL in _child(first, tmp_path), "the control: the first child compiled the kernel (empty caches)"
    assert KERNEL not in _child(second, tmp_path)
