"""The optimizer step of a chain that the compiled step cannot run (a transform with no compiled form).

:func:`dyntools.train` runs every chain whose transforms all have a compiled form (an ``element_update()``,
or a ``compiled()`` kernel) in the compiled loop (:func:`dyntools.optim.compiled.compile_runs`). A run set with
a chain that holds a transform without one is stepped from Python by its chains of transforms,
``(u, state) = chain.update(g, state, θ, t, lr_t)`` then ``θ ← θ − lr_t u``, exactly as
:meth:`~dyntools.optim.optimizers.Optimizer.step` does. There a transform runs

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
another optimizer trained under the user's name.
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


def describe(opt, by_chain: bool = False) -> str:
    """How :func:`dyntools.train` steps ``opt``: ``"fused"`` in the compiled step of its run set (every transform of
    the run set has a compiled form: an element update or a ``compiled()`` kernel); in a run set stepped by its chains
    (``by_chain``: some optimizer's transform has only its readable ``update``) ``"chain (numpy)"``,
    ``"chain (compiled)"`` or ``"chain (compiled + numpy)"`` — which of its transforms run compiled there (a user's
    compiled form; a built-in transform runs its ``update``)."""
    transforms = flat_transforms(opt.chain)
    if not by_chain and all(has_compiled_form(tr) for tr in transforms):
        return "fused"
    kinds = {_compiled_of(tr) is not None for tr in transforms} or {False}
    return {frozenset({True}): "chain (compiled)", frozenset({False}): "chain (numpy)"}.get(
        frozenset(kinds), "chain (compiled + numpy)")


def has_compiled_form(tr) -> bool:
    """Whether ``tr`` has an element update (``element_update()`` not None) or a ``compiled()`` kernel: what
    :func:`dyntools.optim.compiled.compile_runs` fuses."""
    return hasattr(tr, "compiled") or getattr(tr, "element_update", lambda: None)() is not None


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
