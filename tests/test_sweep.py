"""dyntools.sweep: local and Dask backends give identical cells, atomic cell files, resume, failures."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dyntools import sweep
from tests.conftest import HANG_GUARD, other_cpu_name

ROOT = Path(__file__).resolve().parents[1]


def demo_spec(n=8, sleep=0.0, diverge=(), size=4, seed=3):
    cells = [{"sleep": sleep, "diverge": i in diverge} for i in range(n)]
    return sweep.SweepSpec("demo", sweep.demo_cell, {"size": size}, cells, seed)


def tiny_grid_spec(seed=1):
    from dyntools.heatmap_grid import GridConfig, build_spec

    cfg = GridConfig(n_lr=2, n_wd=2, n=64, n_val=64, epochs=4, hidden=(6, 6, 6), batch_size=16,
                     lr_range=(1e-3, 1e-1), wd_range=(1e-4, 1e-1))
    return build_spec(cfg, seed)


def cell_files(out):
    """The finished cells (a write cut short by a kill leaves a hidden ``.cell….npz`` temporary file:
    not a cell, and pathlib's ``*`` would match it)."""
    return sorted(p.name for p in (Path(out) / sweep.CELLS_DIR).glob("*.npz") if not p.name.startswith("."))


def same_cells(a, b):
    assert len(a) == len(b)
    for ca, cb in zip(a, b):
        assert ca["status"] == cb["status"]
        for k in ca:
            if k in ("pid", "seconds", "status", "message"):
                continue
            np.testing.assert_array_equal(ca[k], cb[k])


def test_serial_and_process_pool_are_bitwise_identical_and_seeded_per_cell(tmp_path):
    a = sweep.run_sweep(demo_spec(), tmp_path / "a", workers=1)
    b = sweep.run_sweep(demo_spec(), tmp_path / "b", workers=2)
    same_cells(a.cells, b.cells)
    assert not np.array_equal(a.cells[0]["x"], a.cells[1]["x"])      # distinct streams per cell
    c = sweep.run_sweep(demo_spec(seed=4), tmp_path / "c", workers=1)
    assert not np.array_equal(a.cells[0]["x"], c.cells[0]["x"])


def test_the_workers_of_a_local_pool_warm_up_in_turn(tmp_path, monkeypatch):
    """With empty caches the first worker compiles and the other loads what it cached: their warm-ups (here a
    busy 0.6 s each) never overlap (planted: without the turn lock both start at spawn and overlap)."""
    from tests.sweep_turns import logged_cell

    monkeypatch.setenv("DYNTOOLS_LOOP_CACHE", str(tmp_path / "loops"))     # empty caches: no warm marker

    logs = tmp_path / "warm"
    logs.mkdir()
    spec = sweep.SweepSpec("demo", logged_cell, {"size": 4, "warm": 0.6, "warm_log": str(logs)}, [{}] * 4, 3)
    out = sweep.run_sweep(spec, tmp_path / "out", workers=2)
    assert [c["status"] for c in out.cells] == ["completed"] * 4
    spans = sorted(tuple(map(float, f.read_text().split())) for f in logs.iterdir())
    assert len(spans) == 2, spans
    (_, first_end), (second_start, _) = spans
    assert second_start >= first_end, spans


def test_a_pool_that_warmed_up_without_compiling_lets_the_next_skip_the_turns(tmp_path, monkeypatch):
    """The warm marker: a pool whose warm-ups compiled nothing leaves it (the next pool's workers need not wait for
    each other); a pool whose warm-up compiled (a numba compile event) removes it, so the next one takes turns."""
    from tests.sweep_turns import compiling_cell, logged_cell

    monkeypatch.setenv("DYNTOOLS_LOOP_CACHE", str(tmp_path / "loops"))
    logs = tmp_path / "warm"
    logs.mkdir()
    quiet = sweep.SweepSpec("demo", logged_cell, {"size": 4, "warm": 0.0, "warm_log": str(logs)}, [{}] * 2, 3)
    marker = sweep.warm_marker(logged_cell)
    assert not marker.exists()
    sweep.run_sweep(quiet, tmp_path / "a", workers=2)
    assert marker.exists()
    compiling = sweep.SweepSpec("demo", compiling_cell, {"size": 4}, [{}] * 2, 3)
    marker = sweep.warm_marker(compiling_cell)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()                                     # planted: a stale marker, then a warm-up that compiles
    out = sweep.run_sweep(compiling, tmp_path / "b", workers=2)
    assert [c["status"] for c in out.cells] == ["completed"] * 2
    assert not marker.exists()


def test_resume_reuses_finished_cells_without_duplicates(tmp_path):
    out = tmp_path / "s"
    first = sweep.run_sweep(demo_spec(n=6), out, workers=1)
    assert (first.computed, first.reused) == (6, 0)
    for i in (1, 4):
        sweep.cell_path(out, i).unlink()
    mtime = sweep.cell_path(out, 0).stat().st_mtime_ns
    second = sweep.run_sweep(demo_spec(n=6), out, workers=1)
    assert (second.computed, second.reused) == (2, 4)
    assert sweep.cell_path(out, 0).stat().st_mtime_ns == mtime
    assert cell_files(out) == [f"cell_{i:05d}.npz" for i in range(6)]
    same_cells(first.cells, second.cells)
    # a different sweep in the same directory starts afresh
    third = sweep.run_sweep(demo_spec(n=3, seed=9), out, workers=1)
    assert (third.computed, third.reused) == (3, 0) and len(cell_files(out)) == 3


def _sweep_in_a_child(out, *, cells: int, sleep: float, workers: int, started: int) -> subprocess.Popen:
    """A child process running a demo sweep of ``cells`` sleeping cells into ``out``, once ``started`` cells
    are on disk (the wait is a hang guard, not a speed limit)."""
    code = ("from dyntools import sweep; "
            f"cells=[{{'sleep': {sleep}}} for _ in range({cells})]; "
            "sweep.run_sweep(sweep.SweepSpec('demo', sweep.demo_cell, {'size': 4}, cells, 3), "
            f"{str(out)!r}, workers={workers})")
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.time() + HANG_GUARD
    while time.time() < deadline and not ((out / "cells").exists() and len(cell_files(out)) >= started):
        time.sleep(0.05)
    return proc


def test_killed_sweep_resumes(tmp_path):
    out = tmp_path / "killed"
    proc = _sweep_in_a_child(out, cells=12, sleep=0.25, workers=1, started=3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(cell_files(out))
    assert 3 <= done_before < 12
    # no half-written cell: every file present loads
    for i in range(12):
        if sweep.cell_path(out, i).exists():
            sweep.read_cell(out, i)
    spec = sweep.SweepSpec("demo", sweep.demo_cell, {"size": 4}, [{"sleep": 0.25}] * 12, 3)
    resumed = sweep.run_sweep(spec, out, workers=1)
    assert resumed.reused == done_before and resumed.computed == 12 - done_before
    same_cells(resumed.cells, sweep.run_sweep(demo_spec(n=12), tmp_path / "ref", workers=1).cells)


def test_workers_exit_when_the_driver_is_killed(tmp_path):
    """SIGKILL of a local sweep (2 worker processes): its workers notice and exit within seconds."""
    out = tmp_path / "orphans"
    proc = _sweep_in_a_child(out, cells=40, sleep=0.5, workers=2, started=2)
    children = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                               text=True).stdout.split()]
    assert children, "the sweep should run worker processes"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + HANG_GUARD          # a hang guard: the workers notice within seconds
    alive = children
    while time.time() < deadline and alive:
        time.sleep(0.2)
        alive = [p for p in alive if os.path.exists(f"/proc/{p}") and
                 "Z" not in open(f"/proc/{p}/stat").read().split(")")[-1].split()[0]]
    assert not alive, f"worker processes outlived their sweep: {alive}"


