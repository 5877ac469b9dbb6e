"""``dyntools bench voronoi``: one training run of the top rung of seed 000's ladder, three ways.

The run: the ``centers`` rung (2048 learned centers, D = 2, C = 2: θ has 2·2048 + 4 + 2048·2 = 8196
entries), AdamW (lr 10⁻², λ = 10⁻², decoupled L2), batch 64, 2000 steps on a 10 000-point
environment, float64, the same replayed minibatches for everyone:

* compiled: :func:`dyntools.train` (the ladder's cached loop in :mod:`dyntools.dynamics.loops`: the
  model's compiled loss-and-gradient kernel and the fused AdamW step), the training loop's time
  (``timings["simulate"]``);
* NumPy twin: :func:`dyntools.models.voronoi.loss_grad_np` and the optimizer's readable chain
  (``Optimizer.step``), one vectorized NumPy evaluation per step;
* PyTorch (one thread, float64, ``torch.optim.AdamW(foreach=False)``, the same model and initial
  point) when torch is installed; otherwise the note says "skipped: torch not installed";
* compiled in float32 (``VoronoiLadder(dtype="float32")``, the same run and initial point rounded): its
  time and its speed against the float64 loop (a measurement, no target), and how far its end point is
  from the float64 one.

Targets: compiled ≥ 5× the twin and ≥ 5× PyTorch. ``quick`` runs 200 steps (ratios per step).
Memory per step: the kernel's scratch (``workspace_size``) is O(k) per path (one row of k scores at a
time), below the O(batch × k) the issue allows.
"""

from __future__ import annotations

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time

K_CENTERS, BATCH, LR, WD = 2048, 64, 1e-2, 1e-2


class _Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


def setup(steps: int, dtype: str = "float64"):
    from dyntools.data.voronoi import voronoi
    from dyntools.engine import streams
    from dyntools.models.voronoi import VoronoiLadder
    from dyntools.optim.decay_groups import adamw_decay

    env = voronoi(10_000, n_test=1, seed=0)
    model = VoronoiLadder("centers", dim=2, n_centers=K_CENTERS, dtype=dtype)
    theta0 = model.init(0, 0)
    gen = streams.path_generators(0, 1, streams.key("bench"), 0x7020)[0]
    indices = gen.integers(0, env.X.shape[0], size=steps * BATCH)
    return env, model, theta0, indices, adamw_decay("l2", lr=LR, weight_decay=WD)


def compiled(model, env, opt, theta0, indices, steps):
    from dyntools.dynamics.train import train

    res = train(model, _Data(env.X, env.y), opt, steps=steps, batch=BATCH, sampler="replay", indices=indices,
                record_steps=np.array([steps]), theta0=theta0)
    return res


def twin(model, env, opt, theta0, indices, steps):
    """The NumPy twin of the run: vectorized loss and gradient, the readable AdamW chain."""
    iargs, fargs = model.kernel_args()
    theta = theta0.copy()
    state = opt.init(theta)
    grad = np.empty(model.n_params)
    y = env.y.astype(np.int64)
    for t in range(steps):
        idx = indices[t * BATCH:(t + 1) * BATCH]
        model.loss_grad_np(theta, env.X, y, idx, BATCH, None, grad, None, iargs, fargs)
        theta, state = opt.step(theta, grad, state, t + 1)
    return theta


