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
``hps[run, 0]`` holds (``hps[run, 1:]`` are the chain's numbers in chain order). Two modules share these indices
and the ``hps`` rows: ``step`` holds the built-in optimizers' structures when the run set's chains are all among
them (a loop that names the step in its body is keyed by its module: one loop per model whatever the built-in
optimizer), else the run set's own structures only (such a module is the run set's alone); ``own_step`` only the
run set's own (what a loop that takes the step through a function pointer calls: it compiles one structure, not
fifteen). Each structure's function lives in a module of its own (:class:`ChainModule`, keyed by its text alone),
which every step module holding that structure imports: a structure compiles once per installation, whichever
modules dispatch to it. The sources are written once to the generated-code cache (:mod:`dyntools.codegen.cache`,
keyed by their SHA-256) and imported from there, so that numba caches their machine code: a second process with
the same run set loads it, nothing compiles.

The twin ``step_np`` is generated from the same element text on whole arrays (``u``, ``th`` arrays; the state row
``state[k]`` for ``state[k, i]``): the same operations in the same order, so the same bits.

Precision: with float32 parameters, SGD, momentum and Adam round their scalars (β, ε, rates, bias corrections, the
learning rate) to float32 (:func:`~dyntools.engine.precision.like`) and compute in float32 where their operands
are; a chain with a *widening* transform (AdaGrad, RMSProp, bias-corrected RMSProp, grouped decay) keeps its
scalars and the learning rate in float64, as PyTorch's float32 AdaGrad/RMSprop do. ``LIKE(x)`` in an element's
text is where that choice is made.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dyntools.optim.chain_step import flat_transforms
from dyntools.optim.fuse import HELPERS_NJIT, HELPERS_NP, direction_of, fill, fused_loop, indent

#: Bump when the generated text changes meaning without changing (keys the cache with the source).
GENERATOR_VERSION = "2"

class NotCompilable(ValueError):
    """A chain with a transform that has no compiled form (neither ``element_update`` nor ``compiled()``)."""


@dataclass(frozen=True)
class KernelCall:
    """A user's whole-array compiled update (``compiled() -> (kernel, hp)``, :mod:`dyntools.optim.chain_step`)
    inside the generated step: the fused loop stops before it (the direction so far in a float64 array), the
    kernel runs ``kernel(u, state rows, float64 θ, t, lr_t, hp)``, and the next loop goes on from its ``u``."""

    kernel: object
    values: tuple
    slots: int
    key: tuple
    widens: bool = True
    switch: None = None


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
    chains: tuple = ()       # per run, its transforms (what initial_state builds the state from)
    module: str = ""         # the generated module's name in sys.modules (a generated loop imports step from it)
    own: tuple = ()          # the structure indices the runs use (what own_step dispatches on)
    structures: tuple = ()   # every structure of ``step``, in index order

    @functools.cached_property
    def own_step(self):
        """``step`` restricted to the runs' own structures (the same ``_chain_k`` code under the same indices,
        so the same ``hps`` and the same bits): what a loop calling the step through a function pointer takes
        (:func:`dyntools.dynamics.path_loop.by_pointer`), compiled for the run set's chains only. Generated
        and cached like ``step``; nothing compiles until a loop calls it."""
        return _load_module([self.structures[k] for k in self.own], list(self.own))[0].step

    def initial_state(self, run: int, n_params: int) -> np.ndarray:
        """The zero state of run ``run`` for ``n_params`` parameters (AdaGrad's accumulator at its start,
        grouped decay's weights and groups in their rows): float64[n_slots, n_params]."""
        state = np.zeros((self.n_slots, n_params))
        row = 0
        for tr in self.chains[run]:
            block = tr.compiled_state(np.zeros(n_params)) if hasattr(tr, "compiled_state") else _rows(tr, n_params)
            state[row:row + block.shape[0]] = block
            row += block.shape[0]
        return state


def _rows(tr, n_params: int) -> np.ndarray:
    """A user transform's state as float64[k, p] rows (its ``init`` returns the array or a tuple of rows)."""
    init = tr.init(np.zeros(n_params))
    rows = [np.asarray(a, dtype=np.float64).reshape(-1, n_params) for a in (init if isinstance(init, tuple)
                                                                             else (init,))]
    return np.concatenate(rows) if rows else np.zeros((0, n_params))


