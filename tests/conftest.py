import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

#: The one wall-clock limit of a test: a HANG GUARD on a child process (or a notebook cell), never a speed
#: assertion — speed lives in ``dyntools bench``. ≥ 3× the slowest child a test starts on a loaded 2-core
#: machine (the quick report: 1203 s with eight busy neighbours, 27 Nov 2026), so a slow machine never fails a test.
HANG_GUARD = 3600.0


def run_cli(*args, cwd=None, env=None):
    """Run ``python -m dyntools`` as a user would; return the CompletedProcess."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "dyntools", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=full_env, timeout=HANG_GUARD)


def other_cpu_name() -> str:
    """A numba CPU name that is not the one this process compiles for (haswell, or nehalem when the suite
    itself runs as haswell): a subprocess under it computes on another compile target."""
    from dyntools.engine.target import compile_target

    return "nehalem" if compile_target()["cpu_name"] == "haswell" else "haswell"


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def tuned_short_runs(monkeypatch):
    """Short runs take the tuned regression loop as they did before issue 38 (they take the pointer loop, which
    gives its bits: ``fast.SHORT_RUNS_BY_POINTER``), so that a test can compare the two on a few steps."""
    from dyntools.dynamics import fast
    from dyntools.dynamics.fast import mlp as fast_mlp

    monkeypatch.setattr(fast_mlp, "SHORT_RUNS_BY_POINTER", {})
    monkeypatch.setattr(fast, "SHORT_RUNS_BY_POINTER", {})


def assert_usage_error(proc, *needles, out_dir=None):
    """One line on stderr naming the problem, exit 2, no traceback, nothing written."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if out_dir is not None:
        assert not os.path.exists(out_dir), f"{out_dir} was written"


def assert_command_refuses(tmp_path, *argv, needle):
    """``dyntools *argv --out tmp_path/bad`` run as a user runs it is refused (:func:`assert_usage_error`):
    one line naming ``needle``, exit 2, nothing written."""
    out = tmp_path / "bad"
    assert_usage_error(run_cli(*argv, "--out", out, cwd=tmp_path), needle, out_dir=out)


#: tests/test_notebooks.py executes the notebooks and tests/test_docs.py renders the executed copies: one
#: pytest-xdist worker runs both, in that order (:func:`work_unit`)
NOTEBOOKS_THEN_DOCS = ("test_notebooks.py", "test_docs.py")


#: test files whose first tests compile the same kernels cold: one unit each group, so that one worker compiles
#: them and the next file loads the cache. The AdamW-grid cell (its MLP and optimizer kernels, float64 and float32):
#: in a cold run of 59ec6f5 the first tests of test_adamw_cell_extras.py (179 s) and
#: test_adamw_budgets_schedules.py (106 s) compiled it side by side, one on each worker.
SHARED_KERNELS = {name: "adamw-grid-kernels" for name in
                  ("test_adamw_cell_extras.py", "test_adamw_budgets_schedules.py", "test_adamw_grid_cli.py")}


def work_unit(nodeid: str) -> str:
    """What one pytest-xdist worker runs whole, one test after another: a test's file (the notebooks and the
    docs share one unit; the files of :data:`SHARED_KERNELS` one unit per group). Then the kernels a file's
    tests share compile once, not in both workers at once into an empty cache, and a module-scoped fixture
    (the proofs' claims, the docs' Python blocks) runs once, not once per worker."""
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    if name in NOTEBOOKS_THEN_DOCS:
        return "notebooks-then-docs"
    return SHARED_KERNELS.get(name, path)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with :func:`work_unit` as the scope. (Not ``xdist_group`` marks: under
    pytest 9.2 pytest-xdist 3.8 sets ``item._nodeid``, which pytest no longer reads: the groups had no effect.)
    The units go to the workers in the collection's order (``--no-loadscope-reorder`` in ``addopts``)."""
    from xdist.scheduler import LoadScopeScheduling

    class FileUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return FileUnits(config, log)


#: measured seconds of the costliest units (one cold run of 59ec6f5's suite, empty caches, AMD EPYC, 2 cores, load
#: 4-10 from other sessions: wall time of each unit's tests on its worker; 2703 s in all): they go to the workers
#: longest first, so that neither worker ends alone on a long one while the other has finished (the
#: longest-processing-time-first rule)
UNIT_SECONDS = {"adamw-grid-kernels": 513, "tests/test_transformer.py": 502,
                "tests/test_lowlevel.py": 421, "tests/test_reproducibility.py": 378,
                "tests/test_memory_estimates.py": 325, "tests/test_trajectories.py": 286,
                "tests/test_grokking_sweep.py": 263, "tests/test_sweep_cluster.py": 241,
                "tests/test_products.py": 177, "tests/test_symbolic_model.py": 143, "tests/test_voronoi_cli.py": 132,
                "tests/test_bench_isa.py": 99}

