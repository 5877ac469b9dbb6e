"""The MLP with dropout and batch norm against PyTorch: committed goldens (float64, relative 1e-12).

The goldens were written by tests/goldens/make_regularized_goldens.py (torch version inside): the same
network built with ``torch.nn.functional`` (``Linear → batch_norm → ReLU → dropout`` with dyntools' keep
masks), one pass in training and evaluation mode per case, and a few Adam/AdamW steps compared with
:func:`dyntools.train` on the same replayed minibatches (its loop draws the same masks from the
``mlp.dropout`` stream). Differences are measured relative to the largest entry of each array.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dyntools.dynamics.train import train
from dyntools.engine import streams
from dyntools.models import mlp_regularized as R
from dyntools.optim import torch_names

GOLDEN_DIR = Path(__file__).with_name("goldens")
sys.path.insert(0, str(GOLDEN_DIR))
import make_regularized_goldens as G  # noqa: E402

RTOL = 1e-12
GOLDENS = np.load(GOLDEN_DIR / "mlp_regularized_torch.npz")
META = json.loads(str(GOLDENS["meta"]))


def rel(x, ref) -> float:
    return float(np.max(np.abs(np.asarray(x) - ref)) / max(np.max(np.abs(ref)), 1e-300))


def test_goldens_cover_both_regularizers_both_modes_and_both_optimizers():
    assert META["torch_version"].startswith("2.")
    cases = META["pass_cases"]
    assert any(c["dropout"] > 0 and not c["batch_norm"] for c in cases)
    assert any(c["batch_norm"] and c["dropout"] == 0 for c in cases)
    assert any(c["head"] == "regression" for c in cases)
    assert {c["optimizer"] for c in META["step_cases"]} == {"Adam", "AdamW"}
    assert (GOLDEN_DIR / "mlp_regularized_torch.npz").stat().st_size < 200_000


@pytest.mark.parametrize("case", G.PASS_CASES, ids=[c["name"] for c in G.PASS_CASES])
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("kernel", ["compiled", "numpy"])
def test_pass_matches_torch(case, mode, kernel):
    key = f"pass/{case['name']}"
    model = G.case_model(case)
    theta, X, y, idx = (GOLDENS[f"{key}/{k}"] for k in ("theta", "X", "y", "idx"))
    masks, running = GOLDENS[f"{key}/masks"], GOLDENS[f"{key}/running"]
    # the masks are dyntools' own: the mlp.dropout stream's draws
    redrawn = G.dyntools_masks(streams.path_states(G.PASS_CASES.index(case), 1, streams.key("mlp.dropout")), model,
                               case["batch"])
    np.testing.assert_array_equal(redrawn, masks)
    fn = R.forward_backward if kernel == "compiled" else R.forward_backward_np
    w, wo, bo = model.arrays()
    grad, stats = np.zeros(model.n_params), np.zeros((2, model.n_hidden))
    ws = np.zeros(R.scratch_size(w, idx.size))
    head = R.HEAD_REGRESSION if model.head == "regression" else R.HEAD_CROSS_ENTROPY
    y_in = y if model.head == "regression" else y.astype(np.int64)
    loss = fn(theta, w, wo, bo, model._g_off, model._h_off, X, y_in, idx.astype(np.int64), np.zeros(idx.size), head,
              mode == "train", masks if model.dropout else np.zeros((0, model.n_hidden)), 1.0 / (1.0 - model.dropout),
              model.bn_eps, stats, running, grad, ws)
    assert rel(loss, GOLDENS[f"{key}/{mode}/loss"]) <= RTOL
    assert rel(grad, GOLDENS[f"{key}/{mode}/grad"]) <= RTOL
    if kernel == "compiled" and model.head == "cross-entropy":
        assert rel(R.logits(ws, w, idx.size), GOLDENS[f"{key}/{mode}/out"]) <= RTOL
    after = running.copy()
    if mode == "train" and model.batch_norm:
        R.update_running(after, stats, model.bn_momentum, idx.size)
    assert rel(after, GOLDENS[f"{key}/{mode}/running"]) <= RTOL


@pytest.mark.parametrize("case", G.STEP_CASES, ids=[c["name"] for c in G.STEP_CASES])
def test_optimizer_steps_match_torch(case):
    key = f"steps/{case['name']}"
    model = G.case_model(case)
    ref = GOLDENS[f"{key}/theta"]
    opt = torch_names.optimizer_from_torch(case["optimizer"], case["kwargs"])
    T = case["steps"]
    data = SimpleNamespace(X=GOLDENS[f"{key}/X"], y=GOLDENS[f"{key}/y"].astype(np.int64))
    res = train(model, data, opt, steps=T,
                batch=case["batch"], sampler="replay", indices=GOLDENS[f"{key}/indices"].astype(np.int64),
                theta0=ref[0], seed=META["seed"], record_steps=np.arange(T + 1))
    assert rel(res["theta"][0, 0], ref) <= RTOL
    if model.batch_norm:
        assert rel(res["bn_running"][0, 0], GOLDENS[f"{key}/running"]) <= RTOL

