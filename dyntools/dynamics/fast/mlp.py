"""The MLP's tuned loop: per-example SGD/GD on the regression head (the paper's small ReLU networks).

:func:`dyntools.train` runs :class:`dyntools.models.mlp.MLP` through its generic loop, which calls the
model's ``loss_grad`` kernel once per step. For the regression head (three samplers, any batch) this module's loop
does the same steps with the kernel's body written inline:

    for each example q of the step:  i = the sampler's index (then δξ_q, with label noise)
                                     r = h_θ(x_i) − y_i − δξ_q;  g += (2 r / B) ∇_θ h_θ(x_i)
    θ ← optimizer step of g          (the runs' compiled step, :mod:`dyntools.optim.compiled`)
    stop when ‖θ‖₁ is beyond the bound (:mod:`dyntools.engine.guard`; ``diverged_at = t + 1``)

and records at the same steps (:func:`dyntools.engine.record.due`). The draws come from the same
streams in the same order and the per-example arithmetic is the kernel's (same helper functions), so
parameters, losses and divergence steps are bitwise those of the generic loop. The samplers are ``full``,
``distinct`` and ``with-replacement`` (``dt.train``'s default), any batch: each index is drawn where it is used, by
the draw :func:`dyntools.engine.samplers.draw_batch` makes for it. What it saves is the kernel call, its scratch
views and the batch's index and noise arrays: on a network of a few hundred parameters a step takes well under a
microsecond, and those are a good part of it. And it is compiled once for every optimizer (the step through a
function pointer, :func:`regression_loop`), where the generic loop named for the kernel compiles the whole
optimizer step module with it: most of a ReLU net's first ``dt.train`` in a process with empty caches.

Paths run on threads (:func:`dyntools.engine.drive.on_threads`), each on private copies of its rows.

**float32 cross-entropy** (:func:`cross_entropy_loop_flushed`): the generic cached loop run with the
processor's flush-to-zero and denormals-are-zero modes on, restored afterwards (the modes belong to the
thread; they are set and reset inside the compiled call). Where weight decay shrinks the weights or
Adam's second moment ``v = β₂ v + (1 − β₂) g²`` runs down, float32 numbers fall below 1.2e-38 and every
operation on them takes ~100 cycles: such heatmap cells trained 3–4× slower in float32 than in float64
(0.79 s vs 0.26 s for Adam at lr = 0.1, wd = 1). Flushed, a value that would have been subnormal is 0;
every other result is unchanged. float64 runs never take this path.

**float64 cross-entropy** (:func:`cross_entropy_loop`): the generic loop with the kernel and the step called
through function pointers (:func:`dyntools.dynamics.path_loop.by_pointer`), the same bits. A loop that names the
kernel links its matrix products' machine code in and optimizes all of it again: in a process with empty caches
that was most of the MLP's first ``dt.train``.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from dyntools.dynamics.path_loop import LoopArrays, advance_path, by_pointer, first_record, step_type, with_pointers
from dyntools.engine import drive, guard, record, rng, samplers
from dyntools.engine.precision import like
from dyntools.models import mlp as mlp_model
from dyntools.models.base import no_hook
from dyntools.models.mlp import backward, example_buffers, forward, unpack_iargs

#: MXCSR bits: flush results below the smallest normal float to zero (FTZ, bit 15) and read subnormal
#: inputs as zero (DAZ, bit 6).
FTZ_DAZ = 0x8040
X86 = platform.machine().lower() in ("x86_64", "amd64")


@njit(inline="always")
def sgd_step_checked(theta, grad, lr_t, bound):
    """Plain SGD ``θ ← θ − lr_t g`` with ``g`` cleared for the next step, and a size of the new θ whose
    :func:`dyntools.engine.guard.beyond` decision is exactly the guard's — computed only as far as that
    decision needs it.

    The size is :func:`dyntools.engine.guard.checked_size` (the guard's four-chain ``‖θ‖₁`` only near
    the bound): the same decisions, the same ``diverged_at``, bitwise the same parameters (the update
    has no fast-math: θ − lr·g rounded as the optimizer's step rounds it)."""
    n = theta.shape[0]
    lr_t = like(theta, lr_t)
    for j in range(n):
        theta[j] = theta[j] - lr_t * grad[j]
    grad[:] = 0.0
    return guard.checked_size(theta, bound)


@njit(cache=True, nogil=True, error_model="numpy")
def regression_paths(paths, step, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final):
    """Advance every path of ``paths`` from step ``t0`` to ``t1`` (the arguments of
    :func:`dyntools.dynamics.path_loop.advance_path` minus the kernel, named in the body).

    Each example is drawn where it is used, by the sampler's own draw (:mod:`dyntools.engine.samplers`, the
    functions :func:`~dyntools.engine.samplers.draw_batch` calls): index ``q``, then its label noise, as the
    generic loop draws them — the same stream in the same order. One function, the loop over paths written around
    the path's steps: a path function inlined into it (``inline="always"``) or called by it was compiled twice over
    (numba copies an inlined function's IR; a called one is optimized again in its caller)."""
    a = arrays
    for p in paths:
        if diverged_at[p] != guard.NEVER:
            continue
        L, widths, w_off, b_off, maxw = unpack_iargs(a.iargs)
        ws = np.zeros(2 * (L + 1) * maxw + 2 * maxw, dtype=a.thetas.dtype)
        pre, act, delta = example_buffers(ws, L, maxw)
        theta = a.thetas[p].copy()
        ostate = a.opt_states[p].copy()
        st = a.states[p:p + 1].copy()
        perm = a.perms[p].copy()
        X = a.Xs[a.data_of[p]]
        y = a.ys[a.data_of[p]]
        g = a.run_of[p]
        label_noise, lrs, sampler = a.label_noise, a.lrs, a.sampler
        full = sampler == samplers.FULL
        n = X.shape[0]
        b = n if full else a.batch
        n_par = theta.shape[0]
        grad = np.zeros(n_par, dtype=a.thetas.dtype)
        const_lr = lrs.shape[1] == 1
        keep_loss = a.step_losses.shape[1] > 0
        plain = a.plain_sgd[g]              # θ ← θ − lr_t g: the inline step that also sizes θ for the guard
        k = first_record(record_steps, t0)
        for t in range(t0, t1):
            if record.due(record_steps, k, t):
                theta_rec[p, k, :] = theta
                k += 1
            tot = 0.0
            for q in range(b):
                if full:
                    i = q
                elif sampler == samplers.DISTINCT:
                    i = samplers.distinct_next(perm, q, st)
                else:
                    i = samplers.with_replacement(st, n)
                res = forward(theta, X[i], widths, w_off, b_off, pre, act) - y[i]
                if label_noise != 0.0:
                    nz = label_noise * rng.normal(st, 0)
                    if nz != 0.0:
                        res -= nz
                tot += res * res
                backward(theta, widths, w_off, b_off, pre, act, delta, grad, 2.0 * res / b, True)
            if keep_loss:
                a.step_losses[p, t] = tot / b
            lr_t = lrs[g, 0] if const_lr else lrs[g, t - t0]
            if plain:
                size = sgd_step_checked(theta, grad, lr_t, bound)
            else:
                step(g, theta, grad, ostate, t + 1, lr_t, a.hps)
                size = guard.l1_size_clearing(theta, grad)                   # grad cleared for the next step
            if guard.beyond(size, bound):
                diverged_at[p] = t + 1
                break
        a.thetas[p, :] = theta
        a.opt_states[p, :, :] = ostate
        a.states[p, :] = st[0, :]
        a.perms[p, :] = perm
        if record_final and diverged_at[p] == guard.NEVER and record.due(record_steps, k, t1):
            theta_rec[p, k, :] = theta


def regression_loop(arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final,
                    workers=None):
    """The tuned loop for the regression head, with the calling convention of the tuned loops
    (:mod:`dyntools.dynamics.fast`; see :func:`dyntools.train`): the optimizer ``step`` is called through a
    function pointer (:func:`dyntools.dynamics.path_loop.with_pointers`), so the loop is compiled once for every
    step and cached."""
    call = with_pointers(regression_paths, {1: step_type(arrays)})
    drive.on_threads(call, arrays.thetas.shape[0], workers, step, arrays, t0, t1, record_steps, theta_rec,
                     float(bound), diverged_at, record_final)


def _mxcsr_fn(name: str, returns: bool):
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        slot = cgutils.alloca_once(builder, i32)
        if not returns:
            builder.store(args[0], slot)
        byte_ptr = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr]), name)
        builder.call(fn, [builder.bitcast(slot, byte_ptr)])
        return builder.load(slot) if returns else context.get_dummy_value()
    return codegen


