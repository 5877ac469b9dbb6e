"""Fully connected ReLU networks for regression (seed 004's simple-network experiments).

A network with ``L`` layers maps ``x ∈ R^d`` to a scalar through hidden widths
``m_1, …, m_{L−1}``:

    a_0 = x,    z_l = W_l a_{l−1} + b_l,    a_l = σ(z_l) = max(z_l, 0)   (l = 1, …, L−1),
    h_θ(x) = W_L a_{L−1} + b_L,

with ``W_l ∈ R^{m_l × m_{l−1}}`` (``m_0 = d``, ``m_L = 1``) and each bias ``b_l`` optional.
The two-layer network of the paper is ``h(x) = ⟨a, σ(Wx + b)⟩ (+ c)``.

All parameters live in one flat vector ``θ ∈ R^p`` (layer by layer: ``W_l`` row-major, then
``b_l`` if present); :class:`Layout` holds the offsets, so compiled kernels take plain arrays.

Backward pass (per example, the gradient of the *output*, i.e. one row of the Jacobian
``φ_θ(X) = [∇_θ h_θ(x_i)]_i``):

    δ_L = 1,    ∂h/∂W_l = δ_l a_{l−1}ᵀ,    ∂h/∂b_l = δ_l,    δ_{l−1} = (W_lᵀ δ_l) ⊙ 1[z_{l−1} > 0],

(ReLU's derivative is taken as 0 at 0, PyTorch's convention). The training loss is the
paper's mean squared error ``L(θ) = (1/n) Σ_i (h_θ(x_i) − y_i)²`` (no ½), whose gradient is
``(2/n) Σ_i (h_θ(x_i) − y_i) ∇_θ h_θ(x_i)``.

Initializations (Andriushchenko et al. 2023):

* :func:`init_gaussian`: ``W_l ~ s_l N(0, 1)`` entrywise with one scale per layer, biases 0;
* :func:`init_regression_1d`: the 1-D regression init — first-layer weights ``±2.5 s`` (random
  signs), first-layer biases ``2.5 s N(0,1)``, second layer ``4 s N(0,1)``.

Compiled kernels (numba) and their NumPy twins: :func:`forward_backward` / :func:`example_grad_np`
(one example), :func:`jacobian` / :func:`jacobian_np`, :func:`predict` / :func:`predict_np`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.engine import streams

# ------------------------------------------------------------------------------------------ layout

@dataclass(frozen=True)
class Layout:
    """Shapes and flat offsets of a fully connected network.

    widths : (d, m_1, …, m_{L−1}, 1)
    biases : one bool per layer (L of them)
    """

    widths: tuple[int, ...]
    biases: tuple[bool, ...]

    def __post_init__(self):
        if len(self.widths) < 2:
            raise ValueError("Invalid widths: need at least an input and an output width")
        for i, w in enumerate(self.widths):
            name = "input dimension d" if i == 0 else ("output width" if i == len(self.widths) - 1
                                                       else f"hidden width m_{i}")
            validation.count(name, w)
        if self.widths[-1] != 1:
            raise ValueError(f"Invalid output width: {self.widths[-1]} (regression networks have one output)")
        if len(self.biases) != len(self.widths) - 1:
            raise ValueError(f"Invalid biases: need one flag per layer ({len(self.widths) - 1}), "
                             f"got {len(self.biases)}")

    @classmethod
    def mlp(cls, d: int, hidden, *, biases: bool | tuple[bool, ...] = True) -> Layout:
        """``d`` inputs, hidden widths ``hidden`` (a list), one output."""
        hidden = tuple(int(h) if isinstance(h, (int, np.integer)) else h for h in hidden)
        for i, h in enumerate(hidden):
            validation.count(f"hidden width m_{i + 1}", h)
        widths = (validation.count("input dimension d", d), *hidden, 1)
        flags = (bool(biases),) * (len(widths) - 1) if isinstance(biases, bool) else tuple(map(bool, biases))
        return cls(widths, flags)

    @classmethod
    def two_layer(cls, d: int, m: int, *, hidden_bias: bool = False, output_bias: bool = False) -> Layout:
        """``h(x) = ⟨a, σ(Wx + b)⟩ + c`` with ``b``/``c`` present as asked."""
        return cls((validation.count("input dimension d", d), validation.count("hidden width m", m), 1),
                   (bool(hidden_bias), bool(output_bias)))

    @property
    def n_layers(self) -> int:
        return len(self.widths) - 1

    @property
    def offsets(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(w_off[L], b_off[L] with −1 for no bias, p)."""
        w_off = np.empty(self.n_layers, dtype=np.int64)
        b_off = np.full(self.n_layers, -1, dtype=np.int64)
        pos = 0
        for l in range(self.n_layers):
            w_off[l] = pos
            pos += self.widths[l + 1] * self.widths[l]
            if self.biases[l]:
                b_off[l] = pos
                pos += self.widths[l + 1]
        return w_off, b_off, pos

    @property
    def n_params(self) -> int:
        return self.offsets[2]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(widths, w_off, b_off)`` as int64 arrays for the kernels."""
        w_off, b_off, _ = self.offsets
        return np.asarray(self.widths, dtype=np.int64), w_off, b_off

    def unpack(self, theta) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Views ``[(W_l, b_l or None)]`` into the flat vector (or a stack ``(..., p)``)."""
        theta = np.asarray(theta)
        w_off, b_off, p = self.offsets
        if theta.shape[-1] != p:
            raise ValueError(f"Invalid theta: last dimension {theta.shape[-1]} != number of parameters {p}")
        lead = theta.shape[:-1]
        out = []
        for l in range(self.n_layers):
            rows, cols = self.widths[l + 1], self.widths[l]
            W = theta[..., w_off[l]:w_off[l] + rows * cols].reshape(*lead, rows, cols)
            b = theta[..., b_off[l]:b_off[l] + rows] if b_off[l] >= 0 else None
            out.append((W, b))
        return out

    def pack(self, layers) -> np.ndarray:
        """Inverse of :meth:`unpack` for one network: ``[(W_l, b_l or None)]`` → θ."""
        w_off, b_off, p = self.offsets
        theta = np.zeros(p)
        for l, (W, b) in enumerate(layers):
            W = np.asarray(W, dtype=np.float64)
            if W.shape != (self.widths[l + 1], self.widths[l]):
                raise ValueError(f"Invalid W_{l + 1}: shape {W.shape}, expected "
                                 f"{(self.widths[l + 1], self.widths[l])}")
            theta[w_off[l]:w_off[l] + W.size] = W.ravel()
            if b_off[l] >= 0:
                theta[b_off[l]:b_off[l] + self.widths[l + 1]] = 0.0 if b is None else np.asarray(b, float)
            elif b is not None and np.any(np.asarray(b) != 0):
                raise ValueError(f"Invalid b_{l + 1}: layer {l + 1} has no bias")
        return theta


