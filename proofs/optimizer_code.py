"""The weight-decay claims re-derived from the library's own optimizers (the code that runs).

Every iterate below comes from :func:`dyntools.symbolic.unroll.unroll` or
:func:`~dyntools.symbolic.unroll.step`: the optimizers of :mod:`dyntools.optim` (``optim.sgd``,
``optim.sgdw``, ``optim.adam``, ``optim.adamw``, ``optim.adagrad``, ``optim.rmsprop``,
``optim.rmsprop_bc``) with their hyperparameters lifted to positive symbols and their chains of
transforms evaluated on sympy expressions. A change to a transform, or to where a factory puts
``add_decay`` in the chain, changes these iterates, and the proofs below fail (the tests show it
by perturbing one transform).

Notation: η the learning rate (``lr``), λ the library's ``weight_decay`` (the L2 coefficient λ'
of seed 001 for the coupled optimizers), μ momentum, τ dampening, β₁, β₂, ε as in torch.
The gradient g_t fed at step t is a free symbol (the loss gradient at θ_{t−1}), so every identity
holds for every loss.

Which sizes are fixed, and why: the first-step and generic-step identities hold for every t
(``t`` enters a transform only through powers β^t and the test ``t == 1``, so a step from an
arbitrary symbolic state at a symbolic ``t = s + 1`` covers every t ≥ 2); the preconditioner
identities M_t are checked for t = 1, 2, 3 on 2 coordinates from the unrolled code (explicit
matrices), and for every t ≥ 1 and any dimension for AdaGrad, RMSProp and bias-corrected RMSProp
by induction on t with a symbolic coordinate index (``code-preconditioners-any-t``). The
"any dimension" step rests on the transforms acting elementwise, so coordinate i of the update
depends on coordinate i of the gradients only — a fact read off the code and checked on 2
coordinates, not proved for arbitrary code. What stays at a fixed size: the two-step
SGD/SGDW difference and the first Adam step (they are statements about those steps), and the
explicit 3-step × 2-coordinate matrices M_t (the matrix form; the induction gives the entries).

Run alone: ``python -m dyntools.proofs optimizer-code`` (or ``dyntools prove optimizer-code --controls``).
"""

import numpy as np
import sympy as sp

from dyntools import optim
from dyntools.optim import transforms
from dyntools.symbolic import Claim, ClaimFamily
from dyntools.symbolic.unroll import hyper_symbol, lift, step, unroll

FAMILY = ClaimFamily("optimizer-code", order=40)

eta, lam, mu, tau = (hyper_symbol(n) for n in ("lr", "weight_decay", "momentum", "dampening"))
b1, b2, eps, alpha = (hyper_symbol(n) for n in ("b1", "b2", "eps", "alpha"))
th_prev, g_t, b_prev = sp.symbols("theta_{t-1} g_t b_{t-1}", real=True)
s_ = sp.Symbol("s", integer=True, positive=True)  # t = s + 1 ranges over every t ≥ 2
UNIT = sp.Interval.open(0, 1)
BETAS = {b1: UNIT, b2: UNIT, alpha: UNIT, mu: UNIT, tau: UNIT}
T, N = 3, 2  # unrolled steps × coordinates for the explicit M_t identities


def _one(x):
    return np.array([x], dtype=object)


def prove_sgd_l2(proof):
    opt = optim.sgd(lr=0.1, weight_decay=0.01)
    chain, lr, _ = lift(opt)
    proof.note(f"optim.sgd(lr=η, weight_decay=λ): chain {' → '.join(chain.names())} (decay before the step).")
    new, _, _ = step(chain, lr, _one(th_prev), _one(g_t), chain.init(_one(th_prev)), s_ + 1)
    proof.identity(
        "The library's step from any θ_{t−1} (every t ≥ 1: the chain has no state) is weight decay by ηλ",
        new[0],
        (1 - eta * lam) * th_prev - eta * g_t,
    )
    w = unroll(optim.sgdw(lr=0.1, weight_decay=0.01), 3)
    c = unroll(opt, 3)
    proof.identity("… and coincides with optim.sgdw for 3 unrolled steps (no momentum)", c.theta(3), w.theta(3))


