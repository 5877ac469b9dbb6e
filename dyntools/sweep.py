"""Grids of runs: local worker processes by default, a Dask distributed cluster on request; resumable.

A sweep is a list of *cells* (JSON-able parameter dicts) and one *cell function*, named as
``"package.module:function"`` so any worker can import it, called as
``fn(config, cell, seed, index) -> dict``. The function draws its randomness from
``dyntools.engine.streams`` keyed by the cell ``index`` (never from the worker), so a cell's result is
bitwise identical whoever computes it. It returns scalars/arrays plus ``status``/``message``; a
diverged run is a *result* (``status="diverged"``), an exception is an error.

Backends (no home-made scheduler or transport):

* ``local`` (default): ``concurrent.futures.ProcessPoolExecutor`` on ``workers`` processes
  (default: all cores); ``workers=1`` runs in this process;
* ``dask_local=N``: a ``distributed.LocalCluster`` of N single-threaded worker processes on
  the loopback interface, started and stopped here;
* ``scheduler="tcp://HOST:PORT"``: an existing Dask cluster. An unreachable address is a
  ``ValueError`` after ``connect_timeout`` seconds, never a hang.

Storage, in the output directory: ``sweep.json`` (the sweep's identity: cell function, config,
cells, seed), ``cells/cell_NNNNN.npz`` written by the driver as each cell finishes (temporary
file + fsync + ``os.replace``, so a cell file is complete or absent), and at the end ``arrays.npz`` +
``result.json`` (a normal :mod:`dyntools.store` result). Running the same sweep again into the
same directory reuses every finished cell (no recomputation, no duplicates); a different sweep
there starts afresh. A cell file that cannot be reused — unreadable, truncated, empty, without its
metadata, its status outside the vocabulary, or lacking one of the spec's ``finite`` values (or holding
it non-finite although the cell did not diverge, e.g. a NaN accuracy) — is *damaged*: it is reported by
path in :attr:`SweepOutcome.damaged` and recomputed.

Each cell's metadata records the compile target its worker ran on (CPU name and features as numba
compiles for them, numba / llvmlite / numpy versions: :mod:`dyntools.engine.target`);
:attr:`SweepOutcome.compile_targets` says whether the cells share one. A sweep resumed on another
machine or run on a mixed cluster is *mixed*: a statement in its summary, not an error (each cell is
bitwise reproducible on its own target; across targets within the stated tolerances).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from dyntools import store, validation
from dyntools.engine.progress import progress_bar

SPEC_FILE = "sweep.json"
CELLS_DIR = "cells"
_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


@dataclass(frozen=True)
class SweepSpec:
    kind: str
    cell_fn: str
    config: dict[str, Any]
    cells: list[dict[str, Any]]
    seed: int
    #: values every finished cell holds, finite unless the cell diverged (not part of the identity)
    finite: tuple[str, ...] = ()

    def identity(self) -> dict:
        return json.loads(store.to_json({"kind": self.kind, "cell_fn": self.cell_fn, "config": self.config,
                                         "cells": self.cells, "seed": self.seed}))


@dataclass
class SweepOutcome:
    cells: list[dict[str, Any]]
    computed: int
    reused: int
    backend: str
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)      # "path: why" of each damaged cell recomputed
    targets: list[dict | None] = field(default_factory=list)   # each cell's compile target (None: not recorded)

    @property
    def compile_targets(self) -> dict:
        """:func:`dyntools.engine.target.summarize_targets` of the cells: ``mixed`` when they come from
        more than one compile target (a sweep resumed elsewhere, a mixed cluster) — a statement, not an error."""
        from dyntools.engine.target import summarize_targets

        return summarize_targets(self.targets)

    def with_targets(self, message: str, summary: dict) -> str:
        """``summary["compile_targets"]`` set; ``message`` with a clause naming the targets when mixed."""
        from dyntools.engine.target import targets_sentence

        summary["compile_targets"] = self.compile_targets
        clause = targets_sentence(summary["compile_targets"])
        return f"{message}; {clause}" if clause else message


def resolve(path: str) -> Callable:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


#: The key of a cell's result that carries its compile target (stored in the cell's metadata).
TARGET_KEY = "compile_target"


def run_cell(cell_fn: str, config: dict, cell: dict, seed: int, index: int) -> dict:
    """Executed on the workers: import and call the cell function; record the worker's compile target
    (:func:`dyntools.engine.target.compile_target`)."""
    from dyntools.engine.target import compile_target

    out = dict(resolve(cell_fn)(config, cell, seed, index))
    out.setdefault("status", "completed")
    out.setdefault("message", "")
    out[TARGET_KEY] = compile_target()
    return out


# --------------------------------------------------------------------------------- validation

def check_scheduler_address(address: str) -> str:
    m = _ADDRESS.match(address or "")
    if not m or not 0 < int(m.group(3)) < 65536:
        raise ValueError(f"Invalid --scheduler: {address!r} (expected tcp://HOST:PORT)")
    return address


def check_backend(workers: int | None, dask_local: int | None, scheduler: str | None) -> str:
    if dask_local is not None and scheduler is not None:
        raise ValueError("Invalid --dask-local: cannot be combined with --scheduler")
    if scheduler is not None:
        check_scheduler_address(scheduler)
        return "dask"
    if dask_local is not None:
        validation.count("--dask-local", dask_local)
        return "dask-local"
    if workers is not None:
        validation.count("--workers", workers)
    return "local"


def check_out(out: str | os.PathLike) -> Path:
    """A new directory, a finished or partial sweep, or any result directory dyntools wrote."""
    out = Path(out)
    try:
        resumed = (out / SPEC_FILE).is_file()
    except OSError:                     # a name too long, a link loop …: check_writable says which
        resumed = False
    if resumed:
        if not os.access(out, os.W_OK | os.X_OK):
            raise store.StoreError(f"Invalid --out: {out} is not writable")
        return out
    return store.check_writable(out)


def connect(scheduler: str, timeout: float):
    """A ``distributed.Client`` for ``scheduler``; ``ValueError`` if none answers within ``timeout`` s.

    The attempt runs in a daemon thread that the caller stops waiting for at the deadline: a server that
    accepts the connection but never speaks Dask (silent, HTTP, an SSH banner) cannot hold the command
    beyond ``timeout``, and whatever the attempt raised becomes one line naming the option."""
    import threading

    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("Invalid --scheduler: needs dask[distributed] "
                         "(pip install 'dyntools[dist]')") from None
    check_scheduler_address(scheduler)
    timeout = validation.positive("--connect-timeout", timeout)
    box: dict = {}

    def attempt():
        client = Client.__new__(Client)           # kept, so that a failed attempt can be marked closed
        try:
            client.__init__(scheduler, timeout=f"{timeout}s", set_as_default=False)
            box["client"] = client
        except BaseException as exc:              # noqa: BLE001 - reported below as one line
            box["error"] = exc
            client.status = "closed"              # nothing to close: its __del__ would wait and print at exit

    thread = threading.Thread(target=attempt, name="dyntools-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if "client" in box:
        return box["client"]
    reason = type(box["error"]).__name__ if "error" in box else "no Dask answer"
    raise ValueError(f"Invalid --scheduler: cannot reach a Dask scheduler at {scheduler} within {timeout:g} s "
                     f"({reason})")


# --------------------------------------------------------------------------------- cell files

def cell_path(out: Path, index: int) -> Path:
    return out / CELLS_DIR / f"cell_{index:05d}.npz"


def write_cell(out: Path, index: int, result: dict) -> bool:
    """Write one finished cell atomically; ``False`` (nothing written) if it already exists."""
    path = cell_path(out, index)
    if path.exists():
        return False
    arrays = {k: np.asarray(v) for k, v in result.items() if k not in ("status", "message", TARGET_KEY)}
    meta = {"index": index, "status": str(result["status"]), "message": str(result["message"])}
    if TARGET_KEY in result:
        meta[TARGET_KEY] = result[TARGET_KEY]
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz", dir=path.parent)
    except OSError as exc:
        raise store.StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, _meta=np.array(json.dumps(meta)), **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:                    # a full disk, a quota: one line, no temporary left
        Path(tmp).unlink(missing_ok=True)
        raise store.StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


class CellError(ValueError):
    """A cell file that cannot be reused (the message says why)."""


def read_cell(out: Path, index: int, finite: tuple[str, ...] = ()) -> dict:
    """The finished cell ``index``; :class:`CellError` if its file is damaged (see the module docstring)."""
    return _read_cell(out, index, finite)[0]


def _read_cell(out: Path, index: int, finite: tuple[str, ...] = ()) -> tuple[dict, dict | None]:
    """(the finished cell ``index``, its compile target or ``None`` when the file predates them)."""
    from dyntools.engine.result import STATUSES

    path = cell_path(out, index)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as npz:
            meta = json.loads(str(npz["_meta"]))
            result = {k: npz[k] for k in npz.files if k != "_meta"}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise CellError(f"{path}: unreadable ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not (isinstance(meta, dict) and meta.get("index") == index and meta.get("status") in STATUSES
            and isinstance(meta.get("message"), str)):
        raise CellError(f"{path}: its metadata is damaged")
    result = {k: (v.item() if v.ndim == 0 else v) for k, v in result.items()}
    for key in finite:
        if key not in result:
            raise CellError(f"{path}: lacks {key!r}")
        value = np.asarray(result[key])
        if meta["status"] != "diverged" and (value.dtype.kind not in "iuf" or not np.all(np.isfinite(value))):
            raise CellError(f"{path}: {key!r} is not finite although the cell did not diverge")
    result.update(status=meta["status"], message=meta["message"])
    target = meta.get(TARGET_KEY)
    return result, (target if isinstance(target, dict) else None)


def scan_cells(out: Path, n: int, finite: tuple[str, ...] = ()) -> tuple[set[int], list[str]]:
    """The reusable cells of ``out`` (indices) and the damaged ones ("path: why")."""
    done, damaged = set(), []
    for i in sorted(finished_cells(out, n)):
        try:
            read_cell(out, i, finite)
            done.add(i)
        except CellError as exc:
            damaged.append(str(exc))
    return done, damaged


def finished_cells(out: Path, n: int) -> set[int]:
    done = set()
    for path in (out / CELLS_DIR).glob("cell_*.npz"):
        try:
            index = int(path.stem.split("_")[1])
        except (IndexError, ValueError):
            continue
        if 0 <= index < n:
            done.add(index)
    return done


def prepare(spec: SweepSpec, out: Path) -> tuple[set[int], list[str]]:
    """Create or reopen the sweep directory; return the indices already finished and the damaged cells
    (their files removed, so that they are computed again)."""
    identity = spec.identity()
    spec_path = out / SPEC_FILE
    if spec_path.is_file():
        try:
            same = json.loads(spec_path.read_text(encoding="utf-8")) == identity
        except (json.JSONDecodeError, UnicodeDecodeError):
            same = False
        if same:
            (out / CELLS_DIR).mkdir(exist_ok=True)
            done, damaged = scan_cells(out, len(spec.cells), spec.finite)
            for i in set(finished_cells(out, len(spec.cells))) - done:
                cell_path(out, i).unlink()
            return done, damaged
    if out.exists():                                   # a different sweep / an older result: start afresh
        for name in (CELLS_DIR, SPEC_FILE, store.META_FILE, store.ARRAYS_FILE):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / CELLS_DIR).mkdir()
    store.atomic_write_text(spec_path, json.dumps(identity, indent=1) + "\n")
    return set(), []


# --------------------------------------------------------------------------------- running

def run_sweep(spec: SweepSpec, out: str | os.PathLike, *, workers: int | None = None,
              dask_local: int | None = None, scheduler: str | None = None, connect_timeout: float = 10.0,
              progress: bool = False) -> SweepOutcome:
    """Run (or resume) ``spec`` into ``out``; return every cell's result in index order."""
    backend = check_backend(workers, dask_local, scheduler)
    out = check_out(out)
    start = time.perf_counter()
    client = cluster = None
    if backend == "dask":
        client = connect(scheduler, connect_timeout)      # fails before anything is written
    created = _first_missing(out)                       # what to remove if nothing gets finished
    try:
        done, damaged = prepare(spec, out)
        todo = [i for i in range(len(spec.cells)) if i not in done]
        with progress_bar(len(spec.cells), spec.kind, enabled=progress, unit="cell") as bar:
            bar.update(len(done))
            if todo:
                if backend == "dask-local":
                    from distributed import Client, LocalCluster

                    cluster = LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
                    client = Client(cluster, set_as_default=False)
                if client is not None:
                    _run_dask(client, spec, out, todo, bar)
                elif (workers or os.cpu_count() or 1) == 1 or len(todo) == 1:
                    for i in todo:
                        write_cell(out, i, run_cell(spec.cell_fn, spec.config, spec.cells[i], spec.seed, i))
                        bar.update(1)
                else:
                    _run_local(spec, out, todo, bar, workers or os.cpu_count() or 1)
    except BaseException:
        if created is not None and (not (out / CELLS_DIR).is_dir() or not finished_cells(out, len(spec.cells))):
            shutil.rmtree(created, ignore_errors=True)   # nothing finished: leave nothing behind
        raise
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    try:
        read = [_read_cell(out, i, spec.finite) for i in range(len(spec.cells))]
    except CellError as exc:                 # written in this run and already damaged: a broken disk
        raise store.StoreError(f"Damaged sweep cell {exc}") from None
    return SweepOutcome([c for c, _ in read], len(todo), len(done), backend, time.perf_counter() - start,
                        damaged=damaged, targets=[t for _, t in read])


