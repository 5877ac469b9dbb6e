"""``dyntools.train``: any model × any sampler × any optimizer × any schedule × the recorder → a result.

A training run is ``G`` *runs* (optimizer and schedule pairs: the compared settings) times ``S``
*seeds* (initial point, sample stream and, optionally, data set); each (run, seed) pair is a *path*
``p = g·S + s``, advanced independently. Step ``t`` of a path (``t = 0 … T−1``) is

    I_t        = the sampler's examples for step t                         (dyntools.engine.samplers)
    L, g_t     = model.loss_grad(θ_t; X[I_t], y[I_t] + δ ξ_t)               (ξ ~ N(0, 1) fresh; δ = label noise)
    θ_{t+1}    = optimizer step of g_t at learning rate lr_t = lr · m_t    (dyntools.optim.compiled)

The optimizer step is the one compiled step of the run set, generated from the optimizers' chains
(:func:`dyntools.optim.compiled.compile_runs`: each transform's element update fused into one pass over the
parameters, a user's ``compiled()`` kernel between passes) — or, when some transform has only its readable
``update``, every run's own chain stepped from Python (:class:`dyntools.optim.chain_step.ChainStepper`). The
result's config says which (``optimizer_path`` "fused" or "chain", and per run ``optimizer_step``).

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
``nogil`` loop over paths that runs on a thread pool: one generated per model kernel, cached on disk, by
:mod:`dyntools.dynamics.loops`) and :func:`~dyntools.dynamics.path_loop.advance_path_numpy` its twin;
:func:`train` validates and builds the run (:mod:`dyntools.dynamics.run_plan`: the checks, the buffers, the
tuned loop registered for the model and the setting when one applies, :func:`dyntools.dynamics.fast.select`),
then :func:`dispatch` drives the chunks and :func:`collect` returns a :class:`RunResult`.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation
from dyntools.dynamics import fast as tuned_loops
from dyntools.dynamics import run_plan
from dyntools.dynamics.fast import probe as tuned_probe
from dyntools.dynamics.path_loop import advance_path_numpy, advance_paths
from dyntools.dynamics.rates import WINDOW
from dyntools.engine import drive, guard
from dyntools.engine.result import RunResult, timed
from dyntools.optim import chain_step
from dyntools.optim.schedules import Schedule

# ------------------------------------------------------------------------------------------ runner

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

    problem = run_plan.check_problem(model, data, steps=steps, kernel=kernel, sampler=sampler,
                                     label_noise=label_noise, seeds=seeds, batch=batch)
    runs = run_plan.check_runs(optimizer, schedule, labels)
    run = run_plan.build_run(problem, runs, record_steps=record_steps, records=records, grid=grid, seed=seed,
                             theta0=theta0, bound=bound, indices=indices, common_stream=common_stream,
                             stream_key=stream_key, drop_last=drop_last, step_loss=step_loss, keep_lrs=keep_lrs,
                             fast=fast, check_gradient=check_gradient)
    timings: dict[str, float] = {}
    dispatch(run, workers=workers, chunks=chunks, progress=progress, plateau_every=plateau_every,
             plateau_metric=plateau_metric, timings=timings)
    return collect(run, step_loss=step_loss, keep_lrs=keep_lrs, replayed=indices is not None,
                   drop_last=drop_last, common_stream=common_stream, seed=seed, timings=timings)


def dispatch(run: run_plan.Run, *, workers, chunks: int, progress: bool, plateau_every, plateau_metric,
             timings: dict) -> None:
    """Advance every path of ``run`` through its ``T`` steps in place: by the optimizers' chains (stepped from
    Python), the tuned loop, or the generic loop (compiled on a thread pool, or its NumPy twin), at most
    :data:`~dyntools.dynamics.rates.WINDOW` steps per call, in ``chunks`` pieces; a reactive schedule is
    stepped at every ``plateau_every`` steps on the piece's metric. A user's tuned loop is first checked
    against the generic loop (:func:`dyntools.dynamics.fast.probe.check_tuned_loop`)."""
    pb, rs = run.problem, run.runs
    model, kernel, steps, P, n, b = pb.model, pb.kernel, pb.steps, run.P, pb.n, pb.b
    arrays, record_steps, bound, tuned, cached = run.arrays, run.record_steps, run.bound, run.tuned, run.cached
    step, step_np = (None, None) if rs.by_chain else (run.compiled.step, run.compiled.step_np)
    loop_step = step if kernel == "numba" else step_np       # what a tuned loop is handed
    if step is not None and kernel == "numba" and tuned_loops.takes_step_by_pointer(tuned):
        loop_step = run.compiled.own_step    # a loop taking the step by pointer: the run set's structures only
    theta_rec, diverged_at, rates, run_of, hooks = run.theta_rec, run.diverged_at, run.rates, run.run_of, run.hooks

    def generic(a, t0, t1, rec, diverged, last=False):
        """The generic loop (compiled, or the NumPy twin) on the :class:`~dyntools.dynamics.path_loop.LoopArrays`
        ``a``."""
        if kernel == "numba" and cached is not None:
            drive.on_threads(cached, P, workers, a, t0, t1, record_steps, rec, float(bound), diverged, last)
        elif kernel == "numba":
            drive.on_threads(advance_paths, P, workers, model.loss_grad, step, *hooks.compiled, a, t0, t1,
                             record_steps, rec, float(bound), diverged, last)
        else:
            for p in range(P):
                advance_path_numpy(model.loss_grad_np, step_np, p, a, t0, t1, record_steps, rec, bound, diverged,
                                   last, hooks_np=hooks.numpy)

    selector = tuned_loops.user_selector(model) if tuned is not None else None
    if selector is not None:                # a user's tuned loop: run beside the generic loop before it trains
        tuned_probe.check_tuned_loop(type(model).__name__, tuned, generic, arrays, loop_step, record_steps,
                                     theta_rec.shape, float(bound), steps, workers=workers,
                                     key=tuned_probe.setting_key(type(model), selector, run.setting))

    def advance_window(t0, t1, last):
        window = arrays._replace(lrs=rates.window(t0, t1))             # the rates of steps t0 … t1 − 1
        if rs.by_chain:                    # the optimizers' own chains, stepped from Python
            for p in range(P):
                advance_path_numpy(run.kernel_fn, step_np, p, window, t0, t1, record_steps, theta_rec, bound,
                                   diverged_at, last, stepper=run.steppers[p], hooks_np=hooks.numpy)
        elif tuned is not None:
            tuned(window, loop_step, t0, t1, record_steps, theta_rec, bound, diverged_at, last, workers=workers)
        else:
            generic(window, t0, t1, theta_rec, diverged_at, last)

    def advance(t0, t1, last):             # at most WINDOW steps per call: memory independent of steps
        for a in range(t0, t1, WINDOW):
            advance_window(a, min(a + WINDOW, t1), last and a + WINDOW >= t1)

    bounds = None
    if rs.reactive:
        every = validation.count("plateau_every", plateau_every) if plateau_every is not None else max(1, n // b)
        bounds = np.append(np.arange(0, steps, every), steps)
        for g in rs.reactive:
            rs.scheds[g].reset()

    def advance_and_react(t0, t1, last):
        advance(t0, t1, last)
        for g in rs.reactive:              # the multiplier of the next piece, as lr · (m_t · factor)
            metric = (np.mean(run.step_losses[run_of == g, t0:t1]) if plateau_metric is None
                      else plateau_metric(run.thetas[run_of == g]))
            rates.react(g, rs.scheds[g].step(float(metric)))

    drive.chunked(advance_and_react if rs.reactive else advance, steps, chunks=chunks, bounds=bounds,
                  work_per_step=P, desc=f"{model.name} ({pb.sampler})", unit="path-step", progress=progress,
                  timings=timings)


def collect(run: run_plan.Run, *, step_loss: bool, keep_lrs: bool, replayed: bool, drop_last: bool,
            common_stream: bool, seed: int, timings: dict) -> RunResult:
    """The :class:`RunResult` of an advanced ``run``: arrays indexed ``[run, seed, …]``, the recorded losses,
    the status (the first diverged path, :func:`dyntools.engine.drive.classify`) and the config."""
    pb, rs = run.problem, run.runs
    model, sets, G, S, tuned = pb.model, pb.sets, rs.G, pb.S, run.tuned
    theta_rec, thetas, diverged_at, bound = run.theta_rec, run.thetas, run.diverged_at, run.bound

    def shape(a):
        return a.reshape((G, S) + a.shape[1:])

    arrays = {"steps": run.record_steps,
              **({"lrs": run.rates.whole()} if keep_lrs else {"lr_rec": run.rates.at()}),
              "theta": shape(theta_rec),
              "final_theta": shape(thetas.astype(np.float64, copy=False)),
              "diverged_at": shape(diverged_at)}
    if step_loss:
        arrays["step_loss"] = shape(run.step_losses)
    hooked = model.hook_results(run.arrays.hook_state, run.arrays.hook_rec)    # per-path arrays of the hooks
    with timed(timings, "metrics"):
        running_rec = hooked.get("bn_running_rec") if model.batch_norm else None
        arrays["train_loss"] = shape(_recorded_loss(model, theta_rec, run.Xs, run.ys, run.data_of, running_rec))
        if all(getattr(ds, "X_test", None) is not None for ds in sets):
            Xt = np.stack([np.asarray(ds.X_test, dtype=np.float64) for ds in sets])
            yt = np.stack([np.asarray(ds.y_test).astype(run.y_dtype) for ds in sets])
            arrays["test_loss"] = shape(_recorded_loss(model, theta_rec, Xt, yt, run.data_of, running_rec))
    last = arrays["train_loss"][..., -1].reshape(-1)
    first = int(np.argmin(np.where(diverged_at == guard.NEVER, np.iinfo(np.int64).max, diverged_at)))
    detail = (guard.cause(thetas[first], bound, where=" (the ‖θ‖₁ guard)")
              if diverged_at[first] != guard.NEVER else "")
    status, message = drive.classify(diverged_at, np.where(np.isfinite(last), last, np.inf), what="paths",
                                     detail=detail)
    config = {"model": model.config(), "runs": [{"label": lab, "optimizer": o.name, "lr": o.lr,
                                                 "schedule": repr(s),
                                                 "optimizer_step": chain_step.describe(o, rs.by_chain)}
                                                for lab, o, s in zip(rs.labels, rs.opts, rs.scheds)],
              "steps": pb.steps, "batch": pb.b, "sampler": pb.sampler, "drop_last": bool(drop_last),
              "label_noise": pb.label_noise, "seeds": S, "bound": bound, "records": int(run.record_steps.size),
              "common_stream": bool(common_stream), "replayed": replayed, "kernel": pb.kernel,
              "path": "tuned" if tuned is not None else "generic",
              "optimizer_path": "chain" if rs.by_chain else "fused"}
    for name, extra in hooked.items():                                 # the hooks' per-path arrays
        arrays[name] = shape(extra)
    summary = {"paths": run.P, **guard.summary(diverged_at)}
    return RunResult("train", config, arrays, status, message, seed=seed, summary=summary, timings=timings)


def _recorded_loss(model, theta_rec, Xs, ys, data_of, running_rec=None) -> np.ndarray:
    """:meth:`Model.recorded_loss`; the running batch-norm statistics go only to models that record them (the
    models that override the hook to evaluate every recording at once have no batch norm)."""
    if running_rec is None:
        return model.recorded_loss(theta_rec, Xs, ys, data_of)
    return model.recorded_loss(theta_rec, Xs, ys, data_of, running_rec)
