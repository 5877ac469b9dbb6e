"""The cross-entropy MLP's minibatch loss and gradient as matrix products on batch-major activations.

The network and its layout are those of :mod:`dyntools.models.mlp` (``W_l`` out × in, then ``b_l``).
Activations are kept batch-major: ``A_l`` of shape ``(B, m_l)``, one row per example of the minibatch,
one column per neuron, each layer's block contiguous. Every step of the forward and backward pass is
one product :func:`gemm` whose operands are already in the layout it reads — no error matrix is ever
transposed, only the small weight block ``W_lᵀ`` of the forward pass (and ``A_{L−1}`` for logits of
few classes, see below):

    forward     Z_l = A_{l−1} W_lᵀ + 1 b_lᵀ,   A_l = ReLU(Z_l) (hidden layers), logits Z_L;
    loss        ℓ = (1/B) Σ_i [log Σ_k exp Z_{L,ik} − Z_{L,i y_i}],  Δ_L = (softmax(Z_L) − onehot(y)) / B;
    backward    ∂ℓ/∂W_l = Δ_lᵀ A_{l−1}   (written straight into the gradient, θ's out × in layout; for a
                                         narrow input, m_{l−1} < 8, as (A_{l−1}ᵀ Δ_l)ᵀ so that the
                                         vectorized rows are m_l long),
                ∂ℓ/∂b_l = Δ_lᵀ 1,        Δ_{l−1} = (Δ_l W_l) ⊙ 1[A_{l−1} > 0].

Every entry of a product is one chain of fused multiply–adds in the order of the contraction index,
``out ← fma(c_{k−1}, x_{k−1}, … fma(c₀, x₀, out))`` (the forward pass starts the chain at the bias):
a fixed order, so results are deterministic and equal the NumPy twin to rounding.

How it runs (none of it changes a bit): the products are register-blocked panels of vector fma
(512-bit with AVX-512; :mod:`dyntools.lowlevel.fma_block`) whose epilogues also apply the ReLU of a
hidden layer and the mask ``1[A > 0]`` of its error as they store; ``W_lᵀ`` is transposed in vector registers
(:mod:`dyntools.lowlevel.vector_transpose`); logits of fewer classes than a vector holds are computed as
``Z_Lᵀ = W_L A_{L−1}ᵀ + b 1ᵀ`` (the same chains, vectorized along the batch); the scratch is taken as
borrowed matrix views (:mod:`dyntools.lowlevel.flat_views`: no runtime call, no reference counting); the
maximum's term of the softmax is exp(0) = 1 without a call. In the kernel of sparse inputs
(:func:`forward_backward_body_sparse_inputs`), a batch with at most the fraction :data:`SPARSE_INPUT` of its
inputs nonzero (one-hot codes: the grokking MLP's pairs) has its first layer's two products taken over the
nonzero entries only (:func:`sparse_forward`, :func:`sparse_gradient`): a zero term ``fma(0, w, acc)`` leaves its
chain as it was (``w`` finite), so the chains without them are the dense chains.

On the heatmap's 2 → 32 → 32 → 32 → 2 cell this took a float32 forward/backward pass from 0.039 to
0.015–0.017 s per 2000 steps (float64: 0.057 to 0.025–0.030; one thread, CPU time).
"""

from __future__ import annotations

import types as pytypes

import numpy as np
from numba import njit

from dyntools import lowlevel
from dyntools.lowlevel import VECTOR_BYTES, borrowed, matrix, transpose

# fused multiply–add (contraction) and nothing else of fast-math: the order of every sum is the code's
FMA = {"contract"}


