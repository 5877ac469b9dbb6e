"""The cross-entropy MLP's minibatch loss and gradient as grouped matrix products.

The network and its layout are those of :mod:`dyntools.models.mlp` (``W_l`` out × in, then ``b_l``).
Activations are kept feature-major ("transposed"): ``Aᵀ_l`` of shape ``(m_l, B)``, one row per
neuron, one column per example of the minibatch. With ``â = [a, 1]`` (a row of ones appended when
the layer has a bias) and ``Ŵ_l = [W_l, b_l]`` (``m_l × (m_{l−1} + 1)``, copied from θ into a scratch
block), each step of the forward and backward pass is one product:

    forward     z_lᵀ = Ŵ_l â_{l−1}ᵀ,    a_l = ReLU(z_l) (hidden layers), logits z_L;
    loss        ℓ = (1/B) Σ_i [log Σ_k exp z_{L,ik} − z_{L,i y_i}],  δ_L = (softmax(z_L) − onehot(y)) / B;
    backward    ∂ℓ/∂Ŵ_l = δ_lᵀ â_{l−1}   (computed as ``â_{l−1}ᵀ δ_l``, rows of length m_l, when
                                       m_l ≥ m_{l−1}; both sum over the batch in the same groups: the
                                       same bits. For a square 32-wide layer the ``â_{l−1}ᵀ δ_l`` form,
                                       whose rows are 32 long, not 33, was measured 4 % faster per cell),
                δ_{l−1}ᵀ = (W_lᵀ δ_lᵀ) ⊙ 1[a_{l−1}ᵀ > 0].

"""

from __future__ import annotations

import numpy as np
from numba import njit

# Every product of the forward and backward pass is one call of :func:`gemm`,
# ``out[i, :n] += Σ_g C[i, g] · In[g, :n]``, on feature-major ("transposed") activations
# ``Aᵀ_l`` of shape ``(n_l, B)``, so that the innermost loop runs over a contiguous row of length
# ``B`` (the minibatch) or ``n_l`` and the compiler vectorizes it. The contraction index ``g`` is
# consumed eight at a time: each pass over ``out[i, :]`` loads and stores the accumulator once per
# eight rows of ``In`` (instead of once per row), which is what keeps the loop near the machine's
# multiply–add rate. The only change to the rounding is this fixed grouping
# ``((c₀x₀ + c₁x₁) + (c₂x₂ + c₃x₃)) + ((c₄x₄ + c₅x₅) + (c₆x₆ + c₇x₇))`` — written in the code, not
# left to fast-math — so results are deterministic and equal the NumPy twin to ~1e-15 relative.


