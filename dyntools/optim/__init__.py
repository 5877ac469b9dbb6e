"""Optimizer update rules (composable transforms + fused numba kernels) and LR schedules."""

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
