"""The validated, built pieces of one :func:`dyntools.dynamics.train.train` call: a :class:`Run`.

``train`` reads as three steps — validate, build the run, dispatch it — and this module holds the first two:

- :func:`check_problem`: the model, the data sets (one, or one per seed ``s < S``), ``steps``, the sampler
  and its batch ``b`` (``b = n`` for the full sampler), the label noise δ ≥ 0;
- :func:`check_runs`: the ``G`` runs, optimizer and schedule pairs (one of either is shared by every run),
  their fused-kernel codes and hyperparameters, which schedules are reactive, the run labels;
- :func:`build_run`: the record grid, the learning rates ``lr_g · m_t``, the initial parameters of every path
  ``p = g·S + s``, the per-path streams, the stacked data, the runs' compiled optimizer step, the loop's typed
  arguments (:class:`~dyntools.dynamics.path_loop.LoopArrays`), the loop that
  will advance the paths (tuned, cached generic, or the optimizers' chains) and the kernel checks.

Every check raises the same ``ValueError``/``TypeError`` as before the split, in the same order, and the
arrays are built by the same operations in the same order (a run is bitwise what it was).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dyntools import validation
from dyntools.dynamics import fast as tuned_loops
from dyntools.dynamics import kernel_check, loops, path_loop
from dyntools.dynamics.fast import probe as tuned_probe
from dyntools.dynamics.rates import LearningRates
from dyntools.engine import guard, record, samplers, streams
from dyntools.models.base import HEADS, Model, no_hook
from dyntools.optim import chain_step
from dyntools.optim import compiled as optim_compiled
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import Constant, ReduceLROnPlateau


@dataclass(frozen=True)
class Problem:
    """What is trained on what: the checked model, data sets, step count and sampler."""

    model: Model
    sets: list
    steps: int
    kernel: str              # "numba" or "numpy"
    sampler: str
    sampler_code: int
    S: int                   # seeds
    n: int                   # examples per data set
    b: int                   # examples per step
    label_noise: float


@dataclass(frozen=True)
class Runs:
    """The ``G`` compared settings: optimizer and schedule per run, and what the loop needs of them."""

    opts: list
    scheds: list
    G: int
    compiled: Any            # the runs' compiled step (CompiledRuns), or None: a transform has no compiled form
    reactive: list           # the runs whose schedule is a ReduceLROnPlateau
    labels: list

    @property
    def by_chain(self) -> bool:
        """Every run steps its optimizer's readable chain from Python (a transform has no compiled form)."""
        return self.compiled is None


@dataclass(frozen=True)
class Run:
    """Everything the loop and the result need, built once: ``P = G·S`` paths of ``p_dim`` parameters,
    ``K`` recordings; the arrays are the loop's buffers (advanced in place)."""

    problem: Problem
    runs: Runs
    record_steps: np.ndarray
    rates: LearningRates
    thetas: np.ndarray       # (P, p) the current parameters
    bound: Any
    Xs: np.ndarray
    ys: np.ndarray
    y_dtype: Any
    data_of: np.ndarray      # (P,) data set of each path
    run_of: np.ndarray       # (P,) run of each path
    diverged_at: np.ndarray
    theta_rec: np.ndarray    # (P, K, p)
    step_losses: np.ndarray  # (P, T) or (P, 0)
    arrays: path_loop.LoopArrays  # what every loop reads (``lrs``: the rates of the current window)
    compiled: Any            # the runs' compiled optimizer step (:class:`dyntools.optim.compiled.CompiledRuns`)
    setting: dict
    tuned: Any               # the tuned loop, or None
    kernel_fn: Any           # the kernel the chain path calls (compiled or NumPy twin)
    cached: Any              # the compiled generic loop for the kernel, or None
    steppers: list | None    # one chain stepper per path when by_chain
    hooks: Any               # the model's step hooks (:class:`dyntools.models.base.Hooks`)

    @property
    def P(self) -> int:
        return self.runs.G * self.problem.S


def _as_list(value, what: str) -> list:
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items:
        raise ValueError(f"Invalid {what}: need at least one")
    return items


def _datasets(data) -> list:
    sets = _as_list(data, "data")
    for ds in sets:
        if not hasattr(ds, "X") or not hasattr(ds, "y"):
            raise TypeError("Invalid data: expected an object with arrays X and y (or a list of them)")
    return sets


