"""The one table of optimizer names: every consumer of a name reads :data:`ALIASES`.

An alias is a factory ``name(lr, …, weight_decay, …) -> Optimizer`` that builds a
:func:`~dyntools.optim.transforms.chain`, registered by decorating it with :func:`alias`::

    @alias(torch="AdamW")
    def adamw(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False): ...

The decorator records, in that one place, what the other places need:

=====================================  =======================================================================
reader                                 what it takes from the alias
=====================================  =======================================================================
``optimizers.make`` / ``FACTORIES``    the factory, by its name
``dt.adamw``, ``dt.optim.adamw``       the factory (``dyntools/__init__.py`` and ``optim/__init__.py``)
``torch_names``                        :attr:`Alias.torch`, the ``torch.optim`` class (``None``: PyTorch has none)
``dyntools sweep adamw-grid``          the name as an ``--optimizers`` choice; :attr:`Alias.lr_range`, the
                                       default log-spaced lr axis of its heatmap rows (the weight-decay axis,
                                       ``--wd-grid``, is one for every optimizer of a grid);
                                       :attr:`Alias.grid_momentum`, whether ``--momentum`` reaches it
the docs' optimizer list               the first paragraph of the factory's docstring (:attr:`Alias.summary`)
=====================================  =======================================================================

The rule for a new alias that names no lr range: Adam's, lr ∈ [1e-4, 1e-1] (:data:`DEFAULT_LR_RANGE`), as for
a user's optimizer given by reference.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

#: The heatmap's default lr axis of an alias that names none (and of a user's optimizer): Adam's.
DEFAULT_LR_RANGE = (1e-4, 1e-1)


@dataclass(frozen=True)
class Alias:
    """One optimizer name and what every reader of the name needs.

    Parameters
    ----------
    name : str
        The name (``make(name)``, ``--optimizers name``, ``dt.name``): the factory's ``__name__``.
    factory : callable
        ``factory(lr, …, weight_decay=…) -> Optimizer``.
    torch : str or None
        The ``torch.optim`` class it matches, or ``None`` when PyTorch has none.
    lr_range : (float, float)
        The default log-spaced learning-rate axis of its rows in ``dyntools sweep adamw-grid``.
    grid_momentum : bool
        Whether the sweep's ``--momentum`` is passed to the factory (SGD's and SGDW's).
    """

    name: str
    factory: Callable
    torch: str | None = None
    lr_range: tuple[float, float] = DEFAULT_LR_RANGE
    grid_momentum: bool = False

    @property
    def summary(self) -> str:
        """The first paragraph of the factory's docstring, on one line (the docs' list)."""
        doc = inspect.getdoc(self.factory) or ""
        return " ".join(doc.split("\n\n")[0].split())


class _Table(Mapping):
    """The aliases by name, in the order they were declared (read-only outside :func:`alias`)."""

    def __init__(self):
        self._rows: dict[str, Alias] = {}

    def __getitem__(self, name: str) -> Alias:
        return self._rows[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, row: Alias) -> None:
        if row.name in self._rows and self._rows[row.name].factory is not row.factory:
            raise ValueError(f"Invalid alias: {row.name!r} is already the optimizer "
                             f"{self._rows[row.name].factory.__module__}.{row.name}")
        self._rows[row.name] = row


#: Every optimizer name: name → :class:`Alias`.
ALIASES = _Table()


class FactoryView(Mapping):
    """``name → factory`` read through :data:`ALIASES` (so an alias declared later is in it too)."""

    def __getitem__(self, name: str) -> Callable:
        return ALIASES[name].factory

    def __iter__(self) -> Iterator[str]:
        return iter(ALIASES)

    def __len__(self) -> int:
        return len(ALIASES)

    def __repr__(self) -> str:
        return f"FACTORIES({', '.join(ALIASES)})"


def _range(what: str, rng) -> tuple[float, float]:
    lo, hi = (float(v) for v in rng)
    if not 0 < lo <= hi < float("inf"):
        raise ValueError(f"Invalid {what}: {rng!r} (expected 0 < LOW <= HIGH)")
    return lo, hi


def alias(*, torch: str | None = None, lr_range=DEFAULT_LR_RANGE,
          grid_momentum: bool = False) -> Callable[[Callable], Callable]:
    """Declare the decorated factory an optimizer name (:class:`Alias`); returns the factory unchanged.

    Parameters
    ----------
    torch : str, optional
        The ``torch.optim`` class the factory matches (None: PyTorch has none; the name table says so).
    lr_range : pair of float, default DEFAULT_LR_RANGE
        The learning-rate range of its ``dyntools sweep adamw-grid`` heatmaps (log-spaced, ``lo < hi``, both > 0).
    grid_momentum : bool, default False
        Whether the grid's ``--momentum`` option reaches the factory (SGD-like optimizers).

    Returns
    -------
    callable
        A decorator that registers the factory under its function name.
    """
    lr_range = _range("lr_range", lr_range)

    def register(factory: Callable) -> Callable:
        ALIASES.add(Alias(factory.__name__, factory, torch, lr_range, bool(grid_momentum)))
        return factory

    return register