def _first_missing(path: Path) -> Path | None:
    """The outermost directory of ``path`` that does not exist yet (``None``: ``path`` exists)."""
    path = Path(os.path.abspath(path))
    if path.exists():
        return None
    while not path.parent.exists():
        path = path.parent
    return path


def _exit_with_parent(parent: int, period: float = 0.5) -> None:
    """Pool-worker initializer: a daemon thread ends this process when ``parent`` is gone (the driver was
    killed, e.g. SIGKILL): a worker never outlives its sweep."""
    import threading

    def watch():
        while True:
            time.sleep(period)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="dyntools-parent-watch", daemon=True).start()


def warm_up(cell_fn: str, config: dict) -> None:
    """Load what the cell function compiles (its ``warm_up(config)`` attribute, if it has one) before the
    first cell: a worker's one-off cost (numba's cached kernels loaded, ~0.4 s) then lands in the sweep's
    fixed cost instead of in the time of the worker's first cell. A failing warm-up is ignored here:
    the cell itself then fails and reports why."""
    try:
        warm = getattr(resolve(cell_fn), "warm_up", None)
        if warm is not None:
            warm(config)
    except Exception:  # noqa: BLE001 — the cells report their own errors
        pass


def _start_worker(parent: int, cell_fn: str, config: dict) -> None:
    """Pool-worker initializer: :func:`_exit_with_parent`, then :func:`warm_up`."""
    _exit_with_parent(parent)
    warm_up(cell_fn, config)


