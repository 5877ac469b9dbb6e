"""Verdict sentences of the report are computed from the numbers beside them, by one function per entry,
and say "not measured" rather than read a verdict from a diverged run's NaN."""

from __future__ import annotations

import math

import pytest
from dyntools.simulations.loss_stabilization import proposition_verdict

BASE = {"paths": 64, "diverged_paths": 0, "paths_bouncing_at_end": 1.0, "above_band_fraction_recorded": 0.0,
        "below_band_fraction_recorded": 0.031}


def test_the_seed_run_reads_as_measured():
    v = proposition_verdict(BASE)
    assert (v["bounce"], v["upper"], v["lower"]) == ("shown", "shown", "contradicted")
    assert "dips under the lower bound" in v["sentence"] and "3.10%" in v["sentence"]
    assert v["headline"].startswith("bounce shown (100% of 64 paths)")
    assert "universal claim" in v["headline"] and "n = 64, 64 survived" in v["headline"]


@pytest.mark.parametrize("bad", [math.nan, None])
def test_all_diverged_is_not_measured_never_shown(bad):
    v = proposition_verdict({**BASE, "diverged_paths": 64, "paths_bouncing_at_end": bad,
                             "above_band_fraction_recorded": bad, "below_band_fraction_recorded": bad})
    assert v["bounce"] == v["upper"] == v["lower"] == "not shown"
    assert "holds" not in v["sentence"] and "64 paths diverged" in v["headline"]


def test_nan_fraction_is_not_measured_and_some_diverged_is_not_a_full_bounce():
    v = proposition_verdict({**BASE, "above_band_fraction_recorded": math.nan})
    assert v["upper"] == "not shown"
    v = proposition_verdict({**BASE, "diverged_paths": 2, "paths_bouncing_at_end": 1.0})
    assert v["bounce"] == "contradicted" and "(2 diverged)" in v["sentence"]
    assert v["verdicts"][0].survivors == 62


def test_a_diverged_path_contradicts_the_upper_bound_its_survivors_keep():
    v = proposition_verdict({**BASE, "diverged_paths": 1, "above_band_fraction_recorded": 0.0})
    assert v["upper"] == "contradicted" and "1 diverged paths" in v["sentence"]
    assert v["verdicts"][1].survivors == 63 and "1 of 64 paths diverged" in v["verdicts"][1].measurement


def test_edges_of_each_bound():
    assert proposition_verdict({**BASE, "below_band_fraction_recorded": 0.0})["lower"] == "shown"
    assert proposition_verdict({**BASE, "above_band_fraction_recorded": 1e-9})["upper"] == "contradicted"
    assert proposition_verdict({**BASE, "paths_bouncing_at_end": 0.984375})["bounce"] == "contradicted"
    assert proposition_verdict({**BASE, "paths": 3})["bounce"] == "not shown"          # too few paths


def test_valley_verdict_edges():
    from dyntools.simulations.trajectories import valley_verdict

    assert valley_verdict(24.8, 12.9, 0.1)["holds"] is True
    assert valley_verdict(24.8, 12.9, 0.1)["headline"].startswith("shown — GD ends at sharpness 12.9")
    assert valley_verdict(19.0, 12.9, 0.1)["verdict"].word == "contradicted"
    assert valley_verdict(24.8, 20.0, 0.1)["holds"] is False                  # a tie with 2/η is not below
    assert valley_verdict(19.0, 12.9, 0.1)["holds"] is False
    for bad in (math.nan, math.inf, None):
        v = valley_verdict(24.8, bad, 0.1)
        assert v["holds"] is None and "not measured" in v["headline"] and "holds" not in v["sentence"]
        assert v["headline"].startswith("not shown")


def test_measured_and_word():
    from dyntools.verdicts import measured, word

    assert measured(1, 2.5) and not measured(1, math.nan) and not measured(None) and not measured("x")
    assert word(None, "yes", "no") == "not measured" and word(True, "yes", "no") == "yes"


def test_deep_nets_checks_never_read_a_nan():
    import numpy as np
    from dyntools.simulations.deep_nets import check_lines, checks, claims, claims_headline

    from dyntools.engine.result import RunResult

    fsc = np.array([[[0.5], [0.3]], [[0.4], [np.nan]]])              # seeds × schedules × records
    acc = np.array([[[0.9], [0.95]], [[0.9], [np.nan]]])
    res = RunResult(kind="deep-nets", config={"settings": ["plain"]}, status="completed", message="",
                    arrays={"plain_fsc_last": fsc, "plain_test_acc": acc})
    c = checks(res)["plain"]
    assert c["sparser"] is True and c["not_worse"] is True           # the NaN seed is left out, not compared
    dead = RunResult(kind="deep-nets", config={"settings": ["plain"]}, status="diverged", message="",
                     arrays={"plain_fsc_last": fsc * np.array([1, np.nan])[None, :, None],
                             "plain_test_acc": acc * np.array([1, np.nan])[None, :, None]})
    res.summary = {"checks": checks(dead)}
    assert res.summary["checks"]["plain"]["sparser"] is None
    line = check_lines(res)[0]
    assert "not measured" in line and "NOT" not in line and "n/a (every seed diverged)" in line
    rows = claims(dead)
    assert [v.word for _, v in rows] == ["not shown", "not shown"] and "no pair survived" in rows[0][1].why
    assert "lower FSC not shown" in claims_headline(rows)


