"""The optimizer chains fused into one numba loop, for use inside compiled simulators.

``fused_step(precond, hp, theta, g, state, t, lr_t)`` performs, element by element and with
the same arithmetic in the same order as the readable chain of
:mod:`dyntools.optim.transforms`::

    d = λ((1 − ρ) θ + ρ sign θ)              (the decay direction)
    u = g + d            if where = coupled    (decay *before* the preconditioner)
    u = P_t(u)                                 (momentum / Adam / AdaGrad / RMSProp / bias-corrected RMSProp)
    u = u + d            if where = decoupled  (decay *after* the preconditioner)
    θ ← θ − lr_t u

``hp = [λ, ρ, where, a, b, c, d, e, f]`` (``f = 1``: Adam without its bias corrections) and ``precond`` come from
:class:`dyntools.optim.optimizers.Optimizer`; ``state`` is a ``float64[3, P]`` array of slots
(momentum buffer / first moment, second moment, AMSGrad maximum or centered mean), zero at the
start except AdaGrad's accumulator (:func:`init_state`). ``t`` is 1-based.

With float32 parameters the step's scalars (rates, betas, bias corrections, decay) are rounded to float32
once (:func:`like`) and SGD, momentum and Adam compute element by element in float32, as PyTorch's
float32 optimizers do (AdaGrad and RMSProp widen their element operations to float64 and round back).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine.precision import like
from dyntools.optim import optimizers as O
from dyntools.optim.fuse import lerp as _lerp


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
def _decay_of(hp, theta):
    """``(λ, ρ, 1 − ρ)`` in the precision of ``theta``."""
    return like(theta, hp[0]), like(theta, hp[1]), like(theta, 1.0 - hp[1])


@njit(inline="always")
def _decay(dk, th):
    lam, rho, omr = dk
    if rho == 0.0:
        return lam * th
    return lam * (omr * th + rho * np.sign(th))


@njit(inline="always")
def _pre(dk, where, th, g):
    return g + _decay(dk, th) if where == 1 else g


@njit(inline="always")
def _post(dk, where, th, u, lr_t):
    return th - lr_t * (u + _decay(dk, th)) if where == 2 else th - lr_t * u


@njit(inline="always")
def _sgd_plain(hp, where, theta, g, lr_t):
    lr_t = like(theta, lr_t)
    if where == 0:                   # plain SGD, θ − lr_t g: the loop without branches vectorizes
        for i in range(theta.shape[0]):
            theta[i] = theta[i] - lr_t * g[i]
        return
    dk = _decay_of(hp, theta)
    for i in range(theta.shape[0]):
        th = theta[i]
        theta[i] = _post(dk, where, th, _pre(dk, where, th, g[i]), lr_t)


@njit(cache=True, error_model="numpy")
def _sgd_momentum(hp, where, theta, g, state, t, lr_t):
    a, omb, c = like(theta, hp[3]), like(theta, 1.0 - hp[4]), hp[5]
    lr_t = like(theta, lr_t)
    dk = _decay_of(hp, theta)
    for i in range(theta.shape[0]):
        th = theta[i]
        u = _pre(dk, where, th, g[i])
        buf = u if t == 1 else a * state[0, i] + omb * u
        state[0, i] = buf
        theta[i] = _post(dk, where, th, u + a * buf if c != 0.0 else buf, lr_t)


@njit(cache=True, error_model="numpy")
def _adam(hp, where, theta, g, state, t, lr_t):
    a, b, c, d = hp[3], hp[4], hp[5], hp[6]
    bc1 = like(theta, 1.0 - a ** t if hp[8] == 0.0 else 1.0)
    bc2_sqrt = like(theta, (1.0 - b ** t) ** 0.5 if hp[8] == 0.0 else 1.0)
    w, omw = like(theta, 1.0 - a), like(theta, 1.0 - (1.0 - a))
    b, omb, c = like(theta, b), like(theta, 1.0 - b), like(theta, c)
    lr_t = like(theta, lr_t)
    dk = _decay_of(hp, theta)
    if bc1 == 1.0:       # 1 − β₁ᵗ rounds to 1 (β₁ = 0.9: t > 349 in float64, t > 165 in float32): m / 1 = m
        _adam_elements(dk, where, theta, g, state, w, omw, b, omb, c, d, bc1, bc2_sqrt, lr_t, False)
    else:
        _adam_elements(dk, where, theta, g, state, w, omw, b, omb, c, d, bc1, bc2_sqrt, lr_t, True)


@njit(inline="always")
def _adam_elements(dk, where, theta, g, state, w, omw, b, omb, c, d, bc1, bc2_sqrt, lr_t, divide_m):
    """The element loop of :func:`_adam`; ``divide_m`` False skips the division of ``m`` by ``bc1 = 1``
    (exact: the same bits, one division of three fewer per parameter on a divider-bound loop)."""
    for i in range(theta.shape[0]):
        th = theta[i]
        u = _pre(dk, where, th, g[i])
        m = _lerp(state[0, i], u, w, omw)
        v = state[1, i] * b + omb * u * u
        state[0, i] = m
        state[1, i] = v
        if d != 0.0:
            v = max(state[2, i], v)
            state[2, i] = v
        mh = m / bc1 if divide_m else m
        theta[i] = _post(dk, where, th, mh / (np.sqrt(v) / bc2_sqrt + c), lr_t)


@njit(cache=True, error_model="numpy")
def _adagrad(hp, where, theta, g, state, t, lr_t):
    a, c = hp[3], hp[5]
    clr = 1.0 + (t - 1) * a
    dk = _decay_of(hp, theta)
    for i in range(theta.shape[0]):
        th = theta[i]
        u = _pre(dk, where, th, g[i])
        acc = state[0, i] + u * u
        state[0, i] = acc
        theta[i] = _post(dk, where, th, (u / (np.sqrt(acc) + c)) / clr, lr_t)


@njit(cache=True, error_model="numpy")
def _rmsprop(hp, where, theta, g, state, t, lr_t):
    a, b, c, d = hp[3], hp[4], hp[5], hp[6]
    dk = _decay_of(hp, theta)
    for i in range(theta.shape[0]):
        th = theta[i]
        u = _pre(dk, where, th, g[i])
        sq = state[0, i] * a + (1.0 - a) * u * u
        state[0, i] = sq
        if d != 0.0:
            ga = _lerp(state[1, i], u, 1.0 - a, 1.0 - (1.0 - a))
            state[1, i] = ga
            u = u / (np.sqrt(sq - ga * ga) + b)
        else:
            u = u / (np.sqrt(sq) + b)
        if c > 0.0:
            u = state[2, i] * c + u
            state[2, i] = u
        theta[i] = _post(dk, where, th, u, lr_t)


@njit(cache=True, error_model="numpy")
def _rmsprop_bc(hp, where, theta, g, state, t, lr_t):
    a, b = hp[3], hp[4]
    bc2_sqrt = (1.0 - a ** t) ** 0.5
    dk = _decay_of(hp, theta)
    for i in range(theta.shape[0]):
        th = theta[i]
        u = _pre(dk, where, th, g[i])
        v = state[0, i] * a + (1.0 - a) * u * u
        state[0, i] = v
        theta[i] = _post(dk, where, th, u / (np.sqrt(v) / bc2_sqrt + b), lr_t)


@njit(cache=True, error_model="numpy", inline="always")
def fused_step(precond, hp, theta, g, state, t, lr_t):
    """One optimizer step in place on ``theta`` and ``state`` (see the module docstring).

    One branch-free loop per preconditioner, each in its own small function: compiled inside one
    large function, the loops were neither unswitched nor vectorized (an SGD step on 181 parameters
    took ~10x longer). A state with more than the three slots carries per-parameter decay weights
    and groups: :func:`_adam_grouped`.
    """
    if state.shape[0] > 3:
        _adam_grouped(hp, theta, g, state, t, lr_t)
        return
    where = int(hp[2])
    if precond == 0:  # SGD momentum a=μ, b=τ, c=nesterov
        if hp[3] == 0.0:
            _sgd_plain(hp, where, theta, g, lr_t)
        else:
            _sgd_momentum(hp, where, theta, g, state, t, lr_t)
    elif precond == 1:  # Adam a=β1, b=β2, c=ε, d=amsgrad, hp[8]=1: no bias correction
        _adam(hp, where, theta, g, state, t, lr_t)
    elif precond == 2:  # AdaGrad a=lr_decay, b=initial acc, c=ε
        _adagrad(hp, where, theta, g, state, t, lr_t)
    elif precond == 3:  # RMSprop a=α, b=ε, c=μ, d=centered
        _rmsprop(hp, where, theta, g, state, t, lr_t)
    else:  # bias-corrected RMSProp a=β2, b=ε
        _rmsprop_bc(hp, where, theta, g, state, t, lr_t)


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
    dk = _decay_of(hp, theta)
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
        m = _lerp(state[0, i], g[i], w1, 1.0 - w1)
        v = state[1, i] * b + (1.0 - b) * g[i] * g[i]
        state[0, i] = m
        state[1, i] = v
        if use_min:
            dec = lam * (mins[int(state[4, i])] * np.sign(th))
        else:
            dec = _decay(dk, th)
        theta[i] = th - lr_t * ((m / bc1) / (np.sqrt(v) / bc2_sqrt + c) + state[3, i] * dec)


def step(opt: O.Optimizer, theta: np.ndarray, g: np.ndarray, state: np.ndarray, t: int,
         multiplier: float = 1.0) -> None:
    """Python convenience around :func:`fused_step` (in place)."""
    fused_step(opt.precond, opt.hparams, theta, g, state, int(t), opt.lr * multiplier)


# ------------------------------------------------------------------------------------ NumPy twin

def _decay_np(hp, th):
    if hp[1] == 0.0:
        return hp[0] * th
    return hp[0] * ((1.0 - hp[1]) * th + hp[1] * np.sign(th))


def _lerp_np(a, b, w):
    return a + w * (b - a) if w < 0.5 else b - (b - a) * (1.0 - w)


def fused_step_np(precond, hp, theta, g, state, t, lr_t):
    """NumPy twin of :func:`fused_step`: the same arithmetic on whole arrays (in place), so the same
    bits as the element-wise Python body; used by the NumPy twins of the training loops."""
    if state.shape[0] > 3:
        _adam_grouped_np(hp, theta, g, state, t, lr_t)
        return
    where = int(hp[2])
    a, b, c, d = hp[3], hp[4], hp[5], hp[6]
    th = theta.copy()
    u = g + _decay_np(hp, th) if where == 1 else g.copy()
    if precond == 0:
        if a != 0.0:
            buf = u if t == 1 else a * state[0] + (1.0 - b) * u
            state[0] = buf
            u = u + a * buf if c != 0.0 else buf
    elif precond == 1:
        bc1 = 1.0 - a ** t if hp[8] == 0.0 else 1.0
        bc2_sqrt = (1.0 - b ** t) ** 0.5 if hp[8] == 0.0 else 1.0
        m = _lerp_np(state[0], u, 1.0 - a)
        v = state[1] * b + (1.0 - b) * u * u
        state[0] = m
        state[1] = v
        if d != 0.0:
            v = np.where(v > state[2], v, state[2])      # Python's max(state, v)
            state[2] = v
        u = (m / bc1) / (np.sqrt(v) / bc2_sqrt + c)
    elif precond == 2:
        clr = 1.0 + (t - 1) * a
        acc = state[0] + u * u
        state[0] = acc
        u = (u / (np.sqrt(acc) + c)) / clr
    elif precond == 3:
        sq = state[0] * a + (1.0 - a) * u * u
        state[0] = sq
        if d != 0.0:
            ga = _lerp_np(state[1], u, 1.0 - a)
            state[1] = ga
            u = u / (np.sqrt(sq - ga * ga) + b)
        else:
            u = u / (np.sqrt(sq) + b)
        if c > 0.0:
            u = state[2] * c + u
            state[2] = u
    else:
        bc2_sqrt = (1.0 - a ** t) ** 0.5
        v = state[0] * a + (1.0 - a) * u * u
        state[0] = v
        u = u / (np.sqrt(v) / bc2_sqrt + b)
    theta[:] = th - lr_t * (u + _decay_np(hp, th)) if where == 2 else th - lr_t * u


def _adam_grouped_np(hp, theta, g, state, t, lr_t):
    """NumPy twin of :func:`_adam_grouped` (whole arrays, the same arithmetic)."""
    a, b, c = hp[3], hp[4], hp[5]
    th = theta.copy()
    bc1 = 1.0 - a ** t
    bc2_sqrt = (1.0 - b ** t) ** 0.5
    groups = state[4].astype(np.int64)
    if hp[7] == 1.0:
        mins = np.full(int(groups.max()) + 1, np.inf)
        np.minimum.at(mins, groups, np.abs(th))
        dec = hp[0] * (mins[groups] * np.sign(th))
    else:
        dec = _decay_np(hp, th)
    m = _lerp_np(state[0], g, 1.0 - a)
    v = state[1] * b + (1.0 - b) * g * g
    state[0] = m
    state[1] = v
    theta[:] = th - lr_t * ((m / bc1) / (np.sqrt(v) / bc2_sqrt + c) + state[3] * dec)
