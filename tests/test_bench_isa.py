"""``dyntools bench``: benchmarks found by their declarations, stable --json names, the low-level kernels it ran,
and ``--isa`` (the same benchmark restricted to AVX2 in a subprocess)."""

import json

import pytest

from dyntools.bench import Benchmark, BenchReport, Target, isa_environment
from tests.conftest import HANG_GUARD, assert_usage_error, run_cli

#: every ``dyntools bench --json`` name: readers key on them, so a rename is a visible change of this list
BENCH_NAMES = {"deep-nets", "diag-net", "gallery", "grokking-step", "image-epoch", "relu", "sde", "stabilization",
               "sweep", "symbolic-model", "voronoi", "cold-start", "optimizer-chain"}


def test_the_benchmarks_are_found_by_their_declarations():
    import dyntools.bench as bench
    from dyntools.bench import anchors

    found = bench.benchmarks()
    assert set(found) == BENCH_NAMES
    for name, declared in found.items():
        assert isinstance(declared, Benchmark) and declared.name == name and callable(declared.run)
    assert not hasattr(anchors, "BENCHMARK")                 # a helper module is scanned, not listed
    assert not hasattr(bench, "BENCHMARKS")


def test_a_whole_bench_runs_cold_start_last():
    """cold-start's children compile from empty caches (~1 GiB resident): run before the sweep, their peak was
    read as the sweep's workers' (ru_maxrss of RUSAGE_CHILDREN: 1205 MiB against 210 alone, AMD Zen 5)."""
    import dyntools.bench as bench

    order = list(bench.benchmarks())
    assert order[-1] == "cold-start" and bench.benchmarks()["cold-start"].compiles_in_children
    others = [n for n in order if not bench.benchmarks()[n].compiles_in_children]
    assert others == sorted(others) and order.index("sweep") < order.index("cold-start")


def test_a_report_round_trips_without_aliases():
    report = BenchReport("x", targets=[Target("new name", 3.0, 2.0)])
    assert [t["name"] for t in report.as_dict()["targets"]] == ["new name"]
    assert "alias_of" not in report.as_dict()["targets"][0]
    assert BenchReport.from_dict(report.as_dict()).as_dict()["targets"] == report.as_dict()["targets"]
    with pytest.raises(TypeError):
        BenchReport("x", aliases={"old": "new name"})


def test_an_unknown_benchmark_is_a_usage_error():
    assert_usage_error(run_cli("bench", "no-such-bench", "--quick"), "benchmark", "'no-such-bench'")


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
    """The float64 grid's target keeps its name (its old name, without ``(float64)``, is gone: no aliases)."""
    proc = run_cli("bench", "sweep", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["lowlevel"].startswith(("llvm-vector (", "fallback ("))
    (sweep,) = summary["benchmarks"]
    names = [t["name"] for t in sweep["targets"]]
    assert [n for n in names if n.startswith("16x24x2 grid seconds (float64) on ") and "cores, EXTRAPOLATED" in n]
    assert not [n for n in names if n.startswith("16x24x2 grid seconds on ")]
    assert all("alias_of" not in t for t in sweep["targets"])
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
