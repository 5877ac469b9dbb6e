"""The optimizer family of seeds 000–003, each a :func:`~dyntools.optim.transforms.chain` of transforms: the one
representation, readable (``update``) and compiled (each transform's element update, fused into one numba step by
:mod:`dyntools.optim.compiled`).

=================  ==========================================================  ===================
optimizer          chain (decay position shown)                                 matches
=================  ==========================================================  ===================
``sgd``            ``add_decay(λ) → trace(μ, τ, nesterov)``                     ``torch.optim.SGD``
``sgdw``           ``trace(μ, τ, nesterov) → add_decay(λ)``                     SGDW (L&H 2019)
``adam``           ``add_decay(λ) → scale_by_adam``                             ``torch.optim.Adam``
``adamw``          ``scale_by_adam → add_decay(λ)``                             ``torch.optim.AdamW``
``adagrad``        ``add_decay(λ) → scale_by_adagrad``                          ``torch.optim.Adagrad``
``rmsprop``        ``add_decay(λ) → scale_by_rms → momentum_after(μ)``          ``torch.optim.RMSprop``
``rmsprop_bc``     ``add_decay(λ) → scale_by_rms_bias_corrected`` (or after)    seed 001 Q 1.b
``adamw_l1``       ``scale_by_adam → add_decay(λ, ρ=1)``: θ ← θ − lr_t λ sign θ   seed 000
``adamw_l1l2``     ``scale_by_adam → add_decay(λ, ρ)``                          seed 000
=================  ==========================================================  ===================

``adam`` and ``adamw`` take ``bias_correction=False``: the moments enter uncorrected,
``u = m_t/(√v_t + ε)`` (``options["bias_correction"] = False``; the first step is then ``(1 − β₁)/√(1 − β₂) ≈ 3.16``
times Adam's in every coordinate where ε ≪ |g|).

The parameters move by ``θ ← θ − lr·m_t·u`` with ``m_t`` the schedule multiplier, so decoupled
decay is ``θ ← θ − lr·m_t·λ·θ`` (torch's AdamW: ``p ← p (1 − lr_t λ)``; the paper's
``η_t λ`` is torch's ``lr_t · λ`` with ``λ_torch = λ_paper / α``).

Argument checks raise ``ValueError`` with torch's wording (``Invalid learning rate: -1.0``).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from dyntools import validation
from dyntools.optim import transforms as T
from dyntools.optim.aliases import ALIASES, FactoryView, alias

#: Where the decay enters (``options["decay_position"]`` of the built-in factories): nowhere, before the
#: preconditioner (coupled: an L2 term in the gradient), after it (decoupled).
NO_DECAY, COUPLED, DECOUPLED = "none", "coupled", "decoupled"
_POSITIONS = {NO_DECAY: "none", COUPLED: "coupled (before the preconditioner)",
              DECOUPLED: "decoupled (after the preconditioner)"}


@dataclass(frozen=True)
class Optimizer:
    """An optimizer: its name, learning rate, chain of transforms and hyperparameters by name.

    Your own optimizer is ``Optimizer(name, lr, chain)``: a :func:`~dyntools.optim.transforms.chain`
    of transforms (yours or the library's). When every transform has a compiled form (an
    ``element_update()``, or a ``compiled()`` kernel) :func:`dyntools.train` runs it in the compiled loop
    (:mod:`dyntools.optim.compiled`); otherwise it steps the readable chain from Python.

    Parameters
    ----------
    name : str
        The optimizer's name (in results and legends).
    lr : float
        The base learning rate η.
    chain : dyntools.optim.transforms.chain
        The chain of transforms.
    options : dict, optional
        The hyperparameters by name (as PyTorch names them); the built-in factories also record
        ``decay_position`` (``"none"``, ``"coupled"`` or ``"decoupled"``).

    Raises
    ------
    TypeError
        When ``chain`` is not a transform.
    """

    name: str
    lr: float
    chain: T.chain
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.chain, T.Transform):
            raise TypeError(f"Invalid chain of optimizer {self.name!r}: {self.chain!r} (expected a "
                            "dyntools.optim.transforms.chain of transforms)")
        if not isinstance(self.options, dict):
            raise TypeError(f"Invalid options of optimizer {self.name!r}: {self.options!r} (expected a dict of "
                            "hyperparameters by name)")

    @property
    def decay_position(self) -> str:
        """Where the decay enters: ``"none"``, ``"coupled (before the preconditioner)"``, ``"decoupled (after the
        preconditioner)"`` — as the factory recorded it — or ``"as its chain says"`` for a chain of your own."""
        return _POSITIONS.get(self.options.get("decay_position"), "as its chain says")

    def init(self, params: np.ndarray):
        return self.chain.init(np.asarray(params, dtype=np.float64))

    def step(self, params: np.ndarray, grads: np.ndarray, state, t: int, multiplier: float = 1.0):
        """One step of the readable chain: returns ``(new_params, new_state)`` (``t`` is 1-based).

        Parameters
        ----------
        params : ndarray
            The parameters θ.
        grads : ndarray
            The loss gradient at θ.
        state : object
            The chain's state (from :meth:`init` or the previous step).
        t : int
            The step number, from 1.
        multiplier : float, default 1.0
            The schedule's multiplier of the learning rate at this step.
        """
        lr_t = self.lr * multiplier
        u, state = self.chain.update(np.asarray(grads, dtype=np.float64), state, params, t, lr_t)
        return T.apply(params, u, lr_t), state