#: units run after every other (but the docs): the whole quick report, which compiles little once the other tests
#: have filled numba's cache with the kernels its entries share with them, and runs its two lanes on both processors
#: at the end. First (the longest unit, cold) it took 179.5 s of the suite's 778.3; last 72.6 s of 760.1 (one run
#: each of 6dd6e70's suite, fresh clones and caches, AMD EPYC Zen 4, 30 Nov 2026)
LAST_UNITS = ("tests/test_report_figures.py",)


def _unit_seconds(item) -> float:
    """The measured cost of the unit an item belongs to (0 when not measured as a costly one)."""
    return UNIT_SECONDS.get(work_unit(item.nodeid), 0)


def pytest_collection_modifyitems(config, items):
    """The costliest units first, longest first (:data:`UNIT_SECONDS`), then the other files holding a long
    check (marked ``slow``), each file's long checks first, so that the two workers of ``-n 2`` do not end on
    one of them alone; then :data:`LAST_UNITS`; tests/test_docs.py last, after the notebooks it renders. A stable
    sort keeps every other order."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: (item.path.name == "test_docs.py", work_unit(item.nodeid) in LAST_UNITS,
                                 -_unit_seconds(item), item.path not in slow_files,
                                 item.get_closest_marker("slow") is None))


#: ``DYNTOOLS_OWN_DEPRECATIONS_AS_ERRORS=1`` (set by .ci/run for its run under the newest Python with the newest
#: dependencies): a deprecation raised *from* dyntools' own modules fails the test that meets it (pytest's ``-W``
#: matches one module name exactly; an ini ``filterwarnings`` line takes this regex)
OWN_MODULES = r"(dyntools|simulations|proofs)(\..*)?$"
AS_ERRORS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


def pytest_configure(config):
    _own_temporary_folder(config)
    _one_copy_of_dyntools()
    if os.environ.get("DYNTOOLS_OWN_DEPRECATIONS_AS_ERRORS") == "1":
        for category in AS_ERRORS:
            config.addinivalue_line("filterwarnings", f"error::{category}:{OWN_MODULES}")


#: The suite's temporary files live in one folder of their own (``TMPDIR`` for every child process too), removed
#: when the session ends: a run of the suite leaves nothing behind in the machine's temporary folder. A suite that
#: left 1.6 GB there per run (the memory-estimate runs' outputs) filled a CI disk: more than
#: :data:`LEFT_BEHIND_LIMIT` bytes still there when the tests end, outside pytest's own ``tmp_path`` folders, fails
#: the session, naming the largest entries.
LEFT_BEHIND_LIMIT = 100 * 2**20


def _own_temporary_folder(config):
    """Point ``TMPDIR`` (and :mod:`tempfile`) at a new folder for this session (the controller's: the xdist workers
    and every child inherit it)."""
    import tempfile

    if hasattr(config, "workerinput") or os.environ.get("DYNTOOLS_SUITE_TMPDIR"):
        return
    folder = tempfile.mkdtemp(prefix="dyntools-suite-")
    os.environ["TMPDIR"] = os.environ["DYNTOOLS_SUITE_TMPDIR"] = folder
    tempfile.tempdir = None                                    # tempfile reads TMPDIR again
    config._dyntools_tmpdir = folder


def _one_copy_of_dyntools():
    """Put this checkout first on ``PYTHONPATH`` for every xdist worker and child process. The workers import
    dyntools from the checkout (``python -m pytest`` puts the current folder first on ``sys.path``), but a child
    started in another folder (``dyntools simulate …`` run in ``tmp_path``, a notebook's kernel) imported the
    copy ``pip install .`` put into site-packages: another source path, so another numba cache, and every kernel
    it met compiled a second time (67 s of compiling in eight such children of one cold run, 29 Nov 2026). That
    the installed copy is complete is tests/test_packaging.py's check, on a package built for it."""
    from dyntools.child import environment

    if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(Path(__file__).resolve().parents[1]):
        os.environ["PYTHONPATH"] = environment()["PYTHONPATH"]


def _size(path) -> int:
    if os.path.islink(path) or not os.path.isdir(path):
        return os.lstat(path).st_size
    return sum(os.lstat(os.path.join(root, name)).st_size
               for root, _dirs, files in os.walk(path) for name in files)


def pytest_sessionfinish(session, exitstatus):
    """Fail the session when its tests left more than :data:`LEFT_BEHIND_LIMIT` bytes in its temporary folder
    (pytest's own ``pytest-of-*`` folders aside), naming the largest entries."""
    folder = getattr(session.config, "_dyntools_tmpdir", None)
    if folder is None or not os.path.isdir(folder):
        return
    left = sorted(((_size(os.path.join(folder, name)), name) for name in os.listdir(folder)
                   if not name.startswith("pytest-of-")), reverse=True)
    total = sum(size for size, _ in left)
    if total > LEFT_BEHIND_LIMIT:
        named = ", ".join(f"{name} ({size / 2**20:.0f} MiB)" for size, name in left[:5])
        sys.stderr.write(f"\nthe tests left {total / 2**20:.0f} MiB in the temporary folder: {named}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    """Remove the session's temporary folder (:func:`_own_temporary_folder`)."""
    import shutil

    folder = getattr(config, "_dyntools_tmpdir", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
