"""Your own optimizer by reference: ``"package.module:NAME"`` or ``"/path/to/file.py:NAME"``.

A sweep cell runs in another process (a local worker or a Dask worker), so it cannot receive the
optimizer object itself: it receives this reference, recorded in the sweep's config, and rebuilds the
optimizer from it. ``NAME`` is a factory ``NAME(lr=..., weight_decay=...)`` returning a
:class:`dyntools.optim.Optimizer` (your own chain, :mod:`dyntools.optim.chain_step`). A module
reference must be importable where the cells run; a file reference is recorded as an absolute path
(for a Dask cluster on other machines, the file must be at that path there too).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path


def is_reference(name: str) -> bool:
    """Whether an optimizer name is a ``module:NAME`` / ``file.py:NAME`` reference (not a built-in name)."""
    return ":" in str(name)


def absolute(name: str, optimizer_file=None) -> str:
    """The reference to record: ``file.py:NAME`` with the file made absolute; a bare ``NAME`` with
    ``optimizer_file`` becomes ``<optimizer_file>:NAME``; anything else unchanged."""
    if optimizer_file is not None and not is_reference(name):
        from dyntools.optim import optimizers as O

        if name not in O.FACTORIES:
            name = f"{optimizer_file}:{name}"
    if is_reference(name):
        where, _, attr = str(name).rpartition(":")
        if where.endswith(".py"):
            return f"{os.path.realpath(Path(where).expanduser())}:{attr}"   # a link loop: 'no file' later
    return str(name)


def _module(where: str):
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"Invalid --optimizers: no file {where}")
        key = f"dyntools_user_optimizer_{abs(hash(str(path.resolve())))}"
        if key not in sys.modules:
            spec = importlib.util.spec_from_file_location(key, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[key] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[key]
                raise ValueError(f"Invalid --optimizers: {where} raised {type(exc).__name__}: {exc}") from None
        return sys.modules[key]
    try:
        return importlib.import_module(where)
    except ImportError as exc:
        raise ValueError(f"Invalid --optimizers: cannot import module {where!r} ({exc})") from None


def load(reference: str):
    """The factory a reference names (ValueError naming the reference when it does not resolve)."""
    where, _, attr = str(reference).rpartition(":")
    if not where or not attr:
        raise ValueError(f"Invalid --optimizers: {reference!r} (expected module:NAME or file.py:NAME)")
    factory = getattr(_module(where), attr, None)
    if not callable(factory):
        raise ValueError(f"Invalid --optimizers: {where} has no function {attr!r}")
    return factory


def build(reference: str, lr: float, weight_decay: float):
    """The optimizer ``factory(lr=lr, weight_decay=weight_decay)`` of a reference, checked."""
    from dyntools.optim import chain_step
    from dyntools.optim import optimizers as O

    opt = load(reference)(lr=lr, weight_decay=weight_decay)
    if not isinstance(opt, O.Optimizer):
        raise ValueError(f"Invalid --optimizers: {reference}(lr, weight_decay) returned {type(opt).__name__} "
                         "(expected a dyntools.optim.Optimizer)")
    chain_step.probe(opt)       # a compiled() kernel that does not step like its update(): refused before the sweep
    return opt
