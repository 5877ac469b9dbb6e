"""The SDE engine: ziggurat increments, kernels vs NumPy twin, refinement, shape checks, orders."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from scipy import stats

from dyntools.dynamics import sde_models
from dyntools.dynamics.sde import SDE, solve
from dyntools.dynamics.sde_order_study import TOLERANCES, convergence_study
from dyntools.engine import streams, ziggurat
from dyntools.models.quadratic_toy import QuadraticToy


@njit
def _draw(state, k):
    out = np.empty((state.shape[0], k))
    for p in range(state.shape[0]):
        for j in range(k):
            out[p, j] = ziggurat.normal(state, p)
    return out


def test_ziggurat_matches_numpy_twin_bitwise_including_tails():
    a_state = streams.path_states(3, 8)
    b_state = a_state.copy()
    a = _draw(a_state, 5000)
    b = np.stack([ziggurat.normal_np(b_state) for _ in range(5000)], axis=1)
    assert np.array_equal(a, b) and np.array_equal(a_state, b_state)
    assert (np.abs(a) > ziggurat.ZIG_R).sum() >= 3          # the tail branch was exercised


def test_ziggurat_is_standard_normal():
    z = _draw(streams.path_states(0, 4), 50_000).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 4 / np.sqrt(z.size) and abs(z.var() - 1) < 0.02
    assert (np.abs(z) > 4.0).mean() == pytest.approx(2 * stats.norm.sf(4.0), rel=0.5)


def test_false_control_uniforms_are_not_normal():
    u = np.array([ziggurat.rng.uniform01_np(streams.path_states(0, 1000)) for _ in range(20)]).ravel()
    assert stats.kstest(u, "norm").pvalue < 1e-6


@pytest.mark.parametrize("model,scheme,dim", [("gbm", "milstein", 1), ("ou", "em", 1), ("toy", "milstein", 1),
                                              ("gbm", "em", 3)])
def test_builtin_kernel_equals_numpy_twin(model, scheme, dim):
    toy = QuadraticToy.uniform(n=50, seed=0)
    sde = {"gbm": sde_models.gbm(0.7, 0.4, dim=dim), "ou": sde_models.ou(1.0, 0.3, 0.5),
           "toy": sde_models.toy_sde(toy, 0.5, 1e-4)}[model]
    kw = dict(t1=0.5, h=0.01, paths=6, scheme=scheme, seed=4, records=11, substeps=2, record_brownian=True)
    a = solve(sde, 0.8, **kw)
    b = solve(sde, 0.8, kernel="numpy", **kw)
    assert np.array_equal(a["x"], b["x"]) and np.array_equal(a["W"], b["W"])
    assert a.status == "completed" and np.isfinite(a["x"]).all()


@pytest.mark.parametrize("substeps,scheme", [(1, "em"), (2, "milstein")])
def test_scalar_kernel_groups_of_four_equal_twin_with_stops(substeps, scheme):
    """13 paths: the 1-D kernel's lock-step groups of four plus leftover single paths; a bound that
    stops some paths mid-run (inside a group) must not disturb the others' streams."""
    sde = sde_models.gbm(1.0, 1.5)
    kw = dict(t1=1.0, h=1 / 64, paths=13, scheme=scheme, seed=11, records=9, substeps=substeps,
              record_brownian=True, bound=6.0)
    a = solve(sde, 1.0, **kw)
    b = solve(sde, 1.0, kernel="numpy", **kw)
    assert 0 < (a["diverged_at"] >= 0).sum() < 13                 # some, not all, paths stopped
    assert np.array_equal(a["diverged_at"], b["diverged_at"])
    assert np.array_equal(a["x"], b["x"], equal_nan=True) and np.array_equal(a["W"], b["W"], equal_nan=True)


@settings(max_examples=20, deadline=None)
@given(r=st.sampled_from([2, 4, 8]), seed=st.integers(0, 1000))
def test_brownian_path_consistent_under_refinement(r, seed):
    """W at step h·r with r aggregated sub-steps equals W at step h (same fine increments)."""
    sde = sde_models.gbm(1.0, 0.5)
    coarse = solve(sde, 1.0, t1=1.0, h=r / 64, substeps=r, paths=5, seed=seed, record_brownian=True,
                   records=3)
    fine = solve(sde, 1.0, t1=1.0, h=1 / 64, substeps=1, paths=5, seed=seed, record_brownian=True,
                 save_at=coarse["t"])
    np.testing.assert_allclose(coarse["W"], fine["W"], rtol=0, atol=1e-12)
    assert not np.array_equal(coarse["x"], fine["x"])            # different schemes' steps, same path


def test_different_seeds_give_different_paths():
    sde = sde_models.ou()
    a = solve(sde, 0.0, t1=0.1, h=0.01, paths=3, seed=1)
    b = solve(sde, 0.0, t1=0.1, h=0.01, paths=3, seed=2)
    assert not np.array_equal(a["x"], b["x"])


def test_moments_match_exact_solutions():
    g = solve(sde_models.gbm(0.5, 0.3), 1.0, t1=1.0, h=1 / 256, paths=20_000, scheme="milstein", records=2)
    m, v = sde_models.gbm_moments(1.0, 0.5, 0.3, 1.0)
    xT = g["x"][:, -1, 0]
    assert abs(xT.mean() - m) < 4 * np.sqrt(v / xT.size)
    o = solve(sde_models.ou(2.0, 1.0, 0.5), 0.0, t1=1.0, h=1 / 256, paths=20_000, records=2)
    m, v = sde_models.ou_moments(0.0, 2.0, 1.0, 0.5, 1.0)
    xT = o["x"][:, -1, 0]
    assert abs(xT.mean() - m) < 4 * np.sqrt(v / xT.size) + 0.01
    assert xT.var() == pytest.approx(v, rel=0.05)


