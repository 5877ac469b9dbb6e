"""One optimizer's compiled step as the training loops run it (:func:`dyntools.optim.compiled.compile_runs`), with
the call shape the tests use: ``init_state(opt, n)`` then ``step(opt, θ, g, state, t, multiplier)`` in place."""

import numpy as np

from dyntools.optim.compiled import compile_runs

_RUNS: dict = {}


def compiled(opt):
    """``opt``'s :class:`~dyntools.optim.compiled.CompiledRuns` (built once per optimizer object)."""
    if id(opt) not in _RUNS:
        _RUNS[id(opt)] = (opt, compile_runs([opt]))     # the optimizer kept alive, so its id is not reused
    return _RUNS[id(opt)][1]


def init_state(opt, n_params: int) -> np.ndarray:
    """The zero state of ``opt`` for ``n_params`` parameters (float64[n_slots, n_params])."""
    return compiled(opt).initial_state(0, n_params)


def step(opt, theta: np.ndarray, g: np.ndarray, state: np.ndarray, t: int, multiplier: float = 1.0) -> None:
    """One compiled step of ``opt`` in place: ``θ ← θ − lr·multiplier·u``."""
    cr = compiled(opt)
    cr.step(0, theta, g, state, int(t), opt.lr * multiplier, cr.hps)


def step_np(opt, theta: np.ndarray, g: np.ndarray, state: np.ndarray, t: int, multiplier: float = 1.0) -> None:
    """The NumPy twin of :func:`step`."""
    cr = compiled(opt)
    cr.step_np(0, theta, g, state, int(t), opt.lr * multiplier, cr.hps)
