"""A correct student solution, as functions (used by tests/test_grade.py)."""
import numpy as np


def _adam(params, grads, state, t, lr, betas, eps, weight_decay, decoupled):
    b1, b2 = betas
    if not state:
        state["m"] = [np.zeros_like(p) for p in params]
        state["v"] = [np.zeros_like(p) for p in params]
    out = []
    for p, g, m, v in zip(params, grads, state["m"], state["v"]):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        out.append(p - lr * m_hat / (np.sqrt(v_hat) + eps))
    return out


def adam_step(params, grads, state, t, *, lr, betas, eps, weight_decay):
    return _adam(params, grads, state, t, lr, betas, eps, weight_decay, decoupled=False)


def adamw_step(params, grads, state, t, *, lr, betas, eps, weight_decay):
    return _adam(params, grads, state, t, lr, betas, eps, weight_decay, decoupled=True)
