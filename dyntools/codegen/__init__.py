"""Code generation from sympy: exact derivatives of a user's model (:mod:`~dyntools.codegen.derive`),
numba kernels and their NumPy twins printed from the same expressions (:mod:`~dyntools.codegen.kernels`),
and the on-disk cache of the generated modules keyed by the expression (:mod:`~dyntools.codegen.cache`).

It sits below the models (``dyntools.models.symbolic`` uses it) and imports nothing above the helpers.
"""

from dyntools.numba_errors import install as _install_numba_errors

_install_numba_errors()   # before this package's first compile: see dyntools.numba_errors
