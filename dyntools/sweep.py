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

The cell function is passed as itself (``SweepSpec(kind, train_cell, …)``), never as a ``"module:function"``
string: a module-level function pickles by reference, which is how it reaches the spawned local processes and
the Dask workers (there inside the guarded, by-value task of :mod:`dyntools.cluster`).

Storage, in the output directory: ``sweep.json`` (the sweep's identity: the cell function's name, config,
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

import contextlib
import hashlib
import io
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

from dyntools import memory, store, validation
from dyntools.engine.progress import progress_bar

SPEC_FILE = "sweep.json"
CELLS_DIR = "cells"
_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


@dataclass(frozen=True)
class SweepSpec:
    """One sweep: ``cell_fn(config, cell, seed, index) -> dict`` (a module-level function, so that it pickles by
    reference) run on each of ``cells``."""

    kind: str
    cell_fn: Callable
    config: dict[str, Any]
    cells: list[dict[str, Any]]
    seed: int
    #: values every finished cell holds, finite unless the cell diverged (not part of the identity)
    finite: tuple[str, ...] = ()
    #: ``(arrays, option)``: one cell's arrays at its peak (bytes) and the option that sizes them, checked
    #: against each Dask worker's memory limit (:func:`dyntools.memory.check_workers`; not part of the identity)
    cell_memory: tuple[dict[str, int], str] | None = None

    def __post_init__(self):
        if not callable(self.cell_fn):
            raise TypeError(f"Invalid cell_fn: {self.cell_fn!r} (pass the cell function itself, not its name)")

    def identity(self) -> dict:
        return json.loads(store.to_json({"kind": self.kind, "cell_fn": cell_name(self.cell_fn), "config": self.config,
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
    refused: list[str] = field(default_factory=list)   # one line per worker refused mid-sweep (it wrote no cell)

    @property
    def compile_targets(self) -> dict:
        """:func:`dyntools.engine.target.summarize_targets` of the cells: ``mixed`` when they come from
        more than one compile target (a sweep resumed elsewhere, a mixed cluster) — a statement, not an error."""
        from dyntools.engine.target import summarize_targets

        return summarize_targets(self.targets)

    def with_targets(self, message: str, summary: dict) -> str:
        """``summary["compile_targets"]`` set; ``message`` with a clause naming the targets when mixed, and
        :meth:`with_refused`."""
        from dyntools.engine.target import targets_sentence

        summary["compile_targets"] = self.compile_targets
        clause = targets_sentence(summary["compile_targets"])
        return self.with_refused(f"{message}; {clause}" if clause else message)

    def with_damaged(self, message: str) -> str:
        """``message`` with one clause on the damaged files found at the start, if any: how many cells were
        recomputed (a damaged ``sweep.json`` is rebuilt, not recomputed) and each file with why."""
        if not self.damaged:
            return message
        cells = sum(Path(d.split(": ", 1)[0]).name != SPEC_FILE for d in self.damaged)
        return (f"{message}; {cells} damaged cell{'s' if cells != 1 else ''} recomputed"
                f" ({'; '.join(self.damaged)})")

    def with_refused(self, message: str) -> str:
        """``message`` with one clause per worker refused mid-sweep (naming it and why), if any."""
        return "; ".join([message, *self.refused])


def cell_name(cell_fn: Callable) -> str:
    """``"module:qualname"`` of a cell function: how ``sweep.json`` records which function computed the cells (a
    record of the sweep's identity, never imported back)."""
    return f"{getattr(cell_fn, '__module__', '?')}:{getattr(cell_fn, '__qualname__', repr(cell_fn))}"


#: The key of a cell's result that carries its compile target (stored in the cell's metadata).
TARGET_KEY = "compile_target"


def run_cell(cell_fn: Callable, config: dict, cell: dict, seed: int, index: int) -> dict:
    """Executed on the workers: call the cell function; record the worker's compile target
    (:func:`dyntools.engine.target.compile_target`)."""
    from dyntools.engine.target import compile_target

    out = dict(cell_fn(config, cell, seed, index))
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
    """A new directory, a finished or partial sweep, or any result directory dyntools wrote — and not a
    folder another live sweep is writing (:mod:`dyntools.folder_lock`: refused in one line naming it)."""
    from dyntools.folder_lock import LOCK_FILE, FolderBusy, describe, holder

    out = Path(out)
    try:
        resumed = (out / SPEC_FILE).is_file()
        busy = holder(out) if (out / LOCK_FILE).is_file() else None
    except OSError:                     # a name too long, a link loop …: check_writable says which
        resumed, busy = False, None
    if busy is not None:
        raise FolderBusy(f"Invalid --out: {out} is being written by another sweep ({describe(busy)}); wait for "
                         "it to finish or choose another --out")
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
    thread.join(timeout)                          # the deadline is the user's: no grace added to it
    if "client" in box:
        return box["client"]
    reason = type(box["error"]).__name__ if "error" in box else "no Dask answer"
    raise ValueError(f"Invalid --scheduler: cannot reach a Dask scheduler at {scheduler} within {timeout:g} s "
                     f"({reason})")


# --------------------------------------------------------------------------------- cell files

def sweep_id(identity: dict) -> str:
    """A short fingerprint of a sweep's identity, stored in each of its cell files: a cell can then be
    recognised as this sweep's even when ``sweep.json`` is damaged."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def cell_path(out: Path, index: int) -> Path:
    return out / CELLS_DIR / f"cell_{index:05d}.npz"


def write_cell(out: Path, index: int, result: dict, sweep: str | None = None) -> str | None:
    """Write one finished cell atomically; return the SHA-256 of the file written (``None``: nothing
    written, the cell exists). ``sweep`` is the sweep's :func:`sweep_id`, kept in the cell's metadata."""
    path = cell_path(out, index)
    if path.exists():
        return None
    arrays = {k: np.asarray(v) for k, v in result.items() if k not in ("status", "message", TARGET_KEY)}
    meta = {"index": index, "status": str(result["status"]), "message": str(result["message"])}
    if TARGET_KEY in result:
        meta[TARGET_KEY] = result[TARGET_KEY]
    if sweep is not None:
        meta["sweep"] = sweep
    buffer = io.BytesIO()
    np.savez(buffer, _meta=np.array(json.dumps(meta)), **arrays)
    data = buffer.getvalue()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz", dir=path.parent)
    except OSError as exc:
        raise store.StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:                    # a full disk, a quota: one line, no temporary left
        Path(tmp).unlink(missing_ok=True)
        raise store.StoreError(f"Cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


class CellError(ValueError):
    """A cell file that cannot be reused (the message says why)."""


def read_cell(out: Path, index: int, finite: tuple[str, ...] = ()) -> dict:
    """The finished cell ``index``; :class:`CellError` if its file is damaged (see the module docstring)."""
    return _read_cell(out, index, finite)[0]


def _read_cell(out: Path, index: int, finite: tuple[str, ...] = (), checksum: str | None = None,
               sweep: str | None = None, require_sweep: bool = False) -> tuple[dict, dict | None, str]:
    """(the finished cell ``index``, its compile target or ``None`` when the file predates them, the file's
    SHA-256). Damaged (:class:`CellError`) also when the file's SHA-256 differs from ``checksum`` (the one
    ``sweep.json`` recorded), or its metadata names another sweep than ``sweep`` (or none, if ``require_sweep``)."""
    from dyntools.engine.result import STATUSES

    path = cell_path(out, index)
    try:
        data = path.read_bytes()
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            meta = json.loads(str(npz["_meta"]))
            result = {k: npz[k] for k in npz.files if k != "_meta"}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise CellError(f"{path}: unreadable ({type(exc).__name__}: {str(exc)[:80]})") from None
    digest = hashlib.sha256(data).hexdigest()
    if checksum is not None and digest != checksum:
        raise CellError(f"{path}: its SHA-256 differs from the one in {SPEC_FILE} (changed after it was written)")
    if not (isinstance(meta, dict) and meta.get("index") == index and meta.get("status") in STATUSES
            and isinstance(meta.get("message"), str)):
        raise CellError(f"{path}: its metadata is damaged")
    if sweep is not None and meta.get("sweep", None if require_sweep else sweep) != sweep:
        raise CellError(f"{path}: not a cell of this sweep")
    result = {k: (v.item() if v.ndim == 0 else v) for k, v in result.items()}
    for key in finite:
        if key not in result:
            raise CellError(f"{path}: lacks {key!r}")
        value = np.asarray(result[key])
        if meta["status"] != "diverged" and (value.dtype.kind not in "iuf" or not np.all(np.isfinite(value))):
            raise CellError(f"{path}: {key!r} is not finite although the cell did not diverge")
    result.update(status=meta["status"], message=meta["message"])
    target = meta.get(TARGET_KEY)
    return result, (target if isinstance(target, dict) else None), digest


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


class Ledger:
    """``sweep.json``: the sweep's identity and the SHA-256 of each finished cell file (``"checksums"``,
    by cell index). Rewritten atomically at most every ``period`` seconds while cells arrive, and at the
    end: a cell written after the last rewrite (the driver killed) has no checksum yet; a resume checks it
    like any cell file and records it."""

    def __init__(self, out: Path, identity: dict, checksums: dict[int, str] | None = None, period: float = 2.0):
        self.path = out / SPEC_FILE
        self.identity = identity
        self.checksums = dict(checksums or {})
        self.period = period
        self.written = -float("inf")
        self.dirty = True

    def record(self, index: int, digest: str | None) -> None:
        if digest is not None:
            self.checksums[index] = digest
            self.dirty = True
        if time.monotonic() - self.written >= self.period:
            self.flush()

    def flush(self) -> None:
        if not self.dirty:
            return
        doc = {**self.identity, "checksums": {str(i): self.checksums[i] for i in sorted(self.checksums)}}
        store.atomic_write_text(self.path, json.dumps(doc, indent=1) + "\n")
        self.written = time.monotonic()
        self.dirty = False


_IDENTITY_KEYS = ("kind", "cell_fn", "config", "cells", "seed")


def _load_ledger(path: Path) -> tuple[dict | None, dict[int, str], str]:
    """(the identity in ``sweep.json`` or ``None`` if damaged, its checksums, why it is damaged)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return None, {}, f"{type(exc).__name__}: {str(exc)[:60]}"
    if not isinstance(doc, dict) or any(k not in doc for k in _IDENTITY_KEYS):
        return None, {}, "not a sweep description"
    sums = doc.get("checksums", {})
    try:
        checksums = {int(k): str(v) for k, v in sums.items()}
    except (AttributeError, TypeError, ValueError):
        return None, {}, "its checksums are damaged"
    return {k: v for k, v in doc.items() if k != "checksums"}, checksums, ""


def prepare(spec: SweepSpec, out: Path) -> tuple[set[int], list[str], Ledger]:
    """Create or reopen the sweep directory; return the indices already finished, the damaged cells (their
    files removed, so that they are computed again) and the sweep's :class:`Ledger`.

    A damaged ``sweep.json`` (unreadable, not a sweep description) is reported among the damaged files and
    rebuilt from the cells that carry this sweep's :func:`sweep_id` and read back whole; the others are
    recomputed. A valid ``sweep.json`` of another sweep means a new sweep here: it starts afresh."""
    identity = spec.identity()
    sid = sweep_id(identity)
    spec_path = out / SPEC_FILE
    if spec_path.is_file():
        found, checksums, why = _load_ledger(spec_path)
        if found is None or found == identity:
            damaged = [] if found is not None else \
                [f"{spec_path}: damaged ({why}); rebuilt from the valid cells of this sweep"]
            (out / CELLS_DIR).mkdir(exist_ok=True)
            done, verified = set(), {}
            for i in sorted(finished_cells(out, len(spec.cells))):
                try:
                    verified[i] = _read_cell(out, i, spec.finite, checksums.get(i), sid,
                                             require_sweep=found is None)[2]
                    done.add(i)
                except CellError as exc:
                    damaged.append(str(exc))
                    cell_path(out, i).unlink()
            ledger = Ledger(out, identity, verified)
            ledger.flush()
            return done, damaged, ledger
    if out.exists():                                   # a different sweep / an older result: start afresh
        for name in (CELLS_DIR, SPEC_FILE, store.META_FILE, store.ARRAYS_FILE):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / CELLS_DIR).mkdir()
    ledger = Ledger(out, identity)
    ledger.flush()
    return set(), [], ledger


# --------------------------------------------------------------------------------- running

class SweepError(store.StoreError):
    """A sweep stopped by its cluster (a lost scheduler, workers lost or killed, a cell that keeps failing):
    one line saying what happened, how many cells are on disk, and that the same command resumes it."""


def run_sweep(spec: SweepSpec, out: str | os.PathLike, *, workers: int | None = None,
              dask_local: int | None = None, scheduler: str | None = None, connect_timeout: float = 10.0,
              retries: int = 2, progress: bool = False) -> SweepOutcome:
    """Run (or resume) ``spec`` into ``out``; return every cell's result in index order.

    ``retries``: how many times a cell is submitted again after its worker died or it raised (Dask), or
    the local pool is restarted after one of its processes died; then :class:`SweepError` names the cell."""
    from dyntools.cluster import handshake, quiet_logs
    from dyntools.folder_lock import FolderLock

    backend = check_backend(workers, dask_local, scheduler)
    retries = validation.count("--retries", retries, minimum=0)
    out = check_out(out)
    start = time.perf_counter()
    client = cluster = None
    refused: list[str] = []
    with contextlib.ExitStack() as stack:
        if backend != "local":
            stack.enter_context(quiet_logs())
        if backend == "dask":
            client = connect(scheduler, connect_timeout)      # fails before anything is written
            stack.callback(_close, client)
            handshake(client, connect_timeout, scheduler)
            if spec.cell_memory is not None:
                memory.check_workers(client, *spec.cell_memory)
        created = _make_dirs(out)                           # the directories this sweep made (outermost first)
        try:
            lock = FolderLock(out).acquire()
        except BaseException:
            _remove_empty(created)
            raise
        try:
            done, damaged, ledger = prepare(spec, out)
            todo = [i for i in range(len(spec.cells)) if i not in done]
            with progress_bar(len(spec.cells), spec.kind, enabled=progress, unit="cell") as bar:
                bar.update(len(done))
                if todo and backend == "dask-local":
                    from distributed import Client, LocalCluster

                    cluster = LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None, silence_logs=50)
                    stack.callback(_close, cluster)
                    client = Client(cluster, set_as_default=False)
                    stack.callback(_close, client)
                    if spec.cell_memory is not None:
                        memory.check_workers(client, *spec.cell_memory)
                sink = _Sink(out, spec, ledger, bar, sweep_id(spec.identity()))
                try:
                    if not todo:
                        pass
                    elif client is not None:
                        refused = _run_dask(client, spec, todo, sink, retries,
                                            scheduler or "the local Dask cluster", max(30.0, 3 * connect_timeout))
                    elif (workers or os.cpu_count() or 1) == 1 or len(todo) == 1:
                        for i in todo:
                            sink.write(i, run_cell(spec.cell_fn, spec.config, spec.cells[i], spec.seed, i))
                    else:
                        _run_local(spec, todo, sink, workers or os.cpu_count() or 1, retries)
                finally:
                    ledger.flush()
            try:                             # read back under the lock: no other sweep can replace them meanwhile
                read = [_read_cell(out, i, spec.finite) for i in range(len(spec.cells))]
            except CellError as exc:         # written in this run and already damaged: a broken disk
                raise store.StoreError(f"Damaged sweep cell {exc}") from None
        except BaseException:
            if created and not finished_cells(out, len(spec.cells)):   # nothing finished: leave nothing behind
                shutil.rmtree(out / CELLS_DIR, ignore_errors=True)
                (out / SPEC_FILE).unlink(missing_ok=True)
                lock.release()
                _remove_empty(created)
            raise
        finally:
            lock.release()
    outcome = SweepOutcome([c for c, _, _ in read], len(todo), len(done), backend, time.perf_counter() - start,
                           damaged=damaged, targets=[t for _, t, _ in read], refused=refused)
    if lock.stale:
        outcome.extra["stale_lock"] = lock.stale
    return outcome


