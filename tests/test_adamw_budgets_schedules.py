"""``dyntools sweep adamw-budgets`` / ``adamw-schedules``, the L1 comparison, and bad input as a user gives it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dyntools.simulations import adamw_budgets as B
from dyntools.simulations import adamw_l1 as L1
from dyntools.simulations import adamw_schedules as SC

from dyntools import cli, store
from dyntools.engine.result import RunResult
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
NET = ["--n", "48", "--n-val", "48", "--hidden", "5,5", "--batch-size", "12", "--workers", "1"]


@pytest.mark.slow
def test_budgets_sweep_reports_the_best_lambda_on_both_axes(tmp_path, capsys):
    out = tmp_path / "b"
    assert cli.main(["sweep", "adamw-budgets", "--budgets", "1,2,4", "--lr-grid", "1e-2:1e-2:1",
                     "--wd-grid", "1e-4:1e-1:4", "--wd-norm-grid", "1e-3:1:4", "--replicates", "1", *NET,
                     "--out", str(out),
                     "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    result = store.load(out)
    assert result["val_acc"].shape == (2, 3, 1, 4) and summary["cells"] == 24
    # the λ used at the best λ_norm is λ_norm √(b/(B·T))
    scale = np.sqrt(12 / (48 * np.array([1, 2, 4])))
    np.testing.assert_allclose(result["best_raw_lambda"][1], result["best_wd"][1] * scale)
    np.testing.assert_array_equal(result["best_raw_lambda"][0], result["best_wd"][0])
    assert "claim" in summary["verdict"] and isinstance(summary["claim_holds"], bool)
    assert (out / "raw-4" / "cells").is_dir()


def test_best_cell_breaks_accuracy_ties_by_the_validation_loss_and_the_verdict():
    acc = np.array([[0.9, 0.95], [0.95, 0.5]])
    loss = np.array([[0.1, 0.3], [0.2, 0.9]])
    assert B.best_cell(acc, loss, "val-acc") == (1, 0) and B.best_cell(acc, loss) == (0, 0)
    best = np.zeros((2, 3, 2), dtype=np.int64)
    best[0, :, 1] = [3, 2, 1]                    # raw: moves 2 grid steps
    best[1, :, 1] = [2, 2, 2]                    # normalized: stays
    arrays = {"best": best, "budgets": np.array([1.0, 2.0, 4.0]), "best_wd": np.ones((2, 3)),
              "best_raw_lambda": np.ones((2, 3)), "val_acc": np.ones((2, 3, 1, 4))}
    s = B.summarize(arrays)
    assert s["claim_holds"] and s["raw"]["grid_steps_moved"] == 2 and s["normalized"]["grid_steps_moved"] == 0
    assert s["raw_falls_with_budget"]
    best[1, :, 1] = [2, 3, 2]                    # one grid step: still "stays put"
    assert B.summarize(arrays)["claim_holds"]
    best[1, :, 1] = [0, 2, 3]
    assert not B.summarize(arrays)["claim_holds"]
    best[1, :, 1] = [2, 2, 2]
    best[0, :, 1] = [3, 1, 3]                    # moves, but not falling with the budget
    s = B.summarize(arrays)
    assert s["claim_holds"] and not s["raw_falls_with_budget"]
    best[0, :, 1] = [3, 3, 2]                    # one step only: does not "move"
    assert not B.summarize(arrays)["claim_holds"]


def test_budget_verdict_over_near_ties_holds_fails_or_is_undecided():
    best = np.zeros((2, 3, 2), dtype=np.int64)
    best[0, :, 1] = [3, 2, 1]
    best[1, :, 1] = [2, 2, 2]
    near = np.zeros((2, 3, 5), dtype=bool)
    arrays = {"best": best, "budgets": np.array([1.0, 2.0, 4.0]), "best_wd": np.ones((2, 3)),
              "best_raw_lambda": np.ones((2, 3)), "val_acc": np.ones((2, 3, 1, 5)), "near_best": near}
    s = B.summarize(arrays)                                    # no near-ties: the argmax decides
    assert s["claim"] == "holds" and s["raw"]["grid_steps_moved_range"] == [2, 2]
    near[0, 0, [1, 3]] = True                                  # budget 1's best raw λ is tied with index 1
    s = B.summarize(arrays)
    assert s["raw"]["grid_steps_moved_range"] == [1, 2] and s["claim"] == "undecided" and not s["claim_holds"]
    assert "undecided" in s["verdict"] and "1–2" in s["verdict"]
    near[0] = False
    near[1, 1, [0, 2, 4]] = True                               # λ_norm: some choices move 2+ steps
    assert B.summarize(arrays)["claim"] == "undecided"
    best[0, :, 1] = [2, 2, 2]                                  # raw never moves: fails for every choice
    assert B.summarize(arrays)["claim"] == "does not hold"


def test_near_best_wd_and_range_over_choices_edge_cases():
    from dyntools import verdicts as V

    loss = np.array([[1.0, 1.005, np.nan, 2.0], [1.2, np.inf, 1.3, 1.5]])      # rows: lr; columns: λ
    assert B.near_best_wd(np.zeros_like(loss), loss).tolist() == [True, True, False, False]
    assert not B.near_best_wd(np.zeros_like(loss), np.full_like(loss, np.nan)).any()     # all diverged
    acc = np.array([[0.9, 0.895, 0.5]])
    assert B.near_best_wd(acc, acc, "val-acc").tolist() == [True, True, False]
    assert V.range_over_choices([{3}, {2}, {1}]) == (2, 2)
    assert V.range_over_choices([{0, 5}, {4}, {3, 9}]) == (2, 9)
    assert V.range_over_choices([{1}, {1}]) == (0, 0)
    with pytest.raises(ValueError, match="sets"):
        V.range_over_choices([{1}, set()])


def test_paired_replicates_average_the_cells_runs(tmp_path):
    from dyntools.classifier_cell import train_cell
    from dyntools.heatmap_grid import GridConfig, run_grid

    cfg = GridConfig(optimizers=("adamw",), n_lr=1, n_wd=2, lr_range=(1e-2, 1e-2), wd_range=(1e-3, 1e-1), n=48,
                     n_val=48, hidden=(5, 5), batch_size=12, epochs=2, paired=True, replicates=2,
                     learning_curve_points=0)
    result = run_grid(cfg, tmp_path / "g", seed=4, workers=1)
    cell = {"optimizer": "adamw", "lr": 1e-2, "wd": 1e-1}
    runs = [train_cell(result.config, {**cell, "stream": r}, 4, 99) for r in range(2)]
    assert result["val_loss"][0, 0, 1] == runs[0]["val_loss"] / 2 + runs[1]["val_loss"] / 2
    assert runs[0]["val_loss"] != runs[1]["val_loss"] and result.summary["cells"] == 4
    with pytest.raises(ValueError, match="Invalid replicates"):
        GridConfig(replicates=2)


def test_schedules_are_paired_by_seed_and_reproducible(tmp_path):
    p = SC.ScheduleParams(optimizers=("adam", "adamw"), schedules=("constant", "sgdr"), seeds=2, epochs=3.0,
                          n=48, n_val=48, hidden=(5, 5), batch_size=12, curve_points=4, workers=1, lr=(0.02,))
    result = SC.run_schedules(p, tmp_path / "s", seed=1)
    assert result["val_acc"].shape == (2, 2, 2) and result["curve_val_acc"].shape == (2, 2, 2, 4)
    assert result["curve_epochs"][-1] == pytest.approx(3.0)
    # the curve's last point is the final network
    np.testing.assert_array_equal(result["curve_val_acc"][..., -1], result["val_acc"])
    # same seed, same schedule: bitwise the same; another seed: different
    again = SC.run_schedules(p, tmp_path / "s2", seed=1)
    np.testing.assert_array_equal(again["curve_val_loss"], result["curve_val_loss"])
    assert not np.array_equal(result["curve_val_loss"][:, :, 0], result["curve_val_loss"][:, :, 1])
    assert set(result.summary["runs"]) == {"adam/constant", "adam/sgdr", "adamw/constant", "adamw/sgdr"}
    assert set(result.summary["verdicts"]) == {"adam", "adamw"}


def test_sparsity_at_equal_accuracy_on_a_synthetic_grid():
    acc = np.array([[[0.90, 0.97], [0.96, 0.50]], [[0.99, 0.96], [0.965, 0.2]]])
    small = np.array([[[0.9, 0.1], [0.2, 0.99]], [[0.0, 0.3], [0.6, 1.0]]])
    arrays = {"val_acc": acc, "w_small": small, "w_l1": small + 1, "w_l2": small + 2,
              "lrs": np.array([[1e-3, 1e-2]] * 2), "wds": np.array([1e-4, 1e-2])}
    result = RunResult("adamw-grid", {"optimizers": ["adamw", "adamw_l1"], "sparsity_tol": 1e-3}, arrays,
                       "completed", "synthetic")
    s = L1.sparsity_at_equal_accuracy(result, margin=0.01)        # level 0.96: 0.99/0.5 excluded
    assert s["level"] == pytest.approx(0.96)
    assert s["optimizers"]["adamw"]["cells_at_level"] == 2 and s["optimizers"]["adamw"]["max_small_fraction"] == 0.2
    assert s["optimizers"]["adamw_l1"]["max_small_fraction"] == 0.6 and s["optimizers"]["adamw_l1"]["lr"] == 1e-2
    assert s["optimizers"]["adamw"]["median_small_fraction"] == pytest.approx(0.15)
    assert s["optimizers"]["adamw_l1"]["median_small_fraction"] == pytest.approx(0.3)


@pytest.mark.parametrize("args, needle", [
    (["adamw-budgets", "--budgets", "64,16,256"], "Invalid budgets: [64.0, 16.0, 256.0] (must be strictly increasing)"),
    (["adamw-budgets", "--budgets", "16,16"], "Invalid budgets"),
    (["adamw-budgets", "--budgets", "0,16"], "Invalid --budgets"),
    (["adamw-budgets", "--wd-norm-grid", "1e-3:1:4"], "Invalid --wd-norm-grid: 4 points"),
    (["adamw-schedules", "--schedules", "constant,warm"], "Invalid schedules: 'warm'"),
    (["adamw-schedules", "--schedules", "constant,constant"], "Invalid schedules"),
    (["adamw-schedules", "--wd", "1,2,3"], "Invalid wd: 3 values for 2 optimizers"),
    (["adamw-schedules", "--restart-epochs", "500"], "Invalid restart_epochs"),
    (["adamw-schedules", "--schedules", "constant", "--restart-mult", "2"], "Invalid restart_epochs"),
    (["adamw-grid", "--schedule", "linear"], "Invalid schedule"),
    (["adamw-grid", "--schedule", "step", "--gamma", "0"], "Invalid gamma"),
    (["adamw-grid", "--schedule", "multistep", "--milestones", "90,30"], "Invalid milestones"),
    (["adamw-grid", "--schedule", "step", "--step-epochs", "500"], "Invalid step_epochs"),
    (["adamw-grid", "--schedule", "cosine", "--gamma", "0.5"], "Invalid gamma"),
    (["adamw-grid", "--schedule", "plateau", "--plateau-metric", "acc"], "Invalid plateau_metric"),
    (["adamw-grid", "--curve-at", "1e-3"], "Invalid curve_at"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, needle):
    out = tmp_path / "bad"
    assert cli.main(["sweep", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_bad_budgets_as_a_user_runs_it(tmp_path):
    out = tmp_path / "bad"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dyntools", "sweep", "adamw-budgets", "--budgets", "32,8,128",
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=HANG_GUARD)
    assert proc.returncode == 2 and "Invalid budgets" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


def test_schedules_sweep_declares_the_cell_values_that_must_be_finite():
    """The schedules sweep declares the cell values that must be finite, so the sweep machinery (tested in
    test_fuzz_results.py) treats a cell with a NaN accuracy as damaged and recomputes it instead of reusing it."""
    from dyntools import sweep
    from dyntools.classifier_cell import CELL_VALUES

    p = SC.ScheduleParams(optimizers=("adam", "adamw"), schedules=("constant",), seeds=1, epochs=3.0)
    _, spec = SC.build_spec(p, 0)
    assert spec.finite == CELL_VALUES and "val_acc" in spec.finite
    assert isinstance(spec, sweep.SweepSpec)


def test_schedules_default_wd_is_per_optimizer():
    """Issue 26 item 12: ``--optimizers adamw`` alone works; each optimizer gets its default decay
    (1e-4 as an L2 term for adam-like, 1e-2 decoupled for adamw-like); an explicit --wd still rules."""
    from dyntools.simulations.adamw_schedules import ScheduleParams, build_spec, weight_decays

    assert weight_decays(ScheduleParams(optimizers=("adamw",)), ("adamw",)) == (1e-2,)
    assert weight_decays(ScheduleParams(), ("adam", "adamw")) == (1e-4, 1e-2)
    assert weight_decays(ScheduleParams(optimizers=("sgd", "sgdw")), ("sgd", "sgdw")) == (1e-4, 1e-2)
    assert weight_decays(ScheduleParams(wd=(0.5,)), ("adam", "adamw")) == (0.5, 0.5)
    _, spec = build_spec(ScheduleParams(optimizers=("adamw",), n=40, n_val=40, batch_size=8, epochs=1.0), seed=0)
    assert {c["wd"] for c in spec.cells} == {1e-2}
