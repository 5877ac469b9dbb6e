"""A user's SDE is compiled once per installation: its loop and bounds-checked terms are cached on disk, keyed by
the terms' source, what they read and the compile target; a cache from another target is never used."""

import inspect
import json
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from dyntools.codegen import cache
from dyntools.dynamics import sde as S
from dyntools.engine import target
from dyntools.user_code import source_fingerprint

RATE = 2.0


@numba.njit
def drift(t, x, args, out):
    out[0] = RATE * (args[0] - x[0])


@numba.njit
def diffusion(t, x, args, out):
    out[0, 0] = args[1] * np.sqrt(max(x[0], 0.0))


def _sde():
    return S.SDE(drift, diffusion, dim=1, noise_dim=1, args=[0.5, 0.3])


def test_key_changes_with_the_compile_target(monkeypatch):
    here = S.user_kernel_key(_sde())
    assert here is not None and here == S.user_kernel_key(_sde())
    real = target.compile_target()
    for field in ("cpu_name", "numba", "cpu_features"):           # each one changed from what this target has
        monkeypatch.setattr(target, "compile_target", lambda f=field: {**real, f: f"{real.get(f)}-another"})
        assert S.user_kernel_key(_sde()) != here, field


def test_key_changes_with_the_source_and_the_globals_it_reads(monkeypatch):
    before = source_fingerprint(drift)
    monkeypatch.setattr(sys.modules[__name__], "RATE", 3.0)
    assert source_fingerprint(drift) != before
    assert source_fingerprint(diffusion) == source_fingerprint(diffusion)


def test_unnameable_global_means_no_cache_and_the_uncached_path(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "RATE", {"not": "a number"})
    assert source_fingerprint(drift) is None and S.user_kernel_key(_sde()) is None


#: the user's file: the two terms above (their source, decorators included), with their constant and the SDE
USER = ("import numba, numpy as np\nimport dyntools as dt\n\nRATE = 2.0\n\n"
        + "\n".join(inspect.getsource(term.py_func) for term in (drift, diffusion))
        + "\nsde = dt.SDE(drift, diffusion, dim=1, noise_dim=1, args=[0.5, 0.3])\n")

CHILD = '''
import hashlib, json, sys
sys.path.insert(0, ".")
from cir_user import sde
from dyntools.dynamics import sde as S
import dyntools as dt
r = dt.solve(sde, 0.4, t1=0.05, h=1e-3, paths=3, seed=1)
kernel = S._kernel_for(sde)
checked = [S._bounds_checked(f) for f in (sde.drift, sde.diffusion)]
print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()), "misses": sum(kernel.stats.cache_misses.values()),
                  "checked_hits": [sum(c.stats.cache_hits.values()) for c in checked],
                  "x": hashlib.sha256(r.arrays["x"].tobytes()).hexdigest()}))
'''


def _child(tmp_path, extra_env=None):
    import os

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), DYNTOOLS_SYMBOLIC_CACHE=str(tmp_path / "sym"),
               **(extra_env or {}))
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_second_process_loads_the_compiled_loop_and_gets_the_same_bits(tmp_path):
    (tmp_path / "cir_user.py").write_text(textwrap.dedent(USER))
    first = _child(tmp_path)
    second = _child(tmp_path)
    assert first["hits"] == 0 and first["misses"] >= 1 and first["checked_hits"] == [0, 0]
    assert second["hits"] >= 1 and second["misses"] == 0 and second["checked_hits"] == [1, 1]
    assert second["x"] == first["x"]                  # fresh compile = cache load, bitwise
    kernels = sorted(p.name for p in (tmp_path / "sym").glob("sdekernel_*.py"))
    assert len(kernels) == 1
    # an edited constant is a new key: a new loop, never the old one
    (tmp_path / "cir_user.py").write_text(textwrap.dedent(USER).replace("RATE = 2.0", "RATE = 2.5"))
    third = _child(tmp_path)
    assert third["hits"] == 0 and third["x"] != first["x"]
    assert len(list((tmp_path / "sym").glob("sdekernel_*.py"))) == 2


def test_a_loop_cached_on_another_target_is_never_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path))
    real = target.compile_target()
    monkeypatch.setattr(target, "compile_target", lambda: {**real, "cpu_name": "some-other-cpu"})
    foreign = S.user_kernel_key(_sde())
    (tmp_path / f"sdekernel_{foreign}.py").write_text("kernel = serial = 'compiled for some-other-cpu'\n")
    assert S._cached_user_kernel(_sde(), foreign).dispatcher == "compiled for some-other-cpu"  # what it loads
    monkeypatch.setattr(target, "compile_target", lambda: real)
    here = S.user_kernel_key(_sde())
    assert here != foreign and not cache.exists("sdekernel", here)       # this machine writes and compiles its own


