"""Dropout and batch normalization in the MLP: the regularized forward and backward pass (lecture notes, seed 002).

The network is :mod:`dyntools.models.mlp`'s (``W_l`` out × in, then ``b_l``), each hidden layer
``l = 1 … L−1`` of width ``m_l`` becoming PyTorch's usual ``Linear → BatchNorm1d → ReLU → Dropout``:

    z_l = a'_{l−1} W_lᵀ + b_l                                  (a'_0 = x)
    u_l = γ_l ⊙ (z_l − μ_l) / √(σ²_l + ε) + β_l                 (batch norm, when on; else u_l = z_l)
    a_l = ReLU(u_l)
    a'_l = a_l ⊙ M_l / (1 − p)                                  (inverted dropout, when p > 0; M_l ∈ {0, 1})

and the output layer ``z_L = a'_{L−1} W_Lᵀ + b_L`` is left alone (no batch norm, no dropout), followed by
the MLP's head (mean softmax cross-entropy, or the mean squared error of the regression head).

**Training mode** (a minibatch of ``B`` examples): ``μ_l = (1/B) Σ_i z_{l,i}`` and the *biased* variance
``σ²_l = (1/B) Σ_i (z_{l,i} − μ_l)²`` of the batch, per feature; the keep masks ``M_l`` are given (drawn by
the trainer from the ``mlp.dropout`` stream, :func:`draw_masks`; PyTorch's ``bernoulli(1 − p)`` with its
own generator — the goldens feed these masks to torch). The batch's ``μ_l`` and ``S_l = Σ_i (z_{l,i} − μ_l)²``
are returned for the running statistics, updated as PyTorch's ``BatchNorm1d`` does (momentum ``m``,
default 0.1; the *unbiased* variance)::

    r_μ ← (1 − m) r_μ + m μ,     r_σ² ← (1 − m) r_σ² + m S / (B − 1)       (initially 0 and 1)

**Evaluation mode**: batch norm uses the running statistics, ``u = γ (z − r_μ)/√(r_σ² + ε) + β``, and
dropout is the identity.

**Backward** (training mode), for a hidden layer with ``g = ∂ℓ/∂a'``:
``∂ℓ/∂a = g ⊙ M / (1 − p)``, ``∂ℓ/∂u = ∂ℓ/∂a ⊙ 1[u > 0]`` (ReLU's derivative 0 at 0), and with
``x̂ = (z − μ) s``, ``s = 1/√(σ² + ε)``, ``d = ∂ℓ/∂u``:
``∂ℓ/∂γ = Σ_i d_i x̂_i``, ``∂ℓ/∂β = Σ_i d_i``,
``∂ℓ/∂z_i = γ s (d_i − (1/B) Σ_j d_j − x̂_i (1/B) Σ_j d_j x̂_j)`` (the batch statistics depend on every
example; in evaluation mode the statistics are constants and ``∂ℓ/∂z_i = γ s d_i``); then
``∂ℓ/∂W_l = (∂ℓ/∂z_l)ᵀ a'_{l−1}``, ``∂ℓ/∂b_l = Σ_i ∂ℓ/∂z_{l,i}`` as in the plain MLP.
(With batch norm right after it, ``b_l`` has no effect on the output: its gradient is zero up to rounding,
as in PyTorch.)

**Parameter layout**: the plain MLP's vector, then ``γ_l, β_l`` (``m_l`` entries each) for every hidden
layer in order when batch norm is on; ``γ = 1, β = 0`` initially (PyTorch's default). Hidden units are
numbered across layers (``h_off[l]`` is the first unit of hidden layer ``l``; ``H = Σ m_l``): the masks
are ``B × H``, the statistics ``2 × H``.

**Kernels**: :func:`forward_backward` (compiled; every product one :func:`dyntools.models.mlp_gemm.gemm`,
the same register-blocked panels as the plain cross-entropy kernel, which is untouched — the regularized
network is a separate kernel, chosen only when dropout or batch norm is on) and its NumPy twin
:func:`forward_backward_np` (``@`` products), held equal to ~1e-13 on identical inputs; the gradient is
checked against central finite differences and against PyTorch (committed goldens) in the tests.
:func:`loss_grad` is the model protocol's kernel (:mod:`dyntools.models.base`): the masks, the batch
statistics and the running statistics sit at the start of its scratch array (:func:`ws_layout`), where
the trainer's one loop writes and reads them through this model's step hooks (:func:`dropout_hook`,
:func:`batch_norm_hook`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import rng
from dyntools.models.mlp_gemm import FMA, gemm, softmax_cross_entropy, strided

HEAD_CROSS_ENTROPY, HEAD_REGRESSION = 0, 1


# ------------------------------------------------------------------------------------------ layout

def bn_layout(widths, p_plain: int, batch_norm: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """``(g_off, h_off, H)``: where ``γ_l`` starts in θ (``β_l`` follows it; −1 without batch norm and for the
    output layer), the first hidden unit of each layer (−1 for the output layer) and the number of hidden
    units ``H``."""
    L = len(widths) - 1
    g_off = np.full(L, -1, dtype=np.int64)
    h_off = np.full(L, -1, dtype=np.int64)
    pos, h = int(p_plain), 0
    for l in range(L - 1):
        m = int(widths[l + 1])
        h_off[l] = h
        h += m
        if batch_norm:
            g_off[l] = pos
            pos += 2 * m
    return g_off, h_off, h


def scratch_size(widths, batch: int) -> int:
    """Entries of the pass's own scratch (activations, errors, a transposed weight block, zeros)."""
    w = np.asarray(widths, dtype=np.int64)
    B, maxw, H = int(batch), int(w.max()), int(w[1:-1].sum())
    return B * (int(w[0]) + 3 * H + int(w[-1])) + 2 * B * maxw + maxw * maxw + 5 * maxw + H