def check_problem(model, data, *, steps, kernel, sampler, label_noise, seeds, batch) -> Problem:
    """The model (a :class:`~dyntools.models.base.Model` with a sampling stream and a known head), the data
    sets (finite ``X`` of one shape (n, d), targets its head accepts), ``steps`` ≥ 1 and ``batch`` ≤ n."""
    steps = validation.count("steps", steps)
    kernel = validation.one_of("kernel", kernel, ("numba", "numpy"))
    sampler_code = samplers.code(sampler)
    if not isinstance(model, Model):
        raise TypeError(f"Invalid model: {type(model).__name__} is not a dyntools.Model (subclass dyntools.Model: "
                        "it declares every hook the trainer calls, with its default)")
    if model.sampling_stream is None:
        raise ValueError(f"Invalid model {model.name!r}: it declares no sampling_stream (set the class attribute to "
                         "a purpose of dyntools.engine.streams.KEYS, e.g. a new one for a new model)")
    if model.head not in HEADS:
        raise ValueError(f"Invalid model: head {model.head!r} (expected one of {', '.join(HEADS)})")
    label_noise = validation.non_negative("label_noise", label_noise)
    if label_noise and model.head != "regression":
        raise ValueError("Invalid label_noise: label noise needs a regression head")
    sets = _datasets(data)
    for ds in sets:                             # a model that knows its input width refuses other data
        model.check_data(ds.X, ds.y)
    S = validation.count("seeds", seeds) if seeds is not None else len(sets)
    if len(sets) not in (1, S):
        raise ValueError(f"Invalid data: {len(sets)} data sets for {S} seeds (give one, or one per seed)")
    n, d = np.shape(sets[0].X)
    for ds in sets:
        X = validation.finite_array("X", ds.X, ndim=2)
        if X.shape != (n, d):
            raise ValueError(f"Invalid data: every data set needs X of shape ({n}, {d}), got {X.shape}")
        _check_targets(ds.y, n, model.head)
    batch = validation.count("batch", batch)
    if sampler_code != samplers.FULL and batch > n:
        raise ValueError(f"Invalid batch: {batch} (must be <= n = {n})")
    b = n if sampler_code == samplers.FULL else batch
    return Problem(model, sets, steps, kernel, sampler, sampler_code, S, n, b, label_noise)


def check_runs(optimizer, schedule, labels) -> Runs:
    """The runs: ``G = max(#optimizers, #schedules)`` pairs (one of either is repeated), their optimizers' chains
    compiled into one step (:func:`dyntools.optim.compiled.compile_runs`; None when a transform has no compiled
    form), and one label per run (default the optimizer names)."""
    opts = _as_list(optimizer, "optimizer")
    scheds = _as_list(Constant() if schedule is None else schedule, "schedule")
    G = max(len(opts), len(scheds))
    if len(opts) not in (1, G) or len(scheds) not in (1, G):
        raise ValueError(f"Invalid schedule: {len(scheds)} schedules for {len(opts)} optimizers "
                         "(give one of either, or as many of both)")
    opts = opts * G if len(opts) == 1 else opts
    scheds = scheds * G if len(scheds) == 1 else scheds
    for o in opts:
        if not isinstance(o, O.Optimizer):
            raise TypeError(f"Invalid optimizer: {o!r} (expected a dyntools.optim optimizer)")
    try:
        compiled = optim_compiled.compile_runs(opts)
    except optim_compiled.NotCompilable:       # a transform with only its readable update: the chains, in Python
        compiled = None
    reactive = [g for g, s in enumerate(scheds) if isinstance(s, ReduceLROnPlateau)]
    labels = [o.name for o in opts] if labels is None else [str(x) for x in labels]
    if len(labels) != G:
        raise ValueError(f"Invalid labels: {len(labels)} names for {G} runs")
    return Runs(opts, scheds, G, compiled, reactive, labels)


def _initial_params(model, theta0, seed: int, S: int) -> np.ndarray:
    """(S, p): ``model.init(seed, s)`` per seed (checked: p finite numbers), or ``theta0`` (p,) or (S, p)."""
    p_dim = model.n_params
    if theta0 is None:
        inits = [np.asarray(model.init(seed, s)) for s in range(S)]
        if inits[0].shape != (p_dim,) or not np.all(np.isfinite(inits[0])):
            raise ValueError(f"Invalid model {model.name!r}: init(seed, 0) returned shape {inits[0].shape}"
                             f"{'' if inits[0].shape != (p_dim,) else ' with non-finite entries'} (expected "
                             f"n_params = {p_dim} finite numbers)")
        return np.stack(inits)
    inits = validation.finite_array("theta0", theta0)
    if inits.shape not in ((p_dim,), (S, p_dim)):
        raise ValueError(f"Invalid theta0: expected shape ({p_dim},) or ({S}, {p_dim}), got {inits.shape}")
    return np.broadcast_to(inits, (S, p_dim))


