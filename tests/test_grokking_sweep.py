"""``dyntools sweep grokking`` (simulations/grokking_sweep.py): each cell is bitwise the path of ``simulate
grokking`` with that seed (MLP and transformer, every optimizer), the sweep resumes, runs on worker processes and
Dask with the same bits, ``dyntools plot`` draws the phase diagrams under the strict figure check, bad input is one
line."""

import json

import numpy as np
import pytest
from dyntools.simulations import grokking as G
from dyntools.simulations import grokking_sweep as GS

from dyntools import store
from tests.conftest import assert_command_refuses, run_cli

TINY = ["--p", "7", "--width", "16", "--steps", "40", "--records", "5", "--seeds", "2", "--decays", "0.3,1",
        "--fractions", "0.5,0.7"]
NETS = {"mlp": {"width": 16}, "transformer": {"d_model": 8, "heads": 2}}


@pytest.mark.parametrize("model", ["mlp", pytest.param("transformer", marks=pytest.mark.slow)])
def test_every_cell_is_bitwise_the_single_run_with_that_seed(model):
    p = G.GrokkingParams(model=model, p=7, steps=30, records=5, seeds=2, phase_seeds=0, weight_decay=0.5,
                         train_fraction=0.6, workers=2, **NETS[model])
    single = G.simulate(p, seed=3)
    config = GS.common_config(p)
    finals = []
    for g, name in enumerate(GS.OPTIMIZERS):
        for s in range(2):
            cell = GS.sweep_cell(config, {"optimizer": name, "weight_decay": 0.0 if name == "none" else 0.5,
                                          "train_fraction": 0.6, "seed_index": s}, 3, 7)
            for key in G.METRICS:
                np.testing.assert_array_equal(cell[key], single[key][g, s], err_msg=f"{model} {name} {s} {key}")
            assert cell["step_test_threshold"] == single["step_test_threshold"][g, s]
            assert cell["reached"] == int(single["step_test_threshold"][g, s] >= 0)
            finals.append(cell["weight_norm"][-1])
    assert len(set(finals)) == len(finals)          # the optimizers and seeds differ: the comparison has teeth


def test_an_empty_grid_from_python_is_refused_naming_the_option():
    with pytest.raises(ValueError, match="Invalid fractions"):
        GS.build_spec(GS.GrokkingSweepParams(fractions=()), 0)
    with pytest.raises(ValueError, match="Invalid decays"):
        GS.build_spec(GS.GrokkingSweepParams(decays=()), 0)
    assert len(GS.build_spec(GS.GrokkingSweepParams(decays=(), optimizers=("none",), seeds=1), 0).cells) == 3


def test_cells_cover_the_grid_and_none_once_per_fraction():
    p = GS.GrokkingSweepParams(decays=(0.1, 1.0), fractions=(0.5, 0.7), seeds=3)
    cells = GS.cells_of(p)
    assert len(cells) == (2 * 2 + 1) * 2 * 3
    assert {c["weight_decay"] for c in cells if c["optimizer"] == "none"} == {0.0}


def test_the_sweep_resumes_plots_and_matches_on_processes(tmp_path, monkeypatch):
    out, out2 = tmp_path / "gs", tmp_path / "gs2"
    proc = run_cli("sweep", "grokking", *TINY, "--workers", "1", "--seed", "5", "--json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["computed"] == 20 and summary["reused"] == 0 and len(summary["verdicts"]) == 4
    res = store.load(out)
    assert res.kind == "grokking-sweep" and res["reached"].shape == (3, 2, 2, 2)
    assert res["test_acc"].shape == (3, 2, 2, 2, res["steps"].size)
    np.testing.assert_array_equal(res["test_acc"][2, 0], res["test_acc"][2, 1])   # none: one run, both rows
    again = run_cli("sweep", "grokking", *TINY, "--workers", "1", "--seed", "5", "--json", "--out", out)
    assert again.returncode == 0 and json.loads(again.stdout)["reused"] == 20
    proc = run_cli("sweep", "grokking", *TINY, "--workers", "2", "--seed", "5", "--out", out2)
    assert proc.returncode == 0, proc.stderr
    other = store.load(out2)
    for key in ("test_acc", "train_loss", "weight_norm", "reached"):
        np.testing.assert_array_equal(res[key], other[key])
    # the cell of (adamw, λ = 1, f = 0.7, s = 1) is path 1 of simulate grokking with that λ and fraction
    single = G.simulate(G.GrokkingParams(p=7, width=16, steps=40, records=5, seeds=2, phase_seeds=0,
                                         weight_decay=1.0, train_fraction=0.7), seed=5)
    np.testing.assert_array_equal(res["test_acc"][0, 1, 1, 1], single["test_acc"][0, 1])
    monkeypatch.setenv("DYNTOOLS_FIGURE_CHECK", "strict")
    proc = run_cli("plot", out, "--out", tmp_path / "fig", env={"DYNTOOLS_FIGURE_CHECK": "strict"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "fig" / "grokking-phase.png").is_file()


def test_the_transformer_sweep_on_a_dask_local_cluster(tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "gt"
    args = ["--model", "transformer", "--d-model", "8", "--heads", "2", "--p", "5", "--steps", "20", "--records",
            "4", "--seeds", "2", "--decays", "1", "--fractions", "0.6", "--optimizers", "adamw,none"]
    proc = run_cli("sweep", "grokking", *args, "--dask-local", "1", "--json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    res = store.load(out)
    assert res.config["model"] == "transformer" and res["reached"].shape == (2, 1, 1, 2)
    single = G.simulate(G.GrokkingParams(model="transformer", d_model=8, heads=2, p=5, steps=20, records=4, seeds=2,
                                         phase_seeds=0, weight_decay=1.0, train_fraction=0.6), seed=0)
    np.testing.assert_array_equal(res["test_loss"][0, 0, 0], single["test_loss"][0])
    np.testing.assert_array_equal(res["test_loss"][1, 0, 0], single["test_loss"][2])


@pytest.mark.parametrize("args, needle", [
    (["--model", "transformer", "--d-model", "32", "--heads", "3"], "Invalid heads: 3 (must divide d_model = 32)"),
    (["--decays", "1,0.3"], "Invalid decays: must be increasing"),
    (["--fractions", "0.0001"], "Invalid train_fraction: 0.0001"),
    (["--optimizers", "adamw,adamw"], "Invalid optimizers"),
    (["--optimizers", "sgd"], "sgd"),
    (["--dask-local", "2", "--scheduler", "tcp://127.0.0.1:1"], "Invalid --dask-local"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args, needle):
    assert_command_refuses(tmp_path, "sweep", "grokking", *args, needle=needle)
