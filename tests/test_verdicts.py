"""The report's verdicts from ensembles (dyntools.verdicts, dyntools.diag_net_ensemble): edge cases —
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
    from dyntools.simulations.diag_nets import NOTEBOOK_FINAL

    from dyntools import diag_net_ensemble as E

    ref = NOTEBOOK_FINAL["paper-sgd"]
    n = 20
    stats = _stats([
        ("small", np.full(n, 200.0), np.full(n, ref[0][1]), np.full(n, 0.0373)),              # reproduced (ties)
        ("10%", np.linspace(150, 170, n), np.full(n, ref[1][1] * 3.0), np.full(n, 1e-12)),    # test ×3: close
        ("30%", np.full(n, NAN), np.full(n, NAN), np.full(n, NAN)),                          # all diverged
        ("50%", np.linspace(100, 110, n), np.full(n, ref[3][1]), np.full(n, 1e-40)),          # ℓ0 far: not
    ])
    assert E.notebook_verdicts(stats, ref) == [V.REPRODUCED, V.CLOSE, V.NOT_CHECKABLE, V.NOT_REPRODUCED]
    table = E.rows(stats, ref, E.notebook_verdicts(stats, ref))          # the three words first, the band's word after
    assert [r["verdict"] for r in table] == [f"{V.three_words(w)} ({w})" for w in E.notebook_verdicts(stats, ref)]
    assert table[1]["verdict"].startswith(V.NOT_SHOWN)                    # "close" is not a success word
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
    from dyntools.diag_net_ensemble import perturbed_starts

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
    from dyntools.heatmap_grid import BORDER, region_verdict

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
    from dyntools.simulations.diag_nets import run_ensemble

    from dyntools import diag_net_ensemble as E
    from dyntools import store
    from dyntools.plugins import load_result

    res = run_ensemble("paper-gd", starts=3, steps=40, seed=1)
    assert res["l0"].shape == (4, 3, 2) and res.config["ensemble"]["starts"] == 3
    store.save(res, tmp_path / "ens")
    back = load_result(tmp_path / "ens")                       # the declared schema accepts it
    np.testing.assert_array_equal(back["perturbation_scales"], res["perturbation_scales"])
    stats = E.schedule_stats(res)
    assert [s["survived"] for s in stats] == [3 - int((res["diverged_at"][g] >= 0).sum()) for g in range(4)]
    res["diverged_at"][1, 0] = 7                              # a diverged start drops out of every quantity
    v = E.schedule_stats(res)[1]["values"]
    assert all(np.isnan(x[0]) for x in v.values()) and v["l0"][1] == res["l0"][1, 1, -1]


# ------------------------------------------------------------- the three-word rules on planted ensembles

RNG = np.random.default_rng(7)
LOW, HIGH = RNG.normal(0.0, 1.0, 16), RNG.normal(5.0, 1.0, 16)          # a clear difference
SAME_A, SAME_B = RNG.normal(0.0, 1.0, 16), RNG.normal(0.1, 1.0, 16)     # overlap


def test_median_difference_clear_overlap_reversed_few_and_nan():
    v = V.median_difference(LOW, HIGH, claim="less")
    assert v.word == V.SHOWN and (v.n, v.survivors) == (32, 32) and "bootstrap 2000" in v.rule
    assert V.median_difference(HIGH, LOW, claim="greater").word == V.SHOWN
    assert V.median_difference(HIGH, LOW, claim="less").word == V.CONTRADICTED
    o = V.median_difference(SAME_A, SAME_B, claim="less")
    assert o.word == V.NOT_SHOWN and "contains 0" in o.why
    few = V.median_difference(LOW[:3], HIGH, claim="less")
    assert few.word == V.NOT_SHOWN and few.survivors == 19 and "survived" in few.why
    with_nan = np.concatenate([LOW, [NAN] * 14])                        # 14 diverged: 16 survivors left
    w = V.median_difference(with_nan, HIGH)
    assert w.word == V.SHOWN and (w.n, w.survivors) == (46, 32)
    assert V.median_difference([NAN] * 8, HIGH).word == V.NOT_SHOWN


def test_median_difference_is_seeded_and_states_the_size_needed():
    a, b = RNG.normal(0.0, 1.0, 6), RNG.normal(0.6, 1.0, 6)
    assert V.median_difference(a, b, seed=3) == V.median_difference(a, b, seed=3)
    v = V.median_difference(np.arange(6.0), np.arange(6.0) + 1.0)       # d = −1 inside a wide interval
    assert v.word == V.NOT_SHOWN and v.n_needed is not None and v.n_needed > 12
    assert v.label().startswith("not shown (underpowered: n needed ≈ ")
    with pytest.raises(ValueError, match="claim"):
        V.median_difference(LOW, HIGH, claim="lower")


def test_sign_test_exact_tails_and_planted_pairs():
    assert V.binomial_tail(5, 5) == 1 / 32 and V.binomial_tail(0, 7) == 1.0
    assert V.binomial_tail(8, 10) == pytest.approx(56 / 1024)
    b = np.arange(10.0)
    assert V.sign_test(b - 1, b).word == V.SHOWN                         # 10 of 10 below: p = 1/1024
    assert V.sign_test(b + 1, b).word == V.CONTRADICTED
    mixed = V.sign_test(b + np.where(np.arange(10) % 2, 1.0, -1.0), b)   # 5 of 10
    assert mixed.word == V.NOT_SHOWN and mixed.n_needed is None
    few = V.sign_test([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])                  # 3 of 3 below: p = 1/8
    assert few.word == V.NOT_SHOWN and few.n_needed == 5 and "cannot reach" in few.why
    nan = V.sign_test([0, 0, NAN, 0, 0, 0, 0, 1.0], [1, 1, 1, 1, 1, 1, 1, 1.0])   # 1 NaN, 1 tie: 6 of 6
    assert nan.word == V.SHOWN and (nan.n, nan.survivors) == (8, 7) and "1 tied" in nan.measurement
    with pytest.raises(ValueError, match="pairs"):
        V.sign_test([1.0], [1.0, 2.0])


def test_survival_and_no_divergence():
    assert V.survival(16, 16, at_least=0.75).word == V.SHOWN             # Wilson lower 0.806
    assert V.survival(3, 16, at_least=0.5).word == V.CONTRADICTED        # upper 0.43
    v = V.survival(12, 16, at_least=0.5)                                 # [0.51, 0.90]: lower 0.505 ≥ 0.5
    assert v.word == V.SHOWN
    u = V.survival(9, 12, at_least=0.6)
    assert u.word == V.NOT_SHOWN and u.n_needed is not None and u.n_needed > 12
    assert V.survival(0, 0, at_least=0.5).word == V.NOT_SHOWN
    assert V.no_divergence(15, 16).word == V.CONTRADICTED
    assert V.no_divergence(16, 16).word == V.SHOWN and V.no_divergence(3, 3).word == V.NOT_SHOWN


def test_verdict_text_carries_rule_n_and_survivors():
    t = V.no_divergence(15, 16).text()
    assert t.startswith("contradicted — 1 of 16 diverged [no divergence") and "n = 16, 15 survived" in t
    with pytest.raises(ValueError, match="word"):
        V.Verdict("holds", "r", 1, 1, "m")


def test_rectangle_distance():
    assert V.rectangle_distance(np.ones((3, 4), bool)) == 0.0
    band = np.zeros((4, 6), bool)
    band[1, :] = True                                                    # one horizontal band
    assert V.rectangle_distance(band) == 0.0
    assert V.rectangle_distance(np.eye(5, dtype=bool)) == pytest.approx(1 - 2 / 7)   # best: a 2×2 square, IoU 2/7
    assert math.isnan(V.rectangle_distance(np.zeros((2, 2), bool)))


LRS, LAMS = np.logspace(-4, -1, 4), np.logspace(-6, 0, 7)


def planted(diagonal: bool) -> np.ndarray:
    """A heatmap whose good cells are a diagonal (best λ ∝ 1/lr: slope −2 in grid units) or a vertical band."""
    acc = np.full((4, 7), 0.5)
    for i in range(4):
        acc[i, 6 - 2 * i if diagonal else 3] = 0.95
    return acc


def test_region_shape_and_decoupling_on_planted_heatmaps():
    diag, rect = V.region_shape(planted(True), LRS, LAMS, 0.9), V.region_shape(planted(False), LRS, LAMS, 0.9)
    assert diag.slope == pytest.approx(-2.0) and diag.distance == pytest.approx(0.75) and diag.rows == 4
    assert rect.slope == pytest.approx(0.0) and rect.distance == 0.0
    assert V.decoupling(diag, rect).word == V.SHOWN
    assert V.decoupling(rect, diag).word == V.CONTRADICTED
    same = V.decoupling(rect, rect)
    assert same.word == V.NOT_SHOWN and "near rectangles" in same.why
    nan_grid = planted(False)
    nan_grid[1:] = NAN                                                   # only one row survives
    lone = V.region_shape(nan_grid, LRS, LAMS, 0.9)
    assert lone.rows == 1 and math.isnan(lone.slope)
    assert V.decoupling(diag, lone).word == V.NOT_SHOWN and lone.finite == 7
    two_rows = planted(False)
    two_rows[2:] = 0.5                                                   # good cells in 2 lr rows only
    short = V.decoupling(diag, V.region_shape(two_rows, LRS, LAMS, 0.9))
    assert short.word == V.NOT_SHOWN and "fewer than 3 lr rows" in short.why and short.survivors == 56
    with pytest.raises(ValueError, match="shape"):
        V.region_shape(np.zeros((3, 7)), LRS, LAMS, 0.9)


def test_fraction_larger_and_claims_table():
    assert V.fraction_larger(20, 24, 4, 24).word == V.SHOWN
    assert V.fraction_larger(4, 24, 20, 24).word == V.CONTRADICTED
    v = V.fraction_larger(6, 24, 5, 24)                                  # the quick heatmaps' 6 vs 5 cells
    assert v.word == V.NOT_SHOWN and v.n_needed > 1000 and "overlap" in v.why
    assert V.fraction_larger(5, 24, 6, 24).n_needed is None              # the wrong way: no size helps
    table = V.claims_table([("a | b", v), ("c", V.fraction_larger(20, 24, 4, 24))])
    lines = table.splitlines()
    assert len(lines) == 4 and "a \\| b" in lines[2] and "**not shown (underpowered: n needed ≈" in lines[2]
    assert lines[3].endswith("|  |")                                     # no 'why' when shown


def test_magnitude_and_sign_test_ties():
    assert V.magnitude([2e-5, 1e-5, 3e-5, 5e-6, 1e-5], 1e-5).word == V.SHOWN
    far = V.magnitude([0.8, 0.4, 1.2, 0.9, 0.5], 1e-5)                 # the 1-D loss against the source's 1e-5
    assert far.word == V.CONTRADICTED and "median 0.8" in far.measurement
    assert V.magnitude([1e-5, 1e-5, 1, 1, 1], 1e-5).word == V.NOT_SHOWN
    assert V.magnitude([1e-5, NAN, NAN], 1e-5).word == V.NOT_SHOWN
    ties = V.sign_test([12.0] * 5, [12.0] * 5)
    assert ties.word == V.NOT_SHOWN and ties.n_needed is None and "ties" in ties.why


def test_sign_test_counts_lost_pairs_in_the_seeds_needed():
    a = [0.1, 0.1, 0.1, NAN, NAN]                                        # 2 of 5 pairs lost to divergence
    v = V.sign_test(a, [0.2] * 5)
    assert v.word == V.NOT_SHOWN and v.n_needed == math.ceil(5 * 5 / 3) and "Only 3 of 5 pairs" in v.why


def test_sign_test_counts_ties_in_the_seeds_needed():
    v = V.sign_test([1.0] * 4 + [2.0] * 12, [2.0] * 16)                 # 4 untied of 16 (the rank at c = 0.8)
    assert v.word == V.NOT_SHOWN and v.n_needed == 20


def test_universal_claims():
    assert V.every(64, 64, 64, "paths bounce").word == V.SHOWN
    assert V.every(63, 64, 64, "paths bounce").word == V.CONTRADICTED
    assert V.every(None, 64, 0, "paths bounce").word == V.NOT_SHOWN
    assert V.every(3, 3, 3, "paths bounce").n_needed == 5
    assert V.every_step(0.0, 64, 64, "recorded steps above").word == V.SHOWN
    assert V.every_step(1e-9, 64, 64, "recorded steps above").word == V.CONTRADICTED
    assert V.every_step(NAN, 64, 0, "recorded steps above").word == V.NOT_SHOWN
    assert V.every_step(0.0, 64, 2, "recorded steps above").word == V.NOT_SHOWN


def test_check_maps_a_deterministic_threshold_to_the_three_words():
    assert V.check(True, "r", 1, 1, "m").word == V.SHOWN
    c = V.check(False, "r", 1, 1, "m", why_not="too high.")
    assert c.word == V.CONTRADICTED and c.why == "too high."
    assert V.check(None, "r", 2, 1, "m").word == V.NOT_SHOWN


def test_three_words_of_the_band_rules():
    assert [V.three_words(w) for w in (V.REPRODUCED, V.CLOSE, V.NOT_REPRODUCED, V.NOT_CHECKABLE)] == \
        [V.SHOWN, V.NOT_SHOWN, V.CONTRADICTED, V.NOT_SHOWN]
    assert [V.three_words(w) for w in (V.SMALLER, V.OVERLAPPING, V.LARGER)] == [V.SHOWN, V.NOT_SHOWN, V.CONTRADICTED]
    with pytest.raises(ValueError, match="verdict"):
        V.three_words("holds")


def test_fraction_larger_survivors_are_the_runs_not_the_good_cells():
    assert V.fraction_larger(6, 24, 5, 24).survivors == 48
    assert V.fraction_larger(6, 24, 5, 24, alive=40).survivors == 40


def test_grid_fraction_larger_is_robust_to_borderline_cells_and_offers_no_ensemble_size():
    from dyntools import verdicts as V

    # clearly larger by the sure count against the other's possible count: shown
    assert V.grid_fraction_larger((20, 22), (2, 3), 24).word == V.SHOWN
    # clearly smaller even by the possible count against the other's sure count: contradicted
    assert V.grid_fraction_larger((2, 3), (20, 22), 24).word == V.CONTRADICTED
    # borderline cells that could fall either way: neither word, and no "n needed" (grid cells are not draws)
    v = V.grid_fraction_larger((3, 20), (10, 12), 24)
    assert v.word == V.NOT_SHOWN and v.n_needed is None and "not independent" in v.why
    # a last bit that moves every borderline cell cannot flip shown into contradicted or back
    assert V.fraction_larger(3, 24, 12, 24).word == V.CONTRADICTED          # the one-sided rule would
    assert V.grid_fraction_larger((3, 20), (10, 12), 24).word != V.CONTRADICTED
