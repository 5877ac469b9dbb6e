"""The report's verdicts from ensembles (dyntools.verdicts, simulations.diag_nets_ensemble): edge cases —
every run diverged, NaN, ties, a reference on the band's edge — and the rules as stated."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dyntools import verdicts as V

NAN = float("nan")


def test_spread_drops_nan_and_inf_and_is_none_when_nothing_is_left():
    assert V.spread([NAN, np.inf, -np.inf]) is None
    assert V.spread([]) is None
    s = V.spread([1.0, NAN, 3.0, 2.0])
    assert (s.count, s.median, s.low, s.high) == (3, 2.0, 1.0, 3.0)
    assert V.spread_text([NAN]) == "—"


@given(st.integers(0, 200), st.integers(1, 200))
def test_wilson_interval_contains_the_proportion_and_stays_in_0_1(k, n):
    k = min(k, n)
    lo, hi = V.wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_wilson_interval_known_value_and_bad_input():
    lo, hi = V.wilson_interval(4, 16)                  # by hand: centre 0.2934, half 0.1999 at z = 1.96
    assert lo == pytest.approx(0.1018, abs=1e-4) and hi == pytest.approx(0.4950, abs=1e-4)
    assert V.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="k, n"):
        V.wilson_interval(5, 4)


def test_against_reference_rules():
    values = np.arange(60.0, 81.0)                     # q10 = 62, q90 = 78
    assert V.against_reference(values, 70, tolerance=1.1) == V.REPRODUCED
    assert V.against_reference(values, 78 * 1.1, tolerance=1.1) == V.REPRODUCED      # on the widened edge: in
    assert V.against_reference(values, 78 * 1.2, tolerance=1.1) == V.CLOSE            # within 1.1² = 1.21
    assert V.against_reference(values, 62 / 1.3, tolerance=1.1) == V.NOT_REPRODUCED
    assert V.against_reference(values, 200, tolerance=1.1) == V.NOT_REPRODUCED


def test_against_reference_never_reads_a_nan():
    all_diverged = np.full(48, NAN)
    assert V.against_reference(all_diverged, 71, tolerance=1.1) == V.NOT_CHECKABLE
    few = np.r_[np.full(44, NAN), [71.0, 71.0, 71.0, 71.0]]                # 4 survivors < MIN_ALIVE
    assert V.against_reference(few, 71, tolerance=1.1) == V.NOT_CHECKABLE
    assert V.against_reference(np.full(10, 5.0), NAN, tolerance=1.1) == V.NOT_CHECKABLE
    assert V.against_reference(np.full(10, 5.0), None, tolerance=1.1) == V.NOT_CHECKABLE
    # ties: every survivor equal to the reference is reproduced; NaNs among them are ignored
    assert V.against_reference(np.r_[np.full(10, 71.0), [NAN] * 5], 71, tolerance=1.1) == V.REPRODUCED
    with pytest.raises(ValueError, match="tolerance"):
        V.against_reference(np.ones(10), 1.0, tolerance=0.9)


def test_against_reference_with_a_zero_or_negative_band_edge():
    assert V.against_reference(np.zeros(10), 0.0, tolerance=2.0) == V.REPRODUCED
    assert V.against_reference(np.full(10, -1.0), -1.5, tolerance=2.0) == V.REPRODUCED
    assert V.against_reference(np.full(10, -1.0), -3.5, tolerance=2.0) == V.CLOSE


def test_combine_is_the_worst_and_not_checkable_wins():
    assert V.combine([V.REPRODUCED, V.CLOSE]) == V.CLOSE
    assert V.combine([V.REPRODUCED, V.NOT_REPRODUCED, V.CLOSE]) == V.NOT_REPRODUCED
    assert V.combine([V.REPRODUCED, V.NOT_CHECKABLE]) == V.NOT_CHECKABLE
    assert V.combine([]) == V.NOT_CHECKABLE
    with pytest.raises(ValueError, match="verdict"):
        V.combine(["fine"])


def test_ordered_separated_overlapping_tied_and_diverged():
    small, large = np.linspace(1e-13, 1e-11, 20), np.full(20, 0.0373)
    assert V.ordered(small, large) == V.SMALLER
    assert V.ordered(large, small) == V.LARGER
    assert V.ordered(large, large) == V.OVERLAPPING                           # a tie is no ordering
    assert V.ordered(np.linspace(0, 2, 20), np.linspace(1, 3, 20)) == V.OVERLAPPING
    # the old report's bug: 0.0373 against the NaN of a diverged run
    assert V.ordered(np.full(20, NAN), large) == V.NOT_CHECKABLE
    assert V.ordered(np.r_[[0.01] * 3, [NAN] * 17], large) == V.NOT_CHECKABLE


def test_proportions_agree():
    assert V.proportions_agree(4, 16, 8, 16)                                   # the two machines' counts
    assert V.proportions_agree(6, 16, 6, 16)
    assert not V.proportions_agree(0, 64, 40, 64)
    assert V.proportions_agree(0, 0, 5, 10)                                     # nothing measured: compatible


def _stats(columns):
    """schedule_stats-shaped input: one dict per schedule with its per-start values (NaN = diverged)."""
    out = []
    for label, l0, test, col in columns:
        l0 = np.asarray(l0, float)
        alive = np.isfinite(l0)
        out.append({"label": label, "starts": l0.size, "survived": int(alive.sum()),
                    "values": {"l0": l0, "test_loss": np.asarray(test, float), "column_norm": np.asarray(col, float),
                               "rank": l0, "train_loss": np.asarray(test, float)}})
    return out


def test_ensemble_verdicts_against_the_notebook_edge_cases():
    from dyntools.simulations import diag_nets_ensemble as E
    from dyntools.simulations.diag_nets import NOTEBOOK_FINAL

    ref = NOTEBOOK_FINAL["paper-sgd"]
    n = 20
    stats = _stats([
        ("small", np.full(n, 200.0), np.full(n, ref[0][1]), np.full(n, 0.0373)),              # reproduced (ties)
        ("10%", np.linspace(150, 170, n), np.full(n, ref[1][1] * 3.0), np.full(n, 1e-12)),    # test ×3: close
        ("30%", np.full(n, NAN), np.full(n, NAN), np.full(n, NAN)),                          # all diverged
        ("50%", np.linspace(100, 110, n), np.full(n, ref[3][1]), np.full(n, 1e-40)),          # ℓ0 far: not
    ])
    assert E.notebook_verdicts(stats, ref) == [V.REPRODUCED, V.CLOSE, V.NOT_CHECKABLE, V.NOT_REPRODUCED]
    assert E.column_norm_verdict(stats) == V.SMALLER
    assert "smaller" in E.column_norm_sentence(V.SMALLER, stats)
    nums = E.numbers(stats, E.notebook_verdicts(stats, ref), E.column_norm_verdict(stats))
    assert nums["30%"]["l0"] is None and nums["30%"]["survived"] == 0
    assert nums["30%"]["survived_ci95"][0] == 0.0 and not any(
        isinstance(x, float) and math.isnan(x) for x in nums["small"]["l0"].values())
    # the largest-phase schedule all diverged: the column-norm verdict is not checkable, not a comparison with NaN
    stats[-1] = stats[2]
    assert E.column_norm_verdict(stats) == V.NOT_CHECKABLE
    assert "Not checkable" in E.column_norm_sentence(V.NOT_CHECKABLE, stats)


def test_perturbed_starts_are_seeded_per_start_and_log_spaced():
    from dyntools.simulations.diag_nets_ensemble import perturbed_starts

    u, s = perturbed_starts(5, 4, seed=3)
    assert s[0] == pytest.approx(1e-12) and s[-1] == pytest.approx(1e-8)
    rel = (u / 0.1 - 1.0) / s[:, None]
    xi = np.random.default_rng([3, 2]).standard_normal(5)
    assert np.allclose(rel[2], xi, rtol=0, atol=1e-5)                       # round-off: 1e-16 / 5e-10
    with pytest.raises(ValueError, match="scale_range"):
        perturbed_starts(5, 4, scale_range=(0.0, 1e-8))


def test_l1_sparsity_verdict_needs_a_margin_and_never_reads_a_nan():
    from dyntools.simulations.adamw_l1 import SHARE_MARGIN, l1_verdict

    def shares(mx, med):
        return {"max_small_fraction": mx, "median_small_fraction": med}

    assert l1_verdict(shares(0.57, 0.40), shares(0.62, 0.50)) == "sparser"            # this machine's 62 vs 57
    assert l1_verdict(shares(0.564, 0.40), shares(0.74, 0.55)) == "sparser"           # the AVX2 machine's
    assert l1_verdict(shares(0.62, 0.50), shares(0.57, 0.40)) == "not sparser"
    assert l1_verdict(shares(0.57, 0.40), shares(0.57 + SHARE_MARGIN / 2, 0.5)) == "no clear difference"
    assert l1_verdict(shares(0.5, 0.5), shares(0.5, 0.5)) == "no clear difference"     # a tie
    assert l1_verdict(shares(0.5, 0.6), shares(0.6, 0.5)) == "no clear difference"     # they disagree
    assert l1_verdict(shares(float("nan"), float("nan")), shares(0.6, 0.5)) == "not checkable"


def test_digits_region_counts_borderline_cells_as_either():
    from dyntools.simulations.adamw_heatmaps import BORDER, region_verdict

    class Fake(dict):
        config = {"optimizers": ["adam", "adamw"]}

    acc = np.full((2, 2, 3), 0.5)
    acc[1, 0, :] = [0.95, 0.95, 0.95]             # AdamW: 3 sure cells
    acc[0, 0, :2] = [0.95, 0.9]                    # Adam: 1 sure, 1 borderline
    counts, region = region_verdict(Fake(val_acc=acc), 0.9, "adam", "adamw")
    assert counts == {"adam": (1, 2), "adamw": (3, 3)} and region == "at least as large"
    acc[0, 1, :] = 0.9 + BORDER / 2                # three more borderline Adam cells: undecided
    assert region_verdict(Fake(val_acc=acc), 0.9, "adam", "adamw")[1] == "undecided"
    acc[0, 1, :] = 0.99
    acc[0, 0, 2] = 0.99
    assert region_verdict(Fake(val_acc=acc), 0.9, "adam", "adamw")[1] == "smaller"
    acc[:] = np.nan                                 # everything diverged: equal (empty) regions, no NaN read
    empty = ({"adam": (0, 0), "adamw": (0, 0)}, "at least as large")
    assert region_verdict(Fake(val_acc=acc), 0.9, "adam", "adamw") == empty
    assert V.count_above([0.9, np.nan, 0.905, 0.95], 0.9, 0.01) == (1, 3)


def test_a_small_ensemble_runs_saves_and_loads_and_the_stats_skip_diverged_starts(tmp_path):
    from dyntools.simulations import diag_nets_ensemble as E

    from dyntools import store
    from dyntools.commands.registry import load_result

    res = E.run_ensemble("paper-gd", starts=3, steps=40, seed=1)
    assert res["l0"].shape == (4, 3, 2) and res.config["ensemble"]["starts"] == 3
    store.save(res, tmp_path / "ens")
    back = load_result(tmp_path / "ens")                       # the declared schema accepts it
    np.testing.assert_array_equal(back["perturbation_scales"], res["perturbation_scales"])
    stats = E.schedule_stats(res)
    assert [s["survived"] for s in stats] == [3 - int((res["diverged_at"][g] >= 0).sum()) for g in range(4)]
    res["diverged_at"][1, 0] = 7                              # a diverged start drops out of every quantity
    v = E.schedule_stats(res)[1]["values"]
    assert all(np.isnan(x[0]) for x in v.values()) and v["l0"][1] == res["l0"][1, 1, -1]
