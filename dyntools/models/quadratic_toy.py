"""The 1-D quadratic-parametrization regression of Andriushchenko et al. (2023), seed 004.

Data ``x_i`` with support in ``[x_min, x_max] ⊂ (0, ∞)``, labels ``y_i = x_i θ*²``, model
``x θ²`` and loss

    F(θ) = ¼ E(y − xθ²)² = ¼ E[x²] (θ*² − θ²)²,                                   (seed 004, eq. 2)

whose SGD iterates with step η on sample ``i_t`` are

    θ_{t+1} = θ_t + η θ_t x_{i_t} (y_{i_t} − x_{i_t} θ_t²).

(Seed 004 prints the left side as "θ_{t+1} + θ_t"; it is an update, the "+" is a "=".)

Normalizing ``z = θ/θ*`` gives ``z ← z + γ z (1 − z²)`` with ``γ = η θ*² x²``, so the
proposition's step range ``η ∈ ((θ* x_min)⁻², 1.25 (θ* x_max)⁻²)`` is ``γ ∈ (1, 1.25)`` for
every sample. It is non-empty only when ``x_max / x_min < √1.25``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dyntools import validation
from dyntools.engine import streams

#: Constants of the proposition (in units of θ*): the iterates end up alternating between
#: (LOW, 1 − ε₀) and (1 − ε₀, HIGH), and the loss stays in (ε₀ θ*², BAND_HIGH θ*²).
LOW = 0.65
HIGH = 1.162
BAND_HIGH = 0.17
EPS_CAP = 0.02
GAMMA_MAX = 1.25


@dataclass(frozen=True)
class QuadraticToy:
    """Data set and constants of the toy; build with :meth:`uniform` or :meth:`from_samples`.

    Parameters
    ----------
    x : ndarray
        The samples :math:`x_i > 0`.
    theta_star : float
        The minimizer θ* (labels are :math:`y_i = x_i θ^{*2}`).
    x_min, x_max : float
        The bounds of the samples' support ``[x_min, x_max] ⊂ (0, ∞)``, which set the stabilization band of η.
    """

    x: np.ndarray
    theta_star: float
    x_min: float
    x_max: float

    @classmethod
    def uniform(cls, *, theta_star: float = 1.0, x_min: float = 1.0, x_max: float = 1.05,
                n: int = 1000, seed: int = 0) -> QuadraticToy:
        """``n`` samples uniform on ``[x_min, x_max]`` drawn from ``seed``."""
        theta_star = validation.positive("theta_star", theta_star)
        x_min, x_max = _check_support(x_min, x_max)
        n = validation.count("n", n)
        rng = np.random.Generator(np.random.PCG64(streams.root_sequence(seed, streams.KEYS["toy.data"])))
        return cls(rng.uniform(x_min, x_max, size=n), theta_star, x_min, x_max)

    @classmethod
    def from_samples(cls, x, *, theta_star: float = 1.0, x_min: float | None = None,
                     x_max: float | None = None) -> QuadraticToy:
        """Given samples; the support defaults to ``[min x, max x]``."""
        theta_star = validation.positive("theta_star", theta_star)
        x = validation.finite_array("x", x, ndim=1)
        x_min = float(x.min()) if x_min is None else x_min
        x_max = float(x.max()) if x_max is None else x_max
        x_min, x_max = _check_support(x_min, x_max)
        if x.min() < x_min or x.max() > x_max:
            raise ValueError(f"Invalid x: samples leave the support [{x_min}, {x_max}]")
        return cls(x, theta_star, x_min, x_max)

    # ---- data and loss
    @property
    def y(self) -> np.ndarray:
        """Labels ``y_i = x_i θ*²``."""
        return self.x * self.theta_star**2

    @property
    def second_moment(self) -> float:
        """``E[x²]`` over the data set."""
        return float(np.mean(self.x * self.x))

    def loss(self, theta) -> np.ndarray:
        """``F(θ) = ¼ E[x²] (θ*² − θ²)²`` (exact for the empirical distribution), elementwise."""
        theta = np.asarray(theta, dtype=np.float64)
        return 0.25 * self.second_moment * (self.theta_star**2 - theta * theta) ** 2

    def gradient(self, theta) -> np.ndarray:
        """``F'(θ) = −E[x²] θ (θ*² − θ²)``."""
        theta = np.asarray(theta, dtype=np.float64)
        return -self.second_moment * theta * (self.theta_star**2 - theta * theta)

    # ---- the proposition's constants
    def eta_interval(self) -> tuple[float, float] | None:
        """``((θ* x_min)⁻², 1.25 (θ* x_max)⁻²)``, or ``None`` when it is empty."""
        lo = (self.theta_star * self.x_min) ** -2
        hi = GAMMA_MAX * (self.theta_star * self.x_max) ** -2
        return (lo, hi) if lo < hi else None

    def eps0(self, eta: float) -> float:
        """``ε₀ = min{(η (θ* x_min)² − 1)/3, 0.02}`` (positive only above the interval's left end)."""
        return min((eta * (self.theta_star * self.x_min) ** 2 - 1.0) / 3.0, EPS_CAP)

    def band(self, eta: float) -> tuple[float, float]:
        """The proposition's loss band ``(ε₀ θ*², 0.17 θ*²)``."""
        return self.eps0(eta) * self.theta_star**2, BAND_HIGH * self.theta_star**2

    def gamma_range(self, eta: float) -> tuple[float, float]:
        """Support of the normalized step ``γ = η θ*² x²`` over the data's support."""
        return eta * (self.theta_star * self.x_min) ** 2, eta * (self.theta_star * self.x_max) ** 2

    def regime(self, eta: float) -> str:
        """Where η sits: "below" the interval, "inside", "above", or "empty" (no interval)."""
        interval = self.eta_interval()
        if interval is None:
            return "empty"
        if eta <= interval[0]:
            return "below"
        return "inside" if eta < interval[1] else "above"

    def gd_step_limit(self) -> float:
        """Full-batch GD is linearly stable at θ* iff ``η < 2 / F''(θ*) = 1 / (E[x²] θ*²)``."""
        return 1.0 / (self.second_moment * self.theta_star**2)


