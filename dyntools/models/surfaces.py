"""Two-dimensional loss surfaces with analytic gradients: the optimizer trajectory gallery's models.

Each surface is a function ``f(x, y)`` of a parameter ``θ = (x, y)`` with its gradient written out
by hand (the tests check them against sympy's derivatives and finite differences):

================  ==============================================  ===================================
name              f(x, y)                                         minima
================  ==============================================  ===================================
``quadratic``     ½ (a x² + c y²)   (a = 1, c = 20: condition 20)   (0, 0)
``rosenbrock``    (1 − x)² + 100 (y − x²)²                        (1, 1), in a curved flat valley
``beale``         Σ_{k=1}^{3} (c_k − x + x yᵏ)², c = (1.5, 2.25, 2.625)   (3, ½)
``saddle``        x² + y⁴/4 − y²/2                                 (0, ±1), f = −¼; saddle at (0, 0)
``himmelblau``    (x² + y − 11)² + (x + y² − 7)²                  four, f = 0: (3, 2), (−2.805, 3.131),
                                                                  (−3.779, −3.283), (3.584, −1.848)
``diag-net``      (u v ξ − η)²   (the two-parameter diagonal net:  the hyperbola u v = η/ξ
                  one input ξ = 1, one label η = 1)
================  ==============================================  ===================================

``diag-net`` is seed 004's diagonal linear network ``h(ξ) = u v ξ`` on one example: its minima form
a valley whose sharpness ``λ_max = 2ξ²(u² + v²)`` changes along it, so gradient flow stays where it
lands (it conserves ``u² − v²``) while GD with a large step bounces across the valley until it reaches
a part flat enough for it (``λ_max < 2/η``).

**As a model** (:mod:`dyntools.models.base`) a surface has two parameters and *no data*: the
trainer's data set is two placeholder examples (:meth:`Surface.data`) read with the ``full`` sampler,
and the per-example draw the engine calls label noise, ``noise_q = σ ξ_q`` with fresh standard
normals, is here added to gradient component ``q``: ``g = ∇f(θ) + σ ξ``, seeded gradient noise
from the ``surface.noise`` stream (:mod:`dyntools.engine.streams`). The returned loss is ``f(θ)``
without noise. The compiled kernel serves every surface (``iargs[0]`` is the surface's code,
``fargs`` its constants), so one cached training loop covers the gallery.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from dyntools import validation
from dyntools.models.base import Model

QUADRATIC, ROSENBROCK, BEALE, SADDLE, HIMMELBLAU, DIAG_NET = range(6)
BEALE_C = (1.5, 2.25, 2.625)


@njit(cache=True)
def value_grad(code, x, y, fargs, grad):
    """``f(x, y)`` of surface ``code`` (module table), ``∇f`` written into ``grad[0:2]``."""
    if code == QUADRATIC:
        a, c = fargs[0], fargs[1]
        grad[0] = a * x
        grad[1] = c * y
        return 0.5 * (a * x * x + c * y * y)
    if code == ROSENBROCK:
        s = y - x * x
        grad[0] = -2.0 * (1.0 - x) - 400.0 * x * s
        grad[1] = 200.0 * s
        return (1.0 - x) ** 2 + 100.0 * s * s
    if code == BEALE:
        f = 0.0
        gx = 0.0
        gy = 0.0
        yk = 1.0                       # y^(k−1)
        for k in range(1, 4):
            r = fargs[k - 1] - x + x * yk * y
            f += r * r
            gx += 2.0 * r * (yk * y - 1.0)
            gy += 2.0 * r * x * k * yk
            yk *= y
        grad[0] = gx
        grad[1] = gy
        return f
    if code == SADDLE:
        grad[0] = 2.0 * x
        grad[1] = y * y * y - y
        return x * x + 0.25 * y ** 4 - 0.5 * y * y
    if code == HIMMELBLAU:
        p = x * x + y - 11.0
        q = x + y * y - 7.0
        grad[0] = 4.0 * x * p + 2.0 * q
        grad[1] = 2.0 * p + 4.0 * y * q
        return p * p + q * q
    xi, eta = fargs[0], fargs[1]       # diag-net
    r = x * y * xi - eta
    grad[0] = 2.0 * r * y * xi
    grad[1] = 2.0 * r * x * xi
    return r * r


@njit(cache=True)
def loss_grad(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """``f(θ)`` and ``grad = ∇f(θ) + (noise_0, noise_1)`` (module docstring: noise_q = σ ξ_q)."""
    f = value_grad(iargs[0], theta[0], theta[1], fargs, grad)
    grad[0] += noise[0]
    grad[1] += noise[1]
    return f


def value_grad_np(code: int, x, y, fargs):
    """NumPy twin of :func:`value_grad` on arrays: ``(f, ∂f/∂x, ∂f/∂y)`` elementwise."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if code == QUADRATIC:
        a, c = fargs[0], fargs[1]
        return 0.5 * (a * x * x + c * y * y), a * x, c * y
    if code == ROSENBROCK:
        s = y - x * x
        return (1.0 - x) ** 2 + 100.0 * s * s, -2.0 * (1.0 - x) - 400.0 * x * s, 200.0 * s
    if code == BEALE:
        rs = [fargs[k - 1] - x + x * y**k for k in (1, 2, 3)]
        f = sum(r * r for r in rs)
        gx = sum(2.0 * r * (y**k - 1.0) for k, r in zip((1, 2, 3), rs))
        gy = sum(2.0 * r * x * k * y ** (k - 1) for k, r in zip((1, 2, 3), rs))
        return f, gx, gy
    if code == SADDLE:
        return x * x + 0.25 * y**4 - 0.5 * y * y, 2.0 * x, y**3 - y
    if code == HIMMELBLAU:
        p = x * x + y - 11.0
        q = x + y * y - 7.0
        return p * p + q * q, 4.0 * x * p + 2.0 * q, 2.0 * p + 4.0 * y * q
    r = x * y * fargs[0] - fargs[1]
    return r * r, 2.0 * r * y * fargs[0], 2.0 * r * x * fargs[0]