@njit(cache=True, error_model="numpy")
def gemm(out, C, In, m, kdim, n):
    """``out[i, j] += Σ_{g<kdim} C[i, g] · In[g, j]`` for ``i < m``, ``j < n``: ``g`` in groups of 8,
    two rows ``i`` at a time (so each loaded ``In[g, j]`` serves both)."""
    k8 = kdim - kdim % 8
    m2 = m - m % 2
    for i in range(0, m2, 2):
        for g in range(0, k8, 8):
            c0, c1, c2, c3 = C[i, g], C[i, g + 1], C[i, g + 2], C[i, g + 3]
            c4, c5, c6, c7 = C[i, g + 4], C[i, g + 5], C[i, g + 6], C[i, g + 7]
            e0, e1, e2, e3 = C[i + 1, g], C[i + 1, g + 1], C[i + 1, g + 2], C[i + 1, g + 3]
            e4, e5, e6, e7 = C[i + 1, g + 4], C[i + 1, g + 5], C[i + 1, g + 6], C[i + 1, g + 7]
            for j in range(n):
                x0, x1, x2, x3 = In[g, j], In[g + 1, j], In[g + 2, j], In[g + 3, j]
                x4, x5, x6, x7 = In[g + 4, j], In[g + 5, j], In[g + 6, j], In[g + 7, j]
                out[i, j] += (((c0 * x0 + c1 * x1) + (c2 * x2 + c3 * x3))
                              + ((c4 * x4 + c5 * x5) + (c6 * x6 + c7 * x7)))
                out[i + 1, j] += (((e0 * x0 + e1 * x1) + (e2 * x2 + e3 * x3))
                                  + ((e4 * x4 + e5 * x5) + (e6 * x6 + e7 * x7)))
        for g in range(k8, kdim):
            c, e = C[i, g], C[i + 1, g]
            for j in range(n):
                x = In[g, j]
                out[i, j] += c * x
                out[i + 1, j] += e * x
    for i in range(m2, m):
        for g in range(0, k8, 8):
            c0, c1, c2, c3 = C[i, g], C[i, g + 1], C[i, g + 2], C[i, g + 3]
            c4, c5, c6, c7 = C[i, g + 4], C[i, g + 5], C[i, g + 6], C[i, g + 7]
            for j in range(n):
                out[i, j] += (((c0 * In[g, j] + c1 * In[g + 1, j]) + (c2 * In[g + 2, j] + c3 * In[g + 3, j]))
                              + ((c4 * In[g + 4, j] + c5 * In[g + 5, j]) + (c6 * In[g + 6, j] + c7 * In[g + 7, j])))
        for g in range(k8, kdim):
            c = C[i, g]
            for j in range(n):
                out[i, j] += c * In[g, j]


def ws_size(n_layers: int, maxw: int, batch: int) -> int:
    """Length of the scratch array of :func:`views` (layers, largest width, batch)."""
    L, w, B = int(n_layers), int(maxw), int(batch)
    return (L + 1) * (w + 1) * B + 2 * w * B + B * w + B * (w + 1) + (w + 1) * (w + 1) + w * (w + 1)


@njit(inline="always")
def views(ws, n_layers, maxw, batch):
    """``(AT, DT, Dr, Ar, G, Wt)`` views of a scratch array of :func:`ws_size` entries: the
    activations ``Aᵀ_l`` (``(L+1, maxw+1, B)``; ``Aᵀ_L`` holds the logits ``z_Lᵀ``), two ``δᵀ``
    buffers, ``δ`` and ``â`` row-major, a gradient block and the block ``Ŵ_l``."""
    L, w, B = n_layers, maxw, batch
    a = 0
    AT = ws[a:a + (L + 1) * (w + 1) * B].reshape((L + 1, w + 1, B))
    a += (L + 1) * (w + 1) * B
    DT = ws[a:a + 2 * w * B].reshape((2, w, B))
    a += 2 * w * B
    Dr = ws[a:a + B * w].reshape((B, w))
    a += B * w
    Ar = ws[a:a + B * (w + 1)].reshape((B, w + 1))
    a += B * (w + 1)
    G = ws[a:a + (w + 1) * (w + 1)].reshape((w + 1, w + 1))
    a += (w + 1) * (w + 1)
    Wt = ws[a:a + w * (w + 1)].reshape((w, w + 1))
    return AT, DT, Dr, Ar, G, Wt


@njit(cache=True)
def views_of(ws, n_layers, maxw, batch):
    """:func:`views` for Python callers: compiled once and cached on disk (the inlined :func:`views`
    called from Python would be compiled again in every process)."""
    return views(ws, n_layers, maxw, batch)


def logits(ws, n_layers: int, maxw: int, batch: int, classes: int) -> np.ndarray:
    """The logits ``z_Lᵀ`` (classes × batch) left in the scratch array by :func:`forward_backward`."""
    return views_of(ws, n_layers, maxw, batch)[0][n_layers, :classes, :batch]


