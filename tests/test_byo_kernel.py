"""A user's model kernel checked before the loop, and its loop cached on disk (issue 30, item 2)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dyntools as dt
from tests.byo_model import Affine
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 3))


class Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


DATA = Data(X, X @ np.array([1.0, -1.0, 0.5]) + 0.3)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_planted_short_workspace_is_one_clear_error(kernel):
    """Compiled: the canary past the workspace names the entry; NumPy: the bounds-checked error, named."""
    message = (r"Invalid model 'my-affine': its kernel wrote past its workspace \(entry ws\[3\], but "
               r"workspace_size\(4\) = 3\)" if kernel == "numba" else
               r"Invalid model 'my-affine': its kernel raised ValueError: could not broadcast .* "
               r"workspace_size\(4\) = 3")
    with pytest.raises(ValueError, match=message):
        dt.train(Affine(3, short_ws=True), DATA, dt.sgd(lr=0.1), steps=3, batch=4, kernel=kernel)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_planted_wrong_gradient_names_the_first_bad_coordinate(kernel):
    with pytest.raises(ValueError, match=r"'my-affine': its kernel's gradient is wrong at coordinate 3: "):
        dt.train(Affine(3, wrong_grad=True), DATA, dt.sgd(lr=0.1), steps=3, batch=4, kernel=kernel)
    # the user may skip the gradient check (e.g. a kink at θ₀); the run then goes on
    res = dt.train(Affine(3, wrong_grad=True), DATA, dt.sgd(lr=0.1), steps=3, batch=4, kernel=kernel,
                   check_gradient=False)
    assert res.status == "completed"


def test_correct_user_model_trains_numba_equals_numpy():
    a = dt.train(Affine(3), DATA, dt.adam(lr=0.05), steps=50, batch=4, seed=1)
    b = dt.train(Affine(3), DATA, dt.adam(lr=0.05), steps=50, batch=4, seed=1, kernel="numpy")
    np.testing.assert_allclose(a["final_theta"], b["final_theta"], rtol=1e-12)
    assert a["train_loss"][0, 0, -1] < 0.5 * a["train_loss"][0, 0, 0]


def test_user_kernel_loop_is_cached_on_disk(tmp_path):
    """The second process loads the loop that trains the user kernel (a run of POINTER_RUN_PATH_STEPS path-steps:
    the pointer loop of its optimizer step, :func:`dyntools.dynamics.loops.pointer_loop`) from disk (numba cache
    hit) instead of compiling it; timings are not asserted here (the absolute targets live in issue 38's cold-start
    bench)."""
    script = ("import time, numpy as np, dyntools as dt\n"
              "from dyntools.dynamics import loops\n"
              "from tests.byo_model import Affine, affine_loss_grad\n"
              "X = np.random.default_rng(0).normal(size=(16, 3))\n"
              "class D: pass\n"
              "d = D(); d.X, d.y = X, X.sum(axis=1)\n"
              "from dyntools.dynamics.run_plan import POINTER_RUN_PATH_STEPS as long\n"
              "t = time.perf_counter(); dt.train(Affine(3), d, dt.sgd(lr=0.001), steps=long, batch=4, records=2)\n"
              "seconds = time.perf_counter() - t\n"
              "import sys\n"
              "hits = [m.paths_loop.stats.cache_hits for k, m in sys.modules.items()\n"
              "        if k.startswith('dyntools_user_ptr')]\n"
              "print(seconds, sum(sum(h.values()) for h in hits) if hits else -1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DYNTOOLS_LOOP_CACHE": str(tmp_path / "loops")}

    def run():
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        seconds, hits = proc.stdout.split()[-2:]
        return float(seconds), int(hits)

    first, first_hits = run()
    second, second_hits = run()
    assert list((tmp_path / "loops").glob("ptrloop_*.py"))
    assert first_hits == 0 and second_hits >= 1     # the work: loaded, not compiled (seconds are not asserted)


def test_package_stamp_follows_every_source_file(tmp_path):
    """The stamp changes when any .py file of the package changes (size or time), not for other files."""
    from dyntools.codegen.cache import package_stamp

    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "rng.py").write_text("x = 1\n")
    (tmp_path / "loops.py").write_text("y = 2\n")
    first = package_stamp(tmp_path)
    (tmp_path / "notes.txt").write_text("not code")
    assert package_stamp(tmp_path) == first
    os.utime(tmp_path / "engine" / "rng.py", ns=(1, 10**18))
    second = package_stamp(tmp_path)
    assert second != first
    (tmp_path / "loops.py").write_text("y = 22\n")
    assert package_stamp(tmp_path) not in (first, second)


def test_generated_loops_and_steps_are_keyed_by_the_installed_package(tmp_path, monkeypatch):
    """Another dyntools source (edited, upgraded) under the same cache folders gets other generated loops and step
    modules: numba's cache would otherwise load machine code linked from the old path loop and engine."""
    from dyntools.codegen import cache as codecache
    from dyntools.dynamics import loops
    from dyntools.optim import compiled
    from tests.byo_model import affine_loss_grad

    monkeypatch.setenv("DYNTOOLS_LOOP_CACHE", str(tmp_path / "loops"))
    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path / "code"))

    def generated():
        step = compiled.compile_runs([dt.sgd(lr=0.01)]).step
        return loops.user_loop(affine_loss_grad, step).__module__, step.__module__

    monkeypatch.setattr(codecache, "_PACKAGE_STAMP", ["0" * 16])
    loop_a, step_a = generated()
    assert generated() == (loop_a, step_a)
    monkeypatch.setattr(codecache, "_PACKAGE_STAMP", ["1" * 16])
    monkeypatch.setattr(compiled, "_LOADED", {})
    loop_b, step_b = generated()
    assert loop_b != loop_a and step_b != step_a


def test_a_model_that_declares_no_streams_is_refused_and_never_borrows_the_mlps():
    """The protocol's stream purposes have no default (issue 37 item 3): an undeclared sampling stream is one
    clear error before anything runs, and an object that is not a dyntools.Model is refused by name."""

    class Undeclared(Affine):
        sampling_stream = None

    with pytest.raises(ValueError, match=r"Invalid model 'my-affine': it declares no sampling_stream"):
        dt.train(Undeclared(3), DATA, dt.sgd(lr=0.1), steps=3, batch=4)

    class Duck:
        name, head = "duck", "regression"

    with pytest.raises(TypeError, match=r"Invalid model: Duck is not a dyntools.Model"):
        dt.train(Duck(), DATA, dt.sgd(lr=0.1), steps=3, batch=4)


def test_every_hook_the_trainer_calls_is_declared_on_the_base_model():
    """Nothing in the trainer probes a model with getattr/hasattr: every optional hook it reads is declared on
    dyntools.Model with its default (a planted probe in the trainer's source would fail this)."""
    import ast
    import inspect

    from dyntools.dynamics import run_plan, train
    from dyntools.models.base import Model

    tree = ast.parse("\n".join(inspect.getsource(module) for module in (train, run_plan)))   # the trainer's two files
    probes = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr") and node.args and isinstance(node.args[0], ast.Name)
              and node.args[0].id == "model"]
    assert probes == [], [ast.unparse(p) for p in probes]
    read = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "model"}
    assert read <= set(dir(Model)), sorted(read - set(dir(Model)))
