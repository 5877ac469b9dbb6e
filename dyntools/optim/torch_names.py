"""Build dyntools optimizers and schedules from ``torch.optim`` class names and keyword arguments.

``optimizer_from_torch("AdamW", {"lr": 1e-3, "weight_decay": 0.1})`` gives the optimizer whose
updates match ``torch.optim.AdamW`` with those arguments; ``schedule_from_torch({"type":
"CosineAnnealingLR", "T_max": 100, "eta_min": 0.01})`` the matching schedule (floors such as
``eta_min``/``min_lr``/``eps`` are fractions of the base learning rate here). Torch itself is not
needed.

The optimizer names are read from the alias table (:attr:`dyntools.optim.aliases.Alias.torch`): an alias that
names no ``torch.optim`` class (SGDW, Lion, …) has none here, and :func:`torch_name` says so with ``None``.
"""

from __future__ import annotations

from dyntools import validation
from dyntools.optim import optimizers as O
from dyntools.optim import schedules as S
from dyntools.optim.aliases import ALIASES

_SCHEDULES = {"StepLR": S.StepLR, "MultiStepLR": S.MultiStepLR, "ExponentialLR": S.ExponentialLR,
              "CosineAnnealingLR": S.CosineAnnealingLR, "LinearLR": S.LinearLR,
              "CosineAnnealingWarmRestarts": S.CosineAnnealingWarmRestarts,
              "ReduceLROnPlateau": S.ReduceLROnPlateau, "SequentialLR": S.SequentialLR}


def optimizers() -> dict[str, str]:
    """``torch.optim`` class name → dyntools alias, for every alias that names one."""
    return {row.torch: name for name, row in ALIASES.items() if row.torch is not None}


def torch_name(alias: str) -> str | None:
    """The ``torch.optim`` class of the optimizer ``alias``, or ``None`` when PyTorch has none."""
    return ALIASES[validation.one_of("optimizer", alias, tuple(ALIASES))].torch


def optimizer_from_torch(name: str, kwargs: dict) -> O.Optimizer:
    """The optimizer matching ``torch.optim.<name>(**kwargs)`` (``"AdamW"``, ``{"lr": 1e-3}``)."""
    table = optimizers()
    validation.one_of("torch optimizer", name, tuple(table))
    kwargs = dict(kwargs)
    if "betas" in kwargs:
        kwargs["betas"] = tuple(kwargs["betas"])
    return O.make(table[name], **kwargs)


def schedule_from_torch(spec: dict) -> S.Schedule:
    kind = validation.one_of("torch scheduler", spec.get("type"), tuple(_SCHEDULES))
    kw = {k: v for k, v in spec.items() if k not in ("type", "name")}
    if kind == "SequentialLR":
        return S.SequentialLR(tuple(schedule_from_torch(s) for s in kw["schedules"]), tuple(kw["milestones"]))
    if kind == "MultiStepLR":
        kw["milestones"] = tuple(kw["milestones"])
    return _SCHEDULES[kind](**kw)
