"""Bias-corrected EMAs and the preconditioners M_t of AdaGrad, RMSProp and bias-corrected RMSProp.

Seed 002 (Adam: m̂_t is a convex combination of past gradients) and seed 001 (Q1.b: write the
adaptive step as θ_t = θ_{t−1} − α M_t g_t with M_t expressed through G_t, the sum / EMA of
outer products of subgradients, diagonal part, and β₂).

Sizes: the M_t identities here are explicit matrices for t = 1, 2, 3 and 2 coordinates (what
sympy can write as a matrix). The statement for every t ≥ 1 and any dimension is proved by
induction on t, coordinatewise, from the library's own optimizers in
:mod:`proofs.optimizer_code` (claim ``code-preconditioners-any-t``).

Run alone: ``python -m dyntools.proofs adaptive-preconditioners``
(or ``dyntools prove adaptive-preconditioners --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("adaptive-preconditioners", order=20)

i, j = sp.symbols("i j", integer=True, nonnegative=True)
t = sp.Symbol("t", integer=True, positive=True)
beta = sp.Symbol("beta", positive=True)
g = sp.IndexedBase("g")
eps = sp.Symbol("epsilon", nonnegative=True)
alpha = sp.Symbol("alpha", positive=True)
T, N = 3, 2  # explicit steps × coordinates for the M_t identities


def ema_closed_form_induction(proof, b, name="m"):
    """Prove m_t = Σ_{i=0}^{t−1} b^i (1−b) g_{t−i} solves m_t = b m_{t−1} + (1−b) g_t, m_0 = 0,
    by induction on the symbolic t."""
    summand = lambda tt: b**i * (1 - b) * g[tt - i]
    closed = lambda tt, upper: sp.Sum(summand(tt), (i, 0, upper))
    proof.note(
        f"Claimed closed form of the EMA {name}_t = b {name}_(t−1) + (1−b) g_t, {name}_0 = 0:",
        (sp.Symbol(f"{name}_t"), closed(t, t - 1)),
    )
    proof.identity(
        "Base case t = 1: the sum has the single term (1−b)g₁ = b·0 + (1−b)g₁",
        closed(1, 0).doit(),
        (1 - b) * g[1],
    )
    first = summand(t + 1).subs(i, 0)
    shifted = sp.expand(summand(t + 1).subs(i, i + 1))
    proof.note(
        "Induction step: split off i = 0 and shift the index i → i + 1 in the rest",
        (closed(t + 1, t), first + sp.Sum(shifted, (i, 0, t - 1))),
    )
    proof.identity("The split-off term is the new gradient's share (1−b)g_{t+1}", first, (1 - b) * g[t + 1])
    proof.identity(
        "Each shifted term is b times the corresponding term of the closed form at t", shifted, b * summand(t)
    )
    proof.note("Hence closed(t+1) = (1−b)g_{t+1} + b·closed(t): the recursion holds for every t ≥ 1.")


def _drop_unit_branch(expr, b):
    """sympy's sums of b^j return Piecewise((…, Eq(b, 1)), (…, True)); keep the 0 < b < 1 branch."""
    if isinstance(expr, sp.Piecewise):
        return next(e for e, cond in expr.args if cond != sp.Eq(b, 1))
    return expr


def _geometric_sum(b, upper):
    return _drop_unit_branch(sp.summation(b**j, (j, 0, upper)), b)


