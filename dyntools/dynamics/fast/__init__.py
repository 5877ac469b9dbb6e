"""Tuned training loops, registered by model type and chosen by the trainer for the setting of a run.

:func:`dyntools.train` asks :func:`select` for a tuned loop before it falls back to the generic loop of
:mod:`dyntools.dynamics.path_loop`. The table :data:`TUNED` maps a model class to a *selector*
``selector(model, setting) -> loop or None``: the selector looks at the run's setting (sampler, batch,
label noise, optimizers, kernel, per-step losses) and returns the tuned loop that computes that run, or
None when it does not apply. The first class of the model's MRO with an entry decides.

==========================================  =================================================================
model                                       tuned loop
==========================================  =================================================================
:class:`~dyntools.models.diag_net.DiagNet`  :mod:`.diag_net`: the paper's batch-1 SGD, one fused pass per step
:class:`~dyntools.models.mlp.MLP`           :mod:`.mlp`: per-example regression (samplers full, distinct,
                                            with-replacement; any batch); float32 cross-entropy
                                            with subnormals flushed; float64 cross-entropy with the kernel
                                            through a pointer; none with dropout or batch norm
:class:`~dyntools.models.quadratic_toy.ToyModel`  :mod:`.quadratic_toy`: the lock-step ensemble
==========================================  =================================================================

State that is not a parameter — dropout masks, batch-norm running statistics, the toy's counters — is no reason
for a loop: it is the model's step hooks (:class:`dyntools.models.base.Hooks`), called by the generic loop. Why
each loop stays, one line each:

* diag_net: fuses the update with the next residual in four fixed lanes — re-associated sums (stated tolerance).
* mlp regression: the SAME bits as the generic loop (tested bitwise); kept for speed — no kernel call, no
  batch buffers, 1.1–2.2× the generic loop's steps per second — and for the first run: one loop compiled for every
  optimizer (the step by pointer), half the processor time of the generic loop named for the kernel
  (docs/guide/tuned-loops.md). A run of fewer than 2000 path-steps takes the pointer loop instead
  (:data:`SHORT_RUNS_BY_POINTER`): shared by every model, it is often compiled already.
* mlp float32 cross-entropy: the generic loop with subnormals flushed — other bits exactly where one occurs.
* mlp float64 cross-entropy: the generic loop, kernel and step through function pointers — the same bits; kept so
  that the first run does not optimize the matrix products' machine code a second time inside the loop.
* quadratic_toy: the closed-form step θ + ((ηθ)x)(y − xθ²) instead of kernel + optimizer step — re-associated
  products (1e-12); it calls the toy's counter arithmetic (its hook's) in lock step.

Every loop takes the run's typed state
(:class:`~dyntools.dynamics.path_loop.LoopArrays`) and the runs' optimizer step; a loop that tests "plain SGD"
reads ``plain_sgd`` (per run, from :mod:`dyntools.optim.compiled`), never an optimizer's codes.

Each tuned loop is tested equal to the generic loop (bitwise where its arithmetic is the kernel's, at a
stated tolerance where it re-associates). A model knows nothing of its tuned loop: the models sit a floor
below this package (``tests/test_layering.py``). A user's own model gets one with
``register(MyModel, selector)``; such a loop is run side by side with the generic loop for a few steps
before its first run (:mod:`.probe`), and a difference is an error.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from dyntools.dynamics.fast import diag_net, quadratic_toy
from dyntools.models.diag_net import DiagNet
from dyntools.models.quadratic_toy import ToyModel

#: model class → ``selector(model, setting)`` returning the tuned loop for the setting, or None.
TUNED: dict[type, Callable] = {DiagNet: diag_net.select, ToyModel: quadratic_toy.select}
#: the library's own entries (tested equal to the generic loop by the suite; a user's are probed at first use)
BUILT_IN: dict[type, Callable] = dict(TUNED)
#: the tuned loops that call the optimizer step through a function pointer (declared, never probed): the trainer
#: hands them the run set's own step structures (:attr:`~dyntools.optim.compiled.CompiledRuns.own_step`)
STEP_BY_POINTER: set = set()
#: tuned loop → the path-steps (paths × steps) below which a run takes the pointer loop instead, which gives the
#: loop's bits (:func:`dyntools.dynamics.path_loop.by_pointer`)
SHORT_RUNS_BY_POINTER: dict = {}
#: built-in entries added once their model's module is imported (model module → (class name, tuned-loop module)):
#: the MLP's module imports the low-level blocks, whose probe compiles — a run of another model never pays for it
ON_IMPORT = {"dyntools.models.mlp": ("MLP", "dyntools.dynamics.fast.mlp")}


def _add_imported() -> None:
    """Add the :data:`ON_IMPORT` entries of the imported model modules (a model of theirs may exist), without
    replacing a user's entry for the same class."""
    for module, (name, loops) in ON_IMPORT.items():
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None:
            tuned = importlib.import_module(loops)
            BUILT_IN.setdefault(cls, tuned.select)
            TUNED.setdefault(cls, BUILT_IN[cls])
            STEP_BY_POINTER.update(tuned.STEP_BY_POINTER)
            SHORT_RUNS_BY_POINTER.update(getattr(tuned, "SHORT_RUNS_BY_POINTER", {}))