class _Sink:
    """Where finished cells go: the cell file, its checksum in the ledger, the progress bar."""

    def __init__(self, out, spec, ledger, bar, sid):
        self.out, self.spec, self.ledger, self.bar, self.sid = out, spec, ledger, bar, sid

    def write(self, index: int, result: dict) -> None:
        self.ledger.record(index, write_cell(self.out, index, result, self.sid))
        self.bar.update(1)

    def on_disk(self) -> str:
        n = len(finished_cells(self.out, len(self.spec.cells)))
        return f"{n} of {len(self.spec.cells)} cells are on disk in {self.out}"


def _close(resource) -> None:
    """Close a Dask client or cluster that may have lost its scheduler: quietly, without waiting long."""
    try:
        resource.close(timeout=5) if "Client" in type(resource).__name__ else resource.close()
    except Exception:  # noqa: BLE001 - a lost scheduler cannot be closed cleanly; nothing is lost
        pass


def _make_dirs(out: Path) -> list[Path]:
    """Create ``out`` and its missing parents; return those this call created (outermost first): only they
    may be removed again — a directory another process made at the same moment is not ours."""
    missing = []
    path = Path(os.path.abspath(out))
    while not path.exists():
        missing.append(path)
        path = path.parent
    created = []
    for path in reversed(missing):
        try:
            path.mkdir()
            created.append(path)
        except FileExistsError:
            pass
        except OSError as exc:
            raise store.StoreError(f"Invalid --out: cannot create {path} ({exc.strerror or exc})") from None
    return created


