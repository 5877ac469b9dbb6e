"""The multilayer perceptron: one ReLU network for regression and for classification.

Widths ``(d, m_1, …, m_{L−1}, K)`` give ``L`` layers

    a_0 = x,    z_l = W_l a_{l−1} + b_l,    a_l = σ(z_l) = max(z_l, 0)   (l = 1, …, L−1),
    h_θ(x) = z_L = W_L a_{L−1} + b_L ∈ R^K,

with ``W_l ∈ R^{m_l × m_{l−1}}`` (``m_0 = d``, ``m_L = K``) and each bias ``b_l`` optional.

**Weight layout** (PyTorch's ``nn.Linear``): every ``W_l`` is stored *out × in*, row-major, followed
by ``b_l`` when layer ``l`` has one; the layers follow each other in one flat vector ``θ ∈ R^p``
(:meth:`MLP.unpack` / :meth:`MLP.pack` give the views). A row of ``W_l`` is the incoming weights of
one neuron, which is what the per-example kernel walks and what the matrix-product kernel
(:mod:`dyntools.models.mlp_gemm`) reads, transposed into a scratch block, in the forward pass.

**Heads.**

* ``"regression"`` (``K = 1``): the paper's mean squared error without ½,
  ``L(θ) = (1/B) Σ_{i∈B} (h_θ(x_i) − y_i − δξ_i)²`` (label noise ``δξ`` perturbs the targets),
  gradient ``(2/B) Σ_i r_i ∇_θ h_θ(x_i)``;
* ``"cross-entropy"`` (``K ≥ 2`` classes, integer labels): the mean softmax cross-entropy
  ``L(θ) = (1/B) Σ_i [log Σ_k exp z_{L,ik} − z_{L,i y_i}]``, back-propagated from
  ``∂L/∂z_L = (softmax(z_L) − onehot(y)) / B``.

Back-propagation: ``∂/∂W_l = δ_l a_{l−1}ᵀ``, ``∂/∂b_l = δ_l``, ``δ_{l−1} = (W_lᵀ δ_l) ⊙ 1[z_{l−1} > 0]``
(ReLU's derivative is 0 at 0, PyTorch's convention).

**Kernels** (the model protocol, :mod:`dyntools.models.base`). The regression head's compiled
``loss_grad`` walks the batch one example at a time (forward, then the backward pass accumulating
``(2 r_i / B) ∇_θ h``): the right shape for the batch-1 SGD of the paper. The cross-entropy head's
does every product of the forward and backward pass as one matrix product of fused multiply–adds
(:mod:`dyntools.models.mlp_gemm`) on batch-major activations: the right shape for batches of
tens of examples. Each has a NumPy twin (``@`` products); the tests hold them equal to ~1e-13.

**Divergence size** (:mod:`dyntools.engine.guard`): ``‖θ‖₁``, as for every model trained by
:func:`dyntools.train`; a path is stopped after the first update that makes it non-finite or
larger than the bound.

**Initializations** (:meth:`MLP.init`):

* ``"gaussian"``: ``W_l = s_l N(0, 1)`` entrywise (one scale per layer), biases 0, from a PCG64
  generator of the ``mlp.init`` stream;
* ``"regression-1d"``: the 1-D regression init of Andriushchenko et al. (2023) for a two-layer
  network on d = 1 with first-layer biases: ``W_1 = ±2.5 s`` (fair signs), ``b_1 = 2.5 s N(0, 1)``,
  ``W_2 = 4 s N(0, 1)``, from the ``mlp.init-1d`` stream;
* ``"uniform"``: PyTorch's ``nn.Linear`` default ``W_l, b_l ~ U(−1/√m_{l−1}, 1/√m_{l−1})``, drawn
  as ``2u − 1`` from the xoshiro256** stream (:mod:`dyntools.engine.rng`) of ``mlp.init``; layer by
  layer the draws fill ``W_lᵀ`` (in × out) row by row and then ``b_l`` (the order of the earlier
  classifier's in × out layout, kept so that its results reproduce).

The stream of seed index 0 is ``SeedSequence(seed, (KEY, *init_key))`` and that of seed index
``s > 0`` is ``(KEY, *init_key, s)`` (:mod:`dyntools.engine.streams`; ``"uniform"`` takes the xoshiro
state of its child 0, :func:`~dyntools.engine.streams.path_states`); a sweep gives each cell its own
``init_stream``/``init_key``.

**Precision** (``dtype``): ``"float64"`` (default) or ``"float32"``. :func:`dyntools.train` allocates
the parameters, data, optimizer state and the kernels' scratch in ``model.dtype``; the kernels are the
same source compiled for each precision (their scalar accumulators of the regression head and the
optimizer's scalar hyper-parameters stay float64), and results come back as float64 arrays holding the
float32 values. The float32 cross-entropy loop flushes subnormal numbers to zero
(:mod:`dyntools.dynamics.fast.mlp`). Full-data metrics (:meth:`MLP.evaluate`, :meth:`MLP.loss`) are
computed in float64 from the given θ.

**Dropout and batch norm** (``dropout=p``, ``batch_norm=True``): every hidden layer becomes
``Linear → BatchNorm1d → ReLU → Dropout`` with a training and an evaluation mode, γ and β appended to θ; the
network then runs on its own kernel (:mod:`dyntools.models.mlp_regularized`), its masks and running statistics
are the generic loop's step hooks (:meth:`MLP.hooks`), and the kernels above are not touched.

**Tuned loops** (:mod:`dyntools.dynamics.fast.mlp`, chosen by the trainer): with the compiled kernel,
the regression head with the ``distinct``/``full`` samplers runs a per-example loop with the kernel
inlined (plain SGD and the divergence guard fused into one pass), and the cross-entropy head in float32
runs the generic loop with subnormals flushed; both give the generic loop's bits where nothing is
subnormal (tests/test_mlp.py, tests/test_mlp_float32.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools import lowlevel, validation
from dyntools.engine import rng, streams
from dyntools.lowlevel import borrowed
from dyntools.models import mlp_gemm, mlp_regularized
from dyntools.models.base import HEADS, Hooks, Model, no_hook, no_hook_np

INITS = ("gaussian", "regression-1d", "uniform")
DTYPES = ("float64", "float32")


# ------------------------------------------------------------------------------------------ layout

def layout_arrays(widths, biases) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(widths, w_off, b_off, p)``: int64 widths, the start of each ``W_l`` and of each ``b_l``
    (−1 for a layer without bias) in θ, and the number of parameters."""
    L = len(widths) - 1
    w_off = np.empty(L, dtype=np.int64)
    b_off = np.full(L, -1, dtype=np.int64)
    pos = 0
    for l in range(L):
        w_off[l] = pos
        pos += widths[l + 1] * widths[l]
        if biases[l]:
            b_off[l] = pos
            pos += widths[l + 1]
    return np.asarray(widths, dtype=np.int64), w_off, b_off, pos