def _run_local(spec, out, todo, bar, workers):
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=get_context("spawn"),
                               initializer=_start_worker, initargs=(os.getpid(), spec.cell_fn, spec.config))
    try:
        futures = {pool.submit(run_cell, spec.cell_fn, spec.config, spec.cells[i], spec.seed, i): i
                   for i in todo}
        for fut in as_completed(futures):
            write_cell(out, futures[fut], fut.result())
            bar.update(1)
    except BaseException:                       # Ctrl-C or a failing cell: do not run the rest
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _run_dask(client, spec, out, todo, bar):
    from distributed import as_completed as dask_completed

    token = f"{spec.kind}-{os.getpid()}-{time.time_ns()}"
    futures = {client.submit(run_cell, spec.cell_fn, spec.config, spec.cells[i], spec.seed, i,
                             key=f"{token}-cell-{i}", pure=False, retries=2): i for i in todo}
    with client.as_current():
        for fut in dask_completed(list(futures)):
            i = futures[fut]
            write_cell(out, i, fut.result())              # written once, by the driver, on arrival
            bar.update(1)


def finalize(result, out: str | os.PathLike) -> Path:
    """Write the assembled ``RunResult`` next to the cells (arrays first, ``result.json`` last,
    each by temporary file + fsync + rename): the directory becomes a normal result directory. A write
    error (a full disk) is one :class:`~dyntools.store.StoreError` line naming ``out``; the temporary
    directory is removed and the finished cells stay for a re-run."""
    out = Path(out)
    try:
        with tempfile.TemporaryDirectory(prefix=".final-", dir=out) as tmp:
            store.write_result_files(result, Path(tmp))
            store.fsync_tree(Path(tmp))
            os.replace(Path(tmp) / store.ARRAYS_FILE, out / store.ARRAYS_FILE)
            os.replace(Path(tmp) / store.META_FILE, out / store.META_FILE)
        store.fsync_path(out)
    except OSError as exc:            # a full disk: one line; the cells stay, so a re-run only assembles them
        raise store.StoreError(f"Cannot write {out}: {exc.strerror or exc}") from None
    return out


def demo_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    """A tiny cell function for checking a cluster: ``config["size"]`` normals from the cell's
    own stream, after sleeping ``cell["sleep"]`` seconds; ``cell["diverge"]`` marks it diverged."""
    from dyntools.engine import streams

    gen = streams.path_generators(seed, 1, streams.KEYS["sweep.demo"], index)[0]
    x = gen.standard_normal(int(config.get("size", 4)))
    time.sleep(float(cell.get("sleep", 0.0)))
    if cell.get("diverge"):
        return {"x": np.full_like(x, np.nan), "pid": os.getpid(), "status": "diverged",
                "message": "diverged at step 0"}
    return {"x": x, "pid": os.getpid(), "status": "completed", "message": ""}
