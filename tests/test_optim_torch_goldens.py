"""Every torch optimizer and LR scheduler: dyntools vs PyTorch golden trajectories (float64, ≤ 1e-12).

The goldens were written by tests/goldens/make_goldens.py (the torch version is inside the file);
when torch is importable the same cases are also run live.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dyntools.optim import torch_names
from tests import optim_step

GOLDEN_DIR = Path(__file__).with_name("goldens")
sys.path.insert(0, str(GOLDEN_DIR))
import make_goldens as G  # noqa: E402

RTOL = 1e-12
GOLDENS = np.load(GOLDEN_DIR / "torch_goldens.npz")
META = json.loads(str(GOLDENS["meta"]))
OPT_CASES = META["optimizer_cases"]
SCHED_CASES = META["scheduler_cases"]

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def run_case(case, fused: bool, twin: bool = False) -> np.ndarray:
    """The golden problem's trajectory by the readable chain, or by the compiled step of
    :func:`dyntools.optim.compiled.compile_runs` (``fused``; ``twin``: its NumPy twin ``step_np``)."""
    opt = torch_names.optimizer_from_torch(case["optimizer"], case["kwargs"])
    steps = case["steps"]
    m = (torch_names.schedule_from_torch(case["schedule"]).multipliers(steps) if case["schedule"]
         else np.ones(steps))
    p0, a, c = G.problem(case["seed"])
    p = p0.copy()
    state = optim_step.init_state(opt, p.size) if fused else opt.init(p)
    records = [p.copy()]
    for t in range(steps):
        g = G.problem_gradient(p, a, c, case["seed"], t)
        if fused:
            (optim_step.step_np if twin else optim_step.step)(opt, p, g, state, t + 1, m[t])
        else:
            p, state = opt.step(p, g, state, t + 1, m[t])
        if (t + 1) % G.RECORD_EVERY == 0 or t + 1 == steps:
            records.append(p.copy())
    return np.array(records)


def rel_err(x, ref):
    """max over records of ‖x − ref‖∞ / ‖ref‖∞ (per record)."""
    return float(np.max(np.max(np.abs(x - ref), axis=1) / np.max(np.abs(ref), axis=1)))


def schedule_values(spec, steps=G.SCHED_STEPS):
    sched = torch_names.schedule_from_torch(spec)
    if spec["type"] == "ReduceLROnPlateau":
        return sched.multipliers_from_metrics([G.plateau_metric(t, spec["mode"]) for t in range(steps - 1)])
    return sched.multipliers(steps)


def test_goldens_cover_every_torch_optimizer_and_scheduler():
    assert META["torch_version"].startswith("2.")
    assert {c["optimizer"] for c in OPT_CASES} == {"SGD", "Adam", "AdamW", "Adagrad", "RMSprop"}
    assert {c["type"] for c in SCHED_CASES} == {"StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                               "LinearLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau",
                                               "SequentialLR"}
    assert all(c["steps"] >= 500 for c in OPT_CASES)
    assert any(c["kwargs"].get("weight_decay", 0) > 0 for c in OPT_CASES)
    assert any(c["kwargs"].get("weight_decay", 0) == 0 for c in OPT_CASES)
    assert (GOLDEN_DIR / "torch_goldens.npz").stat().st_size < 2_000_000


@pytest.mark.parametrize("case", OPT_CASES, ids=[c["name"] for c in OPT_CASES])
def test_optimizer_matches_torch_golden(case):
    ref = GOLDENS[f"opt/{case['name']}"]
    chain = run_case(case, fused=False)
    fused = run_case(case, fused=True)
    twin = run_case(case, fused=True, twin=True)
    assert chain.shape == ref.shape
    # the NumPy twin follows the compiled step bit for bit (one machine: the test suite's)
    np.testing.assert_array_equal(twin, fused)
    # (the compiled step is the old fused kernel bit for bit: tests/goldens/optim_fused.npz, test_optim_compiled)
    assert rel_err(chain, ref) <= RTOL
    assert rel_err(fused, ref) <= RTOL
    # the compiled step does the chain's arithmetic in the same order; only Adam's bias corrections may differ in
    # the last bit: β**t by square-and-multiply (numba) vs C pow (Python, PyTorch), √(1 − β₂**t) by sqrt vs pow(·, 0.5)
    if "Adam" in case["optimizer"]:
        assert rel_err(fused, chain) <= 1e-13
    else:
        np.testing.assert_array_equal(fused, chain)


@pytest.mark.parametrize("spec", SCHED_CASES, ids=[s["name"] for s in SCHED_CASES])
def test_schedule_matches_torch_golden(spec):
    ref = GOLDENS[f"sched/{spec['name']}"] / META["sched_base_lr"]
    m = schedule_values(spec)
    np.testing.assert_allclose(m, ref, rtol=RTOL, atol=RTOL * np.abs(ref).max())


def test_false_control_wrong_hyperparameter_is_detected():
    case = dict(OPT_CASES[1])
    case["kwargs"] = {**case["kwargs"], "weight_decay": case["kwargs"]["weight_decay"] * (1 + 1e-9)}
    assert rel_err(run_case(case, fused=True), GOLDENS[f"opt/{OPT_CASES[1]['name']}"]) > RTOL


def test_false_control_adam_l2_is_not_adamw():
    case = next(c for c in OPT_CASES if c["name"] == "adamw_strong")
    swapped = {**case, "optimizer": "Adam"}
    assert rel_err(run_case(swapped, fused=True), GOLDENS["opt/adamw_strong"]) > 1e-3


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed: compared to the committed goldens only")
@pytest.mark.parametrize("case", OPT_CASES[::3], ids=[c["name"] for c in OPT_CASES[::3]])
def test_optimizer_matches_live_torch(case):
    assert rel_err(run_case(case, fused=True), G.torch_trajectory(case)) <= RTOL


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed: compared to the committed goldens only")
@pytest.mark.parametrize("spec", SCHED_CASES, ids=[s["name"] for s in SCHED_CASES])
def test_schedule_matches_live_torch(spec):
    ref = G.torch_lrs(spec) / G.SCHED_BASE_LR
    np.testing.assert_allclose(schedule_values(spec), ref, rtol=RTOL, atol=RTOL * np.abs(ref).max())
