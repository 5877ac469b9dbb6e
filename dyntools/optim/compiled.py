"""One compiled step for the optimizers of a run set, generated from their chains' structure.

Every built-in transform of :mod:`dyntools.optim.transforms` carries, beside its readable ``update``, its
compiled form: an :class:`~dyntools.optim.transforms.ElementUpdate` — the source text of its update of ONE
coordinate (``u`` the incoming direction, ``th`` the parameter before the step, its state rows) and of the
scalars it computes once per step. :func:`compile_runs` fuses the element updates of a chain, in chain order,
into one loop over the parameters, closed by ``θ ← θ − lr_t u``::

    for i in range(P):                       # one pass, whatever the chain
        th, u = θ_i, g_i
        u = T_1(u, th, state rows of T_1)    # e.g. scale_by_adam:  m, v ← …;  u = m̂ / (√v̂ + ε)
        u = T_2(u, th, …)                    #      add_decay:      u = u + λ θ_i   (decoupled: after Adam)
        θ_i = th − lr_t u

one such function per distinct chain STRUCTURE of the run set (the transforms' types and structural options;
their numbers are data), and ``step(run, θ, g, state, t, lr_t, hps)`` dispatching on the structure index that
``hps[run, 0]`` holds (``hps[run, 1:]`` are the chain's numbers in chain order). The source is written once to the
generated-code cache (:mod:`dyntools.codegen.cache`, keyed by its SHA-256) and imported from there, so that numba
caches its machine code: a second process with the same run set loads it, nothing compiles.

The twin ``step_np`` is generated from the same element text on whole arrays (``u``, ``th`` arrays; the state row
``state[k]`` for ``state[k, i]``): the same operations in the same order, so the same bits.

Precision: with float32 parameters, SGD, momentum and Adam round their scalars (β, ε, rates, bias corrections, the
learning rate) to float32 (:func:`~dyntools.engine.precision.like`) and compute in float32 where their operands
are; a chain with a *widening* transform (AdaGrad, RMSProp, bias-corrected RMSProp, grouped decay) keeps its
scalars and the learning rate in float64, as PyTorch's float32 AdaGrad/RMSprop do. ``LIKE(x)`` in an element's
text is where that choice is made.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dyntools.optim.chain_step import flat_transforms

#: Bump when the generated text changes meaning without changing (keys the cache with the source).
GENERATOR_VERSION = "1"

#: Helpers of the compiled module (written into it, so that its cache key covers them).
_HELPERS_NJIT = '''
@njit(inline="always")
def _lerp(a, b, w, omw):
    """``a + w (b − a)`` as ``torch.lerp`` computes it (``omw = 1 − w``)."""
    if w < 0.5:
        return a + w * (b - a)
    return b - (b - a) * omw


@njit(inline="always")
def _ipow(a, n):
    return a ** n


@njit(inline="always")
def _max(a, b):
    return max(a, b)
'''

#: The same helpers on whole arrays; ``_ipow`` is numba's square-and-multiply for a float to an int power.
_HELPERS_NP = '''
def _lerp(a, b, w, omw):
    if w < 0.5:
        return a + w * (b - a)
    return b - (b - a) * omw


def _ipow(a, n):
    r, a = 1.0, a
    while n != 0:
        if n & 1:
            r *= a
        n >>= 1
        a *= a
    return r


def _max(a, b):
    return np.where(b > a, b, a)
'''


class NotCompilable(ValueError):
    """A chain with a transform that has no compiled form (no ``element_update``)."""


@dataclass(frozen=True)
class CompiledRuns:
    """The compiled step of a run set (module docstring) and what a loop needs beside it.

    ``step(run, theta, grad, state, t, lr_t, hps)`` moves ``theta`` (float64 or float32) and the path's state
    (float64[n_slots, P]) in place by run ``run``'s optimizer; ``step_np`` is its NumPy twin; ``hps`` the
    float64[G, H] numbers; ``plain_sgd[g]`` whether run ``g`` is plain SGD (``θ ← θ − lr_t g``)."""

    step: object
    step_np: object
    hps: np.ndarray
    n_slots: int
    plain_sgd: tuple
    chains: tuple
    module: str

    def initial_state(self, run: int, n_params: int) -> np.ndarray:
        """The zero state of run ``run`` for ``n_params`` parameters (AdaGrad's accumulator at its start,
        grouped decay's weights and groups in their rows): float64[n_slots, n_params]."""
        state = np.zeros((self.n_slots, n_params))
        row = 0
        for tr in self.chains[run]:
            block = tr.compiled_state(np.zeros(n_params))
            state[row:row + block.shape[0]] = block
            row += block.shape[0]
        return state


def _updates(opt) -> list:
    """The transforms of ``opt`` with their element updates."""
    out = []
    for tr in flat_transforms(opt.chain):
        eu = tr.element_update() if hasattr(tr, "element_update") else None
        if eu is None:
            raise NotCompilable(f"Invalid optimizer {opt.name!r}: its transform {type(tr).__name__} has no compiled "
                                "form (define element_update(), see dyntools.optim.transforms.ElementUpdate)")
        out.append((tr, eu))
    return out


def _structure(parts) -> tuple:
    return tuple((type(tr).__module__, type(tr).__qualname__, eu.key) for tr, eu in parts)


def _fill(text: str, j: int, eu, h0: int, s0: int, widened: bool, numpy: bool) -> str:
    """The element/setup text of transform ``j`` with its hyperparameter columns from ``h0`` and its state rows
    from ``s0`` filled in (``numpy``: the whole-array form)."""
    text = text.replace("LIKE(", "(" if widened else "like(theta, ")
    subs = {"j": f"_{j}", "i": "" if numpy else ", i"}
    subs.update({f"h{k}": f"h[{h0 + k}]" for k in range(len(eu.values))})
    subs.update({f"s{k}": str(s0 + k) for k in range(eu.slots)})
    return string.Template(text).substitute(subs)


def _indent(text: str, n: int) -> list[str]:
    return [" " * n + line for line in text.strip("\n").splitlines() if line.strip()]


def _chain_source(name: str, parts, numpy: bool) -> str:
    """One chain's step function (compiled: one fused element loop; numpy: the same on whole arrays)."""
    widened = any(eu.widens for _, eu in parts)
    setup, element, switches = [], [], []
    h0, s0 = 1, 0
    for j, (_, eu) in enumerate(parts):
        pre = eu.setup_np if numpy and eu.setup_np is not None else eu.setup
        body = eu.element_np if numpy and eu.element_np is not None else eu.element
        setup += _indent(_fill(pre, j, eu, h0, s0, widened, numpy), 4)
        element.append(_fill(body, j, eu, h0, s0, widened, numpy))
        if eu.switch:
            switches.append(_fill(eu.switch, j, eu, h0, s0, widened, numpy))
        h0, s0 = h0 + len(eu.values), s0 + eu.slots
    lr = "np.float64(lr_t)" if numpy else "lr_t"
    lines = [f"def {name}(theta, grad, state, t, lr_t, h):"] + setup
    lines.append(f"    lr = {lr}" if widened else f"    lr = like(theta, {lr})")
    if numpy:
        lines += ["    th = theta.copy()", "    u = grad"]

    def loop(flags: tuple, depth: int) -> list[str]:
        if len(flags) < len(switches):
            cond = switches[len(flags)]
            return ([" " * depth + f"if {cond}:"] + loop(flags + (True,), depth + 4)
                    + [" " * depth + "else:"] + loop(flags + (False,), depth + 4))
        body = []
        sw = iter(flags)
        for text, (_, eu) in zip(element, parts):
            if eu.switch:
                text = text.replace("SW", str(next(sw)))
            body += _indent(text, 0)
        if numpy:
            return [" " * depth + x for x in body] + [" " * depth + "theta[:] = th - lr * u"]
        head = [" " * depth + "for i in range(theta.shape[0]):", " " * depth + "    th = theta[i]",
                " " * depth + "    u = grad[i]"]
        return head + [" " * (depth + 4) + x for x in body] + [" " * (depth + 4) + "theta[i] = th - lr * u"]

    return "\n".join(lines + loop((), 4)) + "\n"


def _module_source(structures: list) -> tuple[str, str]:
    """The compiled module and the NumPy module for the distinct chain structures (index = position)."""
    head = ('"""Generated by dyntools.optim.compiled from optimizer chains: do not edit."""\nimport numpy as np\n'
            'from numba import njit\n\nfrom dyntools.engine.precision import like\n')
    jit_parts, np_parts = [head + _HELPERS_NJIT], [head + _HELPERS_NP]
    calls = []
    for k, parts in enumerate(structures):
        stateless = all(eu.slots == 0 for _, eu in parts)    # plain SGD (± decay): inlined, it vectorizes
        deco = '@njit(cache=True, error_model="numpy"' + (', inline="always")' if stateless else ")")
        jit_parts.append(f"\n{deco}\n" + _chain_source(f"_chain_{k}", parts, False))
        np_parts.append("\n" + _chain_source(f"_chain_{k}", parts, True))
        test = "if" if k == 0 else "elif"
        calls.append(f"    {test} s == {k}.0:\n        _chain_{k}(theta, grad, state, t, lr_t, h)")
    dispatch = ("def step(run, theta, grad, state, t, lr_t, hps):\n"
                '    """One optimizer step of run ``run`` in place (dyntools.optim.compiled)."""\n'
                "    h = hps[run]\n    s = h[0]\n" + "\n".join(calls) + "\n")
    jit_parts.append('\n@njit(cache=True, error_model="numpy", inline="always")\n' + dispatch)
    np_parts.append("\n" + dispatch)
    return "\n".join(jit_parts), "\n".join(np_parts)


def compile_runs(opts: Sequence) -> CompiledRuns:
    """The compiled step of the optimizers ``opts`` (one per run; module docstring).

    Raises
    ------
    NotCompilable
        When a chain holds a transform without a compiled form.
    """
    from dyntools.codegen import cache

    all_parts = [_updates(o) for o in opts]
    structures, index = [], {}
    for parts in all_parts:
        key = _structure(parts)
        if key not in index:
            index[key] = len(structures)
            structures.append(parts)
    width = 1 + max([sum(len(eu.values) for _, eu in parts) for parts in all_parts] + [0])
    hps = np.zeros((len(opts), width))
    for g, parts in enumerate(all_parts):
        values = [v for _, eu in parts for v in eu.values]
        hps[g, 0] = index[_structure(parts)]
        hps[g, 1:1 + len(values)] = values
    jit_src, np_src = _module_source(structures)
    key = hashlib.sha256((GENERATOR_VERSION + jit_src + np_src).encode()).hexdigest()[:24]
    jit_mod = cache.load("optim", key, lambda: jit_src)
    np_mod = cache.load("optimnp", key, lambda: np_src)
    n_slots = max([1] + [sum(eu.slots for _, eu in parts) for parts in all_parts])
    return CompiledRuns(jit_mod.step, np_mod.step, np.ascontiguousarray(hps), n_slots,
                        tuple(len(parts) == 0 for parts in all_parts),
                        tuple(tuple(tr for tr, _ in parts) for parts in all_parts), jit_mod.__name__)


def source_of(opts: Sequence) -> str:
    """The generated compiled source for ``opts`` (for reading and the docs)."""
    structures = []
    for parts in (_updates(o) for o in opts):
        if _structure(parts) not in [_structure(p) for p in structures]:
            structures.append(parts)
    return _module_source(structures)[0]