# register-blocked panels (:mod:`dyntools.lowlevel.fma_block`): 8 (or 6), 4, 2 or 1 rows; two vectors of columns or
# one (or their plain-loop fallback, :mod:`dyntools.lowlevel`). The tallest two-vector panel fits the register
# file: with 32 vector registers (AVX-512) 8 × 2 accumulators + 2 rows of ``In`` + 1 broadcast; with 16 (AVX2)
# 8 × 2 would spill; of 6 × 2 (12 + 2 + 1 = 15) and 4 × 2, 4 × 2 ran fastest for Haswell code (the forward
# 48 × 32 · 32 × 16 block, best of 7 under load: float64 42 vs 15 vs 11 GFLOP/s for 8 × 2, float32 75 vs 66
# vs 49). Each entry is the same fma chain whichever panel computes it.
_P8x2, _P4x2, _P2x2, _P1x2 = (lowlevel.panel(r, 2) for r in (8, 4, 2, 1))
_TALL2 = 8 if lowlevel.VECTOR_BITS >= 512 else 4
_P8x1, _P4x1, _P2x1, _P1x1 = (lowlevel.panel(r, 1) for r in (8, 4, 2, 1))
_NONE, _RELU, _MASK = (lowlevel.EPILOGUES[k] for k in ("none", "relu", "mask"))


@njit(cache=True, error_model="numpy", fastmath=FMA)
def product(out, init, C, In, m, kdim, n, by_row, epilogue, aux):
    """``out[i, j] = epilogue(init[j] + Σ_{g<kdim} C[i, g] · In[g, j])`` for ``i < m``, ``j < n``, each entry one
    chain of multiply–adds in the order of ``g`` starting at ``init[j]`` (a bias, or zeros; with ``by_row`` at
    ``init[i]``), then stored as it is (``epilogue`` = ``EPILOGUES["none"]``), as ``z if z > 0 else 0``
    (``"relu"``) or as ``z if aux[i, j] > 0 else 0`` (``"mask"``; ``aux`` laid out as ``out``, which is passed
    there when there is no mask).

    Columns in panels of two vectors (then one; 512 bits with AVX-512), rows eight at a time (four with
    256-bit vectors; then 4, 2, 1), each block's accumulators held in registers for the whole contraction
    (:mod:`dyntools.lowlevel.fma_block`; this needs ``out``, ``init`` and the rows of ``In``
    contiguous). Columns left over (fewer than a vector), or operands that are not contiguous, go
    through :func:`_gemm_columns`. ``C`` is read one scalar at a time, so any layout (a transposed view)
    serves.

    The one compiled product: the start and the epilogue are run-time arguments (a branch per panel), so a
    kernel that calls it for every product of its pass compiles the panels once and links one copy of their
    machine code — three entry points with the epilogue fixed each compiled the panels again and linked three
    copies into the kernel, ~2.4 of the cross-entropy MLP's ~11 processor-seconds of first compile on a busy
    machine (AMD EPYC Zen 4). The names below are inlined calls of it."""
    _gemm(out, init, C, In, m, kdim, n, by_row, epilogue, aux)


@njit(inline="always")
def gemm(out, init, C, In, m, kdim, n, by_row=False):
    """:func:`product` without an epilogue: ``out = 1 initᵀ + C In`` (with ``by_row``, ``init 1ᵀ + C In``)."""
    product(out, init, C, In, m, kdim, n, bool(by_row), _none(m), out)


@njit(inline="always")
def gemm_row_starts(out, init, C, In, m, kdim, n):
    """:func:`gemm` with every chain of row ``i`` starting at ``init[i]``: ``out = init 1ᵀ + C In`` — the
    transposed product ``Zᵀ = W Aᵀ + b 1ᵀ``, whose entries are the chains of ``Z = A Wᵀ + 1 bᵀ``."""
    product(out, init, C, In, m, kdim, n, bool(m >= 0), _none(m), out)


@njit(inline="always")
def gemm_relu(out, init, C, In, m, kdim, n):
    """:func:`gemm`, each entry stored as ``z if z > 0 else 0``: a hidden layer's activations
    ``ReLU(A Wᵀ + 1 bᵀ)`` without a pass of their own."""
    product(out, init, C, In, m, kdim, n, bool(m < 0), _none(m) + _RELU, out)


@njit(inline="always")
def gemm_masked(out, init, C, In, m, kdim, n, mask):
    """:func:`gemm`, each entry stored as ``z if mask[i, j] > 0 else 0``: a ReLU layer's error
    ``(Δ W) ⊙ 1[A > 0]`` (``mask`` = the layer's activations ``A``) without a pass of its own."""
    product(out, init, C, In, m, kdim, n, bool(m < 0), _none(m) + _MASK, mask)


