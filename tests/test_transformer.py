"""The small transformer (dyntools/models/transformer.py): compiled kernel against its NumPy twin, central finite
differences and PyTorch's autograd (goldens made offline by tests/goldens/make_transformer_goldens.py), AdamW
with decay groups and Adam+L2 against torch.optim, training through dt.train with every optimizer, bad input,
and ``simulate grokking --model transformer``."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.models.transformer import Transformer
from tests.conftest import run_cli

GOLDENS = Path(__file__).with_name("goldens") / "transformer_torch.npz"


def _call(model, kernel, theta, X, y, idx):
    iargs, fargs = model.kernel_args()
    grad = np.full(model.n_params, np.nan)
    loss = kernel(theta, X, y, np.asarray(idx, dtype=np.int64), len(idx), np.zeros(len(idx)), grad,
                  np.zeros(model.workspace_size(len(idx))), iargs, fargs)
    return loss, grad


def _problem(V=7, T=3, K=5, d=8, H=2, L=1, ratio=2, n=10, seed=0):
    model = Transformer(V, T, K, d_model=d, heads=H, layers=L, mlp_ratio=ratio)
    rng = np.random.default_rng(seed)
    theta = model.init(seed) + 0.1 * rng.standard_normal(model.n_params)
    X = rng.integers(0, V, (n, T)).astype(np.float64)
    y = rng.integers(0, K, n)
    return model, theta, X, y


def _golden_model(meta_case):
    c = meta_case
    return Transformer(c["vocab"], c["seq_len"], c["classes"], d_model=c["d"], heads=c["heads"], layers=c["layers"],
                       mlp_ratio=c["ratio"])


def _cases():
    g = np.load(GOLDENS)
    return g, json.loads(str(g["meta"]))["cases"]


@pytest.mark.parametrize("which", [0, 1])
def test_loss_and_gradient_match_torch(which):
    g, cases = _cases()
    c = cases[which]
    model, name = _golden_model(c), c["name"]
    theta, X, y, idx = g[f"{name}/theta0"], g[f"{name}/X"], g[f"{name}/y"], g[f"{name}/batches"][0]
    for kernel in (model.loss_grad, model.loss_grad_np):
        loss, grad = _call(model, kernel, theta, X, y, idx)
        assert abs(loss - float(g[f"{name}/loss"])) <= 1e-12
        # measured: ≤ 4e-16 (both kernels, both cases)
        assert np.max(np.abs(grad - g[f"{name}/grad"])) <= 1e-10 * max(1.0, np.max(np.abs(g[f"{name}/grad"])))


@pytest.mark.parametrize("which", [0, 1])
def test_adamw_groups_and_adam_l2_steps_match_torch(which):
    """torch.optim.AdamW with two parameter groups (decay on embeddings and matrices only) = dyntools' AdamW with
    the model's decay mask; torch.optim.Adam(weight_decay) = dyntools' Adam with coupled L2."""
    from dyntools.optim import optimizers as O
    from dyntools.optim.decay_groups import adamw_decay

    g, cases = _cases()
    c = cases[which]
    model, name = _golden_model(c), c["name"]
    X, y = g[f"{name}/X"], g[f"{name}/y"]
    opts = {"adamw": adamw_decay("l2", c["lr"], weight_decay=c["wd"], weights=model.decay_mask()),
            "adam_l2": O.adam(c["lr"], weight_decay=c["wd"])}
    for key, opt in opts.items():
        theta = g[f"{name}/theta0"].copy()
        state = opt.init(theta)
        for t, idx in enumerate(g[f"{name}/batches"], start=1):
            grad = _call(model, model.loss_grad, theta, X, y, idx)[1]
            theta, state = opt.step(theta, grad, state, t)
        # the gradients agree to ~4e-16; Adam's m̂/(√v̂ + ε) turns an entry's last-bit difference into a relative
        # difference of its step when the entry's gradient is tiny (measured after 3 steps: ≤ 1.6e-10 in θ)
        assert np.max(np.abs(theta - g[f"{name}/{key}"])) <= 1e-9, key


@pytest.mark.parametrize("layers", [1, 2])
def test_gradient_matches_central_differences(layers):
    model, theta, X, y = _problem(L=layers, seed=layers)
    idx = np.arange(X.shape[0])
    _, grad = _call(model, model.loss_grad, theta, X, y, idx)
    h = 1e-6
    for i in range(model.n_params):
        e = np.zeros(model.n_params)
        e[i] = h
        up = _call(model, model.loss_grad_np, theta + e, X, y, idx)[0]
        down = _call(model, model.loss_grad_np, theta - e, X, y, idx)[0]
        assert abs((up - down) / (2 * h) - grad[i]) <= 1e-7 * max(1.0, abs(grad[i])), i


@settings(max_examples=12, deadline=None)
@given(V=st.integers(2, 9), T=st.integers(1, 5), K=st.integers(2, 6), H=st.sampled_from([1, 2, 4]),
       L=st.integers(1, 2), b=st.integers(1, 7), seed=st.integers(0, 1000))
def test_compiled_kernel_equals_its_twin(V, T, K, H, L, b, seed):
    model, theta, X, y = _problem(V, T, K, 4 * H, H, L, 2, n=9, seed=seed)
    idx = np.random.default_rng(seed).integers(0, 9, b)
    l1, g1 = _call(model, model.loss_grad, theta, X, y, idx)
    l2, g2 = _call(model, model.loss_grad_np, theta, X, y, idx)
    assert abs(l1 - l2) <= 1e-13 * max(1.0, abs(l2))
    np.testing.assert_allclose(g1, g2, rtol=0, atol=1e-13 * max(1.0, np.max(np.abs(g2))))
    np.testing.assert_allclose(model.predict(theta, X[idx]).shape, (b, K))


def test_decay_mask_is_norms_and_biases_off():
    model = Transformer(5, 3, 4, d_model=8, heads=2, layers=2, mlp_ratio=4)
    mask = model.decay_mask()
    P = model.unpack(mask)
    assert P["tok"].min() == 1 and P["unembed"].min() == 1 and P["lnf_g"].max() == 0 and P["lnf_b"].max() == 0
    for B in P["blocks"]:
        for k, v in B.items():
            assert v.min() == v.max() == (1.0 if k[0] == "w" else 0.0), k
    d, m = 8, 32
    assert mask.sum() == 5 * 8 + 3 * 8 + 4 * 8 + 2 * (4 * d * d + 2 * d * m)


def test_init_is_seeded_and_in_its_stream():
    model = Transformer(5, 3, 4)
    a, b, c = model.init(1), model.init(1), model.init(1, 1)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    P = model.unpack(a)
    assert np.all(P["blocks"][0]["ln1_g"] == 1) and np.all(P["blocks"][0]["bq"] == 0)


OPTIMIZERS = ["sgd", "sgdw", "adam", "adamw", "adamw_l1", "adamw_l1l2", "adagrad", "rmsprop", "rmsprop_bc",
              "adamw_grouped"]


def test_trains_with_every_optimizer():
    """Every optimizer in one run set (one step module and one loop to compile, not one per optimizer: ~25 s
    of the suite): each run's training loss falls and its parameters stay finite."""
    import dyntools as dt
    from dyntools.data import modular_arithmetic
    from dyntools.optim import optimizers as O
    from dyntools.optim.decay_groups import adamw_decay

    data = modular_arithmetic(5, "+", 0.6, encoding="tokens", seed=0)
    model = Transformer(6, 3, 5, d_model=8, heads=2)
    opts = [adamw_decay("l2", 0.01, weight_decay=0.1, weights=model.decay_mask()) if name == "adamw_grouped"
            else O.make(name, lr=0.01) for name in OPTIMIZERS]
    res = dt.train(model, data, opts, steps=30, batch=5, sampler="epoch", records=3, grid="linear", seed=1)
    assert res.status != "diverged" and np.all(np.isfinite(res["theta"]))
    loss = res["train_loss"]
    assert loss.shape[0] == len(OPTIMIZERS)
    for g, name in enumerate(OPTIMIZERS):
        assert loss[g, 0, -1] < loss[g, 0, 0], name


