"""The small ReLU networks of the loss-stabilization paper (Andriushchenko et al. 2023, seed 004): the published
settings and the network, initialization and data of a setting.

A :class:`Setting` holds one experiment's parameters (task, student widths and biases, initialization, the
step-size schedules, sizes); :data:`SETTINGS` are the paper's three (and the authors' second 1-D run);
:func:`get_setting` replaces and checks fields; :func:`build` draws the network, θ₀ and the data of a seed.
``simulate relu`` (``simulations/relu_nets.py``) trains them; ``simulate sgd-vs-label-noise`` reuses the
two-layer teacher–student one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from dyntools import validation


@dataclass(frozen=True)
class Setting:
    """One experiment's parameters (see the module docstring)."""

    name: str
    task: str                            # "1d" or "teacher"
    hidden: tuple[int, ...]              # student hidden widths
    biases: tuple[bool, ...]             # student bias flags, one per layer
    init: str                            # "regression_1d" or "gaussian"
    init_scales: tuple[float, ...]
    log10_steps: float
    eta_small: float | None              # constant-step run (None: none)
    eta_large: float
    decays: tuple[tuple[float, float], ...]   # (fraction, factor) — one large-step run each
    warmup_factor: float = 1.0
    warmup_exponent: float = 1.0
    warmup_per_length: bool = False      # warm-up factor × decay fraction ("×400·(schedule length)")
    n: int = 12
    d: int = 1
    teacher: tuple[int, ...] = ()
    n_test: int = 1000
    batch: int = 1
    method: str = "sgd"
    extra: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(round(10 ** self.log10_steps))


SETTINGS: dict[str, Setting] = {
    "1d": Setting("1d", "1d", hidden=(100,), biases=(True, False), init="regression_1d", init_scales=(1.0,),
                  log10_steps=4.5, eta_small=None, eta_large=2e-4, decays=((0.02, 2.5), (0.5, 3.0)),
                  warmup_factor=400.0, warmup_exponent=1.0, warmup_per_length=True, n=12, d=1),
    # The authors' second 1-D run (fc_nets_1d_regression.ipynb, "a bit stronger warm-up"): the same
    # runs with the warm-up factor 500·L instead of 400·L.
    "1d-warmup500": Setting("1d-warmup500", "1d", hidden=(100,), biases=(True, False), init="regression_1d",
                            init_scales=(1.0,), log10_steps=4.5, eta_small=None, eta_large=2e-4,
                            decays=((0.02, 2.5), (0.5, 3.0)), warmup_factor=500.0, warmup_exponent=1.0,
                            warmup_per_length=True, n=12, d=1),
    "teacher2": Setting("teacher2", "teacher", hidden=(20,), biases=(False, False), init="gaussian",
                        init_scales=(0.5, 0.0), log10_steps=4.15, eta_small=0.13, eta_large=0.455,
                        decays=((0.1, 2.0), (0.3, 4.0), (0.5, 5.0)), n=15, d=2, teacher=(3,)),
    "teacher3": Setting("teacher3", "teacher", hidden=(10, 10), biases=(True, True, True), init="gaussian",
                        init_scales=(0.8,), log10_steps=4.0, eta_small=0.011, eta_large=0.04,
                        decays=((0.1, 3.5), (0.3, 2.5), (0.5, 5.0)), warmup_factor=6.0, warmup_exponent=0.5,
                        n=50, d=5, teacher=(2, 2)),
}


def get_setting(name: str, **overrides) -> Setting:
    """The named setting with some fields replaced (``None`` values are ignored) and validated."""
    validation.one_of("setting", name, tuple(SETTINGS))
    s = replace(SETTINGS[name], **{k: v for k, v in overrides.items() if v is not None})
    for i, w in enumerate(s.hidden):
        validation.count(f"width m_{i + 1}", w)
    for i, w in enumerate(s.teacher):
        validation.count(f"teacher width {i + 1}", w)
    if len(s.biases) != len(s.hidden) + 1:
        s = replace(s, biases=(s.biases[0],) * (len(s.hidden) + 1))
    validation.count("n", s.n)
    validation.count("d", s.d)
    validation.count("n_test", s.n_test)
    validation.count("batch", s.batch)
    if s.batch > s.n:
        raise ValueError(f"Invalid batch: {s.batch} (must be <= n = {s.n})")
    validation.one_of("method", s.method, ("sgd", "gd"))
    validation.positive("log10 steps", s.log10_steps)
    validation.count("steps", s.steps)
    if s.eta_small is not None:
        validation.positive("eta_small", s.eta_small)
    validation.positive("eta_large", s.eta_large)
    validation.positive("warmup factor", s.warmup_factor)
    validation.positive("warmup exponent", s.warmup_exponent)
    if not s.decays:
        raise ValueError("Invalid decays: need at least one FRACTION:FACTOR pair")
    for frac, factor in s.decays:
        validation.in_interval("decay fraction", frac, 0.0, 1.0, closed_low=False, closed_high=False)
        validation.positive("decay factor", factor)
    for sc in s.init_scales:
        validation.non_negative("init scale", sc)
    if s.task == "1d":
        if s.d != 1 or s.n != 12:
            raise ValueError("Invalid setting: the 1-D regression has n = 12 and d = 1")
        if len(s.hidden) != 1:
            raise ValueError("Invalid width: the 1-D regression network has one hidden layer")
    return s


def build(s: Setting, seed: int, dtype: str = "float64"):
    """Network (trained in ``dtype``), initial θ, train and test sets (and the teacher) of setting ``s`` for
    ``seed``."""
    from dyntools import data
    from dyntools.models.mlp import MLP

    init = "regression-1d" if s.init == "regression_1d" else s.init
    layout = MLP((s.d, *s.hidden, 1), biases=s.biases, init=init, init_scales=s.init_scales, dtype=dtype)
    if s.task == "1d":
        X, y = data.regression_1d()
        grid = np.linspace(X.min() - 0.25, X.max() + 0.25, 400)[:, None]
        X_test, y_test, teacher = grid, np.full(grid.shape[0], np.nan), None
    else:
        ts = data.teacher_student(s.n, s.d, s.teacher, n_test=s.n_test, seed=seed, student_d=layout.widths[0])
        X, y, X_test, y_test, teacher = ts.X, ts.y, ts.X_test, ts.y_test, ts.teacher
    return layout, layout.init(seed), X, y, X_test, y_test, teacher
