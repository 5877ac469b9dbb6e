"""Decoupled decay per parameter group, and the "min" decay of seed 000.

AdamW's decoupled step is ``θ ← θ − lr_t (P_t g + d(θ))`` with a decay direction ``d``. Seed 000
compares three directions, and its code a fourth; here each may be weighted per parameter by
``w_i ≥ 0`` (e.g. ``w = 0`` on a softmax scale and an offset: "no decay on scalars"):

=========  =====================================================  ================================
kind       d_i(θ)                                                 note
=========  =====================================================  ================================
``l2``     w_i λ θ_i                                              AdamW (``torch.optim.AdamW``)
``l1``     w_i λ sign θ_i                                         shrinks every weight by lr_t λ
``l1l2``   w_i λ ((1 − ρ) θ_i + ρ sign θ_i)                       proportional mix, ρ ∈ [0, 1]
``min``    w_i λ · min_{j ∈ G(i)} |θ_j| · sign θ_i                 λ = 1 in the study's code
=========  =====================================================  ================================

``G(i)`` is the group of parameter ``i`` (the study takes the minimum over each tensor, so a scalar
parameter of its own group decays as ``θ ← θ (1 − lr_t λ)``); without groups, the minimum runs over
all parameters. The minimum is taken at the iterate before the step, as the study's code does.

The readable form is a chain ``scale_by_adam → add_group_decay`` (this module); its compiled form
(:meth:`add_group_decay.element_update`, fused by :mod:`dyntools.optim.compiled`) reads the weights and group
indices from two state rows of its own (rows 3 and 4 after Adam's three), so nothing changes for optimizers
without them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.optim import optimizers as O
from dyntools.optim import transforms as T

KINDS = ("l2", "l1", "l1l2", "min")


def group_minima(params: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``min_{j ∈ G(i)} |θ_j|`` for every ``i``."""
    groups = np.asarray(groups, dtype=np.int64)
    mins = np.full(int(groups.max()) + 1, np.inf)
    np.minimum.at(mins, groups, np.abs(params))
    return mins[groups]


@dataclass(frozen=True, eq=False)
class add_group_decay(T.Transform):
    """``u ← u + w ⊙ d(θ)`` with ``d`` of the module docstring's table (``kind``)."""

    weight_decay: float
    l1_ratio: float
    kind: str
    weights: np.ndarray
    groups: np.ndarray

    def update(self, u, state, params, t, lr_t):
        if self.kind == "min":
            d = self.weight_decay * (group_minima(params, self.groups) * np.sign(params))
        elif self.l1_ratio == 0.0:
            d = self.weight_decay * params
        else:
            d = self.weight_decay * ((1.0 - self.l1_ratio) * params + self.l1_ratio * np.sign(params))
        return u + self.weights * d, state

    def compiled_state(self, params):
        """Rows ``[w, G]``: the decay weights and the group indices (as floats) of the compiled step."""
        if len(self.weights) != params.shape[0]:
            raise ValueError(f"Invalid weights: {len(self.weights)} decay weights for {params.shape[0]} parameters")
        return np.stack([np.asarray(self.weights, dtype=np.float64), np.asarray(self.groups, dtype=np.float64)])

    def element_update(self):
        """``u + w_i d_i`` with the weights in state row ``$s0`` and the groups in ``$s1``; "min" first takes the
        group minima of ``|θ|`` (before the step) in a pass of its own."""
        if self.kind == "min":
            setup = """ng$j = 1
for i in range(theta.shape[0]):
    ng$j = max(ng$j, int(state[$s1, i]) + 1)
mins$j = np.full(ng$j, np.inf)
for i in range(theta.shape[0]):
    k$j = int(state[$s1, i])
    mins$j[k$j] = min(mins$j[k$j], abs(theta[i]))"""
            setup_np = """groups$j = state[$s1].astype(np.int64)
mins$j = np.full(int(groups$j.max()) + 1, np.inf)
np.minimum.at(mins$j, groups$j, np.abs(theta))"""
            return T.ElementUpdate(("min",), (self.weight_decay,), 2, setup,
                                   "u = u + state[$s0$i] * ($h0 * (mins$j[int(state[$s1$i])] * np.sign(th)))",
                                   setup_np, "u = u + state[$s0] * ($h0 * (mins$j[groups$j] * np.sign(th)))",
                                   widens=True)
        # the decay direction in θ's precision, its weighting in float64 (a float32 state's weight times it)
        if self.l1_ratio == 0.0:
            return T.ElementUpdate(("l2",), (self.weight_decay,), 2, "lam$j = like(theta, $h0)",
                                   "u = u + state[$s0$i] * _f64(lam$j * th)", widens=True)
        return T.ElementUpdate(("l1l2",), (self.weight_decay, self.l1_ratio), 2,
                               "lam$j, rho$j, omr$j = like(theta, $h0), like(theta, $h1), like(theta, 1.0 - $h1)",
                               "u = u + state[$s0$i] * _f64(lam$j * (omr$j * th + rho$j * np.sign(th)))",
                               widens=True)