def prove_ema(proof):
    ema_closed_form_induction(proof, beta)
    geo = _geometric_sum(beta, t - 1)
    proof.identity(
        "Geometric sum (0 < β < 1): Σ_{j=0}^{t−1} β^j = (1−β^t)/(1−β)", geo, (1 - beta**t) / (1 - beta)
    )
    a_i = beta**i * (1 - beta) / (1 - beta**t)
    proof.note("Bias correction: m̂_t = m_t/(1−β^t) = Σ α_i g_{t−i} with", (sp.Symbol(r"\alpha_i"), a_i))
    proof.identity(
        "α_i = β^i / Σ_j β^j (so each α_i is a positive number divided by a positive sum)", a_i, beta**i / geo
    )
    proof.holds(
        "α_i > 0 for β > 0 (sympy: is_positive of β^i / Σ_{j=0}^{t−1} β^j)",
        (beta**i / sp.Sum(beta**j, (j, 0, t - 1))).is_positive,
        sp.Symbol(r"\alpha_i > 0"),
    )
    weights_sum = _drop_unit_branch(sp.summation(a_i, (i, 0, t - 1)), beta)
    proof.identity("The weights sum to one for every t: Σ_{i=0}^{t−1} α_i = 1", weights_sum, 1)
    proof.note("So m̂_t is a convex combination of g_t, …, g_1 (and likewise v̂_t of g_t², …, g_1²).")


def _grads():
    return [
        sp.Matrix([sp.Symbol(f"g_{{{k},{c}}}", real=True) for c in range(1, N + 1)]) for k in range(1, T + 1)
    ]


def _diag_part(G):
    return sp.diag(*[G[c, c] for c in range(G.shape[0])])


def _check_preconditioner(proof, name, accumulate, G_of, scale):
    """Run the algorithm for T steps on symbolic gradients: its accumulator equals diag(G_t)
    (polynomial identity), hence its update equals −α M_t g_t, M_t = (scale_t·diag(G_t)^{1/2} + εI)^{−1}."""
    grads = _grads()
    acc = sp.zeros(N, 1)
    for tt in range(1, T + 1):
        gt = grads[tt - 1]
        acc = accumulate(acc, gt)
        G = G_of(grads[:tt], tt)
        proof.identity(
            f"{name}, t = {tt}: the accumulator equals the diagonal of G_t",
            acc,
            sp.Matrix([G[c, c] for c in range(N)]),
            simplifier=sp.expand,
        )
        # (diagonal matrix)^{-1} = diagonal of reciprocals
        M = sp.diag(*[1 / (scale(tt) * sp.sqrt(G[c, c]) + eps) for c in range(N)])
        step_alg = sp.Matrix([-alpha * gt[c] / (scale(tt) * sp.sqrt(G[c, c]) + eps) for c in range(N)])
        proof.identity(
            f"{name}, t = {tt}: hence the update −α g_t/(scale·√a_t + ε) equals −α M_t g_t",
            step_alg,
            -alpha * M * gt,
            simplifier=sp.cancel,
            show=(sp.Symbol(f"M_{tt}"), M) if tt == T else None,
        )


def prove_adagrad(proof):
    proof.note("AdaGrad: a_t = a_{t−1} + g_t ⊙ g_t, θ_t = θ_{t−1} − α g_t / (√a_t + ε).")
    proof.note(
        "G_t = Σ_{s≤t} g_s g_sᵀ (sum of outer products); M_t = (diag(G_t)^{1/2} + εI)^{−1}.",
        r"M_t = \left(\operatorname{diag}(G_t)^{1/2} + \varepsilon I\right)^{-1},\quad G_t = \sum_{s=1}^t "
        r"g_s g_s^\top",
    )
    _check_preconditioner(
        proof,
        "AdaGrad",
        lambda a, gt: a + gt.multiply_elementwise(gt),
        lambda gs, tt: sum((x * x.T for x in gs), sp.zeros(N, N)),
        lambda tt: 1,
    )
    g1 = sp.Matrix([1, 2])
    M1 = (_diag_part(g1 * g1.T).applyfunc(sp.sqrt)).inv()
    proof.holds(
        "M_t is not a multiple of I in general: g₁ = (1, 2) gives M₁ = diag(1, 1/2) (ε = 0)",
        sp.Ne(M1[0, 0], M1[1, 1]),
        (sp.Symbol("M_1"), M1),
    )


def _ema_G(b2):
    return lambda gs, tt: sum(
        ((1 - b2) * b2 ** (tt - k) * gs[k - 1] * gs[k - 1].T for k in range(1, tt + 1)), sp.zeros(N, N)
    )