def _compiled_form(opt_name: str, tr):
    """The element update of ``tr``, else its whole-array kernel as a :class:`KernelCall`."""
    eu = tr.element_update() if hasattr(tr, "element_update") else None
    if eu is not None:
        return eu
    if hasattr(tr, "compiled"):
        kernel, hp = tr.compiled()
        func = getattr(kernel, "py_func", kernel)
        return KernelCall(kernel, tuple(float(x) for x in np.asarray(hp, dtype=np.float64)), _rows(tr, 1).shape[0],
                          ("kernel", func.__module__, func.__qualname__, id(kernel)))
    raise NotCompilable(f"Invalid optimizer {opt_name!r}: its transform {type(tr).__name__} has no compiled form "
                        "(define element_update(), see dyntools.optim.transforms.ElementUpdate, or compiled())")


def _updates(opt) -> list:
    """The transforms of ``opt`` with their compiled forms."""
    return [(tr, _compiled_form(opt.name, tr)) for tr in flat_transforms(opt.chain)]


def _structure(parts) -> tuple:
    return tuple((type(tr).__module__, type(tr).__qualname__, eu.key) for tr, eu in parts)


def _chain_source(name: str, parts, numpy: bool) -> tuple[str, list[str]]:
    """One chain's step function (compiled: one fused element loop, or one per stretch between users' whole-array
    kernels; numpy: the same on whole arrays) and its arguments (the compiled form takes only those it reads)."""
    widened = any(eu.widens for _, eu in parts)
    calls = any(isinstance(eu, KernelCall) for _, eu in parts)
    lines = [""]                                   # the signature, written once the body is known
    stretches, items = [], []                      # (element items, kernel call after them or None)
    h0, s0 = 1, 0
    for j, (_, eu) in enumerate(parts):
        if isinstance(eu, KernelCall):
            stretches.append((items, f"{name}_kernel_{j}(ub, state[{s0}:{s0 + eu.slots}], pv, t, lr_t, "
                                     f"h[{h0}:{h0 + len(eu.values)}])"))
            items = []
        else:
            pre = eu.setup_np if numpy and eu.setup_np is not None else eu.setup
            body = eu.element_np if numpy and eu.element_np is not None else eu.element
            lines += indent(fill(pre, j, eu, h0, s0, widened, numpy), 4)
            items.append((fill(body, j, eu, h0, s0, widened, numpy),
                          fill(eu.switch, j, eu, h0, s0, widened, numpy) if eu.switch else None))
        h0, s0 = h0 + len(eu.values), s0 + eu.slots
    stretches.append((items, None))
    lr = "np.float64(lr_t)" if numpy else "lr_t"
    lines.append(f"    lr = {lr}" if widened else f"    lr = like(theta, {lr})")
    if numpy:
        lines.append("    th = theta.copy()")
    if calls:                                      # the float64 direction and parameters users' kernels take
        lines += ["    ub = np.empty(theta.shape[0])", "    pv = theta.astype(np.float64)"]
    for k, (items, call) in enumerate(stretches):
        first = "grad" if k == 0 else "ub"
        if call is None:
            last = "theta[:] = th - lr * u" if numpy else "theta[i] = th - lr * u"
        else:
            last = "ub[:] = u" if numpy else "ub[i] = u"
        lines += fused_loop(items, first, last, numpy)
        if call is not None:
            lines.append("    " + call)
    args = list(CHAIN_ARGS) if numpy else chain_args(lines[1:])
    lines[0] = f"def {name}({', '.join(args)}):"
    return "\n".join(lines) + "\n", args


#: the arguments of a chain's step function; ``h`` is the run's row of ``hps`` (``h[0]`` its structure index)
CHAIN_ARGS = ("theta", "grad", "state", "t", "lr_t", "h")


