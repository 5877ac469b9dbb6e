"""Checking a Dask cluster before a sweep trusts it: a version handshake with every worker.

A worker started from another environment cannot import dyntools, or imports another version of it: its
cells would fail one by one (or, worse, kill the worker and leave the sweep waiting). :func:`handshake`
asks every worker, before the first cell is submitted, for the versions of dyntools, numba and numpy and
for its compile target (:func:`dyntools.engine.target.compile_target`). The probe is sent *by value*
(its code travels with it, so it runs on a worker that has no dyntools at all) and the answer must come
within the connect timeout. Refused, in one line naming the worker: no worker at all, a worker that lacks
one of the three packages, a worker whose dyntools is another version. Accepted: workers with other
numba / numpy versions or CPUs — their cells record their compile target and the sweep says *mixed*.

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
'''


def _probe_function():
    namespace = {"__name__": "dyntools_worker_probe"}      # not in sys.modules: pickled by value
    exec(compile(_PROBE, "<dyntools worker probe>", "exec"), namespace)  # noqa: S102 - our own constant source
    return namespace["probe"]


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
