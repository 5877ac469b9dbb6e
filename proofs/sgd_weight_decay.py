"""SGD: L2 regularization is weight decay; with momentum the decay lands in the buffer; SGDW differs.

Seed 001 (Q1.a.i, Q1.a.ii) and seed 002 (SGD with momentum and L2). Coordinates are written
for a vector θ of symbolic dimension n: θ_i is the i-th coordinate of an ``IndexedBase``, i a
symbolic index with 1 ≤ i ≤ n, and every update acts coordinatewise, so an identity for the
generic coordinate i is an identity of vectors.

PyTorch semantics for momentum μ and dampening τ: the buffer starts as b₁ = d₁ (the first
gradient, undamped) and then b_t = μ b_{t−1} + (1 − τ) d_t; θ_t = θ_{t−1} − α b_t.

Run alone: ``python -m dyntools.proofs sgd-weight-decay`` (or ``dyntools prove sgd-weight-decay --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("sgd-weight-decay", order=10)

i, j, k = sp.symbols("i j k", integer=True, positive=True)
n = i + k - 1  # a dimension n ≥ i: the coordinate i exists
theta, g = sp.IndexedBase("theta"), sp.IndexedBase("g")
alpha, lam_p, lam = sp.symbols("alpha lambda' lambda", positive=True)
mu, tau = sp.symbols("mu tau", nonnegative=True)


def _l2_gradient(proof):
    """∂/∂θ_i of (λ'/2) Σ_j θ_j² for the symbolic dimension n."""
    reg = lam_p / 2 * sp.Sum(theta[j] ** 2, (j, 1, n))
    grad = sp.piecewise_fold(reg.diff(theta[i]).doit())
    grad = grad.subs(sp.Le(i, n), True) if isinstance(grad, sp.Piecewise) else grad
    grad = sp.simplify(sp.piecewise_fold(grad))
    proof.identity(
        "Gradient of the L2 term: d/dθ_i (λ'/2)‖θ‖² = λ'θ_i (sum over the symbolic dimension n)",
        grad,
        lam_p * theta[i],
        show=(sp.Derivative(reg, theta[i]), lam_p * theta[i]),
    )
    return grad


def prove_sgd_l2(proof):
    l2 = _l2_gradient(proof)
    step_l2 = theta[i] - alpha * (g[i] + l2)
    step_decay = (1 - lam) * theta[i] - alpha * g[i]
    proof.note(
        "One SGD step on f + (λ'/2)‖θ‖² (g_i = ∂f/∂θ_i at the current point):",
        (sp.Symbol(r"\theta_i^{+}"), step_l2),
    )
    proof.note("Weight-decay step with factor λ:", (sp.Symbol(r"\theta_i^{+}"), step_decay))
    coeff = sp.expand(step_l2 - step_decay).coeff(theta[i])
    rest = sp.expand(step_l2 - step_decay - coeff * theta[i])
    proof.identity("The gradient terms cancel: the difference is proportional to θ_i", rest, 0)
    proof.solve(
        "The difference vanishes for every θ iff its coefficient vanishes; solve for λ",
        [coeff],
        [lam],
        sp.FiniteSet((alpha * lam_p,)),
    )
    proof.identity("With λ = αλ' the two steps are identical", step_l2, step_decay.subs(lam, alpha * lam_p))


def _momentum_steps(decoupled: bool, steps: int = 2):
    """Two steps of SGD+L2 with momentum (decoupled=False) or SGDW with momentum (True), scalar
    coordinate; gradients of f at θ₀, θ₁ are the symbols g₁, g₂ (θ₁ is the same in both runs)."""
    th0, g1, g2 = sp.symbols("theta_0 g_1 g_2")
    lam_w = alpha * lam_p
    grads = [g1, g2]
    th, buf, path = th0, None, [th0]
    for t in range(steps):
        d = grads[t] if decoupled else grads[t] + lam_p * th
        buf = d if buf is None else mu * buf + (1 - tau) * d
        th = ((1 - lam_w) * th if decoupled else th) - alpha * buf
        path.append(th)
    return path


def prove_momentum_buffer(proof):
    b_prev, g_t, th_prev = sp.symbols("b_{t-1} g_t theta_{t-1}")
    d = g_t + lam_p * th_prev
    buf = mu * b_prev + (1 - tau) * d
    new = th_prev - alpha * buf
    decay_form = (1 - alpha * (1 - tau) * lam_p) * th_prev - alpha * (mu * b_prev + (1 - tau) * g_t)
    proof.note(
        "SGD with momentum μ and dampening τ on f + L2 (t ≥ 2): the L2 gradient enters the buffer",
        (sp.Symbol("b_t"), buf),
    )
    proof.identity(
        "The step is a weight decay by α(1−τ)λ' plus a momentum step on f whose buffer b_{t−1} "
        "already contains the past decay terms (seed 002, with τ = 0)",
        new,
        decay_form,
    )
    th0, g1 = sp.symbols("theta_0 g_1")
    proof.identity(
        "First step (PyTorch: b₁ = d₁, no dampening): plain decay by αλ'",
        th0 - alpha * (g1 + lam_p * th0),
        (1 - alpha * lam_p) * th0 - alpha * g1,
    )


def prove_sgdw_differs(proof):
    l2 = _momentum_steps(decoupled=False)
    w = _momentum_steps(decoupled=True)
    th0, g1 = sp.symbols("theta_0 g_1")
    proof.identity("After one step SGD+L2 and SGDW (λ = αλ') coincide", l2[1], w[1])
    diff = sp.factor(sp.expand(l2[2] - w[2]))
    th1 = (1 - alpha * lam_p) * th0 - alpha * g1
    expected = alpha * lam_p * (tau * th1 - mu * th0)
    proof.identity(
        "Exact difference after two steps: θ₂(SGD+L2) − θ₂(SGDW) = αλ'(τθ₁ − μθ₀)",
        diff,
        expected,
        show=(sp.Symbol(r"\theta_2^{L2} - \theta_2^{W}"), expected),
    )
    no_damp = sp.simplify(expected.subs(tau, 0))
    proof.identity(
        "Without dampening (PyTorch default τ = 0) the difference is −αμλ'θ₀",
        no_damp,
        -alpha * mu * lam_p * th0,
    )
    positive = {mu: sp.Symbol("mu", positive=True), th0: sp.Symbol("theta_0", positive=True)}
    proof.holds(
        "… which is non-zero for α, λ', μ > 0 and θ₀ > 0 (sympy: is_nonzero)",
        no_damp.subs(positive).is_nonzero,
        sp.Ne(no_damp, 0),
    )


def prove_sgdw_equals_control(proof):
    l2 = _momentum_steps(decoupled=False)
    w = _momentum_steps(decoupled=True)
    th0, g1, g2 = sp.symbols("theta_0 g_1 g_2")
    point = {
        alpha: sp.Rational(1, 10),
        lam_p: sp.Rational(1, 10),
        mu: sp.Rational(9, 10),
        tau: 0,
        th0: 1,
        g1: 1,
        g2: 1,
    }
    proof.identity("SGD+L2 and SGDW with momentum after two steps (λ = αλ')", l2[2], w[2], points=[point])


CLAIMS = [
    Claim(
        "sgd-l2-equals-decay",
        "SGD on f + L2 is weight decay with λ = αλ'",
        "One SGD step on f(θ) + (λ'/2)‖θ‖² equals θ ← (1 − λ)θ − α∇f(θ) exactly when λ = αλ' "
        "(θ of any dimension n).",
        r"\theta - \alpha\left(\nabla f(\theta) + \lambda'\theta\right) = (1-\lambda)\theta - \alpha\nabla "
        r"f(\theta)"
        r"\ \forall \theta \iff \lambda = \alpha\lambda'",
        prove_sgd_l2,
        {r"\alpha, \lambda'": "> 0", "n": "symbolic dimension", r"\theta": r"\mathbb{R}^n"},
        "seed 001 (Q1.a.i), seed 002 (Adding L2 regularization)",
    ),
    Claim(
        "sgd-momentum-l2-decay-in-buffer",
        "SGD with momentum and dampening: the L2 gradient in the buffer",
        "With heavy-ball momentum μ and dampening τ (PyTorch semantics) and the L2 gradient entering the "
        "buffer, each step is θ ← (1 − α(1−τ)λ')θ − α(μ b_{t−1} + (1−τ)∇f(θ)).",
        r"\theta_t = \left(1-\alpha(1-\tau)\lambda'\right)\theta_{t-1} - \alpha\left(\mu b_{t-1} + (1-\tau)"
        r"\nabla f(\theta_{t-1})\right)",
        prove_momentum_buffer,
        {r"\mu, \tau": r"\ge 0"},
        "seed 001 (Q1.a.ii), seed 002 (momentum + L2)",
    ),
    Claim(
        "sgdw-momentum-differs",
        "SGDW (decay outside the buffer) differs from SGD+L2 with momentum",
        "Starting from the same θ₀ with λ = αλ', two steps of SGD+L2 with momentum and of SGDW differ by "
        "exactly αλ'(τθ₁ − μθ₀); without dampening by −αμλ'θ₀ ≠ 0.",
        r"\theta_2^{\mathrm{L2}} - \theta_2^{\mathrm{W}} = \alpha\lambda'\left(\tau\theta_1 - "
        r"\mu\theta_0\right)",
        prove_sgdw_differs,
        {r"\alpha,\lambda'": "> 0", r"\mu,\tau": r"\ge 0"},
        "seed 001 (Q1.a.ii: SGDW)",
    ),
    Claim(
        "sgdw-equals-sgd-l2-momentum",
        "CONTROL: SGDW with momentum equals SGD+L2 with momentum",
        "False control: with λ = αλ', two steps of SGDW with momentum equal two steps of SGD+L2 with "
        "momentum.",
        r"\theta_2^{\mathrm{L2}} = \theta_2^{\mathrm{W}}",
        prove_sgdw_equals_control,
        {},
        "tempting misreading",
        expected="refuted",
    ),
]