def prove_rmsprop(proof):
    b2 = sp.Symbol("beta_2", positive=True)
    proof.note("RMSProp: v_t = β₂v_{t−1} + (1−β₂) g_t ⊙ g_t, v₀ = 0, θ_t = θ_{t−1} − α g_t/(√v_t + ε).")
    ema_closed_form_induction(proof, b2, name="v")
    proof.note(
        "So diag(v_t) = diag(G_t) with G_t = Σ_{s≤t} (1−β₂)β₂^{t−s} g_s g_sᵀ (EMA of outer products), "
        "and M_t = (diag(G_t)^{1/2} + εI)^{−1}.",
        r"G_t = \sum_{s=1}^t (1-\beta_2)\beta_2^{t-s} g_s g_s^\top",
    )
    _check_preconditioner(
        proof,
        "RMSProp",
        lambda v, gt: b2 * v + (1 - b2) * gt.multiply_elementwise(gt),
        _ema_G(b2),
        lambda tt: 1,
    )


def prove_rmsprop_bc(proof):
    b2 = sp.Symbol("beta_2", positive=True)
    proof.note(
        "RMSProp with bias-corrected second moment (seed 001): v̂_t = v_t/(1−β₂^t), "
        "θ_t = θ_{t−1} − α g_t/(√v̂_t + ε)."
    )
    proof.note(
        "Then M_t = (diag(G_t)^{1/2}/√(1−β₂^t) + εI)^{−1}, G_t the EMA of outer products; for ε = 0 "
        "M_t = √(1−β₂^t) diag(G_t)^{−1/2}.",
        r"M_t = \left(\frac{\operatorname{diag}(G_t)^{1/2}}{\sqrt{1-\beta_2^t}} + \varepsilon I\right)^{-1}",
    )
    _check_preconditioner(
        proof,
        "bias-corrected RMSProp",
        lambda v, gt: b2 * v + (1 - b2) * gt.multiply_elementwise(gt),
        _ema_G(b2),
        lambda tt: 1 / sp.sqrt(1 - b2**tt),
    )
    grads = _grads()
    G = _ema_G(b2)(grads, T)
    M0 = (_diag_part(G).applyfunc(sp.sqrt) / sp.sqrt(1 - b2**T)).inv()
    proof.identity(
        "ε = 0: M_t = √(1−β₂^t) diag(G_t)^{−1/2}",
        M0,
        sp.sqrt(1 - b2**T) * _diag_part(G).applyfunc(lambda x: 1 / sp.sqrt(x) if x != 0 else 0),
    )


def prove_effective_step(proof):
    mean = sp.Symbol("mu_g", positive=True)  # E g > 0 (the sign is symmetric)
    var = sp.Symbol("sigma2", nonnegative=True)  # Var g ≥ 0
    ratio = mean / sp.sqrt(var + mean**2)  # m̂/√v̂ with m̂ = E g, v̂ = E g² = Var g + (E g)², ε = 0
    proof.note(
        "Seed 002: with m̂_t ≈ E g and v̂_t ≈ E g² = Var g + (E g)², the step is η_t·r with",
        (sp.Symbol("r"), ratio),
    )
    gap = var / (var + mean**2)
    proof.identity("1 − r² = Var g / (Var g + (E g)²)", 1 - ratio**2, gap)
    proof.holds(
        "… ≥ 0, so r ≤ 1 and the effective step η_t r ≤ η_t (sympy: nonnegativity)", gap.is_nonnegative
    )
    proof.identity(
        "Far from the optimum (Var g = 0): r = 1, the effective step is η_t", ratio.subs(var, 0), 1
    )
    s2 = sp.Symbol("s", positive=True)
    proof.holds(
        "Close to the optimum (Var g = s > 0): 1 − r² = s/(s + (E g)²) > 0, so r < 1 and the step is smaller",
        gap.subs(var, s2).is_positive,
    )


