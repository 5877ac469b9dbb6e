"""Loops that move parameters: SGD/GD runners and SDE integrators."""

from dyntools.numba_errors import install as _install_numba_errors

_install_numba_errors()   # before this package's first compile: see dyntools.numba_errors