def test_compiled_loop_equals_numpy_loop():
    import dyntools as dt
    from dyntools.data import modular_arithmetic
    from dyntools.optim.decay_groups import adamw_decay

    data = modular_arithmetic(5, "*", 0.6, encoding="tokens", seed=2)
    model = Transformer(6, 3, 5, d_model=8, heads=2, layers=2)
    opt = adamw_decay("l2", 0.01, weight_decay=1.0, weights=model.decay_mask())
    runs = [dt.train(model, data, opt, steps=12, batch=4, sampler="epoch", records=4, grid="linear", seed=0,
                     kernel=k) for k in ("numba", "numpy")]
    # the kernels agree to ~1e-16 per gradient; AdamW's normalized step lets that grow on entries with a tiny
    # gradient (measured: ≤ 5.3e-11 in θ after 12 steps)
    np.testing.assert_allclose(runs[0]["theta"], runs[1]["theta"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs[0]["train_loss"], runs[1]["train_loss"], rtol=1e-12)


@pytest.mark.parametrize("kwargs, word", [({"heads": 3}, "heads"), ({"layers": 3}, "layers"),
                                          ({"n_classes": 1}, "n_classes"), ({"d_model": 1}, "d_model")])
def test_bad_construction(kwargs, word):
    with pytest.raises(ValueError, match=word):
        Transformer(**{"vocab": 5, "seq_len": 3, "n_classes": 4, "d_model": 8, "heads": 2, **kwargs})


def test_bad_data():
    from types import SimpleNamespace

    import dyntools as dt

    model = Transformer(5, 3, 4, d_model=8, heads=2)
    for X in (np.zeros((4, 2)), np.full((4, 3), 5.0), np.full((4, 3), 0.5)):
        with pytest.raises(ValueError, match="Invalid data"):
            dt.train(model, SimpleNamespace(X=X, y=np.zeros(4, dtype=np.int64)), dt.adam(), steps=2, batch=2)


def test_grokking_cli_runs_the_transformer(tmp_path):
    out = tmp_path / "t"
    proc = run_cli("simulate", "grokking", "--model", "transformer", "--p", "5", "--d-model", "8", "--heads", "2",
                   "--steps", "30", "--seeds", "2", "--records", "4", "--phase-fractions", "0.6", "--phase-decays",
                   "1", "--phase-seeds", "1", "--workers", "1", "--json", "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["verdict"]["n"] == 2 and len(s["table"]) == 3
    from dyntools import store

    res = store.load(out)
    assert res.config["model"] == "transformer" and "transformer" in res.config["network"]
    assert np.all(np.isfinite(res["train_loss"]))
    proc = run_cli("plot", out, "--json", env={"DYNTOOLS_FIGURE_CHECK": "strict"})
    assert proc.returncode == 0, proc.stderr
    assert [f.rsplit("/", 1)[-1] for f in json.loads(proc.stdout)["figures"]] == ["grokking.png", "grokking.pdf"]