@njit(cache=True, error_model="numpy")
def forward_backward(theta, widths, w_off, b_off, X, y, idx, grad, bufs):
    """Mean cross-entropy of the rows ``idx`` and, if ``grad.size``, its gradient written into ``grad``
    (see the module docstring; ``bufs`` from :func:`views`)."""
    AT, DT, Dr, Ar, G, Wt = bufs
    L = widths.shape[0] - 1
    B = idx.shape[0]
    for b in range(B):
        for k in range(widths[0]):
            AT[0, k, b] = X[idx[b], k]
    for l in range(L):
        nin, nout = widths[l], widths[l + 1]
        wo, bo = w_off[l], b_off[l]
        A = AT[l]
        Z = AT[l + 1]
        for j in range(nout):
            for b in range(B):
                Z[j, b] = 0.0
        if bo >= 0 and nin % 8 == 7:              # the bias column closes a group of 8: multiply by Ŵ_l
            for j in range(nout):
                for k in range(nin):
                    Wt[j, k] = theta[wo + j * nin + k]
                Wt[j, nin] = theta[bo + j]
            for b in range(B):
                A[nin, b] = 1.0
            gemm(Z, Wt, A, nout, nin + 1, B)
        else:                                     # else it is summed last, after the groups: add b_l then
            gemm(Z, theta[wo:wo + nout * nin].reshape((nout, nin)), A, nout, nin, B)
            if bo >= 0:
                for j in range(nout):
                    bj = theta[bo + j]
                    for b in range(B):
                        Z[j, b] += bj
        if l < L - 1:
            for j in range(nout):
                for b in range(B):
                    z = Z[j, b]
                    Z[j, b] = z if z > 0.0 else 0.0
    K = widths[L]
    Z = AT[L]
    delta = DT[0]
    loss = 0.0
    inv_b = 1.0 / B
    for b in range(B):
        zmax = Z[0, b]
        for k in range(1, K):
            zmax = max(zmax, Z[k, b])
        s = 0.0
        for k in range(K):
            e = np.exp(Z[k, b] - zmax)
            delta[k, b] = e
            s += e
        yb = y[idx[b]]
        loss += zmax + np.log(s) - Z[yb, b]
        scale = inv_b / s
        for k in range(K):
            delta[k, b] *= scale
        delta[yb, b] -= inv_b
    loss *= inv_b
    if grad.shape[0] == 0:
        return loss
    cur = 0
    for l in range(L - 1, -1, -1):
        nin, nout = widths[l], widths[l + 1]
        wo, bo = w_off[l], b_off[l]
        kd = nin + 1 if bo >= 0 else nin
        delta = DT[cur]
        A = AT[l]
        if bo >= 0:
            for b in range(B):
                A[nin, b] = 1.0
        if nout >= nin:                           # â_{l−1}ᵀ δ_l: rows of length m_l, unless they are shorter
            for j in range(nout):
                for b in range(B):
                    Dr[b, j] = delta[j, b]
            for k in range(kd):
                for j in range(nout):
                    G[k, j] = 0.0
            gemm(G, A, Dr, kd, B, nout)
            for j in range(nout):
                for k in range(nin):
                    grad[wo + j * nin + k] = G[k, j]
                if bo >= 0:
                    grad[bo + j] = G[nin, j]
        else:                                     # δ_lᵀ â_{l−1}: rows of length m_{l−1} + 1, written in order
            for k in range(kd):
                for b in range(B):
                    Ar[b, k] = A[k, b]
            for j in range(nout):
                for k in range(kd):
                    G[j, k] = 0.0
            gemm(G, delta, Ar, nout, B, kd)
            for j in range(nout):
                for k in range(nin):
                    grad[wo + j * nin + k] = G[j, k]
                if bo >= 0:
                    grad[bo + j] = G[j, nin]
        if l > 0:
            W = theta[wo:wo + nout * nin].reshape((nout, nin))
            nxt = DT[1 - cur]
            for k in range(nin):
                for b in range(B):
                    nxt[k, b] = 0.0
            gemm(nxt, W.T, delta, nin, nout, B)
            for k in range(nin):
                for b in range(B):
                    nxt[k, b] = nxt[k, b] if A[k, b] > 0.0 else 0.0
            cur = 1 - cur
    return loss
