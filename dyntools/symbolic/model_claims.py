"""Claims about a :class:`~dyntools.models.symbolic.SymbolicModel`, stated on the same expression that
the generated kernels compute (``dt.model_claims``; usable in a ``dyntools prove --file`` file).

* :func:`gradient_claim` — the user's hand-written derivative equals the derived one:
  ``∂h/∂θ`` (``of="predictor"``) or ``∂ℓ/∂θ`` of the per-example loss ``ℓ = s (h − y)²``
  (``of="loss"``, dense models; ``y`` the symbol :data:`Y`);
* :func:`fixed_point_claim` — a point is a fixed point of the model's full-batch GD map
  ``θ ↦ θ − η ∇L(θ)`` on a given (small) data set, for every step ``η`` (exact rational data);
* :func:`sde_drift_claim` — the drift ``b(θ) = −(2s/n) Σ_i φ_θ(x_i)ᵀ (h_θ(x_i) − y_i)`` that
  :func:`dyntools.sde_models.label_noise_sde` integrates for this model equals ``−∇L`` of its loss
  ``L = (1/n) Σ_i s (h_θ(x_i) − y_i)²`` (symbolic samples ``x_i``, ``y_i``).

Each returns a :class:`~dyntools.symbolic.core.Claim` (``Claim.equation``): exact simplification, with a
counterexample search first, so a wrong hand derivative comes out *refuted*. Coordinatewise models are
expanded to ``d`` explicit coordinates where the claim needs the whole predictor (keep ``d`` small).
"""

from __future__ import annotations

import sympy as sp

from dyntools.docstrings import with_sections
from dyntools.symbolic.core import Claim

#: the label of one example in :func:`gradient_claim` (``of="loss"``)
Y = sp.Symbol("y", real=True)
ETA = sp.Symbol("eta", positive=True)

#: the sections of each claim builder's docstring; ``{own}``: its own parameters besides these
_CLAIM_SECTIONS = """Parameters
----------
model : SymbolicModel
    The user's model.
name : str
    The claim's name.
{own}**kwargs
    Passed to the :class:`~dyntools.symbolic.core.Claim` (``title``, ``source``, ``domains``, …).

Returns
-------
Claim
"""


def _to_user(model, expr):
    return sp.sympify(expr).xreplace(model.user_symbols)


@with_sections(_CLAIM_SECTIONS, own="derivative : dict\n"
               "    Parameter symbol → the hand-written derivative (a sympy expression).\n"
               'of : {"predictor", "loss"}, default "predictor"\n'
               "    Differentiate the predictor h or the loss ℓ.\n")
def gradient_claim(model, name: str, derivative: dict, *, of: str = "predictor", **kwargs) -> Claim:
    """``derivative[θ_m] = ∂h/∂θ_m`` (or ``∂ℓ/∂θ_m``) for every parameter symbol given (the user's symbols;
    coordinatewise models: the per-coordinate symbols, e.g. ``∂(uvwx)/∂u = v w x``)."""
    if of not in ("predictor", "loss"):
        raise ValueError(f"Invalid of: {of!r} (expected 'predictor' or 'loss')")
    der = model.derivation
    if of == "loss" and (der.mode != "dense" or model.head != "regression"):
        raise ValueError("Invalid of: 'loss' needs a dense model with the regression head")
    by_user = {v: k for k, v in model.user_symbols.items()}
    lhs, rhs = [], []
    for sym, value in derivative.items():
        if sym not in by_user or by_user[sym] not in der.theta:
            raise ValueError(f"Invalid derivative: {sym} is not a parameter of the model {model.name!r}")
        t = by_user[sym]
        h = der.outputs[0]
        target = h if of == "predictor" else model.loss_scale * (h - Y) ** 2
        rhs.append(_to_user(model, sp.diff(target, t)))
        lhs.append(sp.sympify(value))
    what = "∂h/∂θ" if of == "predictor" else "∂ℓ/∂θ"
    return Claim.equation(name, sp.Matrix(lhs), sp.Matrix(rhs),
                          title=kwargs.pop("title", f"{model.name}: the hand-written {what} equals the derived one"),
                          **kwargs)


def _exact(value):
    return sp.Rational(float(value)) if not isinstance(value, sp.Basic) else value


