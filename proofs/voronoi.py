"""The Voronoi study of seed 000: what its "exact algorithm" computes, the learned absolute value, the
gradient of the normalized centers, the "min" decay on a scalar — and a refuted control: the seed's
rule is not the Voronoi (nearest-center) rule.

Run alone: ``python -m dyntools.proofs voronoi`` (or ``dyntools prove voronoi --controls``).
"""

import sympy as sp

from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("voronoi", order=110)

x1, x2, c1, c2 = sp.symbols("x_1 x_2 c_1 c_2", real=True)


def prove_projection_distance(proof):
    x = sp.Matrix([x1, x2])
    c = sp.Matrix([c1, c2])
    n2 = (c.T * c)[0]
    score = (x.T * c)[0] / n2 - 1
    proof.identity(
        "xᵀc/‖c‖² − 1 = (x − c)ᵀc / ‖c‖² (D = 2, symbolic)",
        score,
        ((x - c).T * c)[0] / n2,
    )
    proof.note(
        "(x − c)ᵀc/‖c‖ is the signed distance from x to the hyperplane H_c = {y : yᵀc = ‖c‖²} through c "
        "orthogonal to c; hence |xᵀc/‖c‖² − 1| = dist(x, H_c)/‖c‖.",
    )
    t = sp.Symbol("t", real=True)
    foot = x - t * c
    t_star = sp.solve(sp.Eq((foot.T * c)[0], n2), t)[0]
    proof.identity(
        "the foot of the perpendicular x − t*c lies on H_c at t* = (xᵀc − ‖c‖²)/‖c‖², which is the score",
        t_star,
        score,
    )
    proof.identity(
        "dist(x, H_c)² = ‖t* c‖² = score² · ‖c‖²",
        ((t_star * c).T * (t_star * c))[0],
        score**2 * n2,
    )


def prove_plus_minus(proof):
    z = sp.Symbol("z", positive=True)
    a, b = sp.symbols("a b", positive=True)
    for sign, zz in (("z > 0", z), ("z < 0", -z)):
        proof.identity(
            f"ReLU(−zp) + ReLU(zp) at p = 1 equals |z| ({sign})",
            sp.Max(-zz, 0) + sp.Max(zz, 0),
            sp.Abs(zz),
        )
    proof.identity(
        "with p = (−a, b), a, b > 0: ReLU(p₀z) + ReLU(p₁z) = b·z for z > 0",
        sp.Max(-a * z, 0) + sp.Max(b * z, 0),
        b * z,
    )
    proof.identity(
        "… and = a·|z| for z < 0: the pair learns an asymmetric absolute value (a = b = 1: |z|)",
        sp.Max(a * z, 0) + sp.Max(-b * z, 0),
        a * sp.Abs(-z),
    )


def prove_normalized_center_jacobian(proof):
    c = sp.Matrix([c1, c2])
    n2 = (c.T * c)[0]
    u = c / n2
    J = u.jacobian(c)
    proof.identity(
        "∂(c/‖c‖²)/∂c = I/‖c‖² − 2ccᵀ/‖c‖⁴ (symmetric): the chain rule the ladder's kernel applies",
        J,
        sp.eye(2) / n2 - 2 * c * c.T / n2**2,
    )


def prove_min_decay_scalar(proof):
    th = sp.Symbol("theta", real=True, nonzero=True)
    eta = sp.Symbol("eta", positive=True)
    proof.identity(
        "for a one-element group min|θ| · sign θ = θ, so θ − η min|θ| sign θ = θ(1 − η) (L2 decay, λ = 1)",
        th - eta * sp.Abs(th) * sp.sign(th),
        th * (1 - eta),
    )


