"""Compile the shared step loop in a helper process while this one compiles the kernel it will call.

A first ``dt.train`` with empty caches compiles two independent things one after the other: the model's kernel
(and the optimizer step) and the loop over paths that calls them through function pointers
(:func:`dyntools.dynamics.path_loop.by_pointer`). Neither needs the other to compile: the loop is typed by the
kernel's *signature*, not its code. So when both are missing from numba's on-disk cache, :func:`start` hands the
loop's argument types to a new Python process that compiles the loop into the same cache, this process compiles the
kernel meanwhile, and :func:`finish` waits for the helper; the loop is then loaded from the cache. On the
cross-entropy MLP's first ``dt.train`` (AMD EPYC Zen 4, 2 cores) the kernel takes ~4 s and the loop ~3.3 s of
compiling; one after the other the cold row took 8.3–9.8 s, side by side 5.8–7.0 s (alternated, three runs a side,
the machine's slow phase; the 8-cell AdamW sweep 11.6–13.5 → 8.5–9.3 s: docs/performance.md, stop 57).

**Nothing changes a bit.** The helper compiles the same function for the same argument types under the same
environment (numba's compile target, cache folder and dyntools' settings are inherited), and numba's cache keys
every entry by the function's code, the signature and the compile target, so this process loads only an entry
compiled exactly as it would have compiled it (a loaded loop gives a fresh compile's bits:
``tests/test_reproducibility.py``). Every way the helper can fail — no interpreter, an argument type that cannot
be pickled or imported, a crash, :data:`WAIT_SECONDS` passed — ends in this process compiling the loop itself, as
it did before. A warm cache never starts a helper (:func:`worth_it`), nor does ``DYNTOOLS_COMPILE_HELPER=0``.

The cache look-ups read numba's cache index (``Dispatcher._cache``: not public API; a numba without it is treated
as "unknown" and starts no helper).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading

#: ``DYNTOOLS_COMPILE_HELPER=0`` turns the helper off (this process compiles everything, as before)
ENV = "DYNTOOLS_COMPILE_HELPER"
#: how long :func:`finish` waits for a helper before it stops it and compiles the loop itself (a time limit that
#: can only stop the helper, never fail a run)
WAIT_SECONDS = 300.0
#: one first compile at a time in this process (the paths' threads may reach a new loop together)
LOCK = threading.RLock()
#: helpers started in this process (read by the tests and the cold-start bench)
started = 0


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def on_disk(dispatcher, sig) -> bool | None:
    """Whether numba's on-disk cache of ``dispatcher`` holds an entry for ``sig`` (argument types, or a signature)
    for this process's compile target; None when that cannot be told (caching off, another numba)."""
    try:
        cache = dispatcher._cache
        if not getattr(cache, "_enabled", False):
            return None
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - private API of another numba version: unknown
        return None


def worth_it(loop, arg_types, kernel, sig) -> bool:
    """Whether a helper saves time: the helper is on, ``loop`` is neither compiled here nor on disk for
    ``arg_types``, and neither is ``kernel`` (a dispatcher) for ``sig`` — the seconds this process compiles
    meanwhile. Only the kernel counts: an optimizer step compiles in ~0.2 s, less than the helper's start-up, so a
    loop whose kernel is ready (a user's kernel, run by the trainer's check first) is compiled here (a helper made
    the symbolic row ~0.8 s slower)."""
    if not enabled() or arg_types in loop.overloads or on_disk(loop, arg_types) is not False:
        return False
    return (hasattr(kernel, "overloads") and sig.args not in kernel.overloads and on_disk(kernel, sig) is False
            and on_disk(kernel, tuple(sig.args)) is False)      # (either key: path_loop.one_cache_entry)


def start(rebuild: tuple, arg_types) -> subprocess.Popen | None:
    """A helper process compiling the loop ``rebuild`` names (``(module, function, args)``: ``function(*args)``
    returns the dispatcher) for ``arg_types`` into numba's cache; None when it cannot be started."""
    global started
    import numba

    try:
        payload = pickle.dumps((rebuild, arg_types, numba.config.CACHE_DIR), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a type that does not pickle: compile here
        return None
    from dyntools.child import environment

    try:
        proc = subprocess.Popen([sys.executable, "-c", "from dyntools.dynamics.compile_helper import main; main()"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=environment())
    except OSError:
        return None
    started += 1
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except OSError:                        # it ended before reading (a broken pipe): finish() sees it failed
        pass
    return proc


def finish(proc: subprocess.Popen | None) -> bool:
    """Wait for the helper ``proc``: True when it compiled the loop (False: it failed, or ran past
    :data:`WAIT_SECONDS` and was stopped; the caller compiles)."""
    if proc is None:
        return False
    try:
        return proc.wait(timeout=WAIT_SECONDS) == 0
    except subprocess.TimeoutExpired:
        stop(proc)
        return False
    except BaseException:                  # interrupted while waiting: no helper outlives its caller's compile
        stop(proc)
        raise


def stop(proc: subprocess.Popen | None) -> None:
    """End the helper ``proc`` (if any) and reap it."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def compile_beside(loop, arg_types, functions, rebuild: tuple | None):
    """``loop`` compiled (or loaded) for ``arg_types`` and each of ``functions`` (``(dispatcher, signature,
    compile)``: ``compile()`` compiles or loads it here; the kernel first) ready: the loop in a helper process
    meanwhile when :func:`worth_it` for the first function (``rebuild`` names the loop for the helper; None: no
    helper). Returns the loop's compile result."""
    with LOCK:
        found = loop.overloads.get(arg_types)
        if found is not None:
            return found
        helper = None
        if rebuild is not None and functions and worth_it(loop, arg_types, *functions[0][:2]):
            helper = start(rebuild, arg_types)
        try:
            for _, _, compile_here in functions:
                compile_here()
        except BaseException:              # the kernel does not compile (a typing error): the error, no helper left
            stop(helper)
            raise
        finish(helper)
        loop.compile(arg_types)            # loaded from the cache the helper filled, or compiled here
        return loop.overloads[arg_types]


def main() -> None:
    """The helper: read ``(rebuild, arg_types, cache_dir)`` from stdin, compile the loop into the cache."""
    import importlib

    import numba

    rebuild, arg_types, cache_dir = pickle.loads(sys.stdin.buffer.read())
    module, function, args = rebuild
    make = getattr(importlib.import_module(module), function)
    # the caller's cache folder (with the fallback blocks, dyntools.lowlevel's sub-folder), set before the loop's
    # dispatcher is made just below: numba reads it then
    numba.config.CACHE_DIR = cache_dir
    make(*args).compile(tuple(arg_types))