def chain_args(body_lines) -> list[str]:
    """The :data:`CHAIN_ARGS` a compiled chain's body reads, in order (θ, the gradient and the rate always).

    Each array an inlined function takes but does not read still costs its reference count per call: the plain SGD
    chain, inlined into the training loop, took ``state`` and ``h`` (a view made for the call) for nothing —
    ~30 ns per step of the 200-parameter diagonal net (AMD Zen 5, same process, processor time)."""
    body = "\n".join(body_lines)
    return [a for a in CHAIN_ARGS if a in ("theta", "grad", "lr_t") or re.search(rf"\b{a}\b", body)]


def _imports(structures: list, names: list) -> tuple[str, dict, str]:
    """The import lines of users' kernels (by module and name where they can be imported so; alias
    ``<name>_kernel_<j>`` for the chain function ``names[position]``), the namespace of the others, and a text that
    changes with their code (for the cache key)."""
    import sys

    from dyntools.user_code import source_fingerprint

    lines, namespace, stamp = [], {}, []
    for name, parts in zip(names, structures):
        for j, (_, eu) in enumerate(parts):
            if not isinstance(eu, KernelCall):
                continue
            func = getattr(eu.kernel, "py_func", eu.kernel)
            module = sys.modules.get(func.__module__)
            alias = f"{name}_kernel_{j}"
            if func.__module__ != "__main__" and getattr(module, func.__name__, None) is eu.kernel:
                lines.append(f"from {func.__module__} import {func.__name__} as {alias}")
            else:
                namespace[alias] = eu.kernel
            stamp.append(f"{func.__module__}.{func.__qualname__}:{source_fingerprint(eu.kernel) or id(eu.kernel)}")
    return "\n".join(sorted(set(lines))), namespace, "|".join(stamp)


_HEAD = ('"""Generated by dyntools.optim.compiled from optimizer chains: do not edit."""\nimport numpy as np\n'
         'from numba import njit\n\nfrom dyntools.engine.precision import like\n')


@dataclass(frozen=True)
class ChainModule:
    """The compiled step function of ONE chain structure, in a generated module of its own (``chain(…)``, the
    arguments its body reads): keyed by its text and its users' kernels' code, never by the run set it came with,
    so a structure compiles once per installation whatever step module dispatches to it (the suite had compiled
    196 chain functions for 45 distinct structures, one copy per step module holding them)."""

    name: str                # the module's name (``dyntools_generated_optimchain_<key>``)
    key: str
    source: str
    args: list
    namespace: dict


def _chain_module(parts) -> ChainModule:
    """The :class:`ChainModule` of the chain structure ``parts``."""
    from dyntools.codegen import cache

    kernels, namespace, stamp = _imports([parts], ["chain"])
    stateless = all(eu.slots == 0 for _, eu in parts)        # plain SGD (± decay): inlined, it vectorizes
    deco = '@njit(cache=True, error_model="numpy"' + (', inline="always")' if stateless else ")")
    body, args = _chain_source("chain", parts, False)
    source = _HEAD + kernels + "\n" + HELPERS_NJIT + f"\n\n{deco}\n" + body
    key = hashlib.sha256((GENERATOR_VERSION + source + stamp + cache.package_stamp()).encode()).hexdigest()[:24]
    return ChainModule(f"dyntools_generated_optimchain_{key}", key, source, args, namespace)


def _module_source(structures: list, indices: list | None = None, chains: list | None = None) -> tuple[str, str]:
    """The compiled step module and the NumPy module for the distinct chain structures (index = position, or
    ``indices[position]``: the structure's index in the full list, which ``hps[run, 0]`` names). The compiled
    module imports each structure's function from its :class:`ChainModule` as ``_chain_<index>`` (loaded first:
    :func:`_load_module`; ``chains``: those modules when the caller made them); the NumPy module holds its
    functions itself."""
    indices = list(range(len(structures))) if indices is None else indices
    chains = [_chain_module(parts) for parts in structures] if chains is None else chains
    np_kernels = _imports(structures, [f"_chain_{k}" for k in indices])[0]
    jit_parts, np_parts = [_HEAD], [_HEAD + np_kernels + "\n" + HELPERS_NP]
    jit_calls, np_calls = [], []
    for k, parts, chain in zip(indices, structures, chains):
        jit_parts.append(f"from {chain.name} import chain as _chain_{k}")
        np_source, np_args = _chain_source(f"_chain_{k}", parts, True)
        np_parts.append("\n" + np_source)
        test = "if" if not jit_calls else "elif"
        for calls, args in ((jit_calls, chain.args), (np_calls, np_args)):   # h is the run's row of hps
            passed = ", ".join("hps[run]" if a == "h" else a for a in args)
            calls.append(f"    {test} s == {k}.0:\n        _chain_{k}({passed})")

    def dispatch(calls):
        return ("def step(run, theta, grad, state, t, lr_t, hps):\n"
                '    """One optimizer step of run ``run`` in place (dyntools.optim.compiled)."""\n'
                "    s = hps[run, 0]\n" + "\n".join(calls) + "\n")

    jit_parts.append('\n\n@njit(cache=True, error_model="numpy", inline="always")\n' + dispatch(jit_calls))
    np_parts.append("\n" + dispatch(np_calls))
    return "\n".join(jit_parts), "\n".join(np_parts)


