"""The heatmap experiment's grid, summary numbers and plots (without training)."""

import numpy as np
import pytest

from dyntools import heatmap_grid as H
from dyntools.classifier_cell import effective_wd
from dyntools.engine.result import RunResult


def test_default_grid_is_the_problem_sets_16_by_24_with_per_optimizer_lr_ranges():
    cfg = H.GridConfig(optimizers=("adam", "adamw", "sgd", "sgdw"))
    assert (cfg.n_lr, cfg.n_wd) == (16, 24) and cfg.steps == 2000
    lrs = cfg.lrs()
    assert lrs.shape == (4, 16)
    np.testing.assert_allclose(lrs[0, [0, -1]], [1e-4, 1e-1])
    np.testing.assert_allclose(lrs[2, [0, -1]], [1e-3, 1.0])
    spec = H.build_spec(cfg, seed=0)
    assert len(spec.cells) == 4 * 16 * 24
    first_sgd = spec.cells[16 * 24 * 2]
    assert first_sgd["optimizer"] == "sgd" and first_sgd["lr"] == pytest.approx(1e-3)


def test_summary_counts_cells_above_threshold_and_finds_the_best():
    cfg = H.GridConfig(n_lr=2, n_wd=3, lr_range=(1e-3, 1e-2), wd_range=(1e-4, 1e-2))
    acc = np.array([[[0.5, 0.95, 0.91], [np.nan, 0.2, 0.89]],
                    [[0.92, 0.93, 0.99], [0.90, 0.97, 0.1]]])
    arrays = {"val_acc": acc, "val_loss": 1 - np.nan_to_num(acc), "diverged": np.isnan(acc),
              "lrs": cfg.lrs(), "wds": cfg.wds()}
    s = H.summarize(cfg, arrays)["optimizers"]
    assert s["adam"]["cells_above_threshold"] == 2 and s["adamw"]["cells_above_threshold"] == 5
    assert s["adam"]["fraction_above_threshold"] == pytest.approx(2 / 6)
    assert s["adamw"]["best_val_acc"] == 0.99 and s["adamw"]["best_wd"] == pytest.approx(1e-2)
    assert s["adam"]["best_lr"] == pytest.approx(1e-3) and s["adam"]["diverged_cells"] == 1


@pytest.mark.parametrize("text, match", [("1e-4:1e-1", "expected LOW:HIGH:N"), ("a:b:3", "with numbers"),
                                         ("1e-1:1e-1:3", "HIGH must exceed LOW"), ("1:2:0", "N: 0")])
def test_parse_grid_rejects_malformed_ranges(text, match):
    with pytest.raises(ValueError, match=match):
        H.parse_grid("lr-grid", text)


def test_plots_mark_best_cell_and_share_one_colour_scale(tmp_path):
    from dyntools import plugins

    cfg = H.GridConfig(n_lr=3, n_wd=4)
    rng = np.random.default_rng(0)
    acc = rng.uniform(0.5, 1.0, (2, 3, 4))
    acc[0, 0, 0] = np.nan
    arrays = {"val_acc": acc, "val_loss": 1.1 - acc, "train_loss": 1.05 - acc, "train_acc": acc,
              "diverged": np.isnan(acc), "lrs": cfg.lrs(), "wds": cfg.wds()}
    result = RunResult("adamw-grid", cfg.as_json(), arrays, "completed", "synthetic")
    paths = plugins.plot_result(result, tmp_path, ("png",))
    assert [p.name for p in paths] == ["adamw_grid_val_accuracy.png", "adamw_grid_val_loss.png",
                                       "adamw_grid_train_loss.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_normalized_weight_decay_axis():
    cfg = H.GridConfig(normalized_wd=True, n=1000, batch_size=64, epochs=128).as_json()
    assert effective_wd(cfg, 0.05) == pytest.approx(0.05 * (64 / (1000 * 128)) ** 0.5, rel=1e-15)
    assert effective_wd({**cfg, "normalized_wd": False}, 0.05) == 0.05


def test_plateau_options_reach_the_schedule():
    """--plateau-factor / --plateau-patience change the run; a config without them (saved before they
    existed) means the old fixed values 0.5 / 5."""
    base = H.GridConfig(n=80, n_val=80, hidden=(8, 8, 8), batch_size=16, epochs=40, schedule="plateau")
    cell = {"optimizer": "adam", "lr": 0.05, "wd": 1e-3}
    default = H.train_cell(base.as_json(), cell, 0, 0)
    legacy = base.as_json()
    del legacy["plateau_factor"], legacy["plateau_patience"]
    np.testing.assert_array_equal(H.train_cell(legacy, cell, 0, 0)["curve"], default["curve"])
    eager = H.GridConfig(**{**base.as_json(), "plateau_factor": 0.1, "plateau_patience": 0,
                            "optimizers": ("adam",), "wd_range": (1e-6, 1.0), "hidden": (8, 8, 8)})
    assert not np.array_equal(H.train_cell(eager.as_json(), cell, 0, 0)["curve"], default["curve"])