def prove_rules_equal_control(proof):
    x = sp.Matrix([1, 5])
    centers = [sp.Matrix([1, 0]), sp.Matrix([0, 1])]
    scores = [sp.Abs((x.T * c)[0] / (c.T * c)[0] - 1) for c in centers]
    dists = [((x - c).T * (x - c))[0] for c in centers]
    proof.holds(
        "x = (1, 5), c₁ = (1, 0), c₂ = (0, 1): the seed's scores are |1 − 1| = 0 < |5 − 1| = 4, so its rule picks c₁",
        sp.Lt(scores[0], scores[1]),
        (sp.Symbol("scores"), sp.Matrix(scores)),
    )
    proof.holds(
        "squared distances ‖x − c₁‖² = 25 > ‖x − c₂‖² = 17, so the nearest center is c₂",
        sp.Gt(dists[0], dists[1]),
        (sp.Symbol("dists"), sp.Matrix(dists)),
    )
    proof.refute(
        "argmin_c |xᵀc/‖c‖² − 1| = c₁ but argmin_c ‖x − c‖ = c₂ at x = (1, 5), c₁ = (1, 0), c₂ = (0, 1)",
        {"x": "(1, 5)", "c_1": "(1, 0)", "c_2": "(0, 1)", "scores": [str(s) for s in scores],
         "squared_distances": [str(d) for d in dists]},
    )


CLAIMS = [
    Claim(
        "voronoi-projection-score-is-hyperplane-distance",
        "The seed's exact rule scores a center by the distance to its tangent hyperplane",
        "|xᵀc/‖c‖² − 1| = dist(x, H_c)/‖c‖ with H_c the hyperplane through c orthogonal to c.",
        r"\left|\frac{x^\top c}{\|c\|^2} - 1\right| = \frac{\operatorname{dist}(x, H_c)}{\|c\|},\quad "
        r"H_c = \{y : y^\top c = \|c\|^2\}",
        prove_projection_distance,
        {"c": r"\neq 0", "D": "2 (the identity is the same in any D)"},
        "seed 000 (Exact algorithm)",
    ),
    Claim(
        "voronoi-plus-minus-absolute-value",
        "The plus–minus pair with ReLU learns an (asymmetric) absolute value",
        "ReLU(p₀z) + ReLU(p₁z) = |z| at p = (−1, 1); with p = (−a, b): b·z for z > 0, a·|z| for z < 0.",
        r"\mathrm{ReLU}(-z) + \mathrm{ReLU}(z) = |z|",
        prove_plus_minus,
        {"a, b": "> 0"},
        "seed 000 (…learning to use ReLU instead of absolute value)",
    ),
    Claim(
        "voronoi-normalized-center-jacobian",
        "Jacobian of the normalized center c/‖c‖²",
        "∂(c/‖c‖²)/∂c = I/‖c‖² − 2ccᵀ/‖c‖⁴.",
        r"\frac{\partial}{\partial c}\frac{c}{\|c\|^2} = \frac{I}{\|c\|^2} - \frac{2cc^\top}{\|c\|^4}",
        prove_normalized_center_jacobian,
        {"c": r"\neq 0"},
        "seed 000 (…learning the centers from scratch)",
    ),
    Claim(
        "voronoi-min-decay-on-a-scalar",
        "The study's min decay on a one-element tensor is L2 decay with λ = 1",
        "θ − η min|θ| sign θ = θ(1 − η) when the group holds θ alone.",
        r"\theta - \eta\,\min|\theta|\,\operatorname{sign}\theta = (1-\eta)\,\theta",
        prove_min_decay_scalar,
        {r"\theta": r"\neq 0", r"\eta": "> 0"},
        "seed 000's code (AdamW min decay)",
    ),
    Claim(
        "voronoi-exact-rule-is-nearest-center",
        "CONTROL: the seed's exact rule is the Voronoi (nearest-center) rule",
        "False control: argmin_c |xᵀc/‖c‖² − 1| = argmin_c ‖x − c‖ for every x and every set of centers.",
        r"\arg\min_c \left|\frac{x^\top c}{\|c\|^2} - 1\right| = \arg\min_c \|x - c\|",
        prove_rules_equal_control,
        {},
        "seed 000 (Setup: a Voronoi partition; Exact algorithm)",
        expected="refuted",
    ),
]
