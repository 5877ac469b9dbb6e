"""``dyntools simulate model --file my_model.py --data data.npz`` and ``dyntools plot`` on its result (issue 25.5)."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import assert_usage_error, run_cli

MODEL_FILE = '''
import sympy as sp
import dyntools as dt

u, v, w, x = sp.symbols("u v w x")
MODEL = dt.SymbolicModel(u * v * w * x, params=[u, v, w], inputs=x, coordinates=6,
                         init={"u": 0.5, "v": 0.5, "w": 0.0}, name="diag3")
'''


def _files(tmp_path, d=6):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, d))
    np.savez(tmp_path / "data.npz", X=X, y=X[:, 0] - X[:, 1])
    (tmp_path / "my_model.py").write_text(MODEL_FILE)
    return tmp_path / "my_model.py", tmp_path / "data.npz"


def test_a_model_file_trains_from_the_command_line_and_its_result_plots(tmp_path):
    model, data = _files(tmp_path)
    out = tmp_path / "run"
    proc = run_cli("simulate", "model", "--file", model, "--data", data, "--lr", "0.05", "--steps", "300",
                   "--label-noise", "0.1", "--seed", "3", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["kind"] == "symbolic-model" and summary["status"] == "completed"
    assert summary["final_train_loss"] < 0.5 * np.mean((np.load(data)["y"]) ** 2)   # it learned
    proc = run_cli("plot", out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "figures" / "model_training.png").is_file()


def test_bad_model_files_and_data_are_one_line_errors(tmp_path):
    model, data = _files(tmp_path, d=4)                 # the model reads 6 columns, the data has 4
    out = tmp_path / "never"
    assert_usage_error(run_cli("simulate", "model", "--file", model, "--data", data, "--out", out),
                       "Invalid X", "reads 6 columns", out_dir=out)
    bad = tmp_path / "bad_model.py"
    bad.write_text("import sympy as sp\nimport dyntools as dt\nu, v, x = sp.symbols('u v x')\n"
                   "MODEL = dt.SymbolicModel(u * x, params=[u, v], inputs=x)\n")
    assert_usage_error(run_cli("simulate", "model", "--file", bad, "--data", data, "--out", out),
                       "bad_model.py", "parameter v does not appear", out_dir=out)