def check_user_transforms(all_parts) -> None:
    """Every transform from outside dyntools.optim runs against its readable ``update`` once per process before it
    trains (:func:`dyntools.optim.chain_step.check_compiled_matches_update`): an element update through its
    generated ``direction`` kernel, a whole-array kernel as it is."""
    from dyntools.optim.chain_step import check_compiled_matches_update

    for parts in all_parts:
        for tr, eu in parts:
            if type(tr).__module__.startswith("dyntools.optim."):
                continue                               # built-ins: held to the chain by the tests
            compiled = (eu.kernel, np.array(eu.values)) if isinstance(eu, KernelCall) else direction_of(tr)
            check_compiled_matches_update(tr, compiled, (eu.slots, 4))


def signature(opt) -> tuple | None:
    """What the compiled step reads of ``opt``: per transform its type, structure key and numbers (None when a
    transform has no compiled form). Two optimizers with one signature and one ``lr`` step alike."""
    try:
        parts = _updates(opt)
    except NotCompilable:
        return None
    return tuple((type(tr).__qualname__, eu.key, eu.values) for tr, eu in parts)


@functools.lru_cache(maxsize=1)
def _builtin_parts() -> list:
    """The chain structures of the built-in optimizers' common settings, which the step of a run set of them holds.

    Each alias of :data:`~dyntools.optim.aliases.ALIASES` at its defaults, with and without weight decay, and
    with momentum 0.9 where the sweep passes one (SGD, SGDW). Since the step of every run set of them holds
    them all, in this order, such a run set generates the SAME step module whatever its optimizers: a training loop
    (keyed by its model kernel and the step module, :mod:`dyntools.dynamics.loops`) is compiled once per model, not
    once per optimizer (the transformer's loop: ~7 s of compiling per optimizer before). The price: the step compiles
    every structure (about 2.5 processor-seconds per precision, once per installation, then loaded from the cache;
    a loop that takes the step through a function pointer is keyed by no module and takes
    :attr:`CompiledRuns.own_step`, which holds only the run set's structures);
    the dispatch over them costs nothing measurable per step (AMD EPYC Zen 5: AdamW as the last of 15 structures
    119–126 ns per step of 2 parameters against 127–133 ns alone, 300 ns both on 400). A user's alias is not
    among them (a run set with a chain outside them generates a step of its own structures: :func:`_step_structures`).
    """
    import inspect

    from dyntools.optim.aliases import ALIASES

    parts_list = []
    for entry in ALIASES.values():
        if not entry.factory.__module__.startswith("dyntools."):
            continue
        params = inspect.signature(entry.factory).parameters
        decays = (0.0, 0.01) if "weight_decay" in params else (None,)
        momenta = (0.0, 0.9) if entry.grid_momentum and "momentum" in params else (None,)
        for wd in decays:
            for mom in momenta:
                kwargs = {"lr": 0.01} | ({} if wd is None else {"weight_decay": wd}) \
                    | ({} if mom is None else {"momentum": mom})
                parts_list.append(_updates(entry.factory(**kwargs)))
    return _distinct(parts_list)


