"""STAND-IN (branch w47b) for the compiled representation of a set of runs' optimizers: w47a's file replaces it.

It implements the shared interface the training loops code to, by wrapping today's fused kernels
(:func:`dyntools.optim.kernels.fused_step` and its twin): :func:`compile_runs` turns the ``G`` runs'
optimizers into one :class:`CompiledRuns`, whose ``step(run, θ, g, state, t, lr_t, hps)`` moves θ and the
path's optimizer state in place by the optimizer of run ``run`` (``t`` 1-based, ``g`` read only). Here
``hps[run, 0]`` is the run's fused-kernel code and ``hps[run, 1:]`` its hyperparameters — a layout no loop reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from dyntools.optim import kernels
from dyntools.optim import optimizers as O


@njit(cache=True, error_model="numpy", inline="always")
def step(run, theta, grad, state, t, lr_t, hps):
    """θ and ``state`` after one step of run ``run``'s optimizer on gradient ``grad`` at rate ``lr_t``
    (:func:`dyntools.optim.kernels.fused_step` with the run's code ``hps[run, 0]`` and row ``hps[run, 1:]``)."""
    kernels.fused_step(int(hps[run, 0]), hps[run, 1:], theta, grad, state, t, lr_t)


def step_np(run, theta, grad, state, t, lr_t, hps):
    """NumPy twin of :func:`step` (:func:`dyntools.optim.kernels.fused_step_np`: the same arithmetic; a power or
    square root may round differently from the compiled kernel's in the last bit, as with today's kernels)."""
    kernels.fused_step_np(int(hps[run, 0]), hps[run, 1:], theta, grad, state, t, lr_t)


def _plain_sgd(opt: O.Optimizer) -> bool:
    """SGD without momentum, weight decay or per-parameter decay weights: θ ← θ − lr_t g."""
    return (opt.fused and opt.precond == O.SGD_MOMENTUM and opt.hparams[3] == 0.0
            and opt.hparams[2] == O.NO_DECAY and "decay_weights" not in opt.options)


@dataclass(frozen=True)
class CompiledRuns:
    """The optimizers of ``G`` runs as one compiled step (see the module docstring)."""

    opts: tuple
    step: Callable
    step_np: Callable
    hps: np.ndarray                 # float64[G, H], one row per run
    n_slots: int                    # rows K of one path's state
    plain_sgd: tuple                # per run: θ ← θ − lr_t g (no momentum, no decay)

    def initial_state(self, run: int, n_params: int) -> np.ndarray:
        """float64[K, n_params]: the zero state of run ``run`` (AdaGrad's accumulator at its start; decay
        weights and groups where the optimizer has them)."""
        state = kernels.init_state(self.opts[run], n_params)
        if state.shape[0] != self.n_slots:
            raise ValueError(f"Invalid optimizers: run {run} keeps {state.shape[0]} state rows, the others "
                             f"{self.n_slots} (runs with and without per-parameter decay cannot train together)")
        return state


def compile_runs(opts: Sequence[O.Optimizer]) -> CompiledRuns:
    """One :class:`CompiledRuns` for the runs' optimizers (an optimizer without a fused kernel gets a zero row:
    the trainer steps its chain from Python)."""
    opts = tuple(opts)
    hps = np.zeros((len(opts), 1 + O.N_HPARAMS))
    for g, o in enumerate(opts):
        if o.fused:
            hps[g, 0] = o.precond
            hps[g, 1:] = o.hparams
    n_slots = O.N_SLOTS + 2 if any("decay_weights" in o.options for o in opts) else O.N_SLOTS
    return CompiledRuns(opts, step, step_np, np.ascontiguousarray(hps), n_slots,
                        tuple(_plain_sgd(o) for o in opts))