# ------------------------------------------------------------------------------------------ checks

def _lr(lr) -> float:
    lr = validation.finite("lr", lr)
    if lr <= 0:
        raise ValueError(f"Invalid learning rate: {lr} (must be > 0)")
    return lr


def _eps(eps) -> float:
    eps = validation.finite("eps", eps)
    if eps < 0:
        raise ValueError(f"Invalid epsilon value: {eps} (must be >= 0)")
    return eps


def check_weight_decay(weight_decay, name: str = "weight_decay", *, log_axis: bool = False) -> float:
    """The one check of a weight decay λ: a finite number, λ ≥ 0 — or λ > 0 for an end of a log-spaced axis
    (``log_axis``), whose every λ is then a valid decay. Every factory calls it (``_wd``), and so does a sweep's
    decay axis before anything is written (:func:`dyntools.heatmap_grid.check_decay_axis`, the ``--wd-grid``
    option): a bad λ is refused here and nowhere else, with one ``ValueError`` naming ``name``."""
    weight_decay = validation.finite(name, weight_decay)
    if log_axis and weight_decay <= 0:
        raise ValueError(f"Invalid {name}: {weight_decay} (must be > 0: the axis is log-spaced)")
    if weight_decay < 0:
        raise ValueError(f"Invalid {name} value: {weight_decay} (must be >= 0)")
    return weight_decay


_wd = check_weight_decay           # the factories' short name for it


def _beta(name: str, value) -> float:
    value = validation.finite(name, value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"Invalid {name} parameter: {value} (must be in [0, 1))")
    return value


def _betas(betas) -> tuple[float, float]:
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise ValueError(f"Invalid betas: {betas!r} (expected a pair (beta1, beta2))") from None
    for i, b in enumerate((b1, b2)):
        b = validation.finite(f"beta at index {i}", b)
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b} (must be in [0, 1))")
    return float(b1), float(b2)


def _momentum(momentum) -> float:
    momentum = validation.finite("momentum", momentum)
    if momentum < 0:
        raise ValueError(f"Invalid momentum value: {momentum} (must be >= 0)")
    return momentum


def _position(weight_decay: float, where: str) -> str:
    return where if weight_decay > 0 else NO_DECAY


def _with_decay(core: list, weight_decay: float, where: int, l1_ratio: float = 0.0) -> T.chain:
    if weight_decay == 0:
        return T.chain(*core)
    decay = T.add_decay(weight_decay, l1_ratio)
    return T.chain(decay, *core) if where == COUPLED else T.chain(*core, decay)


# --------------------------------------------------------------------------------- the factories' docs

