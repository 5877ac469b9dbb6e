"""The heatmap cell's schedules, validation-loss plateau, weight statistics and learning curves."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import classifier_cell as C
from dyntools import heatmap_grid as H
from dyntools.optim import schedules as S

TINY = dict(n=60, n_val=60, hidden=(6, 6), batch_size=12, n_lr=2, n_wd=2, lr_range=(3e-3, 3e-2),
            wd_range=(1e-4, 1e-1))


@given(steps=st.integers(8, 400), epochs=st.integers(1, 8), gamma=st.floats(0.05, 1.0))
@settings(max_examples=40, deadline=None)
def test_step_multistep_exponential_follow_their_equations(steps, epochs, gamma):
    """m_t from the definitions (γ per decay; exponential γ per epoch = γ^(epochs/T) per update)."""
    cfg = {"epochs": float(epochs), "gamma": gamma}
    t = np.arange(steps)
    size = max(1, steps // 4)
    np.testing.assert_allclose(C.make_schedule("step", steps, cfg).multipliers(steps), gamma ** (t // size),
                               rtol=1e-12)
    marks = np.array([max(1, steps // 2), max(2, 3 * steps // 4)])
    expect = gamma ** (t[:, None] >= marks[None, :]).sum(axis=1)
    np.testing.assert_allclose(C.make_schedule("multistep", steps, cfg).multipliers(steps), expect, rtol=1e-12)
    np.testing.assert_allclose(C.make_schedule("exponential", steps, cfg).multipliers(steps),
                               gamma ** (t * epochs / steps), rtol=1e-9, atol=1e-300)


def test_schedule_defaults_and_epoch_options():
    m = C.make_schedule("exponential", 1000, {"epochs": 10.0}).multipliers(1000)
    assert m[0] == 1.0 and m[-1] == pytest.approx(0.01 ** (999 / 1000), rel=1e-9)
    step = C.make_schedule("step", 100, {"epochs": 10.0, "step_epochs": 3.0, "gamma": 0.5})
    assert step == S.StepLR(30, 0.5)
    multi = C.make_schedule("multistep", 100, {"epochs": 10.0, "milestones": [2.0, 7.5]})
    assert multi == S.MultiStepLR((20, 75), 0.1)
    sgdr = C.make_schedule("sgdr", 700, {"epochs": 7.0, "restart_epochs": 2.0, "restart_mult": 1})
    assert sgdr == S.CosineAnnealingWarmRestarts(200, 1)
    assert C.make_schedule("sgdr", 700, {"epochs": 7.0}) == S.CosineAnnealingWarmRestarts(100, 2)   # as before


@pytest.mark.parametrize("kwargs, needle", [
    (dict(name="linear"), "Invalid schedule"),
    (dict(name="step", gamma=0.0), "Invalid gamma"),
    (dict(name="step", gamma=1.5), "Invalid gamma"),
    (dict(name="step", step_epochs=0.0), "Invalid step_epochs"),
    (dict(name="step", step_epochs=10.0), "Invalid step_epochs"),
    (dict(name="multistep", milestones=(5.0, 3.0)), "Invalid milestones"),
    (dict(name="multistep", milestones=(5.0, 12.0)), "Invalid milestones"),
    (dict(name="multistep", milestones=()), "Invalid milestones"),
    (dict(name="sgdr", restart_epochs=-1.0), "Invalid restart_epochs"),
    (dict(name="sgdr", restart_mult=0), "Invalid restart_mult"),
    (dict(name="cosine", gamma=0.5), "Invalid gamma"),
    (dict(name="constant", milestones=(1.0,)), "Invalid milestones"),
    (dict(name="plateau", plateau_metric="val-acc"), "Invalid plateau_metric"),
])
def test_bad_schedule_options_name_the_parameter(kwargs, needle):
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=needle):
        C.check_schedule(name, 10.0, **kwargs)


def test_plateau_is_stepped_on_the_given_metric():
    """A metric that never improves after the first piece: the multipliers are ReduceLROnPlateau's replay of
    that metric sequence, piece by piece; the metric sees the current (S, p) parameters."""
    from dyntools.dynamics.train import train
    from dyntools.models.mlp import MLP

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 2)), rng.integers(0, 2, 40)
    model = MLP((2, 4, 2), head="cross-entropy", init="uniform")
    seen = []

    def metric(thetas):
        seen.append(thetas.copy())
        return 1.0

    sched = S.ReduceLROnPlateau(factor=0.5, patience=0)
    res = train(model, SimpleNamespace(X=X, y=y), C.make_optimizer("adam", 0.01, 0.0, 0.9), schedule=sched,
                steps=40, batch=8, sampler="epoch", plateau_metric=metric)
    pieces = 40 // 5
    expect = S.ReduceLROnPlateau(factor=0.5, patience=0).multipliers_from_metrics([1.0] * pieces)[:pieces]
    np.testing.assert_array_equal(res["lrs"][0].reshape(pieces, 5), 0.01 * np.repeat(expect, 5).reshape(pieces, 5))
    assert len(seen) == pieces and seen[0].shape == (1, model.n_params)
    np.testing.assert_array_equal(seen[-1][0], res["final_theta"][0, 0])


def test_validation_plateau_differs_from_training_plateau_and_defaults_are_unchanged():
    base = H.GridConfig(**TINY, epochs=12, schedule="plateau", plateau_patience=0, plateau_factor=0.2).as_json()
    cell = {"optimizer": "adam", "lr": 0.05, "wd": 1e-4}
    train_run = C.train_cell(base, cell, 0, 0)
    legacy = {k: v for k, v in base.items() if k != "plateau_metric"}
    np.testing.assert_array_equal(C.train_cell(legacy, cell, 0, 0)["curve"], train_run["curve"])
    val_run = C.train_cell({**base, "plateau_metric": "val-loss"}, cell, 0, 0)
    assert not np.array_equal(val_run["curve"], train_run["curve"])


def test_weight_stats_against_the_layers():
    from dyntools.models.mlp import MLP

    model = MLP((3, 4, 2), head="cross-entropy")
    W1 = np.array([[0.0, 1e-4, -2.0], [3.0, 0.5, -1e-5], [0.0, 0.0, 1.0], [2.0, -2.0, 0.1]])
    W2 = np.arange(8.0).reshape(2, 4) - 4.0
    theta = model.pack([(W1, np.full(4, 1e-9)), (W2, np.full(2, 7.0))])
    w = np.concatenate([W1.ravel(), W2.ravel()])
    s = C.weight_stats(model, theta, 1e-3)
    assert s["w_small"] == pytest.approx(6 / 20)          # five in W1, one (0.0) in W2; biases left out
    assert s["w_l1"] == pytest.approx(np.abs(w).sum()) and s["w_l2"] == pytest.approx(math.sqrt((w * w).sum()))


def test_learning_curves_rerun_the_sweeps_cell_exactly(tmp_path):
    """The best cell's re-run ends on the sweep's own final numbers, bit for bit; curves have the points asked."""
    cfg = H.GridConfig(**TINY, epochs=6, learning_curve_points=5, curve_at=(3e-2, 1e-4), optimizers=("adam", "adamw"))
    result = H.run_grid(cfg, tmp_path / "g", seed=3, workers=1)
    assert result["lc_train_loss"].shape == (2, 2, 5) and result["lc_epochs"][-1] == pytest.approx(6.0)
    for o in range(2):
        for r in range(2):
            i, j = result["lc_cells"][o, r]
            assert result["lc_train_loss"][o, r, -1] == result["train_loss"][o, i, j]
            assert result["lc_val_acc"][o, r, -1] == result["val_acc"][o, i, j]
        assert tuple(result["lc_cells"][o, 1]) == (1, 0)          # nearest to (3e-2, 1e-4)
    assert np.all((result["w_small"] >= 0) & (result["w_small"] <= 1)) and np.all(result["w_l1"] > 0)
    from dyntools.plots import adamw_heatmaps as HP

    paths = HP.plot_learning_curves(result, tmp_path, ("png",)) + HP.plot_weight_sparsity(result, tmp_path, ("png",))
    assert [p.name for p in paths] == ["adamw_grid_learning_curves.png", "adamw_grid_weight_sparsity.png"]


@pytest.mark.slow
def test_worker_warm_up_trains_two_steps_and_never_raises(monkeypatch):
    """A sweep worker's warm-up (dyntools.sweep.warm_up) calls the cell function's ``warm_up`` with the
    sweep's config — two steps of a cell of that data set and precision — and ignores its errors (the
    cells then fail and report them themselves)."""
    from dyntools import sweep

    config = {"dataset": "spirals", "n": 60, "n_val": 30, "classes": 2, "turns": 1.5, "noise": 0.05,
              "hidden": [6, 6], "batch_size": 12, "schedule": "cosine", "momentum": 0.9,
              "normalized_wd": False, "epochs": 5, "curve_points": 4}
    calls = []
    real = C.train_cell

    def spy(cfg, cell, seed, index):
        out = real(cfg, cell, seed, index)
        calls.append((cfg, cell, out))
        return out

    monkeypatch.setattr(C, "train_cell", spy)
    for dtype in ("float64", "float32"):
        C.warm_up({**config, "dtype": dtype})
    assert len(calls) == 2
    for cfg, cell, out in calls:
        assert math.ceil(cfg["epochs"] * cfg["n"] / cfg["batch_size"]) == 2 and cfg["curve_points"] == 0
        assert cell["schedule"] == "constant" and out["status"] == "completed"
    assert calls[1][0]["dtype"] == "float32"
    monkeypatch.setattr(C, "train_cell", real)
    monkeypatch.setattr(real, "warm_up", lambda cfg: calls.append(("called", cfg)))
    sweep.warm_up(C.train_cell, config)
    assert calls[-1] == ("called", config)

    def broken(cfg):
        raise RuntimeError("warm-up failed")

    monkeypatch.setattr(real, "warm_up", broken)
    sweep.warm_up(C.train_cell, config)        # ignored
    sweep.warm_up(sorted, config)              # a function without a warm_up: nothing to do
