"""The convolutional ResNet (dyntools.models.resnet): the compiled kernel against its NumPy twin, finite
differences, the committed PyTorch goldens (one pass and a few SGD steps, by hand and through the engine's
compiled loop), the seeded initialization, ``simulate deep-nets --arch resnet`` and its defaults, bad input.
The training verdict (large steps sparser) is measured over seeds by the report entry, not asserted here."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.models import resnet as rn
from dyntools.models.resnet import ResNet
from tests.conftest import assert_command_refuses, run_cli

GOLDENS = np.load(Path(__file__).parent / "goldens" / "resnet_torch.npz")
CASES = json.loads(str(GOLDENS["meta"]))["cases"]
#: PyTorch's float64 convolutions sum in another order than ours: measured ≤ 3.3e-16 of the largest entry (loss,
#: gradient, θ after each step, both cases); the stated tolerance leaves room for other processors and libraries
RTOL = 1e-12
#: one worker runs this file in order: the kernels and the trainer's loop compiled (and cached on disk) by the first
#: tests are loaded, not compiled again, by the command-line run near the end
pytestmark = pytest.mark.xdist_group("resnet")


def _problem(C, B, K, n, seed, mean=0.3, std=0.4):
    rng = np.random.default_rng(seed)
    model = ResNet(C, B, K, input_mean=mean, input_std=std)
    theta = model.init(seed) + 0.05 * rng.standard_normal(model.n_params)      # biases ≠ 0 too
    return model, theta, rng.random((n, 64)), rng.integers(0, K, n)


def _kernel(model, fn, theta, X, y, idx):
    grad = np.full(model.n_params, np.nan)
    iargs, fargs = model.kernel_args()
    loss = fn(theta, X, y, np.asarray(idx, dtype=np.int64), len(idx), np.zeros(len(idx)), grad,
              np.full(model.workspace_size(len(idx)), np.nan), iargs, fargs)
    return loss, grad


@settings(max_examples=6, deadline=None)
@given(C=st.integers(1, 3), B=st.integers(1, 3), K=st.integers(2, 4), b=st.integers(1, 5), seed=st.integers(0, 99))
def test_compiled_kernel_matches_its_numpy_twin(C, B, K, b, seed):
    model, theta, X, y = _problem(C, B, K, 7, seed)
    idx = np.random.default_rng(seed).integers(0, 7, b)
    loss, grad = _kernel(model, rn.loss_grad, theta, X, y, idx)
    loss_np, grad_np = _kernel(model, rn.loss_grad_np, theta, X, y, idx)
    assert loss == pytest.approx(loss_np, rel=1e-13)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-11, atol=1e-14 * np.abs(grad_np).max())


def test_gradient_matches_central_differences():
    model, theta, X, y = _problem(3, 2, 4, 6, 1)
    idx = np.arange(6)
    _, grad = _kernel(model, rn.loss_grad, theta, X, y, idx)
    h = 1e-6
    for j in np.random.default_rng(0).choice(model.n_params, 40, replace=False):
        e = np.zeros(model.n_params)
        e[j] = h
        fd = (_kernel(model, rn.loss_grad_np, theta + e, X, y, idx)[0]
              - _kernel(model, rn.loss_grad_np, theta - e, X, y, idx)[0]) / (2 * h)
        assert fd == pytest.approx(grad[j], rel=1e-5, abs=1e-8), j


def test_forward_hooks_match_the_numpy_twin():
    model, theta, X, _ = _problem(2, 3, 5, 9, 2)
    z, cache = rn.forward_np(2, 3, 5, theta, X, 0.3, 0.4)
    np.testing.assert_allclose(model.predict(theta, X), z, rtol=1e-12, atol=1e-13)
    middle, last = model.features(theta, X)
    assert model.middle == 2
    np.testing.assert_allclose(middle, cache["acts"][2].reshape(9, -1), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(last, cache["acts"][3].reshape(9, -1), rtol=1e-12, atol=1e-13)
    assert np.all(last >= 0) and np.any(last == 0)                   # ReLU maps: the sparsity is measurable


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_loss_gradient_and_sgd_steps_match_pytorch(case):
    name = case["name"]
    model = ResNet(case["channels"], case["blocks"], case["classes"], input_mean=case["mean"], input_std=case["std"])
    theta = GOLDENS[f"{name}/theta0"].copy()
    X, y, batches = GOLDENS[f"{name}/X"], GOLDENS[f"{name}/y"], GOLDENS[f"{name}/batches"]
    loss, grad = _kernel(model, rn.loss_grad, theta, X, y, batches[0])
    assert loss == pytest.approx(float(GOLDENS[f"{name}/loss"]), rel=RTOL)
    ref = GOLDENS[f"{name}/grad"]
    np.testing.assert_allclose(grad, ref, rtol=RTOL, atol=RTOL * np.abs(ref).max())
    for k, idx in enumerate(batches):                                 # plain SGD by hand, step after step
        loss, grad = _kernel(model, rn.loss_grad, theta, X, y, idx)
        assert loss == pytest.approx(GOLDENS[f"{name}/losses"][k], rel=RTOL)
        theta = theta - case["lr"] * grad
        np.testing.assert_allclose(theta, GOLDENS[f"{name}/thetas"][k], rtol=RTOL, atol=RTOL)


def test_the_engines_compiled_loop_replays_the_pytorch_steps():
    from types import SimpleNamespace

    from dyntools.dynamics.train import train
    from dyntools.optim import optimizers as O

    case = CASES[0]
    name = case["name"]
    model = ResNet(case["channels"], case["blocks"], case["classes"], input_mean=case["mean"], input_std=case["std"])
    batches = GOLDENS[f"{name}/batches"]
    res = train(model, SimpleNamespace(X=GOLDENS[f"{name}/X"], y=GOLDENS[f"{name}/y"]), O.sgd(case["lr"]),
                steps=len(batches), batch=batches.shape[1], sampler="replay", indices=batches.ravel(),
                record_steps=np.array([len(batches)]), theta0=GOLDENS[f"{name}/theta0"])
    np.testing.assert_allclose(res["theta"][0, 0, -1], GOLDENS[f"{name}/thetas"][-1], rtol=RTOL, atol=RTOL)


def test_init_is_seeded_he_gaussian_and_biases_zero():
    model = ResNet(16, 2, 10)
    a, b = model.init(0), model.init(0)
    assert np.array_equal(a, b) and not np.array_equal(a, model.init(1)) and not np.array_equal(a, model.init(0, 1))
    P = model.unpack(a)
    for (w1, b1), (w2, b2) in P["blocks"]:
        assert np.std(w1) == pytest.approx(np.sqrt(2 / (9 * 16)), rel=0.1) == pytest.approx(np.std(w2), rel=0.1)
        assert not b1.any() and not b2.any()
    assert np.std(P["head"][0]) == pytest.approx(np.sqrt(1 / 16), rel=0.25) and not P["head"][1].any()
    assert model.n_params == rn.n_params(16, 2, 10) == sum(t.size for t in [*P["stem"], *P["head"]]) + sum(
        w.size + v.size for block in P["blocks"] for w, v in block)


@pytest.mark.parametrize("kwargs", [{"channels": 0}, {"blocks": 0}, {"n_classes": 1}, {"input_std": 0.0},
                                    {"init_stream": "nope"}])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        ResNet(**kwargs)


def test_resnet_defaults_are_implied_and_overridable():
    from dyntools.simulations import deep_nets as dn

    from dyntools.bench import torch_resnet

    p = dn.EXPERIMENT.make(None, arch="resnet")
    assert (p.batch, p.steps, p.eta_small, p.eta_large, p.decay_at) == (8, 3200, 0.02, 0.2, (0.5,))
    assert dn.EXPERIMENT.make(None, arch="resnet", batch=16).batch == 16
    assert dn.EXPERIMENT.make(None).batch == 32 and dn.EXPERIMENT.make(None).decay_at == (0.1, 0.3, 0.5)
    # the benchmark's PyTorch anchor times the network and batch of --arch resnet
    assert (torch_resnet.CHANNELS, torch_resnet.BLOCKS, torch_resnet.BATCH) == (p.channels, p.blocks, p.batch)


def test_cli_simulate_resnet_records_both_depths_and_plots(tmp_path):
    from dyntools import store

    out = tmp_path / "r"
    proc = run_cli("simulate", "deep-nets", "--arch", "resnet", "--settings", "basic", "--seeds", "1", "--steps",
                   "20", "--records", "2", "--sparsity-examples", "20", "--channels", "2", "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    res = store.load(out)
    assert res.config["arch"] == "resnet" and res.config["channels"] == 2 and res.config["batch"] == 8
    for key in ("fsc_middle", "fsc_last", "test_acc"):
        vals = res[f"basic_{key}"]
        assert vals.shape == (1, 2, 2) and np.all((vals >= 0) & (vals <= 1))
    assert np.all(np.isfinite(res["basic_train_loss"]))
    assert "sparser at both depths" in proc.stdout
    proc = run_cli("plot", out, "--json")                              # its figure passes the figure check
    assert proc.returncode == 0, proc.stderr
    assert [f.rsplit("/", 1)[-1] for f in json.loads(proc.stdout)["figures"]] == ["deep_nets.png", "deep_nets.pdf"]


@pytest.mark.parametrize("args,word", [
    (["--arch", "convnet"], "arch"),
    (["--arch", "resnet", "--dtype", "float32"], "dtype"),
    (["--arch", "resnet", "--channels", "0"], "channels"),
])
def test_cli_bad_input_one_line_exit_2_nothing_written(tmp_path, args, word):
    assert_command_refuses(tmp_path, "simulate", "deep-nets", *args, needle=word)


def test_checks_compare_both_depths_and_count_the_seeds():
    from dyntools.simulations.deep_nets import check_lines, checks

    from dyntools.engine.result import RunResult

    last = np.array([[[0.5], [0.3]], [[0.4], [0.45]], [[0.4], [np.nan]]])      # seeds × schedules × records
    middle = np.array([[[0.6], [0.2]], [[0.5], [0.3]], [[0.5], [np.nan]]])
    arrays = {"basic_fsc_last": last, "basic_fsc_middle": middle, "basic_test_acc": np.full((3, 2, 1), 0.9),
              "basic_train_loss": np.array([[[0.2], [0.1]]] * 3)}
    res = RunResult(kind="deep-nets", config={"settings": ["basic"]}, status="completed", message="", arrays=arrays)
    c = checks(res)["basic"]
    assert c["sparser_middle"] is True and c["fsc_middle_long_large"] == pytest.approx(0.25)
    assert c["seeds_sparser_both"] == 1 and c["seeds"] == 3           # seed 1 is not sparser at the last layer
    assert c["loss_long_large"] == pytest.approx(0.1)
    res.summary = {"checks": checks(res)}
    assert "sparser at both depths on 1 of 3 seeds" in check_lines(res)[1]
