"""The universal-approximation study (simulations/universal_approximation.py): its pieces against exact
cases, the error falling with the width, reproducibility, and the CLI's bad input."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dyntools.simulations import universal_approximation as U

ROOT = Path(__file__).resolve().parents[1]


def test_sigmoid_is_stable_and_exact():
    z = np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
    s = U.sigmoid(z)
    assert np.all(np.isfinite(s)) and s[0] == 0.0 and s[-1] == 1.0 and s[3] == 0.5
    mid = np.linspace(-20, 20, 101)
    np.testing.assert_allclose(U.sigmoid(mid), 1 / (1 + np.exp(-mid)), rtol=1e-14)


def test_fit_output_recovers_a_network_in_the_span():
    rng = np.random.default_rng(0)
    W, b = U.hidden_layer(2, 20, rng)
    X = U.grid(2, 30)
    coef = rng.standard_normal(21)
    Phi = U.features(X, W, b)
    got = U.fit_output(Phi, Phi @ coef)
    assert np.max(np.abs(Phi @ got - Phi @ coef)) < 1e-5


def test_hidden_units_switch_inside_the_cube():
    rng = np.random.default_rng(2)
    W, b = U.hidden_layer(2, 500, rng)
    assert np.allclose(np.linalg.norm(W, axis=1), U.SLOPE * np.sqrt(500))
    # each unit is 1/2 at some point of the cube: σ(w·c_i + b) = 1/2 with c_i in [0, 1]^2
    X = U.grid(2, 60)
    pre = X @ W.T + b
    assert np.all(pre.min(axis=0) <= 0) and np.all(pre.max(axis=0) >= 0)


def test_error_falls_with_the_width_and_is_reproducible():
    a = U.study(max_width_1d=64, max_width_2d=32, fit=16, seeds=2, seed=1)
    b = U.study(max_width_1d=64, max_width_2d=32, fit=16, seeds=2, seed=1)
    np.testing.assert_array_equal(a["errors_1d"], b["errors_1d"])
    med = np.median(a["errors_1d"], axis=1)
    assert med[-1] < 0.5 * med[0]
    assert a.status == "completed" and a.summary["decreasing"]
    assert "does not prove" in U.STATEMENT


@pytest.mark.parametrize("args, word", [(["--max-width-1d", "1"], "max"), (["--fit", "x"], "fit")])
def test_cli_bad_input(tmp_path, args, word):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "bad"
    r = subprocess.run([sys.executable, "-m", "dyntools", "simulate", "universal-approximation", *args, "--out",
                        str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0]
    assert not out.exists()
