"""Checking a Dask cluster before a sweep trusts it: a version handshake with every worker.

A worker started from another environment cannot import dyntools, or imports another version of it: its
cells would fail one by one (or, worse, kill the worker and leave the sweep waiting). :func:`handshake`
asks every worker, before the first cell is submitted, for the versions of dyntools, numba and numpy and
for its compile target (:func:`dyntools.engine.target.compile_target`). The probe is sent *by value*
(its code travels with it, so it runs on a worker that has no dyntools at all) and the answer must come
within the connect timeout. Refused, in one line naming the worker: no worker at all, a worker that lacks
one of the three packages, a worker whose dyntools is another version. Accepted: workers with other
numba / numpy versions or CPUs — their cells record their compile target and the sweep says *mixed*.

A worker that joins *after* the handshake (another ``dask worker`` started mid-sweep) is checked too: every cell
is submitted as :func:`guarded_cell`, which runs the same probe on the worker that picked the cell, before it
imports anything of dyntools, and raises ``ForeignWorker(address, answer)`` instead of computing the cell when
that worker fails :func:`check_worker`. The check travels with each cell rather than as a
``distributed.WorkerPlugin`` because a plugin stays registered on the scheduler after the sweep (a shared
cluster's state changed for later clients), its ``setup`` failing does not stop the worker from taking tasks,
and closing the foreign worker from it would stop someone else's process; a per-cell probe changes nothing on
the cluster and costs one dictionary of cached versions per cell. The sweep (:func:`dyntools.sweep._run_dask`)
gives such a cell to the other workers, never to that one again, and reports the worker in one line.

:func:`quiet_logs` keeps distributed's own log records (a lost scheduler logs a 50-line traceback from
the client's reconnect loop) off the terminal while a sweep runs: the sweep says what happened in one line.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from dyntools.version import __version__

#: The probe's source: compiled into a namespace that is not an importable module, so that cloudpickle
#: sends the function's code (a reference to ``dyntools.cluster.probe`` would fail on a worker without
#: dyntools before the probe could say so).
_PROBE = '''
def probe():
    import importlib
    out = {}
    for name in ("dyntools", "numba", "numpy"):
        try:
            out[name] = str(getattr(importlib.import_module(name), "__version__", "unknown"))
        except Exception as exc:
            out[name] = None
            out[name + "_error"] = (type(exc).__name__ + ": " + str(exc))[:160]
    try:
        from dyntools.engine.target import compile_target
        out["target"] = compile_target()
    except Exception:
        out["target"] = None
    return out


class ForeignWorker(Exception):
    """The worker at ``args[0]`` cannot run this sweep's cells; ``args[1]`` is its probe's answer."""


def guarded(version, task):
    import pickle
    info = probe()
    if info.get("dyntools") != version or info.get("numba") is None or info.get("numpy") is None:
        try:
            from distributed import get_worker
            address = get_worker().address
        except Exception:
            address = "(unknown address)"
        raise ForeignWorker(address, info)
    function, args = pickle.loads(task)
    return function(*args)
'''


def _probe_namespace() -> dict:
    namespace = {"__name__": "dyntools_worker_probe"}      # not in sys.modules: pickled by value
    exec(compile(_PROBE, "<dyntools worker probe>", "exec"), namespace)  # noqa: S102 - our own constant source
    return namespace


def _probe_function():
    return _probe_namespace()["probe"]


def guarded_cell():
    """The function each cell is submitted as: ``guarded(version, task)``, ``task`` the pickled pair
    ``(function, args)`` (:func:`task`), probes the worker running it (as :func:`handshake` does) and unpickles and
    calls ``function(*args)`` only when its dyntools is ``version`` and numba and numpy import; otherwise it
    raises ``ForeignWorker(address, answer)`` having imported nothing of dyntools' cell code (the task stays bytes
    until then). Sent by value, like the probe: a worker without dyntools can run it to say so."""
    return _probe_namespace()["guarded"]


def foreign_worker(error) -> tuple[str, str] | None:
    """``(address, why)`` when ``error`` (a cell's exception as the client received it) is a guarded cell's
    refusal — its class travelled by value, so it is recognised by name — else ``None``."""
    if type(error).__name__ != "ForeignWorker" or len(getattr(error, "args", ())) != 2:
        return None
    address, info = error.args
    why = check_worker(str(address), info)
    return (str(address), why) if why is not None else None


def check_worker(address: str, info) -> str | None:
    """Why the worker at ``address`` cannot run dyntools cells (``None``: it can)."""
    if isinstance(info, BaseException) or not isinstance(info, dict):
        return f"worker {address} did not answer the version handshake ({type(info).__name__}: {info})"
    for name in ("dyntools", "numba", "numpy"):
        if info.get(name) is None:
            why = info.get(name + "_error", "not importable")
            return f"worker {address} cannot import {name} ({why}); start the workers from an environment " \
                   f"with dyntools {__version__}"
    if info["dyntools"] != __version__:
        return f"worker {address} runs dyntools {info['dyntools']}, this command {__version__}; start the " \
               f"workers from the same dyntools version"
    return None


def handshake(client, timeout: float, scheduler: str) -> dict[str, dict]:
    """Every worker's versions and compile target (``{address: info}``), within ``timeout`` seconds;
    ``ValueError`` naming ``--scheduler`` and the first worker that cannot run dyntools cells."""
    box: dict = {}

    def ask():
        try:
            client.wait_for_workers(1, timeout=0.8 * timeout)   # its own error lands before the deadline
            box["answers"] = client.run(_probe_function(), on_error="return")
        except BaseException as exc:          # noqa: BLE001 - reported below as one line
            box["error"] = exc

    thread = threading.Thread(target=ask, name="dyntools-handshake", daemon=True)
    thread.start()
    thread.join(timeout)
    if "answers" not in box:
        what = "no worker joined" if "error" in box and "Timeout" in type(box["error"]).__name__ else \
            "the workers did not answer the version handshake"
        raise ValueError(f"Invalid --scheduler: {what} at {scheduler} within {timeout:g} s")
    answers = box["answers"]
    if not answers:
        raise ValueError(f"Invalid --scheduler: no worker at {scheduler}")
    for address in sorted(answers):
        why = check_worker(address, answers[address])
        if why is not None:
            raise ValueError(f"Invalid --scheduler: {why}")
    return answers


#: Loggers of distributed (and of the event loop under it) that a lost worker or scheduler makes speak.
_LOGGERS = ("distributed", "distributed.client", "distributed.core", "distributed.comm", "distributed.worker",
            "distributed.scheduler", "distributed.nanny", "distributed.batched", "distributed.utils",
            "distributed.deploy", "tornado", "asyncio")


@contextlib.contextmanager
def quiet_logs():
    """Distributed's log records below CRITICAL silenced while the block runs (levels restored after)."""
    with contextlib.suppress(ImportError):
        import distributed  # noqa: F401 - its import configures these loggers: first, so that it cannot undo this
    saved = {name: logging.getLogger(name).level for name in _LOGGERS}
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def task(function, *args) -> bytes:
    """``function(*args)`` as the bytes a guarded cell runs (:func:`guarded_cell`): ``function`` a module-level
    function (pickled by reference: the worker imports it only after its probe)."""
    import pickle

    return pickle.dumps((function, args))