#: The factories' parameters, each described once: name → (type, meaning). :func:`_documented` writes a
#: factory's numpydoc ``Parameters`` section from its signature (the defaults it has) and this table.
PARAMETER_DOCS = {
    "lr": ("float", "The learning rate η (> 0); a schedule multiplies it at each step."),
    "momentum": ("float", "The momentum μ (≥ 0)."),
    "dampening": ("float", "The dampening τ."),
    "nesterov": ("bool", "Nesterov momentum (needs μ > 0 and τ = 0)."),
    "betas": ("pair of float", "The moments' decay rates β₁, β₂, each in [0, 1)."),
    "beta2": ("float", "The second moment's decay rate, in [0, 1)."),
    "alpha": ("float", "The decay rate of the mean square, in [0, 1]."),
    "eps": ("float", "The denominator's ε (≥ 0)."),
    "weight_decay": ("float", "The decay coefficient λ (≥ 0)."),
    "l1_ratio": ("float", "The share ρ of the L1 term, in [0, 1]."),
    "amsgrad": ("bool", "Use the running maximum of v̂ (AMSGrad)."),
    "bias_correction": ("bool", "Divide the moments by 1 − βᵗ."),
    "lr_decay": ("float", "PyTorch's decay of the step, ``η / (1 + (t − 1) lr_decay)`` (≥ 0)."),
    "initial_accumulator_value": ("float", "The start of the sum of squared gradients (≥ 0)."),
    "centered": ("bool", "Divide by the estimated variance instead of the mean square."),
    "decoupled": ("bool", "Decoupled decay (after the preconditioner) instead of L2 in the gradient."),
}
_L2 = "The L2 coefficient λ (≥ 0), added to the gradient."


def _documented(**meaning: str):
    """Append to a factory's docstring its ``Parameters`` section — every parameter's type, default and
    meaning (:data:`PARAMETER_DOCS`, or ``meaning[name]`` where this factory means something else by it) —
    and ``Returns: Optimizer``."""

    def document(factory):
        lines = ["", "Parameters", "----------"]
        for name, param in inspect.signature(factory).parameters.items():
            kind, text = PARAMETER_DOCS[name]
            default = "" if param.default is inspect.Parameter.empty else f", default {param.default!r}"
            lines += [f"{name} : {kind}{default}", f"    {meaning.get(name, text)}"]
        lines += ["", "Returns", "-------", "Optimizer"]
        doc = inspect.cleandoc(factory.__doc__ or "").rstrip()
        factory.__doc__ = doc + "\n" + "\n".join(lines) + "\n"
        return factory

    return document


# -------------------------------------------------------------------------------------- factories

def _sgd_like(name, lr, momentum, dampening, nesterov, weight_decay, where) -> Optimizer:
    lr, momentum, weight_decay = _lr(lr), _momentum(momentum), _wd(weight_decay)
    dampening = validation.finite("dampening", dampening)
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("Nesterov momentum requires a momentum and zero dampening")
    core = [T.trace(momentum, dampening, bool(nesterov))] if momentum > 0 else []
    return Optimizer(name, lr, _with_decay(core, weight_decay, where),
                     dict(momentum=momentum, dampening=dampening, nesterov=bool(nesterov),
                          weight_decay=weight_decay, decay_position=_position(weight_decay, where)))


@alias(torch="SGD", lr_range=(1e-3, 1.0), grid_momentum=True)
@_documented()
def sgd(lr: float, momentum: float = 0.0, dampening: float = 0.0, nesterov: bool = False,
        weight_decay: float = 0.0) -> Optimizer:
    r"""``torch.optim.SGD``: ``g ← g + λθ``; momentum ``b ← μ b + (1 − τ) g``; ``θ ← θ − lr_t b``.

    With L2 coupled into the gradient, :math:`b_t = \mu b_{t-1} + (1-\tau)(\nabla f(\theta_{t-1}) +
    \lambda\theta_{t-1})` and :math:`\theta_t = \theta_{t-1} - \eta_t b_t` (the first buffer is the first
    gradient, undamped; ``nesterov`` steps along :math:`g_t + \mu b_t`).
    """
    return _sgd_like("sgd", lr, momentum, dampening, nesterov, weight_decay, COUPLED)


@alias(lr_range=(1e-3, 1.0), grid_momentum=True)
@_documented()
def sgdw(lr: float, momentum: float = 0.0, dampening: float = 0.0, nesterov: bool = False,
         weight_decay: float = 0.0) -> Optimizer:
    r"""SGDW (Loshchilov & Hutter 2019, Alg. 1 with the decoupled term):
    ``θ ← θ − lr_t (b_t + λθ)``, the momentum buffer ``b_t`` seeing only the loss gradient:

    .. math:: b_t = \mu b_{t-1} + (1-\tau)\nabla f(\theta_{t-1}), \qquad
              \theta_t = \theta_{t-1} - \eta_t\,(b_t + \lambda\theta_{t-1}).
    """
    return _sgd_like("sgdw", lr, momentum, dampening, nesterov, weight_decay, DECOUPLED)


