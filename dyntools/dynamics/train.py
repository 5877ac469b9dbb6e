"""``dyntools.train``: any model × any sampler × any optimizer × any schedule × the recorder → a result.

A training run is ``G`` *runs* (optimizer and schedule pairs: the compared settings) times ``S``
*seeds* (initial point, sample stream and, optionally, data set); each (run, seed) pair is a *path*
``p = g·S + s``, advanced independently. Step ``t`` of a path (``t = 0 … T−1``) is

    I_t        = the sampler's examples for step t                         (dyntools.engine.samplers)
    L, g_t     = model.loss_grad(θ_t; X[I_t], y[I_t] + δ ξ_t)               (ξ ~ N(0, 1) fresh; δ = label noise)
    θ_{t+1}    = optimizer step of g_t at learning rate lr_t = lr · m_t    (dyntools.optim, fused kernel)

The optimizer step is the fused kernel of the optimizer's ``precond`` (every built-in optimizer), or —
for an optimizer without one (``precond = NO_FUSED_KERNEL``: your own chain of transforms) — the
optimizer's chain itself, each transform compiled where it provides a numba kernel
(:mod:`dyntools.optim.chain_step`); the result's config says which (``optimizer_path`` "fused" or
"chain", and per run ``optimizer_step``). A ``precond`` whose fused step is not the optimizer's chain is
an error (:func:`~dyntools.optim.chain_step.check_fused_matches_chain`).

with ``m_t`` the run's schedule multiplier. The iterate of step ``t`` is recorded when ``t`` is on
the record grid (before the update; step ``T`` after the last one), and a path stops at the first
step whose parameters are non-finite or beyond the bound, ``‖θ‖₁ > bound`` (:mod:`dyntools.engine.guard`;
``diverged_at`` is that step, later recordings stay NaN).

**Label noise δ.** Every runner and the SDE use one meaning: the targets of a step are ``y_i + δ ξ_i``
with fresh standard normals, so δ is the *standard deviation* of the label noise. For the square loss
``L = (1/2n) Σ (h − y)²`` a full-batch GD step with label noise is then
``θ ← θ − η ∇L(θ) + (η δ / n) φ_θ(X)ᵀ ξ``, whose covariance per step is ``(η δ / n)² φᵀφ``; the label-noise
SDE ``dθ = −∇L dτ + √(η δ̃) φᵀ dB_τ`` over a time ``η`` has covariance ``η · η δ̃ · φᵀφ``, so the two match
when ``δ̃ = δ² / n²`` (:mod:`dyntools.dynamics.sde_models` states its noise in these terms).

Streams: the sampler and label noise of path (g, s) draw from ``SeedSequence(seed, (KEY, g, s))`` with
``KEY`` the model's sampling purpose (:data:`dyntools.engine.streams.KEYS`); with ``common_stream`` every
run of a seed shares the stream of ``(KEY, s)`` (paired comparisons of schedules on the same samples).

:func:`~dyntools.dynamics.path_loop.advance_path` is the compiled step loop of one path (inlined into a
``nogil`` loop over paths that runs on a thread pool: one per built-in model, cached on disk, in
:mod:`dyntools.dynamics.loops`) and :func:`~dyntools.dynamics.path_loop.advance_path_numpy` its twin;
:func:`train` validates, allocates, picks the tuned loop registered for the model and the setting when one
applies (:func:`dyntools.dynamics.fast.select`), drives the chunks and returns a :class:`RunResult`.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.dynamics import fast as tuned_loops
from dyntools.dynamics import kernel_check, loops, path_loop
from dyntools.dynamics.fast import probe as tuned_probe
from dyntools.dynamics.path_loop import advance_path_numpy, advance_paths
from dyntools.dynamics.rates import WINDOW, LearningRates
from dyntools.engine import drive, guard, record, samplers, streams
from dyntools.engine.result import RunResult, timed
from dyntools.models.base import HEADS, Model
from dyntools.optim import chain_step
from dyntools.optim import kernels as optim_kernels
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import Constant, ReduceLROnPlateau, Schedule

# ------------------------------------------------------------------------------------------ runner

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


def train(model, data, optimizer, *, steps: int, schedule: Schedule | list | None = None, batch: int = 1,
          sampler: str = "with-replacement", drop_last: bool = True, label_noise: float = 0.0,
          record_steps=None, records: int = 200, grid: str = "log", seed: int = 0, seeds: int | None = None,
          theta0=None, bound: float | None = None, indices=None, common_stream: bool = False,
          stream_key: tuple[int, ...] = (), chunks: int = 1, progress: bool = False, kernel: str = "numba",
          workers: int | None = None, fast: bool = True, labels=None, step_loss: bool = False,
          plateau_every: int | None = None, plateau_metric=None, check_gradient: bool = True,
          keep_lrs: bool = True) -> RunResult:
    r"""Train ``model`` on ``data`` with ``optimizer`` (see the module docstring for the step).

    Every path runs :math:`\theta_{t+1} = \mathrm{step}(\theta_t, \nabla L_{B_t}(\theta_t), \eta\, m_t)`
    for :math:`t < T`, with :math:`B_t` the sampler's batch and :math:`m_t` the schedule's multiplier; the
    paths are the runs (optimizers × schedules) times the seeds, all advanced in parallel.

    Parameters
    ----------
    model : :class:`dyntools.models.base.Model`
        The model (its compiled loss-and-gradient kernel and metric hooks).
    data : object or list
        An object with ``X``, ``y`` (and optionally ``X_test``, ``y_test``), or a list of them (one per seed).
    optimizer : :class:`dyntools.optim.optimizers.Optimizer` or list
        One optimizer, or one per run.
    steps : int
        The number of updates :math:`T`.
    schedule : :class:`dyntools.optim.schedules.Schedule` or list, optional
        The multiplier :math:`m_t` of the learning rate (default constant), one per run (a single optimizer
        or schedule is shared by every run). A :class:`~dyntools.optim.schedules.ReduceLROnPlateau` is
        *reactive*: the run is cut at every ``plateau_every`` steps (default one epoch,
        :math:`\lfloor n/b \rfloor`) and the schedule is stepped on the mean mini-batch loss of the piece
        over the run's paths (or on ``plateau_metric(thetas)``, given the current parameters (S, p) of the
        run's paths, e.g. a validation loss); its multiplier holds for the next piece.
    batch : int
        Examples per step :math:`b` (ignored by the ``full`` sampler).
    sampler : str
        One of :data:`dyntools.engine.samplers.NAMES` (``"replay"`` needs ``indices``).
    drop_last : bool
        ``epoch`` sampler: a batch never spans two epochs.
    label_noise : float
        :math:`\delta \ge 0`, the standard deviation of the label noise added to the targets
        (regression heads): :math:`y_i + \delta \xi_i`, :math:`\xi_i \sim \mathcal N(0, 1)`.
    record_steps, records, grid
        The steps at which θ is recorded (default a ``grid`` grid of ``records`` steps).
    seed, seeds : int
        The root seed, and the number of seeds (default: one per data set, else 1).
    theta0 : array of shape (p,) or (S, p), optional
        Initial parameters (default ``model.init(seed, s)`` for seed s).
    bound : float, optional
        Divergence bound on :math:`\lVert\theta\rVert_1` (default
        :func:`dyntools.engine.guard.default_bound`).
    indices : int array, optional
        Replayed sample indices, (T·b,) shared or (P, T·b) per path.
    common_stream : bool
        Every run of a seed draws the same samples.
    stream_key : tuple of int
        Integers appended to the key of every path's stream (e.g. ``(i,)`` for cell i of a sweep).
    chunks : int
        The loop runs in this many pieces (progress, time budgets); the result does not depend on it.
    progress : bool
        Show a progress bar.
    workers : int, optional
        Threads that advance the paths (default numba's thread count); the result does not depend on it.
    plateau_every : int, optional
        Steps between two updates of a :class:`~dyntools.optim.schedules.ReduceLROnPlateau` (default one
        epoch).
    plateau_metric : callable, optional
        ``plateau_metric(thetas)``: the metric that schedule steps on (default the mean mini-batch loss).
    kernel : {"numba", "numpy"}
        The compiled loop or its NumPy twin.
    fast : bool
        Allow the model's tuned loop.
    labels : list of str, optional
        Names of the runs (default the optimizer names).
    step_loss : bool
        Also return ``step_loss`` (G, S, T): the mini-batch loss of every step (the kernel's value at
        :math:`\theta_t`, before the update).
    check_gradient : bool
        A user's model (not one of :mod:`dyntools.models`) has its kernel run once before the loop on
        guarded buffers and its gradient compared with central finite differences at the initial θ
        (:mod:`dyntools.dynamics.kernel_check`, relative tolerance 1e-4); False skips the gradient part
        (the workspace guard always runs).
    keep_lrs : bool
        Return ``lrs`` (G, 1 or T), every step's rate; False returns ``lr_rec`` (G, K) instead, the rate at
        each recorded step, and the run's memory does not grow with ``steps`` (the loop takes the rates
        :data:`~dyntools.dynamics.rates.WINDOW` steps at a time either way).

    Returns
    -------
    RunResult
        Of kind ``"train"``; arrays indexed ``[run, seed, …]``: ``theta`` (recorded parameters, K × p per
        path), ``train_loss`` (and ``test_loss`` when the data has a test set) at the recordings,
        ``diverged_at``, ``final_theta``; ``steps`` (K,), ``lrs`` (G, 1 or T) or ``lr_rec`` (G, K).
    """

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
        chain_step.check_fused_matches_chain(o)
    by_chain = not all(o.fused for o in opts)   # an optimizer without a fused kernel: every run by its chain
    reactive = [g for g, s in enumerate(scheds) if isinstance(s, ReduceLROnPlateau)]
    precond_of = np.array([o.precond for o in opts], dtype=np.int64)
    hps = np.ascontiguousarray(np.stack([o.hparams if o.fused else np.zeros(O.N_HPARAMS) for o in opts]),
                               dtype=np.float64)
    labels = [o.name for o in opts] if labels is None else [str(x) for x in labels]
    if len(labels) != G:
        raise ValueError(f"Invalid labels: {len(labels)} names for {G} runs")

    if record_steps is None:
        record_steps = record.make_grid(grid, steps, records)
    record_steps = record.validate_steps(record_steps, steps)
    K = record_steps.size
    rates = LearningRates(opts, scheds, steps, reactive, record_steps, keep=bool(keep_lrs))
    p_dim = model.n_params
    P = G * S
    if theta0 is None:
        inits = [np.asarray(model.init(seed, s)) for s in range(S)]
        if inits[0].shape != (p_dim,) or not np.all(np.isfinite(inits[0])):
            raise ValueError(f"Invalid model {model.name!r}: init(seed, 0) returned shape {inits[0].shape}"
                             f"{'' if inits[0].shape != (p_dim,) else ' with non-finite entries'} (expected "
                             f"n_params = {p_dim} finite numbers)")
        inits = np.stack(inits)
    else:
        inits = validation.finite_array("theta0", theta0)
        if inits.shape not in ((p_dim,), (S, p_dim)):
            raise ValueError(f"Invalid theta0: expected shape ({p_dim},) or ({S}, {p_dim}), got {inits.shape}")
        inits = np.broadcast_to(inits, (S, p_dim))
    fdt = np.dtype(model.dtype)          # the precision the model trains in
    thetas = np.ascontiguousarray(np.tile(inits, (G, 1)), dtype=fdt)
    bound = (guard.default_bound(np.abs(inits).sum(axis=1).max()) if bound is None
             else validation.positive("bound", bound))
    if sampler_code == samplers.REPLAY:
        if indices is None:
            raise ValueError("Invalid indices: the replay sampler needs the index sequence")
        replay = samplers.check_replay(indices, steps=steps, batch=b, paths=P, n=n)
    elif indices is not None:
        raise ValueError("Invalid indices: given indices need sampler='replay'")
    else:
        replay = samplers.NO_REPLAY

    key = streams.key(model.sampling_stream)
    if common_stream:
        states = np.tile(streams.path_states(seed, S, key, *stream_key), (G, 1))
    else:
        states = np.concatenate([streams.path_states(seed, S, key, g, *stream_key) for g in range(G)])
    Xs = np.ascontiguousarray(np.stack([np.asarray(ds.X, dtype=np.float64) for ds in sets]), dtype=fdt)
    y_dtype = fdt if model.head == "regression" else np.int64
    ys = np.ascontiguousarray(np.stack([np.asarray(ds.y).astype(y_dtype) for ds in sets]))
    data_of = np.tile(np.arange(S, dtype=np.int64) if len(sets) == S else np.zeros(S, dtype=np.int64), G)
    run_of = np.repeat(np.arange(G, dtype=np.int64), S)
    opt_states = np.ascontiguousarray(np.stack([optim_kernels.init_state(opts[g], p_dim) for g in run_of]),
                                      dtype=fdt)
    perms = np.tile(np.arange(n, dtype=np.int64), (P, 1))
    pos = np.full(P, n, dtype=np.int64)
    diverged_at = np.full(P, guard.NEVER, dtype=np.int64)
    theta_rec = np.full((P, K, p_dim), np.nan)
    iargs, fargs = model.kernel_args()
    ws_size = int(model.workspace_size(b))
    step_losses = np.full((P, steps if step_loss or reactive else 0), np.nan)
    args = (thetas, opt_states, Xs, ys, data_of, iargs, fargs, ws_size, sampler_code, b, bool(drop_last), replay,
            states, perms, pos, label_noise, precond_of, hps, rates.window(0, min(steps, tuned_probe.PROBE_STEPS)),
            run_of, step_losses)

    setting = {"sampler": sampler, "batch": b, "label_noise": label_noise, "optimizers": opts, "kernel": kernel,
               "step_loss": step_losses.shape[1] > 0, "seed": seed, "common_stream": bool(common_stream),
               "stream_key": tuple(int(k) for k in stream_key)}
    if model.regularized and (by_chain or not fast):
        raise ValueError("Invalid " + ("optimizer: dropout and batch norm train with a fused optimizer step only"
                                       if by_chain else "fast: dropout and batch norm train through their own "
                                       "loop (dyntools.dynamics.fast.mlp_regularized); leave fast=True"))
    tuned = tuned_loops.select(model, setting) if fast and not by_chain else None
    if kernel == "numba" and not hasattr(model.loss_grad, "py_func"):
        raise ValueError(f"Invalid model {model.name!r}: kernel='numba' needs model.loss_grad compiled with "
                         f"numba.njit (got {type(model.loss_grad).__name__}); njit it, or pass kernel='numpy' "
                         "to run loss_grad_np")
    kernel_fn = model.loss_grad if kernel == "numba" else model.loss_grad_np
    builtin = kernel_check.is_builtin(model)
    if not builtin:
        kernel_check.check_kernel(model, kernel_fn, thetas[0], Xs[0], ys[0], b, iargs, fargs, ws_size,
                                  gradient=bool(check_gradient))
    elif kernel == "numba" and model.generated_kernel:       # generated from a user's expression
        kernel_check.check_generated(model, thetas[0], Xs[0], ys[0], b, iargs, fargs, ws_size)
    cached = loops.for_kernel(model.loss_grad)
    if cached is None and kernel == "numba" and model.generated_kernel:
        cached = path_loop.by_pointer(model.loss_grad, args)      # one compiled loop for every such kernel
    elif cached is None and kernel == "numba":     # a user's kernel, or a library model without an entry in loops
        cached = loops.user_loop(model.loss_grad)
    timings: dict[str, float] = {}

    steppers = [chain_step.ChainStepper(opts[run_of[p]], thetas[p]) for p in range(P)] if by_chain else None

    def generic(arrays, t0, t1, rec, diverged, last=False):
        """The generic loop (compiled, or the NumPy twin) on ``arrays``."""
        if kernel == "numba" and cached is not None:
            drive.on_threads(cached, P, workers, arrays, t0, t1, record_steps, rec, float(bound), diverged, last)
        elif kernel == "numba":
            drive.on_threads(advance_paths, P, workers, model.loss_grad, arrays, t0, t1, record_steps, rec,
                             float(bound), diverged, last)
        else:
            for p in range(P):
                advance_path_numpy(model.loss_grad_np, p, *arrays, t0, t1, record_steps, rec, bound, diverged, last)

    selector = tuned_loops.user_selector(model) if tuned is not None else None
    if selector is not None:                # a user's tuned loop: run beside the generic loop before it trains
        tuned_probe.check_tuned_loop(type(model).__name__, tuned, generic, args, record_steps, theta_rec.shape,
                                     float(bound), steps, workers=workers,
                                     key=tuned_probe.setting_key(type(model), selector, setting))

    def advance_window(t0, t1, last):
        window = (*args[:18], rates.window(t0, t1), *args[19:])         # the rates of steps t0 … t1 − 1
        if by_chain:                       # the optimizers' own chains, stepped from Python
            for p in range(P):
                advance_path_numpy(kernel_fn, p, *window, t0, t1, record_steps, theta_rec, bound, diverged_at,
                                   last, stepper=steppers[p])
        elif tuned is not None:
            tuned(*window, t0, t1, record_steps, theta_rec, bound, diverged_at, last, workers=workers)
        else:
            generic(window, t0, t1, theta_rec, diverged_at, last)

    def advance(t0, t1, last):             # at most WINDOW steps per call: memory independent of steps
        for a in range(t0, t1, WINDOW):
            advance_window(a, min(a + WINDOW, t1), last and a + WINDOW >= t1)

    bounds = None
    if reactive:
        every = validation.count("plateau_every", plateau_every) if plateau_every is not None else max(1, n // b)
        bounds = np.append(np.arange(0, steps, every), steps)
        for g in reactive:
            scheds[g].reset()

    def advance_and_react(t0, t1, last):
        advance(t0, t1, last)
        for g in reactive:                 # the multiplier of the next piece, as lr · (m_t · factor)
            metric = (np.mean(step_losses[run_of == g, t0:t1]) if plateau_metric is None
                      else plateau_metric(thetas[run_of == g]))
            rates.react(g, scheds[g].step(float(metric)))

    drive.chunked(advance_and_react if reactive else advance, steps, chunks=chunks, bounds=bounds, work_per_step=P,
                  desc=f"{model.name} ({sampler})", unit="path-step", progress=progress, timings=timings)

    def shape(a):
        return a.reshape((G, S) + a.shape[1:])

    arrays = {"steps": record_steps, **({"lrs": rates.whole()} if keep_lrs else {"lr_rec": rates.at()}),
              "theta": shape(theta_rec),
              "final_theta": shape(thetas.astype(np.float64, copy=False)),
              "diverged_at": shape(diverged_at)}
    if step_loss:
        arrays["step_loss"] = shape(step_losses)
    with timed(timings, "metrics"):
        running_rec = getattr(tuned, "running_rec", None) if model.batch_norm else None
        arrays["train_loss"] = shape(_recorded_loss(model, theta_rec, Xs, ys, data_of, running_rec))
        if all(getattr(ds, "X_test", None) is not None for ds in sets):
            Xt = np.stack([np.asarray(ds.X_test, dtype=np.float64) for ds in sets])
            yt = np.stack([np.asarray(ds.y_test).astype(y_dtype) for ds in sets])
            arrays["test_loss"] = shape(_recorded_loss(model, theta_rec, Xt, yt, data_of, running_rec))
    last = arrays["train_loss"][..., -1].reshape(-1)
    first = int(np.argmin(np.where(diverged_at == guard.NEVER, np.iinfo(np.int64).max, diverged_at)))
    detail = (guard.cause(thetas[first], bound, where=" (the ‖θ‖₁ guard)")
              if diverged_at[first] != guard.NEVER else "")
    status, message = drive.classify(diverged_at, np.where(np.isfinite(last), last, np.inf), what="paths",
                                     detail=detail)
    config = {"model": model.config(), "runs": [{"label": lab, "optimizer": o.name, "lr": o.lr,
                                                 "schedule": repr(s), "optimizer_step": chain_step.describe(o)}
                                                for lab, o, s in zip(labels, opts, scheds)],
              "steps": steps, "batch": b, "sampler": sampler, "drop_last": bool(drop_last),
              "label_noise": label_noise, "seeds": S, "bound": bound, "records": int(K),
              "common_stream": bool(common_stream), "replayed": indices is not None, "kernel": kernel,
              "path": "tuned" if tuned is not None else "generic",
              "optimizer_path": "chain" if by_chain else "fused"}
    for name, extra in getattr(tuned, "extras", {}).items():        # per-path arrays of a tuned loop
        arrays[name] = shape(extra)
    summary = {"paths": P, **guard.summary(diverged_at)}
    return RunResult("train", config, arrays, status, message, seed=seed, summary=summary, timings=timings)


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


def _recorded_loss(model, theta_rec, Xs, ys, data_of, running_rec=None) -> np.ndarray:
    """:meth:`Model.recorded_loss`; the running batch-norm statistics go only to models that record them (the
    models that override the hook to evaluate every recording at once have no batch norm)."""
    if running_rec is None:
        return model.recorded_loss(theta_rec, Xs, ys, data_of)
    return model.recorded_loss(theta_rec, Xs, ys, data_of, running_rec)
