"""The low-level kernels' fallback (dyntools.lowlevel): how it is chosen, and that the plain-loop kernels
give the LLVM-vector kernels' numbers.

The fast and the fallback kernels cannot live in one process (the choice is made once, when
dyntools.lowlevel is imported), so the fallback's outputs are computed in a subprocess with
``DYNTOOLS_LOWLEVEL=fallback`` (numba's cache of the fallback is a directory of its own), and compared
here, bit for bit (same machine; every entry of a product is the same fma chain, see
dyntools/lowlevel/fallback.py).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba.core.errors import TypingError

from dyntools import lowlevel
from dyntools.engine.result import package_versions
from dyntools.models import mlp_gemm
from dyntools.models.mlp import layout_arrays
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]


def _failing_probe():
    raise TypingError("No implementation of function llvm.fma.v8f64 found")


def _passing_probe():
    pass


def test_a_compile_failure_selects_the_fallback_with_its_reason():
    kind, reason = lowlevel.choose({}, probe=_failing_probe)
    assert kind == "fallback" and "did not compile" in reason and "TypingError" in reason and "llvm.fma" in reason


def test_a_working_build_selects_the_llvm_vector_kernels():
    assert lowlevel.choose({}, probe=_passing_probe) == ("llvm-vector", "")
    assert lowlevel.choose({"DYNTOOLS_LOWLEVEL": "auto"}, probe=_passing_probe) == ("llvm-vector", "")


def test_the_environment_variable_forces_either_choice():
    kind, reason = lowlevel.choose({"DYNTOOLS_LOWLEVEL": "fallback"}, probe=_passing_probe)
    assert kind == "fallback" and "DYNTOOLS_LOWLEVEL=fallback" in reason
    with pytest.raises(TypingError):                         # forced fast code: its failure is not hidden
        lowlevel.choose({"DYNTOOLS_LOWLEVEL": "llvm-vector"}, probe=_failing_probe)
    with pytest.raises(ValueError, match="Invalid DYNTOOLS_LOWLEVEL: 'fast'"):
        lowlevel.choose({"DYNTOOLS_LOWLEVEL": "fast"}, probe=_passing_probe)


def test_float32_is_probed_on_first_use_and_a_failure_names_the_fallback(monkeypatch):
    if lowlevel.KIND != "llvm-vector":
        pytest.skip("the fallback loops need no probe")
    seen = []
    monkeypatch.setattr(lowlevel, "_PROBED", {"float64"})
    lowlevel.require(np.float64, probe=seen.append)                  # probed at import: not again
    with pytest.raises(RuntimeError, match="float32 probe.*DYNTOOLS_LOWLEVEL=fallback"):
        lowlevel.require(np.float32, environ={}, probe=lambda dtype: _failing_probe())
    with pytest.raises(TypingError):                                 # forced fast code: its failure is not hidden
        lowlevel.require(np.float32, environ={"DYNTOOLS_LOWLEVEL": "llvm-vector"}, probe=lambda d: _failing_probe())
    lowlevel.require("float32", probe=seen.append)
    lowlevel.require(np.float32, probe=seen.append)                  # once per process
    assert seen == [np.dtype(np.float32)] and lowlevel._PROBED == {"float64", "float32"}


def test_this_process_runs_the_probed_kernels():
    if os.environ.get("DYNTOOLS_LOWLEVEL") == "fallback":
        pytest.skip("fallback forced")
    assert lowlevel.KIND == "llvm-vector" and lowlevel.DESCRIPTION == f"llvm-vector ({lowlevel.VECTOR_BITS}-bit)"


def _sgd_steps(dtype: str, rng, steps: int = 20, batch: int = 16) -> dict:
    """Plain SGD on a 2 → 24 → 17 → 3 cross-entropy MLP through the compiled forward/backward pass
    (every product, transpose and view of the step): parameters and losses after ``steps`` steps."""
    widths, w_off, b_off, p = layout_arrays([2, 24, 17, 3], [True] * 3)
    theta = (0.3 * rng.standard_normal(p)).astype(dtype)
    X, y = rng.standard_normal((100, 2)).astype(dtype), rng.integers(0, 3, 100)
    bufs = mlp_gemm.views_of(np.zeros(mlp_gemm.ws_size(3, 24, batch), dtype), 3, 24, batch)
    grad, losses = np.zeros(p, dtype), []
    for _ in range(steps):
        idx = rng.integers(0, 100, batch)
        losses.append(mlp_gemm.forward_backward(theta, widths, w_off, b_off, X, y, idx, grad, bufs))
        theta -= np.asarray(0.1, dtype) * grad
    return {f"sgd theta {dtype}": theta, f"sgd losses {dtype}": np.array(losses)}


def _diag_net_sde_steps(rng, paths: int = 8, n: int = 13, d: int = 21, steps: int = 20) -> dict:
    """u, v and the losses of the diagonal-network SDE kernel after ``steps`` Euler–Maruyama steps (its two
    products by X per step go through the panels: ``n`` and ``d`` leave columns over for the loops)."""
    from dyntools.dynamics.sde_models import diag_net_kernel
    from dyntools.engine import streams

    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    U, V = 0.5 + 0.1 * rng.standard_normal((paths, d)), 0.5 + 0.1 * rng.standard_normal((paths, d))
    loss = np.full((paths, 2), np.nan)
    diag_net_kernel(U, V, X, X.T.copy(), y, np.array([0.01]), np.array([0.05]), steps, 1, streams.path_states(3, paths),
                    np.array([0, steps]), 1e10, np.empty((0, 0, 0)), np.empty((0, 0, 0)), loss,
                    np.full(paths, -1, dtype=np.int64))
    return {"diag-net SDE u": U, "diag-net SDE v": V, "diag-net SDE losses": loss}


def outputs() -> dict:
    """Products of every kind and shape class, transposes, views and a short MLP training (both
    precisions), from whichever kernels this process runs, and what ran (``lowlevel``)."""
    out = {}
    rng = np.random.default_rng(7)
    for dt in (np.float64, np.float32):
        name = np.dtype(dt).name
        for m, k, n in ((11, 7, 45), (16, 33, 64), (3, 5, 2)):
            C, In = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
            init, mask = rng.standard_normal(max(m, n)).astype(dt), rng.standard_normal((m, n)).astype(dt)
            for kind in ("gemm", "gemm_relu", "gemm_row_starts", "gemm_masked"):
                res = np.empty((m, n), dt)
                extra = (mask,) if kind == "gemm_masked" else ()
                start = init[:m] if kind == "gemm_row_starts" else init[:n]
                getattr(mlp_gemm, kind)(res, start, C, In, m, k, n, *extra)
                out[f"{kind} {name} {m}x{k}x{n}"] = res
            out[f"gemm of a transposed view {name} {m}x{k}x{n}"] = res = np.empty((k, n), dt)
            mlp_gemm.gemm(res, init[:n], C.T, rng.standard_normal((m, n)).astype(dt), k, m, n)
            src = rng.standard_normal((m + 9, n + 3)).astype(dt)
            dst = np.zeros((n + 3, m + 9), dt)
            lowlevel.transpose(dst, src, m + 9, n + 3)
            out[f"transpose {name} {m}x{n}"] = dst
        out.update(_sgd_steps(name, rng))
    out.update(_diag_net_sde_steps(rng))
    out["lowlevel"] = np.array(package_versions()["lowlevel"])
    return out


@pytest.mark.slow
def test_the_fallback_kernels_give_the_fast_kernels_bits(tmp_path):
    script = (f"import numpy as np, tests.test_lowlevel as t; np.savez({str(tmp_path / 'fb.npz')!r}, **t.outputs()); "
              "from dyntools.lowlevel import fallback; print(*map(str, fallback.block_loops.signatures), sep='\\n')")
    env = {**os.environ, "DYNTOOLS_LOWLEVEL": "fallback", "NUMBA_CACHE_DIR": str(tmp_path / "numba"),  # compiled here
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=HANG_GUARD)
    assert run.returncode == 0, run.stderr[-3000:]
    # one compiled panel loop per precision and layout of C ('C', 'F' for a transposed view, 'A'), none for a
    # literal panel shape or offset (each such copy cost ~0.3 s of compiling: 13 of them in one gemm)
    signatures = run.stdout.splitlines()
    assert not any("Literal" in s for s in signatures) and 2 <= len(signatures) <= 6, signatures
    fallback = dict(np.load(tmp_path / "fb.npz"))
    fast = outputs()
    assert sorted(fallback) == sorted(fast)
    for key in fast:
        if key == "lowlevel":
            assert str(fallback[key]) == "fallback (forced by DYNTOOLS_LOWLEVEL=fallback)"
            assert str(fast[key]) == lowlevel.DESCRIPTION
        else:
            assert fast[key].dtype == fallback[key].dtype and fast[key].tobytes() == fallback[key].tobytes(), key
