"""A real Dask cluster on 127.0.0.1: ``dask scheduler`` and ``dask worker`` processes started here.

A worker killed mid-sweep: the sweep finishes bitwise equal to the local run, and no cell that was on disk
before the kill is computed again (futures are released once their cell is on disk); a cell whose result died
with its worker before the driver collected it is computed again, by design. The scheduler
killed mid-sweep: one line, exit 2; a new cluster resumes it and computes only the cells that were missing.
Workers that cannot run dyntools cells (no dyntools, another version) are refused by the version handshake
before anything is written. Every process started here is stopped; hang guards are generous timeouts.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from dyntools import sweep
from tests.conftest import HANG_GUARD

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
DASK = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
pytestmark = pytest.mark.skipif(DASK is None, reason="the dask command is not installed")

#: The driver: a sweep of demo cells; errors as the command line prints them (one line, exit 2).
DRIVER = """
import json, sys
from dyntools import sweep
from dyntools.store import StoreError
out, scheduler, log, n, sleep = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
cells = [{"sleep": sleep, "diverge": False} for _ in range(n)]
spec = sweep.SweepSpec("demo", sweep.demo_cell, {"size": 4, "log": log}, cells, 3)
try:
    o = sweep.run_sweep(spec, out, scheduler=scheduler, connect_timeout=20, retries=2)
except (ValueError, TypeError, StoreError) as exc:
    print(f"dyntools: error: {exc}", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"computed": o.computed, "reused": o.reused, "refused": o.refused}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: seconds a stopped scheduler, worker or nanny has to exit on SIGTERM before its process group is killed (they exit
#: in under 1 s; a worker without a nanny now and then never does, and a nanny whose worker was killed by a test
#: held each teardown for the whole of its 30 s wait: 60 s of the suite for two nannies)
GRACE = 3


class Cluster:
    """A scheduler and ``workers`` single-threaded workers on 127.0.0.1 (``env`` for the workers)."""

    def __init__(self, tmp: Path, workers: int = 2, env: dict | None = None, nanny: bool = False,
                 one_task_per_worker: bool = False):
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        base = {**os.environ, "PYTHONPATH": str(ROOT)}
        # the scheduler's default worker-saturation (1.1) gives a single-threaded worker two tasks at once: when
        # it dies, both count as suspects, and the one queued behind a killer cell can be given up as the killer
        saturation = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"} if one_task_per_worker else {}
        logs = open(tmp / f"cluster-{self.port}.log", "wb")
        self.logs = logs
        self.scheduler = subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                           "--no-dashboard"], env={**base, **saturation}, stdout=logs, stderr=logs,
                                          start_new_session=True)
        self.workers = []
        for _ in range(workers):
            self.add_worker(env or base, nanny)

    def add_worker(self, env: dict, nanny: bool = False, options: tuple[str, ...] = ()) -> None:
        """Start one more worker (``env`` for it, more ``dask worker`` ``options``), e.g. mid-sweep."""
        self.workers.append(subprocess.Popen([DASK, "worker", self.address, "--nthreads", "1",
                                              "--nanny" if nanny else "--no-nanny", "--host", "127.0.0.1",
                                              "--no-dashboard", *options], env=env, stdout=self.logs,
                                             stderr=self.logs, start_new_session=True))  # a nanny and its worker

    def wait_for_workers(self, n: int, timeout: float = 600) -> None:
        from distributed import Client

        with Client(self.address, timeout="60s", set_as_default=False) as client:
            client.wait_for_workers(n, timeout=timeout)

    def stop(self) -> None:
        procs = [*self.workers, self.scheduler]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()          # a nanny stops its worker on SIGTERM
        for proc in procs:
            try:
                proc.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)     # the nanny with the worker it started
                proc.kill()                                 # (a process started outside a group of its own)
                proc.wait(timeout=30)
        self.logs.close()


@pytest.fixture
def clusters(tmp_path):
    started = []

    def start(**kwargs):
        started.append(Cluster(tmp_path, **kwargs))
        return started[-1]

    yield start
    for c in started:
        c.stop()


