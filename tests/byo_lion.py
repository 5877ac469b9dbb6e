"""A user's Lion optimizer (Chen et al. 2023) written as a dyntools.optim chain — the test fixture of
tests/test_byo_optimizer.py (and the module a sweep names as ``tests.byo_lion:lion``).

    c_t = β₁ m + (1 − β₁) g,   u = sign(c_t),   m ← β₂ m + (1 − β₂) g,   θ ← θ − η (u + λθ)
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

from dyntools.optim import Optimizer
from dyntools.optim import transforms as T


@dataclass(frozen=True)
class scale_by_lion(T.Transform):
    b1: float = 0.9
    b2: float = 0.99

    def init(self, params):
        return np.zeros((1, params.shape[0]))

    def update(self, u, state, params, t, lr_t):
        m = state[0]
        direction = np.sign(self.b1 * m + (1 - self.b1) * u)
        return direction, (self.b2 * m + (1 - self.b2) * u)[None, :]


@njit(cache=True)
def _lion_kernel(u, state, params, t, lr_t, hp):
    b1, b2 = hp[0], hp[1]
    for i in range(u.shape[0]):
        g = u[i]
        u[i] = np.sign(b1 * state[0, i] + (1 - b1) * g)
        state[0, i] = b2 * state[0, i] + (1 - b2) * g


@dataclass(frozen=True)
class scale_by_lion_compiled(scale_by_lion):
    """The same transform with a compiled step (dyntools.optim.chain_step)."""

    def compiled(self):
        return _lion_kernel, np.array([self.b1, self.b2])


@dataclass(frozen=True)
class scale_by_lion_fused(scale_by_lion):
    """The same transform with its compiled update for one coordinate (dyntools.optim.transforms.ElementUpdate):
    fused by dyntools.optim.compiled into the one loop of the chain, like the built-in transforms."""

    def element_update(self):
        return T.ElementUpdate(key=(), values=(self.b1, self.b2), slots=1, setup="b1$j, b2$j = $h0, $h1",
                               element="m$j = state[$s0$i]\n"
                                       "state[$s0$i] = b2$j * m$j + (1 - b2$j) * u\n"
                                       "u = np.sign(b1$j * m$j + (1 - b1$j) * u)")


def lion(lr=1e-4, weight_decay=0.0, betas=(0.9, 0.99), compiled=False):
    """Lion as a chain; ``compiled``: False (update() only), True (a whole-array kernel, compiled()) or
    "element" (an element update, fused into the chain's loop)."""
    core = {False: scale_by_lion, True: scale_by_lion_compiled, "element": scale_by_lion_fused}[compiled](*betas)
    parts = [core] + ([T.add_decay(weight_decay)] if weight_decay else [])
    return Optimizer("lion", lr, T.chain(*parts))


def lion_reference(theta, grads, lr, weight_decay, b1=0.9, b2=0.99):
    """Lion from its equations, one full-batch gradient function ``grads(θ)`` per step (plain NumPy)."""
    m = np.zeros_like(theta)
    thetas = [theta.copy()]
    for g in grads:
        gt = g(theta)
        u = np.sign(b1 * m + (1 - b1) * gt)
        theta = theta - lr * (u + weight_decay * theta)
        m = b2 * m + (1 - b2) * gt
        thetas.append(theta.copy())
    return thetas