@intrinsic
def get_mxcsr(typingctx):
    """The x86 MXCSR register (SSE/AVX floating-point control and status) of the calling thread."""
    return types.uint32(), _mxcsr_fn("llvm.x86.sse.stmxcsr", True)


@intrinsic
def set_mxcsr(typingctx, value):
    """Load ``value`` into the calling thread's MXCSR register."""
    return types.void(types.uint32), _mxcsr_fn("llvm.x86.sse.ldmxcsr", False)


@njit(cache=True, nogil=True)
def cross_entropy_paths_flushed(paths, step, arrays, t0, t1, record_steps, theta_rec, bound, diverged_at,
                                record_final):
    """The generic loop of the cross-entropy MLP kernel (:mod:`dyntools.dynamics.loops`) with FTZ and DAZ set (see
    the module docstring)."""
    old = get_mxcsr()
    set_mxcsr(old | np.uint32(FTZ_DAZ))
    for p in paths:
        advance_path(mlp_model.loss_grad_cross_entropy, step, no_hook, no_hook, no_hook, p, arrays, t0, t1,
                     record_steps, theta_rec, bound, diverged_at, record_final)
    set_mxcsr(old)


def cross_entropy_loop_flushed(arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at,
                               record_final, workers=None):
    """The float32 cross-entropy loop, with the calling convention of the tuned loops
    (:mod:`dyntools.dynamics.fast`; the step through a function pointer, as in :func:`regression_loop`)."""
    call = with_pointers(cross_entropy_paths_flushed, {1: step_type(arrays)})
    drive.on_threads(call, arrays.thetas.shape[0], workers, step, arrays, t0, t1, record_steps, theta_rec,
                     float(bound), diverged_at, record_final)


