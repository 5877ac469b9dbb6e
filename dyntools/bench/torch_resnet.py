"""The convolutional ResNet of :mod:`dyntools.models.resnet` written in PyTorch: the anchor that ``dyntools bench
deep-nets`` times an epoch against, and the reference its committed goldens come from
(``tests/goldens/make_resnet_goldens.py``).

PyTorch is an optional benchmark anchor, never a dependency: this module imports only NumPy and (inside its
functions) ``torch``, so that a Python with torch but without numba can run it on a θ written by dyntools:

    python -m dyntools.bench.torch_resnet [--threads 1] [--epochs 3]

prints the seconds per epoch of minibatch SGD (float64, the ``--arch resnet`` network and batch) on
random 8×8 images as one JSON line.

The network, with the flat parameter vector θ in PyTorch's ``named_parameters`` order (the layout of
:mod:`dyntools.models.resnet`): ``x̃ = (x − μ)/s``, ``a_0 = relu(stem(x̃))``, per block ``u = relu(conv1(a))``,
``a = relu(a + conv2(u))``, ``g = mean over the 8×8 positions of a``, ``z = head(g)``; every convolution
``nn.Conv2d(c_in, C, 3, padding=1)``; the loss ``F.cross_entropy`` (mean over the batch).
"""

from __future__ import annotations

import json
import time

import numpy as np

#: the ``--arch resnet`` network and batch of ``dyntools simulate deep-nets`` (a test pins them)
CHANNELS, BLOCKS, CLASSES, BATCH, N_TRAIN = 8, 2, 10, 8, 1258


def build(channels: int, blocks: int, n_classes: int, theta=None, mean: float = 0.0, std: float = 1.0):
    """The network as a float64 ``torch.nn.Module`` (weights copied from ``theta`` when given)."""
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

        def forward(self, a):
            return F.relu(a + self.conv2(F.relu(self.conv1(a))))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(1, channels, 3, padding=1)
            self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
            self.head = nn.Linear(channels, n_classes)

        def forward(self, x):
            a = F.relu(self.stem(((x - mean) / std).reshape(-1, 1, 8, 8)))
            for block in self.blocks:
                a = block(a)
            return self.head(a.mean(dim=(2, 3)))

    net = ResNet().double()
    if theta is not None:
        set_theta(net, theta)
    return net


def set_theta(net, theta) -> None:
    """Copy the flat ``theta`` into ``net``'s parameters, in ``named_parameters`` order."""
    import torch

    theta = np.asarray(theta, dtype=np.float64)
    pos = 0
    with torch.no_grad():
        for _, par in net.named_parameters():
            par.copy_(torch.from_numpy(theta[pos:pos + par.numel()].reshape(par.shape)))
            pos += par.numel()
    if pos != theta.size:
        raise ValueError(f"Invalid theta: {theta.size} entries, the network has {pos}")


def get_theta(net) -> np.ndarray:
    """The flat parameter vector of ``net`` (``named_parameters`` order)."""
    return np.concatenate([par.detach().numpy().ravel() for _, par in net.named_parameters()])


def get_grad(net) -> np.ndarray:
    """The flat gradient of ``net`` (``named_parameters`` order)."""
    return np.concatenate([par.grad.detach().numpy().ravel() for _, par in net.named_parameters()])


def loss_and_grad(net, X, y) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of ``(X, y)`` and its gradient (autograd)."""
    import torch
    from torch.nn import functional as F

    net.zero_grad()
    loss = F.cross_entropy(net(torch.from_numpy(np.asarray(X, dtype=np.float64))), torch.from_numpy(np.asarray(y)))
    loss.backward()
    return float(loss.item()), get_grad(net)


def sgd_epoch(net, X, y, batch: int, lr: float, rng) -> None:
    """One shuffled epoch of plain minibatch SGD (``torch.optim.SGD``): ⌊n/b⌋ full batches, the rest of the
    permutation dropped (as :func:`dyntools.train`'s epoch sampler does)."""
    import torch
    from torch.nn import functional as F

    Xt, yt = torch.from_numpy(np.asarray(X, dtype=np.float64)), torch.from_numpy(np.asarray(y, dtype=np.int64))
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    perm = torch.from_numpy(rng.permutation(len(yt)))
    for start in range(0, len(yt) - batch + 1, batch):
        idx = perm[start:start + batch]
        opt.zero_grad()
        F.cross_entropy(net(Xt[idx]), yt[idx]).backward()
        opt.step()


def epoch_seconds(threads: int = 1, epochs: int = 3, *, channels: int = CHANNELS, blocks: int = BLOCKS,
                  batch: int = BATCH, n: int = N_TRAIN) -> dict:
    """Best of ``epochs`` timed SGD epochs (after one warm-up epoch) on ``n`` random 8×8 images, with
    ``threads`` intra-op threads."""
    import torch

    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    X, y = rng.random((n, 64)), rng.integers(0, CLASSES, n)
    net = build(channels, blocks, CLASSES, mean=0.3, std=0.4)
    sgd_epoch(net, X, y, batch, 0.02, rng)
    best = np.inf
    for _ in range(epochs):
        start = time.perf_counter()
        sgd_epoch(net, X, y, batch, 0.02, rng)
        best = min(best, time.perf_counter() - start)
    return {"torch": torch.__version__, "threads": threads, "channels": channels, "blocks": blocks, "batch": batch,
            "n": n, "seconds_per_epoch": best}


def main(argv=None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="seconds per SGD epoch of the deep-nets ResNet in PyTorch (CPU)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args(argv)
    print(json.dumps(epoch_seconds(args.threads, args.epochs)))


if __name__ == "__main__":
    main()
