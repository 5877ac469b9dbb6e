"""Projections of a Brownian motion (seed 004): ⟨v, B_t⟩ has the law of ‖v‖₂ W_t.

B = (B¹, …, Bⁿ) is a standard Brownian motion in ℝⁿ (independent coordinates, Cov(Bⁱ_s, Bʲ_t) =
δ_ij min(s, t)), v ∈ ℝⁿ fixed, W a standard one-dimensional Brownian motion. The seed writes
"⟨v, B_t⟩ = ‖v‖₂W_t" (with v ∈ ℝᵖ, a misprint for ℝⁿ): the equality is one of laws.

Argument: both processes are centred Gaussian processes — X_t = ⟨v, B_t⟩ = Σᵢ vᵢBⁱ_t is a fixed
linear image of the Gaussian process B (a standard fact, not re-proved here) — and a centred
Gaussian process is determined in law by its covariance function. So it suffices to prove
Cov(X_s, X_t) = ‖v‖² min(s, t) = Cov(‖v‖W_s, ‖v‖W_t), for every dimension n (symbolic), which is
exact bilinear algebra on the covariances.

Run alone: ``python -m dyntools.proofs brownian`` (or ``dyntools prove brownian --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("brownian", order=100)

i, j = sp.symbols("i j", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
s, t = sp.symbols("s t", positive=True)
v = sp.IndexedBase("v", real=True)


def _covariance_of_projection(cov_entry):
    """Cov(Σᵢ vᵢBⁱ_s, Σⱼ vⱼBʲ_t) = Σᵢ Σⱼ vᵢ vⱼ Cov(Bⁱ_s, Bʲ_t) with Cov(Bⁱ_s, Bʲ_t) = cov_entry(i, j)."""
    inner = sp.Sum(v[i] * v[j] * cov_entry(i, j), (j, 1, n)).doit()
    inner = inner.subs(sp.Le(i, n), True) if inner.has(sp.Piecewise) else inner  # i runs over 1..n
    return sp.Sum(sp.piecewise_fold(inner), (i, 1, n))


def prove_projection_law(proof):
    norm2 = sp.Sum(v[i] ** 2, (i, 1, n))
    proof.note("Cov(Bⁱ_s, Bʲ_t) = δ_ij min(s, t) (independent standard coordinates).")
    cov = _covariance_of_projection(lambda a, b: sp.KroneckerDelta(a, b) * sp.Min(s, t))
    proof.identity(
        "Cov(⟨v, B_s⟩, ⟨v, B_t⟩) = Σᵢⱼ vᵢvⱼ δ_ij min(s, t) = ‖v‖² min(s, t) (symbolic n)",
        cov, norm2 * sp.Min(s, t),
        show=(sp.Symbol(r"\mathrm{Cov}(\langle v, B_s\rangle, \langle v, B_t\rangle)"), norm2 * sp.Min(s, t)),
    )
    w_cov = norm2 * sp.Min(s, t)  # Cov(‖v‖W_s, ‖v‖W_t) = ‖v‖² Cov(W_s, W_t)
    proof.identity("Cov(‖v‖W_s, ‖v‖W_t) = ‖v‖² min(s, t): the covariance functions agree", cov, w_cov)
    proof.identity("In particular Var⟨v, B_t⟩ = ‖v‖² t = Var(‖v‖W_t) (s = t)", cov.subs(s, t), norm2 * t)
    proof.note("Both processes are centred Gaussian with the same covariance function, hence the same law "
               "(as processes, not only at each t).")


def prove_l1_control(proof):
    norm1 = sp.Sum(sp.Abs(v[i]), (i, 1, n))
    var = _covariance_of_projection(lambda a, b: sp.KroneckerDelta(a, b) * t)
    proof.identity("Var⟨v, B_t⟩ = ‖v‖₁² t", var, norm1**2 * t)


CLAIMS = [
    Claim(
        "brownian-projection-law",
        "⟨v, B_t⟩ has the law of ‖v‖₂W_t",
        "For a standard Brownian motion B in ℝⁿ (n symbolic) and fixed v ∈ ℝⁿ, the process ⟨v, B_t⟩ is a "
        "centred Gaussian process with covariance ‖v‖² min(s, t), that of ‖v‖₂W_t for a one-dimensional "
        "Brownian motion W: the two have the same law.",
        r"\left(\langle v, B_t\rangle\right)_{t\ge0} \overset{d}{=} \left(\|v\|_2 W_t\right)_{t\ge0}",
        prove_projection_law,
        {"n": "symbolic", "v": r"\mathbb{R}^n"},
        "seed 004 (noise of the label-noise SDE)",
    ),
    Claim(
        "brownian-projection-l1-norm",
        "CONTROL: ⟨v, B_t⟩ has the law of ‖v‖₁W_t",
        "False control: the variance of ⟨v, B_t⟩ is ‖v‖₁²t.",
        r"\mathrm{Var}\langle v, B_t\rangle = \|v\|_1^2 t",
        prove_l1_control,
        {},
        "tempting slip (wrong norm)",
        expected="refuted",
    ),
]
