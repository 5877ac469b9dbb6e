"""Generate the PyTorch goldens of the MLP with dropout and batch norm (tests/test_mlp_regularized_torch.py).

Run once with torch next to dyntools' own dependencies (torch is not a dyntools dependency), e.g. with a
private torch venv's packages on the path of the dev venv::

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    PYTHONPATH=.:/tmp/torchvenv/lib/python3.11/site-packages python tests/goldens/make_regularized_goldens.py

It writes ``tests/goldens/mlp_regularized_torch.npz`` (float64 throughout; the torch version inside).

The network is built in torch as the usual ``Linear → BatchNorm1d → ReLU → Dropout`` stack, written with
``torch.nn.functional`` so that the *same* keep masks can be fed to it: dyntools draws them (from the
``mlp.dropout`` stream, :func:`dyntools.models.mlp_regularized.draw_masks_np`) and torch applies them as
its dropout does, ``a · M · 1/(1 − p)``. Two kinds of case:

* ``pass/<name>``: one forward and backward pass at given parameters, inputs, masks and running statistics:
  the training-mode loss, gradient (in dyntools' flat layout), logits and the running statistics after
  ``BatchNorm1d``'s update; the evaluation-mode loss, gradient and logits.
* ``steps/<name>``: a few Adam or AdamW steps from θ₀ on replayed minibatches, the masks drawn as
  :func:`dyntools.train`'s loop draws them (the stream of path 0, mask after mask): θ after every step
  and the final running statistics.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("mlp_regularized_torch.npz")

#: one forward/backward pass: widths, head, dropout, batch norm, biases per layer, batch size
PASS_CASES = [
    {"name": "ce-dropout", "widths": [3, 7, 6, 4], "head": "cross-entropy", "dropout": 0.25, "batch_norm": False,
     "biases": [True, True, True], "batch": 9},
    {"name": "ce-batchnorm", "widths": [3, 7, 6, 4], "head": "cross-entropy", "dropout": 0.0, "batch_norm": True,
     "biases": [True, True, True], "batch": 9},
    {"name": "ce-both", "widths": [2, 8, 5, 3], "head": "cross-entropy", "dropout": 0.3, "batch_norm": True,
     "biases": [False, True, True], "batch": 10},
    {"name": "regression-both", "widths": [3, 6, 5, 1], "head": "regression", "dropout": 0.2, "batch_norm": True,
     "biases": [True, True, True], "batch": 8},
]
#: a few optimizer steps (batch norm layers without the bias it makes redundant: its gradient is rounding
#: noise, which Adam's normalization would amplify into differences of the last bits' size times lr)
STEP_CASES = [
    {"name": "adam-both", "widths": [2, 8, 6, 3], "head": "cross-entropy", "dropout": 0.2, "batch_norm": True,
     "biases": [False, False, True], "batch": 8, "optimizer": "Adam",
     "kwargs": {"lr": 0.01, "weight_decay": 0.01}, "steps": 6},
    {"name": "adamw-both", "widths": [2, 8, 6, 3], "head": "cross-entropy", "dropout": 0.2, "batch_norm": True,
     "biases": [False, False, True], "batch": 8, "optimizer": "AdamW",
     "kwargs": {"lr": 0.01, "weight_decay": 0.1}, "steps": 6},
    {"name": "adamw-dropout", "widths": [2, 8, 6, 3], "head": "cross-entropy", "dropout": 0.3, "batch_norm": False,
     "biases": [True, True, True], "batch": 8, "optimizer": "AdamW",
     "kwargs": {"lr": 0.01, "weight_decay": 0.1}, "steps": 6},
]
N = 24          # examples of each case's data set
SEED = 7        # the dropout stream's seed of the step cases (dyntools.train(..., seed=SEED))
MOMENTUM, EPS = 0.1, 1e-5


def case_model(case):
    """The dyntools MLP of a case."""
    from dyntools.models.mlp import MLP

    return MLP(tuple(case["widths"]), head=case["head"], biases=tuple(case["biases"]), dropout=case["dropout"],
               batch_norm=case["batch_norm"], bn_momentum=MOMENTUM, bn_eps=EPS)


def case_inputs(case, k: int):
    """θ (random weights, γ ≈ 1, β ≈ 0 perturbed), X, y, running statistics (means, variances > 0)."""
    model = case_model(case)
    gen = np.random.default_rng(1000 + k)
    theta = 0.6 * gen.standard_normal(model.n_params)
    for gamma, beta in model.bn_params(theta):
        gamma[:] = 1.0 + 0.3 * gen.standard_normal(gamma.size)
        beta[:] = 0.2 * gen.standard_normal(beta.size)
    X = gen.standard_normal((N, case["widths"][0]))
    if case["head"] == "regression":
        y = gen.standard_normal(N)
    else:
        y = gen.integers(0, case["widths"][-1], N)
    running = np.vstack([0.3 * gen.standard_normal(model.n_hidden), 0.5 + gen.random(model.n_hidden)])
    idx = gen.permutation(N)[:case["batch"]]
    return model, theta, X, y, running, idx


def torch_forward(torch, model, params, X, masks, running, train: bool):
    """The torch network of ``model`` on X: logits (or outputs) of ``Linear → BN → ReLU → Dropout`` layers."""
    F = torch.nn.functional
    a = X
    L = model.n_layers
    for l in range(L):
        W, b = params["W"][l], params["b"][l]
        z = F.linear(a, W, b)
        if l == L - 1:
            return z
        if model.batch_norm:
            h, m = model._h_off[l], model.widths[l + 1]
            z = F.batch_norm(z, running[0][l], running[1][l], params["gamma"][l], params["beta"][l],
                             training=train, momentum=MOMENTUM, eps=EPS)
        a = torch.relu(z)
        if train and model.dropout > 0:
            h, m = model._h_off[l], model.widths[l + 1]
            a = a.mul(masks[:, h:h + m]).mul(1.0 / (1.0 - model.dropout))     # as torch's native dropout
    raise AssertionError("unreachable")


def torch_params(torch, model, theta):
    """Leaf tensors of θ's layers (W, b, γ, β) and the order of torch's parameter list."""
    layers = model.unpack(theta)
    bn = model.bn_params(theta)
    params = {"W": [], "b": [], "gamma": [], "beta": []}
    order = []
    for l, (W, b) in enumerate(layers):
        params["W"].append(torch.tensor(W.copy(), requires_grad=True))
        params["b"].append(None if b is None else torch.tensor(b.copy(), requires_grad=True))
        order += [params["W"][-1]] + ([params["b"][-1]] if b is not None else [])
        if l < len(bn):
            params["gamma"].append(torch.tensor(bn[l][0].copy(), requires_grad=True))
            params["beta"].append(torch.tensor(bn[l][1].copy(), requires_grad=True))
            order += [params["gamma"][-1], params["beta"][-1]]
    return params, order


def flat(model, params, what: str) -> np.ndarray:
    """θ (``what="data"``) or its gradient (``"grad"``) in dyntools' layout."""
    out = np.zeros(model.n_params)
    for l in range(model.n_layers):
        W, b = params["W"][l], params["b"][l]
        wo = model._w_off[l]
        out[wo:wo + W.numel()] = getattr(W, what).detach().numpy().ravel()
        if b is not None:
            out[model._b_off[l]:model._b_off[l] + b.numel()] = getattr(b, what).detach().numpy()
        if model.batch_norm and l < model.n_layers - 1:
            g, m = model._g_off[l], model.widths[l + 1]
            out[g:g + m] = getattr(params["gamma"][l], what).detach().numpy()
            out[g + m:g + 2 * m] = getattr(params["beta"][l], what).detach().numpy()
    return out


