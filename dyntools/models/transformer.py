"""A small decoder-only transformer: token and position embeddings, pre-norm blocks, an unembedding.

A sequence of ``T`` token ids ``x_1 … x_T ∈ {0, …, V − 1}`` (one row of ``X``, stored as floats) is mapped to
``K`` class logits read at its last position (issue 42 item 1; the grokking task's ``a b =``):

    h_t = E[x_t] + P_t                                            (E ∈ R^{V×d}, P ∈ R^{T×d})
    for each of the L blocks:
        a = LN₁(h);   q, k, v = a W_qᵀ + b_q,  a W_kᵀ + b_k,  a W_vᵀ + b_v
        head j (columns J_j of width d_h = d/H):  A^j = softmax_causal(q_J k_Jᵀ / √d_h),  o_J = A^j v_J
        h ← h + o W_oᵀ + b_o                                      (multi-head self-attention)
        h ← h + relu(LN₂(h) W_1ᵀ + b_1) W_2ᵀ + b_2                (MLP of width m)
    z = LN_f(h_T) Uᵀ ∈ R^K                                        (U ∈ R^{K×d}, no bias)

with ``LN(x) = γ ⊙ (x − μ(x)) / √(var(x) + ε) + β`` over the d features (biased variance, ε = 1e-5, as
``torch.nn.LayerNorm``) and the causal softmax over the positions ``s ≤ t`` of row ``t``. The loss is the mean
softmax cross-entropy ``(1/b) Σ_q [log Σ_k exp z_{qk} − z_{q y_q}]``.

**Back-propagation** (from ``∂ℓ/∂z = (softmax(z) − onehot(y)) / b``): ``∂U = δ_zᵀ f``, ``δ_f = δ_z U``; a
linear map ``y = x Wᵀ + b`` gives ``∂W = δ_yᵀ x``, ``∂b = Σ δ_y``, ``δ_x = δ_y W``; a layer norm
``δ_x = (δ_x̂ − mean(δ_x̂) − x̂ mean(δ_x̂ ⊙ x̂)) / σ`` with ``δ_x̂ = γ ⊙ δ_y``, ``∂γ = Σ δ_y ⊙ x̂``, ``∂β = Σ δ_y``;
the attention ``δA = δo vᵀ``, ``δv = Aᵀ δo``, ``δS = A ⊙ (δA − rowsum(δA ⊙ A))``, ``δq = δS k / √d_h``,
``δk = δSᵀ q / √d_h``; ReLU's derivative is 0 at 0 (PyTorch's convention); the residual paths add; the
embeddings scatter ``δh_t`` into row ``x_t`` of E and row t of P.

**Weight layout** (the ``named_parameters`` order of the same network in PyTorch, each row-major, weights
*out × in* as ``nn.Linear``): ``E``, ``P``; per block ``γ₁, β₁, W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o, γ₂, β₂,
W_1, b_1, W_2, b_2``; ``γ_f, β_f``; ``U``. :meth:`Transformer.unpack` gives named views.

**Decay groups** (:meth:`Transformer.decay_mask`): as practitioners configure AdamW, the embeddings, the
unembedding and every weight matrix decay; the layer norms' γ, β and the biases do not.

**Kernels** (the model protocol, :mod:`dyntools.models.base`): the compiled :func:`loss_grad` runs the batch
as ``b·T`` rows — every linear map one matrix product, the attention a loop over (example, head) — keeping
the activations of the forward pass for the backward pass; its NumPy twin :func:`loss_grad_np` is written
independently on ``(b, T, d)`` arrays with ``einsum``. The tests hold them equal, to central finite
differences and to PyTorch's autograd (goldens made offline, tests/goldens/make_transformer_goldens.py).

**Initialization** (:meth:`Transformer.init`, the ``transformer.init`` stream): ``E, P ~ N(0, 1)``, every
weight matrix ``N(0, 1/fan_in)`` (U: ``N(0, 1/d)``), biases and β 0, γ 1. float64 only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.engine import streams
from dyntools.models.base import Model, cross_entropy_and_accuracy

EPS = 1e-5
#: the tensors of one block, in layout order
BLOCK = ("ln1_g", "ln1_b", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln2_g", "ln2_b", "w1", "b1", "w2", "b2")


# ------------------------------------------------------------------------------------------ layout

def shapes(V: int, T: int, d: int, m: int, L: int, K: int) -> list[tuple[str, tuple]]:
    """``[(name, shape)]`` of every tensor in layout order (module docstring)."""
    block = {"ln1_g": (d,), "ln1_b": (d,), "wq": (d, d), "bq": (d,), "wk": (d, d), "bk": (d,), "wv": (d, d),
             "bv": (d,), "wo": (d, d), "bo": (d,), "ln2_g": (d,), "ln2_b": (d,), "w1": (m, d), "b1": (m,),
             "w2": (d, m), "b2": (d,)}
    out = [("tok", (V, d)), ("pos", (T, d))]
    for l in range(L):
        out += [(f"blocks.{l}.{n}", block[n]) for n in BLOCK]
    return out + [("lnf_g", (d,)), ("lnf_b", (d,)), ("unembed", (K, d))]


def offsets(V: int, T: int, d: int, m: int, L: int, K: int) -> np.ndarray:
    """Start of every tensor of :func:`shapes` in θ, then the total p (int64)."""
    sizes = [int(np.prod(s)) for _, s in shapes(V, T, d, m, L, K)]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@njit(inline="always")
def _mat(theta, off, i, rows, cols):
    return theta[off[i]:off[i] + rows * cols].reshape(rows, cols)


@njit(inline="always")
def _vec(theta, off, i):
    return theta[off[i]:off[i + 1]]


# ------------------------------------------------------------------------------------------ compiled kernel

@njit(cache=True)
def _ln_forward(x, g, b, eps, xhat, rstd, out):
    """Rows of ``x`` layer-normed: ``xhat``, ``rstd = 1/σ`` kept for the backward pass, ``out = g xhat + b``."""
    n, d = x.shape
    for r in range(n):
        mu = 0.0
        for c in range(d):
            mu += x[r, c]
        mu /= d
        var = 0.0
        for c in range(d):
            var += (x[r, c] - mu) ** 2
        rs = 1.0 / np.sqrt(var / d + eps)
        rstd[r] = rs
        for c in range(d):
            xhat[r, c] = (x[r, c] - mu) * rs
            out[r, c] = g[c] * xhat[r, c] + b[c]


@njit(cache=True)
def _ln_backward(dy, xhat, rstd, g, dg, db, dx):
    """Adds ``∂γ``, ``∂β`` into ``dg``, ``db`` and the input's gradient into ``dx``."""
    n, d = dy.shape
    for r in range(n):
        m1 = 0.0
        m2 = 0.0
        for c in range(d):
            dxh = dy[r, c] * g[c]
            m1 += dxh
            m2 += dxh * xhat[r, c]
            dg[c] += dy[r, c] * xhat[r, c]
            db[c] += dy[r, c]
        m1 /= d
        m2 /= d
        for c in range(d):
            dx[r, c] += rstd[r] * (dy[r, c] * g[c] - m1 - xhat[r, c] * m2)


