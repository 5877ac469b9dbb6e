"""dyntools: theory and dynamics of optimization in deep learning.

Symbolic derivations checked by a machine (:mod:`dyntools.symbolic`, ``proofs/``), numba
simulators of the stochastic dynamics (:mod:`dyntools.dynamics`, :mod:`dyntools.models`),
optimizers with PyTorch semantics (:mod:`dyntools.optim`), and figures (:mod:`dyntools.plots`).

The public API, ``import dyntools as dt``::

    dt.train(model, data, optimizer, *, steps, schedule, batch, sampler, label_noise, record_steps, seed, …)
    dt.solve(sde, x0, *, t1, h, paths, scheme, seed, …)          # SDEs (Euler–Maruyama / Milstein)
    dt.sde_models.gbm, .ou, .toy_sde, .simulate_diag_net, …       # built-in SDEs, exact moments, label noise
    dt.label_noise_match.matching_delta, .mlp_label_noise_sde      # SGD ≈ GD with label noise: the matched δ
    dt.prove(claims)                                               # exact verdicts of symbolic claims
    dt.Claim, dt.IntervalCheck, dt.unroll, dt.load_claims          # write, certify, unroll, load claims
    dt.builtin_claims(names, controls=…), dt.claim_families()      # the claims of proofs/
    dt.grade("student.py")                                         # the problem set's autograder (Adam, AdamW)
    dt.load(dir), dt.save(result, dir), dt.RunResult               # results on disk
    dt.DiagNet, dt.MLP, dt.QuadraticToy, dt.ToyModel, dt.Model     # models (dt.models: every module)
    dt.SymbolicModel(h, params, inputs, …)                         # your own model from a sympy expression
    dt.model_claims.gradient_claim / fixed_point_claim / sde_drift_claim   # claims about that model
    dt.VoronoiLadder, dt.data.voronoi, dt.adamw_decay              # seed 000's ladder, environment, decays
    dt.VoronoiMLP                                                  # the ladder's unstructured MLP baseline
    dt.ResNet(channels, blocks, n_classes)                         # a small convolutional ResNet (8×8 images)
    dt.Transformer(vocab, seq_len, n_classes, d_model=…, heads=…)   # a small pre-norm transformer (token sequences)
    dt.toy_data(toy)                                               # the toy's samples as a training set
    dt.Surface(name), dt.trajectories.gallery(…)                   # 2-D surfaces; the optimizer trajectory gallery
    dt.sgd, dt.sgdw, dt.adam, dt.adamw, dt.adagrad, dt.rmsprop, …   # optimizers; dt.schedules
    dt.metrics, dt.data                                            # measurements and data sets

Names are imported on first use, so ``import dyntools`` stays light (no numba, no sympy).
"""

from __future__ import annotations

import importlib

from dyntools.version import __version__


def _checkout_folders() -> None:
    """Make the repository's ``simulations/`` and ``proofs/`` importable as ``dyntools.simulations`` and
    ``dyntools.proofs`` when dyntools runs from a source checkout.

    Installed, setuptools puts the two folders inside the package (``setup.py``: package-dir), so they are
    found as any subpackage and nothing here runs; no top-level ``simulations``/``proofs`` is installed.
    In a checkout (the repository's root on ``sys.path``) they sit next to the package: their ``__init__``
    is registered under the package's name (both are empty, so this costs nothing)."""
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("simulations", "proofs"):
        folder = os.path.join(os.path.dirname(here), name)
        full = f"{__name__}.{name}"
        if full in sys.modules or os.path.isdir(os.path.join(here, name)) \
                or not os.path.isfile(os.path.join(folder, "__init__.py")):
            continue
        spec = importlib.util.spec_from_file_location(full, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        globals()[name] = module


_checkout_folders()

from dyntools.engine.result import RunResult  # noqa: E402
from dyntools.store import save  # noqa: E402

#: public name → (module, attribute or None for the module itself)
_LAZY = {
    "load": ("dyntools.plugins", "load_result"),   # every experiment's result schema known
    "plot": ("dyntools.plugins", "plot_result"),   # every figure of a result, by the plotter its kind declares
    "train": ("dyntools.dynamics.train", "train"),
    "prove": ("dyntools.symbolic.api", "prove"),
    "Claim": ("dyntools.symbolic.core", "Claim"),
    "IntervalCheck": ("dyntools.symbolic.interval", "IntervalCheck"),
    "unroll": ("dyntools.symbolic.unroll", "unroll"),
    "load_claims": ("dyntools.symbolic.userfile", "load_claims"),
    "grade": ("dyntools.autograder", "grade"),
    "builtin_claims": ("dyntools.commands.prove", "builtin_claims"),
    "claim_families": ("dyntools.commands.prove", "claim_families"),
    "solve": ("dyntools.dynamics.sde", "solve"),
    "SDE": ("dyntools.dynamics.sde", "SDE"),
    "sde_models": ("dyntools.dynamics.sde_models", None),
    "label_noise_match": ("dyntools.dynamics.label_noise_match", None),
    "Model": ("dyntools.models.base", "Model"),
    "SymbolicModel": ("dyntools.models.symbolic", "SymbolicModel"),
    "model_claims": ("dyntools.symbolic.model_claims", None),
    "DiagNet": ("dyntools.models.diag_net", "DiagNet"),
    "MLP": ("dyntools.models.mlp", "MLP"),
    "QuadraticToy": ("dyntools.models.quadratic_toy", "QuadraticToy"),
    "ToyModel": ("dyntools.models.quadratic_toy", "ToyModel"),
    "toy_data": ("dyntools.models.quadratic_toy", "toy_data"),
    "optim": ("dyntools.optim", None),
    "schedules": ("dyntools.optim.schedules", None),
    "metrics": ("dyntools.metrics", None),
    "data": ("dyntools.data", None),
    "models": ("dyntools.models", None),
    "model_metrics": ("dyntools.model_metrics", "model_metrics"),
    "plots": ("dyntools.plots", None),
    "data_voronoi": ("dyntools.data.voronoi", None),        # its name before dyntools/data/ was a package
    "VoronoiLadder": ("dyntools.models.voronoi", "VoronoiLadder"),
    "VoronoiMLP": ("dyntools.models.voronoi_mlp", "VoronoiMLP"),
    "ResNet": ("dyntools.models.resnet", "ResNet"),
    "Transformer": ("dyntools.models.transformer", "Transformer"),
    "adamw_decay": ("dyntools.optim.decay_groups", "adamw_decay"),
    "Surface": ("dyntools.models.surfaces", "Surface"),
    "trajectories": ("dyntools.dynamics.trajectories", None),
    **{name: ("dyntools.optim", name) for name in ("sgd", "sgdw", "adam", "adamw", "adamw_l1", "adamw_l1l2",
                                                   "adagrad", "rmsprop", "rmsprop_bc", "Optimizer")},
}

__all__ = ["RunResult", "save", "__version__", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'dyntools' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = importlib.import_module(module)
    value = value if attr is None else getattr(value, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