def adamw_decay(kind: str = "l2", lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                weight_decay: float | None = None, l1_ratio: float = 0.5, weights=None, groups=None,
                n_params: int | None = None) -> O.Optimizer:
    """AdamW with decoupled decay of ``kind`` (module docstring), optionally weighted per parameter.

    Without weights and groups, ``l2``/``l1``/``l1l2`` are exactly :func:`~dyntools.optim.optimizers.adamw`,
    ``adamw_l1``, ``adamw_l1l2`` (the same fused branch, bit for bit).

    Parameters
    ----------
    kind : {"l2", "l1", "l1l2", "min"}, default "l2"
        The decay direction ``d(θ)`` (the module's table).
    lr : float, default 1e-3
        The learning rate η.
    betas : pair of float, default (0.9, 0.999)
        Adam's moment decay rates.
    eps : float, default 1e-8
        Adam's ε.
    weight_decay : float, optional
        λ ≥ 0 (default 1e-2, and 1.0 for ``min`` as in the study).
    l1_ratio : float, default 0.5
        ρ of ``l1l2`` (``l1`` is ρ = 1, ``l2`` ρ = 0).
    weights : array_like, optional
        Per-parameter decay weights w ≥ 0 (default all ones).
    groups : array_like of int, optional
        The group of each parameter (for ``min``).
    n_params : int, optional
        The length of θ (needed for ``min`` when neither weights nor groups are given).

    Returns
    -------
    Optimizer
    """
    validation.one_of("decay", kind, KINDS)
    if weight_decay is None:
        weight_decay = 1.0 if kind == "min" else 1e-2
    rho = {"l2": 0.0, "l1": 1.0, "min": 1.0}.get(kind)
    if rho is None:
        rho = validation.in_interval("l1_ratio", l1_ratio, 0.0, 1.0, closed_high=True)
    if weights is None and groups is None and kind != "min":
        factory = {"l2": O.adamw, "l1": O.adamw_l1}.get(kind)
        if factory is not None:
            return factory(lr, betas, eps, weight_decay)
        return O.adamw_l1l2(lr, betas, eps, weight_decay, l1_ratio=rho)
    lr, eps, weight_decay = O._lr(lr), O._eps(eps), O._wd(weight_decay)
    b1, b2 = O._betas(betas)
    lengths = {len(a) for a in (weights, groups) if a is not None}
    if n_params is not None:
        lengths.add(validation.count("n_params", n_params))
    if len(lengths) != 1:
        raise ValueError("Invalid weights: need the parameter count (weights, groups or n_params of one length)")
    p = lengths.pop()
    w = np.ones(p) if weights is None else validation.finite_array("weights", weights, ndim=1)
    if np.any(w < 0):
        raise ValueError("Invalid weights: decay weights must be >= 0")
    gr = np.zeros(p, dtype=np.int64) if groups is None else np.asarray(groups)
    if gr.ndim != 1 or not np.issubdtype(gr.dtype, np.integer) or gr.min() < 0:
        raise ValueError("Invalid groups: expected non-negative integer group indices, one per parameter")
    gr = gr.astype(np.int64)
    chain = T.chain(T.scale_by_adam(b1, b2, eps, False), add_group_decay(weight_decay, rho, kind, w, gr))
    name = {"l2": "adamw", "l1": "adamw_l1", "l1l2": "adamw_l1l2", "min": "adamw_min"}[kind]
    return O.Optimizer(name, lr, chain, dict(betas=(b1, b2), eps=eps, weight_decay=weight_decay, l1_ratio=rho,
                                             decay=kind, decay_weights=w, decay_groups=gr,
                                             decay_position=O.DECOUPLED))


def adamw_min(lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1.0, *,
              n_params: int | None = None, weights=None, groups=None) -> O.Optimizer:
    """AdamW with the "min" decay of seed 000's code: ``θ ← θ − lr_t (m̂/(√v̂ + ε) + λ min_G|θ| sign θ)``."""
    return adamw_decay("min", lr, betas, eps, weight_decay, weights=weights, groups=groups, n_params=n_params)
