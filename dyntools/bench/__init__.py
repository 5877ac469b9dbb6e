"""``dyntools bench``: each fast kernel against its baseline, both timed in the same process.

``BENCHMARKS`` maps a name to a module with ``run(quick: bool) -> BenchReport``. A report holds
measurements (seconds, rates) and *targets* — each a ratio or rate with the goal it must reach —
so the output says plainly which performance claims hold on this machine today.

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
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

BENCHMARKS: dict[str, str] = {
    "stabilization": "dyntools.bench.stabilization",
    "relu": "dyntools.bench.relu",
    "sweep": "dyntools.bench.sweep",
    "sde": "dyntools.bench.sde",
    "diag-net": "dyntools.bench.diag_net",
    "voronoi": "dyntools.bench.voronoi",
    "deep-nets": "dyntools.bench.deep_nets",
    "gallery": "dyntools.bench.gallery",
    "symbolic-model": "dyntools.bench.symbolic_model",
    "image-epoch": "dyntools.bench.image_epoch",
    "cold-start": "dyntools.bench.cold_start",
}


@dataclass
class Target:
    name: str
    value: float
    goal: float
    higher_is_better: bool = True
    unit: str = "x"

    @property
    def met(self) -> bool:
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "goal": self.goal, "unit": self.unit,
                "higher_is_better": self.higher_is_better, "met": self.met}


@dataclass
class BenchReport:
    name: str
    measurements: dict[str, float] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: former names of targets (old name → current name), kept in the JSON so that readers of an older
    #: name still find it: each is listed again under its old name, with ``"alias_of"``
    aliases: dict[str, str] = field(default_factory=dict)
    #: the instruction set it was restricted to (``native``: none) and :func:`machine_target`
    isa: str = "native"
    target: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        targets = [t.as_dict() for t in self.targets]
        by_name = {t["name"]: t for t in targets}
        targets += [{**by_name[new], "name": old, "alias_of": new} for old, new in self.aliases.items()
                    if new in by_name]
        return {"name": self.name, "measurements": self.measurements, "targets": targets, "notes": self.notes,
                "cpu_count": os.cpu_count(), "isa": self.isa, "target": self.target or machine_target()}

    @classmethod
    def from_dict(cls, d: dict) -> BenchReport:
        """The report of :meth:`as_dict` (aliases dropped: they are listed among its targets)."""
        targets = [Target(t["name"], t["value"], t["goal"], t["higher_is_better"], t["unit"])
                   for t in d["targets"] if "alias_of" not in t]
        return cls(d["name"], dict(d["measurements"]), targets, list(d["notes"]), isa=d.get("isa", "native"),
                   target=dict(d.get("target", {})))


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


def machine_target() -> dict:
    """What this process compiles for: numba's CPU name, the low-level kernels' vector bits and kind,
    OpenBLAS's kernels (core type)."""
    from numba import config

    from dyntools.engine.result import lowlevel_kernels
    from dyntools.lowlevel.width import VECTOR_BITS

    try:
        from llvmlite.binding import get_host_cpu_name

        host = get_host_cpu_name()
    except Exception:                                 # no name on this platform
        host = "unknown"
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i.get('internal_api')} {i.get('architecture', '?')}" for i in threadpool_info()
                         if i.get("user_api") == "blas") or "none loaded"
    except ImportError:
        blas = "unknown (threadpoolctl not installed)"
    return {"numba cpu": config.CPU_NAME or f"host ({host})", "vector bits": VECTOR_BITS,
            "lowlevel": lowlevel_kernels(), "blas": blas}


def _run_restricted(name: str, quick: bool, isa: str) -> BenchReport:
    """Benchmark ``name`` in a subprocess restricted to ``isa`` (:func:`isa_environment`); numba's cache
    for it is kept between runs in the temporary directory, one per isa and checkout."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cache = os.path.join(tempfile.gettempdir(), f"dyntools-numba-{isa}-{zlib.crc32(root.encode()):08x}")
    env = {**os.environ, **isa_environment(isa, cache)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "dyntools", "bench", name, "--json", *(["--quick"] if quick else [])]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"bench {name} restricted to {isa} failed: {run.stderr.strip()[-500:]}")
    (report,) = [BenchReport.from_dict(d) for d in json.loads(run.stdout)["benchmarks"]]
    report.isa = isa
    report.name = f"{name} [{isa}]"
    return report


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls (the first call is not special: warm up before)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(names: list[str], quick: bool = False, isas: tuple[str, ...] = ("native",)) -> list[BenchReport]:
    """The reports of the benchmarks ``names`` (all if empty), each on every instruction set of ``isas``."""
    from dyntools import validation

    names = names or list(BENCHMARKS)
    for n in names:
        validation.one_of("benchmark", n, tuple(BENCHMARKS))
    if not isas:
        raise ValueError(f"Invalid isa: empty (a comma-separated list of {', '.join(ISAS)})")
    for isa in isas:
        validation.one_of("isa", isa, ISAS)
    return [importlib.import_module(BENCHMARKS[n]).run(quick) if isa == "native" else _run_restricted(n, quick, isa)
            for n in names for isa in isas]
