"""``dyntools sweep adamw-difficulty`` (harder and easier spirals, issue 26 item 3): the counts and verdicts
from constructed accuracies (with properties), a tiny sweep as a user runs it — paired cells, replicates,
resume, figure — and bad input."""

import json

import numpy as np
import pytest
from dyntools.simulations import adamw_difficulty as D
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import cli, store
from dyntools.plots import check

THR = 0.9


def _acc(values):
    """``[replicate, noise, turns, optimizer, lr, λ]`` from ``[noise][turns][optimizer] -> list of cells``."""
    return np.array(values, dtype=float)[None, ..., None, :]


def test_counts_pool_the_replicates_and_border_cells_count_either_way():
    acc = np.full((2, 1, 1, 2, 1, 3), 0.5)
    acc[0, 0, 0, 0] = [[0.95, 0.905, np.nan]]          # sure, borderline, diverged
    acc[1, 0, 0, 0] = [[0.99, 0.2, 0.895]]             # sure, no, borderline
    acc[:, 0, 0, 1] = 0.97                             # 6 sure
    c = D.counts(acc, THR)
    assert c[0, 0, 0].tolist() == [2, 4] and c[0, 0, 1].tolist() == [6, 6]
    assert D.region_verdict(c[0, 0, 0], c[0, 0, 1]) == "at least as large"
    assert D.region_verdict((6, 6), (2, 4)) == "smaller"
    assert D.region_verdict((3, 5), (4, 4)) == "undecided"
    assert D.region_verdict((0, 0), (0, 0)) == "none"
    assert D.region_verdict((0, 1), (0, 0)) == "undecided"


def test_growth_is_named_and_decides_the_shrink_verdict():
    # one replicate, noise 2 × turns 2, one optimizer pair, 4 cells each (coupled = decoupled here)
    easy, harder = [0.99, 0.99, 0.99, 0.5], [0.99, 0.99, 0.5, 0.5]
    acc = _acc([[[easy, easy], [harder, harder]], [[harder, harder], [[0.5] * 4] * 2]])
    v = D.verdicts(acc, THR)
    assert v["shrinks"] == ["holds", "holds"] and v["grows"] == [[], []]
    acc[0, 1, 0, 0, 0] = 0.99                          # noise 0 → 1 at turns 0 now grows 3 → 4 for sure
    v = D.verdicts(acc, THR)
    assert v["shrinks"][0] == "does not hold" and v["shrinks"][1] == "holds"
    assert v["grows"][0] == [((0, 0), (1, 0))]
    text = D.growth_text(v, 0, np.array([0.02, 0.1]), np.array([1.0, 2.0]))
    assert text == "noise 0.02 → 0.1 at 1 turns: 3 → 4 cells"
    acc[0, 1, 0, 0, 0] = 0.905                         # a borderline cell: could be 3 or 4 → undecided
    assert D.verdicts(acc, THR)["shrinks"][0] == "undecided"


def test_best_accuracies_compare_through_the_median_over_replicates_and_nan_is_not_measured():
    acc = np.full((3, 1, 1, 2, 1, 2), 0.5)
    acc[:, 0, 0, 0, 0, 0] = [0.90, 0.95, 0.93]
    acc[:, 0, 0, 1, 0, 0] = [0.99, 0.96, 0.94]         # differences +0.09, +0.01, +0.01: median +0.01
    v = D.verdicts(acc, THR)
    assert v["best_agree"] is True and v["best_diff_range"] == pytest.approx([0.01, 0.01])
    acc[1, 0, 0, 1, 0, 0] = 0.99                        # +0.09, +0.04, +0.01: median +0.04
    assert D.verdicts(acc, THR)["best_agree"] is False
    acc[:, 0, 0, 1] = np.nan                            # every AdamW cell diverged
    v = D.verdicts(acc, THR)
    assert v["best_agree"] is None and v["region"] == [["smaller"]]