def test_deep_nets_claims_name_an_undertrained_reference():
    import numpy as np
    from dyntools.simulations.deep_nets import claims

    from dyntools.engine.result import RunResult

    fsc = np.stack([np.full(6, 0.5), np.full(6, 0.3)], axis=1)[:, :, None]       # seeds × (small, long) × records
    acc = np.stack([np.full(6, 0.28), np.full(6, 0.9)], axis=1)[:, :, None]
    res = RunResult(kind="deep-nets", config={"settings": ["basic"]}, status="completed", message="",
                    arrays={"basic_fsc_last": fsc, "basic_test_acc": acc})
    (_, sparser), (_, better) = claims(res)
    assert sparser.word == "shown" and better.word == "shown"
    res.arrays["basic_fsc_last"] = fsc[:2]
    res.arrays["basic_test_acc"] = acc[:2]
    (_, few), _ = claims(res)
    assert few.word == "not shown" and few.n_needed == 5 and "only 28% test accuracy" in few.why


def test_adamw_heatmap_claims_on_planted_grids():
    """Seed 001's claims on two planted heatmaps: a diagonal coupled region against a vertical band."""
    import numpy as np

    from dyntools.engine.result import RunResult
    from dyntools.heatmap_grid import claims

    lrs, wds = np.logspace(-4, -1, 4), np.logspace(-6, 0, 7)
    acc = np.full((2, 4, 7), 0.5)
    for i in range(4):
        acc[0, i, 6 - 2 * i] = 0.95                                   # Adam: best λ ∝ lr^-2
        acc[1, i, 1:6] = 0.95                                         # AdamW: one rectangle
    res = RunResult(kind="adamw-grid", config={"optimizers": ["adam", "adamw"]}, status="completed", message="",
                    arrays={"val_acc": acc, "lrs": np.stack([lrs, lrs]), "wds": wds})
    (c1, dec), (c2, larger), (c3, best) = claims(res, 0.9)
    assert "decoupled" in c1 and dec.word == "shown" and larger.word == "shown"
    assert best.word == "not shown" and "replicates" in best.why
    (_, rev), (_, smaller), _ = claims(res, 0.9, (1, 0))                # the pair the other way round
    assert rev.word == "contradicted" and smaller.word == "contradicted"
    acc[1, 1:] = np.nan                                               # AdamW diverged below the first lr row
    (_, dec), (_, larger), _ = claims(res, 0.9)
    assert dec.word == "not shown" and dec.survivors == 28 + 7 and larger.word == "not shown"


def test_diag_nets_sparser_claims_pair_the_seeds_and_scale_the_size_needed():
    import numpy as np
    from dyntools.simulations.diag_nets import sparser_claims

    from dyntools.engine.result import RunResult

    seeds = 16
    l0 = np.stack([np.full(seeds, 30.0), np.full(seeds, 27.0)])[:, :, None]   # small, longest phase
    rank = np.full((2, seeds, 1), 80.0)                                        # rank = n everywhere
    div = np.full((2, seeds), -1)

    def res(div):
        return RunResult(kind="diag-net", config={"runs": [{}, {}]}, status="completed", message="",
                         arrays={"l0": l0, "rank": rank, "diverged_at": div})

    (_, lower), (_, flat) = sparser_claims(res(div))
    assert lower.word == "shown" and lower.survivors == 16
    assert flat.word == "not shown" and "ties" in flat.why
    div[1, 3:] = 500                                                  # 3 of 16 survive the large step
    (_, few), _ = sparser_claims(res(div))
    assert few.word == "not shown" and few.survivors == 3 and few.n_needed == 27   # 5 pairs / (3/16)
    assert "Only 3 of 16 pairs survived" in few.why


def test_universal_approximation_sentences_and_width_claims():
    import numpy as np
    from dyntools.simulations import universal_approximation as U

    from dyntools.engine.result import RunResult

    assert U._at_widths([]) == "at no width" and U._at_widths([8, 16]) == "at n = 8, 16"
    flat = {"best_width": 8, "peak_width": 8, "best_test": 0.813, "peak_test": 0.813, "rise": 1.0}
    assert "up to" not in U._rise_text(flat) and "no rise" in U._rise_text(flat)
    assert "×2.5" in U._rise_text({**flat, "peak_width": 32, "peak_test": 2.03, "rise": 2.5})
    errs = np.array([[0.5] * 5, [0.1] * 5, [0.01] * 5])                # widths × draws, falling
    res = RunResult(kind="universal-approximation", config={}, status="completed", message="",
                    arrays={"errors_1d": errs, "widths_1d": np.array([2, 4, 8]),
                            "errors_2d": errs[:, :3], "widths_2d": np.array([2, 4, 8])})
    (_, one), (_, two) = U.width_claims(res)
    assert one.word == "shown" and two.word == "not shown" and two.n_needed == 5     # 3 draws cannot reach 5 %


