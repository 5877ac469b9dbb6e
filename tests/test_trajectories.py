"""The optimizer trajectory gallery: optimizer paths against independent few-line references written from
the update equations, Adam without bias correction in dyntools.optim, the figures, and
``dyntools simulate trajectories`` as a user runs it (bad input: one line on stderr, exit 2, nothing written)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import dyntools as dt
from dyntools.plots import trajectories as PT
from tests import optim_step
from tests.conftest import HANG_GUARD

TR = dt.trajectories
ROOT = Path(__file__).resolve().parents[1]
x, y = sp.symbols("x y", real=True)
GRADS = {  # ∇f from sympy, independent of the compiled kernels
    "rosenbrock": sp.lambdify((x, y), [sp.diff((1 - x) ** 2 + 100 * (y - x**2) ** 2, v) for v in (x, y)]),
    "diag-net": sp.lambdify((x, y), [sp.diff((x * y - 1) ** 2, v) for v in (x, y)]),
}


def reference(surface, name, lr, steps, start):
    """The optimizer written from its update equation (torch.optim conventions), on sympy's gradient."""
    th = np.array(start, dtype=float)
    m = np.zeros(2)
    v = np.zeros(2)
    b1, b2, eps, mu = 0.9, 0.999, 1e-8, 0.9
    out = [th.copy()]
    for t in range(1, steps + 1):
        g = np.array(GRADS[surface](*th), dtype=float)
        if name in ("momentum", "nesterov"):
            m = g if t == 1 else mu * m + g                 # buffer b_t
            th = th - lr * (g + mu * m if name == "nesterov" else m)
        else:
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            if name == "adam-nobc":
                step = m / (np.sqrt(v) + eps)
            else:
                step = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
            th = th - lr * (step + (0.01 * th if name == "adamw" else 0.0))
        out.append(th.copy())
    return np.array(out)


@pytest.mark.parametrize("surface", sorted(GRADS))
def test_paths_equal_the_update_equations(surface):
    """The five optimizers in one run (one loop to compile per surface, not five), each path against its
    reference."""
    steps, names = 400, ["momentum", "nesterov", "adam", "adam-nobc", "adamw"]
    got = TR.run_surface(surface, names, steps=steps)
    for g, name in enumerate(names):
        ref = reference(surface, name, TR.LRS[surface][name], steps, dt.Surface(surface).start)
        np.testing.assert_allclose(got["path"][g], ref, rtol=1e-9, atol=1e-9, err_msg=name)


def test_adam_bias_correction_off_first_step_by_hand_and_fused_equals_chain():
    g = np.array([0.3, -2.0])
    theta = np.array([1.0, 1.0])
    opt = dt.adam(0.1, bias_correction=False)
    state = optim_step.init_state(opt, 2)
    fused = theta.copy()
    optim_step.step(opt, fused, g, state, 1)
    # m_1 = 0.1 g, v_1 = 0.001 g²: the step is lr · 0.1 g / (√0.001 |g| + ε) ≈ 3.16 lr sign g (Adam: lr sign g)
    by_hand = theta - 0.1 * (0.1 * g) / (np.sqrt(0.001 * g * g) + 1e-8)
    np.testing.assert_allclose(fused, by_hand, rtol=1e-14)
    assert np.all(np.abs(fused - theta) > 3 * 0.1)
    rng = np.random.default_rng(1)
    for o in (dt.adam(1e-2, bias_correction=False, weight_decay=0.1), dt.adamw(1e-2, bias_correction=False),
              dt.adam(1e-2, amsgrad=True, bias_correction=False)):
        th_c, th_f, th_np = (rng.standard_normal(5),) * 3
        th_c, th_f, th_np = th_c.copy(), th_f.copy(), th_np.copy()
        st_c, st_f, st_np = o.init(th_c), optim_step.init_state(o, 5), optim_step.init_state(o, 5)
        for t in range(1, 30):
            gr = rng.standard_normal(5)
            th_c, st_c = o.step(th_c, gr, st_c, t)
            optim_step.step(o, th_f, gr, st_f, t)
            optim_step.step_np(o, th_np, gr, st_np, t)
        np.testing.assert_allclose(th_f, th_c, rtol=1e-12)
        np.testing.assert_allclose(th_np, th_c, rtol=1e-12)
    assert dt.adam(1e-3).chain.transforms[0].bias_correction and "bias_correction" not in dt.adam(1e-3).options
    assert not dt.adam(1e-3, bias_correction=False).chain.transforms[0].bias_correction
    with pytest.raises(TypeError, match="bias_correction"):
        dt.adam(1e-3, bias_correction="no")