@njit(cache=True)
def _attention(q, k, v, B, T, H, dh, att, o):
    """Causal multi-head attention of ``B`` sequences of ``T`` rows: ``att[e, j]`` the (T, T) weights, ``o``
    the heads' outputs side by side."""
    scale = 1.0 / np.sqrt(dh)
    for e in range(B):
        base = e * T
        for j in range(H):
            c0 = j * dh
            for t in range(T):
                mx = -np.inf
                for s in range(t + 1):
                    acc = 0.0
                    for c in range(dh):
                        acc += q[base + t, c0 + c] * k[base + s, c0 + c]
                    att[e, j, t, s] = acc * scale
                    mx = max(mx, att[e, j, t, s])
                tot = 0.0
                for s in range(t + 1):
                    att[e, j, t, s] = np.exp(att[e, j, t, s] - mx)
                    tot += att[e, j, t, s]
                for s in range(T):
                    att[e, j, t, s] = att[e, j, t, s] / tot if s <= t else 0.0
                for c in range(dh):
                    acc = 0.0
                    for s in range(t + 1):
                        acc += att[e, j, t, s] * v[base + s, c0 + c]
                    o[base + t, c0 + c] = acc


@njit(cache=True)
def _attention_backward(do, q, k, v, att, B, T, H, dh, dq, dk, dv):
    """Gradients of q, k, v (written) from that of the heads' outputs ``do``."""
    scale = 1.0 / np.sqrt(dh)
    dA = np.empty(T)
    for e in range(B):
        base = e * T
        for j in range(H):
            c0 = j * dh
            for t in range(T):
                rsum = 0.0
                for s in range(t + 1):
                    acc = 0.0
                    for c in range(dh):
                        acc += do[base + t, c0 + c] * v[base + s, c0 + c]
                        dv[base + s, c0 + c] += att[e, j, t, s] * do[base + t, c0 + c]
                    dA[s] = acc
                    rsum += acc * att[e, j, t, s]
                for s in range(t + 1):
                    dS = att[e, j, t, s] * (dA[s] - rsum) * scale
                    for c in range(dh):
                        dq[base + t, c0 + c] += dS * k[base + s, c0 + c]
                        dk[base + s, c0 + c] += dS * q[base + t, c0 + c]


