"""Generate the PyTorch goldens of the convolutional ResNet (tests/test_resnet.py).

Run once with torch importable next to dyntools' own dependencies (torch is not a dyntools dependency), e.g.
a private torch venv's packages appended to the dev venv's path::

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    TORCH_SITE=/tmp/torchvenv/lib/python3.11/site-packages PYTHONPATH=. python tests/goldens/make_resnet_goldens.py

It writes ``tests/goldens/resnet_torch.npz`` (float64 throughout; the torch version inside). dyntools draws
the inputs — θ₀ from :meth:`dyntools.models.resnet.ResNet.init`, the first digits images, the minibatches —
and the network of :mod:`dyntools.bench.torch_resnet` (``nn.Conv2d``, ``F.relu``, mean pooling,
``nn.Linear``, ``F.cross_entropy``; gradients by autograd) computes on them:

* ``<case>/loss``, ``<case>/grad``: the mean cross-entropy of a batch and its gradient at θ₀ (dyntools' flat
  layout = torch's ``named_parameters`` order);
* ``<case>/thetas``, ``<case>/losses``: θ after each of a few ``torch.optim.SGD`` steps on the given batches,
  and the loss before each step.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("resnet_torch.npz")
#: channels, blocks, classes, examples, batch, SGD steps, learning rate, init seed, input standardization
CASES = [
    {"name": "c3b2", "channels": 3, "blocks": 2, "classes": 10, "n": 24, "batch": 8, "steps": 4, "lr": 0.1,
     "seed": 3, "mean": 0.3, "std": 0.4},
    {"name": "c2b1", "channels": 2, "blocks": 1, "classes": 4, "n": 12, "batch": 5, "steps": 3, "lr": 0.5,
     "seed": 5, "mean": 0.0, "std": 1.0},
]


def main() -> None:
    if os.environ.get("TORCH_SITE"):
        sys.path.append(os.environ["TORCH_SITE"])
    import torch

    from dyntools.bench import torch_resnet as tr
    from dyntools.data import digits
    from dyntools.models.resnet import ResNet

    torch.set_num_threads(1)
    d = digits(seed=0)
    out = {"meta": np.array(json.dumps({"torch": torch.__version__, "cases": CASES}))}
    for case in CASES:
        C, B, K, n, b = (case[k] for k in ("channels", "blocks", "classes", "n", "batch"))
        model = ResNet(C, B, K, input_mean=case["mean"], input_std=case["std"])
        theta0 = model.init(case["seed"])
        theta0[model.n_params - K:] = np.random.default_rng(case["seed"]).normal(0, 0.1, K)   # head bias ≠ 0
        X, y = d.X[:n], d.y[:n] % K
        batches = np.random.default_rng(case["seed"] + 1).integers(0, n, (case["steps"], b))
        net = tr.build(C, B, K, theta0, case["mean"], case["std"])
        loss, grad = tr.loss_and_grad(net, X[batches[0]], y[batches[0]])
        opt = torch.optim.SGD(net.parameters(), lr=case["lr"])
        thetas, losses = [], []
        for idx in batches:
            losses.append(tr.loss_and_grad(net, X[idx], y[idx])[0])
            opt.step()
            thetas.append(tr.get_theta(net))
        name = case["name"]
        out.update({f"{name}/theta0": theta0, f"{name}/X": X, f"{name}/y": y, f"{name}/batches": batches,
                    f"{name}/loss": np.array(loss), f"{name}/grad": grad, f"{name}/thetas": np.array(thetas),
                    f"{name}/losses": np.array(losses)})
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
