"""dyntools: theory and dynamics of optimization in deep learning.

Symbolic derivations checked by a machine (:mod:`dyntools.symbolic`, ``proofs/``), numba
simulators of the stochastic dynamics (:mod:`dyntools.dynamics`, :mod:`dyntools.models`),
optimizers with PyTorch semantics (:mod:`dyntools.optim`), and figures (:mod:`dyntools.plots`).
"""

__version__ = "0.1.0"

from dyntools.engine.result import RunResult  # noqa: E402
from dyntools.store import load, save  # noqa: E402

__all__ = ["RunResult", "load", "save", "__version__"]
