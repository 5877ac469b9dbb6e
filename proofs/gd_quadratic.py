"""Gradient descent on the quadratic F(β) = ‖Xβ − y‖²: the 2/λ_max threshold (seed 004).

Convention: λ_max is the largest eigenvalue of the **Hessian** ∇²F = 2XᵀX (not of XᵀX; with the
eigenvalues of XᵀX the threshold would read η < 1/λ_max(XᵀX) — the control below shows what goes
wrong when the conventions are mixed). GD: β ← β − η∇F(β) = β − 2ηXᵀ(Xβ − y).

Run alone: ``python -m dyntools.proofs gd-quadratic`` (or ``dyntools prove gd-quadratic --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("gd-quadratic", order=50)

eta = sp.Symbol("eta", positive=True)
lam = sp.Symbol("lambda", positive=True)
t = sp.Symbol("t", integer=True, nonnegative=True)
c0 = sp.Symbol("c_0", nonzero=True)


def prove_threshold(proof):
    X = sp.Matrix(2, 2, sp.symbols("x_11 x_12 x_21 x_22", real=True))
    beta = sp.Matrix(sp.symbols("beta_1 beta_2", real=True))
    y = sp.Matrix(sp.symbols("y_1 y_2", real=True))
    F = ((X * beta - y).T * (X * beta - y))[0]
    H = sp.hessian(F, beta)
    proof.identity(
        "Hessian convention: ∇²F = 2XᵀX (F = ‖Xβ − y‖², X 2×2 symbolic)",
        H,
        2 * X.T * X,
        show=(sp.Symbol(r"\nabla^2 F"), sp.Symbol(r"2X^\top X")),
    )
    grad = sp.Matrix([sp.diff(F, b) for b in beta])
    bstar = sp.Matrix(sp.symbols("b_1 b_2", real=True))
    gd_error = beta - eta * grad - bstar
    linear = (sp.eye(2) - eta * H) * (beta - bstar)
    proof.identity(
        "GD error recursion: β⁺ − β* = (I − ηH)(β − β*) + 2η(Xᵀy − XᵀXβ*); the last term vanishes "
        "for any minimizer β* (normal equations)",
        gd_error,
        linear + 2 * eta * (X.T * y - X.T * X * bstar),
    )
    proof.note(
        "H is symmetric positive semi-definite: H = QΛQᵀ. In the coordinates c = Qᵀ(β − β*) every "
        "component evolves alone: c_i ← (1 − ηλ_i)c_i."
    )
    q = sp.Symbol("q", real=True)  # the multiplier q = 1 − ηλ
    ct = q**t * c0
    proof.identity(
        "Closed form by induction: c(t) = q^t c(0), q = 1 − ηλ, satisfies c(t+1) = q c(t)",
        ct.subs(t, t + 1),
        q * ct,
    )
    ct = ct.subs(q, 1 - eta * lam)
    u = sp.Symbol("u", positive=True)  # u = ηλ > 0 (dimensionless step)
    pos = sp.Interval.open(0, sp.oo)
    conv = sp.solveset(sp.Abs(1 - u) < 1, u, pos)
    proof.holds(
        "Contraction |1 − u| < 1 with u = ηλ > 0 ⇔ u ∈ (0, 2), i.e. η ∈ (0, 2/λ)",
        sp.Eq(conv, sp.Interval.open(0, 2)),
        (sp.Symbol(r"\{u>0: |1-u|<1\}"), conv),
    )
    edge = sp.solveset(sp.Abs(1 - u) - 1, u, pos)
    proof.holds(
        "|1 − u| = 1 ⇔ u = 2, i.e. η = 2/λ, where the multiplier is −1",
        sp.Eq(edge, sp.FiniteSet(2)),
        (sp.Symbol(r"\{u>0: |1-u|=1\}"), edge),
    )
    div = sp.solveset(sp.Abs(1 - u) > 1, u, pos)
    proof.holds(
        "Expansion |1 − u| > 1 ⇔ u > 2, i.e. η > 2/λ",
        sp.Eq(div, sp.Interval.open(2, sp.oo)),
        (sp.Symbol(r"\{u>0: |1-u|>1\}"), div),
    )
    proof.note(
        "All components with λ_i > 0 contract iff η < 2/λ_i for every i, i.e. η < 2/λ_max "
        "(components with λ_i = 0 stay fixed: convergence to the minimizer nearest β₀)."
    )
    at_edge = ct.subs(eta, 2 / lam)
    proof.identity("At η = 2/λ the multiplier is 1 − ηλ = −1", (1 - eta * lam).subs(eta, 2 / lam), -1)
    proof.identity(
        "At η = 2/λ_max the top component flips sign each step: c(t+1) = −c(t)",
        at_edge.subs(t, t + 1),
        -at_edge,
    )
    proof.identity(
        "… and returns after two steps: c(t+2) = c(t) (period-2 bounce, c(0) ≠ 0)",
        at_edge.subs(t, t + 2),
        at_edge,
    )
    proof.note(
        "The other components contract (λ_i < λ_max), so the iterates converge to the 2-cycle "
        "β* ± c_top(0) q_top; above 2/λ_max, |c_top(t)| = |1 − ηλ_max|^t |c_top(0)| → ∞."
    )
    X0 = sp.Matrix([[1, 1], [0, 1]])
    H0 = 2 * X0.T * X0
    ev = sorted(H0.eigenvals(), key=lambda v: float(v))
    lmax = ev[-1]
    proof.identity(
        "Eigen-analysis example X = [[1, 1], [0, 1]]: eigenvalues of H = 2XᵀX are 3 ± √5",
        sp.Matrix(ev),
        sp.Matrix([3 - sp.sqrt(5), 3 + sp.sqrt(5)]),
    )
    step_ev = sorted((sp.eye(2) - 2 / lmax * H0).eigenvals(), key=lambda v: float(v))
    proof.identity(
        "At η = 2/λ_max the GD matrix I − ηH has eigenvalues −1 and 1 − 2λ_min/λ_max ∈ (−1, 1)",
        sp.Matrix([sp.nsimplify(sp.simplify(v)) for v in step_ev]),
        sp.Matrix([-1, sp.simplify(1 - 2 * ev[0] / lmax)]),
    )


def prove_gram_control(proof):
    X = sp.Matrix([[1]])
    gram_ev = max((X.T * X).eigenvals())
    eta0 = sp.Rational(3, 2)
    proof.holds(
        "Claimed: GD converges whenever η < 2/λ_max(XᵀX); for X = [1]: 2/λ_max(XᵀX) = 2 and η = 3/2 < 2",
        sp.Lt(eta0, 2 / gram_ev),
        sp.Lt(eta0, 2 / gram_ev),
    )
    mult = (sp.eye(1) - eta0 * 2 * X.T * X)[0]
    proof.identity("GD multiplier 1 − η·2XᵀX at η = 3/2", mult, -2)
    beta_t = mult**t
    proof.note(
        "From β₀ = 1 (y = 0, β* = 0): β_t = (−2)^t, so |β_t| = 2^t → ∞", (sp.Symbol(r"\beta_t"), beta_t)
    )
    proof.refute(
        "X = [1], y = 0, η = 3/2 < 2/λ_max(XᵀX) = 2, yet β_t = (−2)^t diverges (the threshold is "
        "2/λ_max of the Hessian 2XᵀX, i.e. 1)",
        {"X": "[[1]]", "y": 0, "eta": "3/2", "beta_0": 1, "beta_t": "(-2)^t", "beta_10": str(mult**10)},
    )


CLAIMS = [
    Claim(
        "gd-quadratic-step-threshold",
        "GD on ‖Xβ − y‖²: converge / 2-cycle / diverge at 2/λ_max(∇²F)",
        "With λ_max the largest eigenvalue of the Hessian 2XᵀX: GD converges iff 0 < η < 2/λ_max, bounces "
        "with "
        "period 2 at η = 2/λ_max, diverges above (from a start with a non-zero top component).",
        r"\beta_t - \beta^* = Q(I-\eta\Lambda)^t Q^\top(\beta_0-\beta^*),\quad |1-\eta\lambda_{\max}|<1 \iff "
        r"\eta < \frac{2}{\lambda_{\max}(2X^\top X)}",
        prove_threshold,
        {r"\eta": "> 0", r"\lambda_i": r"\ge 0 \text{ eigenvalues of } 2X^\top X"},
        "seed 004 (Loss stabilization: toy model)",
    ),
    Claim(
        "gd-threshold-gram-eigenvalue",
        "CONTROL: threshold 2/λ_max with λ_max of XᵀX",
        "False control (convention mix-up): GD on ‖Xβ − y‖² converges whenever η < 2/λ_max(XᵀX).",
        r"\eta < 2/\lambda_{\max}(X^\top X) \Rightarrow \beta_t \to \beta^*",
        prove_gram_control,
        {},
        "the Hessian convention of seed 004",
        expected="refuted",
    ),
]
