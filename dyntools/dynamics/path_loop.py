"""The generic step loop of one training path, compiled, and its NumPy twin.

Step ``t`` of path ``p`` (see :mod:`dyntools.dynamics.train` for the runs × seeds layout) is

    I_t        = the sampler's examples for step t                         (dyntools.engine.samplers)
    before_grad(t, θ_t, …)                                                  (the model's hooks, e.g. dropout masks)
    L, g_t     = kernel(θ_t; X[I_t], y[I_t] + δ ξ_t)                        (the model's loss_grad)
    after_grad(t, θ_t, …)                                                   (e.g. batch norm's running statistics)
    θ_{t+1}    = step(run, θ_t, g_t, state, t + 1, lr_t, hps)              (the runs' compiled optimizer step,
                                                                            dyntools.optim.compiled)
    after_step(t, θ_{t+1}, …)                                               (e.g. the toy's counters)

with the iterate recorded when ``t`` is on the record grid and the path stopped at the first step whose
parameters are non-finite or beyond the bound (:mod:`dyntools.engine.guard`; ``after_step`` is not called on that
step). The hooks and the state they carry (their own row per path, recorded with θ when the model asks) are
declared by the model (:class:`dyntools.models.base.Hooks`); a model without them gets the no-op hooks, so no loop
special-cases dropout, batch norm or counters.

A run's buffers and data travel as one typed object, :class:`LoopArrays` (a named tuple: numba compiles it as
the plain tuple it replaces — the same machine code, the same compile time — and the loops read its fields by
name). :func:`advance_path` is inlined into a ``nogil`` loop over paths: one generated per model kernel and
optimizer step, cached on disk, in :mod:`dyntools.dynamics.loops`; :func:`advance_paths_by_pointer` (kernel,
step and hooks called through function pointers, compiled once for all kernels of the protocol's signature — per
sampler and label noise on or off — and cached) for every run shorter than
:data:`dyntools.dynamics.run_plan.POINTER_RUN_PATH_STEPS` path-steps (:func:`by_pointer`); and
:func:`advance_paths` (kernel and step passed as arguments, compiled once per process) for a longer run of a
kernel that cannot be imported by name.
:func:`advance_path_numpy` is the twin. This module sits below the trainer, the cached loops and the tuned loops,
which all use it, and imports none of them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.experimental.function_type import FunctionModel
from numba.extending import NativeValue, register_model, unbox

from dyntools.dynamics import compile_helper
from dyntools.engine import guard, record, rng, samplers
from dyntools.models.base import no_hook, no_hook_np


class LoopArrays(NamedTuple):
    """The arrays and settings every training loop reads (``P`` paths, ``G`` runs, ``S'`` data sets).

    thetas : float[P, p]; opt_states : float[P, K, p] (each path's optimizer state); Xs, ys : [S', n, d],
    [S', n] (``data_of[p]`` picks the path's data set); iargs, fargs : the kernel's integer and float
    arguments; ws_size : the kernel's workspace length; sampler, batch, drop_last : the sampler's code, ``b``
    and its epoch rule; replay : int64[P or 1, T·b] or (0, 0); states : uint64[P, 4] (the paths' streams);
    perms : int64[P, n]; pos : int64[P]; label_noise : δ; hps : float64[G, H] (the compiled step's rows,
    :class:`dyntools.optim.compiled.CompiledRuns`); lrs : float64[G, 1 or t1 − t0] (lr · m_t: constant, or
    the rates of steps t0 … t1 − 1 of this call); run_of : int64[P]; step_losses : float64[P, T] (the
    kernel's mini-batch loss of every step) or (P, 0); plain_sgd : bool[G] (run g's step is θ − lr_t g);
    hook_state : float64[P, S] (each path's hook state row), hook_streams : uint64[P, 4] (each path's hook
    stream), hook_args : float64[G, A] (each run's hook constants), hook_rec : float64[P, K, S] (the hook state
    recorded with θ) or (P, 0, S): see :class:`dyntools.models.base.Hooks` and :func:`no_hooks`.
    """

    thetas: np.ndarray
    opt_states: np.ndarray
    Xs: np.ndarray
    ys: np.ndarray
    data_of: np.ndarray
    iargs: np.ndarray
    fargs: np.ndarray
    ws_size: int
    sampler: int
    batch: int
    drop_last: bool
    replay: np.ndarray
    states: np.ndarray
    perms: np.ndarray
    pos: np.ndarray
    label_noise: float
    hps: np.ndarray
    lrs: np.ndarray
    run_of: np.ndarray
    step_losses: np.ndarray
    plain_sgd: np.ndarray
    hook_state: np.ndarray
    hook_streams: np.ndarray
    hook_args: np.ndarray
    hook_rec: np.ndarray


def no_hooks(P: int, G: int) -> dict:
    """The hook fields of :class:`LoopArrays` for ``P`` paths of ``G`` runs of a model without hook state."""
    return {"hook_state": np.zeros((P, 0)), "hook_streams": np.zeros((P, 4), dtype=np.uint64),
            "hook_args": np.zeros((G, 0)), "hook_rec": np.zeros((P, 0, 0))}


#: The fields a loop writes (the rest is read-only data), with the names the tuned-loop probe reports.
WRITTEN = {"thetas": "theta", "opt_states": "optimizer state", "states": "sampler stream",
           "perms": "sampler permutation", "pos": "sampler position", "step_losses": "step loss",
           "hook_state": "hook state", "hook_streams": "hook stream", "hook_rec": "recorded hook state"}


@njit(inline="always")
def first_record(record_steps, t0):
    """The index of the first recorded step ``≥ t0`` in the sorted ``record_steps`` (``np.searchsorted``'s left
    side, by bisection): written out, because numba's ``np.searchsorted`` brings its generic comparison machinery
    into every loop that calls it (seconds of compiling in a cold process)."""
    lo, hi = 0, record_steps.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if record_steps[mid] < t0:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def put(dst, src):
    """``dst[i] = src[i]`` for every ``i`` of the 1-D ``src`` (cast to ``dst``'s type, as a slice assignment
    would): a plain loop, compiled once per signature, instead of numba's slice assignment, whose broadcasting
    machinery each of the loop's ten row copies brought along."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(inline="always")
def open_path(a, p):
    """Path ``p``'s private copies of its rows (neighbouring rows share cache lines) — θ, optimizer state,
    stream, permutation, position — and its data set and run: ``(θ, state, st, perm, cur, X, y, g)``."""
    X = a.Xs[a.data_of[p]]
    y = a.ys[a.data_of[p]]
    return (a.thetas[p].copy(), a.opt_states[p].copy(), a.states[p:p + 1].copy(), a.perms[p].copy(), a.pos[p], X, y,
            a.run_of[p])


@njit(inline="always")
def close_path(a, p, theta, ostate, st, perm, cur):
    """Write path ``p``'s private rows back (the inverse of :func:`open_path`)."""
    put(a.thetas[p], theta)
    for j in range(ostate.shape[0]):
        put(a.opt_states[p, j], ostate[j])
    put(a.states[p], st[0])
    put(a.perms[p], perm)
    a.pos[p] = cur


@njit(inline="always", error_model="numpy")
def advance_path(kernel, step, before_grad, after_grad, after_step, p, arrays, t0, t1, record_steps, theta_rec, bound,
                 diverged_at, record_final):
    """:func:`advance_path_drawn` with the draw of every sampler (:data:`dyntools.engine.samplers.draw_batch`)."""
    advance_path_drawn(samplers.draw_batch, kernel, step, before_grad, after_grad, after_step, p, arrays, t0, t1,
                       record_steps, theta_rec, bound, diverged_at, record_final)


@njit(inline="always", error_model="numpy")
def advance_path_drawn(draw, kernel, step, before_grad, after_grad, after_step, p, arrays, t0, t1, record_steps,
                       theta_rec, bound, diverged_at, record_final):
    """Advance path ``p`` from step ``t0`` to ``t1`` in place (see the module docstring), the batches drawn by
    ``draw`` (:func:`dyntools.engine.samplers.drawer`: every sampler, or the run's sampler alone).

    ``arrays`` is a :class:`LoopArrays`; ``step`` the runs' compiled optimizer step
    (:attr:`dyntools.optim.compiled.CompiledRuns.step`); ``before_grad``, ``after_grad``, ``after_step`` the
    model's hooks (:class:`dyntools.models.base.Hooks`); theta_rec : float64[P, K, p]; diverged_at : int64[P].
    The path works on private copies of its rows (:func:`open_path`).

    It is inlined into each built-in model's cached loop (:mod:`dyntools.dynamics.loops`): a compiled
    kernel passed as an argument cannot be cached on disk by numba, a kernel named in the body can.
    """
    a = arrays
    if diverged_at[p] != guard.NEVER:
        return
    theta, ostate, st, perm, cur, X, y, g = open_path(a, p)
    hs, hst, ha = a.hook_state[p].copy(), a.hook_streams[p:p + 1].copy(), a.hook_args[g]
    keep_hooks = a.hook_rec.shape[1] > 0
    sampler, label_noise, drop_last, replay = a.sampler, a.label_noise, a.drop_last, a.replay
    n = X.shape[0]
    b = n if sampler == samplers.FULL else a.batch
    idx = np.empty(b, dtype=np.int64)
    noise = np.zeros(b)
    grad = np.empty(theta.shape[0], dtype=theta.dtype)
    ws = np.zeros(a.ws_size, dtype=theta.dtype)
    row = 0 if replay.shape[0] == 1 else p
    k = first_record(record_steps, t0)
    # The fields the steps read are taken out of the tuple once and the step's end is written out here: read in the
    # loop and handed to an inlined helper, they cost 14 instead of 12 NRT_incref calls per SGD step and ~9 % of a
    # Rosenbrock step; undoing only one of the two did not recover the time (issue 37 item 6).
    iargs, fargs, hps, lrs, step_losses = a.iargs, a.fargs, a.hps, a.lrs, a.step_losses
    for t in range(t0, t1):
        if record.due(record_steps, k, t):
            put(theta_rec[p, k], theta)
            if keep_hooks:
                put(a.hook_rec[p, k], hs)
            k += 1
        cur = draw(sampler, idx, noise, label_noise, b, n, replay, row, t, perm, cur, st, drop_last)
        before_grad(t, theta, hs, hst, ha, b, ws)
        loss = kernel(theta, X, y, idx, b, noise, grad, ws, iargs, fargs)
        after_grad(t, theta, hs, hst, ha, b, ws)
        if step_losses.shape[1] > 0:
            step_losses[p, t] = loss
        lr_t = lrs[g, 0] if lrs.shape[1] == 1 else lrs[g, t - t0]
        step(g, theta, grad, ostate, t + 1, lr_t, hps)
        if guard.beyond(guard.checked_size(theta, bound), bound):   # non-finite or beyond: stop (dyntools.engine.guard)
            diverged_at[p] = t + 1
            break
        after_step(t, theta, hs, hst, ha, b, ws)
    close_path(a, p, theta, ostate, st, perm, cur)
    put(a.hook_state[p], hs)
    put(a.hook_streams[p], hst[0])
    if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
        put(theta_rec[p, k], theta)
        if keep_hooks:
            put(a.hook_rec[p, k], hs)


@njit(nogil=True, error_model="numpy")
def advance_paths(paths, kernel, step, before_grad, after_grad, after_step, arrays, t0, t1, record_steps, theta_rec,
                  bound, diverged_at, record_final):
    """Every path in ``paths`` with ``kernel``, ``step`` and the hooks given as arguments: the loop of a model that
    does not have a cached loop in :mod:`dyntools.dynamics.loops`; compiled once per process."""
    for p in paths:
        advance_path(kernel, step, before_grad, after_grad, after_step, p, arrays, t0, t1, record_steps, theta_rec,
                     bound, diverged_at, record_final)


def _paths_by_pointer(paths, kernel, step, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path_drawn(draw, kernel, step, no_hook, no_hook, no_hook, p, arrays, t0, t1,  # noqa: F821 (see below)
                           record_steps, theta_rec, bound, diverged_at, record_final)


def _paths_by_pointer_hooked(paths, kernel, step, before_grad, after_grad, after_step, arrays, t0, t1, record_steps,
                             theta_rec, bound, diverged_at, record_final):
    for p in paths:
        advance_path_drawn(draw, kernel, step, before_grad, after_grad, after_step, p, arrays,  # noqa: F821
                           t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)


def advance_paths_by_pointer(kind: int, noisy: bool, hooked: bool = False):
    """:func:`advance_paths` with ``kernel`` and ``step`` typed as function pointers (numba's first-class
    ``FunctionType`` of the model protocol's and the step's signatures) instead of as their dispatchers, and the
    batches drawn by the sampler ``kind`` alone, with label noise or without (``noisy``;
    :func:`dyntools.engine.samplers.drawer`): ``fn(paths, kernel, step, arrays, t0, t1, record_steps, theta_rec,
    bound, diverged_at, record_final)``, compiled once for every kernel and step of those signatures and cached on
    disk — see :func:`by_pointer`. The no-op hooks are named in it; with ``hooked`` the model's three step hooks
    come through pointers too, as the arguments after ``step``: ``fn(paths, kernel, step, before_grad, after_grad,
    after_step, arrays, …)`` (:func:`hook_type`).

    One function per ``(kind, noisy, hooked)``, made once: the same code with ``draw`` bound in its own globals and
    its own name (numba caches a function by its name and file), so a cold compile types and optimizes only the
    run's own draws (~1 of ~3.7 processor-seconds, issue 38)."""
    key = (int(kind), bool(noisy), bool(hooked))
    found = _BY_POINTER.get(key)
    if found is None:
        import types as pytypes

        name = (f"advance_paths_by_pointer_{samplers.NAMES[key[0]].replace('-', '_')}{'_noisy' if key[1] else ''}"
                f"{'_hooked' if key[2] else ''}")
        code = (_paths_by_pointer_hooked if key[2] else _paths_by_pointer).__code__
        fn = pytypes.FunctionType(code, dict(globals(), draw=samplers.drawer(*key[:2])), name)
        fn.__qualname__, fn.__doc__ = name, advance_paths_by_pointer.__doc__
        found = _BY_POINTER[key] = njit(cache=True, nogil=True, error_model="numpy")(fn)
    return found


#: :func:`advance_paths_by_pointer` by sampler code, label noise and hooks
_BY_POINTER: dict = {}


def step_type(arrays: LoopArrays):
    """numba's ``FunctionType`` of the optimizer step ``step(run, θ, g, state, t, lr_t, hps)`` for the dtypes of
    ``arrays`` (θ and g contiguous vectors of the parameters' dtype, the state a C matrix of the states').

    Memoized by :func:`_arg_key` of the arrays it reads (a tuned loop asks once per window: built each time, with
    ``numba.typeof`` in Python, it was ~0.2 ms of a 10⁴-step run's ~7 ms, AMD Zen 5)."""
    key = ("step", arrays.thetas.dtype, arrays.opt_states.dtype, _arg_key(arrays.hps))
    found = _SIGNATURES.get(key)
    if found is None:
        from numba import typeof, types

        vec = types.Array(typeof(arrays.thetas).dtype, 1, "C")
        state = types.Array(typeof(arrays.opt_states).dtype, 2, "C")
        found = _SIGNATURES[key] = types.FunctionType(types.none(types.int64, vec, vec, state, types.int64,
                                                                 types.float64, typeof(arrays.hps)))
    return found


def kernel_type(arrays: LoopArrays):
    """numba's ``FunctionType`` of the model protocol's kernel for the types of ``arrays`` (memoized as
    :func:`step_type`)."""
    X, y = arrays.Xs[0], arrays.ys[0]
    key = ("kernel", arrays.thetas.dtype, _arg_key(X), _arg_key(y), _arg_key(arrays.iargs), _arg_key(arrays.fargs))
    found = _SIGNATURES.get(key)
    if found is None:
        from numba import typeof, types

        vec = types.Array(typeof(arrays.thetas).dtype, 1, "C")      # θ, its gradient and the workspace
        # the label noise of the batch is float64 in every precision (the loop's ``noise``)
        found = _SIGNATURES[key] = types.FunctionType(types.float64(
            vec, typeof(X), typeof(y), types.int64[::1], types.int64, types.float64[::1], vec, vec,
            typeof(arrays.iargs), typeof(arrays.fargs)))
    return found


def hook_type(arrays: LoopArrays):
    """numba's ``FunctionType`` of a step hook ``hook(t, θ, hstate, hstream, hargs, b, ws)``
    (:class:`dyntools.models.base.Hooks`) as :func:`advance_path_drawn` calls it on ``arrays``: θ and ws contiguous
    vectors of the parameters' dtype, the path's own copies of its state row and stream, its run's row of the hook
    constants (memoized as :func:`step_type`)."""
    key = ("hook", arrays.thetas.dtype, _arg_key(arrays.hook_state), _arg_key(arrays.hook_streams),
           _arg_key(arrays.hook_args))
    found = _SIGNATURES.get(key)
    if found is None:
        from numba import typeof, types

        vec = types.Array(typeof(arrays.thetas).dtype, 1, "C")
        state = types.Array(typeof(arrays.hook_state).dtype, 1, "C")          # a row's copy
        stream = types.Array(typeof(arrays.hook_streams).dtype, 2, "C")       # a one-row slice's copy
        args = typeof(arrays.hook_args)
        row = args.copy(ndim=1, layout="C" if args.layout == "C" else "A")    # a row of the run's constants
        found = _SIGNATURES[key] = types.FunctionType(types.none(types.int64, vec, state, stream, row, types.int64,
                                                                 vec))
    return found


#: the step's, the kernel's and the hooks' ``FunctionType`` by what numba's types of their arrays depend on
_SIGNATURES: dict = {}


def hooks_take_pointers(hooks, arrays: LoopArrays) -> bool:
    """Whether each of the model's compiled ``hooks`` that is not the no-op compiles under :func:`hook_type`'s
    signature (compiled now, as :func:`by_pointer` calls it). A hook that returns a value does not (the signature
    returns nothing); the loop that names it ignores the value, so the trainer gives such a model that loop."""
    from numba.core.errors import TypingError

    own = [hook for hook in hooks if hook is not no_hook]
    if not own:
        return True
    ptype = PointerType(hook_type(arrays).signature)
    try:
        for hook in own:
            pointer(hook, ptype)
    except TypingError:
        return False
    return True


def with_pointers(loop, pointers: dict, rebuild: tuple | None = None):
    """``loop`` (a cached ``njit`` dispatcher) called with the arguments at the positions of ``pointers``
    (position → ``FunctionType``) passed as function pointers: one compiled loop for every function of that
    signature, cached on disk. Returns ``call(*args)``.

    numba's dispatcher types its arguments in C (~3 µs for a :class:`LoopArrays`); a call with pointers must
    name the types itself, and ``numba.typeof`` of a LoopArrays costs ~200 µs in Python — paid per thread and
    per window it was a tenth of a 10⁴-step run of a small network (AMD Zen 5). So the compiled entry is found
    by a key of what the types depend on (:func:`_arg_key`), and ``typeof`` runs once per new key. The functions
    at those positions go in as :class:`Pointer` values (their addresses looked up once, :func:`pointer`), typed
    :class:`PointerType`: numba unboxes a dispatcher passed as a ``FunctionType`` by looking both addresses up
    in Python on every call (~0.1 ms per call with the GIL held, four calls per window on two threads).

    At the first call of new argument types the functions are compiled (or loaded) first, then the loop — in a
    helper process meanwhile when both are cold and ``rebuild`` (``(module, function, args)``: ``function(*args)``
    is ``loop``) tells the helper how to find it (:func:`dyntools.dynamics.compile_helper.compile_beside`)."""
    typed = {i: PointerType(t.signature) for i, t in pointers.items()}

    def call(*args):
        key = (loop,) + tuple(typed[i] if i in typed else _arg_key(v) for i, v in enumerate(args))
        entry = _ENTRIES.get(key)
        if entry is None:
            from numba import typeof

            arg_types = tuple(typed[i] if i in typed else typeof(v) for i, v in enumerate(args))
            compiled = loop.overloads.get(arg_types)
            if compiled is None:
                functions = [(args[i], typed[i].signature, lambda i=i: pointer(args[i], typed[i]))
                             for i in sorted(typed)]                   # the kernel (position 1) first
                compiled = compile_helper.compile_beside(loop, arg_types, functions, rebuild)
            entry = _ENTRIES[key] = compiled.entry_point
        entry(*(pointer(v, typed[i]) if i in typed else v for i, v in enumerate(args)))

    return call


#: the compiled entry of a loop called with pointers, by the loop and :func:`_arg_key` of its arguments
_ENTRIES: dict = {}


class PointerType(types.FunctionType):
    """numba's first-class function type of a given signature whose Python value is a :class:`Pointer` (the compiled
    function's addresses, looked up once) instead of a dispatcher: the same machine value (numba's struct of the C
    wrapper's, the object's and the compiled function's addresses) and the same call through the compiled address,
    unboxed by reading two attributes in C (:func:`_unbox_pointer`)."""


class Pointer:
    """A compiled function as :class:`PointerType` passes it: ``function`` (kept alive with its code),
    ``c_address`` (numba's C wrapper) and ``jit_address`` (the compiled function, numba's calling convention) of
    ``signature``."""

    __slots__ = ("function", "signature", "c_address", "jit_address")

    def __init__(self, function, signature):
        from numba.experimental.function_type import _get_jit_address, _get_wrapper_address

        self.function, self.signature = function, signature
        self.c_address = _get_wrapper_address(function, signature)
        self.jit_address = _get_jit_address(function, signature)


def pointer(function, ptype: PointerType) -> Pointer:
    """The :class:`Pointer` of ``function`` (a numba dispatcher) under ``ptype``'s signature, made once per function
    and signature (compiling it under that signature if it is not yet: :func:`one_cache_entry`)."""
    key = (function, ptype)
    found = _POINTERS.get(key)
    if found is None:
        with one_cache_entry(function, ptype.signature):
            found = _POINTERS[key] = Pointer(function, ptype.signature)
    return found


@contextmanager
def one_cache_entry(function, signature):
    """Around the compile of ``function`` under a first-class function's ``signature``: numba's disk cache files a
    compile by its key, the argument types for a call from Python but the whole signature (with the return type)
    for a function pointer, so a kernel compiled one way in a process was compiled again the other way in the next
    (the transformer's 11–30 s kernel, twice in one run of the suite). Found on disk under its argument types only,
    it is loaded by them; compiled here, it is filed under both keys."""
    args = tuple(signature.args)
    ready = not hasattr(function, "overloads") or args in function.overloads     # (not a dispatcher: nothing to file)
    by_args = None if ready else compile_helper.on_disk(function, args)
    by_signature = None if ready else compile_helper.on_disk(function, signature)
    if by_args and not by_signature:
        function.compile(args)                         # a load from the disk cache
    yield
    if by_args is False and by_signature is False and args in function.overloads:
        try:
            function._cache.save_overload(args, function.overloads[args])    # numba's private API; else skipped
        except Exception:  # noqa: BLE001 - another numba: the next process may compile it again, no more
            pass


#: the :class:`Pointer` of a function under a :class:`PointerType`
_POINTERS: dict = {}

register_model(PointerType)(FunctionModel)


@unbox(PointerType)
def _unbox_pointer(typ, obj, c):
    """A :class:`Pointer` into numba's first-class function struct (as numba's own unboxing of a dispatcher fills
    it, from addresses read once instead of looked up per call)."""
    sfunc = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    failed = cgutils.alloca_once_value(c.builder, cgutils.false_bit)
    for field, attribute in (("c_addr", "c_address"), ("jit_addr", "jit_address")):
        addr = c.pyapi.object_getattr_string(obj, attribute)
        with c.builder.if_else(cgutils.is_null(c.builder, addr), likely=False) as (missing, found):
            with missing:
                c.builder.store(cgutils.true_bit, failed)
            with found:
                setattr(sfunc, field, c.pyapi.long_as_voidptr(addr))
                c.pyapi.decref(addr)
    sfunc.py_addr = c.builder.ptrtoint(obj, c.context.get_value_type(types.voidptr))
    return NativeValue(sfunc._getvalue(), is_error=c.builder.load(failed))



def by_pointer(kernel, step, arrays: LoopArrays, hooks=None, *, compile_kernel_now: bool = True):
    """A loop over paths for ``kernel`` (a numba dispatcher of the model protocol) and the optimizer ``step``
    that calls both through function pointers: ``fn(paths, arrays, t0, t1, record_steps, theta_rec, bound,
    diverged_at, record_final)``; ``hooks`` (the model's compiled ``(before_grad, after_grad, after_step)``,
    :class:`dyntools.models.base.Hooks`) are called through pointers too unless they are the no-op hooks.

    The loop is compiled once per argument types for all kernels and steps (and cached on disk), so a new
    model pays only for compiling its own kernel — not, as a loop with the kernel named in its body does,
    ~15 s for the whole step loop (samplers, the optimizer step, recording, the guard) again. The price is an
    indirect call per step (and the kernel not inlined into the loop), which the kernels of models declared in
    sympy (:class:`~dyntools.models.symbolic.SymbolicModel`) dwarf — but not a built-in kernel whose step takes
    a fraction of a microsecond (DiagNet at d = 200, batch 1: 0.385 against 0.342 µs per step), so the built-in
    models keep the loop named for their kernel in a long run. In a run shorter than
    :data:`dyntools.dynamics.run_plan.POINTER_RUN_PATH_STEPS` path-steps the trainer takes this loop for every
    model (the indirect calls cost at most ~1.5 ms there, a loop of its own 3–10 s of compiling); a longer one names
    the optimizer step in the loop (:func:`dyntools.dynamics.loops.pointer_loop`), and this loop serves a step that
    cannot be imported by name. ``arrays`` fixes the signatures' types.

    ``compile_kernel_now``: the kernel is compiled (or loaded) now, for a caller that runs it by argument types
    before the loop (the trainer's check of a user's kernel); else at the loop's first call, while a helper process
    compiles the loop if both are cold (:mod:`dyntools.dynamics.compile_helper`)."""
    kernel_sig = kernel_type(arrays)
    if compile_kernel_now:
        pointer(kernel, PointerType(kernel_sig.signature))     # also filed for a call by argument types
    pointers = {1: kernel_sig, 2: step_type(arrays)}
    hooked = hooks is not None and any(h is not no_hook for h in hooks)
    if hooked:
        pointers.update(dict.fromkeys((3, 4, 5), hook_type(arrays)))
    functions = (kernel, step) + (tuple(hooks) if hooked else ())
    calls: dict = {}

    def loop(paths, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
        key = (int(arrays.sampler), bool(arrays.label_noise != 0.0))    # each call: its own arrays' sampler and noise
        call = calls.get(key)
        if call is None:
            call = calls[key] = with_pointers(advance_paths_by_pointer(*key, hooked), pointers,
                                              rebuild=(__name__, "advance_paths_by_pointer", (*key, hooked)))
        call(paths, *functions, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final)

    return loop


def advance_path_numpy(kernel_np, step_np, p, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                       record_final, stepper=None, hooks_np=None):
    """NumPy twin of :func:`advance_path` (``hooks_np``: the model's NumPy hooks ``(before_grad, after_grad,
    after_step)``, default none): the same draws in the same order; the optimizer step is
    ``step_np`` (:attr:`dyntools.optim.compiled.CompiledRuns.step_np`, the same bits as the compiled step) —
    or, with ``stepper`` (:class:`dyntools.optim.chain_step.ChainStepper`), the path's optimizer chain itself
    (an optimizer without a fused kernel; ``kernel_np`` may then be the compiled kernel)."""
    a = arrays
    sampler, label_noise, replay, pos = a.sampler, a.label_noise, a.replay, a.pos
    if diverged_at[p] != guard.NEVER:
        return
    theta, ostate, st = a.thetas[p], a.opt_states[p], a.states[p:p + 1]
    perm = a.perms[p]
    X, y = a.Xs[a.data_of[p]], a.ys[a.data_of[p]]
    g = a.run_of[p]
    before_grad, after_grad, after_step = (no_hook_np,) * 3 if hooks_np is None else hooks_np
    hs, hst, ha = a.hook_state[p], a.hook_streams[p:p + 1], a.hook_args[g]
    keep_hooks = a.hook_rec.shape[1] > 0
    n = X.shape[0]
    b = n if sampler == samplers.FULL else a.batch
    grad = np.empty(theta.shape[0], dtype=theta.dtype)
    ws = np.zeros(a.ws_size, dtype=theta.dtype)
    row = 0 if replay.shape[0] == 1 else p
    k = record.start_index(record_steps, t0)
    for t in range(t0, t1):
        if record.due_np(record_steps, k, t):
            theta_rec[p, k] = theta
            if keep_hooks:
                a.hook_rec[p, k] = hs
            k += 1
        idx = np.empty(b, dtype=np.int64)
        noise = np.zeros(b)
        fixed = label_noise == 0.0 and sampler in (samplers.FULL, samplers.REPLAY)
        if fixed:                    # no draws: the batch in one slice (the loop below gives the same)
            idx[:] = np.arange(b) if sampler == samplers.FULL else replay[row, t * b:(t + 1) * b]
        for q in range(0 if fixed else b):
            if sampler == samplers.FULL:
                idx[q] = q
            elif sampler == samplers.REPLAY:
                idx[q] = replay[row, t * b + q]
            elif sampler == samplers.WITH_REPLACEMENT:
                idx[q] = samplers.with_replacement_np(st, n)
            elif sampler == samplers.EPOCH:
                idx[q], pos[p] = samplers.epoch_next_np(perm, int(pos[p]), st)
            else:
                idx[q] = samplers.distinct_next_np(perm, q, st)
            if label_noise != 0.0:
                noise[q] = label_noise * rng.normal_np(st)[0]
        if sampler == samplers.EPOCH:
            pos[p] = samplers.epoch_end_of_batch_np(int(pos[p]), n, b, a.drop_last)
        before_grad(t, theta, hs, hst, ha, b, ws)
        loss = kernel_np(theta, X, y, idx, b, noise, grad, ws, a.iargs, a.fargs)
        after_grad(t, theta, hs, hst, ha, b, ws)
        if a.step_losses.shape[1] > 0:
            a.step_losses[p, t] = loss
        lr_t = a.lrs[g, 0] if a.lrs.shape[1] == 1 else a.lrs[g, t - t0]
        with np.errstate(over="ignore", invalid="ignore"):
            if stepper is not None:
                stepper(theta, grad, t + 1, lr_t)
            else:
                step_np(g, theta, grad, ostate, t + 1, lr_t, a.hps)
            size = guard.l1_size_np(theta)
        if guard.beyond_np(size, bound):
            diverged_at[p] = t + 1
            break
        after_step(t, theta, hs, hst, ha, b, ws)
    if record_final and diverged_at[p] == guard.NEVER and record.due_np(record_steps, k, t1):
        theta_rec[p, k] = theta
        if keep_hooks:
            a.hook_rec[p, k] = hs


#: the flags numba's array type depends on: C and Fortran contiguity (its layout), alignment, writability
_TYPE_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


def _arg_key(v):
    """What numba's type of ``v`` depends on: an array's dtype, dimensions, contiguity, alignment and writability;
    a named tuple's class and its fields' keys; a scalar's Python type (and whether an int fits int64: a larger
    one is numba's uint64)."""
    if isinstance(v, np.ndarray):
        return v.dtype, v.ndim, v.flags.num & _TYPE_FLAGS
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return (type(v),) + tuple(_arg_key(f) for f in v)
    if isinstance(v, int) and not isinstance(v, bool):
        return int, -2**63 <= v < 2**63
    return type(v)
