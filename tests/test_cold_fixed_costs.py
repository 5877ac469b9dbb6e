"""The fixed costs a cold first ``dt.train`` no longer pays (issue 38): a run of a model that uses no low-level
block compiles neither the low-level probe (dyntools.lowlevel.probe: imported with the MLP's modules only) nor the
SeedSequence hash (dyntools.engine.seed_hash: a few paths are seeded by SeedSequence objects); the MLP still probes
the blocks before any kernel of its can use them. Counted as outermost numba compile events (the cold-start bench's
listener) in a child with empty caches."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dyntools.bench.cold_start import LISTENER
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]

#: the cold-start bench's listener (``_compiles.outer``: seconds and name of every outermost compile), then the runs
CHILD = LISTENER + """
import json, sys
import numpy as np
import dyntools as dt
from dyntools.models import symbolic_examples

toy = dt.QuadraticToy.uniform(n=20)
runs = [dt.train(dt.ToyModel(toy), dt.toy_data(toy), dt.optim.sgd(1e-3), steps=5, seed=0, records=2, seeds=3)]
rng = np.random.default_rng(0)
X = rng.standard_normal((12, 4))
data = type("Data", (), {"X": X, "y": X[:, 0].copy(), "X_test": None, "y_test": None})()
runs.append(dt.train(symbolic_examples.diagonal_net(4, depth=2), data, dt.optim.sgd(1e-3), steps=5, seed=0, records=2))
def names():
    return [name for _, name in _compiles.outer]
out = {"trained": names(), "statuses": [r.status for r in runs],
       "lowlevel imported": "dyntools.lowlevel" in sys.modules}
import dyntools.models.mlp  # noqa: E402  (the MLP's modules: the blocks and their probe)
from dyntools import lowlevel  # noqa: E402
out.update({"mlp import": names()[len(out["trained"]):], "kind": lowlevel.KIND})
print(json.dumps(out))
"""


def cold_child(code: str, tmp_path) -> dict:
    """The JSON line ``code`` prints, run in a child whose numba, loop and symbolic caches are empty folders."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for variable in ("NUMBA_CACHE_DIR", "DYNTOOLS_LOOP_CACHE", "DYNTOOLS_SYMBOLIC_CACHE"):   # empty caches
        env[variable] = str(tmp_path / variable.lower())
    env.pop("DYNTOOLS_LOWLEVEL", None)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=HANG_GUARD)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_cold_toy_and_symbolic_train_compile_no_probe_and_no_seed_hash(tmp_path):
    out = cold_child(CHILD, tmp_path)
    trained = out["trained"]
    assert trained, "the child compiled nothing: the listener saw no event (the count would prove nothing)"
    assert not [n for n in trained if "lowlevel" in n or "seed_hash" in n], trained
    assert not out["lowlevel imported"]
    # the control: the MLP's modules probe the blocks (compiled here: the caches were empty) before any use
    assert out["kind"] == "llvm-vector"
    assert [n for n in out["mlp import"] if n == "dyntools.lowlevel.probe._exercise"], out["mlp import"]


#: a float64 cross-entropy MLP's first dt.train, then a ReLU regression net's, then two float32 MLPs built: every
#: function the child compiled (nested ones too) in each part
MLP_CHILD = LISTENER + """
import json
import numpy as np
import dyntools as dt

rng = np.random.default_rng(0)
data = type("Data", (), {"X": rng.standard_normal((20, 2)), "y": np.arange(20) % 3, "X_test": None, "y_test": None})()
run = dt.train(dt.MLP((2, 16, 16, 3), head="cross-entropy"), data, dt.optim.sgd(1e-3), steps=5, seed=0, records=2)
compiled = list(_compiles.every)
X = rng.standard_normal((20, 5))
data = type("Data", (), {"X": X, "y": X[:, 0].copy(), "X_test": None, "y_test": None})()
relu = dt.train(dt.MLP((5, 10, 10, 1)), data, dt.optim.sgd(1e-3), steps=5, seed=0, records=2)   # a short run
relu_compiled = _compiles.every[len(compiled):]
dt.MLP((2, 4, 1), dtype="float32")     # the first float32 model: its precision's probe, once
dt.MLP((2, 5, 1), dtype="float32")
print(json.dumps({"compiled": compiled, "relu": relu_compiled,
                  "float32": _compiles.every[len(compiled) + len(relu_compiled):], "status": run.status}))
"""


@pytest.fixture(scope="module")
def mlp_child(tmp_path_factory):
    """What :data:`MLP_CHILD` prints (one cold child for the tests below)."""
    return cold_child(MLP_CHILD, tmp_path_factory.mktemp("mlp-child"))


