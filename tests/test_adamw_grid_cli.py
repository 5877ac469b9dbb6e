"""``dyntools sweep adamw-grid`` and ``dyntools plot`` as a user runs them, including bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dyntools import cli, store
from tests.conftest import HANG_GUARD, assert_usage_error, other_cpu_name

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--lr-grid", "1e-3:1e-1:2", "--wd-grid", "1e-4:1e-1:3", "--n", "80", "--n-val", "80",
         "--epochs", "8", "--hidden", "8,8,8", "--batch-size", "16", "--workers", "1"]


def dyntools(*args, timeout=HANG_GUARD, env=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def test_sweep_writes_a_result_resumes_and_plots(tmp_path):
    out = tmp_path / "grid"
    proc = dyntools("sweep", "adamw-grid", *SMALL, "--seed", "2", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert set(summary["optimizers"]) == {"adam", "adamw"} and summary["computed"] == 12
    for v in summary["optimizers"].values():
        assert 0 <= v["cells_above_threshold"] <= 6 and 0.0 <= v["best_val_acc"] <= 1.0
    result = store.load(out)
    assert result.kind == "adamw-grid" and result["val_acc"].shape == (2, 2, 3)
    again = dyntools("sweep", "adamw-grid", *SMALL, "--seed", "2", "--out", str(out), "--json")
    again = json.loads(again.stdout)
    assert again["computed"] == 0 and again["reused"] == 12
    np.testing.assert_array_equal(store.load(out)["val_acc"], result["val_acc"])
    assert summary["compile_targets"]["mixed"] is False and again["compile_targets"]["mixed"] is False
    assert [len(t["cells"]) for t in summary["compile_targets"]["targets"]] == [12]
    proc = dyntools("plot", str(out), "--format", "png")
    assert proc.returncode == 0, proc.stderr
    assert (out / "figures" / "adamw_grid_val_accuracy.png").stat().st_size > 10_000
    human = dyntools("sweep", "adamw-grid", *SMALL, "--seed", "2", "--out", str(out))
    assert "best val acc" in human.stdout and "adamw" in human.stdout


def _refused_in_process(tmp_path, capsys, args, needle):
    """``dyntools sweep adamw-grid … args`` through ``cli.main``: exit 2, one line on stderr holding
    ``needle``, nothing written."""
    out = tmp_path / "bad"
    assert cli.main(["sweep", "adamw-grid", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("args, needle", [
    (["--lr-grid", "1e-1:1e-4:4"], "Invalid --lr-grid: high 0.0001 is below low 0.1"),
    (["--lr-grid", "0:1e-1:4"], "Invalid --lr-grid low: 0.0 (must be > 0)"),
    (["--lr-grid", "abc"], "Invalid --lr-grid"),
    (["--wd-grid", "1e-6:1:0"], "Invalid --wd-grid N: 0"),
    (["--wd-grid=-1:1:3"], "Invalid --wd-grid low"),
    (["--wd-grid", "0:1:3"], "Invalid --wd-grid low: 0.0 (must be > 0: the axis is log-spaced)"),
    (["--wd-grid", "1e-3:nan:3"], "Invalid --wd-grid high: nan (must be finite)"),
    (["--wd-grid", "1e-1:1e-3:3"], "Invalid --wd-grid: high 0.001 is below low 0.1"),
    (["--wd-grid", "1e-3:1e-3:3"], "Invalid --wd-grid: '0.001:0.001:3' (HIGH must exceed LOW when N > 1)"),
    (["--wd-grid", "1e-3:1:2000"], "Invalid --wd-grid: N = 2000 points (at most 1000)"),
    (["--optimizers", "adam,lion"], "Invalid optimizer: 'lion'"),
    (["--hidden", "32,x"], "Invalid --hidden"),
    (["--batch-size", "0"], "Invalid batch_size"),
    (["--schedule", "linear"], "Invalid schedule"),
    (["--schedule", "plateau", "--plateau-factor", "1.5"], "Invalid plateau_factor"),
    (["--schedule", "plateau", "--plateau-patience", "-1"], "Invalid plateau_patience"),
    (["--scheduler", "localhost:8786"], "Invalid --scheduler"),
    (["--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1"], "Invalid --scheduler: cannot reach"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, needle):
    """In-process ``cli.main`` (the same code path); three cases also as a subprocess below."""
    _refused_in_process(tmp_path, capsys, args, needle)


@pytest.mark.parametrize("args, needle", [
    (["--lr-grid", "1e-1:1e-4:4"], "Invalid --lr-grid: high 0.0001 is below low 0.1"),
    (["--optimizers", "adam,lion"], "Invalid optimizer: 'lion'"),
    (["--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1"], "Invalid --scheduler: cannot reach"),
])
def test_bad_input_as_a_user_runs_it(tmp_path, args, needle):
    out = tmp_path / "bad"
    proc = dyntools("sweep", "adamw-grid", "--out", str(out), *args, timeout=HANG_GUARD)
    assert_usage_error(proc, needle, out_dir=out)


@pytest.mark.slow
def test_a_grid_resumed_on_another_compile_target_says_so_in_json(tmp_path):
    """Cells computed natively, the rest resumed under NUMBA_CPU_NAME=haswell (a fresh cache): the summary
    and --json say the sweep is mixed, and which cells each target computed; not an error."""
    out = tmp_path / "grid"
    first = dyntools("sweep", "adamw-grid", *SMALL, "--seed", "2", "--out", str(out), "--json")
    assert first.returncode == 0, first.stderr
    (out / "cells" / "cell_00011.npz").unlink()
    other = other_cpu_name()                                          # not the suite's own target
    env = {"NUMBA_CPU_NAME": other, "NUMBA_CPU_FEATURES": "", "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = dyntools("sweep", "adamw-grid", *SMALL, "--seed", "2", "--out", str(out), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["computed"] == 1 and summary["compile_targets"]["mixed"] is True
    cells = {t["cpu_name"]: t["cells"] for t in summary["compile_targets"]["targets"]}
    assert cells[other] == [11] and sum(len(c) for c in cells.values()) == 12
    assert "different compile targets" in summary["message"]
    assert store.load(out).summary["compile_targets"]["mixed"] is True


@pytest.mark.parametrize("args, needle", [
    (["--dropout", "1.5"], "Invalid dropout: 1.5"),
    (["--dropout=-0.1"], "Invalid dropout"),
    (["--batch-norm", "--batch-size", "1"], "Invalid batch_size: 1 (batch norm needs at least 2"),
    (["--batch-norm", "--dtype", "float32"], "Invalid dtype: dropout and batch norm train in float64 only"),
    (["--batch-norm", "--schedule", "plateau", "--plateau-metric", "val-loss"], "Invalid batch_norm"),
])
def test_regularizer_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, needle):
    _refused_in_process(tmp_path, capsys, args, needle)


def test_sweep_with_dropout_and_batch_norm(tmp_path):
    """``--dropout`` and ``--batch-norm`` as a user runs them: in the help, recorded in the result (which loads
    against the schema); a bad value as a subprocess: one line, exit 2, nothing written."""
    help_text = dyntools("sweep", "adamw-grid", "--help", timeout=HANG_GUARD).stdout
    assert "--dropout P" in help_text and "--batch-norm" in help_text
    out = tmp_path / "reg"
    small = [a if a != "1e-4:1e-1:3" else "1e-4:1e-1:2" for a in SMALL]
    proc = dyntools("sweep", "adamw-grid", *small, "--dropout", "0.1", "--batch-norm", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["computed"] == 8
    result = store.load(out)
    assert result.config["dropout"] == 0.1 and result.config["batch_norm"] is True
    assert np.isfinite(result["val_acc"]).all() and result["val_acc"].shape == (2, 2, 2)
    bad = dyntools("sweep", "adamw-grid", "--dropout", "1", "--out", str(tmp_path / "bad"), timeout=HANG_GUARD)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Invalid dropout" in bad.stderr
    assert not (tmp_path / "bad").exists()
