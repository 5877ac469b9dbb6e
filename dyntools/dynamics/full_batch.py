"""A model's full-batch training loss gradient as a plain function ``θ ↦ ∇L(θ)``.

For the small hand-written optimizer loops of the notes (Adam's effective step, the iteration-dependent L2
view of AdamW) that step a NumPy vector themselves instead of calling :func:`dyntools.train`. The gradient is
the model's NumPy twin (``loss_grad_np``) on every training point, without label noise:
``∇L(θ) = (1/n) Σᵢ ∇_θ ℓ(h_θ(xᵢ), yᵢ)``.
"""

from __future__ import annotations

import numpy as np


def gradient_of(model, X: np.ndarray, y: np.ndarray):
    """``θ ↦ ∇L(θ)`` of ``model`` on the ``n`` rows of ``X`` (labels ``y``, class indices)."""
    X, y = np.ascontiguousarray(X), np.ascontiguousarray(y, dtype=np.int64)
    iargs, fargs = model.kernel_args()
    n = X.shape[0]
    idx, noise, ws = np.arange(n), np.zeros(n), np.zeros(model.workspace_size(n))

    def gradient(theta):
        grad = np.empty(model.n_params)
        model.loss_grad_np(np.ascontiguousarray(theta), X, y, idx, n, noise, grad, ws, iargs, fargs)
        return grad

    return gradient


def spiral_gradient(seed: int = 0, n: int = 400):
    """``(θ₀, ∇L)`` of a 2-16-16-2 spiral MLP's full-batch cross-entropy on ``n`` points (seed ``seed`` draws
    the spirals and the initialization)."""
    from dyntools.data import spirals
    from dyntools.models.mlp import MLP

    data = spirals(n, seed=seed)
    model = MLP((2, 16, 16, 2), head="cross-entropy")
    return model.init(seed), gradient_of(model, data.X, data.y)
