"""Gradients of a two-layer ReLU network h_{a,W}(x) = ⟨a, σ(Wx)⟩ (seed 004, implicit bias).

σ(z) = max(z, 0) is written as the piecewise function (z if z > 0, else 0); its derivative is taken
branchwise, which gives 1{z > 0} — at the kink z = 0 this is the subgradient convention of the seed
(and of autograd), since σ is not differentiable there. Neurons j = 1, …, m have separate
parameters (a_j, w_j), so h = Σ_j a_j σ(⟨w_j, x⟩) and each gradient involves one neuron only; the
input dimension d is symbolic (a generic coordinate K ≤ d).

Run alone: ``python -m dyntools.proofs relu-nets`` (or ``dyntools prove relu-nets --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("relu-nets", order=90)

j, k, J, K = sp.symbols("j k J K", integer=True, positive=True)
e_m, e_d = sp.symbols("e_m e_d", integer=True, positive=True)
m, d = J + e_m - 1, K + e_d - 1  # a width m ≥ J and an input dimension d ≥ K
a, W, x = sp.IndexedBase("a", real=True), sp.IndexedBase("w", real=True), sp.IndexedBase("x", real=True)


def relu(z):
    return sp.Piecewise((z, z > 0), (0, True))


def step(z):
    """1{z > 0}."""
    return sp.Piecewise((1, z > 0), (0, True))


def pre(jj):
    """⟨w_j, x⟩ = Σ_k w_{jk} x_k over the symbolic dimension d."""
    return sp.Sum(W[jj, k] * x[k], (k, 1, d))


def _clean(expr, *bounds):
    expr = sp.piecewise_fold(expr.doit())
    for b in bounds:
        expr = expr.subs(b, True)
    return sp.piecewise_fold(expr)


def _sift(proof, derivative, what):
    """Σ_j δ_{Jj} f(j) = f(J) for 1 ≤ J ≤ m: check that every term j ≠ J vanishes, keep the J-th."""
    total = derivative.doit()
    if not (isinstance(total, sp.Sum) and list(total.variables) == [j]):
        raise ValueError(f"expected a sum over the neurons, got {total}")
    summand = total.function
    proof.identity(f"{what}: every neuron j ≠ J contributes 0 (its term has the factor δ_Jj)",
                   summand.subs(sp.KroneckerDelta(J, j), 0), 0)
    return _clean(summand.subs(j, J))


def _h():
    return sp.Sum(a[j] * relu(pre(j)), (j, 1, m))


def prove_gradients(proof):
    h = _h()
    proof.note("h_{a,W}(x) = Σ_{j=1}^m a_j σ(⟨w_j, x⟩), symbolic width m and input dimension d:", (sp.Symbol("h"), h))
    da = _sift(proof, h.diff(a[J]), "∂h/∂a_J")
    proof.identity("∂h/∂a_J = σ(⟨w_J, x⟩), i.e. ∇_a h = σ(Wx)", da, relu(pre(J)),
                   show=(sp.Derivative(sp.Symbol("h"), a[J]), relu(pre(J))))
    dw = _sift(proof, h.diff(W[J, K]), "∂h/∂w_{JK}").subs(sp.Le(K, d), True)
    proof.identity("∂h/∂w_{JK} = a_J x_K 1{⟨w_J, x⟩ > 0}, i.e. ∇_{w_j} h = a_j x 1{⟨w_j, x⟩ > 0}",
                   dw, a[J] * x[K] * step(pre(J)),
                   show=(sp.Derivative(sp.Symbol("h"), W[J, K]), a[J] * x[K] * step(pre(J))))


def prove_control(proof):
    """Forgetting the indicator: ∇_{w} h = a x for one neuron in d = 1."""
    aa, w1, x1 = sp.symbols("a w x", real=True)
    proof.identity("∂/∂w of a σ(w x) equals a x (no indicator)", sp.diff(aa * relu(w1 * x1), w1), aa * x1,
                   points=[{aa: 1, w1: -1, x1: 1}])  # away from the kink: no convention involved


CLAIMS = [
    Claim(
        "relu-net-gradients",
        "Two-layer ReLU network: ∇_a h = σ(Wx), ∇_{w_j} h = a_j x 1{⟨w_j, x⟩ > 0}",
        "For h_{a,W}(x) = ⟨a, σ(Wx)⟩ with σ = ReLU (derivative 1{z > 0}), width m and input dimension d "
        "symbolic: ∇_a h = σ(Wx) and ∇_{w_j} h = a_j x 1{⟨w_j, x⟩ > 0}.",
        r"\nabla_a h = \sigma(Wx),\quad \nabla_{w_j} h = a_j x\,\mathbf{1}_{\langle w_j, x\rangle > 0}",
        prove_gradients,
        {"m, d": "symbolic", r"\sigma'(0)": r"0 \text{ (subgradient convention)}"},
        "seed 004 (implicit bias, ReLU networks)",
    ),
    Claim(
        "relu-gradient-without-indicator",
        "CONTROL: ∇_w a σ(⟨w, x⟩) = a x",
        "False control: the ReLU neuron's weight gradient without the activation indicator.",
        r"\nabla_w\, a\sigma(\langle w, x\rangle) = a x",
        prove_control,
        {},
        "tempting slip",
        expected="refuted",
    ),
]