def cross_entropy_loop(arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final,
                       workers=None):
    """The float64 cross-entropy loop, with the calling convention of the tuned loops: the generic loop with the
    kernel (:func:`dyntools.models.mlp.loss_grad_cross_entropy`) and the optimizer ``step`` called through function
    pointers (:func:`dyntools.dynamics.path_loop.by_pointer`: one loop compiled for every kernel of the protocol and
    cached), the same calls in the same order as the generic loop named for the kernel, so the same bits.

    Why: a loop that names the kernel links the kernel's machine code into its own and optimizes it again — the
    matrix products' panels, a second time and larger (the MLP's first ``dt.train`` with empty caches). A step of
    this kernel takes microseconds (tens on the heatmap's cell), so the two indirect calls per step are not seen."""
    _by_pointer(mlp_model.loss_grad_cross_entropy, arrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at,
                record_final, workers)


def cross_entropy_loop_sparse_inputs(arrays: LoopArrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at,
                                     record_final, workers=None):
    """:func:`cross_entropy_loop` with the kernel of ``MLP(…, sparse_inputs=True)``
    (:func:`dyntools.models.mlp.loss_grad_cross_entropy_sparse_inputs`), in either precision (float32 without the
    flush of :func:`cross_entropy_loop_flushed`: the generic loop's bits)."""
    _by_pointer(mlp_model.loss_grad_cross_entropy_sparse_inputs, arrays, step, t0, t1, record_steps, theta_rec, bound,
                diverged_at, record_final, workers)


def _by_pointer(kernel, arrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final, workers):
    loop = by_pointer(kernel, step, arrays, compile_kernel_now=False)
    drive.on_threads(loop, arrays.thetas.shape[0], workers, arrays, t0, t1, record_steps, theta_rec, float(bound),
                     diverged_at, record_final)


#: the loops that take the optimizer step through a function pointer: the trainer hands them the run set's own
#: step structures (:attr:`dyntools.optim.compiled.CompiledRuns.own_step`: the same code and bits, one structure
#: compiled instead of fifteen in a process with empty caches); read into :data:`dyntools.dynamics.fast.STEP_BY_POINTER`
STEP_BY_POINTER = (regression_loop, cross_entropy_loop_flushed, cross_entropy_loop, cross_entropy_loop_sparse_inputs)
#: the loops that leave a run of fewer path-steps than their figure to the pointer loop
#: (:func:`dyntools.dynamics.path_loop.by_pointer`, the same bits: tested), read into
#: :data:`dyntools.dynamics.fast.SHORT_RUNS_BY_POINTER`. The regression loop saves 0.02–0.18 µs per path-step
#: (ReLU nets 5-10-10-1 and 1-100-1, batch 1 and 10, AMD EPYC Zen 4): at most 0.4 ms below 2000 path-steps, while
#: in a process with empty caches it costs ~4 s of compiling and the pointer loop, shared by every model, ~3 s beside
#: the kernel's (:mod:`dyntools.dynamics.compile_helper`). 2000 keeps the ReLU bench's runs (4000 path-steps and
#: more) on the tuned loop.
SHORT_RUNS_BY_POINTER = {regression_loop: 2_000}


#: the samplers of the regression loop: those it draws per example with the sampler's own draw. ``epoch`` and
#: ``replay`` run in the generic loop: with every sampler drawn through :func:`dyntools.engine.samplers.draw_batch`
#: (the shuffle, the batch's buffers) this loop compiled in 5.6 processor-seconds instead of 4.1, paid by every
#: first ``dt.train`` of a regression MLP (AMD EPYC Zen 5, empty caches)
REGRESSION_SAMPLERS = ("full", "distinct", "with-replacement")


def select(model, setting: dict):
    """The tuned loop for ``setting`` with the compiled kernel, or None: the per-example loop for the
    regression head with a sampler of :data:`REGRESSION_SAMPLERS` (any batch); for the float32 cross-entropy head on
    x86, the engine's cached generic loop with subnormals flushed; in float64 :func:`cross_entropy_loop` (the generic
    loop with kernel and step through function pointers), with sparse inputs :func:`cross_entropy_loop_sparse_inputs`;
    none with dropout or batch norm (the generic loop runs
    their step hooks, :meth:`dyntools.models.mlp.MLP.hooks`, which these loops do not call)."""
    if model.regularized:           # dropout / batch norm: the generic loop calls their hooks
        return None
    if setting.get("kernel") != "numba":
        return None
    if model.head == "regression" and setting.get("sampler") in REGRESSION_SAMPLERS:
        return regression_loop
    if model.loss_grad is mlp_model.loss_grad_cross_entropy_sparse_inputs:
        return cross_entropy_loop_sparse_inputs
    if model.head == "cross-entropy" and model.dtype == np.float32 and X86:
        return cross_entropy_loop_flushed
    if model.head == "cross-entropy" and model.dtype == np.float64:
        return cross_entropy_loop
    return None
