"""``dyntools bench``: stable --json names (old names kept as aliases), the low-level kernels it ran,
and ``--isa`` (the same benchmark restricted to AVX2 in a subprocess)."""

import json

import pytest

from dyntools.bench import BenchReport, Target, isa_environment
from tests.conftest import HANG_GUARD, assert_usage_error, run_cli


def test_an_alias_repeats_its_target_under_the_old_name():
    report = BenchReport("x", targets=[Target("new name", 3.0, 2.0)], aliases={"old name": "new name",
                                                                               "gone": "not a target"})
    targets = {t["name"]: t for t in report.as_dict()["targets"]}
    assert set(targets) == {"new name", "old name"}
    assert targets["old name"] == {**targets["new name"], "name": "old name", "alias_of": "new name"}
    back = BenchReport.from_dict(report.as_dict())
    assert [t.name for t in back.targets] == ["new name"]
    assert back.as_dict()["targets"] == report.as_dict()["targets"][:1]


def test_the_avx2_environment_restricts_every_side():
    env = isa_environment("avx2", "/tmp/c")
    assert env["NUMBA_CPU_NAME"] == "haswell" and env["DYNTOOLS_VECTOR_BITS"] == "256"
    assert "-avx512f" in env["NUMBA_CPU_FEATURES"] and "+fma" in env["NUMBA_CPU_FEATURES"]
    assert "--xla_cpu_max_isa=AVX2" in env["XLA_FLAGS"] and env["OPENBLAS_CORETYPE"] == "Haswell"
    assert env["NUMBA_CACHE_DIR"] == "/tmp/c" and isa_environment("native", "/tmp/c") == {}


def test_bad_isa_is_a_usage_error():
    assert_usage_error(run_cli("bench", "stabilization", "--quick", "--isa", "avx512,sse"), "isa", "'avx512'")
    assert_usage_error(run_cli("bench", "stabilization", "--quick", "--isa", ","), "isa")


@pytest.mark.slow
def test_bench_sweep_json_keeps_the_grid_seconds_name():
    """bar 06 of the report reads ``16x24x2 grid seconds on N cores``: an alias of the float64 grid's target."""
    proc = run_cli("bench", "sweep", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["lowlevel"].startswith(("llvm-vector (", "fallback ("))
    (sweep,) = summary["benchmarks"]
    targets = {t["name"]: t for t in sweep["targets"]}
    (old,) = [n for n in targets if n.startswith("16x24x2 grid seconds on ") and "cores, EXTRAPOLATED" in n]
    new = targets[old]["alias_of"]
    assert new.startswith("16x24x2 grid seconds (float64) on ") and targets[old]["value"] == targets[new]["value"]
    assert sweep["isa"] == "native" and sweep["target"]["lowlevel"] == summary["lowlevel"]


@pytest.mark.slow
def test_bench_runs_restricted_to_avx2_in_a_subprocess():
    proc = run_cli("bench", "stabilization", "--quick", "--json", "--isa", "native,avx2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    native, avx2 = json.loads(proc.stdout)["benchmarks"]
    assert (native["name"], native["isa"], avx2["name"], avx2["isa"]) == \
        ("stabilization", "native", "stabilization [avx2]", "avx2")
    assert avx2["target"]["numba cpu"] == "haswell" and avx2["target"]["vector bits"] == 256
    assert {t["name"] for t in avx2["targets"]} == {t["name"] for t in native["targets"]}


def test_the_zmm_check_reads_register_operands_and_sees_the_avx2_restriction(tmp_path):
    """bench sweep's check that ``--isa avx2`` took effect: in a process under the avx2 environment the product
    panel's machine code has no %zmm register (the check once matched its own function's mangled name,
    '…panel_uses_zmm…', and said "zmm" everywhere)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, **isa_environment("avx2", str(tmp_path / "cache"))}
    code = "from dyntools.bench.sweep import panel_uses_zmm; print(panel_uses_zmm())"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == "False"