def test_adamw_schedule_claims_say_plainly_when_the_source_does_not_reproduce():
    import numpy as np
    from dyntools.simulations.adamw_schedules import claims

    from dyntools.engine.result import RunResult

    loss = np.array([[[0.10] * 5, [0.20] * 5], [[0.10] * 5, [0.05] * 5]])         # optimizer × schedule × seed
    acc = np.array([[[0.977] * 5, [0.927] * 5], [[0.95] * 5, [0.97] * 5]])
    config = {"schedules": ["constant", "cosine"], "optimizers": ["adam", "adamw"]}
    res = RunResult(kind="adamw-schedules", config=config, status="completed", message="",
                    arrays={"val_loss": loss, "val_acc": acc})
    (c1, adam), (c2, adamw) = claims(res)
    assert c1.startswith("adam benefits from the cosine") and adam.word == "contradicted"
    assert "not reproduced here" in adam.why and "0.927 (cosine) vs 0.977 (constant)" in adam.measurement
    assert adamw.word == "shown" and adamw.why == ""
    res.arrays["val_loss"][0, 1, :3] = np.nan                                        # 3 of 5 diverged
    assert claims(res)[0][1].word == "not shown"


def test_relu_labels_and_report_seeds():
    from dyntools.simulations import relu_nets as R

    one_d = [lab for lab, _, _ in R.schedules(R.get_setting("1d"))]
    assert one_d[0].startswith("reference (early decay)") and one_d[1].startswith("large step")
    teacher = [lab for lab, _, _ in R.schedules(R.get_setting("teacher2"))]
    assert teacher[0].startswith("small step") and all(t.startswith("large step") for t in teacher[1:])
    assert R.report_seeds("teacher2", quick=True) >= 9                  # 5 pairs when 2 of 5 diverge


def test_adamw_difficulty_claims_per_difficulty_on_the_replicate_mean():
    import numpy as np
    from dyntools.simulations.adamw_difficulty import claim_verdicts, tally_text

    from dyntools.engine.result import RunResult

    lrs, wds = np.logspace(-3, -1, 3), np.logspace(-5, 0, 6)
    acc = np.full((2, 1, 2, 2, 3, 6), 0.5)                   # replicate, noise, turns, optimizer, lr, λ
    for i in range(3):
        acc[:, 0, 0, 0, i, 5 - 2 * i] = 0.95                 # easy: Adam diagonal, AdamW a band
        acc[:, 0, 0, 1, i, 1:5] = 0.95
    acc[1, 0, 0, 1] = np.nan                                 # a diverged replicate makes its mean NaN
    res = RunResult(kind="adamw-difficulty", config={}, status="completed", message="",
                    summary={"threshold": 0.9},
                    arrays={"val_acc": acc, "lrs": lrs, "wds": wds, "noises": np.array([0.05]),
                            "turns": np.array([1.0, 2.0])})
    rows = claim_verdicts(res)
    assert [r["decoupling"].word for r in rows] == ["not shown", "not shown"]      # NaN mean; nothing good
    acc[1, 0, 0, 1] = acc[0, 0, 0, 1]
    rows = claim_verdicts(res)
    assert rows[0]["decoupling"].word == "shown" and rows[0]["larger"].word == "shown"
    assert tally_text([r["decoupling"] for r in rows]).startswith("shown at 1 of 2, not shown at 1")


def test_adamw_difficulty_decoupling_needs_every_replicate():
    import numpy as np
    from dyntools.simulations.adamw_difficulty import claim_verdicts

    from dyntools.engine.result import RunResult

    lrs, wds = np.logspace(-3, -1, 3), np.logspace(-5, 0, 6)
    acc = np.full((2, 1, 1, 2, 3, 6), 0.5)
    for i in range(3):
        acc[:, 0, 0, 0, i, 5 - 2 * i] = 0.95                 # Adam diagonal in both replicates
        acc[0, 0, 0, 1, i, 1:5] = 0.95                       # AdamW a band in replicate 0 ...
        acc[1, 0, 0, 1, i, 5 - 2 * i] = 0.95                 # ... the same diagonal as Adam in replicate 1
    acc[1, 0, 0, 1, :, 1:5] = np.maximum(acc[1, 0, 0, 1, :, 1:5], 0.92)   # mean stays a band (≥ 0.9)
    res = RunResult(kind="adamw-difficulty", config={}, status="completed", message="", summary={"threshold": 0.9},
                    arrays={"val_acc": acc, "lrs": lrs, "wds": wds, "noises": np.array([0.05]),
                            "turns": np.array([1.0])})
    [row] = claim_verdicts(res)
    assert row["decoupling"].word == "not shown" and "replicates disagree" in row["decoupling"].why
