"""The helper process that compiles the shared step loop while the trainer compiles the kernel
(dyntools.dynamics.compile_helper, issue 38): used only when both are cold, the same bits with it, without it and
when it fails, and never started on a warm cache. Each child starts from empty numba, loop and symbolic caches
(tests/test_cold_fixed_costs.cold_child) and counts its own outermost compiles (the cold-start bench's listener)."""

import pytest
from numba import njit

from dyntools.bench.cold_start import LISTENER
from dyntools.dynamics import compile_helper
from tests.test_cold_fixed_costs import cold_child

LOOP = "dyntools.dynamics.path_loop.advance_paths_by_pointer_with_replacement"
FULL_LOOP = "dyntools.dynamics.path_loop.advance_paths_by_pointer_full"
KERNEL = "dyntools.models.least_squares.loss_grad"

#: a built-in model's first short dt.train (the loop by pointer; the kernel compiled at the loop's first call), then
#: what the child compiled itself, how many helpers it started, and the final parameters' bytes
CHILD = """
import hashlib, json, sys
import numpy as np
import dyntools as dt
from dyntools.dynamics import compile_helper
from dyntools.models.least_squares import LeastSquares

if {broken}:
    sys.executable = "/bin/false"          # a helper that starts and fails at once
rng = np.random.default_rng(0)
X = rng.standard_normal((30, 4))
data = type("Data", (), {{"X": X, "y": X @ np.array([1.0, -2.0, 0.5, 0.0]), "X_test": None, "y_test": None}})()
run = dt.train(LeastSquares(4), data, dt.optim.adam(1e-2), steps=50, seed=3, seeds=2, batch=5, records=3)
# a generated kernel, run by the trainer's check before the loop: ready when its (full-batch) loop compiles
from dyntools.models import symbolic_examples
dt.train(symbolic_examples.diagonal_net(4, depth=2), data, dt.optim.sgd(1e-3), steps=5, seed=0, records=2,
         sampler="full")
print(json.dumps({{"compiled": [name for _, name in _compiles.outer], "helpers": compile_helper.started,
                  "bits": hashlib.sha256(np.ascontiguousarray(run["theta"]).tobytes()).hexdigest()}}))
"""


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """Cold with the helper, then a second process on its caches; cold with a helper that fails (the control: this
    process compiles everything, as without a helper)."""
    with_helper = tmp_path_factory.mktemp("with-helper")
    return {"helper": cold_child(LISTENER + CHILD.format(broken=False), with_helper),
            "warm": cold_child(LISTENER + CHILD.format(broken=False), with_helper),
            "broken": cold_child(LISTENER + CHILD.format(broken=True), tmp_path_factory.mktemp("broken-helper"))}


@pytest.mark.slow
def test_a_cold_train_compiles_the_loop_in_a_helper_and_the_kernel_here(children):
    helper = children["helper"]
    assert helper["helpers"] == 1, helper
    assert KERNEL in helper["compiled"] and LOOP not in helper["compiled"], helper["compiled"]   # loaded


@pytest.mark.slow
def test_a_loop_whose_kernel_is_ready_is_compiled_here(children):
    """The symbolic model's generated kernel is compiled for the trainer's check before its loop: nothing is left to
    compile meanwhile (an optimizer step is ~0.2 s, less than a helper's start), so no helper (one in all: the
    least-squares run's)."""
    helper = children["helper"]
    assert helper["helpers"] == 1 and FULL_LOOP in helper["compiled"], helper


@pytest.mark.slow
def test_the_helper_changes_no_bit_and_a_failing_helper_leaves_the_compile_here(children):
    broken = children["broken"]
    assert broken["helpers"] == 1 and LOOP in broken["compiled"] and KERNEL in broken["compiled"], broken
    assert children["helper"]["bits"] == broken["bits"] == children["warm"]["bits"]


@pytest.mark.slow
def test_a_warm_cache_starts_no_helper_and_compiles_nothing(children):
    warm = children["warm"]
    assert warm["helpers"] == 0 and warm["compiled"] == [], warm


def test_a_function_without_a_disk_cache_is_unknown_and_starts_no_helper():
    """on_disk() tells "unknown" (None) for a function numba does not cache; worth_it() is then False."""
    @njit
    def loop(x):
        return x + 1

    @njit(cache=False)
    def kernel(x):
        return x * 2

    from numba import float64

    assert compile_helper.on_disk(loop, (float64,)) is None
    assert not compile_helper.worth_it(loop, (float64,), kernel, float64(float64))


def test_the_helper_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(compile_helper.ENV, "0")
    assert not compile_helper.enabled()
    monkeypatch.setenv(compile_helper.ENV, "1")
    assert compile_helper.enabled()


def test_a_kernel_that_does_not_compile_raises_and_leaves_no_helper_running(monkeypatch):
    """The kernel's error reaches the caller, and the helper started beside it is stopped (not left compiling)."""
    import subprocess
    import sys

    @njit
    def loop(x):
        return x

    started = []

    def start(rebuild, arg_types):
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        return started[-1]

    def broken_kernel():
        raise TypeError("the kernel does not type")

    monkeypatch.setattr(compile_helper, "worth_it", lambda *args: True)
    monkeypatch.setattr(compile_helper, "start", start)
    from numba import float64

    with pytest.raises(TypeError, match="does not type"):
        compile_helper.compile_beside(loop, (float64,), [(None, None, broken_kernel)], ("m", "f", ()))
    assert len(started) == 1 and started[0].poll() is not None       # stopped and reaped