def _check_support(x_min, x_max) -> tuple[float, float]:
    x_min = validation.positive("x_min", x_min)
    x_max = validation.positive("x_max", x_max)
    if x_min > x_max:
        raise ValueError(f"Invalid x_min: {x_min} (must be <= x_max = {x_max})")
    return x_min, x_max


def interval_is_empty_message(toy: QuadraticToy) -> str:
    ratio = toy.x_max / toy.x_min
    return (f"the proposition's step range is empty for this support: x_max/x_min = {ratio:.4g} "
            f">= sqrt(1.25) = {math.sqrt(GAMMA_MAX):.4g}")


# ------------------------------------------------------------------------------ the model protocol

from numba import njit  # noqa: E402

from dyntools.models.base import Hooks, Model  # noqa: E402


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """Mini-batch loss ``(1/b) Σ_q ¼ (y_i + noise_q − x_i θ²)²`` and its derivative
    ``−(1/b) Σ_q x_i θ (y_i + noise_q − x_i θ²)`` (θ scalar, ``x_i = X[i, 0]``)."""
    th = theta[0]
    tot = 0.0
    g = 0.0
    for q in range(b):
        i = idx[q]
        xi = X[i, 0]
        r = (y[i] + noise[q]) - xi * th * th
        tot += 0.25 * r * r
        g -= th * xi * r
    grad[0] = g / b
    return tot / b


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad` (same order of operations)."""
    th = float(theta[0])
    tot = 0.0
    g = 0.0
    for q in range(b):
        i = int(idx[q])
        xi = float(X[i, 0])
        r = (float(y[i]) + float(noise[q])) - xi * th * th
        tot += 0.25 * r * r
        g -= th * xi * r
    grad[0] = g / b
    return tot / b


# ------------------------------------------------------------------------------------------ the counters
#
# The proposition's statistics (``simulations.loss_stabilization``), in units z = θ/θ*, are the loop's step
# hooks (dyntools.models.base.Hooks): a path's state row is [θ_t, in_band, bounces, entry] and its run's
# constants hargs = [θ*, E[x²], band_lo, band_hi, ε₀]. Over every step t that passes the guard:
#
#     in_band  += 1[F(θ_t) ∈ (band_lo, band_hi)],           F(θ) = ¼ E[x²] (θ*² − θ²)²
#     bounces  += 1[z_t, z_{t+1} on opposite sides: one in (0.65, 1 − ε₀), the other in (1 − ε₀, 1.162)]
#     entry     = t + 1 when step t is not such a bounce   (the first step from which every later one is)

#: columns of the counters' state row
THETA_T, IN_BAND, BOUNCES, ENTRY = 0, 1, 2, 3


@njit(inline="always")
def count_step(t, th, new, in_band, bounces, entry, ts2, inv_ts, m2, band_lo, band_hi, mid):
    """The counters after step ``t`` from ``θ_t = th`` to ``θ_{t+1} = new`` (``ts2 = θ*²``, ``inv_ts = 1/θ*``,
    ``mid = 1 − ε₀``): ``(in_band, bounces, entry)``. Shared by the hook and the toy's lock-step loop."""
    gap = ts2 - th * th
    loss = 0.25 * m2 * gap * gap
    if band_lo < loss < band_hi:
        in_band += 1
    z0 = th * inv_ts
    z1 = new * inv_ts
    if (LOW < z0 < mid and mid < z1 < HIGH) or (mid < z0 < HIGH and LOW < z1 < mid):
        bounces += 1
    else:
        entry = t + 1
    return in_band, bounces, entry


def count_step_np(t, th, new, in_band, bounces, entry, ts2, inv_ts, m2, band_lo, band_hi, mid):
    """NumPy twin of :func:`count_step`, elementwise over arrays of paths (or scalars)."""
    gap = ts2 - th * th
    with np.errstate(over="ignore", invalid="ignore"):
        loss = 0.25 * m2 * gap * gap
        z0, z1 = th * inv_ts, new * inv_ts
    lo0, hi0 = (LOW < z0) & (z0 < mid), (mid < z0) & (z0 < HIGH)
    lo1, hi1 = (LOW < z1) & (z1 < mid), (mid < z1) & (z1 < HIGH)
    bounce = (lo0 & hi1) | (hi0 & lo1)
    return in_band + ((band_lo < loss) & (loss < band_hi)), bounces + bounce, np.where(bounce, entry, t + 1)


@njit(cache=True)
def keep_theta_hook(t, theta, hstate, hstream, hargs, b, ws):
    """Before the gradient: keep ``θ_t`` in the state row (the counters compare it with ``θ_{t+1}``)."""
    hstate[THETA_T] = theta[0]


def keep_theta_hook_np(t, theta, hstate, hstream, hargs, b, ws) -> None:
    """NumPy twin of :func:`keep_theta_hook`."""
    hstate[THETA_T] = theta[0]


@njit(cache=True)
def count_hook(t, theta, hstate, hstream, hargs, b, ws):
    """After a step that passed the guard: :func:`count_step` on the state row."""
    ts = hargs[0]
    hstate[IN_BAND], hstate[BOUNCES], hstate[ENTRY] = count_step(
        t, hstate[THETA_T], theta[0], hstate[IN_BAND], hstate[BOUNCES], hstate[ENTRY], ts * ts, 1.0 / ts, hargs[1],
        hargs[2], hargs[3], 1.0 - hargs[4])


def count_hook_np(t, theta, hstate, hstream, hargs, b, ws) -> None:
    """NumPy twin of :func:`count_hook`."""
    ts = float(hargs[0])
    hstate[IN_BAND], hstate[BOUNCES], hstate[ENTRY] = count_step_np(
        t, hstate[THETA_T], theta[0], hstate[IN_BAND], hstate[BOUNCES], hstate[ENTRY], ts * ts, 1.0 / ts, hargs[1],
        hargs[2], hargs[3], 1.0 - hargs[4])


class ToyModel(Model):
    """The toy ``x θ²`` as a :class:`~dyntools.models.base.Model` (``p = 1``); its data is ``toy_data(toy)``.

    Its step hooks count, over every step, the proposition's band / bounce statistics (returned as extra arrays
    ``in_band``, ``bounces``, ``entry``; see :func:`count_step`), in every loop: the generic one and the toy's
    tuned lock-step ensemble of :mod:`dyntools.dynamics.fast.quadratic_toy` (plain SGD or GD, batch 1, one run).

    Parameters
    ----------
    toy : QuadraticToy
        The toy's samples and constants.
    theta0 : float, default 0.5
        The initial θ.
    """

    name = "quadratic-toy"
    head = "regression"
    init_stream = "toy.data"
    sampling_stream = "toy.sampling"
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, toy: QuadraticToy, theta0: float = 0.5):
        self.toy = toy
        self.theta0 = validation.finite("theta0", theta0)

    @property
    def n_params(self) -> int:
        return 1

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        return np.array([self.theta0 * self.toy.theta_star])

    def hooks(self, setting: dict, P: int) -> Hooks:
        """The proposition's counters (see :func:`count_step`): state ``[θ_t, 0, 0, 0]`` per path, constants
        ``[θ*, E[x²], band_lo, band_hi, ε₀]`` per run at the run's base step size η."""
        toy = self.toy
        args = np.array([[toy.theta_star, toy.second_moment, *toy.band(float(o.lr)), toy.eps0(float(o.lr))]
                         for o in setting["optimizers"]])
        return Hooks(before_grad=keep_theta_hook, before_grad_np=keep_theta_hook_np, after_step=count_hook,
                     after_step_np=count_hook_np, state=np.zeros((P, 4)), args=args)

    def hook_results(self, state, recorded) -> dict:
        """``in_band``, ``bounces``, ``entry`` (P,) int64: the counters of every path."""
        return {name: state[:, col].astype(np.int64) for name, col in
                (("in_band", IN_BAND), ("bounces", BOUNCES), ("entry", ENTRY))}

    def config(self) -> dict:
        return {"name": self.name, "theta_star": self.toy.theta_star, "x_min": self.toy.x_min,
                "x_max": self.toy.x_max, "n": int(self.toy.x.size)}

    def loss(self, theta, X, y) -> float:
        xs = np.asarray(X)[:, 0]
        return float(np.mean(0.25 * (np.asarray(y) - xs * float(theta[0]) ** 2) ** 2))

    def predict(self, theta, X):
        return np.asarray(X)[:, 0] * float(theta[0]) ** 2

    def recorded_loss(self, theta_rec, Xs, ys, data_of):
        """``F(θ) = ¼ E[x²] (θ*² − θ²)²`` at every recording (the data loss, by the identity of the module
        docstring; ``E[x²]`` of the path's data set)."""
        m2 = np.array([np.mean(X[:, 0] ** 2) for X in Xs])[np.asarray(data_of)]
        th = theta_rec[..., 0]
        return 0.25 * m2[:, None] * (self.toy.theta_star**2 - th * th) ** 2


@dataclass(frozen=True)
class ToyData:
    """The toy's training set in the trainer's form: ``X`` (n × 1) and ``y = x θ*²``."""

    X: np.ndarray
    y: np.ndarray


def toy_data(toy: QuadraticToy, *, full_batch: bool = False) -> ToyData:
    """The samples of ``toy`` (or, for full-batch GD, the one-point set ``x = √E[x²]``: the full-batch
    gradient of ``F`` is the gradient at that point).

    Parameters
    ----------
    toy : QuadraticToy
        The toy.
    full_batch : bool, default False
        The one-point set of full-batch GD instead of the samples.
    """
    x = np.array([np.sqrt(toy.second_moment)]) if full_batch else np.ascontiguousarray(toy.x, dtype=np.float64)
    return ToyData(x[:, None].copy(), x * toy.theta_star**2)
