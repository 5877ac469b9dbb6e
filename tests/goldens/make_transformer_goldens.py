"""Generate the PyTorch goldens of the small transformer (tests/test_transformer.py).

Run once with torch importable next to dyntools' own dependencies (torch is not a dyntools dependency), e.g. a
private torch venv's packages appended to the dev venv's path::

    python3 -m venv /work/venv-torch && /work/venv-torch/bin/pip install torch==2.13.0
    TORCH_SITE=/work/venv-torch/lib/python3.11/site-packages PYTHONPATH=. \
        python tests/goldens/make_transformer_goldens.py

It writes ``tests/goldens/transformer_torch.npz`` (float64 throughout; the torch version inside). dyntools draws
the inputs — θ₀ from :meth:`dyntools.models.transformer.Transformer.init` with its norms and biases moved off
1 and 0, random token rows, the minibatches — and the same network written below with torch's own pieces
(``F.layer_norm``, ``F.linear``, ``F.scaled_dot_product_attention(is_causal=True)``, ``F.relu``,
``F.cross_entropy``; gradients by autograd) computes on them:

* ``<case>/loss``, ``<case>/grad``: the mean cross-entropy of a batch and its gradient at θ₀ (dyntools' flat
  layout = the parameters' order below);
* ``<case>/adamw``: θ after a few ``torch.optim.AdamW`` steps with two parameter groups, weight decay
  on the embeddings and weight matrices and none on the norms and biases (dyntools' ``decay_mask``);
* ``<case>/adam_l2``: the same steps of ``torch.optim.Adam(weight_decay=λ)`` (the L2 term in the gradient, on
  every parameter).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("transformer_torch.npz")
CASES = [
    {"name": "l1", "vocab": 8, "seq_len": 3, "classes": 5, "d": 8, "heads": 2, "layers": 1, "ratio": 2, "n": 12,
     "batch": 6, "steps": 3, "lr": 0.01, "wd": 0.5, "seed": 3},
    {"name": "l2", "vocab": 11, "seq_len": 4, "classes": 7, "d": 12, "heads": 3, "layers": 2, "ratio": 2, "n": 10,
     "batch": 4, "steps": 3, "lr": 0.02, "wd": 0.1, "seed": 5},
]


def torch_forward(torch, F, params: list, shapes: list, tokens, dims):
    """Logits of the token rows under the parameters ``params`` (torch tensors in dyntools' layout order)."""
    V, T, d, H, m, L, K = dims
    P = {name: p for (name, _), p in zip(shapes, params)}
    x = P["tok"][tokens] + P["pos"][None]
    n = x.shape[0]
    for l in range(L):
        B = {k.split(".")[-1]: v for k, v in P.items() if k.startswith(f"blocks.{l}.")}
        a = F.layer_norm(x, (d,), B["ln1_g"], B["ln1_b"], eps=1e-5)
        heads = [F.linear(a, B[w], B[c]).reshape(n, T, H, d // H).transpose(1, 2)
                 for w, c in (("wq", "bq"), ("wk", "bk"), ("wv", "bv"))]
        o = F.scaled_dot_product_attention(*heads, is_causal=True).transpose(1, 2).reshape(n, T, d)
        x = x + F.linear(o, B["wo"], B["bo"])
        x = x + F.linear(F.relu(F.linear(F.layer_norm(x, (d,), B["ln2_g"], B["ln2_b"], eps=1e-5), B["w1"], B["b1"])),
                         B["w2"], B["b2"])
    f = F.layer_norm(x[:, -1], (d,), P["lnf_g"], P["lnf_b"], eps=1e-5)
    return F.linear(f, P["unembed"])


def main() -> None:
    if os.environ.get("TORCH_SITE"):
        sys.path.append(os.environ["TORCH_SITE"])
    import torch
    import torch.nn.functional as F

    from dyntools.models.transformer import Transformer, shapes

    torch.set_num_threads(1)
    out = {"meta": np.array(json.dumps({"torch": torch.__version__, "cases": CASES}))}
    for case in CASES:
        model = Transformer(case["vocab"], case["seq_len"], case["classes"], d_model=case["d"], heads=case["heads"],
                            layers=case["layers"], mlp_ratio=case["ratio"])
        rng = np.random.default_rng(case["seed"])
        theta0 = model.init(case["seed"])
        mask = model.decay_mask()
        theta0[mask == 0] += 0.2 * rng.standard_normal(int((mask == 0).sum()))      # norms ≠ 1, biases ≠ 0
        X = rng.integers(0, case["vocab"], (case["n"], case["seq_len"])).astype(np.float64)
        y = rng.integers(0, case["classes"], case["n"])
        batches = rng.integers(0, case["n"], (case["steps"], case["batch"]))
        sh = shapes(*model._sizes)
        views = model.unpack(theta0)
        flat = [views["tok"], views["pos"]] + [B[k] for B in views["blocks"] for k in B] + \
            [views["lnf_g"], views["lnf_b"], views["unembed"]]
        tokens = torch.from_numpy(X.astype(np.int64))
        labels = torch.from_numpy(y.astype(np.int64))

        def fresh(flat=flat):
            return [torch.tensor(np.array(v), dtype=torch.float64, requires_grad=True) for v in flat]

        def loss_of(params, idx, sh=sh, tokens=tokens, labels=labels, dims=model.dims):
            return F.cross_entropy(torch_forward(torch, F, params, sh, tokens[idx], dims), labels[idx])

        params = fresh()
        loss = loss_of(params, batches[0])
        loss.backward()
        grad = np.concatenate([p.grad.numpy().ravel() for p in params])
        runs = {}
        for name in ("adamw", "adam_l2"):
            params = fresh()
            decayed = [p for p, (n, s) in zip(params, sh) if len(s) == 2]
            if name == "adamw":
                kept = [p for p, (n, s) in zip(params, sh) if len(s) == 1]
                opt = torch.optim.AdamW([{"params": decayed, "weight_decay": case["wd"]},
                                         {"params": kept, "weight_decay": 0.0}], lr=case["lr"])
            else:
                opt = torch.optim.Adam(params, lr=case["lr"], weight_decay=case["wd"])
            for idx in batches:
                opt.zero_grad()
                loss_of(params, idx).backward()
                opt.step()
            runs[name] = np.concatenate([p.detach().numpy().ravel() for p in params])    # dyntools' layout order
        name = case["name"]
        out.update({f"{name}/theta0": theta0, f"{name}/X": X, f"{name}/y": y, f"{name}/batches": batches,
                    f"{name}/loss": np.array(loss.item()), f"{name}/grad": grad, f"{name}/adamw": runs["adamw"],
                    f"{name}/adam_l2": runs["adam_l2"]})
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