def loss_grad_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """NumPy twin of :func:`loss_grad`."""
    f, gx, gy = value_grad_np(int(iargs[0]), theta[0], theta[1], fargs)
    grad[0] = gx + noise[0]
    grad[1] = gy + noise[1]
    return float(f)


# ------------------------------------------------------------------------------- the surfaces

@dataclass(frozen=True)
class SurfaceSpec:
    """A surface: its code, constants, plotting box ``(x_lo, x_hi, y_lo, y_hi)`` (the domain a start
    point must lie in), default start, minima, minimum value and the formula shown on figures."""

    name: str
    code: int
    fargs: tuple[float, ...]
    box: tuple[float, float, float, float]
    start: tuple[float, float]
    minima: tuple[tuple[float, float], ...]
    f_min: float
    formula: str
    log_levels: bool = True            # contour levels on a log scale of f − f*
    saddles: tuple[tuple[float, float], ...] = field(default=())


SURFACES: dict[str, SurfaceSpec] = {s.name: s for s in (
    SurfaceSpec("quadratic", QUADRATIC, (1.0, 20.0), (-5.0, 5.0, -2.5, 2.5), (-4.5, 2.0), ((0.0, 0.0),), 0.0,
                r"$\frac{1}{2}(x^2 + 20 y^2)$"),
    SurfaceSpec("rosenbrock", ROSENBROCK, (), (-2.0, 2.0, -1.0, 3.0), (-1.5, 2.5), ((1.0, 1.0),), 0.0,
                r"$(1-x)^2 + 100(y-x^2)^2$"),
    SurfaceSpec("beale", BEALE, BEALE_C, (-4.5, 4.5, -4.5, 4.5), (0.7, 1.4), ((3.0, 0.5),), 0.0,
                r"$\sum_{k=1}^3 (c_k - x + x y^k)^2$"),
    SurfaceSpec("saddle", SADDLE, (), (-3.0, 3.0, -2.0, 2.0), (-2.8, 0.01), ((0.0, 1.0), (0.0, -1.0)), -0.25,
                r"$x^2 + y^4/4 - y^2/2$", saddles=((0.0, 0.0),)),
    SurfaceSpec("himmelblau", HIMMELBLAU, (), (-5.0, 5.0, -5.0, 5.0), (-0.3, -0.9),
                ((3.0, 2.0), (-2.805118, 3.131312), (-3.779310, -3.283186), (3.584428, -1.848126)), 0.0,
                r"$(x^2+y-11)^2 + (x+y^2-7)^2$"),
    SurfaceSpec("diag-net", DIAG_NET, (1.0, 1.0), (-0.5, 4.5, -1.0, 4.0), (3.5, 0.1), (), 0.0,
                r"$(u v - 1)^2$"),
)}