def _adam_like(name, lr, betas, eps, weight_decay, amsgrad, where, l1_ratio=0.0,
               bias_correction=True) -> Optimizer:
    lr, eps, weight_decay = _lr(lr), _eps(eps), _wd(weight_decay)
    b1, b2 = _betas(betas)
    if not isinstance(bias_correction, bool | np.bool_):
        raise TypeError(f"Invalid bias_correction: {bias_correction!r} (expected True or False)")
    core = [T.scale_by_adam(b1, b2, eps, bool(amsgrad), bool(bias_correction))]
    options = dict(betas=(b1, b2), eps=eps, weight_decay=weight_decay, amsgrad=bool(amsgrad), l1_ratio=l1_ratio,
                   decay_position=_position(weight_decay, where))
    if not bias_correction:
        options["bias_correction"] = False
    return Optimizer(name, lr, _with_decay(core, weight_decay, where, l1_ratio), options)


@alias(torch="Adam")
@_documented()
def adam(lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
         amsgrad: bool = False, *, bias_correction: bool = True) -> Optimizer:
    r"""``torch.optim.Adam``: the L2 term ``λθ`` is added to the gradient *before* the moments.
    ``bias_correction=False``: ``θ ← θ − lr_t m_t/(√v_t + ε)`` (no division by ``1 − βᵗ``).

    .. math:: g_t = \nabla f(\theta_{t-1}) + \lambda\theta_{t-1},\quad
              m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,

              \theta_t = \theta_{t-1} - \eta_t\,\frac{\hat m_t}{\sqrt{\hat v_t} + \varepsilon},\qquad
              \hat m_t = \frac{m_t}{1-\beta_1^t},\ \hat v_t = \frac{v_t}{1-\beta_2^t}.
    """
    return _adam_like("adam", lr, betas, eps, weight_decay, amsgrad, COUPLED, bias_correction=bias_correction)


@alias(torch="AdamW")
@_documented()
def adamw(lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
          amsgrad: bool = False, *, bias_correction: bool = True) -> Optimizer:
    r"""``torch.optim.AdamW``: ``θ ← θ − lr_t (m̂/(√v̂ + ε) + λθ)`` (``bias_correction=False``: m, v
    in place of m̂, v̂). The decay is decoupled from the moments, which see only the loss gradient:

    .. math:: \theta_t = \theta_{t-1} - \eta_t \left(\frac{\hat m_t}{\sqrt{\hat v_t} + \varepsilon}
              + \lambda\theta_{t-1}\right).
    """
    return _adam_like("adamw", lr, betas, eps, weight_decay, amsgrad, DECOUPLED, bias_correction=bias_correction)


@alias()
@_documented()
def adamw_l1(lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
             amsgrad: bool = False) -> Optimizer:
    """AdamW with L1 decoupled decay (seed 000): ``θ ← θ − lr_t (m̂/(√v̂ + ε) + λ sign θ)``.
    """
    return _adam_like("adamw_l1", lr, betas, eps, weight_decay, amsgrad, DECOUPLED, 1.0)


@alias()
@_documented()
def adamw_l1l2(lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
               l1_ratio: float = 0.5, amsgrad: bool = False) -> Optimizer:
    """AdamW with proportional L1+L2 decoupled decay (seed 000):
    ``θ ← θ − lr_t (m̂/(√v̂ + ε) + λ((1 − ρ)θ + ρ sign θ))``.
    """
    l1_ratio = validation.in_interval("l1_ratio", l1_ratio, 0.0, 1.0, closed_high=True)
    return _adam_like("adamw_l1l2", lr, betas, eps, weight_decay, amsgrad, DECOUPLED, l1_ratio)


