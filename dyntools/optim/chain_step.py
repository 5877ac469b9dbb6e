"""The optimizer step of a chain that has no fused kernel (your own optimizer in :func:`dyntools.train`).

:func:`dyntools.train` steps an optimizer with ``precond = NO_FUSED_KERNEL`` by its own chain of
transforms, ``(u, state) = chain.update(g, state, θ, t, lr_t)`` then ``θ ← θ − lr_t u``, exactly as
:meth:`~dyntools.optim.optimizers.Optimizer.step` does. A transform runs

* **compiled** when it has a ``compiled()`` method returning ``(kernel, hp)``: ``kernel`` a numba
  ``@njit`` function ``kernel(u, state, params, t, lr_t, hp)`` that overwrites the direction ``u``
  (float64[p]) and its state (the float64[k, p] array its ``init(params)`` returns) in place, with
  ``hp`` a float64 vector of its hyperparameters — or when it is a user's transform with an element update
  (``element_update()``), whose kernel of that signature :mod:`dyntools.optim.compiled` generates;
* **in NumPy** otherwise, through its readable ``update``.

At first use (the first :class:`ChainStepper` built for that transform, hyperparameters and parameter
count in a process) :func:`check_compiled_matches_update` runs the kernel and ``update`` side by side for
:data:`PROBE_STEPS` steps from one random state (fresh random gradients and parameters each step) and
refuses a kernel whose direction or state differs from ``update``'s beyond 1e-9 relative: one
:class:`~dyntools.validation.KernelMismatch` naming the transform, the step and the first differing
coordinate with both values — so a kernel that forgets momentum is an error before training, not
another optimizer trained under the user's name. :func:`check_fused_matches_chain` guards a built-in fused
kernel the same way: an optimizer
that names a fused kernel must step like its own chain, so that a wrong ``precond`` or hyperparameter
layout is an error rather than another optimizer trained under its name.
"""

from __future__ import annotations

import numpy as np

from dyntools.optim import transforms as T
from dyntools.validation import KernelMismatch, first_difference

#: Steps of the first-use probe of a compiled transform (:func:`check_compiled_matches_update`).
PROBE_STEPS = 5
#: Transforms already probed in this process: (type, repr, kernel, hp bytes, p).
_probed: set = set()


def flat_transforms(chain) -> list:
    """The transforms of ``chain`` in order, nested chains flattened."""
    if isinstance(chain, T.chain):
        return [x for tr in chain.transforms for x in flat_transforms(tr)]
    return [chain]


def describe(opt) -> str:
    """How :func:`dyntools.train` steps ``opt``: ``"fused"``, ``"chain (compiled)"``, ``"chain (numpy)"``
    or ``"chain (compiled + numpy)"``."""
    if opt.fused:
        return "fused"
    kinds = {_compiled_of(tr) is not None for tr in flat_transforms(opt.chain)}
    return {frozenset({True}): "chain (compiled)", frozenset({False}): "chain (numpy)"}.get(
        frozenset(kinds), "chain (compiled + numpy)")


def _compiled_of(tr):
    """``tr``'s compiled update as ``(kernel, hp)``: its ``compiled()``, or — a user's transform with an element
    update (:class:`~dyntools.optim.transforms.ElementUpdate`) — the kernel generated from it
    (:func:`dyntools.optim.fuse.direction_of`); None when it has neither (or is a built-in: its update runs)."""
    if hasattr(tr, "compiled"):
        return tr.compiled()
    if type(tr).__module__.startswith("dyntools.optim.") or getattr(tr, "element_update", lambda: None)() is None:
        return None
    from dyntools.optim.fuse import direction_of

    return direction_of(tr)


class ChainStepper:
    """Steps one path's parameters in place by ``opt``'s chain (state kept here, one per path)."""

    def __init__(self, opt, theta: np.ndarray):
        self.parts = []
        for tr in flat_transforms(opt.chain):
            state = tr.init(np.asarray(theta, dtype=np.float64).copy())
            compiled = _compiled_of(tr)
            if compiled is not None:
                state = np.ascontiguousarray(state, dtype=np.float64)
                if state.ndim != 2 or state.shape[1] != theta.shape[0]:
                    raise ValueError(f"Invalid state of transform {type(tr).__name__}: its init returned shape "
                                     f"{state.shape} (a compiled transform keeps a float64[k, {theta.shape[0]}] array)")
                compiled = (compiled[0], np.ascontiguousarray(compiled[1], dtype=np.float64))
                check_compiled_matches_update(tr, compiled, state.shape)
            self.parts.append((tr, compiled, state))

    def __call__(self, theta: np.ndarray, grad: np.ndarray, t: int, lr_t: float) -> None:
        u = np.array(grad, dtype=np.float64)
        params = np.array(theta, dtype=np.float64)
        for k, (tr, compiled, state) in enumerate(self.parts):
            if compiled is not None:
                compiled[0](u, state, params, t, lr_t, compiled[1])
            else:
                u, state = tr.update(u, state, params, t, lr_t)
                self.parts[k] = (tr, None, state)
        theta[:] = T.apply(params, u, lr_t)


