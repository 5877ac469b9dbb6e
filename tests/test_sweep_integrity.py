"""dyntools.sweep on disk: per-cell checksums in sweep.json, a damaged sweep.json rebuilt, one sweep per
folder (a lock naming its holder, stale locks taken over, nothing deleted that the sweep did not create),
a killed local pool process restarted (--retries) or reported in one line."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dyntools import folder_lock, store, sweep
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]


def demo_spec(n=6, seed=3, log=None, sleep=0.0):
    config = {"size": 4, **({"log": str(log)} if log else {})}
    return sweep.SweepSpec("demo", sweep.demo_cell, config, [{"sleep": sleep}] * n, seed)


def ledger(out) -> dict:
    return json.loads((Path(out) / sweep.SPEC_FILE).read_text())


def test_sweep_json_holds_each_cells_sha256_and_a_cell_edited_by_hand_is_recomputed(tmp_path):
    import hashlib

    out = tmp_path / "s"
    first = sweep.run_sweep(demo_spec(), out, workers=1)
    sums = ledger(out)["checksums"]
    assert sorted(sums, key=int) == [str(i) for i in range(6)]
    for i in range(6):
        assert sums[str(i)] == hashlib.sha256(sweep.cell_path(out, i).read_bytes()).hexdigest()
    # a hand edit that keeps the file a valid cell: x changed, metadata intact
    path = sweep.cell_path(out, 2)
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["x"] = arrays["x"] + 1.0
    np.savez(path, **arrays)
    sweep.read_cell(out, 2)                                       # still readable: only the checksum tells
    again = sweep.run_sweep(demo_spec(), out, workers=1)
    assert (again.computed, again.reused) == (1, 5)
    assert len(again.damaged) == 1 and "cell_00002.npz: its SHA-256 differs from the one in sweep.json" \
        in again.damaged[0]
    assert again.with_damaged("done").startswith("done; 1 damaged cell recomputed (")
    np.testing.assert_array_equal(again.cells[2]["x"], first.cells[2]["x"])


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "a list"])
def test_a_damaged_sweep_json_is_reported_and_rebuilt_from_the_valid_cells(tmp_path, damage):
    out = tmp_path / "s"
    first = sweep.run_sweep(demo_spec(), out, workers=1)
    text = (out / sweep.SPEC_FILE).read_text()
    (out / sweep.SPEC_FILE).write_bytes({"garbage": os.urandom(64), "truncated": text[:len(text) // 2].encode(),
                                         "empty": b"", "a list": b"[1, 2]"}[damage])
    again = sweep.run_sweep(demo_spec(), out, workers=1)
    assert (again.computed, again.reused) == (0, 6)               # nothing discarded
    assert len(again.damaged) == 1 and "sweep.json: damaged" in again.damaged[0] and "rebuilt" in again.damaged[0]
    assert again.with_damaged("done").startswith("done; 0 damaged cells recomputed (")    # rebuilt, not recomputed
    assert len(ledger(out)["checksums"]) == 6 and ledger(out)["seed"] == 3
    for a, b in zip(first.cells, again.cells):
        np.testing.assert_array_equal(a["x"], b["x"])


def test_a_rebuilt_sweep_json_keeps_only_the_cells_of_this_sweep(tmp_path):
    out, other = tmp_path / "s", tmp_path / "o"
    sweep.run_sweep(demo_spec(), out, workers=1)
    sweep.run_sweep(demo_spec(seed=9), other, workers=1)
    os.replace(sweep.cell_path(other, 4), sweep.cell_path(out, 4))   # a cell of another sweep slipped in
    (out / sweep.SPEC_FILE).write_text("{")
    again = sweep.run_sweep(demo_spec(), out, workers=1)
    assert (again.computed, again.reused) == (1, 5)
    assert any("cell_00004.npz: not a cell of this sweep" in d for d in again.damaged)
    ref = sweep.run_sweep(demo_spec(), tmp_path / "ref", workers=1)
    np.testing.assert_array_equal(again.cells[4]["x"], ref.cells[4]["x"])


def test_a_second_sweep_into_a_locked_folder_refuses_naming_the_holder_and_deletes_nothing(tmp_path):
    out = tmp_path / "s"
    sweep.run_sweep(demo_spec(), out, workers=1)
    before = sorted(p.name for p in out.rglob("*"))
    with folder_lock.FolderLock(out):                            # another open file description: a holder
        with pytest.raises(folder_lock.FolderBusy, match=rf"is being written by another sweep \(pid {os.getpid()} "
                                                         r"on .*, started 20.* UTC\); wait for it"):
            sweep.run_sweep(demo_spec(seed=9), out, workers=1)   # another sweep: would start afresh
        assert sorted(p.name for p in out.rglob("*") if p.name != store.LOCK_FILE) == before
    assert not (out / store.LOCK_FILE).exists()                  # the holder removes its lock


def test_a_stale_lock_is_taken_over_and_a_lock_alone_is_an_empty_folder(tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    dead = {"pid": 999999999, "host": "gone", "start": 1.0}
    (out / store.LOCK_FILE).write_text(json.dumps(dead))         # left by a killed sweep: nobody holds it
    assert folder_lock.holder(out) is None
    outcome = sweep.run_sweep(demo_spec(n=2), out, workers=1)
    assert outcome.computed == 2 and outcome.extra["stale_lock"] == dead
    assert not (out / store.LOCK_FILE).exists()


def broken_cell(config, cell, seed, index):
    """A cell function that fails as it starts."""
    raise AttributeError("no such attribute (a broken cell)")


def test_a_cell_is_a_function_never_its_name():
    with pytest.raises(TypeError, match="pass the cell function itself"):
        sweep.SweepSpec("demo", "dyntools.sweep:demo_cell", {}, [{}], 3)
    assert sweep.SweepSpec("demo", sweep.demo_cell, {}, [{}], 3).identity()["cell_fn"] == "dyntools.sweep:demo_cell"


def test_a_failing_sweep_removes_only_the_folders_it_created(tmp_path):
    parent = tmp_path / "p"
    bad = sweep.SweepSpec("demo", broken_cell, {}, [{}], 3)
    with pytest.raises(AttributeError):
        sweep.run_sweep(bad, parent / "a" / "s", workers=1)
    assert not parent.exists()                                   # made by it, nothing finished: removed
    (parent / "a").mkdir(parents=True)
    (parent / "a" / "mine.txt").write_text("not the sweep's")
    with pytest.raises(AttributeError):
        sweep.run_sweep(bad, parent / "a" / "s", workers=1)
    assert sorted(p.name for p in (parent / "a").iterdir()) == ["mine.txt"]


RACE = """
import sys
from dyntools import sweep
from dyntools.store import StoreError
cells = [{"sleep": 0.05} for _ in range(6)]
spec = sweep.SweepSpec("demo", sweep.demo_cell, {"size": 4, "log": sys.argv[2]}, cells, 3)
try:
    o = sweep.run_sweep(spec, sys.argv[1], workers=1)
