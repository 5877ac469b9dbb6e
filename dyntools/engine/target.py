"""The compile target a result was computed on: what numba compiles for, and the package versions.

Floating point legitimately differs in the last bits between processors (FMA contraction, vector
width) and package versions, so a sweep whose cells were computed on different machines — resumed
elsewhere, or spread over a mixed Dask cluster — is bitwise reproducible cell by cell only on each
cell's own target. Each cell records :func:`compile_target`; :func:`summarize_targets` says whether a
sweep's cells share one (not an error when they do not: a statement in the summary).
"""

from __future__ import annotations

from functools import cache

#: The fields that identify a target (two cells with equal fields ran on the same one).
FIELDS = ("cpu_name", "cpu_features", "vector_bits", "numba", "llvmlite", "numpy")


@cache
def compile_target() -> dict[str, str]:
    """CPU name and features exactly as numba's JIT compiles for them (``NUMBA_CPU_NAME`` and
    ``NUMBA_CPU_FEATURES`` when set, else the host's — as numba's own codegen decides), the vector
    width of dyntools' panels when forced (``DYNTOOLS_VECTOR_BITS``, else ``"default"``: chosen from the
    features), and the numba, llvmlite and numpy versions."""
    import os

    import llvmlite
    import llvmlite.binding as llvm
    import numba
    import numpy
    from numba.core.codegen import get_host_cpu_features

    name = numba.config.CPU_NAME if numba.config.CPU_NAME is not None else llvm.get_host_cpu_name()
    features = numba.config.CPU_FEATURES if numba.config.CPU_FEATURES is not None else get_host_cpu_features()
    return {"cpu_name": str(name), "cpu_features": str(features),
            "vector_bits": os.environ.get("DYNTOOLS_VECTOR_BITS") or "default", "numba": numba.__version__,
            "llvmlite": llvmlite.__version__, "numpy": numpy.__version__}


def _key(target: dict) -> tuple:
    return tuple(str(target.get(f, "")) for f in FIELDS)


def summarize_targets(targets: list[dict | None]) -> dict:
    """``{"mixed": bool, "targets": [{...target, "cells": [indices]}], "unrecorded": [indices]}`` for the
    per-cell targets (``None``: a cell written before targets were recorded). ``mixed`` is true when the
    recorded cells come from more than one target."""
    groups: dict[tuple, dict] = {}
    unrecorded = []
    for i, t in enumerate(targets):
        if t is None:
            unrecorded.append(i)
            continue
        entry = groups.setdefault(_key(t), {**{f: str(t.get(f, "")) for f in FIELDS}, "cells": []})
        entry["cells"].append(i)
    return {"mixed": len(groups) > 1, "targets": list(groups.values()), "unrecorded": unrecorded}


def targets_sentence(summary: dict) -> str:
    """One clause for a sweep's message: empty for a uniform sweep, else which targets computed how many cells."""
    if not summary["mixed"]:
        return ""
    parts = [f"{len(t['cells'])} on {t['cpu_name']} (numba {t['numba']}, numpy {t['numpy']})"
             for t in summary["targets"]]
    return ("cells computed on different compile targets, bitwise reproducible per target only: "
            + ", ".join(parts))