CLAIMS = [
    Claim(
        "bias-corrected-ema-convex",
        "Bias-corrected EMA is a convex combination of past gradients",
        "For symbolic t ≥ 1 and β ∈ (0,1): m_t = Σ_{i=0}^{t−1} β^i(1−β)g_{t−i}, and m̂_t = m_t/(1−β^t) = "
        "Σ α_i g_{t−i} with α_i = β^i/Σ_j β^j > 0 and Σ α_i = 1.",
        r"\hat m_t = \sum_{i=0}^{t-1}\alpha_i g_{t-i},\quad \alpha_i = "
        r"\frac{\beta_1^i}{\sum_{j=0}^{t-1}\beta_1^j}"
        r" > 0,\quad \sum_{i=0}^{t-1}\alpha_i = 1",
        prove_ema,
        {r"\beta_1": "(0, 1)", "t": r"\ge 1 \text{ (symbolic)}"},
        "seed 002 (Adam, bias correction)",
    ),
    Claim(
        "preconditioner-adagrad",
        "AdaGrad as θ ← θ − αM_t g_t with M_t from G_t = Σ g gᵀ",
        "AdaGrad's update equals −α M_t g_t with M_t = (diag(G_t)^{1/2} + εI)^{−1}, G_t = Σ_{s≤t} g_s g_sᵀ "
        f"(checked entrywise for t = 1..{T}, {N} coordinates, symbolic gradients); M_t ≠ kI in general.",
        r"M_t = \left(\operatorname{diag}(G_t)^{1/2} + \varepsilon I\right)^{-1},\ G_t = \sum_{s\le t} g_s "
        r"g_s^\top",
        prove_adagrad,
        {r"g_s": r"\mathbb{R}^2", r"\varepsilon": r"\ge 0"},
        "seed 001 (Q1.b)",
    ),
    Claim(
        "preconditioner-rmsprop",
        "RMSProp's M_t through the EMA of outer products",
        "RMSProp's update equals −α M_t g_t with M_t = (diag(G_t)^{1/2} + εI)^{−1}, "
        "G_t = Σ_{s≤t}(1−β₂)β₂^{t−s} g_s g_sᵀ (closed form for symbolic t; identity for t = 1..3).",
        r"G_t = \sum_{s=1}^t(1-\beta_2)\beta_2^{t-s} g_s g_s^\top,\ M_t = "
        r"\left(\operatorname{diag}(G_t)^{1/2}"
        r" + \varepsilon I\right)^{-1}",
        prove_rmsprop,
        {r"\beta_2": "(0, 1)"},
        "seed 001 (Q1.b)",
    ),
    Claim(
        "preconditioner-rmsprop-bias-corrected",
        "Bias-corrected RMSProp (the problem set's variant)",
        "With v̂_t = v_t/(1−β₂^t): M_t = (diag(G_t)^{1/2}/√(1−β₂^t) + εI)^{−1}, i.e. √(1−β₂^t) "
        "diag(G_t)^{−1/2} "
        "for ε = 0.",
        r"M_t = \left(\frac{\operatorname{diag}(G_t)^{1/2}}{\sqrt{1-\beta_2^t}} + \varepsilon I\right)^{-1}",
        prove_rmsprop_bc,
        {r"\beta_2": "(0, 1)"},
        "seed 001 (Q1.b.a, RMSProp with bias-correcting second moment)",
    ),
    Claim(
        "adam-effective-step-size",
        "Adam's effective step size η_t·E g/√(Var g + (E g)²) is at most η_t",
        "With m̂ ≈ E g and v̂ ≈ Var g + (E g)² (ε = 0) the step is η_t r, r = E g/√(Var g + (E g)²): "
        "r = 1 when Var g = 0 and r < 1 when Var g > 0.",
        r"\frac{\mathbb{E}g}{\sqrt{\mathrm{Var}\,g + (\mathbb{E}g)^2}} \le 1,\ \text{with equality iff } "
        r"\mathrm{Var}\,g = 0",
        prove_effective_step,
        {r"\mathbb{E}g": "> 0", r"\mathrm{Var}\,g": r"\ge 0"},
        "seed 002 (far from / close to the optimum)",
    ),
]