def _remove_empty(created: list[Path]) -> None:
    """Remove the directories of ``created`` that are empty, innermost first (``rmdir`` never removes content)."""
    for path in reversed(created):
        try:
            path.rmdir()
        except OSError:
            pass


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


def warm_up(cell_fn: Callable, config: dict, turn: str | None = None, wait: bool = True) -> None:
    """Load what the cell function compiles (its ``warm_up(config)`` attribute, if it has one) before the
    first cell: a worker's one-off cost (numba's cached kernels loaded, ~0.4 s) then lands in the sweep's
    fixed cost instead of in the time of the worker's first cell. A failing warm-up is ignored here:
    the cell itself then fails and reports why.

    ``turn``: a lock file the workers of one local pool take in turn (:func:`one_at_a_time`, when ``wait``): with
    empty caches the first compiles and the others load what it cached, instead of every worker compiling the same
    kernels at once (on a 2-core machine two cold workers cost twice the processor time for no earlier result). A
    warm-up that compiled something appends a byte to the file (numba's compile events): the driver learns from it
    whether the next pool need wait (:func:`_run_local`)."""
    try:
        warm = getattr(cell_fn, "warm_up", None)
        if warm is not None:
            from numba.core import event

            with one_at_a_time(turn if wait else None), event.install_recorder("numba:compile") as compiles:
                warm(config)
            if compiles.buffer and turn is not None:
                with open(turn, "ab") as fh:
                    fh.write(b"c")
    except Exception:  # noqa: BLE001 — the cells report their own errors
        pass