def _replay(pb: Problem, indices, P: int):
    """The replayed index sequence (the ``replay`` sampler only, which needs it), else ``NO_REPLAY``."""
    if pb.sampler_code == samplers.REPLAY:
        if indices is None:
            raise ValueError("Invalid indices: the replay sampler needs the index sequence")
        return samplers.check_replay(indices, steps=pb.steps, batch=pb.b, paths=P, n=pb.n)
    if indices is not None:
        raise ValueError("Invalid indices: given indices need sampler='replay'")
    return samplers.NO_REPLAY


def _path_states(model, seed: int, S: int, G: int, common_stream: bool, stream_key) -> np.ndarray:
    """The xoshiro state of every path: ``SeedSequence(seed, (KEY, g, s, *stream_key))``, or ``(KEY, s, …)``
    shared by every run of a seed with ``common_stream``."""
    key = streams.key(model.sampling_stream)
    if common_stream:
        return np.tile(streams.path_states(seed, S, key, *stream_key), (G, 1))
    return np.concatenate([streams.path_states(seed, S, key, g, *stream_key) for g in range(G)])


def _pick_loop(pb: Problem, rs: Runs, setting: dict, fast: bool):
    """The tuned loop registered for the model and setting (None: the generic loop), after refusing what the
    model's loops cannot do; and the kernel the loop calls (``loss_grad``, compiled, or ``loss_grad_np``)."""
    model, kernel = pb.model, pb.kernel
    tuned = tuned_loops.select(model, setting) if fast and not rs.by_chain else None
    if kernel == "numba" and not hasattr(model.loss_grad, "py_func"):
        raise ValueError(f"Invalid model {model.name!r}: kernel='numba' needs model.loss_grad compiled with "
                         f"numba.njit (got {type(model.loss_grad).__name__}); njit it, or pass kernel='numpy' "
                         "to run loss_grad_np")
    return tuned, (model.loss_grad if kernel == "numba" else model.loss_grad_np)


def _check_kernel(pb: Problem, kernel_fn, thetas, Xs, ys, iargs, fargs, ws_size, check_gradient) -> None:
    """A user's kernel runs once on guarded buffers (and its gradient against finite differences); a kernel
    generated from a user's expression is compared with its twin."""
    model = pb.model
    if not kernel_check.is_builtin(model):
        kernel_check.check_kernel(model, kernel_fn, thetas[0], Xs[0], ys[0], pb.b, iargs, fargs, ws_size,
                                  gradient=bool(check_gradient))
    elif pb.kernel == "numba" and model.generated_kernel:       # generated from a user's expression
        kernel_check.check_generated(model, thetas[0], Xs[0], ys[0], pb.b, iargs, fargs, ws_size)


def _hook_arrays(hooks, P: int, G: int, K: int) -> dict:
    """The :class:`~dyntools.dynamics.path_loop.LoopArrays` fields of the model's ``hooks`` (empty by default)."""
    out = path_loop.no_hooks(P, G)
    if hooks.state is not None:
        out["hook_state"] = np.ascontiguousarray(hooks.state, dtype=np.float64)
    if hooks.streams is not None:
        out["hook_streams"] = np.ascontiguousarray(hooks.streams, dtype=np.uint64)
    if hooks.args is not None:
        out["hook_args"] = np.ascontiguousarray(hooks.args, dtype=np.float64)
    S = out["hook_state"].shape[1]
    out["hook_rec"] = np.full((P, K, S), np.nan) if hooks.recorded else np.zeros((P, 0, S))
    return out


#: A run of fewer path-steps (paths × steps) than this calls its kernel, optimizer step and hooks through function
#: pointers from one loop per sampler, compiled once per installation for every model and optimizer
#: (:func:`dyntools.dynamics.path_loop.by_pointer`); a longer one takes the loop that names its step (and, with
#: hooks, its kernel). Named, a step saved at most ~15 ns per path-step (SGD with momentum on an 8-wide diagonal
#: net, AMD EPYC Zen 4; 0–5 % on wider ones): at most 1.5 ms below this size, while each step module's own loop
#: costs 3–10 s to compile and a cache load per process (issue 38: the suite compiled 65 such loops).
POINTER_RUN_PATH_STEPS = 100_000


