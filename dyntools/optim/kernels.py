"""The optimizer chains fused into one numba loop, for use inside compiled simulators.

``fused_step(precond, hp, theta, g, state, t, lr_t)`` performs, element by element and with
the same arithmetic in the same order as the readable chain of
:mod:`dyntools.optim.transforms`::

    d = λ((1 − ρ) θ + ρ sign θ)              (the decay direction)
    u = g + d            if where = coupled    (decay *before* the preconditioner)
    u = P_t(u)                                 (momentum / Adam / AdaGrad / RMSProp / bias-corrected RMSProp)
    u = u + d            if where = decoupled  (decay *after* the preconditioner)
    θ ← θ − lr_t u

``hp = [λ, ρ, where, a, b, c, d, e]`` and ``precond`` come from
:class:`dyntools.optim.optimizers.Optimizer`; ``state`` is a ``float64[3, P]`` array of slots
(momentum buffer / first moment, second moment, AMSGrad maximum or centered mean), zero at the
start except AdaGrad's accumulator (:func:`init_state`). ``t`` is 1-based.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.optim import optimizers as O


def init_state(opt: O.Optimizer, n_params: int) -> np.ndarray:
    """The zero state of ``opt`` for ``n_params`` parameters (AdaGrad's accumulator at its start)."""
    if "decay_weights" in opt.options:
        return _grouped_state(opt, n_params)
    state = np.zeros((O.N_SLOTS, n_params))
    if opt.precond == O.ADAGRAD:
        state[0] = opt.hparams[4]
    return state


def _grouped_state(opt: O.Optimizer, n_params: int) -> np.ndarray:
    """State of an optimizer with per-parameter decay (:mod:`dyntools.optim.decay_groups`): the
    usual slots, then the decay weights (row 3) and the group indices (row 4)."""
    w, g = opt.options["decay_weights"], opt.options["decay_groups"]
    if len(w) != n_params:
        raise ValueError(f"Invalid weights: {len(w)} decay weights for {n_params} parameters")
    state = np.zeros((O.N_SLOTS + 2, n_params))
    state[O.N_SLOTS] = w
    state[O.N_SLOTS + 1] = g
    return state


@njit(inline="always")
def _decay(hp, th):
    if hp[1] == 0.0:
        return hp[0] * th
    return hp[0] * ((1.0 - hp[1]) * th + hp[1] * np.sign(th))


@njit(inline="always")
def _lerp(a, b, w):
    if w < 0.5:
        return a + w * (b - a)
    return b - (b - a) * (1.0 - w)


@njit(inline="always")
def _pre(hp, where, th, g):
    return g + _decay(hp, th) if where == 1 else g


@njit(inline="always")
def _post(hp, where, th, u, lr_t):
    return th - lr_t * (u + _decay(hp, th)) if where == 2 else th - lr_t * u


@njit(cache=True, error_model="numpy")
def fused_step(precond, hp, theta, g, state, t, lr_t):
    """One optimizer step in place on ``theta`` and ``state`` (see the module docstring).

    One branch-free loop per preconditioner, so that the compiler can vectorize it. A state with
    more than the three slots carries per-parameter decay weights and groups: :func:`_adam_grouped`.
    """
    if state.shape[0] > 3:
        _adam_grouped(hp, theta, g, state, t, lr_t)
        return
    where = int(hp[2])
    n = theta.shape[0]
    a, b, c, d = hp[3], hp[4], hp[5], hp[6]
    if precond == 0:  # SGD momentum a=μ, b=τ, c=nesterov
        if a == 0.0:
            for i in range(n):
                th = theta[i]
                theta[i] = _post(hp, where, th, _pre(hp, where, th, g[i]), lr_t)
        else:
            for i in range(n):
                th = theta[i]
                u = _pre(hp, where, th, g[i])
                buf = u if t == 1 else a * state[0, i] + (1.0 - b) * u
                state[0, i] = buf
                theta[i] = _post(hp, where, th, u + a * buf if c != 0.0 else buf, lr_t)
    elif precond == 1:  # Adam a=β1, b=β2, c=ε, d=amsgrad
        bc1 = 1.0 - a ** t
        bc2_sqrt = (1.0 - b ** t) ** 0.5
        w = 1.0 - a
        for i in range(n):
            th = theta[i]
            u = _pre(hp, where, th, g[i])
            m = _lerp(state[0, i], u, w)
            v = state[1, i] * b + (1.0 - b) * u * u
            state[0, i] = m
            state[1, i] = v
            if d != 0.0:
                v = max(state[2, i], v)
                state[2, i] = v
            theta[i] = _post(hp, where, th, (m / bc1) / (np.sqrt(v) / bc2_sqrt + c), lr_t)
    elif precond == 2:  # AdaGrad a=lr_decay, b=initial acc, c=ε
        clr = 1.0 + (t - 1) * a
        for i in range(n):
            th = theta[i]
            u = _pre(hp, where, th, g[i])
            acc = state[0, i] + u * u
            state[0, i] = acc
            theta[i] = _post(hp, where, th, (u / (np.sqrt(acc) + c)) / clr, lr_t)
    elif precond == 3:  # RMSprop a=α, b=ε, c=μ, d=centered
        for i in range(n):
            th = theta[i]
            u = _pre(hp, where, th, g[i])
            sq = state[0, i] * a + (1.0 - a) * u * u
            state[0, i] = sq
            if d != 0.0:
                ga = _lerp(state[1, i], u, 1.0 - a)
                state[1, i] = ga
                u = u / (np.sqrt(sq - ga * ga) + b)
            else:
                u = u / (np.sqrt(sq) + b)
            if c > 0.0:
                u = state[2, i] * c + u
                state[2, i] = u
            theta[i] = _post(hp, where, th, u, lr_t)
    else:  # bias-corrected RMSProp a=β2, b=ε
        bc2_sqrt = (1.0 - a ** t) ** 0.5
        for i in range(n):
            th = theta[i]
            u = _pre(hp, where, th, g[i])
            v = state[0, i] * a + (1.0 - a) * u * u
            state[0, i] = v
            theta[i] = _post(hp, where, th, u / (np.sqrt(v) / bc2_sqrt + b), lr_t)


@njit(cache=True, error_model="numpy")
def _adam_grouped(hp, theta, g, state, t, lr_t):
    """Adam with decoupled decay weighted per parameter (:mod:`dyntools.optim.decay_groups`)::

        d_i = w_i λ ((1 − ρ) θ_i + ρ sign θ_i)            (hp[7] = 0)
        d_i = w_i λ min_{j ∈ G(i)} |θ_j| sign θ_i          (hp[7] = 1, "min")
        θ_i ← θ_i − lr_t (m̂_i / (√v̂_i + ε) + d_i)

    with ``w = state[3]`` and ``G = state[4]`` (group indices) and the minima taken before the step."""
    n = theta.shape[0]
    a, b, c = hp[3], hp[4], hp[5]
    lam = hp[0]
    bc1 = 1.0 - a ** t
    bc2_sqrt = (1.0 - b ** t) ** 0.5
    w1 = 1.0 - a
    use_min = hp[7] == 1.0
    n_groups = 1
    for i in range(n):
        n_groups = max(n_groups, int(state[4, i]) + 1)
    mins = np.full(n_groups, np.inf)
    if use_min:
        for i in range(n):
            k = int(state[4, i])
            mins[k] = min(mins[k], abs(theta[i]))
    for i in range(n):
        th = theta[i]
        m = _lerp(state[0, i], g[i], w1)
        v = state[1, i] * b + (1.0 - b) * g[i] * g[i]
        state[0, i] = m
        state[1, i] = v
        if use_min:
            dec = lam * (mins[int(state[4, i])] * np.sign(th))
        else:
            dec = _decay(hp, th)
        theta[i] = th - lr_t * ((m / bc1) / (np.sqrt(v) / bc2_sqrt + c) + state[3, i] * dec)


def step(opt: O.Optimizer, theta: np.ndarray, g: np.ndarray, state: np.ndarray, t: int,
         multiplier: float = 1.0) -> None:
    """Python convenience around :func:`fused_step` (in place)."""
    fused_step(opt.precond, opt.hparams, theta, g, state, int(t), opt.lr * multiplier)