def ws_layout(n_hidden: int, batch: int) -> tuple[int, int, int]:
    """Offsets in the protocol kernel's scratch: keep masks ``B × H`` at 0, the batch statistics ``2 × H``
    (mean, sum of squared deviations) and the running statistics ``2 × H`` (mean, variance) after them,
    the pass's scratch from the third offset on."""
    masks = int(batch) * int(n_hidden)
    return masks, masks + 2 * int(n_hidden), masks + 4 * int(n_hidden)


# ------------------------------------------------------------------------------------------ masks

@njit(cache=True)
def draw_masks(state, masks, keep):
    """Keep masks ``M[i, h] = 1[u < keep]`` (``keep = 1 − p``), example by example, unit by unit, one uniform
    ``u = k 2⁻⁵³`` on [0, 1) each from row 0 of the xoshiro ``state`` (:mod:`dyntools.engine.rng`; ``k`` the
    top 53 bits of a draw). Compared as integers, ``k < ⌈keep 2⁵³⌉`` (``keep 2⁵³`` is exact): the same masks
    without converting the draws, the generator's state held in registers."""
    bound = np.uint64(np.ceil(keep * 9007199254740992.0))
    shift = np.uint64(11)
    s0, s1, s2, s3 = state[0, 0], state[0, 1], state[0, 2], state[0, 3]
    for i in range(masks.shape[0]):
        for h in range(masks.shape[1]):
            draw, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
            masks[i, h] = 1.0 if (draw >> shift) < bound else 0.0
    state[0, 0], state[0, 1], state[0, 2], state[0, 3] = s0, s1, s2, s3


def draw_masks_np(state, masks, keep) -> None:
    """NumPy twin of :func:`draw_masks`."""
    for i in range(masks.shape[0]):
        for h in range(masks.shape[1]):
            masks[i, h] = 1.0 if rng.uniform01_np(state[:1])[0] < keep else 0.0


# ------------------------------------------------------------------------------------------ compiled pass