@alias(torch="Adagrad", lr_range=(1e-3, 1.0))
@_documented(weight_decay=_L2)
def adagrad(lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
            initial_accumulator_value: float = 0.0, eps: float = 1e-10) -> Optimizer:
    """``torch.optim.Adagrad`` (coupled L2).
    """
    lr, eps, weight_decay = _lr(lr), _eps(eps), _wd(weight_decay)
    lr_decay = validation.finite("lr_decay", lr_decay)
    if lr_decay < 0:
        raise ValueError(f"Invalid lr_decay value: {lr_decay} (must be >= 0)")
    init = validation.finite("initial_accumulator_value", initial_accumulator_value)
    if init < 0:
        raise ValueError(f"Invalid initial_accumulator_value value: {init} (must be >= 0)")
    core = [T.scale_by_adagrad(lr_decay, init, eps)]
    return Optimizer("adagrad", lr, _with_decay(core, weight_decay, COUPLED),
                     dict(lr_decay=lr_decay, initial_accumulator_value=init, eps=eps,
                          weight_decay=weight_decay, decay_position=_position(weight_decay, COUPLED)))


@alias(torch="RMSprop")
@_documented(weight_decay=_L2, momentum="Momentum on the preconditioned step (≥ 0).")
def rmsprop(lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
            momentum: float = 0.0, centered: bool = False) -> Optimizer:
    """``torch.optim.RMSprop`` (coupled L2, optional centering and momentum).
    """
    lr, eps, weight_decay, momentum = _lr(lr), _eps(eps), _wd(weight_decay), _momentum(momentum)
    alpha = validation.finite("alpha", alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"Invalid alpha value: {alpha} (must be in [0, 1])")
    core = [T.scale_by_rms(alpha, eps, bool(centered))]
    if momentum > 0:
        core.append(T.momentum_after(momentum))
    return Optimizer("rmsprop", lr, _with_decay(core, weight_decay, COUPLED),
                     dict(alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                          centered=bool(centered), decay_position=_position(weight_decay, COUPLED)))


@alias()
@_documented()
def rmsprop_bc(lr: float = 1e-3, beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0,
               decoupled: bool = False) -> Optimizer:
    """RMSProp with a bias-corrected second moment (seed 001), L2 (coupled) or decoupled decay.
    """
    lr, eps, weight_decay = _lr(lr), _eps(eps), _wd(weight_decay)
    beta2 = _beta("beta2", beta2)
    where = DECOUPLED if decoupled else COUPLED
    core = [T.scale_by_rms_bias_corrected(beta2, eps)]
    return Optimizer("rmsprop_bc", lr, _with_decay(core, weight_decay, where),
                     dict(beta2=beta2, eps=eps, weight_decay=weight_decay, decoupled=bool(decoupled),
                          decay_position=_position(weight_decay, where)))


#: ``name → factory`` of every alias (:data:`dyntools.optim.aliases.ALIASES`, declared by ``@alias``).
FACTORIES = FactoryView()


def make(name: str, **kwargs) -> Optimizer:
    """Build an optimizer by name: the factory of the alias ``name`` (:mod:`dyntools.optim.aliases`).

    Parameters
    ----------
    name : str
        An alias (``"sgd"``, ``"adamw"``, … : ``ALIASES``).
    **kwargs
        The factory's arguments.

    Raises
    ------
    ValueError
        When the name is unknown.
    """
    validation.one_of("optimizer", name, tuple(ALIASES))
    return ALIASES[name].factory(**kwargs)


def normalized_weight_decay(lambda_norm: float, batch_size: int, n_train: int, epochs: float) -> float:
    """Loshchilov & Hutter (2019, App. B.1): ``λ = λ_norm √(b / (B T))`` with batch size ``b``,
    ``B`` training points and ``T`` epochs, so the total decay does not depend on the number of
    weight updates ``B T / b``.

    Parameters
    ----------
    lambda_norm : float
        The normalized decay :math:`λ_{norm}` (≥ 0).
    batch_size : int
        The batch size b (≤ ``n_train``).
    n_train : int
        The number of training points B.
    epochs : float
        The number of epochs T (> 0).
    """
    lambda_norm = _wd(lambda_norm)
    b = validation.count("batch_size", batch_size)
    B = validation.count("n_train", n_train)
    epochs = validation.positive("epochs", epochs)
    if b > B:
        raise ValueError(f"Invalid batch_size: {b} (must be <= n_train = {B})")
    return lambda_norm * math.sqrt(b / (B * epochs))