def _cached_loop(pb: Problem, arrays: path_loop.LoopArrays, compiled, hooks, path_steps: int):
    """The compiled generic loop of the model's kernel. A run of fewer than :data:`POINTER_RUN_PATH_STEPS`
    ``path_steps`` calls kernel, step and hooks through function pointers from one loop per sampler for every model
    and optimizer (:func:`dyntools.dynamics.path_loop.by_pointer`; the same bits), unless the model keeps its kernel
    inlined (``Model.inline_kernel``: the 2-D surfaces, measured more than 3 % slower per step by pointer). A longer
    run of a model without step hooks — built-in, user's or generated kernel alike — gets one shared loop (the kernel
    by pointer, the run set's own step named in it: :func:`dyntools.dynamics.loops.pointer_loop`), compiled once per
    step module and sampler instead of once per (kernel, step): the quick report's 14 per-model loops took ~200 s of
    its cold compiles; else (hooks: dropout, batch norm, the toy's counters; ``inline_kernel``) the loop generated
    for the kernel, step and hooks and cached on disk (:func:`dyntools.dynamics.loops.user_loop`); None for the
    NumPy twin, or a kernel that cannot be imported by name (the trainer then passes it to its uncached generic
    loop)."""
    if pb.kernel != "numba":
        return None
    if (not pb.model.inline_kernel and path_steps < POINTER_RUN_PATH_STEPS
            and path_loop.hooks_take_pointers(hooks.compiled, arrays)):      # (not a hook that returns a value)
        checked = not kernel_check.is_builtin(pb.model) or pb.model.generated_kernel    # run by _check_kernel first
        return path_loop.by_pointer(pb.model.loss_grad, compiled.own_step, arrays, hooks.compiled,
                                    compile_kernel_now=checked)
    if not pb.model.inline_kernel and all(h is no_hook for h in hooks.compiled):
        # one compiled loop for every kernel of the protocol and run set's own chains
        return loops.pointer_loop(pb.model.loss_grad, compiled.own_step, arrays)
    return loops.user_loop(pb.model.loss_grad, compiled.step, hooks.compiled)