def register(model_type: type, selector: Callable, *, step_by_pointer=()) -> None:
    """Offer a tuned loop for ``model_type`` (and its subclasses): ``selector(model, setting)`` returns a
    callable with the calling convention of :func:`dyntools.dynamics.fast.diag_net.advance` —
    ``loop(arrays, step, t0, t1, record_steps, theta_rec, bound, diverged_at, record_final, workers=None)``, with
    ``arrays`` a :class:`~dyntools.dynamics.path_loop.LoopArrays` and ``step`` the runs' optimizer step
    (:mod:`dyntools.optim.compiled`; its NumPy twin with ``kernel="numpy"``) — or None. The loops the selector
    returns that call the step through a function pointer are listed in ``step_by_pointer``: they are then handed
    the run set's own structures only (:attr:`~dyntools.optim.compiled.CompiledRuns.own_step`, the same bits)."""
    if not isinstance(model_type, type):
        raise TypeError(f"Invalid model_type: {model_type!r} (expected a class)")
    if not callable(selector):
        raise TypeError(f"Invalid selector: {selector!r} (expected a callable (model, setting) -> loop or None)")
    _add_imported()
    loops = tuple(step_by_pointer)
    if not all(callable(loop) for loop in loops):
        raise TypeError(f"Invalid step_by_pointer: {step_by_pointer!r} (expected the selector's loops)")
    TUNED[model_type] = selector
    STEP_BY_POINTER.update(loops)


def takes_step_by_pointer(loop) -> bool:
    """Whether the tuned ``loop`` was declared to call the optimizer step through a function pointer."""
    _add_imported()
    return loop in STEP_BY_POINTER


def select(model, setting: dict):
    """The tuned loop registered for ``type(model)`` (or its nearest base class) that applies to
    ``setting``, or None (the trainer then runs the generic loop)."""
    _add_imported()
    for cls in type(model).__mro__:
        if cls in TUNED:
            return TUNED[cls](model, setting)
    return None


def short_run_limit(loop) -> int:
    """The path-steps below which a run takes the pointer loop instead of the tuned ``loop`` (0: never): the same
    bits, and the tuned loop is faster per step by less than its compile costs (:data:`SHORT_RUNS_BY_POINTER`)."""
    _add_imported()
    return SHORT_RUNS_BY_POINTER.get(loop, 0)


def user_selector(model):
    """The selector deciding for ``type(model)`` when a user registered it (not a built-in entry), else None."""
    _add_imported()
    for cls in type(model).__mro__:
        if cls in TUNED:
            return None if BUILT_IN.get(cls) is TUNED[cls] else TUNED[cls]
    return None
