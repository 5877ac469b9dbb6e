"""A ReLU multilayer perceptron classifier with softmax cross-entropy (the problem set's model, seed 001).

Layers ``a_0 = x``, ``z_l = a_{l−1} W_l + b_l``, ``a_l = ReLU(z_l)`` for the hidden layers and
logits ``z_L``; the loss of a minibatch ``B`` is the mean cross-entropy

    ℓ(θ) = (1/|B|) Σ_{i∈B} [log Σ_k exp z_{L,ik} − z_{L,i y_i}],

whose gradient is back-propagated from ``∂ℓ/∂z_L = (softmax(z_L) − onehot(y)) / |B|`` through
``∂ℓ/∂W_l = a_{l−1}ᵀ δ_l``, ``∂ℓ/∂b_l = Σ_i δ_l``, ``δ_{l−1} = (δ_l W_lᵀ) ⊙ 1[z_{l−1} > 0]``.

All parameters live in one flat float64 vector (``W_1, b_1, W_2, b_2, …``, each ``W_l`` row-major
of shape ``(n_{l−1}, n_l)``) so that one fused optimizer step (:mod:`dyntools.optim.kernels`)
updates the whole network. :func:`train` runs a whole training in one compiled call; the NumPy
twins (:func:`loss_and_grad_np`, :func:`train_np`) do the same with ``@``, and the tests check
the gradient against central finite differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.engine import rng, streams
from dyntools.optim.kernels import fused_step, init_state


@dataclass(frozen=True)
class MLPClassifier:
    """Architecture ``sizes = (d_in, h_1, …, h_m, n_classes)``."""

    sizes: tuple[int, ...]

    def __post_init__(self):
        if len(self.sizes) < 2:
            raise ValueError("Invalid sizes: need at least an input and an output width")
        for s in self.sizes:
            validation.count("layer width", s)
        if self.sizes[-1] < 2:
            raise ValueError(f"Invalid n_classes: {self.sizes[-1]} (must be >= 2)")

    @classmethod
    def make(cls, d_in: int, hidden=(32, 32, 32), n_classes: int = 2) -> MLPClassifier:
        return cls((int(d_in), *(int(h) for h in hidden), int(n_classes)))

    @property
    def sizes_array(self) -> np.ndarray:
        return np.asarray(self.sizes, dtype=np.int64)

    @property
    def offsets(self) -> np.ndarray:
        """Start of ``W_l`` in the flat vector, for each layer, plus the total length."""
        offs = [0]
        for a, b in zip(self.sizes[:-1], self.sizes[1:]):
            offs.append(offs[-1] + a * b + b)
        return np.asarray(offs, dtype=np.int64)

    @property
    def n_params(self) -> int:
        return int(self.offsets[-1])

    def unflatten(self, theta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        out, offs = [], self.offsets
        for l, (a, b) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            o = offs[l]
            out.append((theta[o:o + a * b].reshape(a, b), theta[o + a * b:o + a * b + b]))
        return out

    def init_params(self, seed: int, *key: int) -> np.ndarray:
        """PyTorch's ``nn.Linear`` default: ``W, b ~ U(−1/√fan_in, 1/√fan_in)``, from the
        xoshiro stream of ``(seed, *key)`` (so a sweep cell owns its initialization)."""
        state = streams.path_states(seed, 1, *key)
        bounds = np.repeat([1.0 / np.sqrt(a) for a in self.sizes[:-1]],
                           [a * b + b for a, b in zip(self.sizes[:-1], self.sizes[1:])])
        theta = _uniform_pm(state, self.n_params) * bounds
        return theta


@njit(cache=True)
def _uniform_pm(state, n):
    """``n`` draws ``2u − 1`` (uniform on [−1, 1)) from row 0 of the xoshiro ``state``."""
    out = np.empty(n)
    for i in range(n):
        out[i] = 2.0 * rng.uniform01(state, 0) - 1.0
    return out


def _uniform_pm_np(state: np.ndarray, n: int) -> np.ndarray:
    """NumPy twin of :func:`_uniform_pm`."""
    return np.array([2.0 * rng.uniform01_np(state[:1])[0] - 1.0 for _ in range(n)])


# ------------------------------------------------------------------------- minibatch order

@njit(cache=True)
def epoch_batches(state, n, steps, batch):
    """``int64[steps, batch]`` sample indices: consecutive chunks of a stream of random
    permutations of ``0..n−1`` (Fisher–Yates with :func:`dyntools.engine.rng.randbelow`), so every
    epoch sees every point once."""
    out = np.empty((steps, batch), dtype=np.int64)
    perm = np.arange(n)
    pos = n
    for t in range(steps):
        for b in range(batch):
            if pos == n:
                for i in range(n - 1, 0, -1):
                    j = rng.randbelow(state, 0, i + 1)
                    tmp = perm[i]
                    perm[i] = perm[j]
                    perm[j] = tmp
                pos = 0
            out[t, b] = perm[pos]
            pos += 1
    return out


def epoch_batches_np(state: np.ndarray, n: int, steps: int, batch: int) -> np.ndarray:
    """NumPy twin of :func:`epoch_batches` (same stream, one state row)."""
    out = np.empty((steps, batch), dtype=np.int64)
    perm = np.arange(n)
    stream = []
    while len(stream) < steps * batch:
        for i in range(n - 1, 0, -1):
            j = int(rng.randbelow_np(state[:1], i + 1)[0])
            perm[i], perm[j] = perm[j], perm[i]
        stream.extend(perm.tolist())
    out[:] = np.asarray(stream[:steps * batch]).reshape(steps, batch)
    return out


# ------------------------------------------------------------------------- compiled forward/backward
#
# Every product of the forward and backward pass is one call of :func:`_gemm`,
# ``out[i, :n] += Σ_g C[i, g] · In[g, :n]``, on feature-major ("transposed") activations
# ``Aᵀ_l`` of shape ``(n_l, B)``, so that the innermost loop runs over a contiguous row of length
# ``B`` (the minibatch) or ``n_l`` and the compiler vectorizes it. The contraction index ``g`` is
# consumed eight at a time: each pass over ``out[i, :]`` loads and stores the accumulator once per
# eight rows of ``In`` (instead of once per row), which is what keeps the loop near the machine's
# multiply–add rate. The only change to the rounding is this fixed grouping
# ``((c₀x₀ + c₁x₁) + (c₂x₂ + c₃x₃)) + ((c₄x₄ + c₅x₅) + (c₆x₆ + c₇x₇))`` — written in the code, not
# left to fast-math — so results are deterministic and equal the NumPy twin to ~1e-15 relative.


@njit(cache=True, error_model="numpy")
def _gemm(out, C, In, m, kdim, n):
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


@njit(cache=True)
def make_workspace(sizes, batch):
    """Scratch arrays for :func:`forward_backward` with minibatches of up to ``batch`` rows:
    ``(AT, DT, Dr, Ar, G)`` — the activations ``Aᵀ_l`` (``(L+1, maxw+1, batch)``; row ``n_l`` of
    ``Aᵀ_l`` is set to ones, the input that multiplies the bias; ``Aᵀ_L`` holds the logits ``z_Lᵀ``),
    two ``δᵀ`` buffers (stacked in ``DT``), ``δ`` and ``[a, 1]`` row-major, and a gradient block."""
    L = sizes.shape[0] - 1
    maxw = sizes.max()
    return (np.zeros((L + 1, maxw + 1, batch)), np.zeros((2, maxw, batch)), np.zeros((batch, maxw)),
            np.zeros((batch, maxw + 1)), np.zeros((maxw, maxw + 1)))


@njit(cache=True, error_model="numpy")
def forward_backward(theta, sizes, offs, X, y, idx, grad, ws):
    """Mean cross-entropy of the rows ``idx`` and (if ``grad.size``) its gradient into ``grad``.

    ``ws`` comes from :func:`make_workspace`; afterwards ``ws[0][L, :K, :B]`` holds the logits
    ``z_Lᵀ``. A layer's parameters ``W_l, b_l`` are stored consecutively, i.e. as the
    ``(n_{l−1}+1) × n_l`` matrix ``Ŵ_l = [W_l; b_l]``, and with ``â = [a, 1]``:
    forward ``z_lᵀ = Ŵ_lᵀ â_{l−1}ᵀ``; backward ``∂ℓ/∂Ŵ_l = â_{l−1}ᵀ δ_l`` (rows ``k ≤ n_{l−1}``:
    ``∂ℓ/∂W_l`` and, from the ones row, ``∂ℓ/∂b_l = 1ᵀδ_l``; computed as its transpose ``δ_lᵀ â_{l−1}``
    when that has the longer inner loop) and ``δ_{l−1}ᵀ = (W_l δ_lᵀ) ⊙ 1[z_{l−1}ᵀ > 0]``,
    each one :func:`_gemm`.
    """
    AT, DT, Dr, Ar, G = ws
    L = sizes.shape[0] - 1
    B = idx.shape[0]
    for b in range(B):
        for k in range(sizes[0]):
            AT[0, k, b] = X[idx[b], k]
    for l in range(L):
        nin, nout = sizes[l], sizes[l + 1]
        o = offs[l]
        Wh = theta[o:o + (nin + 1) * nout].reshape((nin + 1, nout))
        A = AT[l]
        for b in range(B):
            A[nin, b] = 1.0
        Z = AT[l + 1]
        for j in range(nout):
            for b in range(B):
                Z[j, b] = 0.0
        _gemm(Z, Wh.T, A, nout, nin + 1, B)       # coefficients C[j, k] = Ŵ[k, j]
        if l < L - 1:
            for j in range(nout):
                for b in range(B):
                    z = Z[j, b]
                    Z[j, b] = z if z > 0.0 else 0.0
    K = sizes[L]
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
        nin, nout = sizes[l], sizes[l + 1]
        o = offs[l]
        delta = DT[cur]
        A = AT[l]
        if nout >= nin:                           # ∂ℓ/∂Ŵ_l = â_{l−1}ᵀ δ_l, rows of length n_out
            for j in range(nout):
                for b in range(B):
                    Dr[b, j] = delta[j, b]
            gW = grad[o:o + (nin + 1) * nout].reshape((nin + 1, nout))
            for k in range(nin + 1):
                for j in range(nout):
                    gW[k, j] = 0.0
            _gemm(gW, A, Dr, nin + 1, B, nout)
        else:                                     # its transpose δ_lᵀ â_{l−1}, rows of length n_in + 1
            for k in range(nin + 1):
                for b in range(B):
                    Ar[b, k] = A[k, b]
            G[:nout, :nin + 1] = 0.0
            _gemm(G, delta, Ar, nout, B, nin + 1)
            for k in range(nin + 1):
                for j in range(nout):
                    grad[o + k * nout + j] = G[j, k]
        if l > 0:
            W = theta[o:o + nin * nout].reshape((nin, nout))
            nxt = DT[1 - cur]
            for k in range(nin):
                for b in range(B):
                    nxt[k, b] = 0.0
            _gemm(nxt, W, delta, nin, nout, B)
            for k in range(nin):
                for b in range(B):
                    nxt[k, b] = nxt[k, b] if A[k, b] > 0.0 else 0.0
            cur = 1 - cur
    return loss


def workspaces(model: MLPClassifier, batch: int):
    """:func:`make_workspace` for ``model``."""
    return make_workspace(model.sizes_array, int(batch))


def loss_and_grad(model: MLPClassifier, theta, X, y, idx=None):
    """Compiled minibatch loss and gradient (all rows when ``idx`` is None)."""
    idx = np.arange(len(y)) if idx is None else np.asarray(idx, dtype=np.int64)
    grad = np.zeros(model.n_params)
    loss = forward_backward(theta, model.sizes_array, model.offsets, X, y, idx, grad,
                            workspaces(model, len(idx)))
    return loss, grad


def evaluate(theta, sizes, offs, X, y, chunk: int = 256):
    """Mean cross-entropy and accuracy on the whole set ``(X, y)``: the compiled forward pass on
    chunks of ``chunk`` rows (no extra kernel to compile), the arg-max read from its logits."""
    n, L = X.shape[0], len(sizes) - 1
    chunk = min(chunk, n)
    ws = make_workspace(np.asarray(sizes, dtype=np.int64), chunk)
    empty = np.zeros(0)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    total, correct = 0.0, 0
    for start in range(0, n, chunk):
        idx = np.arange(start, min(n, start + chunk))
        total += len(idx) * forward_backward(theta, sizes, offs, X, y, idx, empty, ws)
        logits = ws[0][L, :sizes[L], :len(idx)]
        correct += int(np.sum(np.argmax(logits, axis=0) == y[idx]))
    return total / n, correct / n


@njit(cache=True, error_model="numpy")
def train(theta, sizes, offs, X, y, batches, precond, hp, lr, mults, record_every, curve, state, t0):
    """Train in place: step ``t`` uses rows ``batches[t]`` and learning rate ``lr·mults[t]``
    (``mults`` of length 1 = constant); the optimizer state ``state`` (:func:`init_state`) has
    already taken ``t0`` steps, so training can go on in chunks. ``curve[r]`` gets the mean
    minibatch loss of steps ``[r·record_every, (r+1)·record_every)``. Returns the first step whose
    loss or update is not finite (``−1`` when none: the run did not diverge)."""
    steps, B = batches.shape
    P = theta.shape[0]
    ws = make_workspace(sizes, B)
    grad = np.zeros(P)
    acc = 0.0
    for t in range(steps):
        loss = forward_backward(theta, sizes, offs, X, y, batches[t], grad, ws)
        if not np.isfinite(loss):
            return t
        acc += loss
        if (t + 1) % record_every == 0:
            curve[(t + 1) // record_every - 1] = acc / record_every
            acc = 0.0
        m = mults[t] if mults.shape[0] > 1 else mults[0]
        fused_step(precond, hp, theta, grad, state, t0 + t + 1, lr * m)
        finite = True
        for i in range(P):                        # branch-free, so that it vectorizes
            finite &= np.isfinite(theta[i])
        if not finite:
            return t
    return -1


# ------------------------------------------------------------------------- NumPy twins

def loss_and_grad_np(model: MLPClassifier, theta, X, y):
    """Readable NumPy twin of :func:`forward_backward` (matrix products with ``@``)."""
    layers = model.unflatten(theta)
    acts = [X]
    for l, (W, b) in enumerate(layers):
        z = acts[-1] @ W + b
        acts.append(np.maximum(z, 0.0) if l < len(layers) - 1 else z)
    z = acts[-1]
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    n = len(y)
    loss = float(np.mean(lse - z[np.arange(n), y]))
    delta = np.exp(z - lse[:, None]) / n
    delta[np.arange(n), y] -= 1.0 / n
    grads = []
    for l in range(len(layers) - 1, -1, -1):
        W, _ = layers[l]
        grads.append((acts[l].T @ delta, delta.sum(axis=0)))
        if l > 0:
            delta = (delta @ W.T) * (acts[l] > 0)
    flat = np.concatenate([np.concatenate([gW.ravel(), gb]) for gW, gb in reversed(grads)])
    return loss, flat


def train_np(model: MLPClassifier, theta, X, y, batches, opt, mults, record_every: int = 1):
    """NumPy twin of :func:`train` using the readable optimizer chain."""
    theta = np.array(theta, dtype=np.float64)
    state = opt.init(theta)
    steps = batches.shape[0]
    curve = np.zeros(steps // record_every)
    acc = 0.0
    mults = np.broadcast_to(np.asarray(mults, dtype=np.float64), (steps,)) if np.size(mults) == 1 else mults
    for t in range(steps):
        loss, g = loss_and_grad_np(model, theta, X[batches[t]], y[batches[t]])
        if not np.isfinite(loss):
            return theta, curve, t
        acc += loss
        if (t + 1) % record_every == 0:
            curve[(t + 1) // record_every - 1] = acc / record_every
            acc = 0.0
        theta, state = opt.step(theta, g, state, t + 1, float(mults[t]))
        if not np.all(np.isfinite(theta)):
            return theta, curve, t
    return theta, curve, -1


def train_compiled(model: MLPClassifier, theta0, X, y, batches, opt, mults=None, record_every: int = 1,
                   plateau=None, plateau_every: int | None = None):
    """Run :func:`train` on a copy of ``theta0`` with optimizer ``opt``; returns
    ``(theta, curve, diverged_step)`` like :func:`train_np`.

    With a :class:`~dyntools.optim.schedules.ReduceLROnPlateau` ``plateau``, training runs in
    chunks of ``plateau_every`` steps (default: one epoch) and the schedule is stepped on each
    chunk's mean minibatch loss; its multiplier then scales ``mults`` for the next chunk.
    """
    theta = np.array(theta0, dtype=np.float64)
    steps = batches.shape[0]
    mults = np.ones(1) if mults is None else np.ascontiguousarray(mults, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    batches = np.ascontiguousarray(batches, dtype=np.int64)
    state = init_state(opt, theta.size)
    curve = np.zeros(steps // record_every)
    sizes, offs = model.sizes_array, model.offsets
    if plateau is None:
        div = train(theta, sizes, offs, X, y, batches, opt.precond, opt.hparams, opt.lr, mults, record_every,
                    curve, state, 0)
        return theta, curve, int(div)
    chunk = validation.count("plateau_every", plateau_every or max(1, len(y) // batches.shape[1]))
    full = np.broadcast_to(mults, (steps,)) if mults.size == 1 else mults
    plateau.reset()
    factor, losses = 1.0, np.zeros(steps)
    for start in range(0, steps, chunk):
        stop = min(steps, start + chunk)
        seg = np.zeros(stop - start)
        div = train(theta, sizes, offs, X, y, batches[start:stop], opt.precond, opt.hparams, opt.lr,
                    np.ascontiguousarray(full[start:stop] * factor), 1, seg, state, start)
        if div >= 0:
            return theta, curve, start + int(div)
        losses[start:stop] = seg
        factor = plateau.step(float(seg.mean()))
    n_rec = steps // record_every
    curve[:] = losses[:n_rec * record_every].reshape(n_rec, record_every).mean(axis=1)
    return theta, curve, -1


__all__ = ["MLPClassifier", "epoch_batches", "epoch_batches_np", "evaluate", "forward_backward",
           "init_state", "loss_and_grad", "loss_and_grad_np", "train", "train_compiled", "train_np"]