def full_predictor(model, x_row) -> sp.Expr:
    """``h_θ(x)`` with the inputs replaced by ``x_row`` and every parameter an explicit user symbol
    (coordinatewise: ``u_j`` for coordinate j).

    Parameters
    ----------
    model : SymbolicModel
        The user's model.
    x_row : sequence
        The values (or symbols) of the inputs.
    """
    der = model.derivation
    if der.mode == "dense":
        return _to_user(model, der.outputs[0].xreplace(dict(zip(der.inputs, x_row))))
    total = sp.Integer(0)
    for j, xj in enumerate(x_row):
        subs = {t: sp.Symbol(f"{model.user_symbols[t]}_{j}", real=True) for t in der.theta}
        subs[der.inputs[0]] = xj
        total += der.outputs[0].xreplace(subs)
    return total


def parameter_symbols(model) -> list:
    """The user symbols of θ in its layout (coordinatewise: ``u_0 … u_{d−1}, v_0 …``).

    Parameters
    ----------
    model : SymbolicModel
        The user's model.
    """
    der = model.derivation
    if der.mode == "dense":
        return [model.user_symbols[t] for t in der.theta]
    return [sp.Symbol(f"{model.user_symbols[t]}_{j}", real=True) for t in der.theta for j in range(model.coordinates)]


@with_sections(_CLAIM_SECTIONS, own="point : dict\n    Parameter symbol → value at the claimed fixed point.\n"
                                    "X, y : array_like\n    The data (taken exactly as rationals).\n")
def fixed_point_claim(model, name: str, point: dict, X, y, **kwargs) -> Claim:
    """``θ* − η ∇L(θ*) = θ*`` for every η, with ``L = (1/n) Σ s (h(x_i) − y_i)²`` on the data ``X, y``
    (floats taken exactly as rationals); ``point`` maps parameter symbols (see :func:`parameter_symbols`)
    to values; the others stay symbolic."""
    if model.head != "regression":
        raise ValueError("Invalid model: fixed_point_claim needs the regression head")
    rows = [[_exact(v) for v in row] for row in X]
    ys = [_exact(v) for v in y]
    loss = sum((model.loss_scale * (full_predictor(model, r) - yi) ** 2 for r, yi in zip(rows, ys)),
               sp.Integer(0)) / len(rows)
    theta = parameter_symbols(model)
    by_name = {str(t): t for t in theta}
    unknown = [k for k in point if str(k) not in by_name]
    if unknown:
        raise ValueError(f"Invalid point: {unknown[0]} is not a parameter symbol (expected among "
                         f"{', '.join(map(str, theta[:6]))}…)")
    subs = {by_name[str(k)]: sp.sympify(v) for k, v in point.items()}
    th = sp.Matrix(theta).xreplace(subs)
    step = th - ETA * sp.Matrix([sp.diff(loss, t) for t in theta]).xreplace(subs)
    return Claim.equation(name, step, th, title=kwargs.pop("title", f"{model.name}: a fixed point of GD"),
                          domains=kwargs.pop("domains", {ETA: sp.Interval.open(0, sp.oo)}), **kwargs)


@with_sections(_CLAIM_SECTIONS, own="n : int, default 2\n    The number of symbolic samples.\n")
def sde_drift_claim(model, name: str, n: int = 2, **kwargs) -> Claim:
    """The label-noise SDE's drift built from the derived Jacobian equals ``−∇L`` (see the module docstring),
    on ``n`` symbolic samples (coordinatewise models: ``d`` must be small)."""
    if model.head != "regression":
        raise ValueError("Invalid model: the label-noise SDE needs the regression head")
    width = model.n_inputs
    xs = [[sp.Symbol(f"x{i}_{c}", real=True) for c in range(width)] for i in range(n)]
    ys = list(sp.symbols(f"y0:{n}", real=True))
    theta = parameter_symbols(model)
    hs = [full_predictor(model, row) for row in xs]
    s = sp.nsimplify(model.loss_scale)
    loss = sum((s * (h - yi) ** 2 for h, yi in zip(hs, ys)), sp.Integer(0)) / n
    minus_grad = -sp.Matrix([sp.diff(loss, t) for t in theta])
    jac = [model.jacobian_symbolic(row) for row in xs]                     # the rows φ_θ(x_i) the code uses
    drift = -(2 * s / n) * sum((sp.Matrix(J) * (h - yi) for J, h, yi in zip(jac, hs, ys)), sp.zeros(len(theta), 1))
    return Claim.equation(name, drift, minus_grad,
                          title=kwargs.pop("title", f"{model.name}: the label-noise SDE's drift is −∇L"), **kwargs)