@pytest.mark.slow
def test_a_cold_cross_entropy_mlp_compiles_the_matrix_product_once(mlp_child):
    """Every product of the cross-entropy kernel's pass (plain, ReLU, masked; per column or per row) is one compiled
    function, :func:`dyntools.models.mlp_gemm.product`, with the start and the epilogue as run-time arguments: compiled
    once (one signature: no literal argument types it again) and linked once into the kernel. Three entry points with
    the epilogue fixed compiled the panels three times (~2 of the MLP's first ~11 processor-seconds, issue 38)."""
    compiled = mlp_child["compiled"]
    products = [n for n in compiled if n.startswith("dyntools.models.mlp_gemm.")]
    # the control: the kernel was compiled here (the caches were empty), with its product
    assert "dyntools.models.mlp.loss_grad_cross_entropy" in compiled, compiled
    assert products == ["dyntools.models.mlp_gemm._gemm_columns", "dyntools.models.mlp_gemm.product"], products


@pytest.mark.slow
def test_a_cold_float64_mlp_probes_the_blocks_in_float64_only(mlp_child):
    """The low-level probe compiles per precision (``_exercise`` once per signature): a float64 run compiles the
    float64 one only (the float32 one cost ~0.35 s of the row, issue 38); the first float32 model then probes float32,
    once per process (the control: the probe still runs before a float32 kernel can)."""
    probe = "dyntools.lowlevel.probe._exercise"
    assert mlp_child["compiled"].count(probe) == 1, mlp_child["compiled"]
    assert mlp_child["float32"].count(probe) == 1, mlp_child["float32"]


@pytest.mark.slow
def test_a_short_regression_run_compiles_its_kernel_and_not_the_tuned_loop(mlp_child):
    """A short run of the ReLU regression net (fewer than run_plan.POINTER_RUN_PATH_STEPS path-steps) trains through
    the pointer loop the cross-entropy MLP's run compiled before it: its kernel ``loss_grad_regression`` is compiled
    (~1.3 s), its tuned loop ``regression_paths`` (forward and backward inlined, ~4 s cold) is not (issue 38)."""
    relu = mlp_child["relu"]
    assert "dyntools.models.mlp.loss_grad_regression" in relu, relu      # the control: compiled here, cold
    assert "dyntools.dynamics.fast.mlp.regression_paths" not in relu, relu
    assert not [n for n in relu if "advance_paths_by_pointer" in n], relu   # the MLP's run compiled it


#: the first solve of a built-in 1-D SDE (its lock-step kernel: groups of four paths, leftover paths, stops inside a
#: group), with every compiled signature of every dyntools function, literal argument types made plain
SDE_CHILD = """
import json
from numba.core import event, types
from dyntools.dynamics import sde_models
from dyntools.dynamics.sde import solve

seen = {}

class Signatures(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        name = f"{f.__module__}.{f.__qualname__}"
        if name.startswith("dyntools"):
            plain = str(tuple(types.unliteral(a) for a in ev.data["args"]))
            seen.setdefault(name, []).append([plain, str(ev.data["args"])])

with event.install_listener("numba:compile", Signatures()):
    run = solve(sde_models.gbm(1.0, 1.5), 1.0, t1=1.0, h=1 / 64, paths=13, scheme="em", seed=11, records=9,
                bound=6.0)
print(json.dumps({"seen": seen, "stopped": int((run["diverged_at"] >= 0).sum())}))
"""


@pytest.mark.slow
def test_no_kernel_of_a_cold_sde_solve_is_compiled_again_for_a_literal_argument(tmp_path):
    """numba types a constant argument (``0``, ``True``) as its literal value and compiles the callee once per value:
    ``_scalar_finish`` was compiled three times inside one 1-D SDE kernel (for a literal start step, a literal save
    index, both), ~3.4 of the first solve's 10.3 s (AMD EPYC Zen 4, empty cache). Rule: no dyntools function is
    compiled twice for signatures that are equal once their literal types are made plain."""
    out = cold_child(SDE_CHILD, tmp_path)
    seen = out["seen"]
    assert "dyntools.dynamics.sde._scalar_finish" in seen, sorted(seen)     # the control: compiled here, cold
    assert 0 < out["stopped"] < 13                                          # both ways out of a group were taken
    again = {name: [given for _, given in sigs] for name, sigs in seen.items()
             if len({plain for plain, _ in sigs}) < len(sigs)}
    assert not again, again