# ----------------------------------------------------------------------------------- initializations

_INIT_KEY = streams.KEYS["mlp.init"]


def init_gaussian(layout: Layout, scales, *, seed: int = 0, key: tuple[int, ...] = ()) -> np.ndarray:
    """``W_l = s_l · N(0, 1)`` entrywise (one scale per layer; a single number is used for all
    layers), biases 0. Returns θ."""
    scales = np.broadcast_to(np.asarray(scales, dtype=np.float64), (layout.n_layers,))
    for l, s in enumerate(scales):
        validation.non_negative(f"init scale of layer {l + 1}", float(s))
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, _INIT_KEY, *key)))
    layers = []
    for l in range(layout.n_layers):
        W = scales[l] * rng.standard_normal((layout.widths[l + 1], layout.widths[l]))
        layers.append((W, None))
    return layout.pack(layers)


def init_regression_1d(layout: Layout, scale: float, *, seed: int = 0,
                       key: tuple[int, ...] = ()) -> np.ndarray:
    """The 1-D regression init: ``W_1 = ±2.5 s`` (fair random signs), ``b_1 = 2.5 s N(0,1)``,
    ``W_2 = 4 s N(0,1)``, output bias 0. Needs a two-layer network on d = 1 with a hidden bias."""
    scale = validation.non_negative("init scale", scale)
    if layout.n_layers != 2 or layout.widths[0] != 1 or not layout.biases[0]:
        raise ValueError("Invalid layout: the 1-D regression init needs a two-layer network with d = 1 "
                         "and first-layer biases")
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, streams.KEYS["mlp.init-1d"], *key)))
    m = layout.widths[1]
    W1 = 2.5 * scale * rng.choice(np.array([-1.0, 1.0]), size=(m, 1))
    b1 = 2.5 * scale * rng.standard_normal(m)
    W2 = 4.0 * scale * rng.standard_normal((1, m))
    return layout.pack([(W1, b1), (W2, None)])