def build_run(pb: Problem, rs: Runs, *, record_steps, records, grid, seed, theta0, bound, indices, common_stream,
              stream_key, drop_last, step_loss, keep_lrs, fast, check_gradient) -> Run:
    """Allocate and fill every buffer of the ``P = G·S`` paths, choose the loop, check the kernel."""
    model, steps, S, G, n, b = pb.model, pb.steps, pb.S, rs.G, pb.n, pb.b
    if record_steps is None:
        record_steps = record.make_grid(grid, steps, records)
    record_steps = record.validate_steps(record_steps, steps)
    K = record_steps.size
    rates = LearningRates(rs.opts, rs.scheds, steps, rs.reactive, record_steps, keep=bool(keep_lrs))
    p_dim = model.n_params
    P = G * S
    inits = _initial_params(model, theta0, seed, S)
    fdt = np.dtype(model.dtype)          # the precision the model trains in
    thetas = np.ascontiguousarray(np.tile(inits, (G, 1)), dtype=fdt)
    bound = (guard.default_bound(np.abs(inits).sum(axis=1).max()) if bound is None
             else validation.positive("bound", bound))
    replay = _replay(pb, indices, P)
    states = _path_states(model, seed, S, G, common_stream, stream_key)
    sets = pb.sets
    Xs = np.ascontiguousarray(np.stack([np.asarray(ds.X, dtype=np.float64) for ds in sets]), dtype=fdt)
    y_dtype = fdt if model.head == "regression" else np.int64
    ys = np.ascontiguousarray(np.stack([np.asarray(ds.y).astype(y_dtype) for ds in sets]))
    data_of = np.tile(np.arange(S, dtype=np.int64) if len(sets) == S else np.zeros(S, dtype=np.int64), G)
    run_of = np.repeat(np.arange(G, dtype=np.int64), S)
    compiled = rs.compiled
    if compiled is None:       # the chains keep their own states (chain_step.ChainStepper); the loop's are unused
        hps, opt_states, plain_sgd = np.zeros((G, 1)), np.zeros((P, 1, p_dim), dtype=fdt), (False,) * G
    else:
        hps, plain_sgd = compiled.hps, compiled.plain_sgd
        opt_states = np.ascontiguousarray(np.stack([compiled.initial_state(g, p_dim) for g in run_of]), dtype=fdt)
    perms = np.tile(np.arange(n, dtype=np.int64), (P, 1))
    pos = np.full(P, n, dtype=np.int64)
    diverged_at = np.full(P, guard.NEVER, dtype=np.int64)
    theta_rec = np.full((P, K, p_dim), np.nan)
    iargs, fargs = model.kernel_args()
    ws_size = int(model.workspace_size(b))
    step_losses = np.full((P, steps if step_loss or rs.reactive else 0), np.nan)
    setting = {"sampler": pb.sampler, "batch": b, "label_noise": pb.label_noise, "optimizers": rs.opts,
               "kernel": pb.kernel, "step_loss": step_losses.shape[1] > 0, "seed": seed,
               "common_stream": bool(common_stream), "stream_key": tuple(int(k) for k in stream_key),
               "plain_sgd": plain_sgd}
    hooks = model.hooks(setting, P)
    for role, hook in zip(loops.HOOK_NAMES, hooks.compiled if pb.kernel == "numba" else ()):
        if not hasattr(hook, "py_func"):
            raise ValueError(f"Invalid model {model.name!r}: its step hook {role} must be compiled with numba.njit "
                             f"(got {type(hook).__name__}); njit it, or pass kernel='numpy' to run its NumPy twin")
    arrays = path_loop.LoopArrays(
        thetas=thetas, opt_states=opt_states, Xs=Xs, ys=ys, data_of=data_of, iargs=iargs, fargs=fargs,
        ws_size=ws_size, sampler=pb.sampler_code, batch=b, drop_last=bool(drop_last), replay=replay, states=states,
        perms=perms, pos=pos, label_noise=pb.label_noise, hps=hps,
        lrs=rates.window(0, min(steps, tuned_probe.PROBE_STEPS)), run_of=run_of, step_losses=step_losses,
        plain_sgd=np.array(plain_sgd, dtype=np.bool_), **_hook_arrays(hooks, P, G, K))
    tuned, kernel_fn = _pick_loop(pb, rs, setting, fast)
    if tuned is not None and P * steps < min(tuned_loops.short_run_limit(tuned), POINTER_RUN_PATH_STEPS):
        tuned = None          # the pointer loop: the same bits, no loop of its own to compile (fast/mlp.py)
    # the generic loop runs unless a built-in tuned loop does (a user's is probed against it first): not built, its
    # kernel is not compiled (the ReLU net's loss_grad_regression, ~1.3 of its ~6.5 cold seconds, issue 38)
    generic_runs = tuned is None or tuned_loops.user_selector(model) is not None
    cached = (None if compiled is None or not generic_runs
              else _cached_loop(pb, arrays, compiled, hooks, P * steps))   # before the check: by_pointer
    _check_kernel(pb, kernel_fn, thetas, Xs, ys, iargs, fargs, ws_size, check_gradient)  # compiles the kernel first
    steppers = ([chain_step.ChainStepper(rs.opts[run_of[p]], thetas[p]) for p in range(P)] if rs.by_chain
                else None)
    return Run(pb, rs, record_steps, rates, thetas, bound, Xs, ys, y_dtype, data_of, run_of, diverged_at, theta_rec,
               step_losses, arrays, compiled, setting, tuned, kernel_fn, cached, steppers, hooks)


def _check_targets(y, n: int, head: str) -> None:
    """``y`` must be n finite numbers (regression) or n integer class labels ≥ 0 (cross-entropy), as a
    flat array: a ValueError names what is wrong (shape, dtype, the first bad entry)."""
    y = np.asarray(y)
    if y.shape != (n,):
        hint = "; flatten it with y.ravel()" if y.size == n else ""
        raise ValueError(f"Invalid data: y has shape {y.shape} (expected ({n},): one target per example{hint})")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"Invalid data: y has dtype {y.dtype} (expected "
                         f"{'numbers' if head == 'regression' else 'integer class labels'})")
    bad = np.flatnonzero(~np.isfinite(y.astype(np.float64)))
    if bad.size:
        raise ValueError(f"Invalid data: y has {bad.size} non-finite entries (first y[{bad[0]}] = {y[bad[0]]})")
    if head == "cross-entropy":
        wrong = np.flatnonzero((y < 0) | (y != np.round(y)))
        if wrong.size:
            raise ValueError(f"Invalid data: y[{wrong[0]}] = {y[wrong[0]]} is not a class label (integers >= 0 "
                             "for a cross-entropy head)")
