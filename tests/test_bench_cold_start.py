"""The cold-start harness: a cold child sees empty caches, the warm child the files the cold one left."""

import json
import subprocess
import sys

import pytest

from dyntools.bench import cold_start

FAKE = cold_start.Row(
    "fake", 5.0, 1.0, setup="import pathlib",
    first="pathlib.Path(os.environ['NUMBA_CACHE_DIR'], f'k{time.time_ns()}.nbi').write_text('x')")


def test_cold_child_sees_empty_caches_and_warm_child_reuses_them():
    got = cold_start.measure(FAKE)
    assert got["cold"]["files_seen"] == {v: 0 for v in cold_start.CACHE_VARIABLES}
    assert got["warm"]["files_seen"] == {"NUMBA_CACHE_DIR": 2, "DYNTOOLS_SYMBOLIC_CACHE": 0, "DYNTOOLS_LOOP_CACHE": 0}
    for phase in ("cold", "warm"):
        assert got[phase]["total"] == got[phase]["import"] + got[phase]["first"]


def test_each_measure_starts_from_new_empty_caches():
    assert cold_start.measure(FAKE)["cold"]["files_seen"]["NUMBA_CACHE_DIR"] == 0
    assert cold_start.measure(FAKE)["cold"]["files_seen"]["NUMBA_CACHE_DIR"] == 0


def test_report_has_cold_and_warm_targets_in_seconds_and_the_machine():
    report = cold_start.run(rows=[FAKE]).as_dict()
    by = {t["name"]: t for t in report["targets"]}
    assert set(by) == {"fake cold", "fake warm"}
    assert all(t["unit"] == "s" and not t["higher_is_better"] for t in by.values())
    assert by["fake cold"]["goal"] == 5.0 and by["fake warm"]["goal"] == 1.0
    machine = [n for n in report["notes"] if n.startswith("processor: ")]
    assert len(machine) == 1 and report["target"]["numba cpu"]
    from dyntools.engine.target import compile_target

    assert f"numba target {compile_target()['cpu_name']}," in machine[0]     # "AMD EPYC" alone: Zen 4 or Zen 5
    json.dumps(report)


def test_a_failing_child_is_an_error_naming_the_row():
    bad = cold_start.Row("broken", 5.0, 1.0, first="raise SystemExit(3)")
    with pytest.raises(RuntimeError, match="broken"):
        cold_start.measure(bad)


def test_rows_selected_by_environment(monkeypatch):
    monkeypatch.setenv("DYNTOOLS_COLD_START_ROWS", "reproduce-quick,train-toy")
    assert [r.name for r in cold_start.selected(quick=True)] == ["reproduce-quick", "train-toy"]
    monkeypatch.setenv("DYNTOOLS_COLD_START_ROWS", "nope")
    with pytest.raises(ValueError, match="nope"):
        cold_start.selected(quick=False)
    monkeypatch.delenv("DYNTOOLS_COLD_START_ROWS")
    assert "reproduce-quick" not in [r.name for r in cold_start.selected(quick=False)]
    assert [r.name for r in cold_start.selected(quick=True)] == list(cold_start.QUICK)


def test_cli_refuses_an_unknown_row_with_one_line(tmp_path):
    env = cold_start.child_environment(str(tmp_path)) | {"DYNTOOLS_COLD_START_ROWS": "nope"}
    run = subprocess.run([sys.executable, "-m", "dyntools", "bench", "cold-start", "--json"], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == "" and len(run.stderr.strip().splitlines()) == 1


NJIT = cold_start.Row(
    "njit", 5.0, 1.0, setup="import sys\nsys.path.insert(0, os.getcwd())\nfrom tiny_kernel import twice",
    first="twice(3.0)",
    user_file=("tiny_kernel.py", "from numba import njit\n\n\n@njit(cache=True)\ndef twice(x):\n    return 2.0 * x\n"))


def test_children_count_what_numba_compiles_cold_and_nothing_warm():
    got = cold_start.measure(NJIT)
    assert got["cold"]["compiles"] >= 1 and got["cold"]["compile s"] > 0
    assert any(s.startswith("tiny_kernel.twice ") for s in got["cold"]["slowest"])
    assert got["warm"]["compiles"] == 0 and got["warm"]["compile s"] == 0 and got["warm"]["slowest"] == []


def test_report_states_the_rule_the_load_and_the_compiles():
    report = cold_start.run(rows=[NJIT]).as_dict()
    assert any(n.startswith("rule: ") and "<= the goal" in n for n in report["notes"])
    m = report["measurements"]
    assert m["njit cold functions compiled"] >= 1 and m["njit warm functions compiled"] == 0
    assert "njit load average (1 min) after" in m or not hasattr(__import__("os"), "getloadavg")
    assert any(n.startswith("njit cold: slowest compiles tiny_kernel.twice") for n in report["notes"])