# ----------------------------------------------------------------------------------- compiled kernels

@njit(cache=True)
def forward(theta, x, widths, w_off, b_off, pre, act):
    """Forward pass of one example, filling ``pre[l]`` = z_l and ``act[l]`` = a_l; returns h_θ(x).

    Buffers ``pre``, ``act``: float64[L+1, max width] (reused across calls)."""
    n_layers = widths.shape[0] - 1
    for j in range(widths[0]):
        act[0, j] = x[j]
    for l in range(n_layers):
        rows = widths[l + 1]
        cols = widths[l]
        wo = w_off[l]
        bo = b_off[l]
        for i in range(rows):
            s = 0.0
            base = wo + i * cols
            for j in range(cols):
                s += theta[base + j] * act[l, j]
            if bo >= 0:
                s += theta[bo + i]
            pre[l + 1, i] = s
            if l < n_layers - 1:
                act[l + 1, i] = s if s > 0.0 else 0.0
            else:
                act[l + 1, i] = s
    return act[n_layers, 0]


@njit(cache=True)
def backward(theta, widths, w_off, b_off, pre, act, delta, grad, coef, accumulate):
    """After :func:`forward` on the same example: ``grad (+)= coef · ∇_θ h_θ(x)``.

    ``delta``: float64[2, max width] buffer. Without ``accumulate``, ``grad`` is overwritten (the
    entries of absent biases are left untouched)."""
    n_layers = widths.shape[0] - 1
    cur = 0
    delta[cur, 0] = coef
    for l in range(n_layers - 1, -1, -1):
        rows = widths[l + 1]
        cols = widths[l]
        wo = w_off[l]
        bo = b_off[l]
        nxt = 1 - cur
        if l > 0:
            for j in range(cols):
                delta[nxt, j] = 0.0
        for i in range(rows):
            di = delta[cur, i]
            base = wo + i * cols
            if accumulate:
                for j in range(cols):
                    grad[base + j] += di * act[l, j]
                if bo >= 0:
                    grad[bo + i] += di
            else:
                for j in range(cols):
                    grad[base + j] = di * act[l, j]
                if bo >= 0:
                    grad[bo + i] = di
            if l > 0 and di != 0.0:
                for j in range(cols):
                    delta[nxt, j] += theta[base + j] * di
        if l > 0:
            for j in range(cols):
                if not pre[l, j] > 0.0:
                    delta[nxt, j] = 0.0
        cur = nxt


@njit(cache=True)
def forward_backward(theta, x, widths, w_off, b_off, pre, act, delta, grad, coef, accumulate):
    """One example: :func:`forward` then :func:`backward`; returns ``h_θ(x)``."""
    out = forward(theta, x, widths, w_off, b_off, pre, act)
    backward(theta, widths, w_off, b_off, pre, act, delta, grad, coef, accumulate)
    return out


@njit(cache=True)
def _buffers(widths):
    maxw = 1
    for w in widths:
        if w > maxw:
            maxw = w
    L = widths.shape[0]
    return np.zeros((L, maxw)), np.zeros((L, maxw)), np.zeros((2, maxw))