def kernel_iargs(widths: np.ndarray, w_off: np.ndarray, b_off: np.ndarray) -> np.ndarray:
    """The kernels' integer constants ``[L, widths (L+1), w_off (L), b_off (L), max width]``."""
    L = widths.shape[0] - 1
    return np.concatenate([[L], widths, w_off, b_off, [widths.max()]]).astype(np.int64)


@njit(inline="always")
def unpack_iargs(iargs):
    """``(L, widths, w_off, b_off, maxw)`` views of :func:`kernel_iargs`."""
    L = iargs[0]
    return (L, iargs[1:L + 2], iargs[L + 2:2 * L + 2], iargs[2 * L + 2:3 * L + 2], iargs[3 * L + 2])


# ------------------------------------------------------------------------- per-example kernels

@njit(cache=True)
def forward(theta, x, widths, w_off, b_off, pre, act):
    """Forward pass of one example, filling ``pre[l]`` = z_l and ``act[l]`` = a_l; returns the first
    output ``z_L[0]`` (``act[L, :K]`` holds all of them). Buffers: float64[L+1, max width]."""
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
    """After :func:`forward` on the same example: ``grad (+)= coef · ∇_θ h_θ(x)`` (first output).

    ``delta``: float64[2, max width]. Without ``accumulate`` the entries of ``grad`` are overwritten."""
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


@njit(inline="always")
def example_buffers(ws, n_layers, maxw):
    """``(pre, act, delta)`` views of a scratch array of :func:`example_ws_size` entries."""
    k = (n_layers + 1) * maxw
    return (ws[:k].reshape((n_layers + 1, maxw)), ws[k:2 * k].reshape((n_layers + 1, maxw)),
            ws[2 * k:2 * k + 2 * maxw].reshape((2, maxw)))


def example_ws_size(n_layers: int, maxw: int) -> int:
    return 2 * (n_layers + 1) * maxw + 2 * maxw


