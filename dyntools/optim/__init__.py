"""Optimizer update rules (composable transforms, each with its compiled element update; one numba step generated
from a run set's chains by :mod:`dyntools.optim.compiled`) and LR schedules."""

from dyntools.optim.optimizers import (  # noqa: F401
    FACTORIES,
    NO_FUSED_KERNEL,
    Optimizer,
    adagrad,
    adam,
    adamw,
    adamw_l1,
    adamw_l1l2,
    make,
    normalized_weight_decay,
    rmsprop,
    rmsprop_bc,
    sgd,
    sgdw,
)