@njit(inline="always")
def _none(m):
    """``EPILOGUES["none"]`` (0) as a run-time integer, not a constant: a constant argument would be typed as
    its literal value and compile a :func:`product` of its own."""
    return m * 0 + _NONE


@njit(inline="always")
def _gemm(out, init, C, In, m, kdim, n, by_row, epilogue, aux):
    j = 0
    contiguous = out.strides[1] == out.itemsize and In.strides[1] == In.itemsize and \
        init.strides[0] == init.itemsize and aux.strides[1] == aux.itemsize
    if n > 0 and contiguous:
        w = VECTOR_BYTES // out.itemsize               # entries of a panel's vector
        while n - j >= 2 * w:
            _panels2(out, init, C, In, m, j, kdim, by_row, epilogue, aux)
            j += 2 * w
        if n - j >= w:
            _panels1(out, init, C, In, m, j, kdim, by_row, epilogue, aux)
            j += w
    if j < n:                                          # bool(): a run-time flag, one compiled function for both
        _gemm_columns(out, init, C, In, m, kdim, j, n, bool(by_row))
        if epilogue != _NONE:                          # the panels' epilogue on the columns left over
            for i in range(m):
                for jj in range(j, n):
                    z = out[i, jj]
                    keep = z if epilogue == _RELU else aux[i, jj]
                    out[i, jj] = z if keep > 0.0 else 0.0


