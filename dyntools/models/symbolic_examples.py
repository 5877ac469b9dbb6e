"""Built-in models re-declared as :class:`~dyntools.models.symbolic.SymbolicModel` s (each a few lines).

They are the proof that the generated code is the real thing (the tests hold their trajectories equal
to the hand-written kernels') and the examples a user copies:

* :func:`diagonal_net` — ``h(x) = Σ_j u_j v_j x_j`` (depth 2, :class:`~dyntools.models.diag_net.DiagNet`)
  or ``Σ_j u_j v_j w_j x_j`` (depth 3), declared on one coordinate;
* :func:`quadratic_toy` — ``h(x) = x θ²`` with the loss ``¼ (h − y)²``
  (:class:`~dyntools.models.quadratic_toy.ToyModel`);
* :func:`relu_net` — ``h(x) = A max(Wx + b, 0) + c`` with K outputs, θ laid out as
  :class:`~dyntools.models.mlp.MLP` ``((d, m, K))`` lays it out (W, b, A, c row-major), regression
  (``(h − y)²``, no ½, the MLP's) or cross-entropy head;
* :func:`one_unit_linear_net` — ``h(x) = s Σ_j u_j x_j``, a linear network with one hidden unit: a scalar
  shared by all coordinates, declared as an ``sp.Sum`` (compiled densely).
"""

from __future__ import annotations

import sympy as sp

from dyntools.models.symbolic import SymbolicModel

NAMES = "uvwstrq"


def diagonal_net(d: int, *, depth: int = 2, init=None, **kwargs) -> SymbolicModel:
    """``h(x) = Σ_j (Π_l θ_{l,j}) x_j`` with ``depth`` factors named u, v, w, … (θ = [u; v; w; …])."""
    if not 2 <= int(depth) <= len(NAMES):
        raise ValueError(f"Invalid depth: {depth} (expected 2 … {len(NAMES)})")
    factors = sp.symbols(" ".join(NAMES[:int(depth)]))
    x = sp.Symbol("x")
    return SymbolicModel(sp.Mul(*factors) * x, params=list(factors), inputs=x, coordinates=d, init=init,
                         name=kwargs.pop("name", f"diagonal-net-{depth}"), **kwargs)


def quadratic_toy(**kwargs) -> SymbolicModel:
    """``h(x) = x θ²``, loss ``¼ (h − y)²``."""
    theta, x = sp.symbols("theta x")
    return SymbolicModel(x * theta**2, params=[theta], inputs=x, loss_scale=0.25,
                         name=kwargs.pop("name", "quadratic-toy"), **kwargs)


def relu_net(d: int, m: int, *, outputs: int = 1, head: str = "regression", **kwargs) -> SymbolicModel:
    """One hidden ReLU layer of width ``m`` (features ``"hidden"``: its activations)."""
    W = sp.Matrix(m, d, lambda i, j: sp.Symbol(f"W{i}_{j}"))
    b = sp.Matrix(m, 1, lambda i, _: sp.Symbol(f"b{i}"))
    A = sp.Matrix(outputs, m, lambda k, i: sp.Symbol(f"A{k}_{i}"))
    c = sp.Matrix(outputs, 1, lambda k, _: sp.Symbol(f"c{k}"))
    x = sp.Matrix(d, 1, lambda j, _: sp.Symbol(f"x{j}"))
    hidden = (W * x + b).applyfunc(lambda z: sp.Max(z, 0))
    h = A * hidden + c
    return SymbolicModel(h[0] if outputs == 1 else h, params={"W": W, "b": b, "A": A, "c": c}, inputs=x, head=head,
                         loss_scale=1.0, features={"hidden": hidden}, name=kwargs.pop("name", "relu-net"), **kwargs)


def one_unit_linear_net(d: int, **kwargs) -> SymbolicModel:
    """``h(x) = s Σ_j u_j x_j`` (θ = [u; s], d + 1 entries): declared with an ``sp.Sum`` over ``IndexedBase``
    coordinates and a plain Symbol ``s``, which the coordinatewise form cannot take — it is expanded into
    the dense declaration of the same model."""
    j = sp.Idx("j")
    u, x = sp.IndexedBase("u"), sp.IndexedBase("x")
    s = sp.Symbol("s")
    return SymbolicModel(s * sp.Sum(u[j] * x[j], (j, 0, int(d) - 1)), params=[u, s], inputs=x,
                         name=kwargs.pop("name", "one-unit-linear-net"), **kwargs)