NAMES = tuple(SURFACES)


def surface(name: str) -> SurfaceSpec:
    """The spec of ``name`` (``ValueError`` naming ``surface`` otherwise)."""
    validation.one_of("surface", name, NAMES)
    return SURFACES[name]


def check_start(spec: SurfaceSpec, start) -> np.ndarray:
    """``start`` as a float64 pair inside the surface's box (``ValueError`` naming ``start`` otherwise)."""
    point = validation.finite_array("start", start, ndim=1)
    if point.shape != (2,):
        raise ValueError(f"Invalid start: expected 2 coordinates (x, y), got {point.size}")
    x0, x1, y0, y1 = spec.box
    if not (x0 <= point[0] <= x1 and y0 <= point[1] <= y1):
        raise ValueError(f"Invalid start: ({point[0]:g}, {point[1]:g}) is outside the {spec.name} surface's "
                         f"domain [{x0:g}, {x1:g}] x [{y0:g}, {y1:g}]")
    return point


@dataclass(frozen=True)
class _NoData:
    """The two placeholder examples of a surface: one per gradient-noise channel."""

    X: np.ndarray = field(default_factory=lambda: np.zeros((2, 1)))
    y: np.ndarray = field(default_factory=lambda: np.zeros(2))


class Surface(Model):
    """A 2-D surface as a model of :func:`dyntools.train` (see the module docstring).

    Parameters
    ----------
    name : str
        The surface (``quadratic``, ``rosenbrock``, ``beale``, ``saddle``, ``himmelblau``, ``diag-net``, …).
    start : pair of float, optional
        The start point, inside the surface's box (its default start otherwise).
    """

    head = "regression"
    init_stream = "surface.noise"
    sampling_stream = "surface.noise"
    inline_kernel = True                 # a few flops a step: a call through a pointer would cost 13–26 % per step
    loss_grad = staticmethod(loss_grad)
    loss_grad_np = staticmethod(loss_grad_np)

    def __init__(self, name: str, start=None):
        self.spec = surface(name)
        self.name = f"surface-{name}"
        self.start = check_start(self.spec, self.spec.start if start is None else start)

    @property
    def n_params(self) -> int:
        return 2

    def kernel_args(self):
        return np.array([self.spec.code], dtype=np.int64), np.array(self.spec.fargs or (0.0,), dtype=np.float64)

    def init(self, seed: int, index: int = 0) -> np.ndarray:
        """The start point (deterministic: the surfaces' randomness is the gradient noise)."""
        return self.start.copy()

    def config(self) -> dict:
        return {"name": self.name, "n_params": 2, "surface": self.spec.name, "start": self.start.tolist()}

    @staticmethod
    def data() -> _NoData:
        """The trainer's data set: two placeholder examples (the two gradient-noise channels)."""
        return _NoData()

    def value(self, x, y) -> np.ndarray:
        """``f`` elementwise on arrays (contours, recorded losses)."""
        return value_grad_np(self.spec.code, x, y, self.spec.fargs)[0]

    def gradient(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """``(∂f/∂x, ∂f/∂y)`` elementwise on arrays."""
        return value_grad_np(self.spec.code, x, y, self.spec.fargs)[1:]

    def recorded_loss(self, theta_rec, Xs, ys, data_of) -> np.ndarray:
        """``f`` at every recording at once (NaN where nothing was recorded)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return self.value(theta_rec[..., 0], theta_rec[..., 1])

    def minimum_curve(self, points: int = 400) -> np.ndarray | None:
        """The valley of minima of ``diag-net`` (u v = η/ξ inside the box) as ``(m, 2)``; None elsewhere."""
        if self.spec.code != DIAG_NET:
            return None
        x0, x1, y0, y1 = self.spec.box
        c = self.spec.fargs[1] / self.spec.fargs[0]
        u = np.linspace(max(x0, c / y1), x1, points)
        u = u[u > 0]
        return np.column_stack([u, c / u])
