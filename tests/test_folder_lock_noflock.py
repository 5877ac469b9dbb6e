"""The folder lock on a file system without flock (NFS without a lock manager, some FUSE mounts): ``flock``
monkeypatched to fail as it does there (ENOLCK, EOPNOTSUPP, ENOSYS). The lock falls back to an exclusively
created file whose staleness is judged by pid on this host and by age for another; any other flock error refuses
in one line. Never silently unlocked."""

import errno
import fcntl
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from dyntools import folder_lock, store, sweep
from tests.conftest import HANG_GUARD
from tests.test_sweep_integrity import RACE, assert_racing_sweeps_compute_each_cell_once, demo_spec


def _failing_flock(code, calls):
    def flock(fd, operation):
        calls.append(operation)
        raise OSError(code, os.strerror(code))
    return flock


@pytest.fixture(params=[errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS], ids=errno.errorcode.get)
def no_flock(request, monkeypatch):
    """flock fails as on a file system without it; the list of its calls is returned (the tests check it ran)."""
    calls = []
    monkeypatch.setattr(fcntl, "flock", _failing_flock(request.param, calls))
    return calls


def lock_info(out) -> dict:
    return json.loads((out / store.LOCK_FILE).read_text())


def test_without_flock_an_exclusive_file_locks_the_folder_and_a_second_sweep_is_refused(tmp_path, no_flock):
    out = tmp_path / "s"
    out.mkdir()
    with folder_lock.FolderLock(out) as lock:
        assert lock.mode == "exclusive file" and no_flock
        assert lock_info(out)["pid"] == os.getpid() and lock_info(out)["host"] == socket.gethostname()
        assert folder_lock.holder(out)["pid"] == os.getpid()
        with pytest.raises(folder_lock.FolderBusy, match=rf"{out} is being written by another sweep \(pid "
                                                         rf"{os.getpid()} on .*\); wait for it"):
            folder_lock.FolderLock(out).acquire()
        with pytest.raises(folder_lock.FolderBusy, match="is being written by another sweep"):
            sweep.run_sweep(demo_spec(n=2), out, workers=1)
        assert sorted(p.name for p in out.iterdir()) == [store.LOCK_FILE]    # the refused sweep wrote nothing
    assert not (out / store.LOCK_FILE).exists()                              # released: removed
    outcome = sweep.run_sweep(demo_spec(n=2), out, workers=1)
    assert outcome.computed == 2 and "stale_lock" not in outcome.extra
    assert not (out / store.LOCK_FILE).exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=HANG_GUARD)
    return proc.pid


HERE = socket.gethostname()


@pytest.mark.parametrize(("holder", "age", "live"), [
    ("this host, a running pid", 0.0, True),
    ("this host, a dead pid", 0.0, False),
    ("another host, touched a minute ago", 60.0, True),
    ("another host, untouched beyond STALE_AFTER", folder_lock.STALE_AFTER + 5, False),
    ("empty, just created", 1.0, True),
    ("empty, older than CREATE_GRACE", folder_lock.CREATE_GRACE + 5, False),
])
def test_an_exclusive_lock_is_live_or_stale_by_pid_here_and_by_age_elsewhere(tmp_path, no_flock, holder, age,
                                                                               live):
    out = tmp_path / "s"
    out.mkdir()
    info = None if holder.startswith("empty") else \
        {"pid": os.getppid() if "running" in holder else _dead_pid() if "dead" in holder else 4242,
         "host": HERE if holder.startswith("this") else "elsewhere.example", "start": 1.0}
    path = out / store.LOCK_FILE
    path.write_text("" if info is None else json.dumps(info))
    os.utime(path, (time.time() - age, time.time() - age))
    assert (folder_lock.holder(out) is not None) == live
    if live:
        with pytest.raises(folder_lock.FolderBusy, match="is being written by another sweep"):
            folder_lock.FolderLock(out).acquire()
        assert path.read_text() == ("" if info is None else json.dumps(info))   # left alone
    else:
        with folder_lock.FolderLock(out) as lock:
            assert lock.mode == "exclusive file" and lock.stale == (info or {})
            assert lock_info(out)["pid"] == os.getpid()
        assert not path.exists()
        assert sorted(p.name for p in out.iterdir()) == []                        # no tombstone left behind


def test_the_holder_touches_its_exclusive_lock_so_another_host_sees_it_alive(tmp_path, no_flock, monkeypatch):
    monkeypatch.setattr(folder_lock, "HEARTBEAT", 0.05)
    out = tmp_path / "s"
    out.mkdir()
    path = out / store.LOCK_FILE
    with folder_lock.FolderLock(out):
        old = time.time() - 1000
        os.utime(path, (old, old))
        deadline = time.time() + HANG_GUARD
        while path.stat().st_mtime < old + 500:
            assert time.time() < deadline, "hang guard: the heartbeat never touched the lock"
            time.sleep(0.02)
    assert not path.exists()


@pytest.mark.parametrize("code", [errno.EIO, errno.EBADF])
def test_any_other_flock_error_refuses_in_one_line_and_leaves_nothing(tmp_path, monkeypatch, code):
    calls = []
    monkeypatch.setattr(fcntl, "flock", _failing_flock(code, calls))
    out = tmp_path / "new" / "s"
    with pytest.raises(store.StoreError) as caught:
        sweep.run_sweep(demo_spec(n=2), out, workers=1)
    message = str(caught.value)
    assert calls and "\n" not in message
    assert message == f"Invalid --out: cannot lock {out} ({os.strerror(code)} from flock on {store.LOCK_FILE}); " \
                      "a sweep never writes there unlocked"
    assert not (tmp_path / "new").exists()                       # made by the sweep, nothing finished: removed


NO_FLOCK_RACE = """
import errno, fcntl
def _no_flock(fd, operation):
    raise OSError(errno.ENOLCK, "No locks available")
fcntl.flock = _no_flock
""" + RACE


def test_two_sweeps_without_flock_started_at_once_never_compute_a_cell_twice(tmp_path):
    assert_racing_sweeps_compute_each_cell_once(tmp_path, NO_FLOCK_RACE)
