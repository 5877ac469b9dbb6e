"""What a model gives the engine: the model protocol.

A model is a parametric predictor ``h_θ`` with a training loss, seen by the trainer
(:func:`dyntools.train`) through one flat parameter vector ``θ ∈ R^p`` and one compiled kernel:

    loss = loss_grad(θ, X, y, idx, b, noise, grad, ws, iargs, fargs)

which evaluates the mini-batch loss at ``θ`` on the examples ``idx[:b]`` (labels ``y_i + noise_q``
for regression heads: label noise enters as a perturbation of the targets) and writes its
gradient with respect to ``θ`` into ``grad`` (``float64[p]``, overwritten, not accumulated).
``ws`` is a scratch ``float64`` array of :meth:`Model.workspace_size` entries owned by the calling
path; ``iargs`` (``int64``) and ``fargs`` (``float64``) carry the model's constants (layer sizes,
offsets, θ*, …) so that the kernel is a plain function of arrays and scalars (numba compiles one
trainer loop per kernel). ``loss_grad_np`` is its NumPy twin, same signature and same result; the
tests compare the two on identical inputs.

Subclasses set :attr:`name`, :attr:`head` (``"regression"`` or ``"cross-entropy"``), the two
kernels, and implement :attr:`n_params`, :meth:`kernel_args`, :meth:`workspace_size` and
:meth:`init`. Metric hooks (:meth:`loss`, :meth:`predict`, :meth:`jacobian`, :meth:`features`) are
NumPy functions of a parameter vector used after a run on the recorded parameters; a model
implements the ones that make sense for it. A tuned loop for a setting a model knows well lives a floor
up, in :mod:`dyntools.dynamics.fast`, registered by model type (a model does not know its loops); the
trainer uses it when it applies, and the tests hold it equal to the generic loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

HEADS = ("regression", "cross-entropy")


def cross_entropy_and_accuracy(z: np.ndarray, y) -> tuple[float, float]:
    """Mean softmax cross-entropy ``(1/n) Σ_i [log Σ_k exp z_ik − z_{i y_i}]`` of the logits ``z`` (n, K) and the
    accuracy of their argmax against the labels ``y``."""
    y = np.asarray(y, dtype=np.int64)
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
    return float(np.mean(lse - z[np.arange(len(y)), y])), float(np.mean(np.argmax(z, axis=1) == y))


@njit(cache=True)
def no_hook(t, theta, hstate, hstream, hargs, b, ws):
    """The default step hook: does nothing (see :class:`Hooks`)."""


def no_hook_np(t, theta, hstate, hstream, hargs, b, ws):
    """NumPy twin of :func:`no_hook`."""


class Hooks:
    """The state a model carries from step to step that is not a parameter, and where the one loop touches it.

    Every training loop (:func:`dyntools.dynamics.path_loop.advance_path` and its twin) calls, at fixed points
    of step ``t`` of a path, three compiled hooks ``hook(t, θ, hstate, hstream, hargs, b, ws)``:

        record     θ_t (and hstate, when :attr:`recorded`) on the record grid
        draw       I_t, the sampler's examples
        before     before_grad(t, θ_t, …)       e.g. dropout: the keep masks into ws, from the path's stream
        kernel     L, g_t = loss_grad(θ_t, …)
        after      after_grad(t, θ_t, …)        e.g. batch norm: running statistics from the batch's, in ws
        step       θ_{t+1} = optimizer step; guard (a diverged path stops here)
        stepped    after_step(t, θ_{t+1}, …)    e.g. the toy's counters (θ_t kept in hstate by ``before``)

    ``hstate`` float64[S] is the path's own state row, ``hstream`` uint64[1, 4] its own xoshiro stream,
    ``hargs`` float64[A] the constants of the path's run (row ``run_of[p]`` of :attr:`args`), ``b`` the batch
    and ``ws`` the kernel's scratch. The defaults (:func:`no_hook`, ``S = 0``) cost nothing: a model without
    such state declares nothing. A model with hooks returns a :class:`Hooks` from :meth:`Model.hooks`.
    """

    def __init__(self, before_grad=no_hook, after_grad=no_hook, after_step=no_hook, before_grad_np=no_hook_np,
                 after_grad_np=no_hook_np, after_step_np=no_hook_np, state=None, streams=None, args=None,
                 recorded=False):
        #: compiled hooks (module-level ``njit`` functions: the generated loop names them) and their NumPy twins
        self.before_grad, self.after_grad, self.after_step = before_grad, after_grad, after_step
        self.before_grad_np, self.after_grad_np, self.after_step_np = before_grad_np, after_grad_np, after_step_np
        #: float64[P, S] initial state rows; uint64[P, 4] streams; float64[G, A] per-run constants (None: empty)
        self.state, self.streams, self.args = state, streams, args
        #: the loop records each path's state row with θ (``hook_rec``, float64[P, K, S])
        self.recorded = bool(recorded)

    @property
    def compiled(self) -> tuple:
        """``(before_grad, after_grad, after_step)``."""
        return self.before_grad, self.after_grad, self.after_step

    @property
    def numpy(self) -> tuple:
        """``(before_grad_np, after_grad_np, after_step_np)``."""
        return self.before_grad_np, self.after_grad_np, self.after_step_np

    @property
    def none(self) -> bool:
        """Every hook is the default no-op."""
        return all(h is no_hook for h in self.compiled)


class Model:
    """Base class of the models trained by :func:`dyntools.train` (see the module docstring)."""

    #: short name (recorded in results)
    name: str = "model"
    #: "regression" (targets y: float64[n], label noise allowed) or "cross-entropy" (y: int64 labels)
    head: str = "regression"
    #: stream purposes (keys of :data:`dyntools.engine.streams.KEYS`) of the initialization and the trainer's
    #: sampling: every model declares its own. None (undeclared) is an error in :func:`dyntools.train`, never
    #: another model's purpose by default.
    init_stream: str | None = None
    sampling_stream: str | None = None

    # compiled kernel and its NumPy twin (set by subclasses as staticmethods)
    loss_grad = None
    loss_grad_np = None

    # ---------------------------------------------------------------- optional declarations (with their defaults)
    #: the precision :func:`dyntools.train` trains in (parameters, data and kernel arithmetic)
    dtype: np.dtype = np.dtype(np.float64)
    #: dropout or batch norm: a training and an evaluation mode (its state lives in :meth:`hooks`)
    regularized: bool = False
    #: batch norm: the trainer records the running statistics with θ and evaluates the loss with them
    batch_norm: bool = False
    #: the kernel was generated from the user's expression (:class:`~dyntools.models.symbolic.SymbolicModel`): it is
    #: checked against its twin once per model (then trained, like every kernel without step hooks, by the one loop
    #: compiled per optimizer step module and sampler, which calls it through a function pointer)
    generated_kernel: bool = False
    #: the rule: a kernel whose step is measured more than 3 % slower through a function pointer (issue 38's per-step
    #: bound) sets this, and the trainer inlines it into a loop generated for it
    #: (:func:`dyntools.dynamics.loops.user_loop`, one more compile per optimizer step module) instead of the shared
    #: pointer loop. Set by the 2-D surfaces (a few flops a step; Rosenbrock, 8 optimizers: 13–26 % slower); the
    #: other built-in models measured within it (docs/performance.md, stop 53)
    inline_kernel: bool = False
    #: the generated Milstein correction of the label-noise SDE (a method ``milstein_correction(X)``), or None
    milstein_correction = None

    def hooks(self, setting: dict, P: int) -> Hooks:
        """The step hooks of this model for a run of ``P`` paths (``setting``: the trainer's, with ``seed``,
        ``stream_key``, ``common_stream``, ``optimizers``, ``batch``), see :class:`Hooks`. Default: none."""
        return Hooks()

    def hook_results(self, state: np.ndarray, recorded: np.ndarray) -> dict[str, np.ndarray]:
        """Per-path result arrays ``{name: array[P, …]}`` from the hooks' final ``state`` (P, S) and ``recorded``
        states (P, K, S); the trainer adds them to the result. Default: none."""
        return {}

    @property
    def n_params(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def kernel_args(self) -> tuple[np.ndarray, np.ndarray]:
        """``(iargs int64[:], fargs float64[:])``: the constants the kernel reads."""
        return np.zeros(0, dtype=np.int64), np.zeros(0)

    def workspace_size(self, batch: int) -> int:
        """Length of the scratch array the kernel needs for a batch of ``batch`` examples."""
        return 0

    def init(self, seed: int, index: int = 0) -> np.ndarray:  # pragma: no cover - abstract
        """Initial parameters of seed ``index`` (drawn from the :attr:`init_stream` of ``seed``)."""
        raise NotImplementedError

    def check_data(self, X: np.ndarray, y: np.ndarray) -> None:
        """Refuse data this model cannot train on (``ValueError`` naming the mismatch); a model that knows its
        input width overrides this. The default accepts any data the kernel's signature accepts."""

    def recorded_loss(self, theta_rec: np.ndarray, Xs, ys, data_of, running_rec=None) -> np.ndarray:
        """Full-data loss (P, K) at every recording of ``theta_rec`` (P, K, p); NaN where nothing was recorded.
        Path ``p`` trained on data set ``data_of[p]`` of ``Xs``/``ys``; ``running_rec`` (P, K, 2, H) are the batch-norm
        running statistics recorded with θ (evaluation mode). A model with a closed form overrides this to evaluate
        every recording at once."""
        P, K, _ = theta_rec.shape
        out = np.full((P, K), np.nan)
        for p in range(P):
            X, y = Xs[data_of[p]], ys[data_of[p]]
            for k in range(K):
                if np.all(np.isfinite(theta_rec[p, k])):
                    out[p, k] = (self.loss(theta_rec[p, k], X, y) if running_rec is None
                                 else self.loss(theta_rec[p, k], X, y, running=running_rec[p, k]))
        return out

    def sde_terms(self):
        """``(jitted terms, dim, scale)`` of the label-noise SDE of this model's gradient flow
        (:func:`dyntools.sde_models.label_noise_sde`); a model that has one overrides this."""
        raise NotImplementedError(f"{self.name} has no label-noise SDE terms")

    def config(self) -> dict:
        """JSON description of the model (recorded in results)."""
        return {"name": self.name, "n_params": self.n_params}

    # ---------------------------------------------------------------- metric hooks (NumPy)
    def loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """Full-data loss at ``theta`` (the NumPy twin's loss with every example, no noise)."""
        return self.full_data_loss(self.loss_grad_np, theta, X, y)

    def full_data_loss(self, kernel, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """``kernel``'s loss (``loss_grad`` or ``loss_grad_np``) at ``theta`` with every example, no noise."""
        iargs, fargs = self.kernel_args()
        n = X.shape[0]
        grad = np.empty(self.n_params)
        ws = np.zeros(self.workspace_size(n))
        return float(kernel(np.asarray(theta, dtype=np.float64), X, y, np.arange(n, dtype=np.int64), n,
                            np.zeros(n), grad, ws, iargs, fargs))

    def predict(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:  # pragma: no cover - optional
        raise NotImplementedError(f"{self.name} has no predict hook")

    def jacobian(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:  # pragma: no cover - optional
        """``φ_θ(X) = [∇_θ h_θ(x_i)]_i`` (n × p)."""
        raise NotImplementedError(f"{self.name} has no jacobian hook")

    def column_norms(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """ℓ2 norms of the p columns of ``φ_θ(X)`` (from :meth:`jacobian` unless a model has a closed form)."""
        from dyntools.metrics import column_norms

        return column_norms(self.jacobian(theta, X))

    def example_grad_norms(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``‖∇_θ h_θ(x_i)‖₂`` for the n rows of X (the row norms of :meth:`jacobian`)."""
        from dyntools.metrics import example_grad_norms

        return example_grad_norms(self.jacobian(theta, X))

    def features(self, theta: np.ndarray, X: np.ndarray) -> list[np.ndarray]:  # pragma: no cover
        """Hidden activations, one (n × width) array per hidden layer."""
        raise NotImplementedError(f"{self.name} has no features hook")
