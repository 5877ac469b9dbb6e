"""The reference points several benchmarks measure against: the machine's matrix-product rate and JAX.

:func:`matmul_rate` is the float64/float32 GEMM flop rate with a pinned number of BLAS threads (in a child
process, where the thread count can still be set); :func:`jax_modules` gives JAX and optax when the
optional ``bench`` extra is installed. ``dyntools bench diag-net`` and ``dyntools bench sweep`` both use
them; neither benchmark imports the other.
"""

from __future__ import annotations

import os
import subprocess
import sys

_MATMUL_CODE = """
import time, numpy as np
n = {n}
a = np.random.default_rng(0).standard_normal((n, n)).astype("{dtype}"); b = a.T.copy()
a @ b
best = 1e9
for _ in range(3):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
print(2 * n**3 / best)
"""


def matmul_rate(threads: int = 1, n: int = 1000, dtype: str = "float64") -> float:
    """GEMM flop rate (flops/s, ``dtype``) with ``threads`` BLAS threads, measured in a child process."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", _MATMUL_CODE.format(n=n, dtype=dtype)], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip())


def jax_modules():
    """``(jax, jnp, optax)`` or None when jax/optax are not installed (the optional ``bench`` extra)."""
    try:
        import jax
        import jax.numpy as jnp
        import optax
    except ImportError:
        return None
    return jax, jnp, optax