def running_tensors(torch, model, running):
    """Per hidden layer running mean and variance tensors (torch updates them in place)."""
    means, variances = [], []
    for l in range(model.n_layers - 1):
        h, m = model._h_off[l], model.widths[l + 1]
        means.append(torch.tensor(running[0, h:h + m].copy()))
        variances.append(torch.tensor(running[1, h:h + m].copy()))
    return means, variances


def gather(model, tensors) -> np.ndarray:
    return np.vstack([np.concatenate([t.numpy() for t in tensors[0]]),
                      np.concatenate([t.numpy() for t in tensors[1]])])


def loss_of(torch, model, out, y):
    F = torch.nn.functional
    if model.head == "regression":
        return F.mse_loss(out[:, 0], y)
    return F.cross_entropy(out, y)


def dyntools_masks(state, model, batch: int) -> np.ndarray:
    from dyntools.models.mlp_regularized import draw_masks_np

    masks = np.zeros((batch, model.n_hidden))
    if model.dropout > 0:
        draw_masks_np(state, masks, 1.0 - model.dropout)
    return masks


def pass_case(torch, case, k: int, store: dict) -> None:
    from dyntools.engine import streams

    model, theta, X, y, running, idx = case_inputs(case, k)
    state = streams.path_states_reference(k, 1, streams.key("mlp.dropout"))
    masks = dyntools_masks(state, model, case["batch"])
    Xb = torch.tensor(X[idx])
    yb = torch.tensor(y[idx]) if case["head"] == "regression" else torch.tensor(y[idx], dtype=torch.int64)
    name = case["name"]
    store.update({f"pass/{name}/theta": theta, f"pass/{name}/X": X, f"pass/{name}/y": y, f"pass/{name}/idx": idx,
                  f"pass/{name}/masks": masks, f"pass/{name}/running": running})
    for mode in ("train", "eval"):
        params, _ = torch_params(torch, model, theta)
        run = running_tensors(torch, model, running)
        out = torch_forward(torch, model, params, Xb, torch.tensor(masks), run, mode == "train")
        loss = loss_of(torch, model, out, yb)
        loss.backward()
        store[f"pass/{name}/{mode}/loss"] = np.array(loss.item())
        store[f"pass/{name}/{mode}/grad"] = flat(model, params, "grad")
        store[f"pass/{name}/{mode}/out"] = out.detach().numpy()
        store[f"pass/{name}/{mode}/running"] = gather(model, run)


