"""A small diagonal-network run whose bits ``tests/test_reproducibility.py`` compares across processes.

Run as ``python tests/same_bits_probe.py`` (the repository on ``PYTHONPATH``); prints one JSON object:
the SHA-256 of the arrays of

* the generic loop of :func:`dyntools.dynamics.train.train` (``fast=False``, mini-batches of 3 with label
  noise: the model's compiled ``loss_grad``), 300 steps;
* the fused batch-1 SGD loop of :mod:`dyntools.dynamics.fast.diag_net`, 300 steps;
* the metrics kernels of :mod:`dyntools.dynamics.diag_net_sgd` on the recordings (factored losses and
  Jacobian ranks);

and, per cached kernel called from Python, whether this process compiled it or loaded it from numba's
cache (``cache_hits``/``cache_misses`` of its dispatcher; ``loss_grad`` is compiled or loaded when the
generic loop, which is not cached, links it) and numba's compile target.
"""

from __future__ import annotations

import hashlib
import json

import numba
import numpy as np

from dyntools import data
from dyntools.dynamics import diag_net_sgd
from dyntools.dynamics.fast import diag_net as fused
from dyntools.dynamics.train import train
from dyntools.models import diag_net
from dyntools.models.diag_net import DiagNet
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import PiecewiseDecay

D = 37          # not a multiple of the lane counts: the tails run too


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def main() -> dict:
    sets = [data.sparse_regression(24, D, 3, n_test=20, seed=1, stream_key=(i,)) for i in range(2)]
    kw = dict(steps=300, schedule=PiecewiseDecay((0.5,), (2.0,)), records=12, seed=3)
    generic = train(DiagNet(D), sets, O.sgd(0.07), batch=3, label_noise=0.05, fast=False, **kw)
    tuned = train(DiagNet(D), sets, [O.sgd(0.05), O.sgd(0.11)], **kw)
    assert generic.config["path"] == "generic" and tuned.config["path"] == "tuned"
    theta = tuned["theta"]
    P, K = theta.shape[0] * theta.shape[1], theta.shape[2]
    rec = theta.reshape(P, K, -1)
    u_rec, v_rec = np.ascontiguousarray(rec[:, :, :D]), np.ascontiguousarray(rec[:, :, D:])
    data_of = np.arange(P, dtype=np.int64) % len(sets)
    Xs = np.stack([s.X for s in sets])
    ranks = diag_net_sgd.jacobian_ranks(Xs, data_of, u_rec, v_rec, 1e-4)
    kernels = {"fused": fused._paths, "factored_losses": diag_net.factored_losses,
               "jacobian_ranks": diag_net_sgd.jacobian_ranks}
    return {
        "generic": digest(generic["theta"], generic["train_loss"], generic["diverged_at"]),
        "fused": digest(theta, tuned["train_loss"], tuned["diverged_at"]),
        "metrics": digest(ranks),
        "loaded": {name: sum(k.stats.cache_hits.values()) > 0 for name, k in kernels.items()},
        "compiled": {name: sum(k.stats.cache_misses.values()) > 0 for name, k in kernels.items()},
        "cpu_name": numba.config.CPU_NAME,
        "fused_loss": float(np.nansum(tuned["train_loss"])),
    }


if __name__ == "__main__":
    print(json.dumps(main()))
