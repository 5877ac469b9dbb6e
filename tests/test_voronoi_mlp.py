"""The MLP baseline of the Voronoi study (item 10 of issue 26): the model's inputs, hooks and gradient, its
row in the ladder's table and its column in the ladder's figure, and the report's verdict arithmetic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.models.voronoi import VoronoiLadder
from dyntools.models.voronoi_mlp import VoronoiMLP


def _points(seed, n, box, classes=3, dim=2):
    rng = np.random.default_rng(seed)
    return rng.uniform(-box, box, (n, dim)), rng.integers(0, classes, n)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), box=st.floats(0.5, 500.0), b=st.integers(1, 9),
       inputs=st.sampled_from(("scaled", "raw")))
def test_kernel_on_the_training_set_equals_the_twin(seed, box, b, inputs):
    model = VoronoiMLP(classes=3, dim=2, hidden=(5, 4), box=box, inputs=inputs)
    X, y = _points(seed, 12, box)
    data = model.training_set(type("D", (), {"X": X, "y": y}))
    theta = model.init(seed % 1000, seed % 3)
    iargs, fargs = model.kernel_args()
    idx = np.random.default_rng(seed + 1).permutation(12)
    g1, g2 = np.empty(model.n_params), np.empty(model.n_params)
    ws = model.workspace_size(b)
    l1 = model.loss_grad(theta, data.X, data.y, idx, b, np.zeros(b), g1, np.zeros(ws), iargs, fargs)
    l2 = model.loss_grad_np(theta, data.X, data.y, idx, b, np.zeros(b), g2, np.zeros(ws), iargs, fargs)
    assert l1 == pytest.approx(l2, rel=1e-13, abs=1e-13)
    if l2 > 1e-9:
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-13 * max(1.0, np.abs(g2).max()))
    else:
        # a saturated softmax (raw inputs, a large box: loss 5e-12 at seed 27, box 246, b 1): the gradient, of the
        # loss's size, is p_y − 1 rounded at 1 (an error of eps/loss relative, amplified by the classes' cancelling
        # rows), so kernel and twin legitimately differ in the 4th digit; a porting error is O(1) there
        np.testing.assert_allclose(g1, g2, rtol=1e-2, atol=1e-2 * np.abs(g2).max())


def _cross_entropy_of_box_points(model, theta, X, y):
    """An independent reference from the equations: logits of ξ = x·scale through ReLU layers, mean
    cross-entropy (no code shared with the MLP module beyond the parameter views)."""
    a = X * (1.0 / model.box if model.inputs == "scaled" else 1.0)
    layers = model.unpack(theta)
    for l, (W, bias) in enumerate(layers):
        a = a @ W.T + bias
        if l < len(layers) - 1:
            a = np.maximum(a, 0.0)
    z = a - a.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]))


@pytest.mark.parametrize("inputs", ["scaled", "raw"])
def test_gradient_matches_finite_differences_of_the_loss_on_box_points(inputs):
    model = VoronoiMLP(classes=3, dim=2, hidden=(6, 5), box=20.0, inputs=inputs)
    X, y = _points(3, 10, 20.0)
    theta = model.init(7, 1)
    data = model.training_set(type("D", (), {"X": X, "y": y}))
    grad = np.empty(model.n_params)
    loss = model.loss_grad(theta, data.X, data.y, np.arange(10), 10, np.zeros(10), grad,
                           np.zeros(model.workspace_size(10)), *model.kernel_args())
    assert loss == pytest.approx(_cross_entropy_of_box_points(model, theta, X, y), rel=1e-12)
    eps = 1e-6 if inputs == "scaled" else 1e-7
    fd = np.empty(model.n_params)
    for k in range(model.n_params):
        e = np.zeros(model.n_params)
        e[k] = eps
        fd[k] = (_cross_entropy_of_box_points(model, theta + e, X, y)
                 - _cross_entropy_of_box_points(model, theta - e, X, y)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_hooks_take_points_of_the_box():
    model = VoronoiMLP(classes=2, dim=2, hidden=(8, 8), box=50.0)
    X, y = _points(0, 300, 50.0, classes=2)
    thetas = np.stack([model.init(0, i) for i in range(3)])
    thetas[2, 4] = np.nan
    loss, acc = model.evaluate_records(thetas[None], X, y)
    assert loss.shape == acc.shape == (1, 3) and np.isnan(loss[0, 2]) and np.isnan(acc[0, 2])
    for i in range(2):
        assert loss[0, i] == pytest.approx(_cross_entropy_of_box_points(model, thetas[i], X, y), rel=1e-12)
        logits, _ = model.forward_np(thetas[i], X / 50.0)           # the network's own hooks take ξ = x/s
        assert acc[0, i] == np.mean(np.argmax(logits, axis=1) == y) == model.accuracy(thetas[i], X, y)
        np.testing.assert_array_equal(model.predict(thetas[i], X), np.argmax(logits, axis=1))
    raw = VoronoiMLP(classes=2, dim=2, hidden=(8, 8), box=50.0, inputs="raw")
    np.testing.assert_array_equal(raw.training_set(type("D", (), {"X": X, "y": y})).X, X)
    assert model.current_centers(thetas[0]).shape == (0, 2)


def test_groups_are_the_tensors_and_the_streams():
    model = VoronoiMLP(classes=2, dim=2, hidden=(4, 3), box=100.0)
    assert list(model.slices) == ["W1", "b1", "W2", "b2", "W3", "b3"]
    sizes = np.bincount(model.group_of())
    np.testing.assert_array_equal(sizes, [8, 4, 12, 3, 6, 2])
    np.testing.assert_array_equal(model.decay_mask(("offset", "scale")), np.ones(model.n_params))
    with pytest.raises(ValueError, match="decay exclusion"):
        model.decay_mask(("bias",))
    # the ladder's minibatches: one sampling stream for every member; its own initialization stream
    assert model.sampling_stream == VoronoiLadder.sampling_stream == "voronoi.sampling"
    assert model.init_stream == "voronoi.mlp-init" != VoronoiLadder.init_stream
    a, b = model.init(3, 0), model.init(3, 1)
    assert np.array_equal(a, model.init(3, 0)) and not np.array_equal(a, b)
    W1, b1 = model.unpack(a)[0]
    assert np.abs(W1).max() <= 1 / np.sqrt(2) and np.abs(b1).max() <= 1 / np.sqrt(2)       # nn.Linear's bound
    W2, _ = model.unpack(a)[1]
    assert np.abs(W2).max() <= 1 / np.sqrt(4)
    again = VoronoiMLP.from_config(model.config())
    assert again.config() == model.config() and again.n_params == model.n_params


@pytest.mark.parametrize("kwargs,word", [({"classes": 1}, "classes"), ({"hidden": ()}, "hidden"),
                                         ({"hidden": (4, 0)}, "hidden width"), ({"inputs": "log"}, "inputs"),
                                         ({"box": 0.0}, "box"), ({"dim": 0}, "dim")])
def test_model_bad_input_names_the_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        VoronoiMLP(**kwargs)


# ------------------------------------------------------------------------------------ in the study

SMALL = dict(n_centers=16, n=300, n_test=100, steps=40, batch=16, frames=3, mlp_hidden=(8, 8))


def test_the_ladder_has_the_mlp_row_and_column(tmp_path):
    from dyntools.simulations import voronoi as SV

    from dyntools.plots import check
    from dyntools.plots import voronoi as vplots

    p = SV.make_params(**SMALL)
    lad = SV.run_ladder(p, tmp_path / "ladder", rungs=("exact", "scale", "centers", "mlp"), decays=("l2", "min"),
                        seeds=2, workers=1)
    rows = [r for r in lad.summary["ladder"] if r["rung"] == "mlp"]
    assert [r["decay"] for r in rows] == ["l2", "min"] and all(r["seeds"] == 2 for r in rows)
    table = SV.ladder_table(lad, markdown=True)
    assert "| mlp | l2 | 2 |" in table and "| mlp | min | 2 |" in table
    i = lad.config["rungs"].index("mlp")
    assert np.all((lad["final_test_acc"][i] >= 0) & (lad["final_test_acc"][i] <= 1))
    # the cell is the member trained alone: same environment, minibatches, learning rate (the top rung's)
    one = SV.run_experiment(SV.make_params(**SMALL, rung="mlp", decay="min", seeds=2), seed=0)
    np.testing.assert_array_equal(one["test_acc"][:, -1], lad["final_test_acc"][i, 1])
    assert one.config["optimizer"]["lr"] == SV.MLP_LR == SV.STUDY_LR["centers"]
    with check.collect() as found:
        paths = vplots.ladder_curves(lad, tmp_path / "fig", ("png",))
    assert paths and found and all(problems == [] for _, problems in found), found


class _Result:
    """What :func:`mlp_verdict` reads of a result: ``config`` and arrays by key."""

    def __init__(self, config, **arrays):
        self.config, self.arrays = config, arrays

    def __getitem__(self, key):
        return self.arrays[key]


@pytest.mark.parametrize("mlp_acc,raw_acc,fails,fails_raw", [((0.80, 0.84, 0.82), (0.60, 0.62, 0.58), False, True),
                                                             ((0.60, 0.62, 0.58), (0.55, 0.56, 0.57), True, True),
                                                             ((0.86, 0.90, 0.88), (0.83, 0.84, 0.85), False, False)])
def test_the_verdict_is_measured_from_the_arrays(mlp_acc, raw_acc, fails, fails_raw):
    from dyntools.simulations import voronoi as SV

    rungs, decays = ["exact", "scale", "centers", "mlp"], ["l1", "l2"]
    acc = np.full((4, 2, 3), np.nan)
    acc[0, :] = 0.6
    acc[1, 1] = (0.70, 0.74, 0.72)
    acc[2, 1] = (0.84, 0.86, 0.80)
    acc[3, 1] = mlp_acc
    acc[:, 0] = 0.0                                   # the other decay is not read
    train = acc + 0.01
    lad = _Result({"rungs": rungs, "decays": decays}, final_test_acc=acc, final_train_acc=train,
                  majority=np.full((4, 2, 3), 0.55))
    raw = _Result({}, test_acc=np.column_stack([np.zeros(3), raw_acc]))
    p = SV.make_params(**SMALL)
    v = SV.mlp_verdict(lad, raw, p)
    top, net = np.array((0.84, 0.86, 0.80)), np.array(mlp_acc)
    assert v["top_eval_acc"] == pytest.approx(0.84) and v["mlp_eval_acc"] == pytest.approx(np.median(net))
    assert v["gap_median"] == pytest.approx(np.median(top - net))
    assert v["gap_range"] == pytest.approx([np.min(top - net), np.max(top - net)])
    assert v["top_wins"] == int(np.sum(top > net)) and v["seeds"] == 3
    assert v["recovered"] == pytest.approx((np.median(net) - 0.55) / (0.84 - 0.55))
    assert v["raw_recovered"] == pytest.approx((np.median(raw_acc) - 0.55) / (0.84 - 0.55))
    assert v["best_lower_rung"] == "scale" and v["best_lower_acc"] == pytest.approx(0.72)
    assert v["mlp_train_acc"] == pytest.approx(np.median(net) + 0.01)
    assert v["mlp_params"] == 2 * 8 + 8 + 8 * 8 + 8 + 8 * 2 + 2 and v["top_params"] == 16 * 4 + 4
    text = "\n".join(SV.mlp_paragraph(v, p))
    assert ("the MLP **fails**" in text) == fails and ("does **not** fail" in text) == (not fails)
    assert ("on raw inputs it fails" in text) == fails_raw


def test_raw_and_scaled_inputs_differ_only_in_what_the_network_sees():
    from dyntools.simulations import voronoi as SV

    scaled = SV.train_one(SV.make_params(**SMALL, rung="mlp"), 0, 1)
    raw = SV.train_one(SV.make_params(**SMALL, rung="mlp", mlp_inputs="raw"), 0, 1)
    np.testing.assert_array_equal(scaled["theta"][0], raw["theta"][0])          # the same initialization
    assert scaled["model"].input_scale == 1 / 100 and raw["model"].input_scale == 1.0
    assert not np.array_equal(scaled["theta"][-1], raw["theta"][-1])


@pytest.mark.parametrize("kwargs,word", [({"mlp_hidden": ()}, "mlp_hidden"), ({"mlp_hidden": (8, 0)}, "mlp_hidden"),
                                         ({"mlp_inputs": "log"}, "mlp_inputs"),
                                         ({"rung": "mlp", "mlp_hidden": (4096,) * 16, "frames": 30}, "frames")])
def test_experiment_bad_mlp_input(kwargs, word):
    from dyntools.simulations import voronoi as SV

    with pytest.raises(ValueError, match=word):
        SV.make_params(**kwargs)