def _step_structures(all_parts) -> list:
    """The structures ``step`` holds for a run set: the built-ins' (:func:`_builtin_parts`) when every chain of the
    run set is among them — the one module of every such run set — else the run set's own distinct structures only.
    A module holding a structure outside the built-ins is that run set's alone (no other run set's loop is keyed by
    it), so the built-ins' fifteen would be compiled in it for nothing: ~4.6 processor-seconds per new structure
    instead of a fraction of one (AMD EPYC Zen 4; the suite's hypothesis test of the step compiled 20 such modules)."""
    builtin = _builtin_parts()
    known = {_structure(parts) for parts in builtin}
    own = _distinct(all_parts)
    return builtin if all(_structure(parts) in known for parts in own) else own


def _distinct(all_parts) -> list:
    """The distinct chain structures among ``all_parts``, in the order first seen."""
    first = {}
    for parts in all_parts:
        first.setdefault(_structure(parts), parts)
    return list(first.values())


#: the step modules loaded in this process, by their chain structures and users' kernels' stamp (while they are
#: the modules of their names in ``sys.modules``)
_LOADED: dict = {}


def compile_runs(opts: Sequence) -> CompiledRuns:
    """The compiled step of the optimizers ``opts`` (one per run; module docstring).

    Raises
    ------
    NotCompilable
        When a chain holds a transform without a compiled form.
    """
    all_parts = [_updates(o) for o in opts]
    structures = _step_structures(all_parts)
    index = {_structure(parts): i for i, parts in enumerate(structures)}
    width = 1 + max([sum(len(eu.values) for _, eu in parts) for parts in all_parts] + [0])
    hps = np.zeros((len(opts), width))
    for g, parts in enumerate(all_parts):
        values = [v for _, eu in parts for v in eu.values]
        hps[g, 0] = index[_structure(parts)]
        hps[g, 1:1 + len(values)] = values
    check_user_transforms(all_parts)
    jit_mod, np_mod = _load_module(structures, list(range(len(structures))))
    n_slots = max([1] + [sum(eu.slots for _, eu in parts) for parts in all_parts])
    return CompiledRuns(jit_mod.step, np_mod.step, np.ascontiguousarray(hps), n_slots,
                        tuple(len(parts) == 0 for parts in all_parts),
                        tuple(tuple(tr for tr, _ in parts) for parts in all_parts), jit_mod.__name__,
                        tuple(sorted({int(k) for k in hps[:, 0]})), tuple(structures))


def _load_module(structures: list, indices: list):
    """The compiled and NumPy step modules of ``structures`` (under ``indices``), from the generated-code cache
    (written first when absent), keyed by their text and their users' kernels' code; the chain modules
    (:class:`ChainModule`) the compiled one imports by name are loaded first."""
    from dyntools.codegen import cache

    _, namespace, stamp = _imports(structures, [f"_chain_{k}" for k in indices])
    memo = (tuple(_structure(parts) for parts in structures), tuple(indices), stamp)
    loaded = _LOADED.get(memo)
    if loaded is None or any(sys.modules.get(m.__name__) is not m for m in loaded):   # writing them takes ~2 ms
        chains = [_chain_module(parts) for parts in structures]
        for chain in chains:
            cache.load("optimchain", chain.key, lambda chain=chain: chain.source, chain.namespace)
        jit_src, np_src = _module_source(structures, indices, chains)
        key = hashlib.sha256((GENERATOR_VERSION + jit_src + np_src + stamp + cache.package_stamp()).encode()
                             ).hexdigest()[:24]
        loaded = _LOADED[memo] = (cache.load("optim", key, lambda: jit_src),
                                  cache.load("optimnp", key, lambda: np_src, namespace))
    return loaded


def source_of(opts: Sequence) -> str:
    """The generated compiled source for ``opts`` (for reading and the docs): the step module, then each chain
    structure's module (:class:`ChainModule`), each after a comment line naming it."""
    structures = _distinct(_updates(o) for o in opts)
    chains = [_chain_module(parts) for parts in structures]
    texts = [("dyntools_generated_optim (the step)", _module_source(structures, None, chains)[0])]
    texts += [(f"{c.name} (structure {k})", c.source) for k, c in enumerate(chains)]
    return "\n".join(f"# ---- module {name}\n{text}" for name, text in texts)