@njit(cache=True, error_model="numpy", fastmath=FMA)
def forward_backward(theta, widths, w_off, b_off, g_off, h_off, X, y, idx, noise, head, train, masks, scale,
                     eps, batch_stats, running, grad, ws):
    """Loss of the rows ``idx`` and, if ``grad.size``, its gradient written into ``grad`` (see the module
    docstring). ``train``: batch statistics (written into ``batch_stats``: row 0 the means, row 1 the sums of
    squared deviations) and, when ``masks.shape[0] > 0``, dropout with the keep ``masks`` (B × H) and
    ``scale = 1/(1 − p)``; else the ``running`` statistics (row 0 means, row 1 variances) and no dropout.
    ``noise``: label noise of the regression head. The logits stay in ``ws`` (:func:`logits`)."""
    L = widths.shape[0] - 1
    B = idx.shape[0]
    d, K = widths[0], widths[L]
    maxw = 0
    H = 0
    for l in range(L + 1):
        maxw = max(maxw, widths[l])
    for l in range(1, L):
        H += widths[l]
    dropout = train and masks.shape[0] > 0
    # scratch: A0 | per hidden layer (x̂, a, a') | logits | two error buffers | Wᵀ block | zeros | four
    # per-feature vectors | invstd. Element-wise work runs row by row (vectorized along the features); each
    # per-feature sum still adds the examples in batch order.
    start_hidden = B * d
    start_logits = start_hidden + 3 * B * H
    start_delta = start_logits + B * K
    start_wt = start_delta + 2 * B * maxw
    start_zeros = start_wt + maxw * maxw
    start_vec = start_zeros + maxw
    start_invstd = start_vec + 4 * maxw
    zeros = ws[start_zeros:start_zeros + maxw]
    zeros[:] = 0.0
    v1 = ws[start_vec:start_vec + maxw]
    v2 = ws[start_vec + maxw:start_vec + 2 * maxw]
    v3 = ws[start_vec + 2 * maxw:start_vec + 3 * maxw]
    v4 = ws[start_vec + 3 * maxw:start_vec + 4 * maxw]
    invstd = ws[start_invstd:start_invstd + H]
    A = ws[0:B * d].reshape((B, d))
    for i in range(B):
        for k in range(d):
            A[i, k] = X[idx[i], k]
    for l in range(L):
        nin, nout = widths[l], widths[l + 1]
        W = theta[w_off[l]:w_off[l] + nout * nin].reshape((nout, nin))
        WT = ws[start_wt:start_wt + nin * nout].reshape((nin, nout))
        for i in range(nout):
            for j in range(nin):
                WT[j, i] = W[i, j]
        bias = theta[b_off[l]:b_off[l] + nout] if b_off[l] >= 0 else zeros[:nout]
        if l == L - 1:
            Z = ws[start_logits:start_logits + B * K].reshape((B, K))
            gemm(Z, bias, strided(A), WT, B, nin, nout)
            break
        base = start_hidden + 3 * B * h_off[l]
        Z = ws[base:base + B * nout].reshape((B, nout))                 # z, then x̂ in place
        Aa = ws[base + B * nout:base + 2 * B * nout].reshape((B, nout))  # a = ReLU(u)
        Ad = ws[base + 2 * B * nout:base + 3 * B * nout].reshape((B, nout)) if dropout else Aa
        gemm(Z, bias, strided(A), WT, B, nin, nout)
        go, ho = g_off[l], h_off[l]
        if go >= 0:
            mean, alpha, shift = v1[:nout], v2[:nout], v3[:nout]
            if train:                                    # batch mean and sum of squared deviations
                ss = v4[:nout]
                mean[:] = 0.0
                ss[:] = 0.0
                for i in range(B):
                    for j in range(nout):
                        mean[j] += Z[i, j]
                for j in range(nout):
                    mean[j] /= B
                for i in range(B):
                    for j in range(nout):
                        c = Z[i, j] - mean[j]
                        ss[j] += c * c
                for j in range(nout):
                    batch_stats[0, ho + j] = mean[j]
                    batch_stats[1, ho + j] = ss[j]
                    invstd[ho + j] = 1.0 / np.sqrt(ss[j] / B + eps)
            else:
                for j in range(nout):
                    mean[j] = running[0, ho + j]
                    invstd[ho + j] = 1.0 / np.sqrt(running[1, ho + j] + eps)
            for j in range(nout):                        # u = z α + (β − μ α), α = s γ
                alpha[j] = invstd[ho + j] * theta[go + j]
                shift[j] = theta[go + nout + j] - mean[j] * alpha[j]
            s_l = invstd[ho:ho + nout]
            for i in range(B):
                for j in range(nout):
                    z = Z[i, j]
                    u = z * alpha[j] + shift[j]
                    Z[i, j] = (z - mean[j]) * s_l[j]     # x̂, for the backward pass
                    Aa[i, j] = u if u > 0.0 else 0.0
        else:
            for i in range(B):
                for j in range(nout):
                    u = Z[i, j]
                    Aa[i, j] = u if u > 0.0 else 0.0
        if dropout:
            for i in range(B):
                for j in range(nout):
                    Ad[i, j] = Aa[i, j] * masks[i, ho + j] * scale
        A = Ad
    Z = ws[start_logits:start_logits + B * K].reshape((B, K))
    delta = ws[start_delta:start_delta + B * K].reshape((B, K))
    inv_b = 1.0 / B
    loss = 0.0
    if head == HEAD_REGRESSION:
        for i in range(B):
            r = Z[i, 0] - y[idx[i]] - noise[i]
            loss += r * r
            delta[i, 0] = 2.0 * r * inv_b
    else:
        loss = softmax_cross_entropy(Z, delta, y, idx, B, K, inv_b)
    loss *= inv_b
    if grad.shape[0] == 0:
        return loss
    half = B * maxw
    cur = 0
    for l in range(L - 1, -1, -1):
        nin, nout = widths[l], widths[l + 1]
        delta = ws[start_delta + cur * half:start_delta + cur * half + B * nout].reshape((B, nout))
        if l == 0:
            A = ws[0:B * d].reshape((B, d))
        else:
            base = start_hidden + 3 * B * h_off[l - 1]
            A = ws[base + (2 if dropout else 1) * B * nin:base + (3 if dropout else 2) * B * nin].reshape((B, nin))
        gW = grad[w_off[l]:w_off[l] + nout * nin].reshape((nout, nin))
        gemm(gW, zeros, strided(delta.T), A, nout, B, nin)              # ∂ℓ/∂W = Δᵀ a'
        if b_off[l] >= 0:
            gb = grad[b_off[l]:b_off[l] + nout]
            gb[:] = 0.0
            for i in range(B):
                for j in range(nout):
                    gb[j] += delta[i, j]
        if l == 0:
            break
        W = theta[w_off[l]:w_off[l] + nout * nin].reshape((nout, nin))
        nxt = ws[start_delta + (1 - cur) * half:start_delta + (1 - cur) * half + B * nin].reshape((B, nin))
        gemm(nxt, zeros, strided(delta), W, B, nout, nin)               # ∂ℓ/∂a' = Δ W
        base = start_hidden + 3 * B * h_off[l - 1]
        Xh = ws[base:base + B * nin].reshape((B, nin))
        Aa = ws[base + B * nin:base + 2 * B * nin].reshape((B, nin))
        go, ho = g_off[l - 1], h_off[l - 1]
        for i in range(B):                               # ∂ℓ/∂u = (∂ℓ/∂a' ⊙ M/(1 − p)) ⊙ 1[u > 0]
            for j in range(nin):
                g = nxt[i, j]
                if dropout:
                    g = g * masks[i, ho + j] * scale
                nxt[i, j] = g if Aa[i, j] > 0.0 else 0.0
        if go >= 0:
            sd, sdx, coef = v1[:nin], v2[:nin], v3[:nin]
            sd[:] = 0.0
            sdx[:] = 0.0
            for i in range(B):
                for j in range(nin):
                    sd[j] += nxt[i, j]
                    sdx[j] += nxt[i, j] * Xh[i, j]
            for j in range(nin):
                grad[go + j] = sdx[j]                    # ∂ℓ/∂γ
                grad[go + nin + j] = sd[j]               # ∂ℓ/∂β
                coef[j] = theta[go + j] * invstd[ho + j]
                sd[j] *= inv_b
                sdx[j] *= inv_b
            if train:                                    # through the batch statistics
                for i in range(B):
                    for j in range(nin):
                        nxt[i, j] = coef[j] * (nxt[i, j] - sd[j] - Xh[i, j] * sdx[j])
            else:                                        # an affine map of fixed statistics
                for i in range(B):
                    for j in range(nin):
                        nxt[i, j] = coef[j] * nxt[i, j]
        cur = 1 - cur
    return loss


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """The model protocol's kernel (:mod:`dyntools.models.base`): :func:`forward_backward` of ``idx[:b]``
    with the keep masks, batch statistics and running statistics at the start of ``ws``
    (:func:`ws_layout`). ``iargs = [L, widths, w_off, b_off, g_off, h_off, head]``;
    ``fargs = [train (1/0), dropout (1/0), scale, ε]``."""
    L = iargs[0]
    widths = iargs[1:L + 2]
    w_off, b_off = iargs[L + 2:2 * L + 2], iargs[2 * L + 2:3 * L + 2]
    g_off, h_off = iargs[3 * L + 2:4 * L + 2], iargs[4 * L + 2:5 * L + 2]
    head = iargs[5 * L + 2]
    H = 0
    for l in range(1, L):
        H += widths[l]
    train = fargs[0] != 0.0
    m_end, s_end, r_end = b * H, b * H + 2 * H, b * H + 4 * H
    masks = ws[0:m_end].reshape((b, H)) if fargs[1] != 0.0 else ws[0:0].reshape((0, H))
    return forward_backward(theta, widths, w_off, b_off, g_off, h_off, X, y, idx[:b], noise, head, train, masks,
                            fargs[2], fargs[3], ws[m_end:s_end].reshape((2, H)), ws[s_end:r_end].reshape((2, H)),
                            grad, ws[r_end:])