def check_compiled_matches_update(tr, compiled, state_shape: tuple[int, int], steps: int = PROBE_STEPS) -> None:
    """Raise :class:`KernelMismatch` unless ``compiled = (kernel, hp)`` steps like ``tr.update``.

    From one random state ``s_0`` (entries uniform in [0.05, 1): positive, as second moments must be), step
    ``t = 1 … steps`` feeds both the same gradient ``g_t ~ N(0, 1)``, parameters ``θ_t ~ N(0, 1)`` and
    ``lr_t = 0.01``: ``(u_t, s_t) = update(g_t, s_{t−1}, θ_t, t, lr_t)`` against the kernel stepping its own
    state in place. Direction and state must agree entry by entry to ``1e-9·|x| + 1e-12`` at every step;
    the first entry that does not is reported. Probed once per (transform, kernel, hp, shape) and process."""
    kernel, hp = compiled
    key = (type(tr), repr(tr), kernel, hp.tobytes(), tuple(state_shape))
    if key in _probed:
        return
    rng = np.random.default_rng(36)
    p = state_shape[1]
    readable_state = rng.uniform(0.05, 1.0, size=state_shape)
    kernel_state = readable_state.copy()
    name = type(tr).__name__
    for t in range(1, steps + 1):
        g, params = rng.normal(size=p), rng.normal(size=p)
        u_r, readable_state = tr.update(g.copy(), readable_state, params.copy(), t, 0.01)
        readable_state = np.asarray(readable_state, dtype=np.float64)
        u_c = g.copy()
        kernel(u_c, kernel_state, params.copy(), t, 0.01, hp)
        for what, r, c in (("direction u", u_r, u_c), ("state", readable_state, kernel_state)):
            diff = first_difference(r, c)
            if diff is not None:
                where, r_val, c_val = diff
                raise KernelMismatch(
                    f"Invalid transform {name}: its compiled() kernel does not step like its update() — at probe "
                    f"step {t} of {steps} (random state, p = {p}) {what}[{where}] is {c_val!r} by the kernel but "
                    f"{r_val!r} by update(); fix the kernel, or remove compiled() to train update() itself")
    _probed.add(key)


def probe(opt, p: int = 4) -> None:
    """Probe every compiled transform of ``opt``'s chain on ``p`` parameters now (what the first
    :class:`ChainStepper` does), so that a sweep refuses a bad kernel before its first cell."""
    ChainStepper(opt, np.zeros(p))


def check_fused_matches_chain(opt, steps: int = 3) -> None:
    """Raise ValueError when ``opt`` names a fused kernel whose step is not its chain's: three steps
    of both on a probe (4 parameters of mixed sign, fixed gradients) must agree to 1e-9 relative."""
    from dyntools.optim import kernels
    from dyntools.optim import optimizers as O

    if not opt.fused or "decay_weights" in opt.options:  # grouped decay: tested with its own chain
        return
    theta = np.array([0.7, -1.3, 0.05, 2.0])
    grads = np.array([[0.3, -0.2, 1.5, -0.01], [-0.4, 0.1, 0.9, 0.02], [0.2, 0.3, -1.1, 0.5]])
    fused_theta, fused_state = theta.copy(), kernels.init_state(opt, theta.size)
    chain_theta, chain_state = theta.copy(), opt.init(theta)
    for t in range(1, steps + 1):
        kernels.fused_step_np(opt.precond, opt.hparams, fused_theta, grads[t - 1], fused_state, t, opt.lr)
        chain_theta, chain_state = opt.step(chain_theta, grads[t - 1], chain_state, t)
    if not np.allclose(fused_theta, chain_theta, rtol=1e-9, atol=1e-12):
        raise ValueError(
            f"Invalid optimizer {opt.name!r}: precond {opt.precond} ({O.PRECONDS[opt.precond]}) with its hparams does "
            f"not step like its chain {'→'.join(opt.chain.names())} (after {steps} probe steps {fused_theta} vs "
            f"{chain_theta}); leave precond at NO_FUSED_KERNEL = {O.NO_FUSED_KERNEL} to train the chain itself")