@njit(inline="always")
def _panels2(out, init, C, In, m, j, kdim, by_row, epilogue, aux):
    """Rows ``0 … m−1`` of the two-vector column panel at ``j``: blocks of 8 (4 with 16 vector registers),
    then 4, 2, 1 rows."""
    i = 0
    if _TALL2 == 8:
        while m - i >= 8:
            _P8x2(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
            i += 8
    else:
        while m - i >= 4:
            _P4x2(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
            i += 4
    if m - i >= 4:
        _P4x2(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
        i += 4
    if m - i >= 2:
        _P2x2(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
        i += 2
    if m - i >= 1:
        _P1x2(out, init, C, In, i, j, kdim, by_row, epilogue, aux)


@njit(inline="always")
def _panels1(out, init, C, In, m, j, kdim, by_row, epilogue, aux):
    """:func:`_panels2` for the one-vector column panel at ``j``."""
    i = 0
    while m - i >= 8:
        _P8x1(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
        i += 8
    if m - i >= 4:
        _P4x1(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
        i += 4
    if m - i >= 2:
        _P2x1(out, init, C, In, i, j, kdim, by_row, epilogue, aux)
        i += 2
    if m - i >= 1:
        _P1x1(out, init, C, In, i, j, kdim, by_row, epilogue, aux)


@njit(cache=True, error_model="numpy", fastmath=FMA)
def _gemm_columns(out, init, C, In, m, kdim, j0, n, by_row):
    """The columns ``j0 … n−1`` of :func:`product` (fewer than a vector), the same chains, vectorized by numba:
    four rows ``i`` at a time, so each entry ``In[g, j]`` loaded serves four outputs. ``g`` is not unrolled too
    (four at a time did half the work per entry, but compiled in twice the time — ~0.35 of the cross-entropy
    MLP's first processor-seconds, linked into every caller: issue 38); these columns are the logits of a few
    classes, or the few columns past a width's last whole vector."""
    m4 = m - m % 4
    for i in range(0, m4, 4):
        for j in range(j0, n):
            out[i, j] = init[i] if by_row else init[j]
            out[i + 1, j] = init[i + 1] if by_row else init[j]
            out[i + 2, j] = init[i + 2] if by_row else init[j]
            out[i + 3, j] = init[i + 3] if by_row else init[j]
        for g in range(kdim):
            a, b, c, d = C[i, g], C[i + 1, g], C[i + 2, g], C[i + 3, g]
            for j in range(j0, n):
                x = In[g, j]
                out[i, j] = out[i, j] + a * x
                out[i + 1, j] = out[i + 1, j] + b * x
                out[i + 2, j] = out[i + 2, j] + c * x
                out[i + 3, j] = out[i + 3, j] + d * x
    for i in range(m4, m):
        for j in range(j0, n):
            out[i, j] = init[i] if by_row else init[j]
        for g in range(kdim):
            a = C[i, g]
            for j in range(j0, n):
                out[i, j] = out[i, j] + a * In[g, j]


@njit(inline="always")
def strided(M):
    """``M`` typed as a strided matrix (numba's layout ``'A'``; the same data and strides): with every left
    operand ``C`` passed this way and the chains' start flag passed as a run-time ``bool`` (not a constant),
    :func:`forward_backward` compiles one :func:`gemm`, one :func:`gemm_relu`, one :func:`gemm_masked` and one
    :func:`_gemm_columns` instead of one per layout (``C``, a transposed ``F`` view), per start (a bias of the
    columns or of the rows) and per constant row count: the panels read ``C`` one scalar at a time through its
    strides whatever its type says, so the machine code of a product's inner loop is the same."""
    return M[:, ::1]


def ws_size(n_layers: int, maxw: int, batch: int) -> int:
    """Length of the scratch array of :func:`views` (layers, largest width, batch)."""
    L, w, B = int(n_layers), int(maxw), int(batch)
    return (L + 1) * B * w + 2 * B * w + 2 * w * w + w + B


@njit(inline="always")
def views(ws, n_layers, maxw, batch):
    """``(acts, deltas, blocks, zeros, ones)`` flat views of a scratch array of :func:`ws_size` entries:
    room for the activations of every layer (``A_l``, ``B × m_l`` each, one after the other; the last
    is the logits ``Z_L``), two error buffers ``Δ`` (``B × maxw`` each), two weight-sized blocks,
    ``maxw`` zeros and ``B`` entries for ones."""
    L, w, B = n_layers, maxw, batch
    a = (L + 1) * B * w
    d = a + 2 * B * w
    z = d + 2 * w * w
    return ws[:a], ws[a:d], ws[d:z], ws[z:z + w], ws[z + w:z + w + B]


@njit(cache=True)
def views_of(ws, n_layers, maxw, batch):
    """:func:`views` for Python callers: compiled once and cached on disk (the inlined :func:`views`
    called from Python would be compiled again in every process)."""
    return views(ws, n_layers, maxw, batch)


def logits(ws, widths, batch: int) -> np.ndarray:
    """The logits ``Z_L`` (batch × classes) left in the scratch array by :func:`forward_backward`."""
    start = batch * int(np.sum(widths[:-1]))
    return ws[start:start + batch * int(widths[-1])].reshape(batch, int(widths[-1]))


#: a batch whose inputs have at most this fraction of nonzero entries runs its first layer sparse (the crossover of
#: the two, per nonzero product: the register-blocked panels run ~3× the rate of the sparse rows)
SPARSE_INPUT = 0.25


@njit(inline="always")
def sparse_forward(Z, bias, A, WT, B, nin, nout, relu):
    """``Z[b, j] = bias[j] + Σ_{k: A[b, k] ≠ 0} A[b, k] · WT[k, j]`` for ``b < B``, ``j < nout`` (ReLU'd with
    ``relu``): the chain of :func:`product` for ``Z = A WT + 1 biasᵀ`` without its zero terms (``WT`` = ``Wᵀ``,
    nin × nout), one row of ``WT`` per nonzero input."""
    for b in range(B):
        for j in range(nout):
            Z[b, j] = bias[j]
        for k in range(nin):
            x = A[b, k]
            if x != 0.0:
                for j in range(nout):
                    Z[b, j] = Z[b, j] + x * WT[k, j]
        if relu:
            for j in range(nout):
                z = Z[b, j]
                Z[b, j] = z if z > 0.0 else 0.0


@njit(inline="always")
def sparse_gradient(G, A, delta, B, nin, nout):
    """``G[k, j] = Σ_{b: A[b, k] ≠ 0} A[b, k] · delta[b, j]`` in the order of ``b``, starting at 0: ``(Aᵀ Δ)`` of
    :func:`product` without its zero terms (``G`` nin × nout, the transpose of ``∂ℓ/∂W``)."""
    for k in range(nin):
        for j in range(nout):
            G[k, j] = 0.0
    for b in range(B):
        for k in range(nin):
            x = A[b, k]
            if x != 0.0:
                for j in range(nout):
                    G[k, j] = G[k, j] + x * delta[b, j]


@njit(inline="always")
def softmax_cross_entropy(Z, delta, y, idx, B, K, inv_b):
    """``Σ_b (log Σ_k exp Z_bk − Z_b,y_b)`` over the rows ``b < B`` of the logits ``Z`` (labels ``y[idx[b]]``),
    each row shifted by its maximum m_b (``m_b + log Σ_k exp(Z_bk − m_b)``; exp(±0) = 1 exactly for the maximum's
    term); writes ``delta = (softmax(Z) − onehot(y)) · inv_b``, the gradient of the mean over ``inv_b = 1/B`` rows.
    The one head of the MLP kernels (this module's and :mod:`dyntools.models.mlp_regularized`'s)."""
    loss = 0.0
    for b in range(B):
        zmax = Z[b, 0]
        for k in range(1, K):
            zmax = max(zmax, Z[b, k])
        s = 0.0
        for k in range(K):
            d = Z[b, k] - zmax
            e = 1.0 if d == 0.0 else np.exp(d)
            delta[b, k] = e
            s += e
        yb = int(y[idx[b]])
        loss += zmax + np.log(s) - Z[b, yb]
        scale = inv_b / s
        for k in range(K):
            delta[b, k] *= scale
        delta[b, yb] -= inv_b
    return loss


@njit(cache=True, error_model="numpy", fastmath=FMA)
def forward_backward(theta, widths, w_off, b_off, X, y, idx, grad, bufs):
    """Mean cross-entropy of the rows ``idx`` and, if ``grad.size``, its gradient written into ``grad``
    (see the module docstring; ``bufs`` from :func:`views`), for Python callers: the model's kernel
    (:func:`dyntools.models.mlp.loss_grad_cross_entropy`) inlines :func:`forward_backward_body` instead."""
    return forward_backward_body(theta, widths, w_off, b_off, X, y, idx, grad, bufs)


#: whether :func:`forward_backward_body` has the sparse first layer: False in this module's copy (numba prunes the
#: branches on it before typing them, so a dense kernel compiles none of that code), True in
#: :func:`forward_backward_body_sparse_inputs`'s
SPARSE_CODE = False


@njit(inline="always")
def forward_backward_body(theta, widths, w_off, b_off, X, y, idx, grad, bufs):
    """The body of :func:`forward_backward`, inlined into its caller (which must be compiled with
    ``error_model="numpy", fastmath=FMA``): a compiled function that only calls another costs a second
    optimization of all the code it links in (numba re-optimizes a function's module with its callees'
    code) — ~1–2 s of the kernel's first compile. Every array is used borrowed (no reference
    counting of its views: :func:`dyntools.lowlevel.flat_views.borrowed`)."""
    theta, X, y, idx, grad = borrowed(theta), borrowed(X), borrowed(y), borrowed(idx), borrowed(grad)
    acts, deltas, blocks, zeros, ones = bufs
    acts, deltas, blocks = borrowed(acts), borrowed(deltas), borrowed(blocks)
    zeros, ones = borrowed(zeros), borrowed(ones)
    L = widths.shape[0] - 1
    B = idx.shape[0]
    ww = blocks.shape[0] // 2
    Wt = blocks[:ww]
    Gt = blocks[ww:]
    half = deltas.shape[0] // 2
    narrow = VECTOR_BYTES // acts.itemsize           # fewer outputs than a vector holds
    per_column = bool(B < 0)                         # False, as a run-time flag (see strided)
    start = 0                                        # where A_l begins in ``acts`` (layer after layer)
    A0 = matrix(acts, 0, B, widths[0])
    nonzero = 0
    for b in range(B):
        for k in range(widths[0]):
            x = X[idx[b], k]
            A0[b, k] = x
            if SPARSE_CODE and x != 0.0:
                nonzero += 1
    sparse = nonzero <= SPARSE_INPUT * (B * widths[0])     # (read only with SPARSE_CODE)
    for l in range(L):                               # Z = A W_lᵀ + 1 bᵀ, then ReLU on hidden layers
        nin, nout = widths[l], widths[l + 1]
        wo, bo = w_off[l], b_off[l]
        A = matrix(acts, start, B, nin)
        start += B * nin
        Z = matrix(acts, start, B, nout)
        W = matrix(theta, wo, nout, nin)
        bias = theta[bo:bo + nout] if bo >= 0 else zeros[:nout]
        if SPARSE_CODE and l == 0 and sparse:         # the first layer over the nonzero inputs
            WT = matrix(Wt, 0, nin, nout)
            transpose(WT, W, nout, nin)
            sparse_forward(Z, bias, A, WT, B, nin, nout, l < L - 1)
        elif nout < narrow and B >= narrow and nout * B <= half and nin * B <= half:
            # few outputs (the logits of a few classes): Zᵀ = W Aᵀ + b 1ᵀ, vectorized along the batch
            AT = matrix(deltas, half, nin, B)
            transpose(AT, A, B, nin)
            ZT = matrix(deltas, 0, nout, B)
            gemm(ZT, bias, strided(W), AT, nout, nin, B, bool(nout < narrow))     # per row (True)
            for b in range(B):
                for j in range(nout):
                    z = ZT[j, b]
                    Z[b, j] = z if l == L - 1 or z > 0.0 else 0.0        # ReLU on a hidden layer
        else:
            WT = matrix(Wt, 0, nin, nout)
            transpose(WT, W, nout, nin)
            if l < L - 1:
                gemm_relu(Z, bias, strided(A), WT, B, nin, nout)     # A_l = ReLU(Z_l) as it is stored
            else:
                gemm(Z, bias, strided(A), WT, B, nin, nout, per_column)
    K = widths[L]
    Z = matrix(acts, start, B, K)
    delta = matrix(deltas, 0, B, K)
    inv_b = 1.0 / B
    loss = softmax_cross_entropy(Z, delta, y, idx, B, K, inv_b) * inv_b
    if grad.shape[0] == 0:
        return loss
    for b in range(B):
        ones[b] = 1.0
    one_row = strided(matrix(ones, 0, 1, B))
    cur = 0
    for l in range(L - 1, -1, -1):
        nin, nout = widths[l], widths[l + 1]
        wo, bo = w_off[l], b_off[l]
        delta = matrix(deltas, cur * half, B, nout)
        start -= B * nin                             # back to A_{l−1}
        A = matrix(acts, start, B, nin)
        gW = matrix(grad, wo, nout, nin)
        if SPARSE_CODE and l == 0 and sparse:        # (Aᵀ Δ)ᵀ over the nonzero inputs
            G = matrix(Gt, 0, nin, nout)
            sparse_gradient(G, A, delta, B, nin, nout)
            transpose(gW, G, nin, nout)
        elif nin >= 8 or nin >= nout:                # ∂ℓ/∂W = Δᵀ A, rows of length m_{l−1}
            gemm(gW, zeros, strided(delta.T), A, nout, B, nin, per_column)
        else:                                        # (Aᵀ Δ)ᵀ: rows of length m_l, then transposed
            G = matrix(Gt, 0, nin, nout)
            gemm(G, zeros, strided(A.T), delta, nin, B, nout, per_column)
            transpose(gW, G, nin, nout)
        if bo >= 0:                                  # ∂ℓ/∂b = 1ᵀ Δ, summed in the order of the batch
            gemm(matrix(grad, bo, 1, nout), zeros, one_row, delta, one_row.shape[0], B, nout, per_column)
        if l > 0:                                    # Δ_{l−1} = (Δ W) ⊙ 1[A > 0]
            W = matrix(theta, wo, nout, nin)
            nxt = matrix(deltas, (1 - cur) * half, B, nin)
            gemm_masked(nxt, zeros, strided(delta), W, B, nout, nin, A)   # A = A_{l−1}: the mask as stored
            cur = 1 - cur
    return loss


#: :func:`forward_backward_body` with its sparse first layer (:data:`SPARSE_CODE` True): the same code in a copy of
#: this module's names, inlined into :func:`dyntools.models.mlp.loss_grad_cross_entropy_sparse_inputs`
forward_backward_body_sparse_inputs = njit(inline="always")(pytypes.FunctionType(
    forward_backward_body.py_func.__code__, dict(globals(), SPARSE_CODE=True), "forward_backward_body_sparse_inputs"))
