"""L2 regularization versus decoupled weight decay for adaptive methods (Loshchilov & Hutter).

Seed 001 (Q1.b: Prop. 2 inequivalence unless M_t = kI; Q1.b.c: scale-adjusted L2, Prop. 3, and the
problem set's iteration-dependent loss) and seed 002 (Adam's per-coordinate effective decay).
The adaptive step is θ ← θ − αM_t∇f^reg(θ) (L2 inside the gradient) against the decoupled step
θ ← (1 − λ)θ − αM_t∇f(θ); M_t is the preconditioner of :mod:`proofs.adaptive_preconditioners`.

Run alone: ``python -m dyntools.proofs decoupled-decay`` (or ``dyntools prove decoupled-decay --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("decoupled-decay", order=30)

alpha, lam, lam_p, eta = sp.symbols("alpha lambda lambda' eta", positive=True)


def _vec(name, n):
    return sp.Matrix([sp.Symbol(f"{name}_{k}", real=True) for k in range(1, n + 1)])


def _difference_operator(M, reg_grad):
    """Both steps are affine in θ; return the matrix A with step_L2(θ) − step_decoupled(θ) = Aθ."""
    n = M.shape[0]
    theta, grad = _vec("theta", n), _vec("g", n)
    step_l2 = theta - alpha * M * (grad + reg_grad(theta))
    step_dec = (1 - lam) * theta - alpha * M * grad
    diff = (step_l2 - step_dec).applyfunc(sp.expand)
    A = diff.jacobian(theta)
    return diff, A, theta


def prove_inequivalence(proof):
    a, b, c, d = sp.symbols("a b c d", real=True)
    M = sp.Matrix([[a, b], [c, d]])
    diff, A, theta = _difference_operator(M, lambda th: lam_p * th)
    proof.note(
        "L2 step θ − αM(∇f + λ'θ) minus decoupled step (1−λ)θ − αM∇f, for a general 2×2 M_t:",
        (sp.Symbol(r"\Delta(\theta)"), diff),
    )
    proof.identity("The difference is linear in θ with no ∇f term: Δ(θ) = (λI − αλ'M)θ", diff, A * theta)
    proof.identity("Its matrix is λI − αλ'M", A, lam * sp.eye(2) - alpha * lam_p * M)
    proof.note(
        "Δ(θ) = 0 for all θ ⇔ λI − αλ'M = 0 (take θ = e₁, e₂). Solve the four entries for λ' and the "
        "off-diagonal/second diagonal entries of M:"
    )
    proof.solve(
        "Solution set: λ' = λ/(αa) exists only with b = c = 0, d = a, i.e. M_t = aI = kI",
        list(A),
        [lam_p, b, c, d],
        [{lam_p: lam / (alpha * a), b: 0, c: 0, d: a}],
        method="solve",
    )
    m1, m2, m3 = sp.symbols("m_1 m_2 m_3", positive=True)
    _, A3, _ = _difference_operator(sp.diag(m1, m2, m3), lambda th: lam_p * th)
    proof.solve(
        "Diagonal M_t = diag(m₁, m₂, m₃) with generic (unequal) entries: the solution set for λ' is empty",
        [A3[k, k] for k in range(3)],
        [lam_p],
        sp.S.EmptySet,
    )
    proof.solve(
        "… and for M_t = kI it is {λ/(αk)}",
        [A3[k, k].subs({m2: m1, m3: m1}) for k in range(3)],
        [lam_p],
        sp.FiniteSet((lam / (alpha * m1),)),
    )


def prove_scale_adjusted(proof):
    s1, s2, s3 = sp.symbols("s_1 s_2 s_3", positive=True)
    svec = sp.Matrix([s1, s2, s3])
    M = sp.diag(s1, s2, s3).inv()
    theta = _vec("theta", 3)
    reg = lam_p / 2 * sum(((theta[k] * sp.sqrt(svec[k])) ** 2 for k in range(3)), sp.S.Zero)
    grad_reg = sp.Matrix([sp.diff(reg, x) for x in theta])
    proof.identity(
        "Gradient of the scale-adjusted regularizer (λ'/2)‖θ ⊙ √s‖² is λ' s ⊙ θ",
        grad_reg,
        lam_p * svec.multiply_elementwise(theta),
        show=(sp.Symbol(r"\nabla R(\theta)"), grad_reg),
    )
    _, A, _ = _difference_operator(M, lambda th: lam_p * svec.multiply_elementwise(th))
    proof.identity(
        "With M_t = diag(s)^{−1} the preconditioner cancels s: Δ(θ) = (λ − αλ')θ",
        A,
        (lam - alpha * lam_p) * sp.eye(3),
    )
    proof.solve(
        "Solving for λ': the unique coefficient is λ' = λ/α",
        [A[k, k] for k in range(3)],
        [lam_p],
        sp.FiniteSet((lam / alpha,)),
    )
    proof.note(
        "The problem set's iteration-dependent loss f_t(θ) = f(θ) + (λ'/2) θᵀ M_t^{−1} θ is the same "
        "regularizer with s = diag(M_t^{−1}), so it restores the equivalence at every step t."
    )


def prove_diag_control(proof):
    _, A, _ = _difference_operator(sp.diag(1, 2), lambda th: lam_p * th)
    values = {alpha: sp.Rational(1, 10), lam: sp.Rational(1, 100)}
    eqs = [A[k, k].subs(values) for k in range(2)]
    sol = proof.solve(
        "Claimed: some λ' makes the L2 step equal the decoupled step for M_t = diag(1, 2) "
        "(α = 1/10, λ = 1/100); solve for λ'",
        eqs,
        [lam_p],
        sp.FiniteSet((sp.Rational(1, 10),)),
    )
    if sol == sp.S.EmptySet:
        proof.refute(
            "M_t = diag(1, 2): λ' = λ/α fits the first coordinate, λ' = λ/(2α) the second; "
            "the solution set is empty",
            {"M_t": "diag(1, 2)", "alpha": "1/10", "lambda": "1/100", "solution set for lambda'": "EmptySet"},
        )


# ----------------------------------------------------------------------------------------- Adam


def prove_adam_decay(proof):
    b1 = sp.Symbol("beta_1", positive=True)
    t = sp.Symbol("t", integer=True, positive=True)
    m_prev, g, th, vhat, eps = sp.symbols("m_{t-1} g theta_{t-1} vhat_t epsilon", positive=True)
    D = (1 - b1**t) * (sp.sqrt(vhat) + eps)
    m_t = b1 * m_prev + (1 - b1) * (g + lam * th)
    update = th - eta * m_t / D
    proof.note(
        "Adam with L2 (PyTorch placement of ε), one coordinate: m_t = β₁m_{t−1} + (1−β₁)(g + λθ), "
        "θ_t = θ_{t−1} − η m̂_t/(√v̂_t + ε) with m̂_t = m_t/(1−β₁^t)",
        (sp.Symbol(r"\theta_t"), update),
    )
    factor = 1 - eta * (1 - b1) * lam / D
    rest = eta * (b1 * m_prev + (1 - b1) * g) / D
    proof.identity(
        "Split: θ_t = θ_{t−1}·(1 − η(1−β₁)λ/((1−β₁^t)(√v̂_t+ε))) − η(β₁m_{t−1} + (1−β₁)g)/((1−β₁^t)(√v̂_t+ε))",
        update,
        factor * th - rest,
    )
    proof.identity(
        "The effective decay factor of coordinate θ_{t−1} (∂θ_t/∂θ_{t−1} at fixed m_{t−1}, v̂_t)",
        sp.diff(update, th),
        factor,
        show=(sp.Symbol(r"\kappa_t"), factor),
    )
    proof.note(
        "Since v̂_t differs across coordinates, every weight is decayed by a different factor; "
        "AdamW's factor is the same 1 − ηλ for all. For t = 1, (1−β₁)/(1−β₁) = 1 and the factor is "
        "1 − ηλ/(√v̂₁+ε), the form printed in seed 002 (which drops the (1−β₁) of m_t for t ≥ 2)."
    )
    undamped = th - eta * (b1 * m_prev + g + lam * th) / D
    proof.identity(
        "Seed 002's own derivation line uses the undamped buffer m_t = β₁m_{t−1} + g + λθ; for that "
        "variant its printed factor 1 − ηλ/((1−β₁^t)(√v̂_t+ε)) is exact",
        sp.diff(undamped, th),
        1 - eta * lam / D,
    )
    proof.identity(
        "At t = 1 (m₀ = 0) both buffers give the same step: the (1−β₁) cancels against 1 − β₁¹",
        sp.diff(update, th).subs(t, 1),
        1 - eta * lam / (sp.sqrt(vhat) + eps),
    )


def prove_seed002_factor_control(proof):
    b1 = sp.Symbol("beta_1", positive=True)
    t = sp.Symbol("t", integer=True, positive=True)
    m_prev, g, th, vhat, eps = sp.symbols("m_{t-1} g theta_{t-1} vhat_t epsilon", positive=True)
    update = th - eta * (b1 * m_prev + (1 - b1) * (g + lam * th)) / ((1 - b1**t) * (sp.sqrt(vhat) + eps))
    printed = 1 - eta * lam / ((1 - b1**t) * sp.sqrt(vhat + eps))
    point = {b1: sp.Rational(9, 10), t: 2, eta: sp.Rational(1, 10), lam: 1, vhat: 1, eps: 0}
    proof.identity(
        "Seed 002 as printed: the decay factor of Adam+L2 is 1 − ηλ/((1−β₁^t)√(v̂_t+ε))",
        sp.diff(update, th),
        printed,
        points=[point],
    )


def _first_step(a_vec, theta0, l2):
    """First Adam step on f = ½Σ a_k θ_k² (+ L2), ε = 0: m̂₁ = g, v̂₁ = g², step −η g/√(g²)."""
    g = a_vec.multiply_elementwise(theta0) + l2 * theta0
    m_hat = (1 - sp.Symbol("beta_1")) * g / (1 - sp.Symbol("beta_1"))
    v_hat = (1 - sp.Symbol("beta_2")) * g.multiply_elementwise(g) / (1 - sp.Symbol("beta_2"))
    return theta0 - eta * sp.Matrix([m_hat[k] / sp.sqrt(v_hat[k]) for k in range(len(g))])


def prove_adam_counterexample(proof):
    a, b = sp.symbols("a b", positive=True)
    th0 = sp.Matrix(sp.symbols("theta_01 theta_02", positive=True))
    A = sp.Matrix([a, b])
    adam_l2 = _first_step(A, th0, lam_p).applyfunc(sp.simplify)
    proof.note(
        "f(θ) = ½(aθ₁² + bθ₂²), θ₀ > 0, ε → 0. First Adam+L2 step: m̂₁ = g, v̂₁ = g², so θ₁ = θ₀ − η g/|g|",
        (sp.Symbol(r"\theta_1^{\mathrm{Adam+L2}}"), adam_l2),
    )
    proof.identity("It does not depend on λ' at all: ∂θ₁/∂λ' = 0", adam_l2.diff(lam_p), sp.zeros(2, 1))
    adamw = ((1 - eta * lam) * th0 - eta * sp.Matrix([1, 1])).applyfunc(sp.expand)
    adamw_alg = (_first_step(A, th0, 0) - eta * lam * th0).applyfunc(sp.simplify)
    proof.identity("First AdamW step: θ₁ = (1 − ηλ)θ₀ − η(1, 1)ᵀ", adamw_alg, adamw)
    proof.holds(
        "… which depends on λ (∂θ₁/∂λ = −ηθ₀ ≠ 0)",
        (adamw.diff(lam)[0]).is_nonzero,
        (sp.Symbol(r"\partial\theta_1/\partial\lambda"), adamw.diff(lam)),
    )
    proof.solve(
        "Solve Adam+L2 step = AdamW step for λ' > 0: the solution set is empty",
        [sp.simplify(adam_l2[0] - adamw[0])],
        [lam_p],
        sp.S.EmptySet,
        method="solveset",
        domain=sp.Interval.open(0, sp.oo),
    )


def prove_adam_equals_adamw_control(proof):
    values = {sp.Symbol("a", positive=True): 1, sp.Symbol("b", positive=True): 2}
    th0 = sp.Matrix([1, 1])
    A = sp.Matrix(list(values.values()))
    point = {eta: sp.Rational(1, 10), lam: sp.Rational(1, 10)}
    adam_l2 = _first_step(A, th0, lam_p).subs(point).applyfunc(sp.simplify)
    adamw = (_first_step(A, th0, 0) - eta * lam * th0).subs(point).applyfunc(sp.simplify)
    sol = proof.solve(
        "Claimed: some λ' > 0 makes the first Adam+L2 step equal the first AdamW step "
        "(a = 1, b = 2, θ₀ = (1, 1), η = λ = 1/10, ε = 0); solve for λ'",
        [adam_l2[0] - adamw[0], adam_l2[1] - adamw[1]],
        [lam_p],
        sp.FiniteSet((1,)),
        method="linsolve",
    )
    if sol == sp.S.EmptySet:
        proof.refute(
            f"Adam+L2 gives θ₁ = {list(adam_l2)} for every λ' > 0, AdamW gives {list(adamw)}",
            {
                "a": 1,
                "b": 2,
                "theta_0": "(1, 1)",
                "eta": "1/10",
                "lambda": "1/10",
                "epsilon": 0,
                "Adam+L2 theta_1": str(list(adam_l2)),
                "AdamW theta_1": str(list(adamw)),
            },
        )


def prove_large_gradients_decay_less(proof):
    b1 = sp.Symbol("beta_1", positive=True)
    t = sp.Symbol("t", integer=True, positive=True)
    vhat, eps = sp.symbols("vhat_t epsilon", positive=True)
    rate = eta * (1 - b1) * lam / ((1 - b1**t) * (sp.sqrt(vhat) + eps))
    proof.note(
        "Effective decay rate of a coordinate in Adam+L2 (1 minus the factor of adam-effective-decay):",
        (sp.Symbol(r"\rho_t"), rate),
    )
    j = sp.Symbol("j", integer=True, nonnegative=True)
    geo = sp.Sum(b1**j, (j, 0, t - 1))
    closed = next(e for e, c in geo.doit().args if c != sp.Eq(b1, 1))
    proof.identity(
        "(1 − β₁)/(1 − β₁^t) = 1/Σ_{j<t} β₁^j (geometric sum, β₁ ≠ 1)", (1 - b1) / (1 - b1**t), 1 / closed
    )
    rate_sum = eta * lam / (geo * (sp.sqrt(vhat) + eps))
    d = sp.diff(rate, vhat)
    proof.identity("∂ρ/∂v̂ = −ρ / (2√v̂(√v̂ + ε))", d, -rate / (2 * sp.sqrt(vhat) * (sp.sqrt(vhat) + eps)))
    proof.holds(
        "… which is negative: ρ = ηλ/(Σ_{j<t}β₁^j (√v̂ + ε)) > 0 and 2√v̂(√v̂ + ε) > 0 (sympy positivity)",
        (rate_sum / (2 * sp.sqrt(vhat) * (sp.sqrt(vhat) + eps))).is_positive,
        sp.Lt(d, 0),
    )
    proof.note(
        "So coordinates with large gradients (large v̂ = EMA of g²) are decayed less — the seed-003 "
        "intuition; AdamW's rate ηλ is the same for every coordinate."
    )


CLAIMS = [
    Claim(
        "l2-equiv-iff-scalar-preconditioner",
        "L2 ≡ decoupled decay for θ ← θ − αM_t∇f iff M_t = kI",
        "For θ ← θ − αM_t(∇f + λ'θ) versus θ ← (1−λ)θ − αM_t∇f, an L2 coefficient λ' making the two equal "
        "for all θ exists iff M_t = kI (then λ' = λ/(αk)); for M_t ≠ kI the solution set is empty.",
        r"\exists\lambda'\ \forall\theta:\ \theta-\alpha M_t(\nabla f+\lambda'\theta) = "
        r"(1-\lambda)\theta-\alpha M_t"
        r"\nabla f \iff M_t = kI",
        prove_inequivalence,
        {r"\alpha,\lambda": "> 0", "M_t": "2×2 general; 3×3 diagonal"},
        "seed 001 (Q1.b.b), Loshchilov & Hutter Prop. 2",
    ),
    Claim(
        "scale-adjusted-l2-restores-equivalence",
        "Scale-adjusted L2 restores the equivalence (Prop. 3)",
        "With the regularizer (λ'/2)‖θ ⊙ √s‖² and M_t = diag(s)^{−1}, the L2 step equals the decoupled step "
        "exactly for λ' = λ/α.",
        r"\theta-\alpha M_t\left(\nabla f+\lambda' s\odot\theta\right) = (1-\lambda)\theta-\alpha M_t\nabla f"
        r"\iff \lambda'=\lambda/\alpha",
        prove_scale_adjusted,
        {"s": r"\mathbb{R}_{>0}^3"},
        "seed 001 (Q1.b.c), Loshchilov & Hutter Prop. 3",
    ),
    Claim(
        "adam-effective-decay",
        "Adam+L2: per-coordinate effective decay factor",
        "In Adam with L2 the coefficient of θ_{t−1} is 1 − η(1−β₁)λ/((1−β₁^t)(√v̂_t + ε)), different per "
        "coordinate (for t = 1 it is 1 − ηλ/(√v̂₁ + ε)).",
        r"\theta_t = \theta_{t-1}\left(1-\frac{\eta(1-\beta_1)\lambda}{(1-\beta_1^t)(\sqrt{\hat "
        r"v_t}+\varepsilon)}"
        r"\right) - \frac{\eta(\beta_1 m_{t-1}+(1-\beta_1)g_t)}{(1-\beta_1^t)(\sqrt{\hat v_t}+\varepsilon)}",
        prove_adam_decay,
        {r"\beta_1": "(0,1)", r"\hat v_t, \varepsilon": "> 0"},
        "seed 002 (tracking the decay)",
    ),
    Claim(
        "adam-l2-large-gradients-decay-less",
        "Adam+L2 regularizes coordinates with large gradients less",
        "The effective decay rate η(1−β₁)λ/((1−β₁^t)(√v̂_t + ε)) of Adam+L2 is strictly decreasing in v̂_t, "
        "so weights with large gradients are regularized less than with decoupled decay.",
        r"\frac{\partial}{\partial \hat v_t}\,\frac{\eta(1-\beta_1)\lambda}{(1-\beta_1^t)(\sqrt{\hat v_t}+"
        r"\varepsilon)} < 0",
        prove_large_gradients_decay_less,
        {r"\hat v_t, \varepsilon": "> 0", r"\beta_1": "(0, 1)"},
        "seed 003 (quoting Loshchilov & Hutter), seed 002",
    ),
    Claim(
        "adam-l2-first-step-counterexample",
        "Adam+L2's first step ignores λ', AdamW's does not",
        "On f(θ) = ½(aθ₁² + bθ₂²) with ε → 0 the first Adam+L2 step is θ₀ − η sign(θ₀), independent of λ', "
        "while AdamW's is (1−ηλ)θ₀ − η sign(θ₀); no λ' > 0 matches (λ > 0).",
        r"\theta_1^{\mathrm{Adam+L2}} = \theta_0 - \eta\,\mathrm{sign}(\theta_0)\ \ne\ "
        r"(1-\eta\lambda)\theta_0 - "
        r"\eta\,\mathrm{sign}(\theta_0) = \theta_1^{\mathrm{AdamW}}",
        prove_adam_counterexample,
        {"a, b": "> 0", r"\theta_0": "> 0 (coordinatewise)"},
        "issue 3 (claim 5)",
    ),
    Claim(
        "adam-l2-equals-adamw",
        "CONTROL: Adam with L2 equals AdamW for some λ'",
        "False control: for every λ > 0 there is λ' with Adam+L2 ≡ AdamW.",
        r"\exists\lambda':\ \mathrm{Adam}(f + \tfrac{\lambda'}{2}\|\theta\|^2) = \mathrm{AdamW}(f, \lambda)",
        prove_adam_equals_adamw_control,
        {},
        "seed 001 (the PyTorch weight_decay naming)",
        expected="refuted",
    ),
    Claim(
        "diagonal-preconditioner-admits-l2",
        "CONTROL: an arbitrary diagonal M_t admits an L2 coefficient",
        "False control: for any diagonal M_t some λ' makes the L2 step equal the decoupled step.",
        r"\forall M_t \text{ diagonal}\ \exists\lambda':\ \theta-\alpha M_t(\nabla f+\lambda'\theta) = "
        r"(1-\lambda)\theta-\alpha M_t\nabla f",
        prove_diag_control,
        {},
        "issue 3 (false control)",
        expected="refuted",
    ),
    Claim(
        "seed002-adam-decay-factor-as-printed",
        "CONTROL: seed 002's Adam decay factor as printed",
        "False control (misprint): the decay factor is 1 − ηλ/((1−β₁^t)√(v̂_t+ε)); it misses the (1−β₁) of "
        "m_t (and places ε inside the root).",
        r"\kappa_t = 1-\frac{\eta\lambda}{(1-\beta_1^t)\sqrt{\hat v_t+\varepsilon}}",
        prove_seed002_factor_control,
        {},
        "seed 002 (weight decay factor line)",
        expected="refuted",
    ),
]