@njit(cache=True)
def loss_grad_regression(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Regression head: ``(1/b) Σ_q r_q²`` with ``r_q = h_θ(x_i) − y_i − noise_q`` (``i = idx[q]``)
    and its gradient ``Σ_q (2 r_q / b) ∇_θ h_θ(x_i)``, one example at a time."""
    L, widths, w_off, b_off, maxw = unpack_iargs(iargs)
    pre, act, delta = example_buffers(ws, L, maxw)
    for j in range(grad.shape[0]):
        grad[j] = 0.0
    tot = 0.0
    for q in range(b):
        i = idx[q]
        res = forward(theta, X[i], widths, w_off, b_off, pre, act) - y[i]
        if noise[q] != 0.0:
            res -= noise[q]
        tot += res * res
        backward(theta, widths, w_off, b_off, pre, act, delta, grad, 2.0 * res / b, True)
    return tot / b


@njit(cache=True, error_model="numpy", fastmath=mlp_gemm.FMA)
def loss_grad_cross_entropy(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Cross-entropy head: mean softmax cross-entropy of ``idx[:b]`` and, if ``grad.size``, its gradient, every
    product one matrix product (:func:`dyntools.models.mlp_gemm.forward_backward`, inlined: its flags are these);
    the logits are left in ``ws`` (:func:`dyntools.models.mlp_gemm.logits`)."""
    L, widths, w_off, b_off, maxw = unpack_iargs(iargs)
    return mlp_gemm.forward_backward_body(theta, widths, w_off, b_off, X, y, borrowed(idx)[:b], grad,
                                          mlp_gemm.views(borrowed(ws), L, maxw, b))


@njit(cache=True, error_model="numpy", fastmath=mlp_gemm.FMA)
def loss_grad_cross_entropy_sparse_inputs(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """:func:`loss_grad_cross_entropy` for inputs that are mostly zeros (``MLP(…, sparse_inputs=True)``: one-hot
    codes): a batch whose inputs have at most the fraction :data:`~dyntools.models.mlp_gemm.SPARSE_INPUT` nonzero
    runs its first layer's two products over those entries only
    (:func:`~dyntools.models.mlp_gemm.forward_backward_body_sparse_inputs`) — the same chains without their zero
    terms, so the same loss and gradient to the bit; other batches run as in :func:`loss_grad_cross_entropy`."""
    L, widths, w_off, b_off, maxw = unpack_iargs(iargs)
    return mlp_gemm.forward_backward_body_sparse_inputs(theta, widths, w_off, b_off, X, y, borrowed(idx)[:b], grad,
                                                        mlp_gemm.views(borrowed(ws), L, maxw, b))


@njit(cache=True)
def jacobian_kernel(theta, X, widths, w_off, b_off):
    """``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` (n, p) of the first output."""
    L = widths.shape[0] - 1
    maxw = widths.max()
    pre, act, delta = np.zeros((L + 1, maxw)), np.zeros((L + 1, maxw)), np.zeros((2, maxw))
    J = np.zeros((X.shape[0], theta.shape[0]))
    for i in range(X.shape[0]):
        forward(theta, X[i], widths, w_off, b_off, pre, act)
        backward(theta, widths, w_off, b_off, pre, act, delta, J[i], 1.0, False)
    return J


@njit(cache=True)
def predict_kernel(theta, X, widths, w_off, b_off):
    """``h_θ(x_i)`` (first output) for every row of ``X``, compiled."""
    L = widths.shape[0] - 1
    maxw = widths.max()
    pre, act = np.zeros((L + 1, maxw)), np.zeros((L + 1, maxw))
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = forward(theta, X[i], widths, w_off, b_off, pre, act)
    return out


# ------------------------------------------------------------------------------------ NumPy twins

def unpack(widths, w_off, b_off, theta) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Views ``[(W_l, b_l or None)]`` into θ (p,) or a stack (…, p)."""
    theta = np.asarray(theta)
    lead = theta.shape[:-1]
    out = []
    for l in range(len(widths) - 1):
        rows, cols = int(widths[l + 1]), int(widths[l])
        W = theta[..., w_off[l]:w_off[l] + rows * cols].reshape(*lead, rows, cols)
        out.append((W, theta[..., b_off[l]:b_off[l] + rows] if b_off[l] >= 0 else None))
    return out


def _twin_layers(iargs, theta):
    L = int(iargs[0])
    widths, w_off, b_off = iargs[1:L + 2], iargs[L + 2:2 * L + 2], iargs[2 * L + 2:3 * L + 2]
    return L, widths, w_off, b_off, unpack(widths, w_off, b_off, theta)


def _backprop_np(delta, layers, acts, gates, w_off, b_off, grad):
    """Write ∂L/∂θ into ``grad`` from the output error ``delta`` = ∂L/∂z_L (b, out), layer by layer down:
    ∂L/∂W_l = δ_lᵀ a_l, ∂L/∂b_l = Σ_rows δ_l, δ_{l-1} = (δ_l W_l) ⊙ [g_l > 0] with ``gates[l]`` = g_l the layer's
    pre-activation (or its ReLU, which is positive exactly where the pre-activation is)."""
    for l in range(len(layers) - 1, -1, -1):
        W, _ = layers[l]
        grad[w_off[l]:w_off[l] + W.size] = (delta.T @ acts[l]).ravel()
        if b_off[l] >= 0:
            grad[b_off[l]:b_off[l] + W.shape[0]] = delta.sum(axis=0)
        if l > 0:
            delta = (delta @ W) * (gates[l] > 0.0)


def loss_grad_regression_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad_regression`: the whole batch at once with ``@``."""
    L, widths, w_off, b_off, layers = _twin_layers(iargs, theta)
    i = np.asarray(idx[:b])
    acts, pres = [X[i]], [None]
    with np.errstate(over="ignore", invalid="ignore"):
        for l, (W, bias) in enumerate(layers):
            z = acts[-1] @ W.T + (bias if bias is not None else 0.0)
            pres.append(z)
            acts.append(np.maximum(z, 0.0) if l < L - 1 else z)
        res = acts[-1][:, 0] - y[i]
        if noise[:b].any():
            res = res - noise[:b]
        _backprop_np((2.0 * res / b)[:, None], layers, acts, pres, w_off, b_off, grad)
        return float(res @ res) / b


def loss_grad_cross_entropy_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad_cross_entropy` (readable: ``@`` products, log-sum-exp)."""
    L, widths, w_off, b_off, layers = _twin_layers(iargs, theta)
    i = np.asarray(idx[:b])
    labels = np.asarray(y[i], dtype=np.int64)
    acts = [X[i]]
    with np.errstate(over="ignore", invalid="ignore"):
        for l, (W, bias) in enumerate(layers):
            z = acts[-1] @ W.T + (bias if bias is not None else 0.0)
            acts.append(np.maximum(z, 0.0) if l < L - 1 else z)
        z = acts[-1]
        zmax = z.max(axis=1, keepdims=True)
        lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
        rows = np.arange(b)
        loss = float(np.mean(lse - z[rows, labels]))
        delta = np.exp(z - lse[:, None]) / b
        delta[rows, labels] -= 1.0 / b
        _backprop_np(delta, layers, acts, acts, w_off, b_off, grad)
    return loss


# ------------------------------------------------------------------------------------------ model

@njit(cache=True)
def _uniform_pm(state, n):
    """``n`` draws ``2u − 1`` (uniform on [−1, 1)) from row 0 of the xoshiro ``state``."""
    out = np.empty(n)
    for i in range(n):
        out[i] = 2.0 * rng.uniform01(state, 0) - 1.0
    return out


def uniform_pm_np(state: np.ndarray, n: int) -> np.ndarray:
    """NumPy twin of :func:`_uniform_pm`."""
    return np.array([2.0 * rng.uniform01_np(state[:1])[0] - 1.0 for _ in range(n)])


class MLP(Model):
    """A ReLU multilayer perceptron (see the module docstring for the math, layout and inits).

    Parameters
    ----------
    widths : (d, m_1, …, m_{L−1}, K)   layer widths; ``K = 1`` for the regression head
    biases : bool or one bool per layer
    head : "regression" | "cross-entropy"
    init : "gaussian" | "regression-1d" | "uniform"
    init_scales : float or one per layer   (``gaussian``: s_l; ``regression-1d``: s)
    init_stream, init_key : the stream purpose (default ``mlp.init-1d`` for ``regression-1d``, else
        ``mlp.init``) and extra key words of the initialization
    sampling_stream : the purpose of the trainer's sample and label-noise streams
    dtype : "float64" | "float32"   the precision :func:`dyntools.train` trains in: parameters, data,
        optimizer state and the kernels' scratch (see "Precision" in the module docstring)
    dropout : float in [0, 1)   inverted dropout after every hidden ReLU (0: none)
    batch_norm : bool   batch normalization between every hidden layer's product and its ReLU
        (``Linear → BatchNorm1d → ReLU → Dropout``, PyTorch's usual order; γ, β appended to θ)
    bn_momentum, bn_eps : PyTorch's ``BatchNorm1d`` momentum (0.1) and ε (1e-5)
    sparse_inputs : bool   the inputs are mostly zeros (one-hot codes; cross-entropy head without dropout or batch
        norm): the kernel :func:`loss_grad_cross_entropy_sparse_inputs`, whose first layer skips the zero inputs of
        a batch — the same bits as the dense kernel, in less time (the grokking MLP 46-128-23 on 370 one-hot pairs:
        0.52–0.54 → 0.34 ms per full-batch step, ``dyntools bench grokking-step``, AMD EPYC Zen 4)

    With dropout or batch norm the network is *regularized* (:mod:`dyntools.models.mlp_regularized`: its
    own kernel, float64 only; the plain kernels are untouched): it has a training mode (masks from the
    ``mlp.dropout`` stream, batch statistics) and an evaluation mode (no dropout, the running statistics
    of batch norm, given as ``running`` to :meth:`evaluate`, :meth:`predict`, :meth:`loss`);
    :func:`dyntools.train` runs it through the generic loop with its step hooks (:meth:`hooks`),
    which returns the running statistics.
    """

    name = "mlp"

    def __init__(self, widths, *, biases: bool | tuple = True, head: str = "regression", init: str = "gaussian",
                 init_scales=1.0, init_stream: str | None = None, init_key: tuple[int, ...] = (),
                 sampling_stream: str = "mlp.sampling", dtype: str = "float64", dropout: float = 0.0,
                 batch_norm: bool = False, bn_momentum: float = 0.1, bn_eps: float = 1e-5,
                 sparse_inputs: bool = False):
        widths = tuple(int(w) if isinstance(w, int | np.integer) else w for w in widths)
        if len(widths) < 2:
            raise ValueError("Invalid widths: need at least an input and an output width")
        for i, w in enumerate(widths):
            what = "input dimension d" if i == 0 else ("output width" if i == len(widths) - 1
                                                       else f"hidden width m_{i}")
            validation.count(what, w)
        self.head = validation.one_of("head", head, HEADS)
        if self.head == "regression" and widths[-1] != 1:
            raise ValueError(f"Invalid output width: {widths[-1]} (the regression head has one output)")
        if self.head == "cross-entropy" and widths[-1] < 2:
            raise ValueError(f"Invalid n_classes: {widths[-1]} (must be >= 2)")
        L = len(widths) - 1
        flags = (bool(biases),) * L if isinstance(biases, bool | np.bool_) else tuple(bool(b) for b in biases)
        if len(flags) != L:
            raise ValueError(f"Invalid biases: need one flag per layer ({L}), got {len(flags)}")
        self.widths, self.biases = widths, flags
        self.init_name = validation.one_of("init", init, INITS)
        scales = np.broadcast_to(np.asarray(init_scales, dtype=np.float64), (L,)).copy() \
            if np.ndim(init_scales) == 0 or len(init_scales) in (1, L) else None
        if scales is None:
            raise ValueError(f"Invalid init_scales: need one scale or one per layer ({L})")
        for l, s in enumerate(scales):
            validation.non_negative(f"init scale of layer {l + 1}", float(s))
        self.init_scales = scales
        if self.init_name == "regression-1d" and (L != 2 or widths[0] != 1 or not flags[0]):
            raise ValueError("Invalid init: the 1-D regression init needs a two-layer network with d = 1 "
                             "and first-layer biases")
        self.init_stream = init_stream or ("mlp.init-1d" if self.init_name == "regression-1d" else "mlp.init")
        streams.key(self.init_stream)
        self.init_key = tuple(int(k) for k in init_key)
        self.sampling_stream = sampling_stream
        streams.key(sampling_stream)
        self.dtype = np.dtype(validation.one_of("dtype", dtype if isinstance(dtype, str) else np.dtype(dtype).name,
                                                DTYPES))
        lowlevel.require(self.dtype)          # float32's blocks are probed on first use (float64's at import)
        self._widths, self._w_off, self._b_off, self._p = layout_arrays(widths, flags)
        self._iargs = kernel_iargs(self._widths, self._w_off, self._b_off)
        self.dropout = validation.in_interval("dropout", dropout, 0.0, 1.0)
        if not isinstance(batch_norm, bool | np.bool_):
            raise TypeError(f"Invalid batch_norm: {batch_norm!r} (expected True or False)")
        self.batch_norm = bool(batch_norm)
        self.bn_momentum = validation.in_interval("bn_momentum", bn_momentum, 0.0, 1.0, closed_high=True)
        self.bn_eps = validation.positive("bn_eps", bn_eps)
        #: dropout or batch norm: a training and an evaluation mode, and a loop of its own in dyntools.train
        self.regularized = self.dropout > 0.0 or self.batch_norm
        if self.regularized and (L < 2):
            raise ValueError("Invalid dropout/batch_norm: they act on hidden layers (the network has none)")
        if self.regularized and self.dtype != np.float64:
            raise ValueError("Invalid dtype: dropout and batch norm train in float64 only")
        self._p_plain = self._p
        self._g_off, self._h_off, self.n_hidden = mlp_regularized.bn_layout(self._widths, self._p, self.batch_norm)
        if self.batch_norm:
            self._p += 2 * self.n_hidden
        if self.regularized:
            self.loss_grad, self.loss_grad_np = mlp_regularized.loss_grad, mlp_regularized.loss_grad_np
        elif self.head == "regression":
            self.loss_grad, self.loss_grad_np = loss_grad_regression, loss_grad_regression_np
        else:
            self.loss_grad, self.loss_grad_np = loss_grad_cross_entropy, loss_grad_cross_entropy_np
        if not isinstance(sparse_inputs, bool | np.bool_):
            raise TypeError(f"Invalid sparse_inputs: {sparse_inputs!r} (expected True or False)")
        self.sparse_inputs = bool(sparse_inputs)
        if self.sparse_inputs:
            if self.loss_grad is not loss_grad_cross_entropy:
                raise ValueError("Invalid sparse_inputs: only the cross-entropy head without dropout or batch norm "
                                 "has the sparse first layer")
            self.loss_grad = loss_grad_cross_entropy_sparse_inputs

    # ---------------------------------------------------------------- layout
    @property
    def n_layers(self) -> int:
        return len(self.widths) - 1

    @property
    def n_params(self) -> int:
        return int(self._p)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(widths, w_off, b_off)`` (int64) for the compiled kernels."""
        return self._widths, self._w_off, self._b_off

    def unpack(self, theta) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Views ``[(W_l (out × in), b_l or None)]`` into θ (p,) or a stack (…, p)."""
        theta = np.asarray(theta)
        if theta.shape[-1] != self._p:
            raise ValueError(f"Invalid theta: last dimension {theta.shape[-1]} != number of parameters {self._p}")
        return unpack(self._widths, self._w_off, self._b_off, theta)

    def bn_params(self, theta) -> list[tuple[np.ndarray, np.ndarray]]:
        """Views ``[(γ_l, β_l)]`` of the hidden layers' batch norms in θ (empty without batch norm)."""
        theta = np.asarray(theta)
        return [(theta[..., g:g + m], theta[..., g + m:g + 2 * m])
                for g, m in zip(self._g_off[:-1], self.widths[1:-1]) if g >= 0]

    def running_init(self) -> np.ndarray:
        """Initial running statistics ``(2, H)``: means 0, variances 1 (PyTorch's ``BatchNorm1d``)."""
        return np.vstack([np.zeros(self.n_hidden), np.ones(self.n_hidden)])

    def pack(self, layers, bn=None) -> np.ndarray:
        """Inverse of :meth:`unpack` for one network: ``[(W_l, b_l or None)]`` → θ; with batch norm, ``bn``
        ``[(γ_l, β_l)]`` (default γ = 1, β = 0)."""
        theta = np.zeros(self._p)
        for l, (g, m) in enumerate(zip(self._g_off[:-1], self.widths[1:-1])):
            if g >= 0:
                gamma, beta = (np.ones(m), np.zeros(m)) if bn is None else bn[l]
                theta[g:g + m], theta[g + m:g + 2 * m] = gamma, beta
        for l, (W, b) in enumerate(layers):
            W = np.asarray(W, dtype=np.float64)
            shape = (self.widths[l + 1], self.widths[l])
            if W.shape != shape:
                raise ValueError(f"Invalid W_{l + 1}: shape {W.shape}, expected {shape}")
            theta[self._w_off[l]:self._w_off[l] + W.size] = W.ravel()
            if self._b_off[l] >= 0:
                theta[self._b_off[l]:self._b_off[l] + shape[0]] = 0.0 if b is None else np.asarray(b, float)
            elif b is not None and np.any(np.asarray(b) != 0):
                raise ValueError(f"Invalid b_{l + 1}: layer {l + 1} has no bias")
        return theta

    def hooks(self, setting: dict, P: int):
        """Dropout and batch norm as the loop's step hooks (:mod:`dyntools.models.mlp_regularized`): the masks
        before the gradient, drawn from path (run g, seed s)'s stream ``SeedSequence(seed, (KEY, g, *stream_key,
        s))``, ``KEY = streams.KEYS["mlp.dropout"]`` (``(KEY, *stream_key, s)`` for every run with
        ``common_stream``: the derivation of the sampling streams, so a path's masks depend neither on the number
        of paths nor of workers); the running statistics after it, each path's own state row, recorded with θ.
        None for a plain network."""
        if not self.regularized:
            return Hooks()
        if self.batch_norm and setting["batch"] < 2:
            raise ValueError(f"Invalid batch: {setting['batch']} (batch norm in training mode needs at least 2 "
                             "examples per step)")
        G, H = len(setting["optimizers"]), self.n_hidden
        S = P // G
        key = streams.key("mlp.dropout")
        if setting.get("common_stream"):
            drop = np.tile(streams.path_states(setting["seed"], S, key, *setting["stream_key"]), (G, 1))
        else:
            drop = np.concatenate([streams.path_states(setting["seed"], S, key, g, *setting["stream_key"])
                                   for g in range(G)])
        args = np.tile([float(H), 1.0 - self.dropout, self.bn_momentum], (G, 1))
        R = mlp_regularized
        dropout = (R.dropout_hook, R.dropout_hook_np) if self.dropout > 0.0 else (no_hook, no_hook_np)
        bn = (R.batch_norm_hook, R.batch_norm_hook_np) if self.batch_norm else (no_hook, no_hook_np)
        state = np.tile(self.running_init().reshape(-1), (P, 1)) if self.batch_norm else None
        return Hooks(before_grad=dropout[0], before_grad_np=dropout[1], after_grad=bn[0], after_grad_np=bn[1],
                     state=state, streams=drop, args=args, recorded=self.batch_norm)

    def hook_results(self, state, recorded) -> dict:
        """With batch norm: ``bn_running`` (P, 2, H), the final running statistics (means, variances), and
        ``bn_running_rec`` (P, K, 2, H), those recorded with θ."""
        if not self.batch_norm:
            return {}
        P, K, H = recorded.shape[0], recorded.shape[1], self.n_hidden
        return {"bn_running": state.reshape(P, 2, H).copy(), "bn_running_rec": recorded.reshape(P, K, 2, H).copy()}

    def kernel_args(self, train: bool = True):
        """The kernel's constants (with dropout or batch norm: of the training mode, or of evaluation)."""
        if self.regularized:
            return mlp_regularized.kernel_args(self._widths, self._w_off, self._b_off, self._g_off, self._h_off,
                                               self.head, train, self.dropout, self.bn_eps)
        return self._iargs, np.zeros(0)

    def workspace_size(self, batch: int) -> int:
        maxw = int(self._widths.max())
        if self.regularized:
            return mlp_regularized.ws_layout(self.n_hidden, batch)[2] + mlp_regularized.scratch_size(self._widths,
                                                                                                     batch)
        if self.head == "regression":
            return example_ws_size(self.n_layers, maxw)
        return mlp_gemm.ws_size(self.n_layers, maxw, int(batch))

    def config(self) -> dict:
        out = {"name": self.name, "widths": list(self.widths), "biases": list(self.biases), "head": self.head,
               "init": self.init_name, "init_scales": self.init_scales.tolist(), "n_params": self.n_params,
               "dtype": self.dtype.name}
        if self.regularized:
            out.update(dropout=self.dropout, batch_norm=self.batch_norm, bn_momentum=self.bn_momentum,
                       bn_eps=self.bn_eps)
        return out

    # ---------------------------------------------------------------- initializations
    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """Initial θ of seed index ``index`` (see the module docstring for the schemes and streams)."""
        words = (streams.key(self.init_stream), *self.init_key) + ((int(index),) if index else ())
        if self.init_name == "uniform":
            state = streams.path_states(seed, 1, *words)
            theta = self.pack([(np.zeros((self.widths[l + 1], self.widths[l])), None) for l in range(self.n_layers)])
            for l in range(self.n_layers):
                nin, nout = self.widths[l], self.widths[l + 1]
                n_b = nout if self.biases[l] else 0
                draws = _uniform_pm(state, nin * nout + n_b) * (1.0 / np.sqrt(nin))
                wo = self._w_off[l]
                theta[wo:wo + nin * nout] = draws[:nin * nout].reshape(nin, nout).T.ravel()
                if n_b:
                    theta[self._b_off[l]:self._b_off[l] + nout] = draws[nin * nout:]
            return theta
        gen = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, *words)))
        if self.init_name == "gaussian":
            return self.pack([(self.init_scales[l] * gen.standard_normal((self.widths[l + 1], self.widths[l])),
                               None) for l in range(self.n_layers)])
        s, m = float(self.init_scales[0]), self.widths[1]
        W1 = 2.5 * s * gen.choice(np.array([-1.0, 1.0]), size=(m, 1))
        b1 = 2.5 * s * gen.standard_normal(m)
        W2 = 4.0 * s * gen.standard_normal((1, m))
        return self.pack([(W1, b1), (W2, None)])

    # ---------------------------------------------------------------- metric hooks
    def _running(self, running) -> np.ndarray | None:
        """The running statistics evaluation needs (batch norm), checked: ``(2, H)`` or a stack ``(…, 2, H)``."""
        if not self.batch_norm:
            return None
        if running is None:
            raise ValueError("Invalid running: batch norm in evaluation mode needs the running statistics "
                             "(result['bn_running'] of dyntools.train, or model.running_init())")
        running = np.asarray(running, dtype=np.float64)
        if running.shape[-2:] != (2, self.n_hidden):
            raise ValueError(f"Invalid running: shape {running.shape} (expected (2, {self.n_hidden}))")
        return running

    def forward_np(self, theta, X, running=None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Vectorized forward pass of θ (p,) or a stack (k, p): the outputs ``z_L`` ((n, K) or
        (k, n, K)) and the hidden activations ``[a_1, …, a_{L−1}]``. With dropout or batch norm: the
        evaluation mode (no dropout; batch norm with the ``running`` statistics, (2, H) or (k, 2, H))."""
        a = np.asarray(X, dtype=np.float64)
        running = self._running(running)
        hidden = []
        layers = self.unpack(theta)
        bn = self.bn_params(theta)
        for l, (W, b) in enumerate(layers):
            z = a @ np.swapaxes(W, -1, -2)
            if b is not None:
                z = z + b[..., None, :]
            if l < len(layers) - 1 and self.batch_norm:        # u = z α + (β − r_μ α), α = γ / √(r_σ² + ε)
                h, m = self._h_off[l], self.widths[l + 1]
                gamma, beta = bn[l]
                alpha = (1.0 / np.sqrt(running[..., 1, h:h + m] + self.bn_eps)) * gamma
                z = z * alpha[..., None, :] + (beta - running[..., 0, h:h + m] * alpha)[..., None, :]
            if l < len(layers) - 1:
                a = np.maximum(z, 0.0)
                hidden.append(a)
            else:
                a = z
        return a, hidden

    def predict(self, theta, X, running=None) -> np.ndarray:
        """Regression: ``h_θ(x_i)`` (n,) (or (k, n) for a stack of θ); cross-entropy: the logits (n, K)
        (evaluation mode; batch norm needs ``running``)."""
        out = self.forward_np(theta, X, running)[0]
        return out[..., 0] if self.head == "regression" else out

    def features(self, theta, X, running=None) -> list[np.ndarray]:
        """Hidden activations, one (n, m_l) array per hidden layer (evaluation mode)."""
        return self.forward_np(theta, X, running)[1]

    def jacobian(self, theta, X) -> np.ndarray:
        """``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` (n × p) of the regression output (compiled)."""
        if self.head != "regression":
            raise NotImplementedError("the Jacobian hook is defined for the regression head (one output)")
        if self.regularized:
            raise NotImplementedError("the Jacobian hook is defined for the plain MLP (no dropout or batch norm)")
        X = np.ascontiguousarray(X, dtype=np.float64)
        return jacobian_kernel(np.ascontiguousarray(theta, dtype=np.float64), X, *self.arrays())

    def jacobian_np(self, theta, X) -> np.ndarray:
        """NumPy twin of :meth:`jacobian`: back-propagation of ``δ_L = 1`` for every example at once."""
        X = np.asarray(X, dtype=np.float64)
        layers = self.unpack(np.asarray(theta, dtype=np.float64))
        acts, pres = [X], [None]
        for l, (W, b) in enumerate(layers):
            z = acts[-1] @ W.T + (b if b is not None else 0.0)
            pres.append(z)
            acts.append(np.maximum(z, 0.0) if l < self.n_layers - 1 else z)
        J = np.zeros((X.shape[0], self._p))
        delta = np.ones((X.shape[0], 1))
        for l in range(self.n_layers - 1, -1, -1):
            W, _ = layers[l]
            wo, bo = self._w_off[l], self._b_off[l]
            J[:, wo:wo + W.size] = (delta[:, :, None] * acts[l][:, None, :]).reshape(X.shape[0], -1)
            if bo >= 0:
                J[:, bo:bo + W.shape[0]] = delta
            if l > 0:
                delta = (delta @ W) * (pres[l] > 0.0)
        return J

    def loss(self, theta, X, y, running=None) -> float:
        """Full-data loss: the mean squared error ``mean((h − y)²)`` (NumPy) or the mean cross-entropy
        (:meth:`evaluate`'s compiled forward pass: no BLAS call, whose threads wait badly on a busy machine);
        evaluation mode (batch norm needs ``running``)."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.head == "regression":
            with np.errstate(over="ignore", invalid="ignore"):
                return float(np.mean((self.predict(theta, X, running) - np.asarray(y, dtype=np.float64)) ** 2))
        return self.evaluate(theta, X, y, running=running)[0]

    def evaluate(self, theta, X, y, chunk: int = 256, running=None) -> tuple[float, float]:
        """Cross-entropy head: mean cross-entropy and accuracy on ``(X, y)``, with the compiled
        forward pass of :mod:`dyntools.models.mlp_gemm` on chunks of ``chunk`` rows (the arg-max read from
        its logits). With dropout or batch norm: the evaluation mode, the compiled pass of
        :mod:`dyntools.models.mlp_regularized` (batch norm with the ``running`` statistics)."""
        if self.head != "cross-entropy":
            raise ValueError("Invalid head: evaluate() reports accuracy, which needs the cross-entropy head")
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        n = X.shape[0]
        chunk = min(chunk, n)
        if self.regularized:
            return self._evaluate_regularized(theta, X, y, chunk, self._running(running))
        ws = np.zeros(mlp_gemm.ws_size(self.n_layers, int(self._widths.max()), chunk))
        empty, iargs, fargs = np.zeros(0), *self.kernel_args()
        total, correct = 0.0, 0
        for start in range(0, n, chunk):           # the training kernel without a gradient: no compile of its own
            idx = np.arange(start, min(n, start + chunk))
            total += len(idx) * self.loss_grad(theta, X, y, idx, len(idx), empty, empty, ws, iargs, fargs)
            logits = mlp_gemm.logits(ws, self._widths, len(idx))
            correct += int(np.sum(np.argmax(logits, axis=1) == y[idx]))
        return total / n, correct / n

    def _evaluate_regularized(self, theta, X, y, chunk, running) -> tuple[float, float]:
        R = mlp_regularized
        running = self.running_init() if running is None else np.ascontiguousarray(running)
        ws = np.zeros(R.scratch_size(self._widths, chunk))
        empty, stats = np.zeros(0), np.zeros((2, self.n_hidden))
        total, correct, n = 0.0, 0, X.shape[0]
        for start in range(0, n, chunk):
            idx = np.arange(start, min(n, start + chunk))
            total += len(idx) * R.forward_backward(theta, self._widths, self._w_off, self._b_off, self._g_off,
                                                   self._h_off, X, y, idx, np.zeros(len(idx)), R.HEAD_CROSS_ENTROPY,
                                                   False, np.zeros((0, self.n_hidden)), 1.0, self.bn_eps, stats,
                                                   running, empty, ws)
            correct += int(np.sum(np.argmax(R.logits(ws, self._widths, len(idx)), axis=1) == y[idx]))
        return total / n, correct / n


def jacobian_fd(model: MLP, theta, X, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of the regression output ``h_θ(X)`` in θ (n, p), for tests and demos."""
    theta = np.asarray(theta, dtype=np.float64)
    J = np.empty((len(X), theta.size))
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = eps
        J[:, k] = (model.predict(theta + e, X) - model.predict(theta - e, X)) / (2 * eps)
    return J
