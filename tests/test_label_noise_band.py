"""The O(√(ηδ)) band (issue 42 item 5): the distance to the sparse solution's manifold, the exponent fit, the
verdict rule (with planted exponents that must come out contradicted / not shown), the run and its CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import cli, store
from dyntools.verdicts import CONTRADICTED, NOT_SHOWN, SHOWN, exponent_rule
from simulations import label_noise_band as band

coord = st.floats(-3, 3, allow_nan=False)


def brute_distance(u, v, c):
    """Distance from (u, v) to {ab = c} by dense sampling of the curve (plus a local refinement)."""
    if c == 0:
        return min(abs(u), abs(v))
    a = np.concatenate([-np.geomspace(1e-3, 1e3, 200001), np.geomspace(1e-3, 1e3, 200001)])
    f = (a - u) ** 2 + (c / a - v) ** 2
    k = int(np.argmin(f))
    fine = np.linspace(a[max(k - 1, 0)], a[min(k + 1, a.size - 1)], 20001)
    return float(np.sqrt(np.min((fine - u) ** 2 + (c / fine - v) ** 2)))


@settings(max_examples=60, deadline=None)
@given(u=coord, v=coord, c=st.one_of(st.just(0.0), st.floats(-2, 2).filter(lambda x: abs(x) > 1e-2)))
def test_coordinate_distance_is_the_distance_to_the_curve(u, v, c):
    got = float(band.coordinate_distances(u, v, c))
    assert got == pytest.approx(brute_distance(u, v, c), rel=1e-6, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(1e-6, 1e-2))
def test_manifold_distance_is_zero_on_m_and_grows_linearly_off_it(seed, scale):
    rng = np.random.default_rng(seed)
    beta = np.where(rng.random(12) < 0.4, rng.normal(size=12), 0.0)
    theta = band.start_on_manifold(beta, 0.3)
    np.testing.assert_allclose(theta[:12] * theta[12:], beta, atol=1e-15)
    assert band.manifold_distance(theta, beta) == pytest.approx(0.0, abs=1e-12)
    step = rng.normal(size=24)
    step /= np.linalg.norm(step)
    dist = band.manifold_distance(theta + scale * step, beta)
    assert 0.0 <= dist <= scale * (1 + 1e-9)                    # never more than the displacement
    assert np.isnan(band.manifold_distance(np.full(24, np.nan), beta))


def test_manifold_distance_of_known_points():
    # off the support: the nearest axis; on it, (0, 0) to {ab = 1} is √2 away (at (1, 1))
    assert band.manifold_distance(np.array([0.3, -0.2]), np.array([0.0])) == pytest.approx(0.2)
    assert band.manifold_distance(np.array([0.0, 0.0]), np.array([1.0])) == pytest.approx(np.sqrt(2))
    assert band.manifold_distance(np.array([0.3, 0.0, 0.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize("true_exponent", [0.5, 1.0, 1 / 3])
def test_the_fit_recovers_planted_exponents_and_the_rule_judges_them(true_exponent):
    rng = np.random.default_rng(1)
    etas, deltas = np.array([0.005, 0.01, 0.02]), np.array([0.002, 0.008, 0.032])
    prod = np.multiply.outer(etas, deltas)
    level = 3.0 * prod[None] ** true_exponent * np.exp(0.02 * rng.standard_normal((10, 3, 3)))
    fits = band.fit_exponents(level, etas, deltas)
    np.testing.assert_allclose(fits["product"], true_exponent, atol=0.03)
    np.testing.assert_allclose(fits["eta"], true_exponent, atol=0.06)
    verdict = exponent_rule(fits["product"], 0.5, 0.1).verdict
    assert verdict == (SHOWN if true_exponent == 0.5 else CONTRADICTED)
    level[3, 1, 1] = np.nan                                     # a diverged run drops its seed
    assert np.isnan(band.fit_exponents(level, etas, deltas)["product"][3])


def test_local_exponents_find_a_planted_bend():
    etas, deltas = np.array([0.005, 0.01, 0.02, 0.04]), np.array([0.001, 0.004, 0.016, 0.064])
    prod = np.multiply.outer(etas, deltas)
    knee = np.median(prod)
    level = np.where(prod <= knee, np.sqrt(prod), np.sqrt(knee) * (prod / knee) ** 0.25)[None].repeat(3, 0)
    halves = band.local_exponents(level, etas, deltas)
    np.testing.assert_allclose(halves["low"], 0.5, atol=1e-9)
    np.testing.assert_allclose(halves["high"], 0.25, atol=1e-9)


def test_exponent_rule_edges_power_and_survivors():
    assert exponent_rule([0.5] * 3, 0.5, 0.1).verdict == NOT_SHOWN               # too few seeds
    assert exponent_rule([0.5] * 3, 0.5, 0.1).n_needed == 5
    v = exponent_rule([0.5, 0.52, 0.48, 0.51, 0.49, np.nan], 0.5, 0.1)
    assert v.verdict == SHOWN and v.n == 5 and v.total == 6 and v.low < 0.5 < v.high
    wide = exponent_rule([0.3, 0.7, 0.45, 0.62, 0.38], 0.5, 0.1)                  # centred, interval too wide
    assert wide.verdict == NOT_SHOWN and wide.n_needed > 5 and "underpowered" in wide.text()
    straddle = exponent_rule([0.58, 0.62, 0.6, 0.61, 0.59], 0.5, 0.1)             # across the edge
    assert straddle.verdict == NOT_SHOWN
    with pytest.raises(ValueError, match="tolerance"):
        exponent_rule([0.5] * 5, 0.5, 0.0)


SMALL = {"etas": (0.01, 0.02), "deltas": (0.004, 0.016), "tau": 10.0, "seeds": 5, "records": 11, "n": 20, "d": 30,
         "r": 3}


def test_the_band_measured_on_small_runs_scales_like_the_root_of_eta_delta():
    res = band.simulate(band.EXPERIMENT.make(None, **SMALL), seed=3)
    assert res["level"].shape == (5, 2, 2) and not res["diverged"].any()
    assert np.all(res["level"] > 0) and np.all(np.isfinite(res["exponent"]))
    # more noise, a wider band, on every seed and step
    assert np.all(res["level"][:, :, 1] > res["level"][:, :, 0]) and np.all(res["level"][:, 1] > res["level"][:, 0])
    assert 0.3 < np.median(res["exponent"]) < 0.7
    assert res.summary["verdict"]["rule"] == "exponent_rule" and res.summary["verdict"]["total"] == 5
    again = band.simulate(band.EXPERIMENT.make(None, **SMALL), seed=3)
    np.testing.assert_array_equal(again["level"], res["level"])


def test_the_command_writes_a_result_and_refuses_bad_input(tmp_path, capsys):
    out = tmp_path / "band"
    args = ["simulate", "label-noise-band", "--etas", "0.01,0.02", "--deltas", "0.004,0.016", "--tau", "10",
            "--seeds", "5", "--records", "11", "--n", "20", "--d", "30", "--r", "3"]
    assert cli.main([*args, "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["verdict"]["verdict"] in (SHOWN, NOT_SHOWN, CONTRADICTED) and len(summary["table"]) == 4
    assert store.load(out)["level"].shape == (5, 2, 2)
    for bad, needle in ((["--etas", "0.01", "--deltas", "0.004"], "Invalid etas/deltas"),
                        (["--r", "40"], "Invalid r: 40"), (["--tau", "0.1"], "Invalid tau")):
        assert cli.main([*args, *bad, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "bad").exists()