@contextlib.contextmanager
def one_at_a_time(path: str | None):
    """Hold an exclusive ``flock`` on the file ``path`` (blocking; the kernel drops it if the holder dies) while
    the body runs; without a path, or where the file cannot be locked, the body runs at once."""
    fd = None
    if path is not None:
        try:
            import fcntl

            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except (OSError, ImportError):        # no flock here: warming up together is only slower
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)                      # closing the descriptor releases the lock


def _thread_lock_for_bars() -> None:
    """Give tqdm a thread lock in this pool process. Its default lock is a ``multiprocessing.RLock``: a named
    semaphore registered with the pool's resource tracker, never unregistered when the process is killed, so the
    tracker would print a 'leaked semaphore objects' warning after the sweep's one line. A pool process draws no
    bar that another process must not interleave with, so a thread lock suffices."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def _start_worker(parent: int, cell_fn: Callable, config: dict, turn: str | None = None, wait: bool = True) -> None:
    """Pool-worker initializer: :func:`_exit_with_parent`, :func:`_thread_lock_for_bars`, then :func:`warm_up`
    (in turn with the pool's other workers on the lock file ``turn`` when ``wait``)."""
    _exit_with_parent(parent)
    _thread_lock_for_bars()
    warm_up(cell_fn, config, turn, wait)


def _run_local(spec, todo, sink, workers, retries):
    """The cells ``todo`` on a pool of ``workers`` spawned processes. A pool process that dies (killed, out
    of memory) breaks the pool: the finished cells are on disk, the pool is started again for the others,
    at most ``retries`` times; then one :class:`SweepError` line.

    The workers warm up in turn (:func:`warm_up`) unless the last pool of this cell function found its caches warm
    (no warm-up compiled anything: :func:`warm_marker`); then they need not wait for each other (~0.2 s of a 2-core
    grid's start-up, AMD Zen 5). A pool whose warm-up compiled removes the marker, so the next one takes turns."""
    todo = list(todo)
    marker = warm_marker(spec.cell_fn)
    wait = not marker.exists()
    fd, turn = tempfile.mkstemp(prefix="dyntools-warm-up-", suffix=".lock")   # the workers' warm-ups take turns
    os.close(fd)
    try:
        _run_pools(spec, todo, sink, workers, retries, turn, wait)
        compiled = os.path.getsize(turn) > 0
        if compiled:
            marker.unlink(missing_ok=True)
        elif wait:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    finally:
        os.unlink(turn)


def warm_marker(cell_fn) -> Path:
    """The file that says the last local pool of ``cell_fn`` warmed up without compiling: in the generated loops'
    cache folder (:func:`dyntools.dynamics.loops.user_loop_dir`, emptied with the compile caches by the cold-start
    bench), named by the function and the numba version. A stale marker (caches emptied elsewhere) only lets one
    pool's workers compile at once, as they did before they took turns."""
    import numba

    from dyntools.dynamics.loops import user_loop_dir

    name = f"{getattr(cell_fn, '__module__', '')}.{getattr(cell_fn, '__qualname__', repr(cell_fn))}|{numba.__version__}"
    return user_loop_dir() / "warm" / hashlib.sha1(name.encode()).hexdigest()[:16]


def _run_pools(spec, todo, sink, workers, retries, turn, wait=True):
    """:func:`_run_local`'s pools (started again after one died)."""
    from concurrent.futures.process import BrokenProcessPool

    for _attempt in range(retries + 1):
        pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=get_context("spawn"),
                                   initializer=_start_worker,
                                   initargs=(os.getpid(), spec.cell_fn, spec.config, turn, wait))
        try:
            futures = {pool.submit(run_cell, spec.cell_fn, spec.config, spec.cells[i], spec.seed, i): i
                       for i in todo}
            for fut in as_completed(futures):
                i = futures.pop(fut)
                sink.write(i, fut.result())
                todo.remove(i)
            pool.shutdown(wait=True)
            return
        except BrokenProcessPool:
            pool.shutdown(wait=True, cancel_futures=True)
        except BaseException:                       # Ctrl-C or a failing cell: do not run the rest
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    times = f"{retries + 1} time{'s' if retries else ''}"
    raise SweepError(f"a worker process of the local pool died {times} (killed, or out of memory; "
                     f"--retries {retries}); {sink.on_disk()}: run the same command again to resume")


