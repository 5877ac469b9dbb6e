"""Exact derivatives of a symbolic model's predictor: the Jacobian and the Hessian in a direction.

A :class:`Derivation` is the canonical form of a model declared with
:class:`dyntools.models.symbolic.SymbolicModel`, written in internal symbols: ``t0 … t{p−1}`` for the
parameters and ``x0 …`` for the inputs. Its predictor has ``K`` outputs ``h_k``; it is either

* **dense**: ``h_k(θ, x)`` with one symbol per scalar parameter, or
* **coordinatewise**: ``h(θ, x) = Σ_{j<d} f(θ_{1j}, …, θ_{cj}, x_j)`` (``K = 1``): ``c`` parameter
  *blocks* of length ``d`` and one input per coordinate; only the summand ``f`` is symbolic, so a
  ``d = 200`` diagonal network is three symbols, not four hundred.

From it sympy derives, exactly,

    J_{km} = ∂h_k/∂θ_m                                  (:func:`jacobian`: the rows of φ_θ(x))
    (∇²h_k · v)_m = ∂/∂θ_m Σ_{m'} J_{km'} v_{m'}          (:func:`hessian_direction`, directions ``v``)

— per coordinate in the coordinatewise form, where ∇²h is block diagonal over ``j``. The loss heads
(square loss, softmax cross-entropy) combine these in the generated code (:mod:`dyntools.codegen.kernels`).

A construct sympy cannot differentiate (an undefined function, ``floor``…) leaves an unevaluated
``Derivative``: :func:`jacobian` raises a ``ValueError`` naming it. Derivatives of ``Max(z, 0)`` are
``Heaviside(z)`` and ``DiracDelta(z)``; the code generators evaluate them with the almost-everywhere
convention ``H(0) = 0`` (PyTorch's ReLU derivative) and ``δ = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from dyntools.time_budget import ProofTimeout, time_limit

MODES = ("dense", "coordinatewise")


class relu(sp.Function):  # noqa: N801  (a sympy function is named like the mathematical one)
    """``relu(z) = max(z, 0)`` with the derivative ``Heaviside(z)``: what ``Max(z, 0)`` becomes before
    differentiation (sympy's own ``Max`` derivative is exact too, but tens of times slower)."""

    is_real = True

    def fdiff(self, argindex=1):
        return sp.Heaviside(self.args[0])

    @classmethod
    def eval(cls, z):
        if z.is_number:
            return sp.Max(z, 0)
        return None


def with_relu(expr):
    """``expr`` with every ``Max(z, 0)`` written ``relu(z)``."""
    def is_relu(e):
        return isinstance(e, sp.Max) and len(e.args) == 2 and sp.S.Zero in e.args

    return sp.sympify(expr).replace(is_relu, lambda e: relu(e.args[1] if e.args[0] == 0 else e.args[0]))


@dataclass
class Derivation:
    """The predictor in internal symbols (see the module docstring)."""

    mode: str
    outputs: list                # K expressions (coordinatewise: the summand f, K = 1)
    theta: list                  # p parameter symbols (coordinatewise: one per block)
    inputs: list                 # input symbols (coordinatewise: one, the coordinate x_j)
    features: dict = field(default_factory=dict)   # name → list of expressions (hidden activations)

    def canonical(self) -> str:
        """A text that determines the generated code (hashed for the code cache)."""
        parts = [self.mode, sp.srepr(list(self.outputs)), sp.srepr(list(self.theta)), sp.srepr(list(self.inputs))]
        parts += [f"{k}:{sp.srepr(list(v))}" for k, v in sorted(self.features.items())]
        return "\n".join(parts)


def _undifferentiable(expr):
    """The first construct of ``expr`` sympy left undifferentiated (``f(z)`` of a ``Derivative`` of ``f``,
    or of ``Subs(Derivative(f(ξ), ξ), ξ, z)``), or None."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Subs) and isinstance(node.expr, sp.Derivative):
            inner = node.expr.expr
            return inner.xreplace(dict(zip(node.variables, node.point)))
        if isinstance(node, sp.Derivative):
            return node.expr
    return None


def _diff(expr, sym, name_of):
    out = sp.diff(expr, sym)
    bad = _undifferentiable(out)
    if bad is not None:
        shown = bad.xreplace({s: sp.Symbol(name_of(s)) for s in bad.free_symbols})
        raise ValueError(f"Invalid predictor: sympy cannot differentiate {sp.sstr(shown)} with respect to "
                         f"{name_of(sym)}")
    return out


def jacobian(der: Derivation, name_of, seconds: float | None = None) -> list[list]:
    """``J[k][m] = ∂h_k/∂θ_m`` (``name_of`` gives the user's name of an internal symbol, for messages);
    sympy work beyond ``seconds`` raises a ``ValueError`` (the expression is too large)."""
    try:
        with time_limit(seconds):
            return [[_diff(h, t, name_of) for t in der.theta] for h in der.outputs]
    except ProofTimeout:
        raise ValueError(f"Invalid predictor: differentiating it takes more than the budget of {seconds:g} s "
                         f"({len(der.theta)} parameters × {len(der.outputs)} outputs); declare repeated "
                         "coordinates with coordinates=d, or raise budget=") from None


def direction_symbols(n: int) -> list:
    """The symbols ``v0 … v{n−1}`` of a Hessian direction."""
    return list(sp.symbols(f"v0:{n}", real=True)) if n else []


def hessian_direction(der: Derivation, jac: list[list], name_of, seconds: float | None = None) -> list[list]:
    """``HV[k][m] = Σ_{m'} ∂²h_k/∂θ_m∂θ_{m'} v_{m'}`` in the symbols of :func:`direction_symbols`."""
    v = direction_symbols(len(der.theta))
    try:
        with time_limit(seconds):
            out = []
            for row in jac:
                directional = sum((j * vi for j, vi in zip(row, v)), sp.Integer(0))
                out.append([_diff(directional, t, name_of) for t in der.theta])
            return out
    except ProofTimeout:
        raise ValueError(f"Invalid predictor: its Hessian takes more than the budget of {seconds:g} s to derive "
                         f"({len(der.theta)} parameters); declare repeated coordinates with coordinates=d") from None


def split_separable(expr, inputs) -> tuple | None:
    """``(P, G)`` with ``expr = P · G``, ``P`` free of the inputs and ``G`` of everything else, or None.

    A separable Jacobian entry lets the kernel sum ``c_q G(x_q)`` over the batch and multiply by
    ``P(θ)`` once (the hand-written diagonal-net kernel's order of work)."""
    indep, dep = sp.sympify(expr).as_independent(*inputs, as_Add=False)
    if dep.free_symbols - set(inputs):
        return None
    return indep, dep
