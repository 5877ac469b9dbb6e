"""A user's model written against the model protocol — the fixture of tests/test_byo_kernel.py.

``h_θ(x) = ⟨w, x⟩ + c`` with the mean square loss ``L = (1/2b) Σ_q (h(x_i) − y_i − noise_q)²`` over the
batch, its residuals kept in the workspace ``ws[:b]`` (so a short workspace is a real overrun).
``short_ws`` plants a workspace one entry short; ``wrong_grad`` plants a factor 2 on the bias gradient.
"""

import numpy as np
from numba import njit

from dyntools.models.base import Model


@njit(cache=True)
def affine_loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    d = X.shape[1]
    tot = 0.0
    for q in range(b):
        i = idx[q]
        r = theta[d] - y[i] - noise[q]
        for j in range(d):
            r += X[i, j] * theta[j]
        ws[q] = r
        tot += r * r
    for j in range(d + 1):
        grad[j] = 0.0
    for q in range(b):
        i = idx[q]
        for j in range(d):
            grad[j] += ws[q] * X[i, j] / b
        grad[d] += fargs[0] * ws[q] / b
    return 0.5 * tot / b


def affine_loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    i = np.asarray(idx[:b])
    r = X[i] @ theta[:-1] + theta[-1] - y[i] - noise[:b]
    ws[:b] = r
    grad[:-1] = X[i].T @ r / b
    grad[-1] = fargs[0] * r.sum() / b
    return float(0.5 * (r @ r) / b)


class Affine(Model):
    name = "my-affine"
    head = "regression"
    init_stream, sampling_stream = "user.init", "user.sampling"
    loss_grad = staticmethod(affine_loss_grad)
    loss_grad_np = staticmethod(affine_loss_grad_np)

    def __init__(self, d, *, short_ws=False, wrong_grad=False):
        self.d, self.short_ws, self.wrong_grad = d, short_ws, wrong_grad

    @property
    def n_params(self):
        return self.d + 1

    def kernel_args(self):
        return np.zeros(0, dtype=np.int64), np.array([2.0 if self.wrong_grad else 1.0])

    def workspace_size(self, batch):
        return batch - 1 if self.short_ws else batch

    def init(self, seed, index=0):
        return np.random.default_rng([seed, index]).normal(size=self.n_params)

    def jacobian(self, theta, X):
        return np.hstack([X, np.ones((X.shape[0], 1))])
