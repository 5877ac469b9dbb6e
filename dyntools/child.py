"""One function run in a child process with limits: a wall-clock time limit, an address-space (memory) limit,
a processor-time limit, and a temporary working directory of its own.

:func:`run_limited` starts ``python -m dyntools.child`` in a fresh temporary directory (removed afterwards),
hands it ``"module:function"`` and keyword arguments as JSON on stdin, and reads the function's (JSON) return
value back. The child sets its limits with :func:`resource.setrlimit` before it imports anything of the
caller's: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (processor seconds: a backstop should the parent die),
``RLIMIT_FSIZE`` (no file larger than :data:`MAX_FILE_BYTES`) and ``RLIMIT_CORE`` = 0. The parent kills the
child's whole process group when the wall-clock limit passes. What the function prints goes to stderr — a
file, capped like any other — so that only the result travels on stdout.

This is **not a security sandbox**: the child runs as the same user, can read and write every file that user
can (its working directory is only where relative paths land), open network connections and start processes.
It keeps an infinite loop, a runaway allocation or a stray ``os.remove("x")`` in a student's file from
hanging the caller or touching the caller's folder — nothing more. Run only code you would run yourself.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

#: the largest file the child may write (bytes)
MAX_FILE_BYTES = 64 * 2**20
#: the package's parent folder: the child imports dyntools from where the caller did
_ROOT = str(Path(__file__).resolve().parents[1])


def environment(**variables: str) -> dict[str, str]:
    """This process's environment with ``variables`` set and the package's parent folder first on ``PYTHONPATH``: a
    ``python`` child imports dyntools from where this process did (a clone run in place, or an installation)."""
    path = os.pathsep.join([_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, **variables, "PYTHONPATH": path}


class ChildStopped(Exception):
    """The child did not return a result: ``reason`` says why (time limit, memory, processor time, exit)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def run_limited(target: str, kwargs: dict, *, timeout: float, memory_mb: int | None):
    """``module:function(**kwargs)`` in a child process (see the module docstring); returns its JSON-able
    result. A ``ValueError`` the function raises is raised here with its message; a child stopped by a limit,
    killed or exiting without a result raises :class:`ChildStopped` naming the cause."""
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"Invalid timeout: {timeout!r} (must be a finite number of seconds > 0)")
    request = json.dumps({"target": target, "kwargs": kwargs, "memory_mb": memory_mb,
                          "cpu_seconds": int(math.ceil(2 * timeout)) + 5})
    # one thread each: BLAS and numba reserve address space per thread, which a many-core machine would spend
    # against the memory limit before the student's code runs
    env = environment(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="dyntools-child-") as cwd, \
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err_file:
        # the code's prints go to a file, capped by RLIMIT_FSIZE: an endless print cannot fill this process
        proc = subprocess.Popen([sys.executable, "-m", "dyntools.child"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err_file, cwd=cwd, env=env, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise ChildStopped(f"stopped at the time limit of {timeout:g} s (an infinite loop, or work too slow "
                               "for the limit: raise it with --timeout)") from None
        finally:
            _kill_group(proc)            # anything the code left running in its process group
        err_file.seek(max(0, err_file.seek(0, os.SEEK_END) - 4096))
        err = err_file.read()
    return _result(proc.returncode, out, err, memory_mb)


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _result(code: int, out: str, err: str, memory_mb: int | None):
    """The child's answer, or the reason it gave none."""
    last = out.strip().splitlines()[-1] if out.strip() else ""
    try:
        answer = json.loads(last)
    except json.JSONDecodeError:
        answer = None
    if isinstance(answer, dict) and "result" in answer:
        return answer["result"]
    if isinstance(answer, dict) and "error" in answer:
        if answer["error"] == "ValueError":
            raise ValueError(answer["message"])
        if answer["error"] == "MemoryError":
            raise ChildStopped(f"stopped by the memory limit ({memory_mb} MB of address space)")
        raise ChildStopped(f"the child failed: {answer['error']}: {answer['message']}")
    if code == -signal.SIGXCPU:
        raise ChildStopped("stopped by the processor-time limit")
    tail = (err.strip().splitlines() or [""])[-1][:200]
    if code < 0:
        raise ChildStopped(f"killed by signal {signal.Signals(-code).name}" + (f" ({tail})" if tail else ""))
    raise ChildStopped(f"the code ended the process (exit status {code}) before a result"
                       + (f": {tail}" if tail else ""))


def _set_limits(memory_mb: int | None, cpu_seconds: int) -> None:
    import resource

    limits = [(resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_FSIZE, MAX_FILE_BYTES), (resource.RLIMIT_CORE, 0)]
    if memory_mb:
        limits.append((resource.RLIMIT_AS, int(memory_mb) * 2**20))
    for kind, value in limits:
        _, hard = resource.getrlimit(kind)
        resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _main() -> None:
    """The child: read the request, set the limits, call the function, write one JSON line."""
    request = json.loads(sys.stdin.read())
    result_fd = os.dup(1)
    os.dup2(2, 1)                               # the function's prints go to stderr, the result alone to stdout
    _set_limits(request["memory_mb"], request["cpu_seconds"])
    try:
        import importlib

        module, name = request["target"].split(":")
        answer = {"result": getattr(importlib.import_module(module), name)(**request["kwargs"])}
    except MemoryError:
        answer = {"error": "MemoryError", "message": ""}
    except Exception as exc:                    # ValueError: the caller's one-line message; others: reported
        answer = {"error": type(exc).__name__, "message": (str(exc).strip().splitlines() or [""])[0][:300]}
    with os.fdopen(result_fd, "w") as stream:
        stream.write("\n" + json.dumps(answer) + "\n")
    sys.stdout.flush()
    os._exit(0)                                 # no atexit hooks or threads of the student's code to wait for


if __name__ == "__main__":
    _main()
