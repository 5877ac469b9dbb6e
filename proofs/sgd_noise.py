"""SGD noise and the SDE model (Li, Tai & E 2018, as summarized in seed 004).

f = (1/n) Σ_k f_k, one SGD step samples i uniformly from {1, …, n}: θ⁺ = θ − η∇f_i(θ) =
θ − η∇f(θ) + √η V with V = √η(∇f − ∇f_i). Expectations over i are the finite averages (1/n)Σ_k.
The SDE dθ = −∇f dτ + √η Σ^{1/2} dB has the Euler–Maruyama step of size η
θ⁺ = θ − η∇f + √η Σ^{1/2}(B_{τ+η} − B_τ) = θ − η∇f + ηΣ^{1/2}Z, Z ∼ N(0, I).
(Seed 004 prints the scheme as "θ̂_t = θ̂_t + ηb + ησZ"; the left side is θ̂_{t+1}.)

Sizes: ``sgd-noise-covariance-any-size`` proves E[V] = 0 and Cov(V) = ηΣ for symbolic n and p
(generic entry); ``sgd-noise-moments`` keeps the explicit matrix check at n = 3, p = 2, and the
Euler–Maruyama comparison stays at p = 2 because it goes through a symbolic Cholesky factor,
which sympy computes only for an explicit matrix.

Run alone: ``python -m dyntools.proofs sgd-noise`` (or ``dyntools prove sgd-noise --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("sgd-noise", order=70)

eta = sp.Symbol("eta", positive=True)
k = sp.Symbol("k", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
NS, P = 3, 2  # explicit samples × parameters for the matrix identities


def gaussian_expectation(expr, zs):
    """E[expr] for Z = zs independent standard normals; exact for polynomials of degree ≤ 3 in Z
    (E Z_i = 0, E Z_i² = 1, E Z_iZ_j = 0 for i ≠ j, odd moments 0)."""
    poly = sp.Poly(sp.expand(expr), *zs)
    if poly.total_degree() > 3:
        raise ValueError("gaussian_expectation handles degree ≤ 3")
    total = sp.S.Zero
    for powers, coeff in poly.terms():
        if all(p % 2 == 0 for p in powers):  # only Z_i² (and constants) survive up to degree 3
            total += coeff
    return total


def _sample_grads():
    return [
        sp.Matrix([sp.Symbol(f"g_{{{a},{c}}}", real=True) for c in range(1, P + 1)]) for a in range(1, NS + 1)
    ]


def _mean(items):
    return sum(items, sp.zeros(*items[0].shape)) / len(items)


def prove_noise_moments(proof):
    g = sp.IndexedBase("g")  # one coordinate of ∇f_k, symbolic n
    grad_f = sp.Sum(g[k], (k, 1, n)) / n
    mean_V = sp.sqrt(eta) * (grad_f - sp.Sum(g[k], (k, 1, n)) / n)
    proof.identity("E[V | θ] = √η(∇f − (1/n)Σ_k ∇f_k) = 0 (each coordinate, symbolic n)", mean_V, 0)
    m = sp.Symbol("m")  # m = ∇f (one coordinate)
    var = sp.Sum(sp.expand((g[k] - m) ** 2), (k, 1, n)).expand().doit() / n
    second = sp.Sum(g[k] ** 2, (k, 1, n)) / n - m**2
    proof.identity(
        "Per coordinate: (1/n)Σ(g_k − ḡ)² = (1/n)Σg_k² − ḡ² when m = ḡ = (1/n)Σg_k (symbolic n)",
        var.subs(m, grad_f),
        second.subs(m, grad_f),
        simplifier=lambda e: sp.simplify(sp.expand(e).doit()),
    )
    grads = _sample_grads()
    gf = _mean(grads)
    Vs = [sp.sqrt(eta) * (gf - gk) for gk in grads]
    EV = _mean(Vs)
    cov_V = _mean([V * V.T for V in Vs]) - EV * EV.T
    Sigma = _mean([(gk - gf) * (gk - gf).T for gk in grads])
    proof.identity(f"n = {NS}, p = {P} symbolic sample gradients: E[V] = 0", EV, sp.zeros(P, 1))
    proof.identity(
        "Cov(V | θ) = ηΣ(θ), Σ = (1/n)Σ_k(∇f_k − ∇f)(∇f_k − ∇f)ᵀ the covariance of the sample gradients",
        cov_V,
        eta * Sigma,
        show=(sp.Symbol(r"\mathrm{Cov}(V_t\mid\theta_t)"), sp.Symbol(r"\eta\Sigma(\theta_t)")),
    )
    proof.identity(
        "… which is also E[VVᵀ]/η (seed 004's definition of Σ, since E[V] = 0)",
        _mean([V * V.T for V in Vs]) / eta,
        Sigma,
    )
    theta = sp.Matrix(sp.symbols(f"theta_1:{P + 1}", real=True))
    proof.identity(
        "SGD rewritten: θ − η∇f_i = θ − η∇f + √ηV_i (each i)",
        theta - eta * grads[0],
        theta - eta * gf + sp.sqrt(eta) * Vs[0],
    )


def prove_em_moments(proof):
    grads = _sample_grads()
    gf = _mean(grads)
    theta = sp.Matrix(sp.symbols(f"theta_1:{P + 1}", real=True))
    Sigma = _mean([(gk - gf) * (gk - gf).T for gk in grads])
    steps = [theta - eta * gk for gk in grads]
    mean_sgd = _mean(steps)
    cov_sgd = _mean([(s - mean_sgd) * (s - mean_sgd).T for s in steps])
    proof.identity("SGD step: E[θ⁺ | θ] = θ − η∇f", mean_sgd, theta - eta * gf)
    proof.identity("SGD step: Cov(θ⁺ | θ) = η²Σ", cov_sgd, eta**2 * Sigma)
    s11, s21, s22 = sp.symbols("s_11 s_21 s_22", real=True)
    S = sp.Matrix([[s11, 0], [s21, s22]])  # any square root S Sᵀ = Σ (e.g. Cholesky)
    zs = sp.symbols("Z_1 Z_2", real=True)
    Z = sp.Matrix(zs)
    expect = lambda e: gaussian_expectation(e, zs)
    em = theta - eta * gf + sp.sqrt(eta) * S * (sp.sqrt(eta) * Z)
    proof.note(
        "Euler–Maruyama step of size η of dθ = −∇f dτ + √η S dB (S Sᵀ = Σ), B_{τ+η} − B_τ = √η Z:",
        (
            sp.Symbol(r"\hat\theta_{t+1}"),
            sp.Symbol(r"\hat\theta_t - \eta\nabla f(\hat\theta_t) + \eta S Z_t"),
        ),
    )
    mean_em = em.applyfunc(expect)
    proof.identity("EM: E[θ⁺ | θ] = θ − η∇f (E[Z] = 0)", mean_em, theta - eta * gf)
    dev = em - mean_em
    cov_em = (dev * dev.T).applyfunc(lambda e: expect(sp.expand(e)))
    proof.identity("EM: Cov(θ⁺ | θ) = η² S Sᵀ (E[ZZᵀ] = I)", cov_em, eta**2 * S * S.T)
    proof.note(
        "So the two steps have the same first two conditional moments exactly when S Sᵀ = Σ, "
        "i.e. σ = Σ^{1/2} as in seed 004; check with the Cholesky factor of the symbolic Σ:"
    )
    L = Sigma.cholesky(hermitian=False)
    proof.identity(
        "L Lᵀ = Σ for the Cholesky factor L of the symbolic sample covariance",
        L * L.T,
        Sigma,
        simplifier=lambda e: sp.simplify(sp.expand(e)),
    )
    proof.identity(
        "… hence Cov_EM = η² L Lᵀ = Cov_SGD",
        (eta**2 * S * S.T).subs({s11: L[0, 0], s21: L[1, 0], s22: L[1, 1]}),
        cov_sgd,
        simplifier=lambda e: sp.simplify(sp.expand(e)),
    )


def prove_noise_covariance_any_size(proof):
    """Generic entry (a, b) of Cov(V | θ) for symbolic n samples and p parameters."""
    kk = sp.Symbol("k", integer=True, positive=True)
    a, b = sp.symbols("a b", integer=True, positive=True)
    g = sp.IndexedBase("g", real=True)  # g[k, c]: coordinate c of ∇f_k
    m_a, m_b = sp.symbols("m_a m_b", real=True)  # m_c = (1/n) Σ_k g[k, c] = (∇f)_c
    V = lambda c, m: sp.sqrt(eta) * (m - g[kk, c])  # coordinate c of V_k = √η(∇f − ∇f_k)
    proof.note("Coordinates a, b ∈ {1, …, p} generic, n samples, m_c = (1/n)Σ_k g_{k,c} = (∇f)_c; "
               "every average over k is (1/n)Σ_{k=1}^n.")
    mean = sp.sqrt(eta) * (sp.Sum(m_a, (kk, 1, n)).doit() - sp.Sum(g[kk, a], (kk, 1, n))) / n  # linearity of Σ
    proof.identity("E[V_a] = (1/n)Σ_k √η(m_a − g_{k,a}) = √η(m_a − (1/n)Σ_k g_{k,a}) = 0 (symbolic n)",
                   mean.subs(m_a, sp.Sum(g[kk, a], (kk, 1, n)) / n), 0)
    proof.identity("Each sample's product: V_{k,a}V_{k,b} = η(g_{k,a} − m_a)(g_{k,b} − m_b)",
                   V(a, m_a) * V(b, m_b), eta * (g[kk, a] - m_a) * (g[kk, b] - m_b))
    proof.note("Hence Cov(V_a, V_b) = (1/n)Σ_k V_{k,a}V_{k,b} − E[V_a]E[V_b] = η(1/n)Σ_k(g_{k,a} − m_a)(g_{k,b} − m_b) "
               "= ηΣ_ab for every n, p and every entry (a, b).",
               r"\mathrm{Cov}(V\mid	heta) = \eta\Sigma(	heta)")


CLAIMS = [
    Claim(
        "sgd-noise-covariance-any-size",
        "SGD noise covariance ηΣ for any number of samples n and parameters p",
        "For symbolic n and a generic entry (a, b) of a p-dimensional parameter: E[V] = 0 and "
        "Cov(V | θ)_ab = ηΣ_ab, Σ the covariance of the sample gradients.",
        r"\mathrm{Cov}(V_t\mid	heta_t)_{ab} = \eta\Sigma_{ab}(	heta_t)\quad orall n, p, a, b",
        prove_noise_covariance_any_size,
        {"n, p": "symbolic", "a, b": "generic coordinates"},
        "seed 004 (SGD and SDEs), Li et al. 2018",
    ),
    Claim(
        "sgd-noise-moments",
        "SGD noise V_t = √η(∇f − ∇f_{i_t}): mean 0, covariance ηΣ",
        "For f = (1/n)Σf_k and i uniform: E[V_t | θ] = 0 (symbolic n) and Cov(V_t | θ) = ηΣ(θ), Σ the "
        "covariance "
        f"of the sample gradients (matrix identity for n = {NS}, p = {P}).",
        r"\mathbb{E}[V_t\mid\theta_t] = 0,\quad \mathrm{Cov}(V_t\mid\theta_t) = \eta\Sigma(\theta_t)",
        prove_noise_moments,
        {"n": "symbolic (mean), 3 (covariance)", r"\eta": "> 0"},
        "seed 004 (SGD and SDEs), Li et al. 2018",
    ),
    Claim(
        "sgd-euler-maruyama-moments",
        "One Euler–Maruyama step matches the SGD step's first two moments",
        "One EM step of size η of dθ = −∇f dτ + √ηΣ^{1/2}dB has conditional mean θ − η∇f and covariance η²Σ, "
        "the same as the SGD step θ − η∇f_i.",
        r"\mathbb{E}[\theta^+] = \theta-\eta\nabla f,\quad \mathrm{Cov}(\theta^+) = \eta^2\Sigma \text{ "
        r"(both schemes)}",
        prove_em_moments,
        {"Z": r"\mathcal{N}(0, I_2)"},
        "seed 004 (SGD and SDEs), Li et al. 2018",
    ),
]
