"""Diagonal linear networks h_{u,v}(x) = ⟨u ⊙ v, x⟩ and their label-noise SDE (seed 004).

Square loss L(u, v) = (1/(2n)) Σ_k (h_{u,v}(x_k) − y_k)², residuals r = Xβ − y with β = u ⊙ v,
Jacobian φ_θ(X) = [∇_θ h(x_k)ᵀ]_k ∈ ℝ^{n×2d}, θ = (u, v). The label-noise SDE of the paper is
dθ = −∇L(θ)dτ + √(ηδ) φ_θ(X)ᵀ dB, B a standard Brownian motion in ℝⁿ.

Sizes: the gradients and ``diag-net-hessian-any-size`` are proved for symbolic d and n (generic
entries, sums over symbolic ranges); the explicit Hessian matrix and the label-noise SDE
(Jacobian, noise covariance, δ = σ²/n) are checked at d = n = 2 because they are matrix
identities on explicit matrices (φ_θ(X) ∈ ℝ^{n×2d}), which sympy needs at a given size.

Run alone: ``python -m dyntools.proofs diagonal-nets`` (or ``dyntools prove diagonal-nets --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("diagonal-nets", order=80)

D, NS = 2, 2  # explicit features × samples for matrix identities
eta, delta, sigma = sp.symbols("eta delta sigma", positive=True)


def _setup():
    u = sp.Matrix(sp.symbols(f"u_1:{D + 1}", real=True))
    v = sp.Matrix(sp.symbols(f"v_1:{D + 1}", real=True))
    X = sp.Matrix(NS, D, lambda a, b: sp.Symbol(f"x_{{{a + 1},{b + 1}}}", real=True))
    y = sp.Matrix(sp.symbols(f"y_1:{NS + 1}", real=True))
    return u, v, X, y


def _h(u, v, xrow):
    return sum((u[j] * v[j] * xrow[j] for j in range(D)), sp.S.Zero)


def prove_gradients(proof):
    i, j = sp.symbols("i j", integer=True, positive=True)
    dd = sp.Symbol("d", integer=True, positive=True)
    U, V, Xi = sp.IndexedBase("u"), sp.IndexedBase("v"), sp.IndexedBase("x")
    ndim = i + dd - 1  # a dimension ≥ i
    hsum = sp.Sum(U[j] * V[j] * Xi[j], (j, 1, ndim))
    for var, other, name in ((U, V, "u"), (V, U, "v")):
        grad = sp.piecewise_fold(hsum.diff(var[i]).doit())
        grad = grad.subs(sp.Le(i, ndim), True) if isinstance(grad, sp.Piecewise) else grad
        proof.identity(
            f"∂h/∂{name}_i = {'v' if name == 'u' else 'u'}_i x_i for the symbolic dimension d "
            f"(so ∇_{name} h = {'v' if name == 'u' else 'u'} ⊙ x)",
            sp.simplify(grad),
            other[i] * Xi[i],
            show=(sp.Derivative(hsum, var[i]), other[i] * Xi[i]),
        )
    u, v, X, _ = _setup()
    x = X.row(0).T
    proof.identity(
        "h_{u,v}(x) = ⟨u, v ⊙ x⟩ = ⟨u ⊙ v, x⟩",
        u.dot(v.multiply_elementwise(x)),
        u.multiply_elementwise(v).dot(x),
    )


def _loss(u, v, X, y):
    return sum(((_h(u, v, X.row(k)) - y[k]) ** 2 for k in range(NS)), sp.S.Zero) / (2 * NS)


def prove_hessian(proof):
    u, v, X, y = _setup()
    L = _loss(u, v, X, y)
    theta = list(u) + list(v)
    Hs = sp.hessian(L, theta)
    r = X * u.multiply_elementwise(v) - y
    G = X.T * X / NS
    Huu = sp.diag(*v) * G * sp.diag(*v)
    Hvv = sp.diag(*u) * G * sp.diag(*u)
    Huv = sp.diag(*v) * G * sp.diag(*u) + sp.diag(*(X.T * r / NS))
    proof.note(
        f"L(u, v) = (1/(2n)) Σ_k (⟨u ⊙ v, x_k⟩ − y_k)², explicit d = {D}, n = {NS} with symbolic data."
    )
    proof.identity(
        "∇_u L = (1/n) v ⊙ (Xᵀr), r = Xβ − y",
        sp.Matrix([sp.diff(L, a) for a in u]),
        v.multiply_elementwise(X.T * r) / NS,
    )
    proof.identity(
        "Block ∇²_uu L = diag(v)(XᵀX/n)diag(v)",
        Hs[:D, :D],
        Huu,
        show=(
            sp.Symbol(r"\nabla^2_{uu}L"),
            sp.Symbol(r"\operatorname{diag}(v)\tfrac{X^\top X}{n}\operatorname{diag}(v)"),
        ),
    )
    proof.identity("Block ∇²_vv L = diag(u)(XᵀX/n)diag(u)", Hs[D:, D:], Hvv)
    proof.identity(
        "Block ∇²_uv L = diag(v)(XᵀX/n)diag(u) + diag(Xᵀr/n)",
        Hs[:D, D:],
        Huv,
        show=(
            sp.Symbol(r"\nabla^2_{uv}L"),
            sp.Symbol(
                r"\operatorname{diag}(v)\tfrac{X^\top X}{n}\operatorname{diag}(u) + "
                r"\operatorname{diag}(\tfrac{X^\top r}{n})"
            ),
        ),
    )
    proof.identity("The Hessian is symmetric: ∇²_vu L = (∇²_uv L)ᵀ", Hs[D:, :D], Huv.T)


def prove_hessian_any_size(proof):
    """Generic entries (a, b) of the Hessian blocks for symbolic d features and n samples."""
    n_, d_ = sp.symbols("n d", integer=True, positive=True)
    k, j, a, b = sp.symbols("k j a b", integer=True, positive=True)
    u, v, x, y = (sp.IndexedBase(s, real=True) for s in "uvxy")
    r = lambda kk: sp.Sum(u[j] * v[j] * x[kk, j], (j, 1, d_)) - y[kk]  # residual of sample k
    L = sp.Sum(r(k) ** 2, (k, 1, n_)) / (2 * n_)
    exists = {sp.Le(a, d_): True, sp.Le(b, d_): True}  # the coordinates a, b ≤ d exist

    def second(p, q):
        e = L.diff(p).diff(q).doit()
        return e.replace(lambda z: isinstance(z, sp.Piecewise), lambda z: sp.piecewise_fold(z).subs(exists))

    gram = sp.Sum(x[k, a] * x[k, b], (k, 1, n_)) / n_  # (XᵀX/n)_ab
    proof.note("L(u, v) = (1/(2n)) Σ_k (Σ_j u_j v_j x_{kj} − y_k)² with n, d symbolic; a, b generic coordinates.",
               (sp.Symbol("L"), L))
    proof.identity("(∇²_uu L)_ab = v_a (XᵀX/n)_ab v_b", second(u[a], u[b]), v[a] * gram * v[b])
    proof.identity("(∇²_vv L)_ab = u_a (XᵀX/n)_ab u_b", second(v[a], v[b]), u[a] * gram * u[b])
    proof.identity("(∇²_uv L)_ab = v_a (XᵀX/n)_ab u_b + δ_ab (Xᵀr/n)_a", second(u[a], v[b]),
                   v[a] * gram * u[b] + sp.KroneckerDelta(a, b) * sp.Sum(x[k, a] * r(k), (k, 1, n_)) / n_)


def prove_label_noise_sde(proof):
    u, v, X, y = _setup()
    theta = list(u) + list(v)
    phi = sp.Matrix([[sp.diff(_h(u, v, X.row(k)), t) for t in theta] for k in range(NS)])
    proof.note(
        "Jacobian φ_θ(X) ∈ ℝ^{n×2d}, rows ∇_θh(x_k)ᵀ = [(v ⊙ x_k)ᵀ, (u ⊙ x_k)ᵀ]:",
        (sp.Symbol(r"\phi_\theta(X)"), phi),
    )
    dB = sp.Matrix(sp.symbols(f"dB_1:{NS + 1}", real=True))
    noise = phi.T * dB
    proof.identity(
        "u-block of φᵀdB is v ⊙ (XᵀdB) (seed 004: du = −∇_uL dτ + √(ηδ) v ⊙ [XᵀdB])",
        noise[:D, :],
        v.multiply_elementwise(X.T * dB),
    )
    proof.identity(
        "v-block is u ⊙ (XᵀdB) (the symmetric equation for v)", noise[D:, :], u.multiply_elementwise(X.T * dB)
    )
    L = _loss(u, v, X, y)
    r = X * u.multiply_elementwise(v) - y
    proof.identity(
        "Drift of u: −∇_uL = −(1/n) v ⊙ (Xᵀr)",
        -sp.Matrix([sp.diff(L, a) for a in u]),
        -v.multiply_elementwise(X.T * r) / NS,
    )
    proof.identity(
        "Diffusion matrix (u-block of ηδ φᵀφ) = ηδ diag(v)XᵀX diag(v)",
        (eta * delta * phi.T * phi)[:D, :D],
        eta * delta * sp.diag(*v) * X.T * X * sp.diag(*v),
    )
    # label-noise SGD: one sample i uniform, label y_i + ξ, E ξ = 0, E ξ² = σ²
    xi = sp.Symbol("xi", real=True)

    def expect(e):
        """E over ξ with Eξ = 0, Eξ² = σ² (the expressions are polynomials of degree ≤ 2 in ξ)."""
        c = sp.Poly(sp.expand(e), xi).all_coeffs()[::-1] + [0, 0, 0]
        assert sp.Poly(sp.expand(e), xi).degree() <= 2
        return c[0] + c[2] * sigma**2

    steps = []
    for k in range(NS):
        hk = _h(u, v, X.row(k))
        grad_k = sp.Matrix([sp.diff(hk, t) for t in theta])
        steps.append(-eta * (hk - y[k] - xi) * grad_k)
    noise_part = [s - s.applyfunc(expect) for s in steps]
    cov = (
        sum(
            (n_.multiply(n_.T).applyfunc(lambda e: expect(sp.expand(e))) for n_ in noise_part),
            sp.zeros(2 * D, 2 * D),
        )
        / NS
    )
    proof.identity(
        "Label-noise SGD (label y_i + ξ, Eξ = 0, Eξ² = σ², i uniform): the ξ-part of the step has "
        "covariance η²σ²/n · φᵀφ",
        cov,
        eta**2 * sigma**2 / NS * phi.T * phi,
    )
    proof.identity(
        "One Euler–Maruyama step (size η) of the SDE has noise √(ηδ)φᵀ√η Z with covariance η²δ φᵀφ",
        (sp.sqrt(eta * delta) * sp.sqrt(eta)) ** 2 * phi.T * phi,
        eta**2 * delta * phi.T * phi,
    )
    proof.solve(
        "The two covariances agree iff δ = σ²/n (the label-noise scale per sample)",
        [eta**2 * delta - eta**2 * sigma**2 / NS],
        [delta],
        sp.FiniteSet((sigma**2 / NS,)),
    )


CLAIMS = [
    Claim(
        "diag-net-hessian-any-size",
        "Hessian blocks of a diagonal linear network for any d and n",
        "For symbolic numbers of features d and samples n, entrywise: ∇²_uu L = diag(v)(XᵀX/n)diag(v), "
        "∇²_vv L = diag(u)(XᵀX/n)diag(u), ∇²_uv L = diag(v)(XᵀX/n)diag(u) + diag(Xᵀr/n).",
        r"\nabla^2_{uv}L = \operatorname{diag}(v)\tfrac{X^\top X}{n}\operatorname{diag}(u) + "
        r"\operatorname{diag}(\tfrac{X^\top r}{n})\quad \forall d, n",
        prove_hessian_any_size,
        {"d, n": "symbolic", "a, b": "generic coordinates"},
        "seed 004 (diagonal linear networks)",
    ),
    Claim(
        "diag-net-gradients",
        "Diagonal linear network: ∇_u h = v ⊙ x, ∇_v h = u ⊙ x",
        "For h_{u,v}(x) = ⟨u ⊙ v, x⟩ (symbolic dimension d): ∇_u h = v ⊙ x and ∇_v h = u ⊙ x.",
        r"\nabla_u h_{u,v}(x) = v\odot x,\quad \nabla_v h_{u,v}(x) = u\odot x",
        prove_gradients,
        {"d": "symbolic"},
        "seed 004 (Sparse feature learning)",
    ),
    Claim(
        "diag-net-hessian",
        "Hessian blocks of the square loss of a diagonal linear network",
        "∇²_uu L = diag(v)(XᵀX/n)diag(v), ∇²_vv L = diag(u)(XᵀX/n)diag(u), ∇²_uv L = diag(v)(XᵀX/n)diag(u) + "
        f"diag(Xᵀr/n) (explicit d = {D}, n = {NS}, symbolic data).",
        r"\nabla^2 L = \begin{pmatrix} D_v G D_v & D_v G D_u + \mathrm{diag}(X^\top r/n)\\ \cdot & D_u G "
        r"D_u\end{pmatrix},"
        r"\ G = X^\top X/n",
        prove_hessian,
        {"L": r"\frac{1}{2n}\sum_k(h(x_k)-y_k)^2"},
        "seed 004",
    ),
    Claim(
        "diag-net-label-noise-sde",
        "Label-noise SDE for (u, v): drift and diffusion",
        "dθ = −∇L dτ + √(ηδ)φᵀdB gives du = −(1/n)v ⊙ (Xᵀr)dτ + √(ηδ) v ⊙ (XᵀdB) (and symmetrically for v); "
        "its EM "
        "step matches the label-noise SGD noise covariance iff δ = σ²/n.",
        r"du_\tau = -\nabla_u L\,d\tau + \sqrt{\eta\delta}\, v_\tau\odot\left[X^\top dB_\tau\right]",
        prove_label_noise_sde,
        {r"\eta,\delta,\sigma": "> 0"},
        "seed 004 (label-noise SDE, diagonal linear networks)",
    ),
]
