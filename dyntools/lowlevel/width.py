"""The width of the vectors the low-level kernels are written for.

512 bits on processors with AVX-512, else 256 (AVX2 has 16 vector registers: a panel's accumulators of
512 bits each would not fit); ``DYNTOOLS_VECTOR_BITS`` (128, 256 or 512) overrides it — for tests of the
narrower panels on a wide machine, and for benchmarks of an AVX2 processor on an AVX-512 one. Read once,
when this module is imported: numba's on-disk cache keeps what was compiled before (clear it, or point
``NUMBA_CACHE_DIR`` elsewhere).
"""

from __future__ import annotations

import os


def _vector_bits() -> int:
    forced = os.environ.get("DYNTOOLS_VECTOR_BITS")
    if forced:
        if forced not in ("128", "256", "512"):
            raise ValueError(f"Invalid DYNTOOLS_VECTOR_BITS: {forced!r} (128, 256 or 512)")
        return int(forced)
    try:
        from llvmlite.binding import get_host_cpu_features

        return 512 if get_host_cpu_features().get("avx512f") else 256
    except Exception:                                 # no feature list on this platform or llvmlite
        return 256


#: bits of the vectors the panels are written in, and their bytes
VECTOR_BITS = _vector_bits()
VECTOR_BYTES = VECTOR_BITS // 8


def lanes(itemsize: int) -> int:
    """Entries of one vector (:data:`VECTOR_BITS`) for a float of ``itemsize`` bytes (at 512 bits:
    8 float64, 16 float32)."""
    return VECTOR_BITS // (8 * itemsize)
