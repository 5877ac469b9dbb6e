"""Figures and metrics for any model (issue 30, item 4): ``dyntools plot`` draws a ``train`` result."""

from pathlib import Path

import numpy as np

import dyntools as dt
from dyntools import store
from tests.byo_model import Affine
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
X = np.random.default_rng(1).normal(size=(24, 3))


class Data:
    X, y = X, X @ np.array([1.0, -1.0, 2.0]) + 0.5
    X_test, y_test = X[:6] * 1.1, X[:6] @ np.array([1.0, -1.0, 2.0]) + 0.5


def test_plot_draws_a_train_result_of_a_user_model(tmp_path):
    res = dt.train(Affine(3), Data(), [dt.sgd(lr=0.05), dt.adam(lr=0.05)], steps=60, batch=4, seeds=2,
                   records=8, step_loss=True)
    res.arrays["grad_norm"] = np.abs(res["train_loss"]) ** 0.5      # a metric recorded on the same grid
    out = store.save(res, tmp_path / "run")
    proc = run_cli("plot", out, "--format", "png", env={"PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    figures = Path(out) / "figures"
    assert (figures / "train_loss.png").stat().st_size > 10_000
    assert (figures / "train_metrics.png").stat().st_size > 10_000
