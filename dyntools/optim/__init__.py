"""Optimizer update rules (composable transforms, each with its compiled element update; one numba step generated
from a run set's chains by :mod:`dyntools.optim.compiled`) and LR schedules.

Every optimizer name of :data:`~dyntools.optim.aliases.ALIASES` is an attribute here (``dyntools.optim.adamw``),
read from that table: a factory declared with ``@alias`` in :mod:`dyntools.optim.optimizers` needs no line here.
"""

from dyntools.optim.aliases import ALIASES, alias  # noqa: F401
from dyntools.optim.optimizers import FACTORIES, Optimizer, make, normalized_weight_decay  # noqa: F401

globals().update({name: row.factory for name, row in ALIASES.items()})
