import numpy as np
import pytest
from dyntools.simulations.loss_stabilization import check_proposition, phase_diagram
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.dynamics.toy_sgd import simulate_toy
from dyntools.engine import record as recording
from dyntools.models.quadratic_toy import QuadraticToy
from dyntools.optim.schedules import PiecewiseDecay

TOY = QuadraticToy.uniform(theta_star=1.0, x_min=1.0, x_max=1.05, n=200, seed=1)


def test_loss_is_the_papers_definition():
    theta = np.array([0.3, 0.9, 1.0, 1.2])
    direct = np.array([0.25 * np.mean((TOY.y - TOY.x * t**2) ** 2) for t in theta])
    np.testing.assert_allclose(TOY.loss(theta), direct, rtol=1e-12, atol=1e-15)
    h = 1e-6
    fd = (TOY.loss(theta + h) - TOY.loss(theta - h)) / (2 * h)
    np.testing.assert_allclose(TOY.gradient(theta), fd, rtol=1e-6, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(eta=st.floats(0.3, 2.6), paths=st.integers(1, 5), steps=st.integers(1, 400),
       chunks=st.integers(1, 4), theta0=st.floats(0.05, 1.5), seed=st.integers(0, 1000),
       method=st.sampled_from(["sgd", "gd"]))
def test_numba_kernel_equals_numpy_twin_bitwise(eta, paths, steps, chunks, theta0, seed, method):
    kw = dict(steps=steps, paths=paths, theta0=theta0, seed=seed, method=method, records=20)
    fast = simulate_toy(TOY, eta, chunks=chunks, **kw)
    twin = simulate_toy(TOY, eta, kernel="numpy", **kw)
    for name in ("theta", "diverged_at", "in_band", "bounces", "entry"):
        np.testing.assert_array_equal(fast[name], twin[name], err_msg=name)
    assert fast.status == twin.status


def test_replayed_indices_follow_the_sgd_recursion():
    steps = 300
    rng = np.random.default_rng(0)
    idx = rng.integers(0, TOY.x.size, steps)
    etas = PiecewiseDecay((0.5,), (2.0,)).etas(1.05, steps)
    r = simulate_toy(TOY, 1.05, steps=steps, paths=2, theta0=[0.4, 0.7], indices=idx,
                     schedule=PiecewiseDecay((0.5,), (2.0,)), record_steps=np.arange(steps + 1))
    for p, th in enumerate([0.4, 0.7]):
        expected = [th]
        for t in range(steps):
            x, y = TOY.x[idx[t]], TOY.y[idx[t]]
            th = th + etas[t] * th * x * (y - x * th * th)
            expected.append(th)
        np.testing.assert_array_equal(r["theta"][p], expected)


def test_same_seed_same_bits_and_chunking_does_not_matter():
    a = simulate_toy(TOY, 1.08, steps=5000, paths=6, seed=3)
    b = simulate_toy(TOY, 1.08, steps=5000, paths=6, seed=3, chunks=7)
    c = simulate_toy(TOY, 1.08, steps=5000, paths=6, seed=4)
    np.testing.assert_array_equal(a["theta"], b["theta"])
    assert not np.array_equal(a["theta"], c["theta"])
    # a path's stream does not depend on how many paths ran with it
    d = simulate_toy(TOY, 1.08, steps=5000, paths=2, seed=3)
    np.testing.assert_array_equal(a["theta"][:2], d["theta"])


def test_divergence_is_reported_with_its_step_not_a_silent_nan():
    r = simulate_toy(TOY, 40.0, steps=1000, paths=3, theta0=0.5)
    assert r.status == "diverged"
    assert np.all(r["diverged_at"] >= 1)
    assert "diverged (first at step" in r.message
    first = int(r["diverged_at"].min())
    assert f"step {first}" in r.message


def test_proposition_holds_inside_the_interval():
    toy = QuadraticToy.uniform(theta_star=2.0, x_min=0.5, x_max=0.52, n=500, seed=0)
    lo, hi = toy.eta_interval()
    eta = 0.5 * (lo + hi)
    r = simulate_toy(toy, eta, steps=20_000, paths=8, theta0=0.3 * toy.theta_star, seed=0)
    check = check_proposition(r, toy)
    assert r.status == "stabilized"
    assert check["regime"] == "inside"
    assert check["paths_bouncing_at_end"] == 1.0
    assert check["bounce_fraction"] > 0.99
    assert check["above_band_fraction_recorded"] == 0.0


def test_converges_below_and_diverges_far_above():
    below = simulate_toy(TOY, 0.5 * TOY.gd_step_limit(), steps=3000, paths=4, seed=0)
    assert below.status == "converged"
    np.testing.assert_allclose(below["theta"][:, -1], TOY.theta_star, rtol=1e-12)
    gd = simulate_toy(TOY, 0.9 * TOY.gd_step_limit(), steps=3000, method="gd")
    assert gd.status == "converged"
    assert simulate_toy(TOY, 5.0, steps=3000, paths=4).status == "diverged"


def test_empty_interval_is_said_plainly():
    wide = QuadraticToy.uniform(x_min=1.0, x_max=1.2, n=50)
    assert wide.eta_interval() is None and wide.regime(1.0) == "empty"
    r = simulate_toy(wide, 1.0, steps=100, paths=2)
    assert "empty" in check_proposition(r, wide)["statement"]
    narrow = QuadraticToy.uniform(x_min=1.0, x_max=1.1, n=50)     # 1.1 < sqrt(1.25)
    assert narrow.eta_interval() is not None


def test_phase_diagram_cells_are_independent_of_the_grid():
    a = phase_diagram(TOY, [0.5, 1.08, 3.0], steps=2000, paths=4, seed=2)
    b = phase_diagram(TOY, [0.5, 1.08], steps=2000, paths=4, seed=2)
    np.testing.assert_array_equal(a["stationary_loss"][:2], b["stationary_loss"])
    assert a["converged"][0] == 1.0 and a["diverged"][2] == 1.0
    assert 0 < a["stationary_loss"][1] < 0.17


def test_recording_memory_is_records_times_paths():
    grid = recording.log_grid(100_000, 50)
    r = simulate_toy(TOY, 1.08, steps=100_000, paths=3, record_steps=grid)
    assert r["theta"].shape == (3, grid.size) and grid.size < 70


@pytest.mark.parametrize("kwargs, match", [
    (dict(eta=0.0), "eta"), (dict(eta=float("nan")), "eta"), (dict(steps=0), "steps"),
    (dict(paths=0), "paths"), (dict(theta0=float("inf")), "theta0"), (dict(method="adam"), "method"),
    (dict(indices=np.array([0, 1])), "indices"), (dict(indices=np.full(10, 10_000)), "indices"),
])
def test_bad_arguments_name_the_parameter(kwargs, match):
    base = dict(eta=1.0, steps=10, paths=2)
    base.update(kwargs)
    eta = base.pop("eta")
    with pytest.raises((ValueError, TypeError), match=match):
        simulate_toy(TOY, eta, **base)


@pytest.mark.parametrize("kwargs, match", [
    (dict(x_min=0.0), "x_min"), (dict(x_min=2.0, x_max=1.0), "x_min"), (dict(theta_star=-1.0), "theta_star"),
    (dict(n=0), "n"),
])
def test_bad_toy_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        QuadraticToy.uniform(**kwargs)


@settings(max_examples=30, deadline=None)
@given(steps=st.integers(1, 10**7), records=st.integers(2, 500), dense=st.integers(0, 50))
def test_record_grids_are_sorted_unique_and_inside(steps, records, dense):
    for grid in (recording.log_grid(steps, records, dense), recording.linear_grid(steps, records)):
        assert grid[0] == 0 and grid[-1] == steps
        assert np.all(np.diff(grid) > 0)
        assert grid.size <= records + dense + 2
    log = recording.log_grid(steps, records, dense)
    assert log.size >= min(records, steps + 1)         # as many recordings as asked for


@pytest.mark.parametrize("steps, records", [(100_000, 100_000), (100_000, 90_000), (10_000, 9_000), (1000, 999)])
def test_a_log_grid_of_nearly_every_step_holds_what_was_asked(steps, records):
    """Asking for nearly every step once took thousands of rounds of ever larger log grids (minutes before the
    memory check could refuse the run): past twice the steps in log points, the earliest missing steps fill in."""
    grid = recording.log_grid(steps, records)
    assert grid.size == records and grid[0] == 0 and grid[-1] == steps and np.all(np.diff(grid) > 0)
    assert np.array_equal(grid[:50], np.arange(50))            # the early steps, as a log grid favours them
