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
    dt.ClaimFamily(name, order=…)                                  # declare a family in a plugin module
    dt.builtin_claims(names, controls=…), dt.claim_families()      # the claims of proofs/ and plugins
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
    dt.sgd, dt.sgdw, dt.adam, dt.adamw, dt.adagrad, dt.rmsprop, …   # optimizers: every alias of dt.optim.ALIASES
    dt.schedules, dt.metrics, dt.data                              # schedules, measurements and data sets

Names are imported on first use, so ``import dyntools`` stays light (no numba, no sympy).
"""

from __future__ import annotations

import importlib

from dyntools.engine.result import RunResult as RunResult
from dyntools.store import save as save
from dyntools.version import __version__ as __version__

#: public name → (module, attribute or None for the module itself)
_LAZY = {
    "load": ("dyntools.plugins", "load_result"),   # every experiment's result schema known
    "plot": ("dyntools.plugins", "plot_result"),   # every figure of a result, by the plotter its kind declares
    "train": ("dyntools.dynamics.train", "train"),
    "prove": ("dyntools.symbolic.api", "prove"),
    "Claim": ("dyntools.symbolic.core", "Claim"),
    "ClaimFamily": ("dyntools.symbolic.registry", "ClaimFamily"),
    "IntervalCheck": ("dyntools.symbolic.interval", "IntervalCheck"),
    "unroll": ("dyntools.symbolic.unroll", "unroll"),
    "load_claims": ("dyntools.symbolic.userfile", "load_claims"),
    "grade": ("dyntools.autograder", "grade"),
    "builtin_claims": ("dyntools.claims", "builtin_claims"),
    "claim_families": ("dyntools.claims", "claim_families"),
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
    "VoronoiLadder": ("dyntools.models.voronoi", "VoronoiLadder"),
    "VoronoiMLP": ("dyntools.models.voronoi_mlp", "VoronoiMLP"),
    "ResNet": ("dyntools.models.resnet", "ResNet"),
    "Transformer": ("dyntools.models.transformer", "Transformer"),
    "adamw_decay": ("dyntools.optim.decay_groups", "adamw_decay"),
    "Surface": ("dyntools.models.surfaces", "Surface"),
    "trajectories": ("dyntools.dynamics.trajectories", None),
    "Optimizer": ("dyntools.optim", "Optimizer"),
}
#: the names every public name list starts with; the optimizers follow (:func:`_optimizers`)
_EAGER = ["RunResult", "save", "__version__"]


def _optimizers() -> list[str]:
    """Every optimizer name (``dt.adamw``, ``dt.sgd``, …): the alias table, :data:`dyntools.optim.ALIASES`."""
    return list(importlib.import_module("dyntools.optim").ALIASES)


def __getattr__(name: str):
    if name == "__all__":                     # the optimizers are read from their table on first use
        value = [*_EAGER, *_LAZY, *_optimizers()]
    elif name in _LAZY:
        module, attr = _LAZY[name]
        value = importlib.import_module(module)
        value = value if attr is None else getattr(value, attr)
    elif not name.startswith("_") and name in _optimizers():
        value = getattr(importlib.import_module("dyntools.optim"), name)
    else:
        raise AttributeError(f"module 'dyntools' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_optimizers()))
