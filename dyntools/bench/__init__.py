"""``dyntools bench``: each fast kernel against its baseline, both timed in the same process.

Each benchmark module of this package declares ``BENCHMARK = Benchmark(name, run)``
(:class:`dyntools.bench.report.Benchmark`); :func:`benchmarks` finds them by scanning the package, so adding one
is one module. A report holds measurements (seconds, rates) and *targets* — each a ratio or rate with the goal it
must reach (:mod:`dyntools.bench.report`).

``isas`` (``dyntools bench --isa native,avx2``): ``native`` runs in this process on this processor;
``avx2`` runs the same benchmark in a subprocess restricted to what an AVX2 processor without AVX-512
has (:func:`isa_environment`: numba compiles for Haswell with 256-bit panels, XLA's code generation
is capped at AVX2, OpenBLAS uses its Haswell kernels), so that one machine measures both. Each report
says which target it ran on (:func:`machine_target`).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import zlib
from functools import cache

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time, machine_target

__all__ = ["Benchmark", "BenchReport", "Target", "best_time", "machine_target", "benchmarks", "run", "ISAS",
           "isa_environment"]


@cache
def benchmarks() -> dict[str, Benchmark]:
    """Every benchmark by name: the ``BENCHMARK`` each module of this package declares (modules that
    declare none, such as the anchors' helpers, are not benchmarks)."""
    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        declared = getattr(module, "BENCHMARK", None)
        if declared is None:
            continue
        if not isinstance(declared, Benchmark):
            raise TypeError(f"{module.__name__}.BENCHMARK must be a dyntools.bench.report.Benchmark, "
                            f"got {type(declared).__name__}")
        if declared.name in found:
            raise RuntimeError(f"two benchmarks named {declared.name!r} ({module.__name__})")
        found[declared.name] = declared
    # name order, benchmarks whose children compile from empty caches last (see Benchmark)
    return dict(sorted(found.items(), key=lambda item: (item[1].compiles_in_children, item[0])))


#: instruction sets a benchmark can be restricted to (``--isa``)
ISAS = ("native", "avx2")


#: LLVM features of an AVX2 + FMA processor (Haswell). ``NUMBA_CPU_NAME=haswell`` alone is not enough:
#: numba then still passes the host's features (``+avx512f`` …) to LLVM, which emits zmm code (measured)
HASWELL_FEATURES = ",".join(["+64bit", "+avx", "+avx2", "+bmi", "+bmi2", "+cmov", "+cx16", "+f16c", "+fma",
                             "+fsgsbase", "+lzcnt", "+movbe", "+pclmul", "+popcnt", "+rdrnd", "+sahf", "+sse",
                             "+sse2", "+sse3", "+sse4.1", "+sse4.2", "+ssse3", "+xsave", "+xsaveopt", "-avx512f",
                             "-avx512bw", "-avx512cd", "-avx512dq", "-avx512vl"])


def isa_environment(isa: str, cache_dir: str) -> dict[str, str]:
    """Environment variables that restrict a benchmark process to ``isa`` (``avx2``: numba compiles for
    Haswell — AVX2 and FMA, no AVX-512 — with 256-bit panels; XLA's code generation capped at AVX2;
    OpenBLAS's Haswell kernels, so that the arithmetic floor is an AVX2 machine's floor; numba's cache
    in ``cache_dir``, apart from the native one). ``native``: none."""
    if isa == "native":
        return {}
    xla = " ".join(f for f in (os.environ.get("XLA_FLAGS", ""), "--xla_cpu_max_isa=AVX2") if f)
    return {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": HASWELL_FEATURES, "DYNTOOLS_VECTOR_BITS": "256",
            "XLA_FLAGS": xla,
            "OPENBLAS_CORETYPE": "Haswell", "NUMBA_CACHE_DIR": cache_dir}


def _run_restricted(name: str, quick: bool, isa: str) -> BenchReport:
    """Benchmark ``name`` in a subprocess restricted to ``isa`` (:func:`isa_environment`); numba's cache
    for it is kept between runs in the temporary directory, one per isa and checkout."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cache = os.path.join(tempfile.gettempdir(), f"dyntools-numba-{isa}-{zlib.crc32(root.encode()):08x}")
    from dyntools.child import environment

    env = environment(**isa_environment(isa, cache))
    cmd = [sys.executable, "-m", "dyntools", "bench", name, "--json", *(["--quick"] if quick else [])]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"bench {name} restricted to {isa} failed: {run.stderr.strip()[-500:]}")
    (report,) = [BenchReport.from_dict(d) for d in json.loads(run.stdout)["benchmarks"]]
    report.isa = isa
    report.name = f"{name} [{isa}]"
    return report


def run(names: list[str], quick: bool = False, isas: tuple[str, ...] = ("native",)) -> list[BenchReport]:
    """The reports of the benchmarks ``names`` (all if empty), each on every instruction set of ``isas``."""
    from dyntools import validation

    known = benchmarks()
    names = names or list(known)
    for n in names:
        validation.one_of("benchmark", n, tuple(known))
    if not isas:
        raise ValueError(f"Invalid isa: empty (a comma-separated list of {', '.join(ISAS)})")
    for isa in isas:
        validation.one_of("isa", isa, ISAS)
    return [known[n].run(quick) if isa == "native" else _run_restricted(n, quick, isa)
            for n in names for isa in isas]
