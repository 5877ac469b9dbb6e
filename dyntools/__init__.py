"""dyntools: theory and dynamics of optimization in deep learning.

Symbolic derivations checked by a machine (:mod:`dyntools.symbolic`, ``proofs/``), numba
simulators of the stochastic dynamics (:mod:`dyntools.dynamics`, :mod:`dyntools.models`),
optimizers with PyTorch semantics (:mod:`dyntools.optim`), and figures (:mod:`dyntools.plots`).
"""

__version__ = "0.1.0"

from dyntools.result import RunResult  # noqa: E402
from dyntools.store import load, save  # noqa: E402

__all__ = ["RunResult", "load", "save", "__version__"]


# ---- dyntools.prove (issue #15): a lazy entry point, so `import dyntools` does not import sympy ----
def prove(claims, **kwargs):
    """Check your own claims: ``dyntools.prove([Claim, ...])`` runs them (points and an exact
    counterexample search first, then exact simplification, each claim under a time budget) and
    returns a report whose ``str()`` is the verdict table of ``dyntools prove``
    (see :func:`dyntools.symbolic.api.prove`)."""
    from dyntools.symbolic.api import prove as _prove

    return _prove(claims, **kwargs)


__all__ += ["prove"]
# ---- end of dyntools.prove ----
