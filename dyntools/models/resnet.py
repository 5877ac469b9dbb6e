"""A small convolutional residual network on 8×8 single-channel images (the digits).

Andriushchenko et al. (2023, seed 004) measure the feature sparsity of DenseNets and ResNets on images;
this is the smallest network of that family: 3×3 convolutions, ReLU, identity skips and global average
pooling. With ``C`` channels and ``B`` residual blocks, on an image ``x ∈ R^{1×8×8}`` standardized by two
constants, ``x̃ = (x − μ)/s`` (μ, s: the training pixels' mean and standard deviation, as torchvision's
``Normalize``; the digits' pixels lie in [0, 1] with mean ≈ 0.3):

    a_0 = σ(conv_stem(x̃))                                  (1 → C channels)
    u_k = σ(conv_{k,1}(a_{k−1})),  a_k = σ(a_{k−1} + conv_{k,2}(u_k))      (k = 1, …, B; C → C)
    g   = (1/64) Σ_{i,j} a_B[:, i, j] ∈ R^C                   (global average pooling)
    z   = W g + b ∈ R^K                                       (linear head, K classes)

where ``σ(t) = max(t, 0)`` and every ``conv`` is a 3×3 cross-correlation with bias, stride 1 and zero
padding 1 (PyTorch's ``nn.Conv2d(cin, cout, 3, padding=1)``): ``conv(a)[o, i, j] = β_o + Σ_{c,di,dj}
w[o, c, di, dj] · a[c, i + di − 1, j + dj − 1]`` (entries outside the image are 0). The loss is the mean
softmax cross-entropy ``(1/b) Σ_q [log Σ_k exp z_{qk} − z_{q y_q}]``.

**Weight layout** (PyTorch's ``named_parameters`` order of the same network): the stem's weight
``(C, 1, 3, 3)`` and bias ``(C,)``; per block ``conv_{k,1}`` weight ``(C, C, 3, 3)``, bias, ``conv_{k,2}``
weight, bias; the head ``W (K, C)`` and ``b (K,)``; each row-major, one after the other in ``θ ∈ R^p``,
``p = 10C + B(18C² + 2C) + KC + K``.

**Back-propagation** (per example, from ``∂ℓ/∂z = softmax(z) − onehot(y)`` scaled by 1/b):
``∂/∂W = δ_z gᵀ``, ``δ_g = Wᵀ δ_z``, ``δ_{a_B}[c, i, j] = δ_g[c] / 64``; through block k, with
``δ_s = δ_{a_k} ⊙ 1[a_k > 0]``: ``∂/∂w_{k,2}[o, c, di, dj] = Σ_{ij} δ_s[o, i, j] u_k[c, i + di − 1, j + dj − 1]``,
``δ_{u_k} = conv_{k,2}ᵀ(δ_s) ⊙ 1[u_k > 0]``, the same for ``conv_{k,1}`` with input ``a_{k−1}``, and
``δ_{a_{k−1}} = δ_s + conv_{k,1}ᵀ(δ_{u_k})`` (the identity skip); the stem last. ReLU's derivative is 0
at 0 (PyTorch's convention).

**Kernels** (the model protocol, :mod:`dyntools.models.base`): the compiled :func:`loss_grad` runs the
forward and backward pass one example at a time on zero-padded ``C × 10 × 10`` maps held in the scratch
array, their borders 0 (never written). Every convolution reads its nine weights once per (output, input)
channel pair and gathers each pixel's 3×3 patch; its transpose gathers too (the flipped kernel over the
output gradient's padded map), and the nine weight derivatives of a pair are nine independent running sums
over the 64 positions — one running sum would wait on its own last addition 64 times (measured on the AMD
EPYC Zen 4: 0.8 ms per step of batch 8 at C = 8, B = 2, against 1.3 ms for sums one after the other); its
NumPy twin :func:`loss_grad_np` is written independently, the whole batch at once: every convolution an
``einsum`` of the weights with the image's 3×3 patches (im2col) and its transpose a sum of shifted
patches (col2im).

**Features** (:meth:`ResNet.features`): the paper measures the feature sparsity coefficient in the middle
of the network and just before the average pooling; here those are ``a_{⌈B/2⌉}`` and ``a_B``, each
flattened to ``C · 64`` features per image (a neuron is one channel at one position).

**Initialization** (:meth:`ResNet.init`): He's Gaussian ``N(0, 2/fan_in)`` for every convolution
(``fan_in = 9 · c_in``), ``N(0, 1/C)`` for the head, biases 0, drawn from a PCG64 generator of the
``resnet.init`` stream in the layout's order. float64 only.

**Why the standardization.** Without it the network barely learns: on the raw [0, 1] pixels every
3×3 patch carries a large common positive part, so after the stem the channels' global averages differ
little between digits, the head sees almost the same 8 numbers for every image and the loss sits at
log 10 for hundreds of steps (measured: 25 % test accuracy after 400 steps of η = 0.1 at batch 32);
larger steps then kill the ReLUs (the net collapses to one class). With the standardized input the
same net reaches ≈ 95 % after 20 epochs at batch 8 (see :mod:`dyntools.simulations.deep_nets`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.engine import streams
from dyntools.models.base import Model, cross_entropy_and_accuracy

SIDE = 8                   # image side
PAD = SIDE + 2             # side of a zero-padded map
AREA = SIDE * SIDE


# ------------------------------------------------------------------------------------------ layout

@njit(cache=True)
def offsets(C, B, K):
    """``(stem_w, stem_b, block_base (B,), head_w, head_b, p)``: where each tensor starts in θ. Block k's
    ``conv_{k,1}`` weight starts at ``block_base[k]``, its bias after ``9C²`` entries, then ``conv_{k,2}``."""
    stem_w, stem_b = 0, 9 * C
    base = np.empty(B, dtype=np.int64)
    pos = 10 * C
    for k in range(B):
        base[k] = pos
        pos += 2 * (9 * C * C + C)
    return stem_w, stem_b, base, pos, pos + K * C, pos + K * C + K


def n_params(C: int, B: int, K: int) -> int:
    return 10 * C + B * (18 * C * C + 2 * C) + K * C + K


def ws_size(C: int, B: int, K: int) -> int:
    """Scratch of :func:`loss_grad`: the maps a_0 … a_B, u_1 … u_B and three gradient maps (C × 10 × 10
    each), the padded input, pooled features and logits."""
    return (2 * B + 4) * C * PAD * PAD + PAD * PAD + C + 2 * K


# ------------------------------------------------------------------------------------------ compiled pieces

@njit(cache=True)
def conv_forward(theta, wo, bo, inp, cin, out, cout, relu):
    """``out[o, 1:9, 1:9] = (σ)(β_o + Σ_{c,di,dj} w[o,c,di,dj] · inp[c, i+di, j+dj])`` on padded maps: per
    (o, c) the nine weights are read once and every output pixel gathers its 3×3 patch."""
    for o in range(cout):
        bias = theta[bo + o]
        for i in range(SIDE):
            for j in range(SIDE):
                out[o, 1 + i, 1 + j] = bias
        for c in range(cin):
            k = wo + (o * cin + c) * 9
            w00, w01, w02 = theta[k], theta[k + 1], theta[k + 2]
            w10, w11, w12 = theta[k + 3], theta[k + 4], theta[k + 5]
            w20, w21, w22 = theta[k + 6], theta[k + 7], theta[k + 8]
            for i in range(SIDE):
                r0, r1, r2, dst = inp[c, i], inp[c, i + 1], inp[c, i + 2], out[o, 1 + i]
                for j in range(SIDE):
                    dst[1 + j] += (w00 * r0[j] + w01 * r0[j + 1] + w02 * r0[j + 2]
                                   + w10 * r1[j] + w11 * r1[j + 1] + w12 * r1[j + 2]
                                   + w20 * r2[j] + w21 * r2[j + 1] + w22 * r2[j + 2])
        if relu:
            for i in range(SIDE):
                for j in range(SIDE):
                    if not out[o, 1 + i, 1 + j] > 0.0:
                        out[o, 1 + i, 1 + j] = 0.0


@njit(cache=True)
def conv_backward(theta, wo, bo, grad, dout, inp, cin, cout, din, want_din):
    """Accumulate ``∂/∂w`` and ``∂/∂β`` of a convolution whose output gradient is ``dout`` (padded, border 0)
    and input ``inp``; with ``want_din`` add ``convᵀ(dout)`` into the interior of the padded ``din``.

    Per (o, c) the nine weight derivatives ``Σ_{ij} dout[o, 1+i, 1+j] · inp[c, i+di, j+dj]`` are nine
    independent running sums over the 64 positions (not nine sums one after the other: a single running sum
    waits on its own last addition), and ``convᵀ`` is gathered — ``din[c, P, Q] += Σ_{di,dj} w[o, c, di, dj] ·
    dout[o, P+1−di, Q+1−dj]`` — so that every output pixel is written once per (o, c) and the 8 columns of a
    row are independent."""
    for o in range(cout):
        sb = 0.0
        for i in range(SIDE):
            for j in range(SIDE):
                sb += dout[o, 1 + i, 1 + j]
        grad[bo + o] += sb
        for c in range(cin):
            k = wo + (o * cin + c) * 9
            a00 = a01 = a02 = a10 = a11 = a12 = a20 = a21 = a22 = 0.0
            for i in range(SIDE):
                r0, r1, r2, d = inp[c, i], inp[c, i + 1], inp[c, i + 2], dout[o, 1 + i]
                for j in range(SIDE):
                    dv = d[1 + j]
                    a00 += dv * r0[j]
                    a01 += dv * r0[j + 1]
                    a02 += dv * r0[j + 2]
                    a10 += dv * r1[j]
                    a11 += dv * r1[j + 1]
                    a12 += dv * r1[j + 2]
                    a20 += dv * r2[j]
                    a21 += dv * r2[j + 1]
                    a22 += dv * r2[j + 2]
            grad[k] += a00
            grad[k + 1] += a01
            grad[k + 2] += a02
            grad[k + 3] += a10
            grad[k + 4] += a11
            grad[k + 5] += a12
            grad[k + 6] += a20
            grad[k + 7] += a21
            grad[k + 8] += a22
            if want_din:
                w00, w01, w02 = theta[k], theta[k + 1], theta[k + 2]
                w10, w11, w12 = theta[k + 3], theta[k + 4], theta[k + 5]
                w20, w21, w22 = theta[k + 6], theta[k + 7], theta[k + 8]
                for P in range(1, SIDE + 1):
                    up, mid, down, dst = dout[o, P + 1], dout[o, P], dout[o, P - 1], din[c, P]
                    for Q in range(1, SIDE + 1):
                        dst[Q] += (w00 * up[Q + 1] + w01 * up[Q] + w02 * up[Q - 1]
                                   + w10 * mid[Q + 1] + w11 * mid[Q] + w12 * mid[Q - 1]
                                   + w20 * down[Q + 1] + w21 * down[Q] + w22 * down[Q - 1])


@njit(cache=True)
def forward_example(theta, x, shift, scale, C, B, K, xpad, A, U, g, z):
    """Forward pass of one image ``x`` (64,), standardized as ``(x − shift) · scale``: fills the padded maps
    ``A[k]`` = a_k, ``U[k]`` = u_{k+1}, the pooled ``g`` and the logits ``z``. Borders of every map must be 0 on
    entry (they are never written)."""
    stem_w, stem_b, base, head_w, head_b, p = offsets(C, B, K)
    for i in range(SIDE):
        for j in range(SIDE):
            xpad[0, 1 + i, 1 + j] = (x[i * SIDE + j] - shift) * scale
    conv_forward(theta, stem_w, stem_b, xpad, 1, A[0], C, True)
    for k in range(B):
        w1 = base[k]
        w2 = w1 + 9 * C * C + C
        conv_forward(theta, w1, w1 + 9 * C * C, A[k], C, U[k], C, True)
        conv_forward(theta, w2, w2 + 9 * C * C, U[k], C, A[k + 1], C, False)
        for c in range(C):
            for i in range(1, SIDE + 1):
                for j in range(1, SIDE + 1):
                    t = A[k + 1, c, i, j] + A[k, c, i, j]
                    A[k + 1, c, i, j] = t if t > 0.0 else 0.0
    for c in range(C):
        s = 0.0
        for i in range(1, SIDE + 1):
            for j in range(1, SIDE + 1):
                s += A[B, c, i, j]
        g[c] = s / AREA
    for q in range(K):
        s = theta[head_b + q]
        for c in range(C):
            s += theta[head_w + q * C + c] * g[c]
        z[q] = s


@njit(cache=True)
def scratch_views(ws, C, B, K):
    """``(xpad, A, U, dA, dS, dU, g, z)`` views of a scratch array of :func:`ws_size` entries."""
    m = C * PAD * PAD
    A = ws[:(B + 1) * m].reshape((B + 1, C, PAD, PAD))
    pos = (B + 1) * m
    U = ws[pos:pos + B * m].reshape((B, C, PAD, PAD))
    pos += B * m
    dA = ws[pos:pos + m].reshape((C, PAD, PAD))
    dS = ws[pos + m:pos + 2 * m].reshape((C, PAD, PAD))
    dU = ws[pos + 2 * m:pos + 3 * m].reshape((C, PAD, PAD))
    pos += 3 * m
    xpad = ws[pos:pos + PAD * PAD].reshape((1, PAD, PAD))
    pos += PAD * PAD
    return xpad, A, U, dA, dS, dU, ws[pos:pos + C], ws[pos + C:pos + C + K]


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Mean softmax cross-entropy of the images ``idx[:b]`` and its gradient (module docstring), one
    example at a time. ``iargs = [C, B, K]``, ``fargs = [μ, s]`` (the input standardization); ``noise`` is
    unused (classification)."""
    C, B, K = iargs[0], iargs[1], iargs[2]
    shift, scale = fargs[0], 1.0 / fargs[1]
    stem_w, stem_b, base, head_w, head_b, p = offsets(C, B, K)
    for j in range(ws.shape[0]):
        ws[j] = 0.0
    for j in range(grad.shape[0]):
        grad[j] = 0.0
    xpad, A, U, dA, dS, dU, g, z = scratch_views(ws, C, B, K)
    inv_b = 1.0 / b
    total = 0.0
    for q in range(b):
        i = idx[q]
        forward_example(theta, X[i], shift, scale, C, B, K, xpad, A, U, g, z)
        zmax = z[0]
        for k in range(1, K):
            if z[k] > zmax:
                zmax = z[k]
        se = 0.0
        for k in range(K):
            se += np.exp(z[k] - zmax)
        lse = zmax + np.log(se)
        label = y[i]
        total += lse - z[label]
        # head: δ_z = (softmax − onehot)/b (kept in z), δ_g = Wᵀ δ_z, δ_{a_B} = δ_g / 64
        for k in range(K):
            z[k] = (np.exp(z[k] - lse) - (1.0 if k == label else 0.0)) * inv_b
        for c in range(C):
            dg = 0.0
            for k in range(K):
                grad[head_w + k * C + c] += z[k] * g[c]
                dg += theta[head_w + k * C + c] * z[k]
            dg /= AREA
            for r in range(1, SIDE + 1):
                for s in range(1, SIDE + 1):
                    dA[c, r, s] = dg
        for k in range(K):
            grad[head_b + k] += z[k]
        for k in range(B - 1, -1, -1):
            w1 = base[k]
            w2 = w1 + 9 * C * C + C
            for c in range(C):              # δ_s = δ_{a_k} ⊙ 1[a_k > 0]; the skip carries it to a_{k−1}
                for r in range(1, SIDE + 1):
                    for s in range(1, SIDE + 1):
                        dS[c, r, s] = dA[c, r, s] if A[k + 1, c, r, s] > 0.0 else 0.0
            dU[:] = 0.0
            conv_backward(theta, w2, w2 + 9 * C * C, grad, dS, U[k], C, C, dU, True)
            for c in range(C):
                for r in range(1, SIDE + 1):
                    for s in range(1, SIDE + 1):
                        if not U[k, c, r, s] > 0.0:
                            dU[c, r, s] = 0.0
            dA[:] = dS
            conv_backward(theta, w1, w1 + 9 * C * C, grad, dU, A[k], C, C, dA, True)
        for c in range(C):
            for r in range(1, SIDE + 1):
                for s in range(1, SIDE + 1):
                    if not A[0, c, r, s] > 0.0:
                        dA[c, r, s] = 0.0
        conv_backward(theta, stem_w, stem_b, grad, dA, xpad, 1, C, dU, False)
    return total * inv_b


