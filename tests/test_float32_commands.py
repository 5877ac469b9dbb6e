"""``--dtype float32`` on every command that trains the MLP (besides ``sweep adamw-grid``, whose tests are in
tests/test_mlp_float32.py): ``simulate deep-nets``, ``simulate relu``, ``sweep adamw-schedules`` and
``sweep adamw-budgets``, run as a user runs them, on tiny sizes.

Stated tolerance, per command: every recorded loss of the float32 run within 1e-5 relative of the float64
run's (measured: deep-nets ≤ 8e-9, relu teacher2/GD ≤ 2.3e-6, schedules ≤ 3e-9, budgets ≤ 5e-9), the
accuracies equal, and the two runs not bitwise equal (the float32 run really ran in float32). The result's
config records the dtype, the table starts with a precision line, ``--json`` carries ``dtype``.
``--dtype float16``: one line on stderr naming ``dtype``, exit 2, nothing written.
"""

import json

import numpy as np
import pytest

from dyntools import cli, store

NET = ["--n", "48", "--n-val", "48", "--hidden", "5,5", "--batch-size", "12", "--workers", "1"]
COMMANDS = {
    "deep-nets": (["simulate", "deep-nets", "--settings", "basic", "--width", "8", "--depth", "4", "--steps", "30",
                   "--seeds", "1", "--records", "3", "--sparsity-examples", "50"],
                  ("basic_train_loss", "basic_test_loss"), ("basic_train_acc", "basic_test_acc")),
    "relu": (["simulate", "relu", "--setting", "teacher2", "--method", "gd", "--log10-steps", "2.5", "--seeds", "1",
              "--records", "8"], ("train_loss", "test_loss"), ()),
    "adamw-schedules": (["sweep", "adamw-schedules", "--schedules", "constant,cosine", "--seeds", "1", "--epochs", "3",
                         "--curve-points", "3", "--lr", "0.02", *NET],
                        ("train_loss", "val_loss", "curve_val_loss"), ("val_acc", "train_acc")),
    "adamw-budgets": (["sweep", "adamw-budgets", "--budgets", "1,2,4", "--lr-grid", "1e-2:1e-2:1", "--wd-grid",
                       "1e-4:1e-1:3", "--wd-norm-grid", "1e-3:1:3", "--replicates", "1", *NET],
                      ("val_loss", "train_loss"), ("val_acc",)),
}


def _config_dtype(result):
    c = result.config
    return c.get("dtype", c.get("model", {}).get("dtype"))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_float32_run_follows_float64(tmp_path, capsys, name):
    argv, losses, accuracies = COMMANDS[name]
    runs = {}
    for dtype in ("float64", "float32"):
        out = tmp_path / dtype
        assert cli.main([*argv, "--dtype", dtype, "--out", str(out)]) == 0
        table = capsys.readouterr().out
        assert table.startswith("precision: float32") == (dtype == "float32")
        runs[dtype] = store.load(out)
        assert _config_dtype(runs[dtype]) == dtype
    a, b = runs["float64"], runs["float32"]
    differ = False
    for key in losses:
        x, y = np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float)
        assert np.array_equal(np.isfinite(x), np.isfinite(y))
        ok = np.isfinite(x)
        assert np.all(np.abs(x[ok] - y[ok]) <= 1e-5 * np.abs(x[ok])), key
        differ |= not np.array_equal(x, y)
    assert differ                                       # float32 arithmetic really happened
    for key in accuracies:
        np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_carries_the_dtype_and_float16_is_refused(tmp_path, capsys, name):
    argv = COMMANDS[name][0]
    out = tmp_path / "bad"
    assert cli.main([*argv, "--dtype", "float16", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "dtype" in err and "float16" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    if name == "relu":                                  # one --json check is enough (the CLI adds it for all)
        assert cli.main([*argv, "--dtype", "float32", "--out", str(tmp_path / "ok"), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["dtype"] == "float32"
