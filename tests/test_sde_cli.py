"""``dyntools simulate sde`` as a user runs it, bad input included, and ``dyntools plot``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dyntools import store

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT)


def test_simulate_gbm_milstein_then_plot(tmp_path):
    out = tmp_path / "gbm"
    proc = run_cli("simulate", "sde", "--model", "gbm", "--scheme", "milstein", "--h", "0.01", "--paths",
                   "50",
                   "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["status"] == "completed" and summary["kind"] == "sde"
    res = store.load(out)
    assert res["x"].shape == (50, 101, 1) and res.config["scheme"] == "milstein"
    proc = run_cli("plot", str(out), "--format", "png")
    assert proc.returncode == 0, proc.stderr
    assert (out / "figures" / "sde_gbm_paths.png").stat().st_size > 10_000


def test_simulate_diag_net_sgd(tmp_path):
    out = tmp_path / "dn"
    proc = run_cli("simulate", "sde", "--model", "diag-net", "--method", "sgd", "--n", "10", "--d", "20",
                   "--r", "3", "--t1", "2", "--paths", "4", "--records", "11", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    res = store.load(out)
    assert res.kind == "sde-diag-net" and res["u"].shape == (4, 11, 20)


@pytest.mark.parametrize("args,needle", [
    (["--model", "heston"], "Invalid model"),
    (["--scheme", "rk4"], "Invalid scheme"),
    (["--h", "0"], "Invalid h"),
    (["--model", "toy", "--label-noise", "-1"], "Invalid label_noise"),
    (["--x0", "nan"], "Invalid x0"),
    (["--model", "diag-net", "--scheme", "milstein"], "needs diagonal noise"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, needle):
    out = tmp_path / "never"
    proc = run_cli("simulate", "sde", *args, "--paths", "4", "--out", str(out))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("study", ["sgd-vs-sde", "sparsity"])
def test_label_noise_studies_take_the_std_and_plot(tmp_path, study):
    from dyntools.cli import main

    out = tmp_path / study
    argv = ["simulate", "sde", "--model", "diag-net", "--study", study, "--n", "10", "--d", "20", "--r", "3",
            "--label-noise", "2", "--t1", "1", "--paths", "2", "--records", "6", "--out", str(out)]
    assert main(argv) == 0
    res = store.load(out)
    assert res.config["label_noise"] == 2.0 and res.config["intensity"] == pytest.approx((2.0 / 10) ** 2)
    assert main(["plot", str(out), "--format", "png"]) == 0
    assert any((out / "figures").glob("*.png"))