ACCURACY = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(base=st.lists(ACCURACY, min_size=6, max_size=6), steps=st.lists(st.floats(0.0, 0.3), min_size=36, max_size=36))
def test_property_a_region_that_never_gains_accuracy_never_grows_for_sure(base, steps):
    """Accuracies that only fall with difficulty (cell by cell, along both knobs) can never make the shrink
    verdict "does not hold"; and with no value within the border of the threshold, the verdict is exactly
    "holds"."""
    drop = np.array(steps).reshape(2, 3, 6).cumsum(axis=0).cumsum(axis=1)     # non-decreasing along both knobs
    acc = np.empty((1, 2, 3, 2, 1, 6))
    acc[0, :, :, :, 0] = (np.array(base) - drop)[:, :, None, :]
    assert "does not hold" not in D.verdicts(acc, THR)["shrinks"]
    near = np.abs(acc - THR) <= D.BORDER
    if not near.any():
        assert D.verdicts(acc, THR)["shrinks"] == ["holds", "holds"]


@settings(max_examples=60, deadline=None)
@given(coupled=st.lists(ACCURACY, min_size=8, max_size=8), gains=st.lists(st.floats(0.0, 0.3), min_size=8, max_size=8))
def test_property_a_decoupled_optimizer_at_least_as_accurate_cell_by_cell_is_never_smaller(coupled, gains):
    acc = np.empty((2, 1, 1, 2, 2, 2))
    acc[:, 0, 0, 0] = np.array(coupled).reshape(2, 2, 2)
    acc[:, 0, 0, 1] = np.minimum(1.0, acc[:, 0, 0, 0] + np.array(gains).reshape(2, 2, 2))
    c = D.counts(acc, THR)
    assert np.all(c[:, :, 0] <= c[:, :, 1])       # sure and possible counts alike
    assert D.verdicts(acc, THR)["region"][0][0] in ("at least as large", "undecided", "none")


TINY = ["--noises", "0.02,0.2", "--turns", "1,2", "--lr-grid", "1e-2:1e-2:1", "--wd-grid", "1e-30:1e-1:2",
        "--replicates", "2", "--n", "40", "--n-val", "40", "--hidden", "6", "--batch-size", "20", "--epochs", "2",
        "--workers", "1"]


def test_tiny_sweep_as_a_user_runs_it_paired_resumable_and_plotted(tmp_path, capsys, monkeypatch):
    out = tmp_path / "d"
    assert cli.main(["sweep", "adamw-difficulty", *TINY, "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cells"] == 2 * 2 * 2 * 2 * 1 * 2 and summary["computed"] == summary["cells"]
    res = store.load(out)
    acc = res["val_acc"]
    assert acc.shape == (2, 2, 2, 2, 1, 2) and np.isfinite(acc).all()
    # paired: at λ = 1e-30 Adam and AdamW start alike and see the same batches → the same accuracy
    np.testing.assert_array_equal(acc[..., 0, :, 0], acc[..., 1, :, 0])
    assert not np.array_equal(acc[0], acc[1])                # replicates: other data, weights and batches
    assert len(summary["difficulties"]) == 4 and set(summary["shrinks"]) == {"adam", "adamw"}
    assert "good region" in summary["verdict"] and res.config["noises"] == [0.02, 0.2]
    # resumed: every cell reused, the same numbers
    assert cli.main(["sweep", "adamw-difficulty", *TINY, "--out", str(out), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["computed"] == 0 and again["reused"] == summary["cells"]
    np.testing.assert_array_equal(store.load(out)["val_acc"], acc)
    monkeypatch.setenv(check.ENV, "strict")
    assert cli.main(["plot", str(out), "--out", str(tmp_path / "fig"), "--format", "png"]) == 0
    assert (tmp_path / "fig" / "adamw_difficulty.png").is_file()


@pytest.mark.parametrize("args, needle", [
    (["--noises", "0.1,0.05"], "Invalid noises: [0.1, 0.05] (must be strictly increasing"),
    (["--turns", "2,2"], "Invalid turns"),
    (["--turns", "0,1"], "Invalid --turns"),
    (["--family", "rmsprop"], "Invalid family"),
    (["--lr-grid", "1e-2:1e-3:3"], "Invalid --lr-grid"),
    (["--lr-grid", "1e-3:1e-1:100", "--wd-grid", "1e-6:1:100"], "540000 cells"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, needle):
    out = tmp_path / "bad"
    assert cli.main(["sweep", "adamw-difficulty", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