def steps_case(torch, case, k: int, store: dict) -> None:
    from dyntools.engine import streams

    model, theta, X, y, running, _ = case_inputs(case, 100 + k)
    running = model.running_init()
    gen = np.random.default_rng(2000 + k)
    B, T = case["batch"], case["steps"]
    indices = np.concatenate([gen.permutation(N)[:B] for _ in range(T)])
    state = streams.path_states_reference(SEED, 1, streams.key("mlp.dropout"), 0)     # path (run 0, seed 0)
    params, order = torch_params(torch, model, theta)
    run = running_tensors(torch, model, running)
    opt = getattr(torch.optim, case["optimizer"])(order, **case["kwargs"])
    thetas = [theta.copy()]
    for t in range(T):
        idx = indices[t * B:(t + 1) * B]
        masks = dyntools_masks(state, model, B)
        opt.zero_grad()
        out = torch_forward(torch, model, params, torch.tensor(X[idx]), torch.tensor(masks), run, True)
        loss_of(torch, model, out, torch.tensor(y[idx], dtype=torch.int64)).backward()
        opt.step()
        thetas.append(flat(model, params, "data"))
    name = case["name"]
    store.update({f"steps/{name}/theta": np.array(thetas), f"steps/{name}/X": X, f"steps/{name}/y": y,
                  f"steps/{name}/indices": indices, f"steps/{name}/running": gather(model, run)})


def main() -> None:
    import torch

    torch.set_default_dtype(torch.float64)
    store: dict[str, np.ndarray] = {}
    for k, case in enumerate(PASS_CASES):
        pass_case(torch, case, k, store)
    for k, case in enumerate(STEP_CASES):
        steps_case(torch, case, k, store)
    meta = {"torch_version": torch.__version__, "pass_cases": PASS_CASES, "step_cases": STEP_CASES, "seed": SEED,
            "momentum": MOMENTUM, "eps": EPS}
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **store)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, torch {torch.__version__})")


if __name__ == "__main__":
    main()
