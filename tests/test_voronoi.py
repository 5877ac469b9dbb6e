"""The Voronoi study of seed 000: environment, model ladder (kernel vs twin vs finite differences),
training through the engine, the experiment, its figures."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.data import voronoi as DV
from dyntools.models import voronoi as MV

# ------------------------------------------------------------------------------------ environment


def test_environment_is_seeded_and_well_formed():
    a = DV.voronoi(500, n_test=100, seed=3)
    b = DV.voronoi(500, n_test=100, seed=3)
    c = DV.voronoi(500, n_test=100, seed=3, stream_key=(1,))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.centers, b.centers) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    assert 100 <= a.k <= 150 and a.X.shape == (500, 2) and a.X_test.shape == (100, 2)
    assert np.all(np.abs(a.X) <= 100) and set(np.unique(a.y)) <= {0, 1}
    d = DV.voronoi(300, k=7, classes=4, dim=3, box=2.0, seed=1)
    assert d.k == 7 and d.X.shape == (300, 3) and np.all(np.abs(d.X) <= 2.0) and d.y.max() <= 3


def test_rules_against_brute_force():
    env = DV.voronoi(400, k=20, seed=2)
    dist = np.linalg.norm(env.X[:, None, :] - env.centers[None], axis=2)
    assert np.array_equal(DV.cells(env.X, env.centers, "nearest"), dist.argmin(axis=1))
    proj = np.abs(env.X @ env.centers.T / np.sum(env.centers ** 2, axis=1) - 1.0)
    assert np.array_equal(DV.cells(env.X, env.centers, "projection"), proj.argmin(axis=1))
    assert np.array_equal(env.y, env.center_labels[dist.argmin(axis=1)])


def test_the_two_rules_disagree_on_the_exact_counterexample():
    X = np.array([[1.0, 5.0]])
    C = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert DV.cells(X, C, "projection")[0] == 0 and DV.cells(X, C, "nearest")[0] == 1
    assert DV.disagreement(X, C, [0, 1]) == {"cells": 1.0, "labels": 1.0}


def test_majority_baseline():
    assert DV.majority_baseline([0, 1, 1, 1], [1, 0]) == 0.5


@pytest.mark.parametrize("kwargs,word", [({"dim": 0}, "dim"), ({"k": 0}, "k"), ({"k": 11}, "k"),
                                         ({"classes": 1}, "classes"), ({"box": 0.0}, "box"),
                                         ({"box": -1.0}, "box"), ({"rule": "manhattan"}, "rule"),
                                         ({"k_range": (5, 2)}, "k_range")])
def test_environment_bad_input_names_the_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        DV.voronoi(10, **kwargs)


# ------------------------------------------------------------------------------------ the ladder

def _model(rung, env, k=40, **kw):
    return MV.VoronoiLadder(rung, centers=env.centers, center_labels=env.center_labels, classes=env.n_classes,
                            dim=env.dim, n_centers=k, box=env.box, **kw)


ENV3 = DV.voronoi(300, n_test=50, k=30, classes=3, seed=5)


@settings(max_examples=40, deadline=None)
@given(rung=st.sampled_from(MV.RUNGS[1:]), b=st.integers(1, 9), seed=st.integers(0, 1000),
       scale=st.floats(0.1, 50.0), neg_scale=st.booleans())
def test_kernel_equals_twin(rung, b, seed, scale, neg_scale):
    model = _model(rung, ENV3, fixed_scale=-scale if neg_scale else scale, scale_init=scale)
    theta = model.init(seed)
    rng = np.random.default_rng(seed)
    if "plus-minus" in model.slices:
        theta[model.slices["plus-minus"]] = rng.normal(0, 1, 2)
    idx = rng.integers(0, ENV3.X.shape[0], b)
    iargs, fargs = model.kernel_args()
    g1, g2 = np.empty(model.n_params), np.empty(model.n_params)
    ws = np.zeros(model.workspace_size(b))
    l1 = model.loss_grad(theta, ENV3.X, ENV3.y, idx, b, np.zeros(b), g1, ws, iargs, fargs)
    l2 = model.loss_grad_np(theta, ENV3.X, ENV3.y, idx, b, np.zeros(b), g2, None, iargs, fargs)
    assert l1 == pytest.approx(l2, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(g2).max()))


@settings(max_examples=15, deadline=None)
@given(rung=st.sampled_from(MV.RUNGS[1:]), seed=st.integers(0, 1000))
def test_gradient_matches_finite_differences(rung, seed):
    env = DV.voronoi(200, k=12, classes=2, box=3.0, seed=seed)
    model = _model(rung, env, k=10, fixed_scale=2.0)
    theta = model.init(seed)
    if "centers" in model.slices:
        theta[model.slices["centers"]] = np.random.default_rng(seed).uniform(1.0, 3.0, 20) * \
            np.random.default_rng(seed + 1).choice([-1.0, 1.0], 20)
    idx = np.arange(16)
    iargs, fargs = model.kernel_args()
    grad = np.empty(model.n_params)

    def f(th):
        return model.loss_grad_np(th, env.X, env.y, idx, 16, None, np.empty(model.n_params), None, iargs, fargs)

    model.loss_grad(theta, env.X, env.y, idx, 16, np.zeros(16), grad, np.zeros(model.workspace_size(16)),
                    iargs, fargs)
    eps = 1e-6
    fd = np.array([(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps) for e in np.eye(model.n_params)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_fast_exp_matches_numpy():
    x = -np.concatenate([np.linspace(0, 60, 5001), [250.0, 299.9, 300.1, 707.0, 709.0, 800.0]])
    out, kb = np.empty_like(x), np.empty_like(x)
    total = MV.exp_nonpositive(x, out, kb)
    ref = np.exp(x)
    kept = x >= -300.0
    np.testing.assert_allclose(out[kept], ref[kept], rtol=4e-16)
    assert np.all(out[~kept] == 0.0) and total == pytest.approx(ref.sum(), rel=1e-14)


def test_exact_rung_and_hooks():
    env = DV.voronoi(500, n_test=200, seed=4, rule="projection")
    exact = _model("exact", env)
    assert exact.n_params == 0
    assert exact.accuracy(np.zeros(0), env.X_test, env.y_test) == 1.0
    model = _model("scale", env)
    theta = model.init(0)
    pred = model.predict(theta, env.X_test)
    loss, acc = MV.evaluate(theta, env.X_test, env.y_test, *model.kernel_args())
    assert acc == pytest.approx(np.mean(pred == env.y_test))
    z, a, pi, logits, U = MV.forward_np(theta, env.X_test, *model.kernel_args())
    assert np.array_equal(pred, logits.argmax(axis=1))
    assert model.loss(theta, env.X_test, env.y_test) == pytest.approx(loss)
    assert set(model.slices) == {"logits", "offset", "scale"}
    assert model.decay_mask(("offset", "scale")).sum() == model.k * model.classes


def test_memory_is_linear_in_the_centers():
    m = MV.VoronoiLadder("centers", dim=2, n_centers=2048)
    assert m.workspace_size(64) == m.workspace_size(1) < 12 * 2048


@pytest.mark.parametrize("kwargs,word", [({"rung": "deep"}, "rung"), ({"rung": "scale"}, "centers"),
                                         ({"rung": "exact", "centers": np.ones((3, 2))}, "center_labels"),
                                         ({"rung": "centers"}, "dim"),
                                         ({"rung": "offset", "centers": np.zeros((2, 2))}, "origin"),
                                         ({"rung": "centers", "dim": 2, "n_centers": 0}, "n_centers"),
                                         ({"rung": "centers", "dim": 2, "classes": 1}, "classes")])
def test_model_bad_input_names_the_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        MV.VoronoiLadder(**kwargs)


def test_train_compiled_loops_equal_the_twin(monkeypatch):
    from dyntools.dynamics import loops, run_plan
    from dyntools.dynamics.train import train
    from dyntools.optim.compiled import compile_runs
    from dyntools.optim.decay_groups import adamw_decay

    env = DV.voronoi(200, n_test=50, seed=1)
    model = MV.VoronoiLadder("centers", dim=2, n_centers=16, box=100.0)
    opt = adamw_decay("l1l2", lr=1e-3, weights=model.decay_mask(("scale",)), groups=model.group_of())
    step = compile_runs([opt]).step
    assert loops.user_loop(model.loss_grad, step) is not None               # the ladder's kernel gets a cached loop

    def run(kernel, sampler="epoch"):
        return train(model, env, opt, steps=5, batch=8, sampler=sampler, records=3, grid="linear", kernel=kernel,
                     seeds=2)

    cached, twin = run("numba"), run("numpy")
    np.testing.assert_allclose(cached.arrays["theta"], twin.arrays["theta"], rtol=1e-9, atol=1e-9)
    for sampler in ("epoch", "with-replacement", "full", "distinct"):
        a = run("numba", sampler)
        with monkeypatch.context() as m:
            m.setattr(run_plan, "_cached_loop", lambda *args: None)          # the uncached generic loop
            b = run("numba", sampler)
        np.testing.assert_allclose(a.arrays["theta"], b.arrays["theta"], rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------------------------ the experiment

def test_experiment_small_run_and_figures(tmp_path):
    from dyntools.simulations import voronoi as SV
    from PIL import Image

    from dyntools import store
    from dyntools.plugins import plot_result

    p = SV.make_params(rung="plus-minus", decay="min", no_decay=("scale",), n=600, n_test=200, steps=60,
                       batch=16, seeds=2, frames=4)
    res = SV.run_experiment(p, seed=1)
    assert res.kind == "voronoi" and res.status == "completed"
    assert res["theta"].shape[1] == 4 and res["test_acc"].shape == (2, 4)
    assert 0.0 <= res.summary["test_acc_median"] <= 1.0
    again = SV.run_experiment(p, seed=1)
    assert np.array_equal(res["theta"], again["theta"])
    store.save(res, tmp_path / "run")
    loaded = store.load(tmp_path / "run")
    paths = plot_result(loaded, tmp_path / "fig", ("png",))
    names = {q.name for q in paths}
    for stem in ("voronoi_env.png", "voronoi_curves.png", "voronoi_plane.gif", "voronoi_centers.gif",
                 "voronoi_scalars.gif", "voronoi_plane.png"):
        assert stem in names
    with Image.open(tmp_path / "fig" / "voronoi_plane.gif") as im:
        assert im.n_frames == 4
    assert "eval accuracy" in SV.table(res)


def test_exact_rung_experiment():
    from dyntools.simulations import voronoi as SV

    res = SV.run_experiment(SV.make_params(rung="exact", seeds=2, n=500, n_test=300, rule="projection"))
    assert res.summary["exact_vs_projection_median"] == 1.0
    assert 0.0 < res.summary["disagreement_cells_median"] < 1.0


@pytest.mark.parametrize("kwargs,word", [({"frames": 1}, "frames"), ({"rung": "deep"}, "rung"),
                                         ({"decay": "l3"}, "decay"), ({"dim": 0}, "dim"), ({"k": 0}, "k"),
                                         ({"k": 5000}, "k"), ({"classes": 1}, "classes"), ({"box": 0.0}, "box"),
                                         ({"no_decay": ("bias",)}, "no_decay")])
def test_experiment_bad_input(kwargs, word):
    from dyntools.simulations import voronoi as SV

    with pytest.raises(ValueError, match=word):
        SV.make_params(**kwargs)


def test_ladder_sweep_resumes(tmp_path):
    from dyntools.simulations import voronoi as SV

    from dyntools.plugins import plot_result

    p = SV.make_params(n_centers=16, n=300, n_test=100, steps=20, batch=8, frames=3)
    kw = dict(rungs=("exact", "offset", "centers"), decays=("l2", "l1"), seeds=2, workers=1)
    first = SV.run_ladder(p, tmp_path / "ladder", **kw)
    assert first.summary["computed"] == 10 and first["final_test_acc"].shape == (3, 2, 2)
    again = SV.run_ladder(p, tmp_path / "ladder", **kw)
    assert again.summary["computed"] == 0 and again.summary["reused"] == 10
    assert np.array_equal(first["final_test_acc"], again["final_test_acc"], equal_nan=True)
    assert "exact" in SV.ladder_table(first, markdown=True)
    assert plot_result(first, tmp_path / "fig", ("png",))


def test_compile_once_trains_every_cell_kind_and_variant_two_steps(monkeypatch):
    """The report's warm-up before its worker pools: two steps of one seed of every (member, decay) the ladder
    trains and of each variant (the exact rung trains nothing), with the variant's own options kept."""
    from dyntools.simulations import voronoi as SV

    seen = []
    monkeypatch.setattr(SV, "train_one", lambda p, seed, index: seen.append(p))
    base = SV.make_params(n_centers=16, n=300, n_test=100, steps=250, frames=5)
    exempt = dataclasses.replace(base, rung="centers", decay="min", no_decay=("offset", "scale"), seeds=5)
    raw = dataclasses.replace(base, rung="mlp", decay="l2", mlp_inputs="raw", seeds=5)
    exact = dataclasses.replace(base, rung="exact", rule="projection", seeds=5)
    SV.compile_once(base, (exempt, exact, raw))
    kinds = [(p.rung, p.decay, p.no_decay, p.mlp_inputs) for p in seen]
    cells = [(r, d, base.no_decay, base.mlp_inputs) for r in SV.MEMBERS if r != "exact" for d in SV.DECAYS]
    assert kinds == cells + [("centers", "min", ("offset", "scale"), base.mlp_inputs), ("mlp", "l2", (), "raw")]
    assert all(p.steps == 2 and p.seeds == 1 and p.n == base.n for p in seen)