@njit(cache=True)
def forward_batch(theta, X, shift, scale, C, B, K, middle, logits, feat_middle, feat_last, ws):
    """Logits (n, K) and, when ``feat_*`` have n rows, the flattened maps ``a_middle`` and ``a_B``
    (n, C·64; channel-major) of every row of ``X`` (compiled, for the metric hooks); ``ws``: a zeroed
    scratch array of :func:`ws_size` entries."""
    xpad, A, U, dA, dS, dU, g, z = scratch_views(ws, C, B, K)
    want = feat_middle.shape[0] == X.shape[0]
    for n in range(X.shape[0]):
        forward_example(theta, X[n], shift, scale, C, B, K, xpad, A, U, g, z)
        for k in range(K):
            logits[n, k] = z[k]
        if want:
            for c in range(C):
                for i in range(SIDE):
                    for j in range(SIDE):
                        feat_middle[n, c * AREA + i * SIDE + j] = A[middle, c, 1 + i, 1 + j]
                        feat_last[n, c * AREA + i * SIDE + j] = A[B, c, 1 + i, 1 + j]


# ------------------------------------------------------------------------------------------ NumPy twin

def unpack(C: int, B: int, K: int, theta) -> dict:
    """Named views into θ: ``stem`` (w (C,1,3,3), β), ``blocks`` [((w1, β1), (w2, β2))], ``head`` (W, b)."""
    theta = np.asarray(theta)
    stem_w, stem_b, base, head_w, head_b, p = offsets(C, B, K)
    conv = lambda wo, cin: (theta[wo:wo + 9 * C * cin].reshape(C, cin, 3, 3), theta[wo + 9 * C * cin:
                                                                                     wo + 9 * C * cin + C])
    blocks = [(conv(int(wo), C), conv(int(wo) + 9 * C * C + C, C)) for wo in base]
    return {"stem": conv(0, 1), "blocks": blocks,
            "head": (theta[head_w:head_b].reshape(K, C), theta[head_b:p])}


