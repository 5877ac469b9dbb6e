"""The float32 path of the Voronoi ladder (``VoronoiLadder(dtype="float32")``, ``--dtype``).

Stated tolerances (measured with margin, relative to ‖g₆₄‖∞ for gradients):

* the float32 exponential :func:`softmax_exp32` ≤ 2e-7 relative to ``exp`` in float64 on [−40, 0]
  (measured 6.1e-8), exactly 0 below −40 (the cut that keeps the gradient's products normal);
* one float32 loss-and-gradient against the float64 kernel and against its float32 NumPy twin: ≤ 3e-6
  for the rungs whose softmax scale is learned (σ ≈ 1; measured ≤ 1.4e-6 over 600 random cases), and
  ≤ 20·σ₀·ε₃₂ (≈ 1.2e-2 at the study's σ₀ = 10⁴; measured ≤ 9.7e-4) for the rungs center-labels and offset,
  whose fixed scale multiplies the rounding of the scores ``z = xᵀu − o`` (ε₃₂ = 2⁻²⁴ relative) — float32
  keeps about 3 digits there; the loss ≤ 1e-6 relative (measured ≤ 1.8e-7), ≤ 20·σ₀·ε₃₂ on those two rungs
  (measured ≤ 2.6e-6);
* 150 AdamW steps of the top rung (centers, 192 learned centers): θ ≤ 1e-5 relative, every step's loss
  ≤ 1e-5 (measured ≤ 8e-7 and ≤ 1.5e-6 over 3 environments). Longer runs are more sensitive: over 300 steps
  the same comparison measured 5e-7 … 1.8e-4 in θ and up to 1.9e-3 in a step's loss, and the last bits of
  the compiled kernel (float64 as well) depend on the order in which numba compiled its pieces, which that
  run amplifies — so the stated comparison is the shorter one.
"""

import numpy as np
import pytest
from dyntools.simulations import voronoi as V
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import cli
from dyntools.data.voronoi import voronoi
from dyntools.dynamics.train import train
from dyntools.models.voronoi import RUNGS, VoronoiLadder, exp_nonpositive

EPS32 = 2.0 ** -24
ENV = voronoi(300, n_test=10, seed=0)


def test_float32_exp_is_accurate_and_cut_below_minus_40():
    x = -np.linspace(0.0, 90.0, 2001).astype(np.float32)
    out, kbuf = np.empty_like(x), np.empty_like(x)
    total = exp_nonpositive(x, out, kbuf)
    ref = np.exp(x.astype(np.float64))
    kept = x >= -40.0
    assert out.dtype == np.float32
    assert np.max(np.abs(out[kept] - ref[kept]) / ref[kept]) <= 2e-7
    assert np.all(out[~kept] == 0.0) and np.all(out[x < -40.5] == 0.0)
    assert abs(total - ref[kept].sum()) <= 2e-7 * ref[kept].sum() * 10


def _grad(model, fn, theta, idx, dtype):
    b = len(idx)
    iargs, fargs = model.kernel_args()
    grad = np.full(model.n_params, np.nan, dtype=dtype)
    loss = fn(theta.astype(dtype), ENV.X.astype(dtype), ENV.y, np.asarray(idx, dtype=np.int64), b, np.zeros(b),
              grad, np.zeros(model.workspace_size(b), dtype=dtype), iargs, fargs)
    return float(loss), grad


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(RUNGS[1:]), st.integers(1, 40), st.integers(0, 10_000))
def test_float32_gradient_against_float64_and_its_twin(rung, b, seed):
    make = dict(centers=ENV.centers, center_labels=ENV.center_labels, dim=2, n_centers=48)
    m64, m32 = VoronoiLadder(rung, **make), VoronoiLadder(rung, **make, dtype="float32")
    theta = m64.init(seed).astype(np.float32).astype(np.float64)     # the same θ, exact in float32
    idx = np.random.default_rng(seed).integers(0, len(ENV.y), b)
    l64, g64 = _grad(m64, m64.loss_grad, theta, idx, np.float64)
    l32, g32 = _grad(m32, m32.loss_grad, theta, idx, np.float32)
    t32, h32 = _grad(m32, m32.loss_grad_np, theta, idx, np.float32)
    assert g32.dtype == np.float32 and h32.dtype == np.float32
    tol = 20 * 1e4 * EPS32 if rung in ("center-labels", "offset") else 3e-6
    scale = np.abs(g64).max()
    assert np.abs(g32 - g64).max() <= tol * scale
    assert np.abs(g32 - h32).max() <= tol * scale
    tol_loss = tol if rung in ("center-labels", "offset") else 1e-6
    assert abs(l32 - l64) <= tol_loss * l64 and abs(t32 - l64) <= tol_loss * l64
    if rung not in ("center-labels", "offset"):     # (σ₀ = 10⁴ makes π one-hot: the results may be exact)
        assert np.any(g32 != g64.astype(np.float32))    # really float32 arithmetic


