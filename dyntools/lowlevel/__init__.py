"""Low-level compiled building blocks of the models' kernels, fenced off from the run engine.

fma_block.py         register-blocked panels of a matrix product: LLVM vector IR (``<w x double>``
                     loads and stores, ``llvm.fma.v*`` calls, phi nodes holding the accumulators
                     across the contraction) emitted through ``numba.extending.intrinsic``
vector_transpose.py  transposes of ``w × w`` blocks in vector registers (LLVM ``shufflevector``)
flat_views.py        matrix views of flat scratch arrays built directly from numba's array struct, and
                     "borrowed" arrays whose meminfo pointer is set to null (no reference counting)

What they rely on in numba / llvmlite, none of it a public, stable API: the ``@intrinsic`` code
generation interface (``context.make_array``, ``populate_array``, ``impl_ret_borrowed``, ``cgutils``),
the layout of numba's array struct (data, shape, strides, meminfo, parent), the fact that numba's
runtime accepts a null meminfo (no incref/decref), llvmlite's IR builder and LLVM's vector types and
``llvm.fma`` intrinsics, and the host CPU's feature list (``llvmlite.binding.get_host_cpu_features``)
to choose the vector width (512 bits with AVX-512, else 256).

The fallback (:mod:`dyntools.lowlevel.fallback`): when imported, this package compiles and runs a small
float64 probe of the three modules (:mod:`dyntools.lowlevel.probe`, cached on disk after the first time), before
any kernel that uses them is defined; the float32 probe runs when a model is first built in float32
(:func:`require`), so a float64 run never compiles it. If the float64 probe fails — a numba or llvmlite that
changed these internals, a processor LLVM cannot target this way — it uses plain numba loops with the same
call signatures instead: the same fma chains (the same bits on a processor with fma; see that module), slower.
``DYNTOOLS_LOWLEVEL=fallback`` forces the loops, ``=llvm-vector`` the fast code (its failure raised). What runs
is :data:`DESCRIPTION`, recorded in every result's ``versions["lowlevel"]`` and printed once by ``dyntools bench``.

Only models/ (``mlp_gemm.py`` and ``mlp.py``) import this package, through the names below
(``panel``, ``EPILOGUES``, ``transpose``, ``matrix``, ``borrowed``, ``VECTOR_BYTES``); nothing above the
models does. They are imported only when such a model is used (the trainer's table of tuned loops adds the
MLP's when the MLP's module is imported: :data:`dyntools.dynamics.fast.ON_IMPORT`), so a first ``dt.train`` of
the toy, a DiagNet or a symbolic model compiles no probe (``tests/test_cold_fixed_costs.py``).
"""

from __future__ import annotations

import os

import numpy as np

from dyntools.lowlevel.width import VECTOR_BITS, VECTOR_BYTES, lanes  # noqa: F401 (re-exported)
from dyntools.numba_errors import install as _install_numba_errors

_install_numba_errors()   # before the probe below compiles: see dyntools.numba_errors

#: values of ``DYNTOOLS_LOWLEVEL``: ``auto`` (the default), ``fallback`` (force the loops), ``llvm-vector``
#: (force the fast code: a failure to compile it is raised, not replaced)
CHOICES = ("auto", "fallback", "llvm-vector")


def choose(environ=os.environ, probe=None) -> tuple[str, str]:
    """``(kind, reason)``: ``("llvm-vector", "")`` when the fast building blocks compile and pass
    :func:`dyntools.lowlevel.probe.check` in float64 (or ``probe``, a callable that raises on failure), else
    ``("fallback", why)``; ``DYNTOOLS_LOWLEVEL`` in ``environ`` forces either. float32 is probed on first use
    (:func:`require`)."""
    forced = environ.get("DYNTOOLS_LOWLEVEL", "auto") or "auto"
    if forced not in CHOICES:
        raise ValueError(f"Invalid DYNTOOLS_LOWLEVEL: {forced!r} (one of {', '.join(CHOICES)})")
    if forced == "fallback":
        return "fallback", "forced by DYNTOOLS_LOWLEVEL=fallback"
    try:
        if probe is None:
            from dyntools.lowlevel.probe import check as probe
        probe()
    except Exception as exc:                          # any failure of numba / llvmlite / the processor
        if forced == "llvm-vector":
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return "fallback", f"the LLVM-vector kernels did not compile: {type(exc).__name__}: {first}"
    return "llvm-vector", ""


KIND, REASON = choose()
#: what runs, for a result's metadata and the benchmarks' output: ``"llvm-vector (512-bit)"`` or
#: ``"fallback (<reason>)"``
DESCRIPTION = f"llvm-vector ({VECTOR_BITS}-bit)" if KIND == "llvm-vector" else f"fallback ({REASON})"

if KIND == "llvm-vector":
    from dyntools.lowlevel.flat_views import borrowed, matrix
    from dyntools.lowlevel.fma_block import EPILOGUES, panel
    from dyntools.lowlevel.vector_transpose import transpose
else:
    # the loops compile to other code under the same function names: keep numba's on-disk cache of the
    # kernels compiled from here on apart from the fast one (only modules imported after this one)
    from numba import config as _numba_config

    _numba_config.CACHE_DIR = os.path.join(_numba_config.CACHE_DIR or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__pycache__"), "lowlevel-fallback")
    from dyntools.lowlevel.fallback import EPILOGUES, borrowed, matrix, panel, transpose  # noqa: F401

#: the precisions whose building blocks passed the probe in this process (float64: at import, by :func:`choose`)
_PROBED = {"float64"} if KIND == "llvm-vector" else set()


def require(dtype, environ=os.environ, probe=None) -> None:
    """Probe the fast building blocks in precision ``dtype`` before a model's kernels first run in it (once per
    process; nothing to do for the fallback loops). The import probes float64 only: compiling the float32
    probe as well cost a float64 run ~0.35 s of a cold start (issue 38). The choice of the kernels is made at
    import, so a float32 failure cannot switch to the loops any more: it raises, naming the way out
    (``DYNTOOLS_LOWLEVEL=fallback``), unless the fast code was forced (then the probe's own error)."""
    name = np.dtype(dtype).name
    if KIND != "llvm-vector" or name in _PROBED:
        return
    try:
        if probe is None:
            from dyntools.lowlevel.probe import check as probe
        probe(np.dtype(dtype))
    except Exception as exc:
        if environ.get("DYNTOOLS_LOWLEVEL") == "llvm-vector":
            raise
        raise RuntimeError(f"the LLVM-vector kernels failed their {name} probe ({type(exc).__name__}: "
                           f"{str(exc).strip()[:200]}); set DYNTOOLS_LOWLEVEL=fallback to use the plain "
                           "loops") from exc
    _PROBED.add(name)


__all__ = ["KIND", "REASON", "DESCRIPTION", "VECTOR_BITS", "VECTOR_BYTES", "lanes", "EPILOGUES", "panel",
           "transpose", "matrix", "borrowed", "choose", "require"]