def prove_momentum_buffer(proof):
    opt = optim.sgd(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
    chain, lr, _ = lift(opt)
    proof.note(f"optim.sgd with momentum μ, dampening τ, weight_decay λ: chain {' → '.join(chain.names())}.")
    is_buffer = [isinstance(tr, transforms.trace) for tr in chain.transforms]  # the momentum buffer's slot
    state = tuple((_one(b_prev),) if b else st for b, st in zip(is_buffer, chain.init(_one(th_prev))))
    new, _, state = step(chain, lr, _one(th_prev), _one(g_t), state, s_ + 1)
    (buf,) = state[is_buffer.index(True)]
    proof.identity(
        "Any step t ≥ 2 of the library's SGD: the L2 gradient enters the buffer, "
        "b_t = μb_{t−1} + (1−τ)(g_t + λθ_{t−1})",
        buf[0],
        mu * b_prev + (1 - tau) * (g_t + lam * th_prev),
    )
    proof.identity(
        "… so θ_t = (1 − η(1−τ)λ)θ_{t−1} − η(μb_{t−1} + (1−τ)g_t): weight decay by η(1−τ)λ plus momentum on f",
        new[0],
        (1 - eta * (1 - tau) * lam) * th_prev - eta * (mu * b_prev + (1 - tau) * g_t),
    )
    first = unroll(opt, 1)
    th0, g1 = sp.Symbol("theta_0", real=True), sp.Symbol("g_1", real=True)
    proof.identity("First step (b₁ = d₁, no dampening): plain decay by ηλ", first.theta(1),
                   (1 - eta * lam) * th0 - eta * g1)


def _sgd_pair():
    kw = dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
    return unroll(optim.sgd(**kw), 2), unroll(optim.sgdw(**kw), 2)


def prove_sgdw_differs(proof):
    l2, w = _sgd_pair()
    th0, th1 = sp.Symbol("theta_0", real=True), l2.theta(1)
    proof.identity("After one step optim.sgd (L2) and optim.sgdw (decoupled) coincide", l2.theta(1), w.theta(1))
    proof.identity(
        "After two steps θ₂(sgd) − θ₂(sgdw) = ηλ(τθ₁ − μθ₀)",
        l2.theta(2) - w.theta(2),
        eta * lam * (tau * th1 - mu * th0),
    )


def prove_sgdw_equals_control(proof):
    l2, w = _sgd_pair()
    proof.identity("optim.sgd (L2) and optim.sgdw after two steps", l2.theta(2), w.theta(2))


def _adam_pair(symbols=None):
    kw = dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    return unroll(optim.adam(**kw), 1, symbols=symbols), unroll(optim.adamw(**kw), 1, symbols=symbols)


def prove_adam_first_step(proof):
    g1, th0 = sp.symbols("g_1 theta_0", positive=True)
    a, w = _adam_pair({"eps": 0})
    sub = {sp.Symbol("g_1", real=True): g1, sp.Symbol("theta_0", real=True): th0}
    proof.note("optim.adam (λ coupled) and optim.adamw (λ decoupled), ε = 0, first step, g₁ + λθ₀ > 0.")
    proof.identity("Adam+L2's first step is θ₀ − η whatever λ (m̂₁/√v̂₁ = sign(g₁ + λθ₀))",
                   a.theta(1).subs(sub), th0 - eta)
    proof.identity("AdamW's first step is θ₀ − η − ηλθ₀: the decay acts", w.theta(1).subs(sub),
                   th0 - eta - eta * lam * th0)


def prove_adam_equals_adamw_control(proof):
    a, w = _adam_pair()
    proof.identity("optim.adam (L2) and optim.adamw (decoupled), same λ, first step", a.theta(1), w.theta(1))


def _grads():
    return [[sp.Symbol(f"g_{{{t},{c}}}", real=True) for c in range(1, N + 1)] for t in range(1, T + 1)]


def _check_M(proof, name, opt, G_of, scale):
    """θ_t − θ_{t−1} from the unrolled library optimizer equals −η M_t g_t,
    M_t = (scale_t diag(G_t)^{1/2} + εI)^{−1}, for t = 1..T on N coordinates."""
    grads = _grads()
    run = unroll(opt, T, grads=grads, dim=N)
    for t in range(1, T + 1):
        gt = sp.Matrix(grads[t - 1])
        G = G_of([sp.Matrix(g) for g in grads[:t]], t)
        M = sp.diag(*[1 / (scale(t) * sp.sqrt(G[c, c]) + eps) for c in range(N)])
        proof.identity(
            f"{name}, t = {t}: θ_t − θ_{{t−1}} = −η M_t g_t",
            run.iterates[t] - run.iterates[t - 1],
            -eta * M * gt,
            simplifier=sp.cancel,
            show=(sp.Symbol(f"M_{t}"), M) if t == T else None,
        )


def _ema_G(beta):
    return lambda gs, t: sum(((1 - beta) * beta ** (t - k) * gs[k - 1] * gs[k - 1].T for k in range(1, t + 1)),
                             sp.zeros(N, N))


def prove_adagrad(proof):
    _check_M(proof, "optim.adagrad", optim.adagrad(lr=0.1, eps=1e-10),
             lambda gs, t: sum((g * g.T for g in gs), sp.zeros(N, N)), lambda t: 1)


def prove_rmsprop(proof):
    _check_M(proof, "optim.rmsprop", optim.rmsprop(lr=0.1, alpha=0.99, eps=1e-8), _ema_G(alpha), lambda t: 1)


def prove_rmsprop_bc(proof):
    _check_M(proof, "optim.rmsprop_bc", optim.rmsprop_bc(lr=0.1, beta2=0.999, eps=1e-8), _ema_G(b2),
             lambda t: 1 / sp.sqrt(1 - b2**t))


def _any_t(proof, name, opt, weight, scale):
    """Induction on t for one generic coordinate i (any dimension): the first state slot of the
    library's preconditioner is diag(G_t)_ii = Σ_{k≤t} w(t, k) g_{k,i}², and the direction is
    g_{t,i}/(scale_t √diag(G_t)_ii + ε)."""
    t = sp.Symbol("t", integer=True, positive=True)
    i, k = sp.symbols("i k", integer=True, positive=True)
    g = sp.IndexedBase("g", real=True)
    term = lambda tt, kk: weight(tt, kk) * g[kk, i] ** 2
    G = lambda tt: sp.Sum(term(tt, k), (k, 1, tt))
    chain, lr, _ = lift(opt)
    (first, *rest), = chain.init(_one(0))  # one transform; its first slot is the accumulator
    proof.note(f"{name}: chain {' → '.join(chain.names())}; claimed accumulator of coordinate i:",
               (sp.Symbol(r"G_{t,ii}"), G(t)))
    _, _, ((acc1, *_),) = step(chain, lr, _one(0), _one(g[1, i]), chain.init(_one(0)), 1)
    proof.identity(f"{name}, base case t = 1: the library's accumulator is diag(G₁)_ii", acc1[0], G(1).doit())
    state = ((_one(G(t - 1)), *rest),)
    _, u, ((acct, *_),) = step(chain, lr, _one(0), _one(g[t, i]), state, t)
    peeled = sp.Sum(term(t, k), (k, 1, t - 1)) + term(t, t)  # definition of Σ: split off k = t
    proof.identity(f"{name}, induction step: from diag(G_{{t−1}})_ii and g_t the library's accumulator is "
                   "Σ_{k<t} w(t,k)g_k² + w(t,t)g_t² = diag(G_t)_ii", acct[0], peeled)
    proof.identity(f"{name}: its direction is g_{{t,i}}/(scale_t·√diag(G_t)_ii + ε) = (M_t g_t)_i for every t ≥ 1",
                   u[0], g[t, i] / (scale(t) * sp.sqrt(acct[0]) + eps))


def prove_preconditioners_any_t(proof):
    _any_t(proof, "optim.adagrad", optim.adagrad(lr=0.1, eps=1e-10), lambda tt, kk: 1, lambda tt: 1)
    _any_t(proof, "optim.rmsprop", optim.rmsprop(lr=0.1, alpha=0.99, eps=1e-8),
           lambda tt, kk: (1 - alpha) * alpha ** (tt - kk), lambda tt: 1)
    _any_t(proof, "optim.rmsprop_bc", optim.rmsprop_bc(lr=0.1, beta2=0.999, eps=1e-8),
           lambda tt, kk: (1 - b2) * b2 ** (tt - kk), lambda tt: 1 / sp.sqrt(1 - b2**tt))
    grads = _grads()[:2]
    run = unroll(optim.rmsprop_bc(lr=0.1, beta2=0.999, eps=1e-8), 2, grads=grads, dim=N)
    cross = run.iterates[2][0].diff(grads[0][1]), run.iterates[2][0].diff(grads[1][1])
    proof.identity("Coordinatewise (checked on 2 coordinates): θ_{2,1} does not depend on g_{·,2}",
                   sp.Matrix(cross), sp.zeros(2, 1))


CLAIMS = [
    Claim(
        "code-sgd-l2-is-decay",
        "optim.sgd(weight_decay=λ) is weight decay by ηλ (from the code)",
        "The library's SGD step with L2 coefficient λ is θ_t = (1 − ηλ)θ_{t−1} − ηg_t for every t, and "
        "equals optim.sgdw without momentum.",
        r"\theta_t = (1-\eta\lambda)\theta_{t-1} - \eta g_t",
        prove_sgd_l2,
        {r"\eta, \lambda": "> 0"},
        "seed 001 (Q1.a.i) on dyntools.optim.sgd",
        domains={},
    ),
    Claim(
        "code-sgd-momentum-l2-in-buffer",
        "optim.sgd with momentum: the L2 gradient is in the buffer (from the code)",
        "For every t ≥ 2 the library's SGD with momentum μ, dampening τ and weight_decay λ steps "
        "θ_t = (1 − η(1−τ)λ)θ_{t−1} − η(μb_{t−1} + (1−τ)g_t); the first step is decay by ηλ.",
        r"\theta_t = (1-\eta(1-\tau)\lambda)\theta_{t-1} - \eta(\mu b_{t-1} + (1-\tau)g_t)",
        prove_momentum_buffer,
        {r"\mu, \tau": "(0, 1)"},
        "seed 001 (Q1.a.ii), seed 002, on dyntools.optim.sgd",
        domains=BETAS,
    ),
    Claim(
        "code-sgdw-differs",
        "optim.sgdw ≠ optim.sgd + L2 with momentum (from the code)",
        "With momentum, two steps of the library's sgd and sgdw (same λ) differ by exactly ηλ(τθ₁ − μθ₀).",
        r"\theta_2^{\mathrm{sgd}} - \theta_2^{\mathrm{sgdw}} = \eta\lambda(\tau\theta_1 - \mu\theta_0)",
        prove_sgdw_differs,
        {r"\mu, \tau": "(0, 1)"},
        "seed 001 (Q1.a.ii: SGDW) on dyntools.optim",
        domains=BETAS,
    ),
    Claim(
        "code-sgdw-equals-sgd-l2",
        "CONTROL: optim.sgdw equals optim.sgd + L2 with momentum",
        "False control: two steps of the library's sgd and sgdw with momentum coincide.",
        r"\theta_2^{\mathrm{sgd}} = \theta_2^{\mathrm{sgdw}}",
        prove_sgdw_equals_control,
        {},
        "tempting misreading, on dyntools.optim",
        expected="refuted",
        domains=BETAS,
    ),
    Claim(
        "code-adam-l2-first-step",
        "optim.adam's first step ignores λ, optim.adamw's does not (from the code)",
        "With ε = 0 and g₁ + λθ₀ > 0 the library's Adam+L2 moves θ₀ to θ₀ − η whatever λ; AdamW to "
        "θ₀ − η − ηλθ₀.",
        r"\theta_1^{\mathrm{adam}} = \theta_0 - \eta,\quad \theta_1^{\mathrm{adamw}} = \theta_0 - \eta - "
        r"\eta\lambda\theta_0",
        prove_adam_first_step,
        {r"g_1, \theta_0": "> 0", r"\varepsilon": "0"},
        "seed 001 (Q1.b), seed 002, on dyntools.optim.adam / adamw",
        domains=BETAS,
    ),
    Claim(
        "code-adam-l2-equals-adamw",
        "CONTROL: optim.adam with L2 equals optim.adamw",
        "False control: one step of the library's adam and adamw with the same λ coincide.",
        r"\theta_1^{\mathrm{adam}} = \theta_1^{\mathrm{adamw}}",
        prove_adam_equals_adamw_control,
        {},
        "tempting misreading, on dyntools.optim",
        expected="refuted",
        domains=BETAS,
    ),
    Claim(
        "code-preconditioner-adagrad",
        "optim.adagrad steps by −ηM_t g_t, M_t = (diag(G_t)^{1/2} + εI)^{−1} (from the code)",
        f"The library's AdaGrad, unrolled {T} steps on {N} coordinates with symbolic gradients, moves by "
        "−ηM_t g_t with G_t = Σ_{s≤t} g_s g_sᵀ.",
        r"\theta_t - \theta_{t-1} = -\eta\left(\operatorname{diag}(G_t)^{1/2} + \varepsilon I\right)^{-1} g_t",
        prove_adagrad,
        {"t": f"1..{T}", "d": str(N)},
        "seed 001 (Q1.b) on dyntools.optim.adagrad",
    ),
    Claim(
        "code-preconditioner-rmsprop",
        "optim.rmsprop steps by −ηM_t g_t with G_t the EMA of outer products (from the code)",
        f"The library's RMSProp (smoothing α), unrolled {T} steps on {N} coordinates, moves by "
        "−ηM_t g_t, M_t = (diag(G_t)^{1/2} + εI)^{−1}, G_t = Σ_{s≤t}(1−α)α^{t−s} g_s g_sᵀ.",
        r"G_t = \sum_{s\le t}(1-\alpha)\alpha^{t-s} g_s g_s^\top",
        prove_rmsprop,
        {r"\alpha": "(0, 1)", "t": f"1..{T}", "d": str(N)},
        "seed 001 (Q1.b) on dyntools.optim.rmsprop",
        domains=BETAS,
    ),
    Claim(
        "code-preconditioner-rmsprop-bc",
        "optim.rmsprop_bc steps by −ηM_t g_t, M_t = (diag(G_t)^{1/2}/√(1−β₂^t) + εI)^{−1} (from the code)",
        f"The library's bias-corrected RMSProp, unrolled {T} steps on {N} coordinates, moves by −ηM_t g_t.",
        r"M_t = \left(\frac{\operatorname{diag}(G_t)^{1/2}}{\sqrt{1-\beta_2^t}} + \varepsilon I\right)^{-1}",
        prove_rmsprop_bc,
        {r"\beta_2": "(0, 1)", "t": f"1..{T}", "d": str(N)},
        "seed 001 (Q1.b.a) on dyntools.optim.rmsprop_bc",
        domains=BETAS,
    ),
    Claim(
        "code-preconditioners-any-t",
        "M_t of optim.adagrad, optim.rmsprop, optim.rmsprop_bc for every t ≥ 1 and any dimension (induction)",
        "By induction on t, for a generic coordinate i: the library's accumulator is diag(G_t)_ii and its "
        "direction (M_t g_t)_i — AdaGrad G_t = Σ g gᵀ, RMSProp the EMA of outer products, bias-corrected "
        "RMSProp M_t = (diag(G_t)^{1/2}/√(1−β₂^t) + εI)^{−1}.",
        r"\forall t \ge 1:\ u_t = \left(\frac{\operatorname{diag}(G_t)^{1/2}}{\sqrt{1-\beta_2^t}} + "
        r"\varepsilon I\right)^{-1} g_t",
        prove_preconditioners_any_t,
        {r"\beta_2": "(0, 1)", "t": r"\ge 1 \text{ (symbolic)}", "i": "generic coordinate"},
        "seed 001 (Q1.b.a) on dyntools.optim.rmsprop_bc",
        domains=BETAS,
    ),
]