def test_diverged_cell_is_a_result_not_an_error(tmp_path):
    res = sweep.run_sweep(demo_spec(n=4, diverge=(2,)), tmp_path / "d", workers=1)
    assert [c["status"] for c in res.cells] == ["completed", "completed", "diverged", "completed"]
    assert res.cells[2]["message"] == "diverged at step 0"


def test_dask_local_cluster_equals_local_run_bit_for_bit(tmp_path):
    pytest.importorskip("distributed")
    local = sweep.run_sweep(tiny_grid_spec(), tmp_path / "local", workers=1)
    dask = sweep.run_sweep(tiny_grid_spec(), tmp_path / "dask", dask_local=2)
    assert dask.backend == "dask-local" and dask.computed == 8
    same_cells(local.cells, dask.cells)


def test_worker_killed_mid_sweep_every_cell_exactly_once(tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "kill"
    spec = demo_spec(n=16, sleep=0.3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        pids = client.run(os.getpid)
        box = {}
        thread = threading.Thread(target=lambda: box.update(r=sweep.run_sweep(
            spec, out, scheduler=cluster.scheduler_address, connect_timeout=60)))
        thread.start()
        deadline = time.time() + HANG_GUARD
        while time.time() < deadline and thread.is_alive() and \
                (not (out / "cells").exists() or len(cell_files(out)) < 2):    # a sweep that failed: stop waiting
            time.sleep(0.05)
        victim = next(iter(pids.values()))
        os.kill(victim, signal.SIGKILL)
        thread.join(timeout=HANG_GUARD)
        assert not thread.is_alive()
    result = box["r"]
    assert cell_files(out) == [f"cell_{i:05d}.npz" for i in range(16)]
    assert result.computed == 16
    assert len({c["pid"] for c in result.cells}) >= 2          # computed by more than one worker
    same_cells(result.cells, sweep.run_sweep(spec, tmp_path / "ref", workers=1).cells)


def test_unreachable_scheduler_is_a_clear_error_without_hang(tmp_path):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="Invalid --scheduler: cannot reach a Dask scheduler at tcp://127.0.0.1:9"):
        sweep.run_sweep(demo_spec(), tmp_path / "u", scheduler="tcp://127.0.0.1:9", connect_timeout=2)
    assert time.perf_counter() - start < 2 + 20          # a hang guard, below dask's own 30 s default
    assert not (tmp_path / "u").exists()


@pytest.mark.parametrize("kwargs, match", [
    ({"scheduler": "localhost:8786"}, "Invalid --scheduler"),
    ({"scheduler": "tcp://host:99999"}, "Invalid --scheduler"),
    ({"dask_local": 0}, "Invalid --dask-local"),
    ({"workers": 0}, "Invalid --workers"),
    ({"dask_local": 2, "scheduler": "tcp://127.0.0.1:8786"}, "cannot be combined"),
])
def test_bad_backend_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sweep.run_sweep(demo_spec(), tmp_path / "b", **kwargs)
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("mode", ["silent", "http", "garbage", "binary"])
def test_a_foreign_server_fails_within_the_timeout_with_one_line(tmp_path, mode):
    """A TCP server on 127.0.0.1 that is silent, speaks HTTP, or sends garbage: the connection fails
    within --connect-timeout (a generous hang guard beside it) with one ValueError naming --scheduler;
    nothing is written."""
    import time

    from tests.fuzz_cases import fake_server

    port, close = fake_server(mode)
    try:
        start = time.perf_counter()
        with pytest.raises(ValueError, match="Invalid --scheduler: cannot reach"):
            sweep.run_sweep(demo_spec(), tmp_path / "f", scheduler=f"tcp://127.0.0.1:{port}", connect_timeout=1.5)
        assert time.perf_counter() - start < 1.5 + 20.0  # a hang guard, below dask's own 30 s default
        assert not (tmp_path / "f").exists()
    finally:
        close()


RESUME_ELSEWHERE = """
import json, sys
from dyntools import sweep
cells = [{"sleep": 0.0, "diverge": False} for _ in range(4)]
spec = sweep.SweepSpec("demo", sweep.demo_cell, {"size": 4}, cells, 3)
outcome = sweep.run_sweep(spec, sys.argv[1], workers=1)
summary = {}
message = outcome.with_targets("4 cells", summary)
print(json.dumps({"computed": outcome.computed, "message": message, **summary}))
"""


def test_cells_record_their_compile_target_and_a_sweep_resumed_on_another_target_says_mixed(tmp_path):
    import json

    from dyntools.engine.target import compile_target

    out = tmp_path / "s"
    uniform = sweep.run_sweep(demo_spec(n=4), out, workers=1)
    here = uniform.compile_targets
    assert not here["mixed"] and here["unrecorded"] == []
    assert [t["cells"] for t in here["targets"]] == [[0, 1, 2, 3]]
    assert here["targets"][0]["cpu_name"] == compile_target()["cpu_name"]
    assert uniform.with_targets("4 cells", {}) == "4 cells"                    # uniform: nothing to say
    for i in (2, 3):                                                          # resumed on another target
        sweep.cell_path(out, i).unlink()
    other = other_cpu_name()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CPU_NAME": other, "NUMBA_CPU_FEATURES": "",
           "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", RESUME_ELSEWHERE, str(out)], env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["computed"] == 2 and report["compile_targets"]["mixed"]
    by_cpu = {t["cpu_name"]: t["cells"] for t in report["compile_targets"]["targets"]}
    assert by_cpu[other] == [2, 3] and by_cpu[compile_target()["cpu_name"]] == [0, 1]
    assert "different compile targets" in report["message"] and f"2 on {other}" in report["message"]
    again = sweep.run_sweep(demo_spec(n=4), out, workers=1)                    # read back here: still mixed
    assert again.computed == 0 and again.compile_targets["mixed"]
    same_cells(uniform.cells, again.cells)                      # the demo cells draw no float kernel: equal


def test_cells_written_before_targets_were_recorded_are_unrecorded_not_mixed():
    from dyntools.engine.target import summarize_targets

    t = {"cpu_name": "x", "cpu_features": "+a", "vector_bits": "default", "numba": "1", "llvmlite": "1", "numpy": "2"}
    s = summarize_targets([t, None, dict(t)])
    assert not s["mixed"] and s["unrecorded"] == [1] and s["targets"][0]["cells"] == [0, 2]
    assert summarize_targets([t, {**t, "numpy": "1.26"}])["mixed"]
    assert summarize_targets([])["mixed"] is False
