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

— per coordinate in the coordinatewise form, where ∇²h is block diagonal over ``j`` — each by one reverse
(adjoint) pass over the expression DAG (:func:`gradient`): exact sympy expressions, all ``p`` partials at
once (a dense ReLU net with p = 991: about half a second, where ``p`` calls of ``sympy.diff`` took 7–13 s).
The loss heads (square loss, softmax cross-entropy) combine these in the generated code
(:mod:`dyntools.codegen.kernels`).

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


def _check_differentiated(out, node, sym, name_of):
    """``out`` (a derivative of ``node`` with respect to ``sym``), or a ``ValueError`` naming the construct
    sympy left undifferentiated."""
    bad = _undifferentiable(out)
    if bad is not None:
        shown = bad.xreplace({s: sp.Symbol(name_of(s)) for s in bad.free_symbols})
        raise ValueError(f"Invalid predictor: sympy cannot differentiate {sp.sstr(shown)} with respect to "
                         f"{name_of(sym)}")
    return out


def _postorder(expr, wrt: set):
    """The nodes of ``expr`` that depend on a symbol of ``wrt``, each once, children before parents
    (equal subexpressions are one node: sympy expressions are compared by value)."""
    depends: dict = {}
    order: list = []
    stack = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depends:
            continue
        if expanded or not node.args:
            if node.args:
                depends[node] = any(depends[a] for a in node.args if a in depends)
            else:
                depends[node] = node in wrt
            if depends[node]:
                order.append(node)
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in depends)
    return order, depends


def _local_partials(node, depends, wrt, name_of):
    """``[(child, ∂node/∂child)]`` over the children of ``node`` that depend on ``wrt``; None when ``node``
    is differentiated as a whole (:func:`gradient` then asks sympy for ``∂node/∂θ`` directly)."""
    args = node.args
    if isinstance(node, sp.Add):
        return [(a, sp.S.One) for a in args if depends.get(a)]
    if isinstance(node, sp.Mul):
        return [(a, sp.Mul(*(args[:i] + args[i + 1:]))) for i, a in enumerate(args) if depends.get(a)]
    if isinstance(node, sp.Pow):
        base, exp = args
        out = [(base, exp * base ** (exp - 1))] if depends.get(base) else []
        return out + ([(exp, node * sp.log(base))] if depends.get(exp) else [])
    if isinstance(node, sp.Function) and not isinstance(node, sp.Piecewise):
        out = []
        for i, a in enumerate(args):
            if depends.get(a):
                sym = sorted(a.free_symbols & wrt, key=str)[0]
                out.append((a, _check_differentiated(node.fdiff(i + 1), node, sym, name_of)))
        return out
    return None


def gradient(expr, wrt: list, name_of) -> list:
    """``[∂expr/∂w for w in wrt]``, exact, by one reverse (adjoint) pass over the expression DAG.

    Every node ``u`` gets the adjoint ``ū = ∂expr/∂u = Σ_{parents P} P̄ · ∂P/∂u`` (parents first), with
    the local derivatives of sympy: ``∂(a+b)/∂a = 1``, ``∂(ab)/∂a = b``, ``∂(a^e)/∂a = e a^{e−1}``,
    ``∂(a^e)/∂e = a^e log a`` and ``f.fdiff`` for a function (``relu → Heaviside``); any other node
    (``Piecewise``, ``Max`` of several arguments…) is differentiated by sympy as a whole. All the partial
    derivatives come from one pass that shares the adjoints of common subexpressions — ``p`` calls of
    ``sympy.diff`` each traverse the whole expression, tens of times slower for a dense net of p ≈ 1000."""
    wrt_set = set(wrt)
    order, depends = _postorder(sp.sympify(expr), wrt_set)
    terms: dict = {order[-1]: [sp.S.One]} if order else {}
    result: dict = {}
    for node in reversed(order):
        adjoint = sp.Add(*terms.pop(node, []))
        if node in wrt_set:
            result[node] = adjoint
            continue
        if adjoint == 0:
            continue
        partials = _local_partials(node, depends, wrt_set, name_of)
        if partials is None:
            for sym in sorted(node.free_symbols & wrt_set, key=str):
                d = _check_differentiated(sp.diff(node, sym), node, sym, name_of)
                if d != 0:
                    terms.setdefault(sym, []).append(adjoint * d)
            continue
        for child, d in partials:
            terms.setdefault(child, []).append(adjoint * d)
    return [result.get(w, sp.S.Zero) for w in wrt]


def jacobian(der: Derivation, name_of, seconds: float | None = None) -> list[list]:
    """``J[k][m] = ∂h_k/∂θ_m`` by :func:`gradient` (``name_of`` gives the user's name of an internal
    symbol, for messages); sympy work beyond ``seconds`` raises a ``ValueError`` (the expression is too
    large)."""
    try:
        with time_limit(seconds):
            return [gradient(h, der.theta, name_of) for h in der.outputs]
    except ProofTimeout:
        raise ValueError(f"Invalid predictor: differentiating it takes more than the budget of {seconds:g} s "
                         f"({len(der.theta)} parameters × {len(der.outputs)} outputs); declare repeated "
                         "coordinates with coordinates=d, or raise budget=") from None


def direction_symbols(n: int) -> list:
    """The symbols ``v0 … v{n−1}`` of a Hessian direction."""
    return list(sp.symbols(f"v0:{n}", real=True)) if n else []


def hessian_direction(der: Derivation, jac: list[list], name_of, seconds: float | None = None) -> list[list]:
    """``HV[k][m] = Σ_{m'} ∂²h_k/∂θ_m∂θ_{m'} v_{m'}`` in the symbols of :func:`direction_symbols`: the
    :func:`gradient` of the directional derivative ``Σ_{m'} J_{km'} v_{m'}``."""
    v = direction_symbols(len(der.theta))
    try:
        with time_limit(seconds):
            return [gradient(sum((j * vi for j, vi in zip(row, v)), sp.Integer(0)), der.theta, name_of)
                    for row in jac]
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