def test_a_file_edited_after_import_does_not_pass_for_the_code_loaded(tmp_path):
    import importlib.util
    import linecache

    def load(name):
        spec = importlib.util.spec_from_file_location(name, tmp_path / "term.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.f

    (tmp_path / "term.py").write_text("def f(t, x, args, out):\n    out[0] = 1.0\n")
    old = load("term_old")
    (tmp_path / "term.py").write_text("def f(t, x, args, out):\n    out[0] = 2.0\n")
    linecache.checkcache()
    new = load("term_new")
    assert source_fingerprint(old) != source_fingerprint(new)       # same source text now, other code


def test_a_term_without_source_has_no_key():
    scope = {"np": np}
    exec(compile("def f(t, x, args, out):\n    out[0] = 1.0\n", "<typed at a prompt>", "exec"), scope)
    sde = S.SDE(numba.njit(scope["f"]), diffusion, dim=1, noise_dim=1, args=[0.5, 0.3])
    assert source_fingerprint(scope["f"]) is None and S.user_kernel_key(sde) is None


lam_drift = numba.njit(lambda t, x, args, out: None)


def test_a_lambda_term_is_checked_uncached():
    assert S._checked_copy(lam_drift) is None
    assert S._bounds_checked(lam_drift) is not None


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_user_loop_on_blocks_of_paths_equals_one_block_and_the_twin(workers, monkeypatch, tmp_path):
    """The user's loop is compiled serially and run on contiguous blocks of paths (one per thread): any split —
    7 paths on 1, 2, 3 or 7 blocks, a bound stopping some paths mid-block — gives the twin's bits."""
    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path))
    sde = _sde()
    kw = dict(t1=0.5, h=1 / 64, paths=7, seed=3, records=9, record_brownian=True, bound=0.62)
    twin = S.solve(sde, 0.55, kernel="numpy", **kw)
    assert 0 < (twin["diverged_at"] >= 0).sum() < 7                 # some, not all, paths stopped
    kernel = S._kernel_for(sde)
    assert isinstance(kernel, S._OnThreads) and not kernel.dispatcher.targetoptions.get("parallel")
    assert kernel.parallel.targetoptions.get("parallel")
    calls = []
    real = kernel.dispatcher

    def counted(*a):
        calls.append(a[1].shape[0])
        real(*a)

    monkeypatch.setattr(kernel, "dispatcher", counted)
    monkeypatch.setattr(S.numba, "get_num_threads", lambda: workers)
    got = S.solve(sde, 0.55, **kw)
    assert sorted(calls) == sorted(7 * (b + 1) // workers - 7 * b // workers for b in range(workers))
    for name in ("x", "W", "diverged_at"):
        assert np.array_equal(got[name], twin[name], equal_nan=True), name


def test_a_run_above_small_run_takes_the_parallel_loop_with_the_same_bits(monkeypatch, tmp_path):
    """Above :data:`SMALL_RUN` path-steps the ``prange`` compilation runs (and the serial one does not): the
    twin's bits all the same, stopped paths included."""
    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path))
    sde = _sde()
    kw = dict(t1=0.5, h=1 / 64, paths=7, seed=3, records=9, record_brownian=True, bound=0.62)
    twin = S.solve(sde, 0.55, kernel="numpy", **kw)
    kernel = S._kernel_for(sde)
    used = []
    for which in ("dispatcher", "parallel"):
        real = getattr(kernel, which)
        monkeypatch.setattr(kernel, which, lambda *a, real=real, which=which: (used.append(which), real(*a)))
    monkeypatch.setattr(S, "SMALL_RUN", 7 * 32 - 1)                     # 7 paths x 32 steps: just above it
    got = S.solve(sde, 0.55, **kw)
    assert used == ["parallel"]
    for name in ("x", "W", "diverged_at"):
        assert np.array_equal(got[name], twin[name], equal_nan=True), name
    monkeypatch.setattr(S, "SMALL_RUN", 7 * 32)                         # at it: the serial loop
    used.clear()
    S.solve(sde, 0.55, **kw)
    assert used and set(used) == {"dispatcher"}