def kernel_args(widths, w_off, b_off, g_off, h_off, head: str, train: bool, dropout: float,
                eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``(iargs, fargs)`` of :func:`loss_grad`."""
    L = len(widths) - 1
    iargs = np.concatenate([[L], widths, w_off, b_off, g_off, h_off,
                            [HEAD_REGRESSION if head == "regression" else HEAD_CROSS_ENTROPY]]).astype(np.int64)
    fargs = np.array([1.0 if train else 0.0, 1.0 if dropout > 0.0 else 0.0,
                      1.0 / (1.0 - dropout), float(eps)])
    return iargs, fargs


def logits(ws, widths, batch: int) -> np.ndarray:
    """The logits ``z_L`` (batch × K) left in the pass's scratch ``ws`` by :func:`forward_backward`."""
    w = np.asarray(widths, dtype=np.int64)
    B = int(batch)
    start = B * (int(w[0]) + 3 * int(w[1:-1].sum()))
    return ws[start:start + B * int(w[-1])].reshape(B, int(w[-1]))


@njit(cache=True)
def update_running(running, batch_stats, momentum, batch):
    """PyTorch's running statistics: ``r_μ ← m μ + (1 − m) r_μ``, ``r_σ² ← m S/(B − 1) + (1 − m) r_σ²``."""
    for h in range(running.shape[1]):
        running[0, h] = momentum * batch_stats[0, h] + (1.0 - momentum) * running[0, h]
        running[1, h] = momentum * (batch_stats[1, h] / (batch - 1)) + (1.0 - momentum) * running[1, h]


def update_running_np(running, batch_stats, momentum, batch) -> None:
    """NumPy twin of :func:`update_running`."""
    running[0] = momentum * batch_stats[0] + (1.0 - momentum) * running[0]
    running[1] = momentum * (batch_stats[1] / (batch - 1)) + (1.0 - momentum) * running[1]


# ------------------------------------------------------------------------------------------ the loop's hooks
#
# Dropout and batch norm are the trainer's step hooks (dyntools.models.base.Hooks), with
# hargs = [H, keep = 1 − p, momentum] and, with batch norm, the path's running statistics as its state row
# (2H: means, then variances), recorded with θ (evaluation mode uses them):
#
#     before the gradient   M_t = keep masks into ws[:b·H], from the path's ``mlp.dropout`` stream   (dropout)
#     after the gradient    r_μ, r_σ² ← PyTorch's update with the batch's μ, S/(b − 1) in ws          (batch norm)

@njit(cache=True)
def dropout_hook(t, theta, hstate, hstream, hargs, b, ws):
    """Before the gradient: the keep masks of step ``t`` (:func:`draw_masks`) into the kernel's scratch."""
    H = int(hargs[0])
    draw_masks(hstream, ws[:b * H].reshape((b, H)), hargs[1])


def dropout_hook_np(t, theta, hstate, hstream, hargs, b, ws) -> None:
    """NumPy twin of :func:`dropout_hook`."""
    H = int(hargs[0])
    draw_masks_np(hstream, ws[:b * H].reshape(b, H), hargs[1])


@njit(cache=True)
def batch_norm_hook(t, theta, hstate, hstream, hargs, b, ws):
    """After the gradient: the running statistics (the state row) from the batch's (:func:`update_running`)."""
    H = int(hargs[0])
    update_running(hstate.reshape((2, H)), ws[b * H:b * H + 2 * H].reshape((2, H)), hargs[2], b)


def batch_norm_hook_np(t, theta, hstate, hstream, hargs, b, ws) -> None:
    """NumPy twin of :func:`batch_norm_hook`."""
    H = int(hargs[0])
    update_running_np(hstate.reshape(2, H), ws[b * H:b * H + 2 * H].reshape(2, H), hargs[2], b)


# ------------------------------------------------------------------------------------------ NumPy twin

def forward_backward_np(theta, widths, w_off, b_off, g_off, h_off, X, y, idx, noise, head, train, masks, scale,
                        eps, batch_stats, running, grad, ws=None):
    """NumPy twin of :func:`forward_backward` (readable: whole-batch ``@`` products; ``ws`` unused). Returns the
    loss; writes ``grad`` (if ``grad.size``) and, in training mode, ``batch_stats``."""
    L = len(widths) - 1
    i = np.asarray(idx)
    B = i.size
    dropout = train and masks.shape[0] > 0
    a = np.asarray(X, dtype=np.float64)[i]
    inputs, cache = [a], []
    with np.errstate(over="ignore", invalid="ignore"):
        for l in range(L):
            nin, nout = int(widths[l]), int(widths[l + 1])
            W = theta[w_off[l]:w_off[l] + nout * nin].reshape(nout, nin)
            z = a @ W.T + (theta[b_off[l]:b_off[l] + nout] if b_off[l] >= 0 else 0.0)
            if l == L - 1:
                break
            go, ho = int(g_off[l]), int(h_off[l])
            xhat, s = None, None
            if go >= 0:
                gamma, beta = theta[go:go + nout], theta[go + nout:go + 2 * nout]
                if train:
                    mean = z.mean(axis=0)
                    ss = ((z - mean) ** 2).sum(axis=0)
                    batch_stats[0, ho:ho + nout], batch_stats[1, ho:ho + nout] = mean, ss
                    s = 1.0 / np.sqrt(ss / B + eps)
                else:
                    mean = running[0, ho:ho + nout]
                    s = 1.0 / np.sqrt(running[1, ho:ho + nout] + eps)
                xhat = (z - mean) * s
                u = gamma * xhat + beta
            else:
                u = z
            act = np.maximum(u, 0.0)
            a = act * masks[:, ho:ho + nout] * scale if dropout else act
            cache.append((xhat, s, act))
            inputs.append(a)
        if head == HEAD_REGRESSION:
            r = z[:, 0] - np.asarray(y)[i] - np.asarray(noise)[:B]
            loss = float(r @ r) / B
            delta = (2.0 * r / B)[:, None]
        else:
            labels = np.asarray(y)[i].astype(np.int64)
            zmax = z.max(axis=1, keepdims=True)
            lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
            loss = float(np.mean(lse - z[np.arange(B), labels]))
            delta = np.exp(z - lse[:, None]) / B
            delta[np.arange(B), labels] -= 1.0 / B
        if grad.shape[0] == 0:
            return loss
        for l in range(L - 1, -1, -1):
            nin, nout = int(widths[l]), int(widths[l + 1])
            W = theta[w_off[l]:w_off[l] + nout * nin].reshape(nout, nin)
            grad[w_off[l]:w_off[l] + nout * nin] = (delta.T @ inputs[l]).ravel()
            if b_off[l] >= 0:
                grad[b_off[l]:b_off[l] + nout] = delta.sum(axis=0)
            if l == 0:
                break
            g = delta @ W
            xhat, s, act = cache[l - 1]
            ho, go = int(h_off[l - 1]), int(g_off[l - 1])
            if dropout:
                g = g * masks[:, ho:ho + nin] * scale
            g = g * (act > 0.0)
            if go >= 0:
                gamma = theta[go:go + nin]
                grad[go:go + nin] = (g * xhat).sum(axis=0)
                grad[go + nin:go + 2 * nin] = g.sum(axis=0)
                g = gamma * s * (g - g.mean(axis=0) - xhat * (g * xhat).mean(axis=0)) if train else gamma * s * g
            delta = g
    return loss


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad`."""
    L = int(iargs[0])
    widths = iargs[1:L + 2]
    w_off, b_off = iargs[L + 2:2 * L + 2], iargs[2 * L + 2:3 * L + 2]
    g_off, h_off = iargs[3 * L + 2:4 * L + 2], iargs[4 * L + 2:5 * L + 2]
    H = int(widths[1:-1].sum())
    m_end, s_end, r_end = b * H, b * H + 2 * H, b * H + 4 * H
    masks = ws[:m_end].reshape(b, H) if fargs[1] != 0.0 else np.zeros((0, H))
    return forward_backward_np(theta, widths, w_off, b_off, g_off, h_off, X, y, np.asarray(idx[:b]), noise,
                               int(iargs[5 * L + 2]), fargs[0] != 0.0, masks, fargs[2], fargs[3],
                               ws[m_end:s_end].reshape(2, H), ws[s_end:r_end].reshape(2, H), grad)