def _cell_text(spec, i) -> str:
    cell = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in spec.cells[i].items())
    return f"cell {i} ({cell[:120]})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def _workers(client, exclude=()) -> int:
    """How many workers the scheduler has, not counting the addresses ``exclude`` (a scheduler that does not
    answer counts as having some: its loss is seen through the cancelled futures). ``Client.nthreads`` lists
    every worker on every supported distributed version (``scheduler_info(n_workers=...)`` is newer than the
    oldest one pyproject allows)."""
    try:
        return len(set(client.nthreads()) - set(exclude))
    except Exception:  # noqa: BLE001
        return 1


def _run_dask(client, spec, todo, sink, retries, where, lost_after) -> list[str]:
    """The cells ``todo`` on a Dask cluster; returns one line per worker refused mid-sweep.

    Each future is released as soon as its cell is on disk (the scheduler then never recomputes it when a
    worker holding it is lost). A cell whose future fails (its worker died, or it raised) is submitted again
    under a new key, at most ``retries`` times, then given up: the other cells finish and one :class:`SweepError`
    line names it. A result lost with its worker before it reached the driver is computed again (not a failure).
    A lost scheduler, or no worker left for ``lost_after`` seconds, stops the sweep at once: one
    :class:`SweepError` line.

    Every cell runs as :func:`dyntools.cluster.guarded_cell`: a worker that joined after the handshake and
    cannot run dyntools cells (another dyntools version, none at all) refuses the cell before computing it. That
    worker is *refused*: the cell — not counted as a failure — goes to the other workers only (``workers=`` with
    ``allow_other_workers=False``, the live workers that have not refused; moved again if those all leave), so
    it writes no cell; without any other worker for ``lost_after`` seconds the sweep stops in one line naming it."""
    import itertools

    from distributed import as_completed as dask_completed

    from dyntools.cluster import foreign_worker, guarded_cell, task
    from dyntools.version import __version__

    guard = guarded_cell()
    token = f"{spec.kind}-{os.getpid()}-{time.time_ns()}"
    serial = itertools.count()
    failures = dict.fromkeys(todo, 0)
    resubmits = dict.fromkeys(todo, 0)
    given_up: list[str] = []
    refused: dict[str, str] = {}         # address → why: workers that refused a cell (joined after the handshake)
    allowed: dict[int, set[str]] = {}    # a cell refused once → the workers it may run on now
    parked: list[int] = []               # cells refused while no other worker was there

    def submit(i):
        where_to = {"workers": sorted(allowed[i]), "allow_other_workers": False} if i in allowed else {}
        cell = task(run_cell, spec.cell_fn, spec.config, spec.cells[i], spec.seed, i)
        return client.submit(guard, __version__, cell, key=f"{token}-cell-{i}-{next(serial)}", pure=False,
                             **where_to)

    def place(i):
        """(Re)submit cell ``i``; once a worker was refused, only to the live workers that were not."""
        if refused:
            try:
                good = set(client.nthreads()) - set(refused)
            except Exception:  # noqa: BLE001 - the scheduler does not answer: tried again on the next check
                good = set()
            if not good:
                parked.append(i)
                return
            allowed[i] = good
        new = submit(i)
        futures[new] = i
        pending.add(new)

    def stranded():
        """Cells parked, or restricted to workers that all left, given to the live good workers."""
        try:
            live = set(client.nthreads()) - set(refused)
        except Exception:  # noqa: BLE001
            return
        if not live:
            return
        again, parked[:] = list(parked), []
        for fut, i in list(futures.items()):
            if i in allowed and not allowed[i] & live:
                futures.pop(fut)          # skipped when as_completed yields it, cancelled
                fut.cancel()
                again.append(i)
        for i in again:
            place(i)

    def refusals() -> str:
        return "; ".join(refused.values())

    futures = {submit(i): i for i in todo}
    lost = (f"lost the Dask scheduler at {where}", "start it (and its workers) again")
    with client.as_current():
        pending = dask_completed(list(futures))
        since = checked = time.monotonic()
        while not pending.is_empty() or parked:
            if not pending.has_ready():
                time.sleep(0.05)
                if client.status in ("closed", "closing", "failed"):
                    raise SweepError(f"{lost[0]}; {sink.on_disk()}: {lost[1]} and run the same command to resume")
                if client.status == "running" and time.monotonic() - checked > 2.0:     # any worker left?
                    checked = time.monotonic()
                    if _workers(client, refused):
                        since = checked
                        if refused:
                            stranded()
                    elif checked - since > lost_after:
                        refused_too = f" that can run dyntools cells (refused: {refusals()})" if refused else ""
                        raise SweepError(f"no Dask worker{refused_too} left at {where} for {lost_after:g} s; "
                                         f"{sink.on_disk()}: start workers and run the same command again to resume")
                continue
            for fut in pending.next_batch(block=False):
                i = futures.pop(fut, None)
                if i is None:                            # superseded by a resubmission (see stranded)
                    continue
                if fut.status == "finished":
                    try:
                        result = fut.result(timeout=lost_after)
                    except Exception:  # noqa: BLE001 - its worker died after finishing it: computed again
                        result = None
                    if result is not None:
                        sink.write(i, result)            # written once, by the driver, on arrival
                        fut.release()                    # nothing holds it any more: never recomputed
                        continue
                if fut.status == "cancelled":
                    raise SweepError(f"{lost[0]}; {sink.on_disk()}: {lost[1]} and run the same command to resume")
                error = fut.exception() if fut.status == "error" else None
                fut.release()
                foreign = foreign_worker(error)
                if error is None or foreign is not None:  # lost with its worker, or refused by it: no failure
                    if foreign is not None:
                        refused.setdefault(*foreign)
                    resubmits[i] += 1
                    if resubmits[i] > 10:
                        what = "was refused by workers" if foreign else "its result was lost with its worker"
                        raise SweepError(f"{_cell_text(spec, i)}: {what} 10 times; {sink.on_disk()}: run the same "
                                         "command again to resume")
                    place(i)
                    continue
                failures[i] += 1
                if failures[i] > retries:                # given up; the other cells still finish
                    attempts = f"{failures[i]} attempt{'s' if failures[i] > 1 else ''}"
                    given_up.append(f"{_cell_text(spec, i)} failed on {attempts} (--retries {retries}; last: "
                                    f"{_first_line(error)})")
                    continue
                place(i)
    if given_up:
        more = f" (and {len(given_up) - 1} more cells)" if len(given_up) > 1 else ""
        raise SweepError(f"{given_up[0]}{more}; {sink.on_disk()}")
    return [f"a worker that joined mid-sweep computed no cell (its cells went to the other workers): {why}"
            for why in refused.values()]