def _torch_run(model, env, theta0, indices, steps):
    """The same model in PyTorch (float64, one thread): centers, offset, scale, plus–minus, a bias-free
    linear layer; ``Σ_i ReLU(p_i z)`` for the learned absolute value."""
    import torch

    torch.set_num_threads(1)
    parts = model.parts(theta0)
    k, C = model.k, model.classes

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.centers = torch.nn.Parameter(torch.from_numpy(parts["centers"].copy()))
            self.offset = torch.nn.Parameter(torch.from_numpy(parts["offset"].copy()))
            self.scale = torch.nn.Parameter(torch.from_numpy(parts["scale"].copy()))
            self.pm = torch.nn.Parameter(torch.from_numpy(parts["plus-minus"].copy()))
            self.logits = torch.nn.Linear(k, C, bias=False, dtype=torch.float64)
            with torch.no_grad():
                self.logits.weight.copy_(torch.from_numpy(parts["logits"].copy()))

        def forward(self, x):
            u = self.centers / (self.centers * self.centers).sum(dim=1, keepdim=True)
            z = x @ u.T - self.offset
            a = torch.relu(self.pm[0] * z) + torch.relu(self.pm[1] * z)
            return self.logits(torch.softmax(-self.scale * a, dim=1))

    net = Net()
    opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WD, foreach=False)
    X, y = torch.from_numpy(env.X), torch.from_numpy(env.y.astype(np.int64))
    idx = torch.from_numpy(indices.reshape(steps, BATCH))
    loss_fn = torch.nn.CrossEntropyLoss()

    def run():
        for t in range(steps):
            opt.zero_grad(set_to_none=True)
            loss_fn(net(X[idx[t]]), y[idx[t]]).backward()
            opt.step()

    return run


def run(quick: bool = False) -> BenchReport:
    steps = 200 if quick else 2000
    report = BenchReport("voronoi")
    env, model, theta0, indices, opt = setup(steps)
    compiled(model, env, opt, theta0, indices[:3 * BATCH], 3)                       # compile / load the cache
    results = []

    def go():
        results.append(compiled(model, env, opt, theta0, indices, steps))

    best_time(go, repeats=2)
    t_numba = min(r.timings["simulate"] for r in results)
    theta_twin = []
    t_numpy = best_time(lambda: theta_twin.append(twin(model, env, opt, theta0, indices, steps)), repeats=1)
    final = results[-1].arrays["final_theta"][0, 0]
    report.measurements.update({
        "steps": steps, "batch": BATCH, "centers": K_CENTERS, "parameters": model.n_params,
        "compiled training loop seconds (dt.train)": t_numba,
        "numpy twin seconds": t_numpy,
        "compiled ms per step": 1e3 * t_numba / steps,
        "max |theta_compiled - theta_twin| / max |theta|": float(np.max(np.abs(final - theta_twin[0]))
                                                                / np.max(np.abs(final))),
        "kernel scratch floats per path (workspace_size)": model.workspace_size(BATCH)})
    report.targets.append(Target("top rung: compiled vs NumPy twin", t_numpy / t_numba, 5.0))
    try:
        import torch  # noqa: F401
    except ImportError:
        report.notes.append("torch comparison skipped: torch not installed")
    else:
        fn = _torch_run(model, env, theta0, indices, steps)
        t_torch = best_time(fn, repeats=1)
        report.measurements["torch seconds (1 thread, float64)"] = t_torch
        report.targets.append(Target("top rung: compiled vs PyTorch (CPU, 1 thread)", t_torch / t_numba, 5.0))
    model32 = setup(steps, "float32")[1]
    compiled(model32, env, opt, theta0, indices[:3 * BATCH], 3)
    results32 = []
    best_time(lambda: results32.append(compiled(model32, env, opt, theta0, indices, steps)), repeats=2)
    t32 = min(r.timings["simulate"] for r in results32)
    final32 = results32[-1].arrays["final_theta"][0, 0]
    report.measurements.update({
        "compiled float32 training loop seconds": t32,
        "compiled float32 speed vs float64 (t64 / t32)": t_numba / t32,
        "max |theta_float32 - theta_float64| / max |theta|": float(np.max(np.abs(final32 - final))
                                                                 / np.max(np.abs(final)))})
    report.notes.append("the same replayed minibatches and initial point for every implementation; one "
                        "gradient agrees with the twin's to ~1e-15 (tests), but over thousands of Adam steps "
                        "rounding differences grow (Adam's step m/(sqrt(v)+eps) is insensitive to the gradient's "
                        "size), hence the end-point difference above")
    return report


BENCHMARK = Benchmark("voronoi", run)