def test_blow_up_is_stopped_and_reported():
    sde = sde_models.gbm(50.0, 2.0)
    r = solve(sde, 1.0, t1=1.0, h=0.01, paths=8, seed=0, bound=1e3)
    assert r.status == "diverged" and "first at step" in r.message and "at t =" in r.message
    stopped = r["diverged_at"]
    assert (stopped > 0).all()
    for p in range(8):
        k_after = r["t"] >= r["diverged_time"][p] - 1e-12     # the step that left the bound is not kept
        assert np.isnan(r["x"][p, k_after]).all() and np.isfinite(r["x"][p, ~k_after]).all()
    twin = solve(sde, 1.0, t1=1.0, h=0.01, paths=8, seed=0, bound=1e3, kernel="numpy")
    assert np.array_equal(twin["diverged_at"], stopped)


# ---------------------------------------------------------------------- user-defined terms

@njit
def _drift2(t, x, args, out):
    out[0] = -args[0] * x[0] + x[1]
    out[1] = -args[0] * x[1]


@njit
def _diff2(t, x, args, out):
    out[0, 0] = args[1]
    out[0, 1] = 0.1 * x[0]
    out[1, 0] = 0.0
    out[1, 1] = args[1] * np.cos(t)


@njit
def _drift_too_long(t, x, args, out):
    out[0] = 1.0
    out[1] = 2.0


@njit
def _diff_partial(t, x, args, out):
    out[0, 0] = 1.0


def test_user_defined_general_noise_equals_twin():
    sde = SDE(_drift2, _diff2, dim=2, noise_dim=2, args=[0.7, 0.3])
    kw = dict(t1=0.3, h=0.01, paths=4, seed=5, records=7, substeps=2)
    a = solve(sde, [1.0, -0.5], **kw)
    b = solve(sde, [1.0, -0.5], kernel="numpy", **kw)
    assert np.array_equal(a["x"], b["x"])
    assert a["x"].shape == (4, 7, 2)


def test_wrong_shapes_are_caught_before_the_loop_naming_the_term():
    with pytest.raises(ValueError, match="Invalid drift: wrong shape"):
        solve(SDE(_drift_too_long, _diff2, dim=1, noise_dim=2, args=[0.7, 0.3]), [1.0], t1=0.1, h=0.01)
    with pytest.raises(ValueError, match="Invalid diffusion"):
        solve(SDE(_drift2, _diff_partial, dim=2, noise_dim=2, args=[0.7, 0.3]), [1.0, 1.0], t1=0.1, h=0.01)
    with pytest.raises(TypeError, match="drift must be a numba-jitted"):
        SDE(lambda t, x, a, o: None, _diff2, dim=2, noise_dim=2)
    with pytest.raises(ValueError, match="milstein"):
        solve(SDE(_drift2, _diff2, dim=2, noise_dim=2, args=[0.7, 0.3]), [1.0, 1.0], t1=0.1, h=0.01,
              scheme="milstein")


@pytest.mark.parametrize("kwargs,match", [
    (dict(h=0.0), "Invalid h"), (dict(h=-0.1), "Invalid h"), (dict(h=0.3), "multiple of h"),
    (dict(x0=np.nan), "Invalid x0"), (dict(x0=np.inf), "Invalid x0"), (dict(scheme="rk4"), "Invalid scheme"),
    (dict(t1=-1.0), "Invalid t1"), (dict(save_at=[0.0, 0.015]), "Invalid save_at"),
])
def test_bad_input(kwargs, match):
    call = dict(x0=1.0, t1=1.0, h=0.01)
    call.update(kwargs)
    with pytest.raises(ValueError, match=match):
        solve(sde_models.gbm(), call.pop("x0"), **call)


def test_negative_parameters_rejected():
    toy = QuadraticToy.uniform(n=10, seed=0)
    with pytest.raises(ValueError, match="Invalid delta"):
        sde_models.toy_sde(toy, 0.5, -1e-3)
    with pytest.raises(ValueError, match="Invalid eta"):
        sde_models.toy_sde(toy, -0.5, 1e-3)


# ------------------------------------------------------------------------------ the orders

def test_measured_orders_within_tolerances():
    res = convergence_study(paths=1500, levels=(4, 8), fine=10, seed=0)
    s = res.summary["slopes"]
    assert res.summary["ok"], res.message
    # false control: the tolerances discriminate — EM's strong slope fails Milstein's band
    assert abs(s["strong_em"] - TOLERANCES["strong_milstein"][0]) > TOLERANCES["strong_milstein"][1]
    assert np.all(np.diff(res["strong_milstein"]) < 0)
    # OU (additive noise): EM's strong order is 1, measured against the pathwise solution
    assert abs(s["strong_em_ou"] - 1.0) <= TOLERANCES["strong_em_ou"][1]
    assert np.all(np.diff(res["strong_em_ou"]) < 0)


def test_ou_pathwise_solution_matches_the_exact_law():
    """The pathwise reference has the exact OU mean and variance (Monte Carlo, 4 s.e.)."""
    from dyntools.dynamics.sde import solve

    ou = sde_models.ou(1.0, 0.5, 0.3)
    r = solve(ou, 2.0, t1=1.0, h=2.0**-10, paths=4000, records=2**10 + 1, record_brownian=True, seed=3)
    x = sde_models.ou_pathwise(2.0, 1.0, 0.5, 0.3, r["t"], r["W"][:, :, 0])
    mean, var = sde_models.ou_moments(2.0, 1.0, 0.5, 0.3, 1.0)
    assert abs(x.mean() - mean) < 4 * np.sqrt(var / x.size)
    assert abs(x.var() / var - 1) < 4 * np.sqrt(2 / x.size)
