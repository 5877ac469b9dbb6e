"""Grokking on modular arithmetic: the task, the networks, the three optimizers, the training and the decay rule.

The pieces ``dyntools simulate grokking`` and ``dyntools sweep grokking`` (``simulations/grokking.py``,
``simulations/grokking_sweep.py``) share, so that a sweep cell is bitwise the path of a simulation:

* the task ``c = a ∘ b mod p`` on a fraction of the ``p²`` pairs (:func:`datasets`, seed index ``s`` its split);
* the network (:func:`network`): the MLP ``2p → m → p`` without biases on one-hot pairs, or the small
  transformer on the tokens ``a b =``;
* AdamW (decoupled decay ``θ ← θ − η (m̂/(√v̂ + ε) + λ w ⊙ θ)``, ``w`` the decay mask), Adam+L2 (``g + λθ``
  before the preconditioner) and Adam (:func:`optimizers`), trained full batch (:func:`train_runs`);
* the metrics at the recorded steps (:func:`measure`, :func:`first_step`);
* the rule (:func:`decay_verdict`): k/n seeds generalize with decay against k'/n without, *shown* when the 95 %
  Wilson intervals are disjoint the claim's way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools.params import param

MODELS = ("mlp", "transformer")
RUNS = ("AdamW", "Adam+L2", "Adam")
OPS = ("+", "-", "*")
TASK, NET, RUN = "task", "network", "training"
METRICS = ("train_acc", "test_acc", "train_loss", "test_loss", "weight_norm")
SHOWN, NOT_SHOWN, CONTRADICTED = "shown", "not shown", "contradicted"
BETAS = (0.9, 0.98)        # Power et al.'s betas


@dataclass(frozen=True)
class GrokkingTask:
    """The task, network and training shared by ``simulate grokking`` and ``sweep grokking``."""

    model: str = param("mlp", choices=MODELS, group=NET,
                       help="network: the MLP on one-hot pairs, or the small transformer on the tokens 'a b ='")
    p: int = param(23, low=3, high=113, group=TASK, help="modulus p (the table has p² pairs)")
    op: str = param("+", choices=OPS, group=TASK, help="operation: a+b, a-b or a*b mod p")
    width: int = param(128, low=1, high=4096, group=NET, help="hidden width m of the MLP")
    d_model: int = param(32, low=2, high=512, group=NET, help="transformer: embedding width")
    heads: int = param(4, low=1, high=64, group=NET, help="transformer: attention heads (dividing d-model)")
    layers: int = param(1, low=1, high=2, group=NET, help="transformer: pre-norm blocks")
    steps: int = param(3_000, low=10, high=10**7, group=RUN, help="full-batch steps (the budget)")
    lr: float = param(1e-2, low=0.0, low_open=True, group=RUN, help="learning rate η of every optimizer")
    records: int = param(30, low=4, high=10**4, group=RUN, help="recorded steps (log grid)")
    threshold: float = param(0.95, low=0.0, high=1.0, low_open=True, group=RUN,
                             help="test accuracy that counts as generalized in the verdict and the phase diagram")


def check_grid(p, decays: str, fractions: str, all_fractions) -> None:
    """The checks ``simulate`` and ``sweep grokking`` share: λ values and fractions increasing (named by the
    options ``decays``/``fractions``), heads dividing d_model, every fraction leaving pairs on both sides."""
    if list(getattr(p, decays)) != sorted(set(getattr(p, decays))):
        raise ValueError(f"Invalid {decays}: must be increasing")
    if list(getattr(p, fractions)) != sorted(set(getattr(p, fractions))):
        raise ValueError(f"Invalid {fractions}: must be increasing")
    if p.model == "transformer" and p.d_model % p.heads:
        raise ValueError(f"Invalid heads: {p.heads} (must divide d_model = {p.d_model})")
    for frac in all_fractions:
        n = int(round(frac * p.p * p.p))
        if not 1 <= n < p.p * p.p:
            raise ValueError(f"Invalid train_fraction: {frac} leaves {n} of {p.p * p.p} pairs for training")



def network(p):
    """The MLP ``2p → m → p`` without biases, or the transformer (module docstring)."""
    if p.model == "transformer":
        from dyntools.models.transformer import Transformer

        return Transformer(vocab=p.p + 1, seq_len=3, n_classes=p.p, d_model=p.d_model, heads=p.heads,
                           layers=p.layers)
    from dyntools.models.mlp import MLP

    return MLP((2 * p.p, p.width, p.p), biases=False, head="cross-entropy", init="gaussian",
               init_scales=[np.sqrt(0.5), np.sqrt(1.0 / p.width)], sparse_inputs=True)


def decay_mask(model) -> np.ndarray:
    """1 on the parameters that decay, 0 on the others: the model's own groups (the transformer's norms and
    biases are not decayed), all ones for the bias-free MLP."""
    return model.decay_mask() if hasattr(model, "decay_mask") else np.ones(model.n_params)


def optimizers(p, model, decay: float | None = None) -> list:
    """``[AdamW, Adam+L2, Adam]`` at learning rate ``p.lr`` and λ = ``decay`` (default ``p.weight_decay``)."""
    from dyntools.optim import optimizers as O
    from dyntools.optim.decay_groups import adamw_decay

    lam = p.weight_decay if decay is None else decay
    mask = decay_mask(model)
    adamw = adamw_decay("l2", p.lr, BETAS, 1e-8, lam, weights=mask) if not mask.all() \
        else O.adamw(p.lr, BETAS, 1e-8, lam)
    return [adamw, O.adam(p.lr, BETAS, 1e-8, weight_decay=lam), O.adam(p.lr, BETAS, 1e-8)]


def datasets(p, fraction: float, seeds: int, seed: int, indices=None) -> list:
    """One split of the table per seed index, ``range(seeds)`` or ``indices`` (the encoding the network reads)."""
    from dyntools.data.modular import modular_arithmetic

    encoding = "tokens" if p.model == "transformer" else "one-hot"
    return [modular_arithmetic(p.p, p.op, fraction, encoding=encoding, seed=seed, index=s)
            for s in (range(seeds) if indices is None else indices)]


def first_step(acc: np.ndarray, steps: np.ndarray, level: float) -> np.ndarray:
    """The first recorded step with ``acc ≥ level`` along the last axis (−1 where never; NaN never counts)."""
    hit = np.nan_to_num(acc, nan=-1.0) >= level
    return np.where(hit.any(axis=-1), steps[np.argmax(hit, axis=-1)], -1)


def measure(model, theta_rec: np.ndarray, data: list) -> dict:
    """:data:`METRICS` at every recording of every path: ``theta_rec`` (G, S, K, p), ``data`` one set per seed."""
    G, S, K = theta_rec.shape[:3]
    out = {k: np.full((G, S, K), np.nan) for k in METRICS}
    for g in range(G):
        for s in range(S):
            d = data[s]
            for k in range(K):
                th = theta_rec[g, s, k]
                if not np.all(np.isfinite(th)):
                    continue
                out["train_loss"][g, s, k], out["train_acc"][g, s, k] = model.evaluate(th, d.X, d.y)
                out["test_loss"][g, s, k], out["test_acc"][g, s, k] = model.evaluate(th, d.X_val, d.y_val)
                out["weight_norm"][g, s, k] = float(np.linalg.norm(th))
    return out


def train_runs(p, model, data: list, opts: list, seed: int, key: tuple, record_steps,
               indices=None, part: int = 0) -> dict:
    """Full-batch training of every optimizer of ``opts`` from the inits of the seed indices ``indices``
    (default ``0 … len(data) − 1``; ``data[i]`` is index ``indices[i]``'s split) → ``theta`` (G, S, K, p) and
    ``diverged_at`` (G, S). An AdamW with decay groups keeps its mask in its state, so it cannot share a
    :func:`dyntools.train` call with optimizers without one: mixed lists are trained one optimizer per call,
    call ``j`` under the stream key ``(*key, part + j)``."""
    from dyntools.dynamics.train import train

    theta0 = np.stack([model.init(seed, s) for s in (range(len(data)) if indices is None else indices)])
    grouped = ["decay_weights" in o.options for o in opts]
    parts = [opts] if len(set(grouped)) == 1 else [[o] for o in opts]
    thetas, diverged = [], []
    for j, group in enumerate(parts):
        res = train(model, data, group, steps=p.steps, sampler="full", record_steps=record_steps, seed=seed,
                       theta0=theta0, stream_key=(*key, part + j), workers=p.workers)
        thetas.append(res["theta"])
        diverged.append(res["diverged_at"])
    return {"theta": np.concatenate(thetas), "diverged_at": np.concatenate(diverged)}


def describe_network(p) -> str:
    if p.model == "transformer":
        return (f"transformer ({p.layers} pre-norm block(s), width {p.d_model}, {p.heads} heads) on the tokens "
                f"'a b ='")
    return f"MLP {2 * p.p}-{p.width}-{p.p} (ReLU, no biases) on one-hot pairs"


# ------------------------------------------------------------------------------------ the verdict

def n_needed(q1: float, q0: float, limit: int = 1000) -> int | None:
    """The smallest n at which proportions ``q1 > q0`` (k = round(q n)) give disjoint Wilson intervals, or
    ``None`` (no such n ≤ ``limit``, e.g. equal proportions)."""
    from dyntools.verdicts import wilson_interval

    for n in range(1, limit + 1):
        k1, k0 = round(q1 * n), round(q0 * n)
        if k1 > k0 and wilson_interval(k1, n)[0] > wilson_interval(k0, n)[1]:
            return n
    return None


def decay_verdict(k_decay: int, k_none: int, n: int) -> dict:
    """The rule of the module docstring on ``k_decay``/n (decoupled decay) and ``k_none``/n (no decay): the word
    of :func:`dyntools.verdicts.fraction_larger` (disjoint Wilson 95 % intervals); when not shown, the seeds per
    optimizer that would make the observed proportions disjoint — only when decay is ahead (the claim's way)."""
    from dyntools.verdicts import fraction_larger, wilson_interval

    lo1, hi1 = wilson_interval(k_decay, n)
    lo0, hi0 = wilson_interval(k_none, n)
    word, note = fraction_larger(k_decay, n, k_none, n).word, ""
    if word == NOT_SHOWN:
        need = n_needed(k_decay / n, k_none / n) if n and k_decay > k_none else None
        note = (f"underpowered: n needed ≈ {need}" if need is not None and need > n else
                "the two proportions do not differ" if k_decay == k_none else
                "decay is behind on these seeds" if k_decay < k_none else "")
    return {"word": word, "note": note, "k_decay": int(k_decay), "k_none": int(k_none), "n": int(n),
            "ci_decay": [lo1, hi1], "ci_none": [lo0, hi0]}