def finalize(result, out: str | os.PathLike) -> Path:
    """Write the assembled ``RunResult`` next to the cells (arrays first, ``result.json`` last,
    each by temporary file + fsync + rename): the directory becomes a normal result directory. A write
    error (a full disk) is one :class:`~dyntools.store.StoreError` line naming ``out``; the temporary
    directory is removed and the finished cells stay for a re-run. It writes holding the folder's lock:
    while another sweep holds it (one started after :func:`run_sweep` returned), nothing is written and
    :class:`~dyntools.folder_lock.FolderBusy` names that sweep."""
    from dyntools.folder_lock import FolderLock

    out = Path(out)
    try:
        with FolderLock(out), tempfile.TemporaryDirectory(prefix=".final-", dir=out) as tmp:
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
    own stream, after sleeping ``cell["sleep"]`` seconds; ``cell["diverge"]`` marks it diverged.
    With ``config["log"]`` (a file name) each computation appends ``"index pid"`` to it as it ends: a test
    can count how often each cell was computed."""
    from dyntools.engine import streams

    gen = streams.path_generators(seed, 1, streams.KEYS["sweep.demo"], index)[0]
    x = gen.standard_normal(int(config.get("size", 4)))
    time.sleep(float(cell.get("sleep", 0.0)))
    if config.get("log"):
        with open(config["log"], "a", encoding="utf-8") as fh:
            fh.write(f"{index} {os.getpid()}\n")
    if cell.get("diverge"):
        return {"x": np.full_like(x, np.nan), "pid": os.getpid(), "status": "diverged",
                "message": "diverged at step 0"}
    return {"x": x, "pid": os.getpid(), "status": "completed", "message": ""}