except (ValueError, StoreError) as exc:
    print(f"dyntools: error: {exc}", file=sys.stderr)
    sys.exit(2)
print(o.computed, o.reused)
"""


def assert_racing_sweeps_compute_each_cell_once(tmp_path, script: str = RACE) -> None:
    """Three pairs of processes start ``script`` (a 6-cell sweep logging each cell it computes) into one new
    folder at once: each exits 0 or refuses in one line, the cells are all there, each computed once, and the
    lock is gone."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for pair in range(3):
        out, log = tmp_path / f"new{pair}" / "s", tmp_path / f"log{pair}"
        procs = [subprocess.Popen([sys.executable, "-c", script, str(out), str(log)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p.wait(timeout=HANG_GUARD), *p.communicate()) for p in procs]
        for code, _stdout, stderr in results:
            assert code in (0, 2), stderr
            if code == 2:                                        # refused in one line, naming the holder
                assert len(stderr.strip().splitlines()) == 1 and "being written by another sweep" in stderr
            else:
                assert "Traceback" not in stderr
        assert any(code == 0 for code, _, _ in results)
        assert sweep.finished_cells(out, 6) == set(range(6))
        counts = Counter(line.split()[0] for line in log.read_text().splitlines())
        assert set(counts.values()) == {1}, counts               # every cell computed once
        assert not (out / store.LOCK_FILE).exists()


def test_two_sweeps_started_at_once_into_one_new_folder_never_compute_a_cell_twice(tmp_path):
    assert_racing_sweeps_compute_each_cell_once(tmp_path)


POOL = """
import importlib
import sys
from dyntools import sweep
from dyntools.store import StoreError
cells = [{"sleep": 0.4} for _ in range(12)]
module, _, name = sys.argv[3].partition(":")          # the test names its cell; the sweep gets the function
spec = sweep.SweepSpec("demo", getattr(importlib.import_module(module), name), {"size": 4}, cells, 3)
try:
    o = sweep.run_sweep(spec, sys.argv[1], workers=2, retries=int(sys.argv[2]))
except (ValueError, StoreError) as exc:
    print(f"dyntools: error: {exc}", file=sys.stderr)
    sys.exit(2)
print(o.computed, o.reused)
"""


def wait_for(probe, proc):
    """``probe()`` once it is truthy; fail at once (with its stderr) if ``proc`` exits first. The suite's
    HANG_GUARD stops a wait that makes no progress; it never limits correct work."""
    deadline = time.time() + HANG_GUARD
    while not (found := probe()):
        if proc.poll() is not None:
            pytest.fail(f"the sweep exited ({proc.returncode}) before the test could act: {proc.communicate()}")
        assert time.time() < deadline, "hang guard: the sweep made no progress"
        time.sleep(0.05)
    return found


def pool_workers(pid: int) -> list[int]:
    """The pids of the spawned pool processes of the process ``pid``."""
    found = []
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
        try:
            if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text(errors="replace"):
                found.append(int(child))
        except OSError:                  # it exited between pgrep and here
            pass
    return found


def bar_cell(config, cell, seed, index):
    """A demo cell that makes a (hidden) progress bar first, as the real cells do: tqdm's default lock is a
    multiprocessing semaphore, which a killed pool process would leave registered (a 'leaked semaphore' warning)."""
    from dyntools.engine.progress import progress_bar

    with progress_bar(1, "cell", enabled=False):
        pass
    return sweep.demo_cell(config, cell, seed, index)


@pytest.mark.parametrize(("retries", "cell_fn"), [(0, sweep.demo_cell), (2, sweep.demo_cell), (0, bar_cell)])
def test_a_killed_local_pool_process_is_retried_or_one_line(tmp_path, retries, cell_fn):
    out = tmp_path / "s"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", POOL, str(out), str(retries), sweep.cell_name(cell_fn)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(sweep.finished_cells(out, 12) if (out / "cells").is_dir() else ()) >= 2, proc)
        workers = wait_for(lambda: pool_workers(proc.pid), proc)
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if retries == 0:
        assert proc.returncode == 2
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr                            # no BrokenProcessPool, no leaked-semaphore warning
        assert "a worker process of the local pool died 1 time (" in lines[0] and "run the same command" in lines[0]
        kept = sweep.finished_cells(out, 12)
        resumed = sweep.run_sweep(sweep.SweepSpec("demo", cell_fn, {"size": 4},
                                                  [{"sleep": 0.4}] * 12, 3), out, workers=1)
        assert (resumed.computed, resumed.reused) == (12 - len(kept), len(kept))
    else:
        assert proc.returncode == 0 and stderr.strip() == "", stderr
        assert sweep.finished_cells(out, 12) == set(range(12))


def test_cells_are_read_back_and_finalized_under_the_folders_lock(tmp_path, monkeypatch):
    """Between a sweep's last cell and its result files no other sweep can take the folder: the cells are read
    back holding the lock, and ``finalize`` refuses (writing nothing) while another sweep holds it."""
    from dyntools.engine.result import RunResult

    out = tmp_path / "s"
    read_cell, held = sweep._read_cell, []
    monkeypatch.setattr(sweep, "_read_cell", lambda *a, **k: held.append(folder_lock.holder(out)) or read_cell(*a, **k))
    outcome = sweep.run_sweep(demo_spec(n=3), out, workers=1)
    assert len(held) >= 3 and all(h and h["pid"] == os.getpid() for h in held[-3:]), held
    result = RunResult("demo", {}, {"x": np.stack([c["x"] for c in outcome.cells])}, "completed", "", seed=3)
    with folder_lock.FolderLock(out):                            # a second sweep started after run_sweep returned
        with pytest.raises(folder_lock.FolderBusy, match="is being written by another sweep"):
            sweep.finalize(result, out)
        assert not (out / store.META_FILE).exists() and not (out / store.ARRAYS_FILE).exists()
    sweep.finalize(result, out)
    assert (out / store.META_FILE).exists() and not (out / store.LOCK_FILE).exists()
    np.testing.assert_array_equal(store.load(out).arrays["x"], result.arrays["x"])