def patches(a: np.ndarray) -> np.ndarray:
    """im2col: ``(n, c, 8, 8)`` → ``(n, c, 3, 3, 8, 8)``, entry ``[.., di, dj, i, j] = a[.., i+di−1, j+dj−1]``
    (0 outside the image)."""
    n, c = a.shape[:2]
    padded = np.zeros((n, c, PAD, PAD))
    padded[:, :, 1:-1, 1:-1] = a
    return np.stack([np.stack([padded[:, :, di:di + SIDE, dj:dj + SIDE] for dj in range(3)], axis=2)
                     for di in range(3)], axis=2)


def fold(cols: np.ndarray) -> np.ndarray:
    """col2im, the adjoint of :func:`patches`: ``(n, c, 3, 3, 8, 8)`` → ``(n, c, 8, 8)``."""
    n, c = cols.shape[:2]
    padded = np.zeros((n, c, PAD, PAD))
    for di in range(3):
        for dj in range(3):
            padded[:, :, di:di + SIDE, dj:dj + SIDE] += cols[:, :, di, dj]
    return padded[:, :, 1:-1, 1:-1]


def conv_np(a, w, beta):
    return np.einsum("ocde,ncdeij->noij", w, patches(a)) + beta[None, :, None, None]


def forward_np(C, B, K, theta, X, mean=0.0, std=1.0):
    """The whole batch: ``(z (n, K), cache)`` with the inputs and activations the backward pass needs."""
    P = unpack(C, B, K, theta)
    x = ((np.asarray(X, dtype=np.float64) - mean) / std).reshape(-1, 1, SIDE, SIDE)
    a = np.maximum(conv_np(x, *P["stem"]), 0.0)
    acts, us = [a], []
    for (w1, b1), (w2, b2) in P["blocks"]:
        u = np.maximum(conv_np(a, w1, b1), 0.0)
        a = np.maximum(a + conv_np(u, w2, b2), 0.0)
        us.append(u)
        acts.append(a)
    g = a.mean(axis=(2, 3))
    W, bias = P["head"]
    return g @ W.T + bias, {"x": x, "acts": acts, "us": us, "g": g, "P": P}


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad`: im2col ``einsum`` products over the whole batch."""
    C, B, K = (int(v) for v in iargs[:3])
    i = np.asarray(idx[:b])
    labels = np.asarray(y[i], dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        z, cache = forward_np(C, B, K, theta, np.asarray(X)[i], float(fargs[0]), float(fargs[1]))
        zmax = z.max(axis=1, keepdims=True)
        lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
        rows = np.arange(b)
        loss = float(np.mean(lse - z[rows, labels]))
        dz = np.exp(z - lse[:, None])
        dz[rows, labels] -= 1.0
        dz /= b
        P, G = cache["P"], unpack(C, B, K, grad)
        W, _ = P["head"]
        G["head"][0][:] = dz.T @ cache["g"]
        G["head"][1][:] = dz.sum(axis=0)
        da = np.broadcast_to((dz @ W)[:, :, None, None] / AREA, cache["acts"][-1].shape)

        def conv_grads(d, inp, w, slot):
            cols = patches(inp)
            slot[0][:] = np.einsum("noij,ncdeij->ocde", d, cols)
            slot[1][:] = d.sum(axis=(0, 2, 3))
            return fold(np.einsum("ocde,noij->ncdeij", w, d))

        for k in range(B - 1, -1, -1):
            (w1, _), (w2, _) = P["blocks"][k]
            ds = da * (cache["acts"][k + 1] > 0.0)
            du = conv_grads(ds, cache["us"][k], w2, G["blocks"][k][1]) * (cache["us"][k] > 0.0)
            da = ds + conv_grads(du, cache["acts"][k], w1, G["blocks"][k][0])
        conv_grads(da * (cache["acts"][0] > 0.0), cache["x"], P["stem"][0], G["stem"])
    return loss


# ------------------------------------------------------------------------------------------ model

class ResNet(Model):
    """A small convolutional ResNet for 8×8 single-channel images (module docstring for the math).

    Parameters
    ----------
    channels : C, the width of every convolution
    blocks : B ≥ 1 residual blocks
    n_classes : K ≥ 2
    input_mean, input_std : the input standardization ``x ↦ (x − μ)/s`` applied inside the network (module
        docstring; 0 and 1: none)
    init_stream, sampling_stream : stream purposes of the initialization and of the trainer's sampling
    """

    name = "resnet"
    head = "cross-entropy"

    def __init__(self, channels: int = 8, blocks: int = 2, n_classes: int = 10, *, input_mean: float = 0.0,
                 input_std: float = 1.0, init_stream: str = "resnet.init",
                 sampling_stream: str = "resnet.sampling"):
        self.channels = validation.count("channels", channels)
        self.blocks = validation.count("blocks", blocks)
        self.n_classes = validation.count("n_classes", n_classes)
        if self.n_classes < 2:
            raise ValueError(f"Invalid n_classes: {n_classes} (must be >= 2)")
        self.input_mean = validation.finite("input_mean", input_mean)
        self.input_std = validation.positive("input_std", input_std)
        streams.key(init_stream)
        streams.key(sampling_stream)
        self.init_stream, self.sampling_stream = init_stream, sampling_stream
        self.dtype = np.dtype(np.float64)
        self._iargs = np.array([self.channels, self.blocks, self.n_classes], dtype=np.int64)
        self.loss_grad, self.loss_grad_np = loss_grad, loss_grad_np

    @property
    def n_params(self) -> int:
        return n_params(self.channels, self.blocks, self.n_classes)

    @property
    def middle(self) -> int:
        """Index of the middle feature map ``a_{⌈B/2⌉}`` (the paper's "middle of the network")."""
        return (self.blocks + 1) // 2

    def kernel_args(self):
        return self._iargs, np.array([self.input_mean, self.input_std])

    def workspace_size(self, batch: int) -> int:
        return ws_size(self.channels, self.blocks, self.n_classes)

    def config(self) -> dict:
        return {"name": self.name, "channels": self.channels, "blocks": self.blocks, "n_classes": self.n_classes,
                "input_mean": self.input_mean, "input_std": self.input_std, "n_params": self.n_params,
                "dtype": "float64"}

    def check_data(self, X, y) -> None:
        if np.shape(X)[1] != AREA:
            raise ValueError(f"Invalid data: the ResNet reads 8×8 images (64 columns), got {np.shape(X)[1]} columns")

    def unpack(self, theta) -> dict:
        """Named views into θ (see :func:`unpack`)."""
        theta = np.asarray(theta)
        if theta.shape[-1] != self.n_params:
            raise ValueError(f"Invalid theta: {theta.shape[-1]} entries, expected {self.n_params}")
        return unpack(self.channels, self.blocks, self.n_classes, theta)

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """He's Gaussian init (module docstring) from the ``init_stream`` of ``seed`` (seed index ``index``)."""
        words = (streams.key(self.init_stream),) + ((int(index),) if index else ())
        gen = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, *words)))
        theta = np.zeros(self.n_params)
        P = self.unpack(theta)
        P["stem"][0][:] = np.sqrt(2.0 / 9) * gen.standard_normal(P["stem"][0].shape)
        for (w1, _), (w2, _) in P["blocks"]:
            w1[:] = np.sqrt(2.0 / (9 * self.channels)) * gen.standard_normal(w1.shape)
            w2[:] = np.sqrt(2.0 / (9 * self.channels)) * gen.standard_normal(w2.shape)
        P["head"][0][:] = np.sqrt(1.0 / self.channels) * gen.standard_normal(P["head"][0].shape)
        return theta

    # ---------------------------------------------------------------- metric hooks
    def _forward(self, theta, X, features: bool):
        X = np.ascontiguousarray(X, dtype=np.float64)
        n, C = X.shape[0], self.channels
        logits = np.empty((n, self.n_classes))
        fm, fl = (np.empty((n, C * AREA)), np.empty((n, C * AREA))) if features else (np.empty((0, 1)),) * 2
        forward_batch(np.ascontiguousarray(theta, dtype=np.float64), X, self.input_mean, 1.0 / self.input_std, C,
                      self.blocks, self.n_classes, self.middle, logits, fm, fl,
                      np.zeros(ws_size(C, self.blocks, self.n_classes)))
        return logits, [fm, fl]

    def predict(self, theta, X) -> np.ndarray:
        """The logits (n, K) (compiled forward pass)."""
        return self._forward(theta, X, False)[0]

    def features(self, theta, X) -> list[np.ndarray]:
        """``[a_middle, a_B]``: the feature maps in the middle and before the pooling, (n, C·64) each."""
        return self._forward(theta, X, True)[1]

    def evaluate(self, theta, X, y) -> tuple[float, float]:
        """Mean cross-entropy and accuracy on ``(X, y)`` (compiled forward pass)."""
        return cross_entropy_and_accuracy(self.predict(theta, X), y)

    def loss(self, theta, X, y) -> float:
        return self.evaluate(theta, X, y)[0]
