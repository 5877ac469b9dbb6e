"""The Voronoi kernel's sums in explicit lanes: the order the source states, and the same bits whether the
kernel was compiled in this process or loaded from numba's cache (the reproducibility contract's
"fresh compile = cache load"; ``reassoc`` broke it, see ``voronoi.FASTMATH``)."""

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.models import voronoi as MV
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]


def _fma(a: float, b: float, c: float) -> float:
    """a·b + c rounded once (exact rational arithmetic, then one rounding to float)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _lane_order_sum(x, lanes: int, w=None, fused: bool = False) -> float:
    """Reference written from the docstring, in Python floats: lane l sums x[j] (or x[j]·w[j]) for
    j ≡ l (mod lanes) in increasing j (the tail after the last full block of ``lanes`` goes to lanes 0, 1, …),
    then lane l + h is added into lane l for h = lanes/2, …, 1. ``fused``: each product and its addition
    rounded once (the FMA that FASTMATH's ``contract`` allows on a processor that has one)."""
    n = len(x)
    full = n - n % lanes
    w = [None] * n if w is None else w
    acc = []
    for lane in range(lanes):           # lane l: j = l, l + lanes, …, then the tail element full + l
        order = list(range(lane, full, lanes)) + ([full + lane] if full + lane < n else [])
        total = 0.0
        for j in order:
            if w[j] is None:
                total += float(x[j])
            else:
                total = _fma(float(x[j]), float(w[j]), total) if fused else total + float(x[j]) * float(w[j])
        acc.append(total)
    h = lanes // 2
    while h > 0:
        acc = [acc[i] + acc[i + h] for i in range(h)] + acc[h:]
        h //= 2
    return acc[0]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 150), seed=st.integers(0, 2**31 - 1))
def test_lane_sums_add_in_the_stated_order(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, size=n)
    w = rng.standard_normal(n + 3)
    acc = np.empty(MV.LANES)
    assert MV._lane_sum(x, n, acc) == _lane_order_sum(x, MV.LANES)
    dot = MV._lane_dot(x, w, 3, n, acc)
    assert dot in (_lane_order_sum(x, MV.LANES, w[3:], fused=True), _lane_order_sum(x, MV.LANES, w[3:]))


def _four_lane_extreme(a, k: int, pick, start: float) -> float:
    """Reference from the docstring, Python floats and Python's ``min``/``max``: lane l reduces a[j] for
    j ≡ l (mod 4) over the full blocks, the tail goes to lane 0, then (l0 ∘ l1) ∘ (l2 ∘ l3)."""
    m = [start] * 4
    for j in range(0, k - 3, 4):
        for lane in range(4):
            m[lane] = pick(m[lane], float(a[j + lane]))
    for j in range(k - k % 4, k):
        m[0] = pick(m[0], float(a[j]))
    return pick(pick(m[0], m[1]), pick(m[2], m[3]))


_SPECIAL = st.sampled_from([0.0, -0.0, 1.5, -1.5, float("inf"), -float("inf"), float("nan"), 5e-324])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | _SPECIAL, min_size=0, max_size=19),
       st.integers(0, 19), st.sampled_from(["float64", "float32"]))
def test_the_lane_minimum_and_maximum_are_one_loop_bit_for_bit(values, k, dtype):
    """``_extreme`` computes the maximum as −min(−a) in the minimum's lanes: the same bits as the four-lane
    maximum written out (NaN kept or skipped where Python's rule keeps or skips it, signed zeros alike)."""
    with np.errstate(over="ignore"):
        a = np.array(values + [0.0] * 19, dtype=dtype)[:max(k, 1)]
    k = min(k, a.size)
    for smallest, pick, start in ((True, min, float("inf")), (False, max, -float("inf"))):
        got = np.array(MV._extreme(a, k, smallest), dtype=dtype)
        want = np.array(_four_lane_extreme(a, k, pick, start), dtype=dtype)
        assert got.tobytes() == want.tobytes(), (smallest, a[:k], got, want)


def test_fastmath_allows_no_reassociation():
    assert "reassoc" not in MV.FASTMATH and "fast" not in MV.FASTMATH


# one process: the gradient of the top rung and of a fixed-center rung, and a short training of the top rung,
# in both precisions; prints the bytes of every result as hex
_PROGRAM = """
import hashlib, numpy as np
from dyntools.data.voronoi import voronoi
from dyntools.dynamics.train import train
from dyntools.models.voronoi import VoronoiLadder
from dyntools.optim.decay_groups import adamw_decay

class Data:
    def __init__(self, X, y):
        self.X, self.y = X, y

env = voronoi(400, n_test=1, k=24, seed=5)
for dtype in ("float64", "float32"):
    for rung in ("centers", "scale"):
        m = VoronoiLadder(rung, centers=env.centers, center_labels=env.center_labels, dim=2, n_centers=64,
                         dtype=dtype)
        th = m.init(1, 0)
        iargs, fargs = m.kernel_args()
        g = np.zeros(m.n_params, dtype=dtype)
        ws = np.zeros(m.workspace_size(64), dtype=dtype)
        loss = m.loss_grad(th, env.X.astype(dtype), env.y.astype(np.int64), np.arange(64), 64, None, g, ws,
                           iargs, fargs)
        print(dtype, rung, "loss_grad", float(loss).hex(), hashlib.sha256(g.tobytes()).hexdigest())
    m = VoronoiLadder("centers", dim=2, n_centers=64, dtype=dtype)
    res = train(m, Data(env.X, env.y), adamw_decay("l2", lr=1e-2, weight_decay=1e-2), steps=40, batch=32,
                sampler="epoch", record_steps=np.array([40]), theta0=m.init(1, 0), seed=3)
    print(dtype, "train", hashlib.sha256(np.ascontiguousarray(res.arrays["final_theta"]).tobytes()).hexdigest())
"""


@pytest.mark.slow
def test_fresh_compile_and_cache_loads_give_the_same_bits(tmp_path):
    """Three fresh processes share one emptied NUMBA_CACHE_DIR: the first compiles the kernels (and writes
    the cache), the next two load them; every gradient and the trained θ are bitwise the same."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    outs = []
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=HANG_GUARD)
        assert run.returncode == 0, run.stderr[-3000:]
        outs.append(run.stdout)
    assert any(tmp_path.joinpath("numba-cache").rglob("*.nbc")), "the first process wrote no cache"
    assert len(outs[0].splitlines()) == 6
    assert outs[0] == outs[1] == outs[2], "\n---\n".join(outs)
