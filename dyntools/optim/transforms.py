"""Optimizers as small composable gradient transformations (in the spirit of optax's ``chain``).

A :class:`Transform` has ``init(params) -> state`` and
``update(u, state, params, t, lr_t) -> (u, state)``: it maps an incoming direction ``u`` (at the
start of the chain, the minibatch gradient) to an outgoing one. ``t`` is the 1-based step count
and ``lr_t = lr · m_t`` the scheduled learning rate. :func:`chain` composes transforms left to
right and the parameters move by ``θ ← θ − lr_t · u_out`` (:func:`apply`).

The whole L2-vs-weight-decay story is *where* :func:`add_decay` sits in the chain:

* coupled (L2, ``torch.optim.Adam(weight_decay=λ)``)::

      chain(add_decay(λ), scale_by_adam(β₁, β₂, ε))      u = P_t(g + λθ)

  the decay gradient λθ is preconditioned together with the loss gradient;
* decoupled (``AdamW``, SGDW, Loshchilov & Hutter 2019, Alg. 2 line 12)::

      chain(scale_by_adam(β₁, β₂, ε), add_decay(λ))      u = P_t(g) + λθ

  so the step is ``θ ← θ − lr_t (P_t g + λθ)``: the decay is scaled by the scheduled learning
  rate ``lr · η_t`` (the schedule multiplier scales the decay too) but never by the adaptive
  preconditioner ``P_t``.

Every transform is plain NumPy and readable, and holds beside its ``update`` its compiled form
(:meth:`Transform.element_update`: the same arithmetic, in the same order, for one coordinate), which
:func:`dyntools.optim.compiled.compile_runs` fuses into one numba loop per chain (tests hold them equal).

**One definition, numeric and symbolic.** The same transforms evaluate on NumPy *object* arrays
of sympy expressions with sympy hyperparameters (:func:`dyntools.symbolic.unroll.unroll`): the
only operations that are not plain ``+ − × /`` and powers go through :func:`_sqrt`,
:func:`_sign`, :func:`_maximum` and :func:`_root`, which call NumPy on numbers (so the float path
is bitwise what it was) and sympy on expressions. Constants are written ``1 − x`` (an exact
integer 1, identical to ``1.0 − x`` in floating point) so that symbolic results stay exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _symbolic(x) -> bool:
    """True for sympy values: an object array, or a scalar that is not a Python/NumPy number."""
    if isinstance(x, np.ndarray):
        return x.dtype == object
    return not isinstance(x, (int, float, np.integer, np.floating))


def _sqrt(x):
    """``np.sqrt`` on numbers, ``sympy.sqrt`` elementwise on expressions."""
    if not _symbolic(x):
        return np.sqrt(x)
    import sympy as sp

    return np.vectorize(sp.sqrt, otypes=[object])(x) if isinstance(x, np.ndarray) else sp.sqrt(x)


def _sign(x):
    """``np.sign`` on numbers, ``sympy.sign`` elementwise on expressions."""
    if not _symbolic(x):
        return np.sign(x)
    import sympy as sp

    return np.vectorize(sp.sign, otypes=[object])(x)


def _maximum(a, b):
    """``np.maximum`` on numbers, ``sympy.Max`` elementwise on expressions."""
    if not (_symbolic(a) or _symbolic(b)):
        return np.maximum(a, b)
    import sympy as sp

    return np.vectorize(sp.Max, otypes=[object])(a, b)


def _root(x):
    """``x ** 0.5`` on a number, ``sympy.sqrt(x)`` on an expression (scalars)."""
    if not _symbolic(x):
        return x ** 0.5
    import sympy as sp

    return sp.sqrt(x)


def lerp(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    """``a + w (b − a)`` computed as ``torch.lerp`` does (``b − (b − a)(1 − w)`` when ``w ≥ ½``);
    on a symbolic weight the two forms are the same expression, ``a + w (b − a)`` is used."""
    if _symbolic(w) or w < 0.5:
        return a + w * (b - a)
    return b - (b - a) * (1 - w)


@dataclass(frozen=True)
class ElementUpdate:
    """A transform's compiled update, as source text that :mod:`dyntools.optim.compiled` fuses with the chain's
    other transforms into one loop over the parameters.

    ``element`` updates ONE coordinate: it reads and rebinds ``u`` (the incoming direction), reads ``th`` (the
    parameter before the step) and the transform's state rows ``state[$s0$i]``, ``state[$s1$i]`` …; ``setup``
    runs once per step before the loop (scalars from the hyperparameters ``$h0``, ``$h1`` … = ``values``, from
    ``t`` and ``theta``). ``$j`` suffixes the transform's local names. ``LIKE(x)`` is ``x`` in the parameters'
    precision (float64 in a chain with a ``widens`` transform); ``_lerp``, ``_ipow`` (float to int power),
    ``_max`` and ``_f64`` (a value as float64) are the helpers. The same text runs on whole arrays in the NumPy
    twin (``$i`` empty), unless ``setup_np``/``element_np`` give that form. ``switch``: a condition on the
    setup's scalars; the loop is emitted for both values, ``SW`` in ``element`` being the literal ``True`` /
    ``False`` (Adam's ``bc1 ≠ 1``). ``key`` holds what changes the text (structural options), never the
    numbers."""

    key: tuple
    values: tuple = ()
    slots: int = 0
    setup: str = ""
    element: str = ""
    setup_np: str | None = None
    element_np: str | None = None
    switch: str | None = None
    widens: bool = False


class Transform:
    """One gradient transformation: ``init(params)`` and ``update(u, state, params, t, lr_t)``, and its compiled
    form ``element_update()`` (None: the chain runs in NumPy only)."""

    def init(self, params: np.ndarray) -> tuple:
        return ()

    def update(self, u, state, params, t, lr_t):  # pragma: no cover - abstract
        raise NotImplementedError

    def element_update(self) -> ElementUpdate | None:
        return None

    def compiled_state(self, params: np.ndarray) -> np.ndarray:
        """The compiled state at the start: ``init(params)``'s arrays as rows of a float64[k, p] block."""
        rows = [np.asarray(a, dtype=np.float64).reshape(-1, params.shape[0]) for a in self.init(params)]
        return np.concatenate(rows) if rows else np.zeros((0, params.shape[0]))


@dataclass(frozen=True)
class add_decay(Transform):
    """``u ← u + λ((1 − ρ) θ + ρ sign θ)``: L2 decay (ρ = 0), L1 decay (ρ = 1) or their
    proportional mix (seed 000). Before a preconditioner it is an L2/L1 penalty's gradient
    (coupled); after it, decoupled weight decay."""

    weight_decay: float
    l1_ratio: float = 0.0

    def update(self, u, state, params, t, lr_t):
        if self.l1_ratio == 0.0:
            return u + self.weight_decay * params, state
        mix = (1 - self.l1_ratio) * params + self.l1_ratio * _sign(params)
        return u + self.weight_decay * mix, state

    def element_update(self):
        if self.l1_ratio == 0.0:
            return ElementUpdate(("l2",), (self.weight_decay,), 0, "lam$j = like(theta, $h0)", "u = u + lam$j * th")
        return ElementUpdate(("l1l2",), (self.weight_decay, self.l1_ratio), 0,
                             "lam$j, rho$j, omr$j = like(theta, $h0), like(theta, $h1), like(theta, 1.0 - $h1)",
                             "u = u + lam$j * (omr$j * th + rho$j * np.sign(th))")


@dataclass(frozen=True)
class trace(Transform):
    """Heavy-ball momentum as ``torch.optim.SGD``: ``b_1 = g``, ``b_t = μ b_{t−1} + (1 − τ) g``;
    the direction is ``g + μ b_t`` (Nesterov) or ``b_t``."""

    momentum: float
    dampening: float = 0.0
    nesterov: bool = False

    def init(self, params):
        return (np.zeros_like(params),)

    def update(self, u, state, params, t, lr_t):
        (buf,) = state
        buf = u.copy() if t == 1 else self.momentum * buf + (1 - self.dampening) * u
        return (u + self.momentum * buf if self.nesterov else buf), (buf,)

    def element_update(self):
        # numba types ``buf`` as the unified type of its two branches (float64 beside a float64 state row)
        rest = "state[$s0$i] = buf$j\n" + ("u = u + mu$j * buf$j" if self.nesterov else "u = buf$j")
        return ElementUpdate(("nesterov" if self.nesterov else "heavy ball",), (self.momentum, self.dampening), 1,
                             "mu$j, omt$j = LIKE($h0), LIKE(1.0 - $h1)",
                             "buf$j = u if t == 1 else mu$j * state[$s0$i] + omt$j * u\n" + rest,
                             element_np="buf$j = u.astype(np.result_type(u, state)) if t == 1 else "
                             "mu$j * state[$s0] + omt$j * u\n" + rest)


@dataclass(frozen=True)
class scale_by_adam(Transform):
    """Adam's preconditioner (Kingma & Ba 2015; ``torch.optim.Adam``)::

        m_t = β₁ m + (1 − β₁) g,   v_t = β₂ v + (1 − β₂) g²,   (AMSGrad: v̄_t = max(v̄, v_t))
        u   = (m_t / (1 − β₁ᵗ)) / (√v_t / √(1 − β₂ᵗ) + ε).

    ``bias_correction=False`` drops both corrections, ``u = m_t / (√v_t + ε)`` (Adam before
    Kingma & Ba's Alg. 1 line 9–10: the zero-initialized moments make the first steps short)."""

    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    amsgrad: bool = False
    bias_correction: bool = True

    def init(self, params):
        return (np.zeros_like(params), np.zeros_like(params), np.zeros_like(params))

    def update(self, u, state, params, t, lr_t):
        m, v, vmax = state
        m = lerp(m, u, 1 - self.b1)
        v = v * self.b2 + (1 - self.b2) * u * u
        bc1 = 1 - self.b1 ** t if self.bias_correction else 1
        bc2_sqrt = _root(1 - self.b2 ** t) if self.bias_correction else 1
        if self.amsgrad:
            vmax = _maximum(vmax, v)
            denom = _sqrt(vmax) / bc2_sqrt + self.eps
        else:
            denom = _sqrt(v) / bc2_sqrt + self.eps
        return (m / bc1) / denom, (m, v, vmax)

    def element_update(self):
        if self.bias_correction:
            bc = "bc1$j, bc2$j = LIKE(1.0 - _ipow(a$j, t)), LIKE(np.sqrt(1.0 - _ipow(b$j, t)))"
        else:
            bc = "bc1$j, bc2$j = LIKE(1.0), LIKE(1.0)"
        setup = f"""a$j, b$j, eps$j = $h0, $h1, $h2
{bc}
w$j, omw$j = LIKE(1.0 - a$j), LIKE(1.0 - (1.0 - a$j))
b$j, omb$j, eps$j = LIKE(b$j), LIKE(1.0 - b$j), LIKE(eps$j)"""
        ams = "v$j = _max(state[$s2$i], v$j)\nstate[$s2$i] = v$j\n" if self.amsgrad else ""
        element = f"""m$j = _lerp(state[$s0$i], u, w$j, omw$j)
v$j = state[$s1$i] * b$j + omb$j * u * u
state[$s0$i] = m$j
state[$s1$i] = v$j
{ams}mh$j = m$j / bc1$j if SW else m$j
u = mh$j / (np.sqrt(v$j) / bc2$j + eps$j)"""
        # switch: 1 − β₁ᵗ rounds to 1 (β₁ = 0.9: t > 349 in float64, t > 165 in float32): m / 1 = m, one
        # division of three fewer per parameter on a divider-bound loop (the same bits)
        return ElementUpdate((self.amsgrad, self.bias_correction), (self.b1, self.b2, self.eps), 3, setup, element,
                             switch="bc1$j != 1.0")


@dataclass(frozen=True)
class scale_by_adagrad(Transform):
    """AdaGrad (Duchi et al. 2011; ``torch.optim.Adagrad``): ``G_t = G + g²``,
    ``u = (g / (√G_t + ε)) / (1 + (t − 1)·lr_decay)``."""

    lr_decay: float = 0.0
    initial_accumulator_value: float = 0.0
    eps: float = 1e-10

    def init(self, params):
        return (np.full_like(params, self.initial_accumulator_value),)

    def update(self, u, state, params, t, lr_t):
        (acc,) = state
        acc = acc + u * u
        return (u / (_sqrt(acc) + self.eps)) / (1 + (t - 1) * self.lr_decay), (acc,)

    def element_update(self):
        return ElementUpdate((), (self.lr_decay, self.eps), 1, "clr$j, eps$j = 1.0 + (t - 1) * $h0, $h1",
                             "acc$j = state[$s0$i] + u * u\nstate[$s0$i] = acc$j\n"
                             "u = (u / (np.sqrt(acc$j) + eps$j)) / clr$j", widens=True)


@dataclass(frozen=True)
class scale_by_rms(Transform):
    """RMSProp (Tieleman & Hinton 2012; ``torch.optim.RMSprop``): ``s_t = α s + (1 − α) g²``;
    centered: ``ḡ_t = α ḡ + (1 − α) g`` and ``s_t − ḡ_t²`` under the root;
    ``u = g / (√(·) + ε)``."""

    alpha: float = 0.99
    eps: float = 1e-8
    centered: bool = False

    def init(self, params):
        return (np.zeros_like(params), np.zeros_like(params))

    def update(self, u, state, params, t, lr_t):
        sq, gavg = state
        sq = sq * self.alpha + (1 - self.alpha) * u * u
        if self.centered:
            gavg = lerp(gavg, u, 1 - self.alpha)
            avg = _sqrt(sq - gavg * gavg) + self.eps
        else:
            avg = _sqrt(sq) + self.eps
        return u / avg, (sq, gavg)

    def element_update(self):
        if self.centered:
            out = ("ga$j = _lerp(state[$s1$i], u, 1.0 - al$j, 1.0 - (1.0 - al$j))\nstate[$s1$i] = ga$j\n"
                   "u = u / (np.sqrt(sq$j - ga$j * ga$j) + eps$j)")
        else:
            out = "u = u / (np.sqrt(sq$j) + eps$j)"
        return ElementUpdate((self.centered,), (self.alpha, self.eps), 2, "al$j, eps$j = $h0, $h1",
                             f"sq$j = state[$s0$i] * al$j + (1.0 - al$j) * u * u\nstate[$s0$i] = sq$j\n{out}",
                             widens=True)


@dataclass(frozen=True)
class scale_by_rms_bias_corrected(Transform):
    """The problem set's RMSProp with a bias-corrected second moment (seed 001, Q 1.b):
    ``v_t = β₂ v + (1 − β₂) g²``, ``u = g / (√v_t / √(1 − β₂ᵗ) + ε)`` — Adam without the first
    moment, so its preconditioner is ``M_t = diag(√v̂_t + ε)⁻¹``."""

    b2: float = 0.999
    eps: float = 1e-8

    def init(self, params):
        return (np.zeros_like(params),)

    def update(self, u, state, params, t, lr_t):
        (v,) = state
        v = v * self.b2 + (1 - self.b2) * u * u
        return u / (_sqrt(v) / _root(1 - self.b2 ** t) + self.eps), (v,)

    def element_update(self):
        return ElementUpdate((), (self.b2, self.eps), 1,
                             "b$j, eps$j = $h0, $h1\nbc2$j = np.sqrt(1.0 - _ipow(b$j, t))",
                             "v$j = state[$s0$i] * b$j + (1.0 - b$j) * u * u\nstate[$s0$i] = v$j\n"
                             "u = u / (np.sqrt(v$j) / bc2$j + eps$j)", widens=True)


@dataclass(frozen=True)
class momentum_after(Transform):
    """Momentum on an already preconditioned direction (``torch.optim.RMSprop(momentum=μ)``):
    ``b_t = μ b_{t−1} + u`` with ``b_0 = 0``."""

    momentum: float

    def init(self, params):
        return (np.zeros_like(params),)

    def update(self, u, state, params, t, lr_t):
        (buf,) = state
        buf = buf * self.momentum + u
        return buf, (buf,)

    def element_update(self):
        return ElementUpdate((), (self.momentum,), 1, "", "u = state[$s0$i] * $h0 + u\nstate[$s0$i] = u")


@dataclass(frozen=True)
class chain(Transform):
    """Compose transforms left to right (the first sees the raw gradient)."""

    transforms: tuple[Transform, ...]

    def __init__(self, *transforms: Transform):
        object.__setattr__(self, "transforms", tuple(transforms))

    def init(self, params):
        return tuple(tr.init(params) for tr in self.transforms)

    def update(self, u, state, params, t, lr_t):
        new_state = []
        for tr, st in zip(self.transforms, state):
            u, st = tr.update(u, st, params, t, lr_t)
            new_state.append(st)
        return u, tuple(new_state)

    def names(self) -> Sequence[str]:
        return [type(tr).__name__ for tr in self.transforms]


def apply(params: np.ndarray, u: np.ndarray, lr_t: float) -> np.ndarray:
    """``θ ← θ − lr_t u`` (``scale_by_learning_rate`` then ``apply_updates`` in optax terms)."""
    return params - lr_t * u