@njit(cache=True)
def predict(theta, X, widths, w_off, b_off):
    """``h_θ(x_i)`` for every row of ``X`` (n, d)."""
    pre, act, _ = _buffers(widths)
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = forward(theta, X[i], widths, w_off, b_off, pre, act)
    return out


@njit(cache=True)
def jacobian(theta, X, widths, w_off, b_off):
    """``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` (n, p): per-example parameter gradients of the output."""
    pre, act, delta = _buffers(widths)
    p = theta.shape[0]
    J = np.zeros((X.shape[0], p))
    for i in range(X.shape[0]):
        forward_backward(theta, X[i], widths, w_off, b_off, pre, act, delta, J[i], 1.0, False)
    return J


# ----------------------------------------------------------------------------------- NumPy twins

def forward_np(layout: Layout, theta, X) -> tuple[np.ndarray, list[np.ndarray]]:
    """Vectorized forward pass. ``theta`` is (p,) or a stack (k, p); returns ``h`` ((n,) or (k, n))
    and the hidden activations ``[a_1, …, a_{L−1}]`` (each (n, m_l) or (k, n, m_l))."""
    X = np.asarray(X, dtype=np.float64)
    a = X
    hidden = []
    layers = layout.unpack(theta)
    for l, (W, b) in enumerate(layers):
        z = a @ np.swapaxes(W, -1, -2)
        if b is not None:
            z = z + b[..., None, :]
        if l < len(layers) - 1:
            a = np.maximum(z, 0.0)
            hidden.append(a)
        else:
            a = z
    return a[..., 0], hidden


def predict_np(layout: Layout, theta, X) -> np.ndarray:
    """NumPy twin of :func:`predict` (also accepts a stack of parameter vectors)."""
    return forward_np(layout, theta, X)[0]


def example_grad_np(layout: Layout, theta, x) -> tuple[float, np.ndarray]:
    """NumPy twin of :func:`forward_backward` for one example: ``(h_θ(x), ∇_θ h_θ(x))``."""
    layers = layout.unpack(np.asarray(theta, dtype=np.float64))
    w_off, b_off, p = layout.offsets
    acts, pres = [np.asarray(x, dtype=np.float64)], [None]
    for l, (W, b) in enumerate(layers):
        z = W @ acts[-1] + (b if b is not None else 0.0)
        pres.append(z)
        acts.append(np.maximum(z, 0.0) if l < len(layers) - 1 else z)
    grad = np.zeros(p)
    delta = np.ones(1)
    for l in range(len(layers) - 1, -1, -1):
        W, _ = layers[l]
        grad[w_off[l]:w_off[l] + W.size] = np.outer(delta, acts[l]).ravel()
        if b_off[l] >= 0:
            grad[b_off[l]:b_off[l] + W.shape[0]] = delta
        if l > 0:
            delta = (W.T @ delta) * (pres[l] > 0.0)
    return float(acts[-1][0]), grad


def jacobian_np(layout: Layout, theta, X) -> np.ndarray:
    """NumPy twin of :func:`jacobian`."""
    X = np.asarray(X, dtype=np.float64)
    if not len(X):
        return np.zeros((0, layout.n_params))
    return np.stack([example_grad_np(layout, theta, x)[1] for x in X])


def jacobian_fd(layout: Layout, theta, X, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of ``h_θ(X)`` in θ (for tests): (n, p)."""
    theta = np.asarray(theta, dtype=np.float64)
    J = np.empty((len(X), theta.size))
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = eps
        J[:, k] = (predict_np(layout, theta + e, X) - predict_np(layout, theta - e, X)) / (2 * eps)
    return J


def mse(layout: Layout, theta, X, y) -> np.ndarray:
    """``(1/n) Σ (h_θ(x_i) − y_i)²`` for θ (p,) or a stack (k, p)."""
    r = predict_np(layout, theta, X) - np.asarray(y, dtype=np.float64)
    return np.mean(r * r, axis=-1)