@pytest.fixture
def driver():
    """Start a driver process (a sweep of demo cells); every driver still running when the test ends, passed or
    failed, is killed."""
    started = []

    def start(out, address, log, n=16, sleep=0.4):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started.append(subprocess.Popen([sys.executable, "-c", DRIVER, str(out), address, str(log), str(n),
                                         str(sleep)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True))
        return started[-1]

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def on_disk(out) -> set[int]:
    cells = Path(out) / sweep.CELLS_DIR
    return {int(p.stem.split("_")[1]) for p in cells.glob("cell_*.npz")} if cells.is_dir() else set()


def wait_until(predicate, proc, timeout=HANG_GUARD):
    """Wait until ``predicate()`` holds; fail at once (with its output) if the driver ``proc`` exits first.
    ``timeout`` is a hang guard, never a speed limit."""
    deadline = time.time() + timeout
    while not predicate():
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            pytest.fail(f"the driver exited ({proc.returncode}) before the test could act: {stdout} {stderr}")
        assert time.time() < deadline, "hang guard: the driver made no progress"
        time.sleep(0.05)


def computations(log) -> Counter:
    return Counter(int(line.split()[0]) for line in Path(log).read_text().splitlines())


def reference(tmp_path, n=16):
    cells = [{"sleep": 0.0, "diverge": False} for _ in range(n)]
    spec = sweep.SweepSpec("demo", sweep.demo_cell, {"size": 4}, cells, 3)
    return sweep.run_sweep(spec, tmp_path / "ref", workers=1).cells


def same_arrays(out, ref):
    for i, cell in enumerate(ref):
        assert (sweep.read_cell(Path(out), i)["x"] == cell["x"]).all()


def test_a_worker_killed_mid_sweep_recomputes_no_cell_on_disk_and_is_bitwise_equal(tmp_path, clusters, driver):
    cluster = clusters()
    cluster.wait_for_workers(2)
    out, log = tmp_path / "s", tmp_path / "log"
    proc = driver(out, cluster.address, log)
    wait_until(lambda: len(on_disk(out)) >= 4, proc)
    kept = on_disk(out)
    # the driver writes a cell, then releases its future, then writes the next one: once a later cell is on disk,
    # the release of every kept cell has been sent to the scheduler before the kill
    wait_until(lambda: len(on_disk(out) - kept) >= 2, proc)
    cluster.workers[0].kill()
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert on_disk(out) == set(range(16))
    counts = computations(log)
    assert set(counts) == set(range(16)), counts
    assert all(counts[i] == 1 for i in kept), (kept, counts)    # nothing on disk before the kill computed again
    same_arrays(out, reference(tmp_path))


def test_the_scheduler_killed_is_one_line_and_a_new_cluster_resumes_only_the_missing_cells(tmp_path, clusters,
                                                                                           driver):
    cluster = clusters()
    cluster.wait_for_workers(2)
    out, log = tmp_path / "s", tmp_path / "log"
    proc = driver(out, cluster.address, log, n=16, sleep=0.5)
    wait_until(lambda: len(on_disk(out)) >= 3, proc)
    cluster.scheduler.kill()
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 2, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyntools: error: lost the Dask scheduler at"), stderr
    assert "run the same command to resume" in lines[0]
    kept = on_disk(out)
    assert 3 <= len(kept) < 16 and f"{len(kept)} of 16 cells are on disk" in lines[0]
    cluster.stop()
    again = clusters()
    again.wait_for_workers(2)
    proc = driver(out, again.address, log, n=16, sleep=0.5)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 0, stderr
    assert f'"computed": {16 - len(kept)}' in stdout and f'"reused": {len(kept)}' in stdout
    counts = computations(log)
    assert all(counts[i] == 1 for i in kept), counts             # nothing recomputed that was on disk
    assert on_disk(out) == set(range(16))
    same_arrays(out, reference(tmp_path))


def test_workers_without_dyntools_are_refused_by_the_handshake_naming_the_worker(tmp_path, clusters, driver):
    # a worker from an environment without dyntools: where dyntools is installed in this venv (pip install, as in
    # CI) dropping PYTHONPATH does not hide it, so a package first on the worker's path fails to import as a
    # missing one does
    hidden = tmp_path / "without" / "dyntools"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'dyntools'\", name='dyntools')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cluster = clusters(workers=1, env={**env, "PYTHONPATH": str(hidden.parent)})
    cluster.wait_for_workers(1)
    out = tmp_path / "s"
    proc = driver(out, cluster.address, tmp_path / "log", n=4, sleep=0.0)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Invalid --scheduler: worker tcp://127.0.0.1:" in lines[0], stderr
    assert "cannot import dyntools" in lines[0] and "No module named 'dyntools'" in lines[0]
    assert not out.exists()


def test_a_worker_with_another_dyntools_version_is_refused(tmp_path, clusters, driver):
    cluster = clusters(workers=1, env=fake_dyntools(tmp_path))
    cluster.wait_for_workers(1)
    out = tmp_path / "s"
    proc = driver(out, cluster.address, tmp_path / "log", n=4, sleep=0.0)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 2
    assert "runs dyntools 0.0.1, this command 0.1.0" in stderr and len(stderr.strip().splitlines()) == 1
    assert not out.exists()


def fake_dyntools(tmp_path, version="0.0.1") -> dict:
    """The environment of a worker whose dyntools is another version (a package first on its path)."""
    fake = tmp_path / "fake" / "dyntools"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return {**os.environ, "PYTHONPATH": str(fake.parent)}


def test_a_worker_of_another_version_joining_mid_sweep_writes_no_cell_and_is_named(tmp_path, clusters, driver):
    """The handshake passed (one good worker); a worker with another dyntools joins while cells are still queued:
    the cells it picks are refused before they run and go to the good worker; every cell is computed once, by the
    good worker, and the sweep's outcome names the foreign worker in one line."""
    from distributed import Client

    cluster = clusters(workers=1)
    cluster.wait_for_workers(1)
    with Client(cluster.address, timeout="60s", set_as_default=False) as client:
        good = set(client.nthreads())
    out, log, n = tmp_path / "s", tmp_path / "log", 16
    proc = driver(out, cluster.address, log, n=n, sleep=1.0)
    wait_until(lambda: len(on_disk(out)) >= 2, proc)
    cluster.add_worker(fake_dyntools(tmp_path))
    cluster.wait_for_workers(2)
    assert len(on_disk(out)) < n - 2, "the sweep ended before the foreign worker joined: nothing tested"
    stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    refused = json.loads(stdout.strip().splitlines()[-1])["refused"]
    assert len(refused) == 1 and "\n" not in refused[0], refused
    named = re.search(r"worker (tcp://127\.0\.0\.1:\d+) runs dyntools 0\.0\.1, this command 0\.1\.0", refused[0])
    assert named and named.group(1) not in good, refused           # the foreign worker, by its address
    assert on_disk(out) == set(range(n))
    counts = computations(log)
    assert all(counts[i] == 1 for i in range(n)), counts             # nothing computed twice, nothing lost
    pids = {line.split()[1] for line in Path(log).read_text().splitlines()}
    assert len(pids) == 1, pids                                        # every cell by the one good worker
    same_arrays(out, reference(tmp_path, n))


def test_the_guard_runs_the_cell_only_on_a_worker_of_this_version():
    """In this process (no worker): the guarded cell runs the cell function when the versions agree; otherwise it
    raises ForeignWorker, which the client recognises after a by-value round trip and turns into the reason."""
    import cloudpickle

    from dyntools.cluster import foreign_worker, guarded_cell, task
    from dyntools.version import __version__

    guard = cloudpickle.loads(cloudpickle.dumps(guarded_cell()))
    out = guard(__version__, task(sweep.run_cell, sweep.demo_cell, {"size": 3}, {}, 3, 5))
    assert out["x"].shape == (3,) and out["status"] == "completed"
    with pytest.raises(Exception) as caught:
        guard("0.0.1", task(sweep.run_cell, sweep.demo_cell, {}, {}, 3, 5))
    error = cloudpickle.loads(cloudpickle.dumps(caught.value))
    assert type(error).__name__ == "ForeignWorker"
    # as seen from a client of version 0.0.1: this worker runs another version
    address, info = error.args
    assert info["dyntools"] == __version__
    assert foreign_worker(type(error)(address, {**info, "dyntools": "9.9"})) == \
        (address, f"worker {address} runs dyntools 9.9, this command {__version__}; start the workers from the same "
                  "dyntools version")
    assert foreign_worker(type(error)(address, {**info, "dyntools": None, "dyntools_error": "X: gone"}))[1] \
        .startswith(f"worker {address} cannot import dyntools (X: gone)")
    assert foreign_worker(ValueError("ForeignWorker")) is None and foreign_worker(None) is None


def test_a_scheduler_without_workers_is_one_line_naming_the_timeout(tmp_path, clusters):
    cluster = clusters(workers=0)
    out = tmp_path / "s"
    # 15 s, not 3: on a loaded machine the scheduler's first answer alone can take seconds (seen: "cannot reach
    # … within 3 s" at load 12) — the budget is the user's, the test asserts what happens when no worker comes
    with pytest.raises(ValueError, match="no worker joined at tcp://127.0.0.1:.* within 15 s"):
        sweep.run_sweep(sweep.SweepSpec("demo", sweep.demo_cell, {}, [{}], 3), out,
                        scheduler=cluster.address, connect_timeout=15)
    assert not out.exists()


def test_a_cell_that_keeps_killing_workers_is_named(tmp_path, clusters):
    """A cell whose worker dies each time it runs (nannies restart the workers): after the scheduler's own
    allowed failures and ``--retries 0`` resubmissions, one line names the cell; the other cells are on disk.
    One task per worker at a time: otherwise a cell queued on the killer's worker is a suspect of each death too
    (CI once gave up cell 1 beside cell 3; see docs/guide/sweeps.md)."""
    cluster = clusters(workers=2, nanny=True, one_task_per_worker=True)
    cluster.wait_for_workers(2)
    code = f"""
import sys
from dyntools import sweep
from dyntools.store import StoreError
cells = [{{"sleep": 0.0, "diverge": False}} for _ in range(3)] + [{{"kill": True}}]
from tests.test_sweep_cluster import killer_cell
spec = sweep.SweepSpec("demo", killer_cell, {{}}, cells, 3)
try:
    sweep.run_sweep(spec, sys.argv[1], scheduler={cluster.address!r}, connect_timeout=20, retries=0)
except (ValueError, StoreError) as exc:
    print(f"dyntools: error: {{exc}}", file=sys.stderr)
    sys.exit(2)
"""
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "k")], capture_output=True, text=True,
                          timeout=HANG_GUARD, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cell 3 (kill=True) failed on 1 attempt (--retries 0; last: KilledWorker" in lines[0]
    assert on_disk(tmp_path / "k") == {0, 1, 2}


def killer_cell(config, cell, seed, index):
    """A cell function whose cell ``kill`` kills the process running it (a segfaulting kernel, an OOM kill)."""
    if cell.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    return sweep.demo_cell(config, cell, seed, index)


class _OldClient:
    """A client of the oldest distributed pyproject allows: ``scheduler_info`` takes no ``n_workers``."""

    def __init__(self, workers):
        self.workers = workers

    def scheduler_info(self):
        return {"workers": dict.fromkeys(self.workers, {})}

    def nthreads(self):
        if self.workers is None:
            raise OSError("the scheduler is gone")
        return dict.fromkeys(self.workers, 1)


def test_the_worker_count_holds_on_old_distributed_and_a_silent_scheduler_counts_as_some():
    """'No worker left' needs 0 from a client without ``scheduler_info(n_workers=...)``; a scheduler that
    does not answer counts as 1 (its loss is seen through the cancelled futures)."""
    assert sweep._workers(_OldClient([])) == 0
    assert sweep._workers(_OldClient(["tcp://a:1", "tcp://b:2"])) == 2
    assert sweep._workers(_OldClient(None)) == 1


def test_the_worker_count_of_a_real_cluster(clusters):
    from distributed import Client

    cluster = clusters(workers=2)
    cluster.wait_for_workers(2)
    with Client(cluster.address, timeout="60s", set_as_default=False) as client:
        assert sweep._workers(client) == 2