def test_float32_training_follows_float64():
    p = V.make_params(n=1000, n_test=200, steps=150, batch=64, frames=2, n_centers=192, rung="centers")
    env = V.environment(p, 0, 0)
    runs = {}
    for dt, kernel in (("float64", "numba"), ("float32", "numba"), ("float32", "numpy")):
        model = V.build_model(V.make_params(**{**vars(p), "dtype": dt}), env)
        runs[dt, kernel] = train(model, env, V.build_optimizer(p, model), steps=p.steps, batch=p.batch,
                                 sampler="epoch", record_steps=np.array([p.steps]), seed=0, theta0=model.init(0, 0),
                                 step_loss=True, kernel=kernel)
    a, b, c = runs["float64", "numba"], runs["float32", "numba"], runs["float32", "numpy"]
    # the compiled float32 training against its float32 NumPy twin
    # (measured ≤ 9.3e-8 in θ, ≤ 1.0e-6 in the losses, 3 environments)
    assert np.abs(b["final_theta"] - c["final_theta"]).max() / np.abs(c["final_theta"]).max() <= 1e-5
    assert np.abs(b["step_loss"] - c["step_loss"]).max() <= 1e-5
    assert b.config["model"]["dtype"] == "float32" and a.config["model"]["dtype"] == "float64"
    t64, t32 = a["final_theta"][0, 0], b["final_theta"][0, 0]
    np.testing.assert_array_equal(t32, t32.astype(np.float32).astype(np.float64))    # float32 values
    rel = np.abs(t32 - t64).max() / np.abs(t64).max()
    assert 1e-9 < rel <= 1e-5
    assert np.abs(a["step_loss"] - b["step_loss"]).max() <= 1e-5
    assert a.status == b.status == "completed"


def test_bad_dtype_is_refused():
    with pytest.raises(ValueError, match="Invalid dtype: 'float16'"):
        VoronoiLadder("scale", centers=ENV.centers, dtype="float16")
    with pytest.raises(ValueError, match="Invalid dtype: 'float16'"):
        V.make_params(dtype="float16")


@pytest.mark.parametrize("argv", [["simulate", "voronoi"], ["sweep", "voronoi-ladder"]])
def test_cli_dtype_float16_one_line_exit_2_nothing_written(tmp_path, capsys, argv):
    out = tmp_path / "bad"
    assert cli.main([*argv, "--out", str(out), "--dtype", "float16"]) == 2
    err = capsys.readouterr().err
    assert "dtype" in err and "float16" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_float32_ladder_records_and_shows_the_precision(tmp_path, capsys):
    from dyntools import store

    small = ["--n", "300", "--n-test", "100", "--steps", "40", "--n-centers", "32", "--frames", "2",
             "--seeds", "1", "--rungs", "scale,centers", "--decays", "l2", "--workers", "1"]
    out = tmp_path / "ladder"
    assert cli.main(["sweep", "voronoi-ladder", *small, "--dtype", "float32", "--out", str(out)]) == 0
    assert "precision: float32" in capsys.readouterr().out
    result = store.load(out)
    assert result.config["params"]["dtype"] == "float32"
    assert cli.main(["plot", str(out), "--out", str(tmp_path / "fig")]) == 0
    from dyntools import plots

    assert plots.precision_note(result) == "trained in float32"
    assert (tmp_path / "fig" / "voronoi_ladder.png").exists()


def test_the_note_goes_on_stills_above_and_on_animation_frames_in_the_title_once():
    from dyntools import plots

    token = plots._NOTE.set("trained in float32")
    try:
        gif, _ = plots.figure()
        gif.suptitle("ladder")
        plots.stamp_note(gif, inside=True)
        plots.stamp_note(gif)                       # saved as a still afterwards: not stamped twice
        assert [t.get_text() for t in gif.texts] == ["trained in float32\nladder"]     # the title, once
        still, _ = plots.figure()
        plots.stamp_note(still)
        assert [t.get_text() for t in still.texts] == ["trained in float32"]
    finally:
        plots._NOTE.reset(token)
