"""The library's optimizers on sympy symbols: proofs about the code that runs.

:func:`unroll` takes an optimizer built by :mod:`dyntools.optim` (``optim.adamw(...)``), lifts its
hyperparameters to sympy symbols (:func:`lift`) and runs *the same* chain of transforms
(:mod:`dyntools.optim.transforms`) on NumPy object arrays of sympy expressions. The result is the
exact symbolic iterates

    θ_t = θ_{t−1} − η m_t u_t,   (u_t, state_t) = chain.update(g_t, state_{t−1}, θ_{t−1}, t, η m_t)

so a claim derived from ``unroll(...)`` is a claim about the update rule the simulators execute:
moving ``add_decay`` in a chain, or changing a transform's arithmetic, changes the unrolled
iterates and the proofs built on them.

Hyperparameters are lifted by field name: a non-zero float becomes a positive symbol (``lr`` → η,
``weight_decay`` → λ, ``momentum`` → μ, ``dampening`` → τ, ``b1``/``b2`` → β₁/β₂, ``alpha`` → α,
``eps`` → ε, ``lr_decay`` → δ, ``l1_ratio`` → ρ, ``initial_accumulator_value`` → G₀); a zero stays
the exact integer 0 (a zero weight decay or dampening is a structural choice, not a number to
vary); ``exact=True`` turns every float into its exact rational instead; ``symbols={"eps": 0}``
overrides one field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

#: field name → symbol name of the lifted hyperparameter
SYMBOL_NAMES = {
    "lr": "eta",
    "weight_decay": "lambda",
    "l1_ratio": "rho",
    "momentum": "mu",
    "dampening": "tau",
    "b1": "beta_1",
    "b2": "beta_2",
    "alpha": "alpha",
    "eps": "epsilon",
    "lr_decay": "delta",
    "initial_accumulator_value": "G_0",
}


def hyper_symbol(field_name: str) -> sp.Symbol:
    """The positive symbol a hyperparameter field is lifted to (``lr`` → ``eta``, ...)."""
    return sp.Symbol(SYMBOL_NAMES.get(field_name, field_name), positive=True)


def _lift_value(name: str, value, symbols: dict, exact: bool, used: dict):
    if name in symbols:
        used[name] = sp.sympify(symbols[name])
        return used[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        return value
    if value == 0:
        return sp.Integer(0)
    if exact:
        return sp.Rational(str(float(value)))
    used[name] = hyper_symbol(name)
    return used[name]


def lift(optimizer, *, symbols: dict | None = None, exact: bool = False):
    """``(chain, lr, used)``: the optimizer's chain with every numeric hyperparameter lifted (see
    the module docstring), its learning rate, and the mapping field name → symbol/value used."""
    from dyntools.optim import transforms as T

    symbols = dict(symbols or {})
    used: dict = {}

    def lift_transform(tr):
        if isinstance(tr, T.chain):
            return T.chain(*(lift_transform(x) for x in tr.transforms))
        changes = {f.name: _lift_value(f.name, getattr(tr, f.name), symbols, exact, used)
                   for f in dataclasses.fields(tr)}
        return dataclasses.replace(tr, **changes)

    chain = lift_transform(optimizer.chain)
    lr = _lift_value("lr", optimizer.lr, symbols, exact, used)
    unknown = set(symbols) - set(used)
    if unknown:
        raise ValueError(f"symbols: no hyperparameter named {', '.join(sorted(unknown))} in {optimizer.name}")
    return chain, lr, used


def _obj(values) -> np.ndarray:
    return np.array(list(values), dtype=object)


@dataclass
class Unrolled:
    """Exact iterates of an optimizer: ``iterates[t]`` is θ_t (a sympy column Matrix), ``updates[t−1]``
    the direction u_t, ``grads[t−1]`` the gradient g_t fed at step t, ``hyper`` the lifted
    hyperparameters (field name → symbol), ``chain`` the transform names."""

    iterates: list
    updates: list
    grads: list
    states: list
    hyper: dict
    chain: list

    def theta(self, t: int):
        """θ_t: a scalar for one coordinate, else a column Matrix."""
        x = self.iterates[t]
        return x[0] if x.shape == (1, 1) else x


def _as_vector(x, dim: int) -> np.ndarray:
    if isinstance(x, sp.MatrixBase):
        return _obj(x)
    if isinstance(x, (list, tuple, np.ndarray)):
        return _obj(np.asarray(x, dtype=object).ravel())
    return _obj([x] * dim)


def default_params(dim: int) -> list:
    """θ₀: ``theta_0`` (one coordinate) or ``theta_{0,1}, …, theta_{0,d}``."""
    if dim == 1:
        return [sp.Symbol("theta_0", real=True)]
    return [sp.Symbol(f"theta_{{0,{j}}}", real=True) for j in range(1, dim + 1)]


def default_grad(t: int, dim: int) -> list:
    """g_t: ``g_t`` (one coordinate) or ``g_{t,1}, …, g_{t,d}`` (real symbols)."""
    if dim == 1:
        return [sp.Symbol(f"g_{t}", real=True)]
    return [sp.Symbol(f"g_{{{t},{j}}}", real=True) for j in range(1, dim + 1)]


def step(chain, lr, theta, grad, state, t, multiplier=1):
    """One step of a (lifted) chain: ``(θ_t, u_t, state_t)`` from θ_{t−1}, g_t and state_{t−1}.

    ``t`` may be symbolic (e.g. ``s + 1`` with ``s`` a positive integer symbol for "any t ≥ 2"): the
    transforms only use it in powers and in the test ``t == 1``, which is False for such a ``t``."""
    from dyntools.optim import transforms as T

    theta = _obj(theta)
    lr_t = lr * multiplier
    u, state = chain.update(_obj(grad), state, theta, t, lr_t)
    return T.apply(theta, u, lr_t), u, state


def unroll(
    optimizer,
    steps: int,
    *,
    params: Sequence | None = None,
    grads: Callable | Sequence | None = None,
    dim: int = 1,
    symbols: dict | None = None,
    exact: bool = False,
    multipliers: Sequence | None = None,
) -> Unrolled:
    """The exact symbolic iterates θ_0, …, θ_steps of ``optimizer`` (a :mod:`dyntools.optim`
    optimizer) run by its own chain of transforms.

    ``params`` is θ₀ (default symbols ``theta_0`` / ``theta_{0,j}``). ``grads`` gives g_t: a
    sequence (one entry per step, each a scalar or a length-``dim`` sequence), a callable
    ``grads(theta, t)`` of the current iterate (e.g. the gradient of a loss, so that the L2
    penalty can be added by hand: ``lambda th, t: g[t] + lam * th``), or None for free symbols
    ``g_t`` / ``g_{t,j}``. ``multipliers`` are the schedule factors m_t (default 1).

    Parameters
    ----------
    optimizer : Optimizer
        A :mod:`dyntools.optim` optimizer.
    steps : int
        The number of steps (≥ 0).
    params : sequence, optional
        θ₀.
    grads : callable or sequence, optional
        The gradients g_t.
    dim : int, default 1
        The length of θ when ``params`` is not given.
    symbols : dict, optional
        Field name → symbol or value for the lifted hyperparameters (e.g. ``{"eps": 0}``).
    exact : bool, default False
        Turn every float hyperparameter into its exact rational instead of a symbol.
    multipliers : sequence, optional
        The schedule's factors m_t.

    Returns
    -------
    Unrolled
        The iterates and the symbols used.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"Invalid steps: {steps!r} (must be an integer >= 0)")
    chain, lr, used = lift(optimizer, symbols=symbols, exact=exact)
    theta = _as_vector(params, dim) if params is not None else _obj(default_params(dim))
    dim = theta.size
    state = chain.init(theta)
    iterates, updates, fed, states = [sp.Matrix(list(theta))], [], [], [state]
    for t in range(1, steps + 1):
        if grads is None:
            g = _obj(default_grad(t, dim))
        elif callable(grads):
            arg = theta[0] if dim == 1 else sp.Matrix(list(theta))
            g = _as_vector(grads(arg, t), dim)
        else:
            g = _as_vector(grads[t - 1], dim)
        m = 1 if multipliers is None else sp.sympify(multipliers[t - 1])
        theta, u, state = step(chain, lr, theta, g, state, t, m)
        iterates.append(sp.Matrix(list(theta)))
        updates.append(sp.Matrix(list(u)))
        fed.append(sp.Matrix(list(g)))
        states.append(state)
    return Unrolled(iterates, updates, fed, states, used, list(chain.names()))
