"""Step-size schedules as one shared representation: a per-step multiplier array.

A schedule maps the step index ``t = 0, 1, …, T−1`` to a multiplier ``m_t`` of the base step
size, ``η_t = η · m_t``. :meth:`Schedule.multipliers` materializes ``m`` as a float64 array,
which is what every compiled kernel takes (an array of length 1 means "constant"): the kernels
stay free of Python objects and every schedule works with every simulator.
(T = 10⁶ steps costs 8 MB; a long run's loop asks :meth:`Schedule.window` for one piece at a time.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dyntools import validation


class Schedule:
    """Base class: subclasses implement :meth:`multipliers`."""

    def multipliers(self, steps: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def etas(self, eta: float, steps: int) -> np.ndarray:
        """``η · m_t`` for ``t < steps`` (length 1 for a constant schedule)."""
        return validation.positive("eta", eta) * self.multipliers(steps)

    def window(self, steps: int, t0: int, t1: int) -> np.ndarray:
        """``m_t`` for ``t0 ≤ t < t1`` of a ``steps``-step run (length 1 for a constant schedule), bitwise
        equal to ``multipliers(steps)[t0:t1]``: what a long run's loop takes one piece at a time. This
        default slices the whole array (memory O(steps) while it runs); the schedules whose multiplier is a
        closed form in ``t`` override it with O(t1 − t0)."""
        m = self.multipliers(steps)
        return m if m.size == 1 else np.array(m[t0:t1])


@dataclass(frozen=True)
class Constant(Schedule):
    """``m_t = 1``."""

    def multipliers(self, steps: int) -> np.ndarray:
        return np.ones(1)

    def window(self, steps: int, t0: int, t1: int) -> np.ndarray:
        return np.ones(1)


@dataclass(frozen=True)
class PiecewiseDecay(Schedule):
    """Divide the step by ``factors[j]`` once ``t ≥ fractions[j] · T`` (cumulative).

    The paper's large-step schedules ("decayed ×4.8/×3.4/×1.5 after 10/30/50% of iterations")
    are ``PiecewiseDecay((0.1, 0.3, 0.5), (4.8, 3.4, 1.5))``.

    Parameters
    ----------
    fractions : tuple of float
        Increasing fractions of the run, each in (0, 1), at which a decay starts (``round(f · T)``).
    factors : tuple of float
        One positive divisor per fraction; the decays accumulate.

    Raises
    ------
    ValueError
        When the lengths differ, a fraction is outside (0, 1), a factor is not positive or the
        fractions are not increasing.
    """

    fractions: tuple[float, ...]
    factors: tuple[float, ...]

    def __post_init__(self):
        if len(self.fractions) != len(self.factors):
            raise ValueError("Invalid fractions: need one decay factor per fraction")
        for f in self.fractions:
            validation.in_interval("decay fraction", f, 0.0, 1.0, closed_low=False, closed_high=False)
        for f in self.factors:
            validation.positive("decay factor", f)
        if list(self.fractions) != sorted(self.fractions):
            raise ValueError("Invalid fractions: must be increasing")

    def multipliers(self, steps: int) -> np.ndarray:
        return self.window(steps, 0, steps)

    def starts(self, steps: int) -> list[int]:
        """The first step of each decay."""
        return [int(round(frac * steps)) for frac in self.fractions]

    def window(self, steps: int, t0: int, t1: int) -> np.ndarray:
        steps = validation.count("steps", steps)
        m = np.ones(t1 - t0)
        for start, factor in zip(self.starts(steps), self.factors):      # the same divisions, in order
            m[max(start - t0, 0):] /= factor
        return m


@dataclass(frozen=True)
class DecayAfterStep(PiecewiseDecay):
    """The authors' convention of the same decays (their SGD/GD loops divide the step at the end of
    iteration ``i = ⌊f·T⌋``): step ``⌊f·T⌋`` still runs at the old value, ``m_t`` is divided by
    ``factors[j]`` for ``t > ⌊fractions[j] · T⌋``. For ``T = 10⁵ + 1`` and ``f = 0.1`` the new value
    starts at step 10001, where :class:`PiecewiseDecay` starts at ``round(10000.1) = 10000``.

    Parameters
    ----------
    fractions : tuple of float
        Increasing fractions of the run, each in (0, 1), after whose step ``⌊f · T⌋`` a decay starts.
    factors : tuple of float
        One positive divisor per fraction; the decays accumulate.
    """

    def starts(self, steps: int) -> list[int]:
        return [math.floor(frac * steps) + 1 for frac in self.fractions]


@dataclass(frozen=True)
class LinearWarmup(Schedule):
    """Multiply ``inner`` by ``min(1, (t + 1) / warmup_steps)``.

    Parameters
    ----------
    warmup_steps : int
        Length of the linear ramp (≥ 1); the multiplier reaches 1 at step ``warmup_steps − 1``.
    inner : Schedule, default Constant()
        The schedule the ramp multiplies.
    """

    warmup_steps: int
    inner: Schedule = Constant()

    def multipliers(self, steps: int) -> np.ndarray:
        warm = validation.count("warmup_steps", self.warmup_steps)
        ramp = np.minimum(1.0, (np.arange(steps) + 1.0) / warm)
        return ramp * np.broadcast_to(self.inner.multipliers(steps), (steps,))

    def window(self, steps: int, t0: int, t1: int) -> np.ndarray:
        warm = validation.count("warmup_steps", self.warmup_steps)
        ramp = np.minimum(1.0, (np.arange(t0, t1) + 1.0) / warm)
        return ramp * np.broadcast_to(self.inner.window(steps, t0, t1), (t1 - t0,))


# ------------------------------------------------------------ power warm-up (issue 7, seed 004)

@dataclass(frozen=True)
class PowerWarmup(Schedule):
    """Andriushchenko et al. (2023)'s warm-up: during the first ``fraction · T`` steps,

        m_t = 1 + (factor − 1) · (t / T)^exponent,        t = 0, 1, …, ⌊fraction · T⌋,

    measured against the whole schedule length ``T`` (not the warm-up length), then held at its
    last value; the result multiplies ``inner`` (e.g. a :class:`PiecewiseDecay` whose first decay
    is at ``fraction``). ``exponent = 1`` is their linear warm-up, ``0.5`` their power warm-up.

    Parameters
    ----------
    factor : float
        The multiplier's value at ``t = T`` of the ramp's formula (> 0); the ramp starts at 1.
    fraction : float
        The warm-up's share of the run, in (0, 1].
    exponent : float, default 1.0
        The ramp's power (> 0).
    inner : Schedule, default Constant()
        The schedule the ramp multiplies.
    """

    factor: float
    fraction: float
    exponent: float = 1.0
    inner: Schedule = Constant()

    def __post_init__(self):
        validation.positive("warmup factor", self.factor)
        validation.in_interval("warmup fraction", self.fraction, 0.0, 1.0, closed_low=False, closed_high=True)
        validation.positive("warmup exponent", self.exponent)

    def multipliers(self, steps: int) -> np.ndarray:
        steps = validation.count("steps", steps)
        t = np.minimum(np.arange(steps), int(self.fraction * steps)) / steps
        ramp = 1.0 + (self.factor - 1.0) * t**self.exponent
        return ramp * np.broadcast_to(self.inner.multipliers(steps), (steps,))

    def window(self, steps: int, t0: int, t1: int) -> np.ndarray:
        steps = validation.count("steps", steps)
        t = np.minimum(np.arange(t0, t1), int(self.fraction * steps)) / steps
        ramp = 1.0 + (self.factor - 1.0) * t**self.exponent
        return ramp * np.broadcast_to(self.inner.window(steps, t0, t1), (t1 - t0,))


# ---------------------------------------------------------------- the torch.optim.lr_scheduler family
#
# Multipliers are computed with PyTorch's own recurrences (``get_lr`` of each scheduler, base lr 1),
# so that ``lr · m_t`` equals the ``lr`` torch's scheduler sets before optimizer step ``t`` (the
# scheduler being stepped once after every optimizer step). Absolute learning rates of torch
# (``eta_min``, ``min_lr``) are given here as fractions of the base learning rate.

def _steps(steps) -> int:
    return validation.count("steps", steps)


def _decayed(steps, gamma: float, decays_at) -> np.ndarray:
    """torch's multiplicative recurrence ``m_0 = 1``, ``m_t = γ^{k_t} m_{t−1}`` (``k_t = decays_at(t)``, the
    decays falling at step ``t``): StepLR, MultiStepLR and ExponentialLR differ only in ``k_t``."""
    m = np.empty(_steps(steps))
    lr = 1.0
    for t in range(m.size):
        k = decays_at(t)
        if k:
            lr = lr * gamma ** k
        m[t] = lr
    return m


@dataclass(frozen=True)
class StepLR(Schedule):
    """``m_t = γ^{⌊t / step_size⌋}`` (torch ``StepLR``: multiply by γ every ``step_size`` steps).

    Parameters
    ----------
    step_size : int
        Steps between two decays (≥ 1).
    gamma : float, default 0.1
        The factor of each decay (> 0).
    """

    step_size: int
    gamma: float = 0.1

    def __post_init__(self):
        validation.count("step_size", self.step_size)
        validation.positive("gamma", self.gamma)

    def multipliers(self, steps: int) -> np.ndarray:
        return _decayed(steps, self.gamma, lambda t: int(t != 0 and t % self.step_size == 0))


@dataclass(frozen=True)
class MultiStepLR(Schedule):
    """``m_t = γ^{#{milestones ≤ t}}`` (torch ``MultiStepLR``; repeated milestones count twice).

    Parameters
    ----------
    milestones : tuple of int
        Non-decreasing steps at which the multiplier is multiplied by ``gamma``.
    gamma : float, default 0.1
        The factor of each decay (> 0).
    """

    milestones: tuple[int, ...]
    gamma: float = 0.1

    def __post_init__(self):
        for ms in self.milestones:
            validation.count("milestones", ms)
        if list(self.milestones) != sorted(self.milestones):
            raise ValueError(f"Invalid milestones: {list(self.milestones)} (must be increasing)")
        validation.positive("gamma", self.gamma)

    def multipliers(self, steps: int) -> np.ndarray:
        return _decayed(steps, self.gamma, self.milestones.count)


@dataclass(frozen=True)
class ExponentialLR(Schedule):
    """``m_t = γ^t`` (torch ``ExponentialLR``, computed by the same recurrence ``m_t = γ m_{t−1}``).

    Parameters
    ----------
    gamma : float
        The factor per step (> 0).
    """

    gamma: float

    def __post_init__(self):
        validation.positive("gamma", self.gamma)

    def multipliers(self, steps: int) -> np.ndarray:
        return _decayed(steps, self.gamma, lambda t: int(t != 0))


@dataclass(frozen=True)
class CosineAnnealingLR(Schedule):
    r"""Cosine annealing (Loshchilov & Hutter 2017, torch ``CosineAnnealingLR``):

    .. math:: m_t = m_{\min} + \tfrac12 (1 - m_{\min})\bigl(1 + \cos(\pi t / T_{\max})\bigr),

    evaluated with torch's recurrence ``m_t = (1+cos(πt/T))/(1+cos(π(t−1)/T)) (m_{t−1} − m_min) + m_min``
    (and its special case at ``t − 1 − T ≡ 0 mod 2T``); like torch it is periodic past ``T_max``.

    Parameters
    ----------
    T_max : int
        Half-period in steps (≥ 1): the multiplier reaches ``eta_min`` at ``t = T_max``.
    eta_min : float, default 0.0
        The floor :math:`m_{\min}` as a fraction of the base learning rate (≥ 0).

    Raises
    ------
    ValueError
        When ``T_max`` is not a positive integer or ``eta_min`` is negative.

    Examples
    --------
    >>> import dyntools as dt
    >>> dt.schedules.CosineAnnealingLR(T_max=4).multipliers(5).round(3).tolist()
    [1.0, 0.854, 0.5, 0.146, 0.0]
    """

    T_max: int
    eta_min: float = 0.0

    def __post_init__(self):
        validation.count("T_max", self.T_max)
        validation.non_negative("eta_min", self.eta_min)

    def multipliers(self, steps: int) -> np.ndarray:
        m = np.empty(_steps(steps))
        T, lo, lr = self.T_max, self.eta_min, 1.0
        for t in range(m.size):
            if t == 0:
                lr = 1.0
            elif (t - 1 - T) % (2 * T) == 0:
                lr = lr + (1.0 - lo) * (1 - math.cos(math.pi / T)) / 2
            else:
                lr = ((1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                      * (lr - lo) + lo)
            m[t] = lr
        return m


@dataclass(frozen=True)
class LinearLR(Schedule):
    """Linear ramp of the multiplier from ``start_factor`` to ``end_factor`` over ``total_iters``
    steps, then constant (torch ``LinearLR``; the usual linear warm-up is ``start_factor`` small,
    ``end_factor = 1``). Torch's recurrence
    ``m_t = m_{t−1} (1 + (e − s) / (T s + (t − 1)(e − s)))`` is used.

    Parameters
    ----------
    start_factor : float, default 1/3
        The multiplier at step 0, in (0, 1].
    end_factor : float, default 1.0
        The multiplier from step ``total_iters`` on, in [0, 1].
    total_iters : int, default 5
        Length of the ramp in steps (≥ 1).
    """

    start_factor: float = 1.0 / 3
    end_factor: float = 1.0
    total_iters: int = 5

    def __post_init__(self):
        if not 0 < validation.finite("start_factor", self.start_factor) <= 1:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or "
                             f"equal to 1, got start_factor={self.start_factor}")
        if not 0 <= validation.finite("end_factor", self.end_factor) <= 1:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1, "
                             f"got end_factor={self.end_factor}")
        validation.count("total_iters", self.total_iters)

    def multipliers(self, steps: int) -> np.ndarray:
        m = np.empty(_steps(steps))
        s, e, T = self.start_factor, self.end_factor, self.total_iters
        lr = 1.0
        for t in range(m.size):
            if t == 0:
                lr = lr * s
            elif t <= T:
                lr = lr * (1.0 + (e - s) / (T * s + (t - 1) * (e - s)))
            m[t] = lr
        return m


@dataclass(frozen=True)
class CosineAnnealingWarmRestarts(Schedule):
    r"""SGDR (Loshchilov & Hutter 2017, torch ``CosineAnnealingWarmRestarts``):

    .. math:: m_t = m_{\min} + \tfrac12 (1 - m_{\min})\bigl(1 + \cos(\pi T_{\mathrm{cur}} / T_i)\bigr),

    :math:`T_{\mathrm{cur}}` counting steps since the last restart, the period :math:`T_i` starting at
    ``T_0`` and multiplied by ``T_mult`` at each restart.

    Parameters
    ----------
    T_0 : int
        The first period in steps (≥ 1).
    T_mult : int, default 1
        The factor by which each period is longer than the previous one (≥ 1).
    eta_min : float, default 0.0
        The floor :math:`m_{\min}` as a fraction of the base learning rate (≥ 0).
    """

    T_0: int
    T_mult: int = 1
    eta_min: float = 0.0

    def __post_init__(self):
        if isinstance(self.T_0, bool) or not isinstance(self.T_0, (int, np.integer)) or self.T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {self.T_0}")
        if isinstance(self.T_mult, bool) or not isinstance(self.T_mult, (int, np.integer)) or self.T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {self.T_mult}")
        validation.non_negative("eta_min", self.eta_min)

    def multipliers(self, steps: int) -> np.ndarray:
        m = np.empty(_steps(steps))
        T_i, T_cur, lo = self.T_0, 0, self.eta_min
        for t in range(m.size):
            if t:
                T_cur += 1
                if T_cur >= T_i:
                    T_cur = T_cur % T_i
                    T_i = T_i * self.T_mult
            m[t] = lo + (1.0 - lo) * (1 + math.cos(math.pi * T_cur / T_i)) / 2
        return m


@dataclass(frozen=True)
class SequentialLR(Schedule):
    """Composition in time (torch ``SequentialLR``): schedule ``j`` runs from ``milestones[j−1]``
    on, restarted at its own step 0. Warm-up then cosine is
    ``SequentialLR((LinearLR(0.01, 1, W), CosineAnnealingLR(T − W)), (W,))``.

    Parameters
    ----------
    schedules : tuple of Schedule
        The schedules in the order they run (at least one; no :class:`ReduceLROnPlateau`).
    milestones : tuple of int
        Strictly increasing steps at which the next schedule starts; one fewer than ``schedules``.
    """

    schedules: tuple[Schedule, ...]
    milestones: tuple[int, ...]

    def __post_init__(self):
        if len(self.schedules) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        if len(self.milestones) != len(self.schedules) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more "
                             "than the number of milestone points, but got number of schedulers "
                             f"{len(self.schedules)} and the number of milestones to be equal to "
                             f"{len(self.milestones)}")
        for ms in self.milestones:
            validation.count("milestones", ms)
        if any(b <= a for a, b in zip(self.milestones, self.milestones[1:])):
            raise ValueError(f"Invalid milestones: {list(self.milestones)} (must be strictly increasing)")
        for s in self.schedules:
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError("SequentialLR does not support `ReduceLROnPlateau` scheduler")

    def multipliers(self, steps: int) -> np.ndarray:
        steps = _steps(steps)
        bounds = [0, *self.milestones, max(steps, self.milestones[-1] if self.milestones else 0)]
        m = np.empty(steps)
        for j, sched in enumerate(self.schedules):
            lo, hi = bounds[j], min(bounds[j + 1], steps) if j + 1 < len(self.schedules) else steps
            if hi <= lo:
                continue
            child = np.broadcast_to(sched.multipliers(hi - lo), (hi - lo,))
            m[lo:hi] = child
        return m


def warmup_cosine(warmup_steps: int, total_steps: int, *, start_factor: float = 0.01,
                  eta_min: float = 0.0) -> SequentialLR:
    """Linear warm-up over ``warmup_steps`` then cosine annealing to ``eta_min`` at ``total_steps``.

    Parameters
    ----------
    warmup_steps : int
        Length of the :class:`LinearLR` ramp (≥ 1).
    total_steps : int
        Length of the whole schedule (> ``warmup_steps``); the cosine lasts ``total_steps − warmup_steps``.
    start_factor : float, default 0.01
        The multiplier at step 0.
    eta_min : float, default 0.0
        The cosine's floor as a fraction of the base learning rate.

    Returns
    -------
    SequentialLR
        The two schedules joined at ``warmup_steps``.
    """
    warmup_steps = validation.count("warmup_steps", warmup_steps)
    total_steps = validation.count("total_steps", total_steps)
    if total_steps <= warmup_steps:
        raise ValueError(f"Invalid total_steps: {total_steps} (must exceed warmup_steps = {warmup_steps})")
    return SequentialLR((LinearLR(start_factor, 1.0, warmup_steps),
                         CosineAnnealingLR(total_steps - warmup_steps, eta_min)), (warmup_steps,))


class ReduceLROnPlateau(Schedule):
    """Loss-dependent schedule (torch ``ReduceLROnPlateau``): multiply by ``factor`` once the
    metric has not improved (``a < best(1 − threshold)`` in ``rel`` mode, ``a < best − threshold``
    in ``abs`` mode; mirrored for ``mode="max"``) for more than ``patience`` steps, then wait
    ``cooldown`` steps; never below ``min_lr`` (a fraction of the base lr), and changes smaller
    than ``eps`` are ignored.

    Stateful API: ``step(metric)`` after each optimizer step returns the multiplier for the
    next step; :meth:`multipliers_from_metrics` replays a whole metric sequence.
    :meth:`multipliers` needs the losses and so raises.

    Parameters
    ----------
    mode : {"min", "max"}, default "min"
        Whether the metric improves by decreasing or by increasing.
    factor : float, default 0.1
        The multiplier's factor at each reduction, in (0, 1).
    patience : int, default 10
        Steps without improvement tolerated before a reduction (≥ 0).
    threshold : float, default 1e-4
        The least change that counts as an improvement (≥ 0), relative or absolute per ``threshold_mode``.
    threshold_mode : {"rel", "abs"}, default "rel"
        How ``threshold`` compares a value with the best so far.
    cooldown : int, default 0
        Steps after a reduction during which no improvement is counted (≥ 0).
    min_lr : float, default 0.0
        The multiplier's floor, a fraction of the base learning rate (≥ 0).
    eps : float, default 1e-8
        A reduction smaller than this is skipped (≥ 0).
    """

    def __init__(self, mode: str = "min", factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                 threshold_mode: str = "rel", cooldown: int = 0, min_lr: float = 0.0, eps: float = 1e-8):
        validation.one_of("mode", mode, ("min", "max"))
        validation.one_of("threshold_mode", threshold_mode, ("rel", "abs"))
        factor = validation.finite("factor", factor)
        if factor >= 1.0 or factor <= 0.0:
            raise ValueError(f"Factor should be < 1.0 and > 0, got factor={factor}")
        self.mode, self.factor, self.threshold_mode = mode, factor, threshold_mode
        self.patience = validation.count("patience", patience, minimum=0)
        self.threshold = validation.non_negative("threshold", threshold)
        self.cooldown = validation.count("cooldown", cooldown, minimum=0)
        self.min_lr = validation.non_negative("min_lr", min_lr)
        self.eps = validation.non_negative("eps", eps)
        self.reset()

    def reset(self) -> None:
        self.multiplier = 1.0
        self.best = math.inf if self.mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0

    def _is_better(self, a: float) -> bool:
        if self.mode == "min":
            return a < self.best * (1.0 - self.threshold) if self.threshold_mode == "rel" \
                else a < self.best - self.threshold
        return a > self.best * (self.threshold + 1.0) if self.threshold_mode == "rel" \
            else a > self.best + self.threshold

    def step(self, metric: float) -> float:
        """Feed the metric of the step just taken; return the multiplier of the next step."""
        current = float(metric)
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            old = self.multiplier
            new = max(old * self.factor, self.min_lr)
            if old - new > self.eps:
                self.multiplier = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        return self.multiplier

    def multipliers_from_metrics(self, metrics) -> np.ndarray:
        """Multipliers of steps ``0..len(metrics)``: ``m_0 = 1``, ``m_{t+1} = step(metrics[t])``."""
        self.reset()
        metrics = np.asarray(metrics, dtype=np.float64).ravel()
        out = np.empty(metrics.size + 1)
        out[0] = 1.0
        for t, value in enumerate(metrics):
            out[t + 1] = self.step(value)
        return out

    def multipliers(self, steps: int) -> np.ndarray:
        raise ValueError("Invalid schedule: ReduceLROnPlateau depends on the losses; use step(metric) "
                         "or multipliers_from_metrics(losses)")

    def __repr__(self) -> str:
        return (f"ReduceLROnPlateau(mode={self.mode!r}, factor={self.factor}, patience={self.patience}, "
                f"threshold={self.threshold}, threshold_mode={self.threshold_mode!r}, "
                f"cooldown={self.cooldown}, "
                f"min_lr={self.min_lr}, eps={self.eps})")
