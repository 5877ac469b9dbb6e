"""The first-use probe of a tuned loop a user registered (``dyntools.dynamics.fast.register``).

A tuned loop is compiled code that replaces the generic loop of :mod:`dyntools.dynamics.path_loop` for one
model class and setting; the built-in ones are tested equal to it by the suite, a user's is not. So before
the first chunk of a run, :func:`check_tuned_loop` runs both from the same state for ``k = min(steps,``
:data:`PROBE_STEPS` ``)`` steps — private copies of θ, the optimizer states, the sampler's streams,
permutations and positions, so the same indices and label noise are drawn; the tuned loop itself deep-copied,
so that counters it keeps across chunks do not see the probe — and compares what they leave:

    θ (P × p), the optimizer states, the recorded θ, the per-step losses, the divergence steps,
    and the sampler's state (streams, permutations, positions),

entry by entry, ``|tuned − generic| ≤ atol + rtol·|generic|`` (``rtol = 1e-9`` in float64, ``1e-4`` in float32:
a loop may re-associate sums; ``atol = rtol·1e-3·max|generic|``; NaN agrees with NaN only). The first
differing entry, in that order, is one :class:`~dyntools.validation.KernelMismatch` naming the loop, the
model class, the array and the coordinate with both values. The probe runs once per model class, selector
and setting (sampler, batch, label noise, optimizers, kernel, per-step losses) in a process.
"""

from __future__ import annotations

import copy

import numpy as np

from dyntools.dynamics.path_loop import WRITTEN, LoopArrays
from dyntools.engine import guard
from dyntools.validation import KernelMismatch, first_difference

#: Steps the tuned loop and the generic loop run side by side before a run (fewer when the run is shorter).
PROBE_STEPS = 5
#: Keys of the (model class, selector, setting) combinations probed in this process.
_probed: set = set()


def setting_key(model_type: type, selector, setting: dict) -> tuple:
    """What makes two runs the same case for the probe (module docstring)."""
    from dyntools.optim.compiled import signature

    opts = tuple((o.name, float(o.lr), signature(o)) for o in setting["optimizers"])
    return (model_type, selector, setting["sampler"], int(setting["batch"]), float(setting["label_noise"]), opts,
            setting["kernel"], bool(setting["step_loss"]))


def _private(loop):
    """A deep copy of a loop that keeps state across chunks (counters, extras: the probe must not leave its steps
    in them); a plain function is its own copy. A loop that cannot be copied is probed itself."""
    try:
        return copy.deepcopy(loop)
    except Exception:  # noqa: BLE001 - locks, open files, ...: nothing to keep private then
        return loop


def _copies(arrays: LoopArrays) -> LoopArrays:
    """``arrays`` with private copies of the fields a loop writes (:data:`~dyntools.dynamics.path_loop.WRITTEN`)."""
    return arrays._replace(**{f: getattr(arrays, f).copy() for f in WRITTEN})


def check_tuned_loop(name: str, tuned, generic, arrays: LoopArrays, step, record_steps, theta_rec_shape,
                     bound: float, steps: int, *, workers=None, key=None) -> None:
    """Run ``tuned(arrays, step, 0, k, record_steps, theta_rec, bound, diverged_at, False, workers=workers)`` and
    ``generic(arrays, 0, k, theta_rec, diverged_at)`` on copies and raise :class:`KernelMismatch` at the first
    entry where they differ (module docstring). ``name`` names the model class; ``key``: probe once per key."""
    if key is not None and key in _probed:
        return
    k = min(int(steps), PROBE_STEPS)
    P = arrays.thetas.shape[0]
    left = {}
    for label in ("tuned", "generic"):
        a = _copies(arrays)
        rec = np.full(theta_rec_shape, np.nan)
        diverged = np.full(P, guard.NEVER, dtype=np.int64)
        if label == "tuned":
            _private(tuned)(a, step, 0, k, record_steps, rec, bound, diverged, False, workers=workers)
        else:
            generic(a, 0, k, rec, diverged)
        left[label] = [(WRITTEN["thetas"], a.thetas), (WRITTEN["opt_states"], a.opt_states), ("recorded theta", rec),
                       (WRITTEN["step_losses"], a.step_losses), ("diverged_at", diverged)] + [
                           (WRITTEN[f], getattr(a, f)) for f in ("states", "perms", "pos")]
    rtol = 1e-4 if arrays.thetas.dtype == np.float32 else 1e-9
    for (what, fast), (_, slow) in zip(left["tuned"], left["generic"]):
        slow64 = np.asarray(slow, dtype=np.float64)
        finite = slow64[np.isfinite(slow64)]
        atol = rtol * 1e-3 * max(1.0, float(np.max(np.abs(finite))) if finite.size else 1.0)
        diff = first_difference(slow64, np.asarray(fast, dtype=np.float64), rtol=rtol, atol=atol)
        if diff is not None:
            where, r_val, c_val = diff
            loop = getattr(tuned, "__qualname__", type(tuned).__name__)
            raise KernelMismatch(
                f"Invalid tuned loop {loop} registered for {name}: it does not compute what the generic loop "
                f"computes — after {k} steps from the same θ and the same indices, {what}[{where}] is {c_val!r} "
                f"by the tuned loop but {r_val!r} by the generic loop; fix the loop, or have its selector return "
                "None for this setting")
    if key is not None:
        _probed.add(key)