def test_gallery_result_is_reproducible():
    kw = dict(steps=300, frames=5, flow=True, noise=0.05, seed=3)
    res = TR.gallery(["himmelblau", "diag-net"], ["sgd", "adam", "adam-nobc"], **kw)
    again = TR.gallery(["himmelblau", "diag-net"], ["sgd", "adam", "adam-nobc"], **kw)
    np.testing.assert_array_equal(res["himmelblau_path"], again["himmelblau_path"])
    assert res["himmelblau_path"].shape == (3, 301, 2) and res["diag_net_flow"].shape[1] == 2
    assert res.summary["trajectories"] == 6 and len(res.summary["rows"]) == 6
    other = TR.gallery(["himmelblau"], ["sgd"], **{**kw, "seed": 4})
    assert not np.array_equal(other["himmelblau_path"][0], res["himmelblau_path"][0])


def test_frame_indices_are_geometric_and_cover_the_run():
    idx = PT.frame_indices(10_001, 40)
    assert idx[0] == 0 and idx[-1] == 10_000 and np.all(np.diff(idx) > 0)
    assert np.diff(idx)[0] < np.diff(idx)[-1]
    with pytest.raises(ValueError, match="frames"):
        PT.frame_indices(100, 1)


def test_diag_net_valley_large_step_gd_leaves_for_flatter_minima():
    """Seed 004's mechanism on (uv − 1)²: gradient flow ends where λ_max = 2(u² + v²) > 2/η; GD at η bounces
    across the valley and settles where λ_max < 2/η."""
    out = TR.run_surface("diag-net", ["sgd"], steps=3000, flow=True)
    eta = TR.LRS["diag-net"]["sgd"]
    sharp = 2 * np.sum(out["path"][0, -1] ** 2)
    flow_sharp = 2 * np.sum(out["flow"][-1] ** 2)
    assert sharp < 2 / eta < flow_sharp
    assert out["loss"][0, -1] < 1e-12


@pytest.mark.parametrize("kwargs, match", [
    (dict(surfaces=["sphere"]), "Invalid surface"),
    (dict(optimizers=["lbfgs"]), "Invalid optimizer"),
    (dict(lr=0.0), "Invalid lr"),
    (dict(lr=-1e-3), "Invalid lr"),
    (dict(lr=[0.1, 0.2]), "Invalid lr"),
    (dict(steps=0), "Invalid steps"),
    (dict(surfaces=["beale"], start=(9.0, 0.0)), "Invalid start"),
    (dict(start=(0.0, 0.0)), "Invalid start"),
    (dict(frames=1), "Invalid frames"),
    (dict(noise=-0.1), "Invalid noise"),
])
def test_gallery_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TR.gallery(**{"steps": 10, **kwargs})


def dyntools(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True, env=env,
                          timeout=HANG_GUARD)


def test_cli_simulate_then_plot(tmp_path):
    out = tmp_path / "run"
    r = dyntools("simulate", "trajectories", "--surface", "saddle", "--optimizers", "sgd,momentum,adam",
                 "--steps", "200", "--frames", "3", "--start=-2,0.5", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["trajectories"] == 3 and summary["status"] == "completed"
    p = dyntools("plot", str(out), "--out", str(tmp_path / "fig"), "--format", "png")
    assert p.returncode == 0, p.stderr
    names = {Path(line.split()[-1]).name for line in p.stdout.splitlines() if line.startswith("wrote")}
    assert names == {"trajectories_saddle.png", "trajectories_saddle.gif", "trajectories_loss.png"}
    from PIL import Image

    with Image.open(tmp_path / "fig" / "trajectories_saddle.gif") as im:
        assert im.n_frames == PT.frame_indices(201, 3).size == 3


@pytest.mark.parametrize("args, word", [
    (["--surface", "sphere"], "--surface"),
    (["--optimizers", "sgd,lbfgs"], "--optimizers"),
    (["--lr", "0"], "--lr"),
    (["--steps", "0"], "steps"),
    (["--surface", "beale", "--start", "5,5"], "start"),
    (["--frames", "1"], "frames"),
])
def test_cli_bad_input(tmp_path, args, word):
    out = tmp_path / "bad"
    r = dyntools("simulate", "trajectories", *args, "--out", str(out))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], r.stderr
    assert not out.exists()
