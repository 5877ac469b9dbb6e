"""The reproducibility contract (docs/guide/reproducibility.md), enforced across processes and targets.

(a) Same machine, same versions: bitwise. Here: a fresh compile gives the bits of a cache load — three
    processes share one emptied ``NUMBA_CACHE_DIR``; the first compiles the diagonal-network kernels, the
    next two load them (``tests/same_bits_probe.py``).
(b) Another processor: the engine goldens hold within the tolerance of their class
    (``tests/test_engine_goldens.py``: ``CLASSES``). Proved from this machine by re-running a few golden
    cases — at least one per kernel family — in subprocesses compiled for other targets, each with an empty
    numba cache: ``haswell`` with 256-bit panels (AVX2 + FMA, no AVX-512) and ``nehalem`` (no FMA at all,
    128-bit panels: its vectors are SSE's) (``tests/target_probe.py``), with ``NUMBA_CPU_FEATURES`` empty
    so that numba compiles for the named processor's features, not the host's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HANG_GUARD
from tests.test_engine_goldens import CLASSES, GOLDEN_DIR, compare_array, compare_case, load_golden, status_failures

ROOT = Path(__file__).resolve().parents[1]


def _env(cache: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CPU", "DYNTOOLS_VECTOR"))}
    env.update(PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(cache), **extra)
    return env


@pytest.mark.slow
def test_fresh_compile_gives_the_bits_of_a_cache_load(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    runs = []
    for _ in range(3):
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "same_bits_probe.py")], env=_env(cache),
                              capture_output=True, text=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if len(runs) == 1:                 # the first process compiled and wrote the cache
            assert all(runs[0]["compiled"].values()) and not any(runs[0]["loaded"].values()), runs[0]
            cached = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
            assert {"diag_net.loss_grad", "diag_net._paths", "diag_net.factored_losses",
                    "diag_net_sgd.jacobian_ranks"} <= cached, sorted(cached)
    for later in runs[1:]:                 # the next two loaded every kernel from it
        assert all(later["loaded"].values()) and not any(later["compiled"].values()), later
    for key in ("generic", "fused", "metrics"):
        assert runs[0][key] == runs[1][key] == runs[2][key], (key, [r[key] for r in runs])


#: The smallest golden cases that cover every kernel family between them: the toy's SGD; the ReLU
#: network's compiled kernel; the cross-entropy MLP's matrix products with the optimizers of a sweep cell;
#: the scalar SDE schemes (Milstein; Euler–Maruyama with substeps) and the diagonal-network SDE kernel;
#: the diagonal network's generic loop (momentum, decay, label noise) and its fused batch-1 SGD loop with
#: the metrics kernels (factored losses, Jacobian ranks). The Voronoi ladder's kernel, which has no golden
#: case, is compared with the same few steps compiled for this machine (:func:`tests.target_probe.voronoi_steps`)
#: within the tolerance of the MLP class (the same kind of computation: a softmax network trained by AdamW).
FOREIGN_CASES = ("stab-sgd", "relu-gd", "adamw-adam", "sde-gbm-milstein", "sde-gbm-em-substeps", "sde-dn-sde",
                 "dn-options", "dn-replay")

#: target name -> its environment. NUMBA_CPU_NAME alone is not enough: numba then keeps the HOST's
#: feature list (AVX-512 and FMA on this machine, whatever the name); an empty NUMBA_CPU_FEATURES makes it
#: use the named processor's own features. nehalem has no AVX: the panels of dyntools.lowlevel.fma_block
#: must be told its 128-bit vectors, since they read the vector width from the host, not from numba.
TARGETS = {
    "haswell": {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "", "DYNTOOLS_VECTOR_BITS": "256"},
    "nehalem": {"NUMBA_CPU_NAME": "nehalem", "NUMBA_CPU_FEATURES": "", "DYNTOOLS_VECTOR_BITS": "128"},
}


@pytest.mark.slow
def test_goldens_hold_when_compiled_for_other_processors(tmp_path):
    from tests.target_probe import voronoi_steps

    procs = {}
    for name, extra in TARGETS.items():                 # both targets at once: compiling is serial
        (tmp_path / name).mkdir()
        procs[name] = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "target_probe.py"), str(tmp_path / name / "out"), *FOREIGN_CASES],
            env=_env(tmp_path / name / "cache", **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    native_voronoi = voronoi_steps()                         # this machine's target, meanwhile
    failures = []
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=HANG_GUARD)
        assert proc.returncode == 0, f"{name}: {err}"
        out = tmp_path / name / "out"
        target = json.loads((out / "target.json").read_text())
        assert target["cpu_name"] == name, target
        if name == "haswell":        # AVX2 + FMA: 256-bit registers and fused multiply-adds, no 512-bit ones
            assert target["zmm"] == 0 and target["ymm"] > 0 and target["vfmadd"] > 0, target
        else:                        # SSE only: no 256/512-bit registers, no fused multiply-add
            assert target["zmm"] == target["ymm"] == target["vfmadd"] == 0, target
        for case in FOREIGN_CASES:
            with np.load(out / f"{case}.npz", allow_pickle=False) as z:
                new = {k: z[k] for k in z.files}
            statuses = json.loads((out / f"{case}.json").read_text())
            case_failures, _ = compare_case(case, load_golden(case), new)
            case_failures += status_failures(case, statuses)
            failures += [f"[{name}] {m}" for m in case_failures]
        message = compare_array("voronoi", "theta", native_voronoi, np.load(out / "voronoi.npy"),
                                rtol=CLASSES["mlp"][0])
        failures += [f"[{name}] {message}"] if message else []
    assert not failures, "\n".join(failures)


def test_the_foreign_cases_cover_a_case_of_every_golden_class():
    from tests.test_engine_goldens import CASE_CLASS

    compared = {CASE_CLASS[c] for c in FOREIGN_CASES}
    assert compared >= set(CASE_CLASS.values()) - {"chaotic", "blas"}, compared
    assert all((GOLDEN_DIR / f"{c}.npz").exists() for c in FOREIGN_CASES)
