"""An SDE engine in numba: Euler–Maruyama (general noise) and Milstein (diagonal or commutative noise).

In the spirit of diffrax: an SDE is a drift term, a diffusion term, a solver and where to save.

    dX_t = b(X_t, t) dt + σ(X_t, t) dW_t,      X ∈ Rᵖ,  W standard Brownian motion in Rᵐ.

Schemes, fixed step ``h``, ``ΔW_n = W_{t_{n+1}} − W_{t_n} ~ N(0, h I_m)``:

* Euler–Maruyama (``"em"``), any noise:   ``X_{n+1} = X_n + b(X_n, t_n) h + σ(X_n, t_n) ΔW_n``
  (strong order ½, weak order 1 under the usual Lipschitz conditions);
* Milstein (``"milstein"``), diagonal noise (``m = p``, ``σ = diag(σ_1 … σ_p)``, ``σ_i`` depending on
  ``x_i`` only through ``∂σ_i/∂x_i``):
  ``X_{n+1,i} = X_{n,i} + b_i h + σ_i ΔW_{n,i} + ½ σ_i ∂_iσ_i (ΔW_{n,i}² − h)`` (strong order 1);
* Milstein, commutative noise (``noise="commutative"``: σ is p × m and ``L^{j1}σ^{j2} = L^{j2}σ^{j1}`` for
  every pair of columns, ``L^j = Σ_k σ_{kj} ∂/∂x_k``; one noise dimension and diagonal noise are special
  cases): ``X_{n+1} = X_n + b h + σ ΔW_n + ½ Σ_{j1,j2} (L^{j1}σ^{j2})(ΔW_{n,j1}ΔW_{n,j2} − δ_{j1j2} h)``
  (strong order 1; commutativity makes the double Itô integrals functions of the increments alone, no
  Lévy areas). The last term is the user's ``milstein`` term, which receives the increments.

**User-defined terms** are numba-jitted functions that write into an output array (no
allocation in the hot loop)::

    @numba.njit
    def drift(t, x, args, out):        # t: float, x: float64[p], args: float64[k], out: float64[p]
        out[0] = args[0] * x[0]

    @numba.njit
    def diffusion(t, x, args, out):    # noise="general":  out: float64[p, m], out[i, j] = σ_ij(x, t)
        out[0, 0] = args[1] * x[0]     # noise="diagonal": out: float64[p, 1], out[i, 0] = σ_i(x, t)

    @numba.njit
    def diffusion_dx(t, x, args, out): # Milstein only (diagonal noise): out[i, 0] = ∂σ_i/∂x_i
        out[0, 0] = args[1]

    sde = SDE(drift, diffusion, dim=1, noise_dim=1, noise="diagonal", diffusion_dx=diffusion_dx,
              args=[1.5, 0.5])
    result = solve(sde, x0=1.0, t1=1.0, h=1e-3, paths=1000, scheme="milstein", seed=0)

    @numba.njit
    def milstein(t, x, args, dw, h, out):   # noise="commutative": out[i] = ½ Σ (L^{j1}σ^{j2})_i (ΔW_{j1}ΔW_{j2} − δ h)
        ...

An SDE may also carry ``milstein_form``, a Python callable that returns its Milstein-ready form (an SDE
with ``noise="commutative"`` and its ``milstein`` term) or raises ``ValueError`` saying why Milstein does
not apply; :func:`solve` calls it only for ``scheme="milstein"``, because deciding commutativity can be
symbolic work (:func:`dyntools.sde_models.label_noise_sde` of a symbolic model).

Before the loop the terms are evaluated once at ``x0`` by a bounds-checked compilation of the same
Python source: a term that indexes outside its output, or leaves part of it unwritten, is a
"wrong shape" error naming the term. Then each compiled term is held to its readable version at ``x0`` and
at two seeded points around it (:func:`check_points`, :func:`check_terms_readable`): its own Python source
run by the interpreter (``term.py_func``; a numba global frozen at compile time, or arithmetic numba does
differently, differs there), and for Milstein with diagonal noise ``diffusion_dx`` to central finite
differences of ``diffusion``, for commutative noise the ``milstein`` term to the same double sum computed
from finite differences of ``diffusion`` (:func:`check_milstein_term`); a mismatch is one
:class:`~dyntools.validation.KernelMismatch` naming the term, the point and the first differing entry.

**Compiled once per installation.** A user's loop (this engine's loop around the user's terms) and the
bounds-checked copies of the terms are generated into :func:`dyntools.codegen.cache.cache_dir` with numba's
cache beside them, keyed by :func:`dyntools.user_code.source_fingerprint` of the terms (source, bytecode,
every value they read), the engine's source and the compile target, so a second process loads them; a term
without readable source, or reading a value that cannot be fingerprinted, is compiled in every process. A user's
loop is compiled serially and run on blocks of paths on threads for a run of at most ``SMALL_RUN`` path-steps (numba's
parallel compile passes cost more than such a run), with ``prange`` above it (the same bits).

**Brownian increments** come from one xoshiro256** stream per path (:func:`dyntools.engine.streams.path_states`)
through the ziggurat normal of :mod:`dyntools.engine.ziggurat`. With ``substeps = r`` every
step of size ``h`` sums ``r`` fine increments of size ``h/r`` (fine step outer, noise dimension
inner), so runs at ``h`` with ``r`` sub-steps and at ``h/r`` with one sub-step see the same fine
Brownian path — the increment over ``2h`` is the sum of the two increments over ``h``, which is what
strong-error measurements need.

**Blow-up** is the engine's one divergence rule (:mod:`dyntools.engine.guard`) with the size
``|x_i|`` of each coordinate: a path diverges at the first step ``k`` (the state after ``k`` steps)
where some ``|x_i|`` is beyond ``bound`` or NaN. It stops there; ``diverged_at`` holds ``k`` (−1:
never), ``diverged_time`` the time ``t0 + k h``, and the result's status is "diverged". Saved values
after that are NaN *and* flagged, never a silent NaN. Whether step ``k`` is saved is
:func:`dyntools.engine.record.due` on the saved step indices.

**Streams.** Path ``i`` draws from ``SeedSequence(seed, (KEYS[stream], *stream_key, i))`` with
``stream = "sde.brownian"`` by default (:data:`dyntools.engine.streams.KEYS`), so no other purpose of
the same seed (an initialization, a sampler, label noise) shares its increments; a caller that must
see another purpose's increments (a test coupling the general label-noise SDE with the diagonal-net
kernel) names that purpose.

Memory is O(saved times × paths × p) (plus ``× m`` with ``record_brownian``).
:func:`solve_numpy` is the plain NumPy twin (a Python loop over steps and paths) used by the tests.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass, field

import numba
import numpy as np
from numba import njit, prange

from dyntools import validation
from dyntools.engine import guard, record, streams, ziggurat
from dyntools.engine.result import RunResult, message, package_versions, timed
from dyntools.engine.ziggurat import normal, normal_reg


@functools.cache
def _versions_once() -> tuple:
    return tuple(package_versions().items())


def versions() -> dict[str, str]:
    """Package versions for results, looked up once per process (the lookup costs ~10 ms, which
    would otherwise dominate short runs and benchmarks)."""
    return dict(_versions_once())

SCHEMES = ("em", "milstein")
NOISES = ("general", "diagonal", "commutative")
EM, MILSTEIN = 0, 1

# ----------------------------------------------------------------------------- built-in terms
# Built-in models share one cached kernel: ``args[0]`` selects the model, ``args[1:]`` are its
# parameters (see :mod:`dyntools.dynamics.sde_models`). Elementwise in x, so any dimension p.
GBM, OU, TOY = 0, 1, 2


@njit(cache=True)
def builtin_drift(t, x, args, out):
    """GBM ``μx``; OU ``θ(μ − x)``; toy ``E[x²] x (θ*² − x²)`` (minus the gradient of ¼E(y − xθ²)²)."""
    model = int(args[0])
    for i in range(x.shape[0]):
        if model == GBM:
            out[i] = args[1] * x[i]
        elif model == OU:
            out[i] = args[1] * (args[2] - x[i])
        else:
            out[i] = args[1] * x[i] * (args[2] - x[i] * x[i])


@njit(cache=True)
def builtin_diffusion(t, x, args, out):
    """Diagonal noise: GBM ``σx``; OU ``σ``; toy ``c x`` with ``c = √(ηδ)·2‖x_data‖`` (see sde_models)."""
    model = int(args[0])
    for i in range(x.shape[0]):
        if model == GBM:
            out[i, 0] = args[2] * x[i]
        elif model == OU:
            out[i, 0] = args[3]
        else:
            out[i, 0] = args[3] * x[i]


@njit(cache=True)
def builtin_diffusion_dx(t, x, args, out):
    """``∂σ_i/∂x_i``: GBM ``σ``; OU 0; toy ``c``."""
    model = int(args[0])
    for i in range(x.shape[0]):
        if model == GBM:
            out[i, 0] = args[2]
        elif model == OU:
            out[i, 0] = 0.0
        else:
            out[i, 0] = args[3]


@njit
def _no_derivative(t, x, args, out):
    out[:] = 0.0


@njit
def _no_milstein(t, x, args, dw, h, out):
    out[:] = 0.0


# The kernel below reads its terms from these module globals. The cached compilation uses the
# built-in terms; user terms get a copy of the same function whose globals point at them.
_drift = builtin_drift
_diffusion = builtin_diffusion
_diffusion_dx = builtin_diffusion_dx
_milstein = _no_milstein


def _kernel_source(args, x0, state, t0, h, n_steps, substeps, scheme, diagonal, m, save_steps, bound,
                   out, w_out, diverged_at):
    """Advance every path ``n_steps`` steps of size ``h`` from ``x0`` (float64[P, p]).

    state : uint64[P, 4]        per-path xoshiro256** streams (advanced in place)
    substeps : int              fine Brownian steps per step (increments aggregated)
    scheme : 0 EM, 1 Milstein   diagonal : noise is diagonal (σ stored as [p, 1]); otherwise, with
                                Milstein, the noise is commutative and ``_milstein`` gives the correction
    save_steps : int64[K]       sorted step indices to save into out[P, K, p]
    w_out : float64[P, K, m]    Brownian path at the saved steps (or an empty (0, 0, 0) array)
    diverged_at : int64[P]      first step whose state is beyond the bound (:mod:`~dyntools.engine.guard`; −1: never)
    """
    n_paths, p = x0.shape
    rec_w = w_out.shape[0] > 0
    sq_fine = np.sqrt(h / substeps)
    ncol = 1 if diagonal else m
    for path in prange(n_paths):
        x = x0[path].copy()
        b = np.empty(p)
        s = np.empty((p, ncol))
        ds = np.zeros((p, ncol))
        corr = np.zeros(p)
        dw = np.empty(m)
        w = np.zeros(m)
        k = 0
        stop = guard.NEVER
        for n in range(n_steps + 1):
            if record.due(save_steps, k, n):
                for i in range(p):
                    out[path, k, i] = x[i]
                if rec_w:
                    for j in range(m):
                        w_out[path, k, j] = w[j]
                k += 1
            if n == n_steps:
                break
            t = t0 + n * h
            for j in range(m):
                dw[j] = 0.0
            for _ in range(substeps):
                for j in range(m):
                    dw[j] += normal(state, path)
            for j in range(m):
                dw[j] *= sq_fine
                w[j] += dw[j]
            _drift(t, x, args, b)
            _diffusion(t, x, args, s)
            if scheme == 1:
                if diagonal:
                    _diffusion_dx(t, x, args, ds)
                else:
                    _milstein(t, x, args, dw, h, corr)
            bad = False
            for i in range(p):
                inc = b[i] * h
                if diagonal:
                    inc += s[i, 0] * dw[i]
                    if scheme == 1:
                        inc += 0.5 * s[i, 0] * ds[i, 0] * (dw[i] * dw[i] - h)
                else:
                    for j in range(m):
                        inc += s[i, j] * dw[j]
                    if scheme == 1:
                        inc += corr[i]
                x[i] += inc
                if guard.beyond(abs(x[i]), bound):
                    bad = True
            if bad:
                stop = n + 1
                break
        diverged_at[path] = stop


_builtin_kernel = njit(parallel=True, cache=True)(_kernel_source)


@njit(inline="always")
def _scalar_terms(model, x, a1, a2, a3):
    """``(b, σ, ∂σ/∂x)`` of a 1-D built-in model, the same expressions as :func:`builtin_drift`,
    :func:`builtin_diffusion` and :func:`builtin_diffusion_dx`."""
    if model == GBM:
        return a1 * x, a2 * x, a2
    if model == OU:
        return a1 * (a2 - x), a3, 0.0
    return a1 * x * (a2 - x * x), a3 * x, a3


@njit(inline="always")
def _scalar_step(model, scheme, x, w, s0, s1, s2, s3, h, sq_fine, substeps, a1, a2, a3, bound):
    """One step of one path; returns ``(x, w, ok, s0, s1, s2, s3)`` with ``ok`` False when the new
    x is beyond the bound (:func:`dyntools.engine.guard.beyond` of ``|x|``). The same arithmetic in the same order as
    :func:`_kernel_source` with the built-in terms (bitwise-identical results)."""
    dw = 0.0
    if substeps == 1:
        z, s0, s1, s2, s3 = normal_reg(s0, s1, s2, s3)
        dw += z
    else:
        for _ in range(substeps):
            z, s0, s1, s2, s3 = normal_reg(s0, s1, s2, s3)
            dw += z
    dw *= sq_fine
    w += dw
    b, s, ds = _scalar_terms(model, x, a1, a2, a3)
    inc = b * h
    inc += s * dw
    if scheme == 1:
        inc += 0.5 * s * ds * (dw * dw - h)
    x += inc
    return x, w, not guard.beyond(abs(x), bound), s0, s1, s2, s3


@njit(cache=True)
def _scalar_finish(model, scheme, path, x, w, q0, q1, q2, q3, n, k, h, n_steps, sq_fine, substeps, a1, a2, a3,
                   bound, save_steps, state, out, w_out, diverged_at):
    """Continue one path from step ``n`` (next save index ``k``) to the end; store its state."""
    n_save = save_steps.shape[0]
    st = guard.NEVER
    for kk in range(k, n_save + 1):
        target = save_steps[kk] if kk < n_save else n_steps
        while n < target:
            x, w, ok, q0, q1, q2, q3 = _scalar_step(model, scheme, x, w, q0, q1, q2, q3, h, sq_fine, substeps,
                                                    a1, a2, a3, bound)
            n += 1
            if not ok:
                st = n
                break
        if kk == n_save or st != guard.NEVER:
            break
        out[path, kk, 0] = x
        if w_out.shape[0] > 0:
            w_out[path, kk, 0] = w
    state[path, 0] = q0
    state[path, 1] = q1
    state[path, 2] = q2
    state[path, 3] = q3
    diverged_at[path] = st


@njit(inline="always")
def _close_path(ok, model, scheme, path, x, w, q0, q1, q2, q3, n, k, h, n_steps, sq_fine, substeps, a1, a2, a3,
                bound, save_steps, state, out, w_out, diverged_at):
    """End of a group's lock-step run for one path: a path still inside the bound goes on alone
    (:func:`_scalar_finish`); a diverged one stores its generator state and its step ``n``."""
    if ok:
        # np.int64(): a step and a save index typed as int64, never as a literal 0 — each literal compiled
        # _scalar_finish again (three copies in one kernel: a first solve took 10.3 s instead of 6.9 s cold, Zen 4)
        _scalar_finish(model, scheme, path, x, w, q0, q1, q2, q3, np.int64(n), np.int64(k), h, n_steps, sq_fine,
                       substeps, a1, a2, a3, bound, save_steps, state, out, w_out, diverged_at)
    else:
        state[path, 0] = q0
        state[path, 1] = q1
        state[path, 2] = q2
        state[path, 3] = q3
        diverged_at[path] = n


@njit(cache=True, nogil=True)
def _scalar_block(model, args, x0, state, h, n_steps, substeps, scheme, save_steps, bound, out, w_out,
                  diverged_at, lo, hi):
    """Paths ``lo … hi−1`` of the 1-D built-in model ``model`` (the same arithmetic as
    :func:`_kernel_source` with the built-in terms, so bitwise-identical results).

    Paths go in groups of four stepped in lock-step: each path's x, W and xoshiro256** state live
    in local variables (registers) for the whole run, and the four independent dependency chains
    (x → b, σ → x, and the generator's) overlap in the CPU instead of one path waiting on its own
    latency. The lock-step loop has no per-path branches: when a path of the group leaves the
    bound, the group loop ends at that step and every path of the group is finished on its own
    (:func:`_scalar_finish`: the diverged one records its step, the others continue). Each path's
    arithmetic and draws are exactly its own, so results do not depend on the grouping. Leftover
    paths (fewer than four) run one at a time. Steps run from one saved time to the next; the
    model and scheme branches are loop-invariant (perfectly predicted)."""
    n_save = save_steps.shape[0]
    rec_w = w_out.shape[0] > 0
    sq_fine = np.sqrt(h / substeps)
    a1 = args[1]
    a2 = args[2] if args.shape[0] > 2 else 0.0
    a3 = args[3] if args.shape[0] > 3 else 0.0
    n_groups = max(0, hi - lo) // 4
    for grp in range(n_groups):
        p = lo + 4 * grp
        # each path's x, W, flag and generator state live in locals (registers) for the whole run
        xl0, w0, ok0 = x0[p + 0, 0], 0.0, True
        q00, q01, q02, q03 = state[p + 0, 0], state[p + 0, 1], state[p + 0, 2], state[p + 0, 3]
        xl1, w1, ok1 = x0[p + 1, 0], 0.0, True
        q10, q11, q12, q13 = state[p + 1, 0], state[p + 1, 1], state[p + 1, 2], state[p + 1, 3]
        xl2, w2, ok2 = x0[p + 2, 0], 0.0, True
        q20, q21, q22, q23 = state[p + 2, 0], state[p + 2, 1], state[p + 2, 2], state[p + 2, 3]
        xl3, w3, ok3 = x0[p + 3, 0], 0.0, True
        q30, q31, q32, q33 = state[p + 3, 0], state[p + 3, 1], state[p + 3, 2], state[p + 3, 3]
        n = 0
        k = 0
        all_ok = True
        while True:
            target = save_steps[k] if k < n_save else n_steps
            while n < target:
                xl0, w0, ok0, q00, q01, q02, q03 = _scalar_step(
                    model, scheme, xl0, w0, q00, q01, q02, q03, h, sq_fine, substeps, a1, a2, a3, bound)
                xl1, w1, ok1, q10, q11, q12, q13 = _scalar_step(
                    model, scheme, xl1, w1, q10, q11, q12, q13, h, sq_fine, substeps, a1, a2, a3, bound)
                xl2, w2, ok2, q20, q21, q22, q23 = _scalar_step(
                    model, scheme, xl2, w2, q20, q21, q22, q23, h, sq_fine, substeps, a1, a2, a3, bound)
                xl3, w3, ok3, q30, q31, q32, q33 = _scalar_step(
                    model, scheme, xl3, w3, q30, q31, q32, q33, h, sq_fine, substeps, a1, a2, a3, bound)
                n += 1
                all_ok = ok0 & ok1 & ok2 & ok3
                if not all_ok:
                    break
            if not all_ok or k == n_save:
                break
            out[p + 0, k, 0] = xl0
            out[p + 1, k, 0] = xl1
            out[p + 2, k, 0] = xl2
            out[p + 3, k, 0] = xl3
            if rec_w:
                w_out[p + 0, k, 0] = w0
                w_out[p + 1, k, 0] = w1
                w_out[p + 2, k, 0] = w2
                w_out[p + 3, k, 0] = w3
            k += 1
        _close_path(ok0, model, scheme, p + 0, xl0, w0, q00, q01, q02, q03, n, k, h, n_steps, sq_fine,
                    substeps, a1, a2, a3, bound, save_steps, state, out, w_out, diverged_at)
        _close_path(ok1, model, scheme, p + 1, xl1, w1, q10, q11, q12, q13, n, k, h, n_steps, sq_fine,
                    substeps, a1, a2, a3, bound, save_steps, state, out, w_out, diverged_at)
        _close_path(ok2, model, scheme, p + 2, xl2, w2, q20, q21, q22, q23, n, k, h, n_steps, sq_fine,
                    substeps, a1, a2, a3, bound, save_steps, state, out, w_out, diverged_at)
        _close_path(ok3, model, scheme, p + 3, xl3, w3, q30, q31, q32, q33, n, k, h, n_steps, sq_fine,
                    substeps, a1, a2, a3, bound, save_steps, state, out, w_out, diverged_at)
    for path in range(lo + 4 * n_groups, hi):
        _scalar_finish(model, scheme, path, x0[path, 0], 0.0, state[path, 0], state[path, 1], state[path, 2],
                       state[path, 3], np.int64(0), np.int64(0), h, n_steps, sq_fine, substeps, a1, a2, a3, bound,
                       save_steps, state, out, w_out, diverged_at)


_user_kernels: dict[tuple, object] = {}


def _scalar_kernel(args, x0, state, t0, h, n_steps, substeps, scheme, diagonal, m, save_steps, bound, out, w_out,
                   diverged_at):
    """The kernel specialized to the 1-D built-in models (same arguments, same arithmetic in the same order as
    :func:`_kernel_source` with the built-in terms, so bitwise-identical results): one contiguous block of paths
    per thread (numba's thread count), each run by :func:`_scalar_block` (``nogil``) on a thread of its own.
    Without numba's ``parallel`` (``prange`` over the blocks, which ran the same block code): the first GBM solve
    compiled 5.90 instead of 6.45 s with empty caches (issue 38)."""
    n_paths = x0.shape[0]
    n_blocks = max(1, min(n_paths, numba.get_num_threads()))
    per_block = -(-n_paths // n_blocks)
    model = int(args[0])
    ranges = [(lo, min(n_paths, lo + per_block)) for lo in range(0, n_paths, per_block)]

    def block(lo, hi):
        _scalar_block(model, args, x0, state, h, n_steps, substeps, scheme, save_steps, bound, out, w_out,
                      diverged_at, lo, hi)

    if len(ranges) == 1:
        block(*ranges[0])
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(ranges)) as pool:
        for job in [pool.submit(block, lo, hi) for lo, hi in ranges]:
            job.result()


#: a user's run of at most this many path-steps (paths × steps × sub-steps) takes the serial loop (below)
SMALL_RUN = 10**6


class _OnThreads:
    """A user's loop in two compilations of the same source: ``dispatcher`` serial (``nogil``, no
    ``parallel=True``), run on contiguous blocks of paths, one per thread, and ``parallel`` (``prange``), compiled
    only when a run is larger than :data:`SMALL_RUN` path-steps. numba's parallel passes cost more than the loop
    (compiling a CIR process's loop: 7.8 s → 2.8 s on a busy machine), but its code is faster per step (10⁴ paths
    × 1000 steps, one process: 0.23 s against 0.28–0.33 s): a first, small run pays for the serial one only.
    A block is a view of rows ``lo:hi`` of every per-path array; each path draws from its own stream
    (``state[path]``) with the same arithmetic in both, so a path's bits depend neither on the blocks nor on the
    compilation (tested). Attributes other than the call are the serial dispatcher's (``stats`` …)."""

    def __init__(self, dispatcher, parallel):
        self.dispatcher = dispatcher
        self.parallel = parallel

    def __getattr__(self, name):
        return getattr(self.dispatcher, name)

    def __call__(self, args, x0, state, t0, h, n_steps, substeps, scheme, diagonal, m, save_steps, bound, out,
                 w_out, diverged_at, workers=None):
        from concurrent.futures import ThreadPoolExecutor

        n = x0.shape[0]
        if n * max(1, n_steps) * substeps > SMALL_RUN:
            self.parallel(args, x0, state, t0, h, n_steps, substeps, scheme, diagonal, m, save_steps, bound, out,
                          w_out, diverged_at)
            return
        blocks = max(1, min(n, numba.get_num_threads() if workers is None else int(workers)))
        edges = [n * b // blocks for b in range(blocks + 1)]

        def run(lo, hi):
            self.dispatcher(args, x0[lo:hi], state[lo:hi], t0, h, n_steps, substeps, scheme, diagonal, m,
                            save_steps, bound, out[lo:hi], w_out[lo:hi], diverged_at[lo:hi])

        if blocks == 1:
            run(0, n)
            return
        with ThreadPoolExecutor(blocks) as pool:
            for job in [pool.submit(run, lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]:
                job.result()


#: the generated module of a user's kernel: :func:`_kernel_source` around the terms, which
#: :func:`dyntools.codegen.cache.load` sets as the module's globals ``_drift`` … before it runs
_USER_KERNEL = """\
# Generated by dyntools.dynamics.sde: the SDE loop around a user's terms (drift {drift}, diffusion {diffusion}).
# Key: the terms' source and what they read, the loop's source, the compile target. Safe to delete.
import numpy as np
from numba import njit, prange

from dyntools.engine import guard, record
from dyntools.engine.ziggurat import normal

{source}

{serial_source}

# two names, because numba's cache cannot tell two compilations of one function apart
kernel = njit(parallel=True, cache=True)(_kernel_source)
serial = njit(nogil=True, cache=True)(_kernel_serial)   # run on blocks of paths by dyntools (_OnThreads)
"""

#: the engine files whose code the generated loop compiles in (their text is part of every key)
_ENGINE_FILES = ("dynamics/sde.py", "engine/ziggurat.py", "engine/guard.py", "engine/record.py")


@functools.cache
def _engine_text() -> str:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return "\n".join((root / f).read_text(encoding="utf-8") for f in _ENGINE_FILES)


def user_kernel_key(sde: SDE) -> str | None:
    """The disk-cache key of ``sde``'s compiled loop: the SHA-256 of its terms' :func:`source_fingerprint`,
    the engine's source and :func:`dyntools.codegen.cache.target_text` (CPU, numba …). None when a term's
    source or a value it reads cannot be fingerprinted (the loop is then compiled in every process)."""
    from dyntools.codegen import cache
    from dyntools.user_code import source_fingerprint

    terms = [sde.drift, sde.diffusion, sde.diffusion_dx, sde.milstein]
    prints = [source_fingerprint(t) if t is not None else "none" for t in terms]
    if None in prints:
        return None
    return cache.key_of("\n".join([*prints, _engine_text(), cache.target_text()]))


def _cached_user_kernel(sde: SDE, key: str):
    """The user's loop from the generated module ``sdekernel_<key>`` (numba's cache beside it: the second
    process loads machine code instead of compiling)."""
    import inspect

    from dyntools.codegen import cache

    def make():
        source = inspect.getsource(_kernel_source)
        return _USER_KERNEL.format(drift=sde.drift.__name__, diffusion=sde.diffusion.__name__, source=source,
                                   serial_source=source.replace("def _kernel_source(", "def _kernel_serial(", 1))

    namespace = {"_drift": sde.drift, "_diffusion": sde.diffusion,
                 "_diffusion_dx": sde.diffusion_dx if sde.diffusion_dx is not None else _no_derivative,
                 "_milstein": sde.milstein if sde.milstein is not None else _no_milstein}
    module = cache.load("sdekernel", key, make, namespace)
    return _OnThreads(module.serial, module.kernel)


def _kernel_for(sde: SDE):
    if sde.builtin:
        return _scalar_kernel if sde.dim == 1 else _builtin_kernel
    key = (sde.drift, sde.diffusion, sde.diffusion_dx, sde.milstein)
    if key not in _user_kernels:
        disk = user_kernel_key(sde)
        if disk is not None:
            _user_kernels[key] = _cached_user_kernel(sde, disk)
            return _user_kernels[key]
        g = dict(_kernel_source.__globals__)
        g.update(_drift=sde.drift, _diffusion=sde.diffusion,
                 _diffusion_dx=sde.diffusion_dx if sde.diffusion_dx is not None else _no_derivative,
                 _milstein=sde.milstein if sde.milstein is not None else _no_milstein)
        _user_kernels[key] = _OnThreads(njit(nogil=True)(types.FunctionType(_kernel_source.__code__, g, "_serial")),
                                        njit(parallel=True)(types.FunctionType(_kernel_source.__code__, g, "_user")))
    return _user_kernels[key]


# ----------------------------------------------------------------------------------- the SDE term

@dataclass
class SDE:
    """Drift and diffusion terms of ``dX = b(X, t)dt + σ(X, t)dW`` (see the module docstring).

    Parameters
    ----------
    drift, diffusion : numba function
        ``f(t, x, args, out)`` writing b (p,) and σ (p × m; diagonal noise: σ_i in ``out[i, 0]``).
    dim : int
        p, the state dimension.
    noise_dim : int
        m, the Brownian dimension (= p for diagonal noise).
    noise : {"general", "diagonal", "commutative"}, default "general"
        σ is p × m; diagonal; or p × m with commuting columns (Milstein applies with ``milstein``).
    diffusion_dx : numba function, optional
        ``f(t, x, args, out)`` writing ∂σ_i/∂x_i (diagonal noise, Milstein).
    args : float64 array, optional
        Parameters passed to every term.
    name : str, default "user"
        A label for results.
    builtin : bool, default False
        Set by the built-in SDEs of :mod:`dyntools.dynamics.sde_models`.
    milstein : numba function, optional
        ``f(t, x, args, dw, h, out)`` writing ``½ Σ_{j1,j2} (L^{j1}σ^{j2})(dw_{j1}dw_{j2} − δ_{j1j2} h)``
        (commutative noise, Milstein only).
    milstein_form : callable, optional
        Returns the Milstein-ready SDE, or raises ``ValueError`` (module docstring).
    """

    drift: object
    diffusion: object
    dim: int
    noise_dim: int
    noise: str = "general"
    diffusion_dx: object = None
    args: np.ndarray = field(default_factory=lambda: np.zeros(1))
    name: str = "user"
    builtin: bool = False
    milstein: object = None
    milstein_form: object = None

    def __post_init__(self):
        self.dim = validation.count("dim", self.dim)
        self.noise_dim = validation.count("noise_dim", self.noise_dim)
        self.noise = validation.one_of("noise", self.noise, NOISES)
        if self.noise == "diagonal" and self.noise_dim != self.dim:
            raise ValueError(f"Invalid noise_dim: {self.noise_dim} (diagonal noise needs noise_dim = dim "
                             f"= {self.dim})")
        optional = tuple(k for k in ("diffusion_dx", "milstein") if getattr(self, k) is not None)
        for name in ("drift", "diffusion") + optional:
            fn = getattr(self, name)
            if not isinstance(fn, numba.core.registry.CPUDispatcher):
                raise TypeError(f"{name} must be a numba-jitted function (@numba.njit) "
                                f"f(t, x, args, out), got {type(fn).__name__}")
        self.args = validation.finite_array("args", np.atleast_1d(np.asarray(self.args, dtype=np.float64)),
                                            ndim=1)

    @property
    def diffusion_shape(self) -> tuple[int, int]:
        return (self.dim, 1) if self.noise == "diagonal" else (self.dim, self.noise_dim)


_checked_terms: dict = {}


#: the generated module of a term's bounds-checked copy: its source without decorators, run among the term's
#: own globals (set by :func:`dyntools.codegen.cache.load`), compiled with ``boundscheck`` and numba's cache
_CHECKED_TERM = """\
# Generated by dyntools.dynamics.sde: a bounds-checked copy of the user's term {name}. Safe to delete.
{source}

from numba import njit as _dyntools_njit

checked = _dyntools_njit(boundscheck=True, cache=True)({name})
"""


def _checked_copy(fn):
    """The bounds-checked compilation of ``fn`` from the disk cache (keyed by its
    :func:`~dyntools.user_code.source_fingerprint` and the compile target), or None when ``fn`` has no
    fingerprint. A copy of the source, because numba's cache cannot tell two compilations of one function
    with different flags apart."""
    import ast
    import inspect
    import textwrap

    from dyntools.codegen import cache
    from dyntools.user_code import source_fingerprint

    fingerprint = source_fingerprint(fn)
    if fingerprint is None:
        return None
    func = fn.py_func
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except SyntaxError:                              # e.g. a lambda inside a longer expression
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != func.__name__:
        return None                                  # not a plain ``def``: compiled in every process, as before

    def make():
        tree.body[0].decorator_list = []
        return _CHECKED_TERM.format(name=func.__name__, source=ast.unparse(tree))

    namespace = {k: v for k, v in func.__globals__.items() if not k.startswith("__")}   # not its module's identity
    if func.__closure__:
        namespace.update(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__)))
    key = cache.key_of(f"checked term 1\n{fingerprint}\n{cache.target_text()}")
    return cache.load("sdecheck", key, make, namespace).checked


def _bounds_checked(fn):
    """A bounds-checked compilation of the term ``fn`` (once per term and process; loaded from the disk cache
    when ``fn`` has a fingerprint: :func:`_checked_copy`)."""
    if fn not in _checked_terms:
        _checked_terms[fn] = _checked_copy(fn) or numba.njit(boundscheck=True)(fn.py_func)
    return _checked_terms[fn]


def check_terms(sde: SDE, x0: np.ndarray, t0: float, scheme: str) -> None:
    """Evaluate every term once at ``x0[0]`` with bounds checking; raise naming the faulty term."""
    if scheme == "milstein":
        if sde.noise == "general":
            raise ValueError("Invalid scheme: 'milstein' needs diagonal or commutative noise "
                             "(noise='diagonal' or 'commutative'); use 'em' for general noise")
        if sde.noise == "diagonal" and sde.diffusion_dx is None:
            raise ValueError("Invalid diffusion_dx: scheme 'milstein' needs the derivative ∂σ_i/∂x_i")
        if sde.noise == "commutative" and sde.milstein is None:
            raise ValueError("Invalid milstein: scheme 'milstein' with commutative noise needs the term "
                             "milstein(t, x, args, dw, h, out)")
    if sde.builtin:
        return
    terms = [("drift", sde.drift, (sde.dim,)), ("diffusion", sde.diffusion, sde.diffusion_shape)]
    if scheme == "milstein" and sde.noise == "diagonal":
        terms.append(("diffusion_dx", sde.diffusion_dx, sde.diffusion_shape))
    x = np.ascontiguousarray(x0[0], dtype=np.float64)
    for name, fn, shape in terms:
        out = np.full(shape, np.nan)
        checked = _bounds_checked(fn)
        try:
            checked(float(t0), x.copy(), sde.args, out)
        except IndexError:
            padded = np.concatenate([sde.args, np.ones(256)])
            try:                   # the same call with longer args: if it passes, args were too short
                checked(float(t0), x.copy(), padded, np.full(shape, np.nan))
            except IndexError:
                raise ValueError(f"Invalid {name}: wrong shape — it indexes outside its output of shape {shape} "
                                 f"(dim={sde.dim}, noise_dim={sde.noise_dim}, noise={sde.noise!r})") from None
            raise ValueError(f"Invalid args: {name} reads beyond args, which has {sde.args.size} entries "
                             f"({sde.args.tolist()}); give every parameter the terms read") from None
        except numba.core.errors.TypingError as exc:
            first = str(exc).strip().splitlines()[0]
            raise TypeError(f"Invalid {name}: cannot be called as {name}(t, x, args, out) with out of shape "
                            f"{shape}: {first}") from None
        if np.isnan(out).any():
            raise ValueError(f"Invalid {name}: wrong shape or non-finite — {int(np.isnan(out).sum())} of "
                             f"{out.size} entries of its output (shape {shape}) were not written at x0")
    points = check_points(sde, x, float(t0))
    for point, at in points:
        check_terms_readable(sde, terms, at, float(t0), point)
    if scheme == "milstein" and sde.noise == "commutative":
        out = np.full(sde.dim, np.nan)
        try:
            _bounds_checked(sde.milstein)(float(t0), x.copy(), sde.args, np.ones(sde.noise_dim),
                                                               1.0, out)
        except IndexError:
            raise ValueError(f"Invalid milstein: wrong shape — it indexes outside its output of shape ({sde.dim},) "
                             f"or the increments ({sde.noise_dim},)") from None
        if np.isnan(out).any():
            raise ValueError(f"Invalid milstein: {int(np.isnan(out).sum())} of {sde.dim} entries of its output "
                             "were not written (or are non-finite) at x0")
        for point, at in points:
            check_milstein_term(sde, at, float(t0), point)


#: Relative tolerance of ``diffusion_dx`` against central finite differences of ``diffusion`` (as a model
#: kernel's gradient is checked: :mod:`dyntools.dynamics.kernel_check`).
DX_RTOL = 1e-4


def check_points(sde: SDE, x0: np.ndarray, t0: float) -> list[tuple[str, np.ndarray]]:
    """Where the terms are held to their readable versions: ``x0`` and, because a wrong term can agree at one
    point (``3x`` for ``2x`` at ``x0 = 0``), ``x0 ± s`` with ``s_i = ¼ (1 + |x0_i|) a_i``, ``a_i`` uniform in
    ``[½, 1)`` (seed 36) — each with a name for the messages. A shifted point where ``drift`` or ``diffusion``
    is not finite (outside the domain, e.g. ``√x`` below 0) is left out."""
    shift = 0.25 * (1.0 + np.abs(x0)) * np.random.default_rng(36).uniform(0.5, 1.0, x0.size)
    points = [("x0", x0)]
    for name, x in (("x0 + s", x0 + shift), ("x0 − s", x0 - shift)):
        drift, sigma = np.full(sde.dim, np.nan), np.full(sde.diffusion_shape, np.nan)
        with np.errstate(all="ignore"):
            sde.drift(t0, x.copy(), sde.args, drift)
            sde.diffusion(t0, x.copy(), sde.args, sigma)
        if np.all(np.isfinite(drift)) and np.all(np.isfinite(sigma)):
            points.append((f"{name} (s = ¼(1 + |x0|)·a, a seeded in [½, 1))", x))
    return points


def check_terms_readable(sde: SDE, terms, x: np.ndarray, t0: float, point: str = "x0") -> None:
    """Each compiled term against its Python source at ``x`` (1e-9 relative), and ``diffusion_dx`` (when in
    ``terms``) against central finite differences of ``diffusion``, ``h = 1e-6 (1 + |x_i|)``, at most 200
    coordinates (a coordinate whose differences are not finite is skipped: a kink or a domain edge).
    ``point`` names ``x`` in the messages (:func:`check_points`)."""
    from dyntools.validation import KernelMismatch, first_difference

    outputs = {}
    for name, fn, shape in terms:
        compiled, readable = np.full(shape, np.nan), np.full(shape, np.nan)
        fn(t0, x.copy(), sde.args, compiled)
        outputs[name] = compiled
        try:
            fn.py_func(t0, x.copy(), sde.args.copy(), readable)
        except Exception:  # pragma: no cover - source that only numba can run (no readable version to hold it to)
            continue
        diff = first_difference(readable, compiled, rtol=1e-9, atol=1e-300)
        if diff is not None:
            at, r_val, c_val = diff
            raise KernelMismatch(f"Invalid {name}: the compiled term does not compute what its Python source computes "
                                 f"— at {point}, out{list(at) if isinstance(at, tuple) else [at]} is {c_val!r} "
                                 f"compiled but {r_val!r} by the source (a global changed after compiling?)")
    if "diffusion_dx" not in outputs:
        return
    dx = outputs["diffusion_dx"][:, 0]
    coords = np.unique(np.linspace(0, sde.dim - 1, min(sde.dim, 200)).round().astype(np.int64))
    fd = np.full(coords.size, np.nan)
    for k, i in enumerate(coords):
        h = 1e-6 * (1.0 + abs(x[i]))
        sides = []
        for sign in (1.0, -1.0):
            xs, out = x.copy(), np.full((sde.dim, 1), np.nan)
            xs[i] += sign * h
            sde.diffusion(t0, xs, sde.args, out)
            sides.append(out[i, 0])
        fd[k] = (sides[0] - sides[1]) / (2.0 * h)
    ok = np.isfinite(fd)
    if not ok.any():
        return
    scale = np.maximum(np.maximum(np.abs(dx[coords]), np.abs(fd)), max(1e-3 * np.max(np.abs(fd[ok])), 1e-8))
    bad = np.flatnonzero(ok & (np.abs(dx[coords] - fd) > DX_RTOL * scale))
    if bad.size:
        k = int(bad[0])
        i = int(coords[k])
        raise KernelMismatch(f"Invalid diffusion_dx: it is not ∂σ_i/∂x_i of diffusion — at {point}, coordinate {i}: "
                             f"diffusion_dx gives {dx[i]:.6g}, central finite differences of diffusion {fd[k]:.6g} "
                             f"(relative error {abs(dx[i] - fd[k]) / scale[k]:.2g} > {DX_RTOL:g})")


#: Relative tolerance of the commutative-noise ``milstein`` term against finite differences of ``diffusion``.
MILSTEIN_RTOL = 1e-4


def milstein_term_fd(sde: SDE, x: np.ndarray, t0: float, dw: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The readable commutative-noise Milstein term at ``x`` from ``diffusion`` alone, and the size of its parts::

        ½ Σ_{j1,j2} (L^{j1}σ^{j2})(dw_{j1}dw_{j2} − δ_{j1j2} h) = ½ Σ_{j1} D_{j1} (dw_{j1} dw − h e_{j1}),

    ``D_j = ∂σ/∂x · σ^j`` (p × m: the derivative of σ along its column j) by central differences
    ``(σ(x + εσ^j) − σ(x − εσ^j)) / 2ε``, ``ε = 1e-6 (1 + ‖x‖∞) / ‖σ^j‖∞`` (2m calls of ``diffusion``).
    The second array is ``½ Σ_{j1} |D_{j1}| |dw_{j1} dw − h e_{j1}|``, the scale cancellations are measured on."""
    p, m = sde.dim, sde.noise_dim
    sigma = np.empty((p, m))
    sde.diffusion(t0, x.copy(), sde.args, sigma)
    term, size = np.zeros(p), np.zeros(p)
    for j in range(m):
        v = sigma[:, j]
        norm = float(np.max(np.abs(v)))
        if norm == 0.0:
            continue                                     # L^j σ = 0: column j moves nothing
        eps = 1e-6 * (1.0 + float(np.max(np.abs(x)))) / norm
        up, down = np.empty((p, m)), np.empty((p, m))
        sde.diffusion(t0, x + eps * v, sde.args, up)
        sde.diffusion(t0, x - eps * v, sde.args, down)
        D = (up - down) / (2.0 * eps)
        weights = dw[j] * dw
        weights[j] -= h
        term += 0.5 * (D @ weights)
        size += 0.5 * (np.abs(D) @ np.abs(weights))
    return term, size


def check_milstein_term(sde: SDE, x: np.ndarray, t0: float, point: str = "x0") -> None:
    """The compiled ``milstein`` term against :func:`milstein_term_fd` at ``x``, for one fixed draw ``dw ~ N(0, 1)``
    (seed 36) and ``h = 1``; entry i is wrong when ``|c_i − r_i| > MILSTEIN_RTOL · max(|c_i|, size_i,
    1e-3 max size, 1e-10)`` — finite differences of a smooth σ are good to ~1e-8 relative, so a term that drops
    the ``−h`` part, a factor ½ or a cross term ``j1 ≠ j2`` is far outside. One :class:`KernelMismatch` names
    the first wrong coordinate with both values; ``point`` names ``x`` in it."""
    from dyntools.validation import KernelMismatch

    dw = np.random.default_rng(36).standard_normal(sde.noise_dim)
    h = 1.0
    compiled = np.full(sde.dim, np.nan)
    sde.milstein(t0, x.copy(), sde.args, dw.copy(), h, compiled)
    readable, size = milstein_term_fd(sde, x, t0, dw, h)
    if not np.all(np.isfinite(readable)):
        return                                           # a kink or a domain edge within ε: no readable value
    floor = max(1e-3 * float(np.max(size)), 1e-10)
    tol = MILSTEIN_RTOL * np.maximum(np.maximum(np.abs(compiled), size), floor)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.abs(compiled - readable) <= tol))
    if bad.size:
        i = int(bad[0])
        raise KernelMismatch(f"Invalid milstein: it is not ½ Σ (L^j1 σ^j2)(ΔW_j1 ΔW_j2 − δ h) of diffusion — "
                             f"at {point}, with ΔW ~ N(0, 1) and h = 1, coordinate {i}: milstein gives "
                             f"{compiled[i]:.6g}, central finite differences of diffusion {readable[i]:.6g} "
                             f"({bad.size} of {sde.dim} coordinates disagree beyond {MILSTEIN_RTOL:g} relative)")


# ------------------------------------------------------------------------------------ the solver

def save_grid(t0: float, t1: float, h: float, save_at=None, records: int = 101) -> tuple[int, np.ndarray]:
    """Number of steps and the saved step indices for times ``save_at`` (default ``records``
    evenly spaced times). Every time must lie on the step grid ``t0 + k h`` (to 1e-9 relative)."""
    n_steps_f = (t1 - t0) / h
    n_steps = int(round(n_steps_f))
    if n_steps < 1 or abs(n_steps_f - n_steps) > 1e-9 * max(1.0, n_steps_f):
        raise ValueError(f"Invalid h: {h} (t1 − t0 = {t1 - t0} must be a positive multiple of h)")
    if save_at is None:
        steps = np.unique(np.round(np.linspace(0, n_steps, validation.count("records", records, 2)))
                          .astype(np.int64))
        return n_steps, steps
    times = validation.finite_array("save_at", save_at, ndim=1)
    k = (times - t0) / h
    steps = np.round(k).astype(np.int64)
    if np.any(np.abs(k - steps) > 1e-9 * np.maximum(1.0, np.abs(k))):
        raise ValueError("Invalid save_at: every time must be t0 + k·h for an integer k")
    if np.any(np.diff(steps) <= 0) or steps[0] < 0 or steps[-1] > n_steps:
        raise ValueError(f"Invalid save_at: must be strictly increasing within [t0, t1] = [{t0}, {t1}]")
    return n_steps, steps


def solve(sde: SDE, x0, *, t1: float, h: float, t0: float = 0.0, paths: int = 1, scheme: str = "em",
          seed: int = 0, save_at=None, records: int = 101, substeps: int = 1, bound: float = 1e10,
          record_brownian: bool = False, kernel: str = "numba", stream: str = "sde.brownian",
          stream_key: tuple[int, ...] = ()) -> RunResult:
    r"""Integrate ``sde`` for ``paths`` independent paths from ``x0`` on ``[t0, t1]`` with step ``h``.

    Solves :math:`dX_t = b(X_t, t)\,dt + \sigma(X_t, t)\,dW_t` by Euler–Maruyama,
    :math:`X_{k+1} = X_k + b\,h + \sigma\,\Delta W_k`, or (diagonal noise) Milstein, which adds
    :math:`\tfrac12 \sigma_i\,\partial_{x_i}\sigma_i\,(\Delta W_{k,i}^2 - h)` — or, for commutative noise,
    :math:`\tfrac12 \sum_{j_1, j_2} (L^{j_1}\sigma^{j_2})(\Delta W_{k,j_1}\Delta W_{k,j_2} - \delta_{j_1 j_2} h)`
    (the SDE's ``milstein`` term). An SDE with ``milstein_form`` is replaced by its Milstein-ready form
    for ``scheme="milstein"`` (which raises ``ValueError`` when Milstein does not apply).

    Parameters
    ----------
    sde : SDE
        The drift and diffusion terms.
    x0 : float or float64[p] or float64[paths, p]
        Initial state(s), finite.
    t1 : float
        The end time (> ``t0``).
    h : float
        The step (> 0); the last step ends at ``t1``.
    t0 : float
        The start time.
    paths : int
        Independent paths.
    seed : int
        The root seed of the Brownian increments.
    records : int
        The number of saved times (without ``save_at``).
    scheme : {"em", "milstein"}
        The integration scheme.
    save_at : array, optional
        Times on the step grid (default ``records`` even times).
    substeps : int
        Fine Brownian steps per step (refinement-consistent increments; see the module docstring).
    bound : float
        A path diverges (and stops) when some :math:`|x_i|` is beyond it or NaN (see the module docstring).
    record_brownian : bool
        Also return W at the saved times (``arrays["W"]``, shape (paths, K, m)).
    kernel : {"numba", "numpy"}
        ``"numba"`` (parallel over paths) or ``"numpy"`` (the twin).
    stream, stream_key : str, tuple of int
        The increments' purpose (a key of :data:`dyntools.engine.streams.KEYS`) and extra key words: path i
        draws from ``SeedSequence(seed, (KEYS[stream], *stream_key, i))``.

    Returns
    -------
    RunResult
        Of kind ``"sde"``: arrays ``t`` (K,), ``x`` (paths, K, p), ``diverged_at`` (paths,) the step of
        divergence (−1: never) and ``diverged_time`` (its time, NaN: never); status "completed" or
        "diverged"; summary ``steps``, ``diverged``.
    """
    timings: dict[str, float] = {}
    h = validation.positive("h", h)
    t0 = validation.finite("t0", t0)
    t1 = validation.finite("t1", t1)
    if t1 <= t0:
        raise ValueError(f"Invalid t1: {t1} (must be > t0 = {t0})")
    paths = validation.count("paths", paths)
    scheme = validation.one_of("scheme", scheme, SCHEMES)
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    substeps = validation.count("substeps", substeps)
    bound = validation.positive("bound", bound)
    x0 = _initial_state(x0, paths, sde.dim)
    n_steps, save_steps = save_grid(t0, t1, h, save_at, records)
    if scheme == "milstein" and sde.milstein_form is not None:
        sde = sde.milstein_form()
    check_terms(sde, x0, t0, scheme)

    state = streams.path_states(seed, paths, streams.key(stream), *stream_key)
    initial_states = state.copy()
    out = np.full((paths, save_steps.size, sde.dim), np.nan)
    w_out = np.full((paths, save_steps.size, sde.noise_dim), np.nan) if record_brownian else np.empty((0, 0,
                                                                                                       0))
    diverged_at = np.full(paths, guard.NEVER, dtype=np.int64)
    call_args = (sde.args, x0, state, t0, h, n_steps, substeps, EM if scheme == "em" else MILSTEIN,
                 sde.noise == "diagonal", sde.noise_dim, save_steps, bound, out, w_out, diverged_at)
    with timed(timings, "simulate"):
        if kernel == "numba":
            _kernel_for(sde)(*call_args)
        else:
            solve_numpy(sde, *call_args)
    times = t0 + save_steps * h
    bad = guard.summary(diverged_at)
    n_bad = bad["diverged"]
    if n_bad:
        status = "diverged"
        cause = _divergence_cause(sde, call_args, initial_states, diverged_at, t0, h)
        text = message(status, diverged=n_bad, paths=paths, first=bad["first"],
                       detail=f"{cause}; later values NaN")
    else:
        status = "completed"
        text = message(status, paths=paths, detail=f"integrated to t = {t1:g} with {scheme} (h = {h:g})")
    diverged = ~guard.alive(diverged_at)
    arrays = {"t": times, "x": out, "diverged_at": diverged_at,
              "diverged_time": np.where(diverged, t0 + diverged_at * h, np.nan)}
    if record_brownian:
        arrays["W"] = w_out
    config = {"model": sde.name, "scheme": scheme, "h": h, "t0": t0, "t1": t1, "paths": paths,
              "substeps": substeps, "bound": bound, "dim": sde.dim, "noise_dim": sde.noise_dim,
              "noise": sde.noise, "args": sde.args.tolist(), "kernel": kernel,
              "stream": stream, "stream_key": [int(k) for k in stream_key]}
    summary = {"paths": paths, "steps": n_steps, "diverged": n_bad,
               "final_mean": np.nanmean(out[:, -1, :], axis=0).tolist() if n_bad < paths else None}
    return RunResult("sde", config, arrays, status, text, seed=seed, summary=summary, timings=timings,
                     versions=versions())


def _divergence_cause(sde, call_args, initial_states, diverged_at, t0, h) -> str:
    """Why the first diverged path stopped: its state at the divergence, found by replaying that one path
    (its own stream, so the same draws) with the NumPy twin up to the step — non-finite (a NaN produced by
    the dynamics, e.g. √x of a negative x) or beyond the bound (:func:`dyntools.engine.guard.cause`)."""
    (args, x0, _, _, _, _, substeps, scheme, diagonal, m, _, bound, _, _, _) = call_args
    path = int(np.argmin(np.where(diverged_at == guard.NEVER, np.iinfo(np.int64).max, diverged_at)))
    step = int(diverged_at[path])
    state = initial_states[path:path + 1].copy()
    out = np.full((1, 1, x0.shape[1]), np.nan)
    replay = np.full(1, guard.NEVER, dtype=np.int64)
    x = solve_numpy(sde, args, x0[path:path + 1].copy(), state, t0, h, step, substeps, scheme, diagonal, m,
                    np.zeros(1, dtype=np.int64), bound, out, np.empty((0, 0, 0)), replay)
    if replay[0] != step:       # the twin disagrees (should not happen): say only what is certain
        return f"some |x_i| beyond {bound:g} or NaN at t = {t0 + step * h:g}"
    return guard.cause(x[0], bound, where=f" at t = {t0 + step * h:g}")


def _initial_state(x0, paths: int, dim: int) -> np.ndarray:
    arr = np.asarray(x0, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full((paths, dim), float(arr))
    elif arr.ndim == 1:
        if arr.shape[0] != dim:
            raise ValueError(f"Invalid x0: length {arr.shape[0]} does not match dim = {dim}")
        arr = np.broadcast_to(arr, (paths, dim))
    elif arr.shape != (paths, dim):
        raise ValueError(f"Invalid x0: shape {arr.shape} (expected ({dim},) or ({paths}, {dim}))")
    if not np.all(np.isfinite(arr)):
        raise ValueError("Invalid x0: contains non-finite values")
    return np.ascontiguousarray(arr, dtype=np.float64).copy()


def solve_numpy(sde: SDE, args, x0, state, t0, h, n_steps, substeps, scheme, diagonal, m, save_steps, bound,
                out, w_out, diverged_at):
    """NumPy twin of the kernel: same arguments, same draws (paths vectorized for the normals),
    terms evaluated path by path through their Python-callable dispatchers. Readable and slow. Returns the
    final states (a diverged path keeps its state at the divergence)."""
    n_paths, p = x0.shape
    x = x0.copy()
    alive = np.ones(n_paths, dtype=bool)
    w = np.zeros((n_paths, m))
    ncol = 1 if diagonal else m
    k = 0
    sq_fine = np.sqrt(h / substeps)
    dx_fn = sde.diffusion_dx if sde.diffusion_dx is not None else _no_derivative
    corr_fn = sde.milstein if sde.milstein is not None else _no_milstein
    for n in range(n_steps + 1):
        if record.due_np(save_steps, k, n):
            out[alive, k] = x[alive]
            if w_out.shape[0]:
                w_out[alive, k] = w[alive]
            k += 1
        if n == n_steps or not alive.any():
            break
        idx = np.flatnonzero(alive)
        sub = state[idx]
        dw = np.zeros((idx.size, m))
        for _ in range(substeps):
            for j in range(m):
                dw[:, j] += ziggurat.normal_np(sub)
        state[idx] = sub
        dw *= sq_fine
        w[idx] += dw
        t = t0 + n * h
        for a, path in enumerate(idx):
            b = np.empty(p)
            s = np.empty((p, ncol))
            ds = np.zeros((p, ncol))
            corr = np.zeros(p)
            sde.drift(t, x[path], args, b)
            sde.diffusion(t, x[path], args, s)
            if scheme == MILSTEIN:
                if diagonal:
                    dx_fn(t, x[path], args, ds)
                else:
                    corr_fn(t, x[path], args, dw[a], h, corr)
            if diagonal:
                inc = b * h + s[:, 0] * dw[a]
                if scheme == MILSTEIN:
                    inc += 0.5 * s[:, 0] * ds[:, 0] * (dw[a] * dw[a] - h)
            else:
                inc = b * h
                for j in range(m):               # the kernel's summation order
                    inc = inc + s[:, j] * dw[a, j]
                if scheme == MILSTEIN:
                    inc = inc + corr
            x[path] = x[path] + inc
            if guard.beyond_np(np.abs(x[path]), bound).any():
                diverged_at[path] = n + 1
                alive[path] = False
    return x