@njit(cache=True)
def _embed(theta, off, X, idx, b, T, d, h):
    """``h[e·T + t] = E[x_{e,t}] + P_t`` for the examples ``idx[:b]``."""
    for e in range(b):
        for t in range(T):
            tok = int(X[idx[e], t])
            for c in range(d):
                h[e * T + t, c] = theta[off[0] + tok * d + c] + theta[off[1] + t * d + c]


@njit(cache=True)
def _forward(theta, X, idx, b, iargs, fargs):
    """The forward pass of the examples ``idx[:b]``: the logits (b, K) and every activation the backward pass
    reads."""
    T, d, H, m, L, K = iargs[1], iargs[2], iargs[3], iargs[4], iargs[5], iargs[6]
    off = iargs[7:]
    eps = fargs[0]
    N, dh = b * T, d // H
    hin = np.empty((L + 1, N, d))
    x1, a1, x2, a2 = np.empty((L, N, d)), np.empty((L, N, d)), np.empty((L, N, d)), np.empty((L, N, d))
    r1, r2 = np.empty((L, N)), np.empty((L, N))
    qs, ks, vs, heads_out = np.empty((L, N, d)), np.empty((L, N, d)), np.empty((L, N, d)), np.empty((L, N, d))
    att = np.zeros((L, b, H, T, T))
    hmid, us = np.empty((L, N, d)), np.empty((L, N, m))
    _embed(theta, off, X, idx, b, T, d, hin[0])
    for l in range(L):
        o0 = 2 + 16 * l
        h = hin[l]
        _ln_forward(h, _vec(theta, off, o0), _vec(theta, off, o0 + 1), eps, x1[l], r1[l], a1[l])
        qs[l] = a1[l] @ _mat(theta, off, o0 + 2, d, d).T + _vec(theta, off, o0 + 3)
        ks[l] = a1[l] @ _mat(theta, off, o0 + 4, d, d).T + _vec(theta, off, o0 + 5)
        vs[l] = a1[l] @ _mat(theta, off, o0 + 6, d, d).T + _vec(theta, off, o0 + 7)
        _attention(qs[l], ks[l], vs[l], b, T, H, dh, att[l], heads_out[l])
        hmid[l] = h + heads_out[l] @ _mat(theta, off, o0 + 8, d, d).T + _vec(theta, off, o0 + 9)
        _ln_forward(hmid[l], _vec(theta, off, o0 + 10), _vec(theta, off, o0 + 11), eps, x2[l], r2[l], a2[l])
        us[l] = a2[l] @ _mat(theta, off, o0 + 12, m, d).T + _vec(theta, off, o0 + 13)
        hin[l + 1] = hmid[l] + np.maximum(us[l], 0.0) @ _mat(theta, off, o0 + 14, d, m).T + _vec(theta, off, o0 + 15)
    last = np.empty((b, d))
    for e in range(b):
        last[e] = hin[L, e * T + T - 1]
    xf, rf, f = np.empty((b, d)), np.empty(b), np.empty((b, d))
    of = 2 + 16 * L
    _ln_forward(last, _vec(theta, off, of), _vec(theta, off, of + 1), eps, xf, rf, f)
    z = f @ _mat(theta, off, of + 2, K, d).T
    return z, hin, x1, r1, a1, qs, ks, vs, att, heads_out, hmid, x2, r2, a2, us, xf, rf, f


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Mean cross-entropy of the examples ``idx[:b]`` and its gradient into ``grad`` (module docstring)."""
    T, d, H, m, L, K = iargs[1], iargs[2], iargs[3], iargs[4], iargs[5], iargs[6]
    off = iargs[7:]
    N, dh = b * T, d // H
    z, hin, x1, r1, a1, qs, ks, vs, att, heads_out, hmid, x2, r2, a2, us, xf, rf, f = _forward(theta, X, idx, b, iargs,
                                                                                        fargs)
    grad[:] = 0.0
    dz = np.empty((b, K))
    loss = 0.0
    for e in range(b):
        mx = z[e].max()
        tot = 0.0
        for k in range(K):
            tot += np.exp(z[e, k] - mx)
        label = int(y[idx[e]])
        loss += mx + np.log(tot) - z[e, label]
        for k in range(K):
            dz[e, k] = np.exp(z[e, k] - mx) / tot / b
        dz[e, label] -= 1.0 / b
    of = 2 + 16 * L
    _mat(grad, off, of + 2, K, d)[:, :] = dz.T @ f
    df = dz @ _mat(theta, off, of + 2, K, d)
    dlast = np.zeros((b, d))
    _ln_backward(df, xf, rf, _vec(theta, off, of), _vec(grad, off, of), _vec(grad, off, of + 1), dlast)
    gh = np.zeros((N, d))                       # ∂loss/∂h at the output of the current block
    for e in range(b):
        gh[e * T + T - 1] = dlast[e]
    for l in range(L - 1, -1, -1):
        o0 = 2 + 16 * l
        # MLP: h_out = hmid + relu(u) W2ᵀ + b2, u = LN₂(hmid) W1ᵀ + b1
        _mat(grad, off, o0 + 14, d, m)[:, :] = gh.T @ np.maximum(us[l], 0.0)
        _vec(grad, off, o0 + 15)[:] = gh.sum(axis=0)
        du = (gh @ _mat(theta, off, o0 + 14, d, m)) * (us[l] > 0.0)
        _mat(grad, off, o0 + 12, m, d)[:, :] = du.T @ a2[l]
        _vec(grad, off, o0 + 13)[:] = du.sum(axis=0)
        gmid = gh.copy()
        _ln_backward(du @ _mat(theta, off, o0 + 12, m, d), x2[l], r2[l], _vec(theta, off, o0 + 10),
                     _vec(grad, off, o0 + 10), _vec(grad, off, o0 + 11), gmid)
        # attention: hmid = h + o Woᵀ + bo, q, k, v = LN₁(h) W{q,k,v}ᵀ + b{q,k,v}
        _mat(grad, off, o0 + 8, d, d)[:, :] = gmid.T @ heads_out[l]
        _vec(grad, off, o0 + 9)[:] = gmid.sum(axis=0)
        do = gmid @ _mat(theta, off, o0 + 8, d, d)
        dq, dk, dv = np.zeros((N, d)), np.zeros((N, d)), np.zeros((N, d))
        _attention_backward(do, qs[l], ks[l], vs[l], att[l], b, T, H, dh, dq, dk, dv)
        _mat(grad, off, o0 + 2, d, d)[:, :] = dq.T @ a1[l]
        _vec(grad, off, o0 + 3)[:] = dq.sum(axis=0)
        _mat(grad, off, o0 + 4, d, d)[:, :] = dk.T @ a1[l]
        _vec(grad, off, o0 + 5)[:] = dk.sum(axis=0)
        _mat(grad, off, o0 + 6, d, d)[:, :] = dv.T @ a1[l]
        _vec(grad, off, o0 + 7)[:] = dv.sum(axis=0)
        da1 = (dq @ _mat(theta, off, o0 + 2, d, d) + dk @ _mat(theta, off, o0 + 4, d, d)
               + dv @ _mat(theta, off, o0 + 6, d, d))
        gh = gmid.copy()
        _ln_backward(da1, x1[l], r1[l], _vec(theta, off, o0), _vec(grad, off, o0), _vec(grad, off, o0 + 1), gh)
    for e in range(b):
        for t in range(T):
            tok = int(X[idx[e], t])
            for c in range(d):
                grad[off[0] + tok * d + c] += gh[e * T + t, c]
                grad[off[1] + t * d + c] += gh[e * T + t, c]
    return loss / b


# ------------------------------------------------------------------------------------------ NumPy twin

def unpack(V: int, T: int, d: int, m: int, L: int, K: int, theta) -> dict:
    """Named views into θ: ``tok``, ``pos``, ``blocks`` (a list of dicts of :data:`BLOCK`), ``lnf_g``,
    ``lnf_b``, ``unembed``."""
    theta = np.asarray(theta)
    off = offsets(V, T, d, m, L, K)
    views = {name: theta[..., off[i]:off[i + 1]].reshape(theta.shape[:-1] + shape)
             for i, (name, shape) in enumerate(shapes(V, T, d, m, L, K))}
    blocks = [{n: views.pop(f"blocks.{l}.{n}") for n in BLOCK} for l in range(L)]
    return {**views, "blocks": blocks}


def _ln_np(x, g, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) / sigma
    return g * xhat + b, xhat, sigma


def _ln_back_np(dy, xhat, sigma, g):
    """``(δx, ∂γ, ∂β)`` of a layer norm over the last axis."""
    dxh = dy * g
    dx = (dxh - dxh.mean(axis=-1, keepdims=True) - xhat * (dxh * xhat).mean(axis=-1, keepdims=True)) / sigma
    axes = tuple(range(dy.ndim - 1))
    return dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)


def forward_np(dims: tuple, theta, tokens, eps: float = EPS):
    """Logits (n, K) of the token rows ``tokens`` (n, T) and the activations the twin's backward pass reads."""
    V, T, d, H, m, L, K = dims
    P = unpack(V, T, d, m, L, K, theta)
    tokens = np.asarray(tokens).astype(np.int64)
    n, dh = tokens.shape[0], d // H
    h = P["tok"][tokens] + P["pos"][None]                                  # (n, T, d)
    mask = np.tril(np.ones((T, T), bool))
    cache = []
    for B in P["blocks"]:
        a1, x1, s1 = _ln_np(h, B["ln1_g"], B["ln1_b"], eps)
        q, k, v = (a1 @ B[w].T + B[c] for w, c in (("wq", "bq"), ("wk", "bk"), ("wv", "bv")))
        split = lambda u: u.reshape(n, T, H, dh).transpose(0, 2, 1, 3)     # (n, H, T, dh)
        S = np.einsum("nhtc,nhsc->nhts", split(q), split(k)) / np.sqrt(dh)
        S = np.where(mask, S, -np.inf)
        A = np.exp(S - S.max(axis=-1, keepdims=True))
        A /= A.sum(axis=-1, keepdims=True)
        o = np.einsum("nhts,nhsc->nhtc", A, split(v)).transpose(0, 2, 1, 3).reshape(n, T, d)
        hmid = h + o @ B["wo"].T + B["bo"]
        a2, x2, s2 = _ln_np(hmid, B["ln2_g"], B["ln2_b"], eps)
        u = a2 @ B["w1"].T + B["b1"]
        cache.append((a1, x1, s1, q, k, v, A, o, a2, x2, s2, u))
        h = hmid + np.maximum(u, 0.0) @ B["w2"].T + B["b2"]
    f, xf, sf = _ln_np(h[:, -1], P["lnf_g"], P["lnf_b"], eps)
    return f @ P["unembed"].T, (P, tokens, cache, f, xf, sf)


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad` (same signature and result), the batch as (b, T, d) arrays."""
    V, T, d, H, m, L, K = (int(v) for v in iargs[:7])
    sel = np.asarray(idx[:b])
    z, (P, tokens, cache, f, xf, sf) = forward_np((V, T, d, H, m, L, K), theta, X[sel], fargs[0])
    labels = np.asarray(y)[sel].astype(np.int64)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    dz = np.exp(z - lse[:, None])
    dz[np.arange(b), labels] -= 1.0
    dz /= b
    G = unpack(V, T, d, m, L, K, grad)
    grad[:] = 0.0
    G["unembed"][:] = dz.T @ f
    dlast, G["lnf_g"][:], G["lnf_b"][:] = _ln_back_np(dz @ P["unembed"], xf, sf, P["lnf_g"])
    gh = np.zeros((b, T, d))
    gh[:, -1] = dlast
    dh = d // H
    split = lambda u: u.reshape(b, T, H, dh).transpose(0, 2, 1, 3)
    merge = lambda u: u.transpose(0, 2, 1, 3).reshape(b, T, d)
    rows = lambda u: u.reshape(-1, u.shape[-1])
    for B, Gb, (a1, x1, s1, q, k, v, A, o, a2, x2, s2, u) in zip(P["blocks"][::-1], G["blocks"][::-1], cache[::-1]):
        Gb["w2"][:], Gb["b2"][:] = rows(gh).T @ rows(np.maximum(u, 0.0)), rows(gh).sum(axis=0)
        du = (gh @ B["w2"]) * (u > 0)
        Gb["w1"][:], Gb["b1"][:] = rows(du).T @ rows(a2), rows(du).sum(axis=0)
        dx2, Gb["ln2_g"][:], Gb["ln2_b"][:] = _ln_back_np(du @ B["w1"], x2, s2, B["ln2_g"])
        gmid = gh + dx2
        Gb["wo"][:], Gb["bo"][:] = rows(gmid).T @ rows(o), rows(gmid).sum(axis=0)
        do = split(gmid @ B["wo"])
        dA = np.einsum("nhtc,nhsc->nhts", do, split(v))
        dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) / np.sqrt(dh)
        dq = merge(np.einsum("nhts,nhsc->nhtc", dS, split(k)))
        dk = merge(np.einsum("nhts,nhtc->nhsc", dS, split(q)))
        dv = merge(np.einsum("nhts,nhtc->nhsc", A, do))
        da1 = 0.0
        for dd, w, c in ((dq, "wq", "bq"), (dk, "wk", "bk"), (dv, "wv", "bv")):
            Gb[w][:], Gb[c][:] = rows(dd).T @ rows(a1), rows(dd).sum(axis=0)
            da1 = da1 + dd @ B[w]
        dx1, Gb["ln1_g"][:], Gb["ln1_b"][:] = _ln_back_np(da1, x1, s1, B["ln1_g"])
        gh = gmid + dx1
    np.add.at(G["tok"], tokens, gh)
    G["pos"][:] = gh.sum(axis=0)
    return float(np.mean(lse - z[np.arange(b), labels]))


# ------------------------------------------------------------------------------------------ model

class Transformer(Model):
    """A small decoder-only transformer classifying token sequences by their last position (module docstring).

    Parameters
    ----------
    vocab : int
        V, the number of token ids.
    seq_len : int
        T, the length of every sequence (the columns of X).
    n_classes : int
        K ≥ 2.
    d_model : int, default 32
        d, the embedding width.
    heads : int, default 4
        H, the attention heads (dividing d).
    layers : int, default 1
        L, the pre-norm blocks (1 or 2).
    mlp_ratio : int, default 4
        The MLP's width m = mlp_ratio · d.
    init_stream, sampling_stream : str
        Stream purposes of the initialization and of the trainer's sampling.
    """

    name = "transformer"
    head = "cross-entropy"

    def __init__(self, vocab: int, seq_len: int, n_classes: int, *, d_model: int = 32, heads: int = 4,
                 layers: int = 1, mlp_ratio: int = 4, init_stream: str = "transformer.init",
                 sampling_stream: str = "transformer.sampling"):
        self.vocab = validation.count("vocab", vocab)
        self.seq_len = validation.count("seq_len", seq_len)
        self.n_classes = validation.count("n_classes", n_classes, minimum=2)
        self.d_model = validation.count("d_model", d_model, minimum=2)
        self.heads = validation.count("heads", heads)
        if self.d_model % self.heads:
            raise ValueError(f"Invalid heads: {heads} (must divide d_model = {d_model})")
        self.layers = validation.count("layers", layers)
        if self.layers > 2:
            raise ValueError(f"Invalid layers: {layers} (1 or 2 blocks)")
        self.mlp_width = validation.count("mlp_ratio", mlp_ratio) * self.d_model
        streams.key(init_stream)
        streams.key(sampling_stream)
        self.init_stream, self.sampling_stream = init_stream, sampling_stream
        self.dtype = np.dtype(np.float64)
        self._off = offsets(*self._sizes)
        self._iargs = np.concatenate([[self.vocab, self.seq_len, self.d_model, self.heads, self.mlp_width,
                                       self.layers, self.n_classes], self._off]).astype(np.int64)
        self.loss_grad, self.loss_grad_np = loss_grad, loss_grad_np

    @property
    def _sizes(self) -> tuple:
        return self.vocab, self.seq_len, self.d_model, self.mlp_width, self.layers, self.n_classes

    @property
    def dims(self) -> tuple:
        """``(V, T, d, H, m, L, K)``."""
        return (self.vocab, self.seq_len, self.d_model, self.heads, self.mlp_width, self.layers, self.n_classes)

    @property
    def n_params(self) -> int:
        return int(self._off[-1])

    def kernel_args(self):
        return self._iargs, np.array([EPS])

    def config(self) -> dict:
        return {"name": self.name, "vocab": self.vocab, "seq_len": self.seq_len, "n_classes": self.n_classes,
                "d_model": self.d_model, "heads": self.heads, "layers": self.layers, "mlp_width": self.mlp_width,
                "n_params": self.n_params, "dtype": "float64"}

    def check_data(self, X, y) -> None:
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.seq_len:
            raise ValueError(f"Invalid data: the transformer reads sequences of {self.seq_len} token ids "
                             f"(columns), got shape {X.shape}")
        if X.size and (np.any(X != np.round(X)) or X.min() < 0 or X.max() >= self.vocab):
            raise ValueError(f"Invalid data: token ids must be integers in [0, {self.vocab - 1}]")

    def unpack(self, theta) -> dict:
        """Named views into θ (see :func:`unpack`)."""
        theta = np.asarray(theta)
        if theta.shape[-1] != self.n_params:
            raise ValueError(f"Invalid theta: {theta.shape[-1]} entries, expected {self.n_params}")
        return unpack(*self._sizes, theta)

    def decay_mask(self) -> np.ndarray:
        """1 on the embeddings, the weight matrices and the unembedding; 0 on the layer norms and biases."""
        mask = np.zeros(self.n_params)
        P = self.unpack(mask)
        for view in (P["tok"], P["pos"], P["unembed"], *(B[w] for B in P["blocks"] for w in ("wq", "wk", "wv",
                                                                                           "wo", "w1", "w2"))):
            view[...] = 1.0
        return mask

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """The module docstring's init from the ``init_stream`` of ``seed`` (seed index ``index``)."""
        words = (streams.key(self.init_stream),) + ((int(index),) if index else ())
        gen = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, *words)))
        theta = np.zeros(self.n_params)
        P = self.unpack(theta)
        P["tok"][:] = gen.standard_normal(P["tok"].shape)
        P["pos"][:] = gen.standard_normal(P["pos"].shape)
        for B in P["blocks"]:
            B["ln1_g"][:] = B["ln2_g"][:] = 1.0
            for w in ("wq", "wk", "wv", "wo", "w1", "w2"):
                B[w][:] = gen.standard_normal(B[w].shape) / np.sqrt(B[w].shape[1])
        P["lnf_g"][:] = 1.0
        P["unembed"][:] = gen.standard_normal(P["unembed"].shape) / np.sqrt(self.d_model)
        return theta

    # ---------------------------------------------------------------- metric hooks
    def predict(self, theta, X) -> np.ndarray:
        """The logits (n, K) (compiled forward pass)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        n = X.shape[0]
        return _forward(np.ascontiguousarray(theta, dtype=np.float64), X, np.arange(n, dtype=np.int64), n,
                        self._iargs, np.array([EPS]))[0]

    def evaluate(self, theta, X, y) -> tuple[float, float]:
        """Mean cross-entropy and accuracy on ``(X, y)`` (compiled forward pass)."""
        return cross_entropy_and_accuracy(self.predict(theta, X), y)

    def loss(self, theta, X, y) -> float:
        return self.evaluate(theta, X, y)[0]
