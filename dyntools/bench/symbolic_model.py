"""``dyntools bench symbolic-model``: the generated kernel of a :class:`~dyntools.models.symbolic.SymbolicModel`
against the hand-written one and against JAX, one process.

Setting: the diagonal network ``h(x) = ⟨u ⊙ v, x⟩`` at d = 200, n = 80 (sparse regression), batch-1 SGD
replaying the same sample indices, the same compiled step loop (:func:`sgd_with_kernel`) around the
hand-written :class:`~dyntools.models.diag_net.DiagNet` kernel and around the generated one; the generated
model's whole ``dt.train`` run is reported besides.

Targets (issue 25.6):

* per step, the generated kernel at most 1.5× the hand-written DiagNet kernel (``generated_over_hand``);
* compile time of a model with p ≤ 1000 under 10 s: deriving (sympy), generating and numba-compiling
  the kernel of a fresh model in an empty code cache, in a child process (:func:`fresh_compile_phases`,
  each phase reported) — the diagonal net at d = 500 (p = 1000, declared per coordinate) and dense
  one-hidden-layer ReLU nets with p = 31, p = 151 (straight-line code) and p = 991 (d = 9, m = 90:
  rolled into loops, :mod:`dyntools.codegen.rolling`), and ``h = s Σ_j u_j x_j`` at d = 1000 (p = 1001, a
  shared scalar: a ``Sum`` expanded densely, its 1000-term sum added in chunks); the last three not in
  ``quick``;
* from declaration to a trained model under 10 s (``declared_to_trained_seconds_*``: the compile time above
  plus the model's first ``dt.train``, once the installation has compiled the trainer loop that calls every
  generated kernel through a function pointer — ``trainer_loop_first_compile_seconds``, paid once);
* per step at p = 991: the rolled generated kernel of the ReLU net against the hand-written
  :class:`~dyntools.models.mlp.MLP` kernel ``(9, 90, 1)`` in the same SGD loop (``relu_p991_generated_over_hand``,
  reported; straight-line code at this size takes minutes to compile, so it is not timed);
* the same run in JAX (``jax.grad`` of the same loss + ``lax.scan`` over the steps, float64, optax-free
  plain SGD): the ratio JAX time / generated time, reported (no goal; the row is absent without jax).

``quick`` shrinks the run to 2000 steps (a smoke test, not the targets).
"""

from __future__ import annotations

import json
import os
import tempfile
from types import SimpleNamespace

import numpy as np
from numba import njit

from dyntools.bench.report import Benchmark, BenchReport, Target, best_time


def _setting(steps: int, d: int = 200, n: int = 80):
    from dyntools.data import sparse_regression
    from dyntools.engine import streams

    data = sparse_regression(n=n, d=d, r=20, n_test=10, seed=0)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(0, streams.KEYS["bench"])))
    idx = rng.integers(0, n, steps).astype(np.int64)
    theta0 = np.concatenate([np.full(d, 0.1), np.zeros(d)])
    return SimpleNamespace(X=data.X, y=data.y), idx, theta0


_COMPILE_CODE = """
import json, time, sympy as sp
import dyntools.dynamics.train   # the package's one-time first use, not the model's (see fresh_compile_phases)
import dyntools.lowlevel         # its probe: numba's CPU target initialised, as every commit's preamble did
from dyntools.codegen import derive, kernels
from dyntools.models import symbolic_examples
from dyntools.models.symbolic import SymbolicModel
phases = dict(sympy=0.0)
def timed(fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases["sympy"] += time.perf_counter() - t
    return wrapper
derive.jacobian = timed(derive.jacobian)
kernels.kernel_source = timed(kernels.kernel_source)
start = time.perf_counter()
model = {make}
declared = time.perf_counter()
model.compile()
end = time.perf_counter()
phases.update(total=end - start, numba=end - declared, p=model.n_params)
import numpy as np
import dyntools as dt
X = np.random.default_rng(0).standard_normal((16, model.n_inputs))
y = np.arange(16) % model.n_outputs if model.head == "cross-entropy" else X[:, 0].copy()
start = time.perf_counter()
dt.train(model, type("Data", (), {{"X": X, "y": y}})(), dt.optim.sgd(1e-3), steps=10, seed=0, records=2)
phases["first_train"] = time.perf_counter() - start
print(json.dumps(phases))
"""


def fresh_compile_phases(make: str, numba_cache: str | None = None) -> dict:
    """Seconds to declare, derive, generate and numba-compile the kernel of the model built by the Python
    expression ``make``, in a child process with an empty code cache: ``total``, ``sympy`` (derivation, CSE
    and printing), ``numba`` (compiling ``loss_grad``), ``first_train`` (the first ``dt.train`` of the model,
    10 steps: what compiling the kernel left to do), and ``p``. Not counted: imports and the package's one-time
    first use — importing ``dyntools.dynamics.train`` (dt.train's modules: engine, optimizers, the tuned loops'
    registry) and the low-level panels' probe (:mod:`dyntools.lowlevel`), which initialises numba's CPU target (its
    registries, ``numba.np.arraymath``, SciPy's BLAS check: ~0.2 s in any process, paid by whatever compiles
    or loads first). Up to 7b94d17 ``import dyntools.dynamics.loops`` did all of that eagerly; since those
    imports became lazy it does not, and the first compile of the model paid numba's initialisation inside
    ``numba`` and the imports of dt.train inside ``first_train`` (same work per process, moved into the
    timed phases). Since stop 51 dt.train's imports no longer run the probe (only an MLP imports the low-level
    blocks), so the preamble imports :mod:`dyntools.lowlevel` itself: the same untimed work on every commit.
    ``numba_cache``: a numba cache
    directory shared with earlier children (the package's own compiled code, e.g. the trainer loop that calls
    generated kernels through a pointer, compiled once per installation); default an empty one."""
    import subprocess
    import sys

    from dyntools.child import environment

    with tempfile.TemporaryDirectory() as tmp:
        env = environment(DYNTOOLS_SYMBOLIC_CACHE=tmp, NUMBA_CACHE_DIR=numba_cache or os.path.join(tmp, "numba"))
        out = subprocess.run([sys.executable, "-c", _COMPILE_CODE.format(make=make)], env=env, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fresh_compile_seconds(make: str) -> float:
    """The ``total`` of :func:`fresh_compile_phases`."""
    return fresh_compile_phases(make)["total"]


def jax_run(X, y, idx, theta0, lr):
    """``run() -> θ_T``: the same replayed SGD run written by a JAX user (jit, grad, lax.scan), compiled."""
    from dyntools.bench.sweep import jax_modules

    mods = jax_modules()
    if mods is None:
        return None
    jax, jnp, _ = mods
    jax.config.update("jax_enable_x64", True)
    d = X.shape[1]

    def loss(theta, x, yi):
        return 0.5 * (jnp.dot(x, theta[:d] * theta[d:]) - yi) ** 2

    grad = jax.grad(loss)

    @jax.jit
    def train(theta, Xj, yj, ij):
        def step(th, i):
            return th - lr * grad(th, Xj[i], yj[i]), None

        return jax.lax.scan(step, theta, ij)[0]

    args = (jnp.asarray(theta0), jnp.asarray(X), jnp.asarray(y), jnp.asarray(idx))
    train(*args).block_until_ready()
    return lambda: train(*args).block_until_ready()


@njit
def sgd_with_kernel(kernel, theta, X, y, idx, lr, ws, iargs, fargs):
    """Batch-1 SGD replaying ``idx`` with ``kernel`` of the model protocol: the step loop around a kernel,
    nothing else (the same driver for the hand-written and the generated kernel)."""
    grad = np.empty_like(theta)
    noise = np.zeros(1)
    one = np.empty(1, dtype=np.int64)
    for t in range(idx.shape[0]):
        one[0] = idx[t]
        kernel(theta, X, y, one, 1, noise, grad, ws, iargs, fargs)
        for k in range(theta.shape[0]):
            theta[k] -= lr * grad[k]
    return theta


def _relu_p991_per_step(steps: int) -> dict:
    """Per-step times of the rolled generated kernel of ``relu_net(9, 90)`` (p = 991) and of the hand-written
    ``MLP((9, 90, 1))`` kernel, batch-1 SGD on the same replayed indices from the same θ₀."""
    from dyntools.engine import streams
    from dyntools.models import symbolic_examples
    from dyntools.models.mlp import MLP

    d, m, n, lr = 9, 90, 80, 0.002
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(1, streams.KEYS["bench"])))
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    idx = rng.integers(0, n, steps).astype(np.int64)
    hand, sym = MLP((d, m, 1)), symbolic_examples.relu_net(d, m, budget=600.0)
    theta0 = hand.init(0)

    def kernel_run(model):
        iargs, fargs = model.kernel_args()
        ws = np.zeros(model.workspace_size(1))
        return lambda: sgd_with_kernel(model.loss_grad, theta0.copy(), X, y, idx, lr, ws, iargs, fargs)

    runs = {"hand": kernel_run(hand), "generated": kernel_run(sym)}
    finals = {k: fn() for k, fn in runs.items()}
    t_hand, t_sym = best_time(runs["hand"]) / steps, best_time(runs["generated"]) / steps
    rel = float(np.max(np.abs(finals["hand"] - finals["generated"])) / np.max(np.abs(finals["hand"])))
    return {"relu_p991_steps": steps, "relu_p991_hand_ns_per_step": 1e9 * t_hand,
            "relu_p991_generated_ns_per_step": 1e9 * t_sym, "relu_p991_generated_over_hand": t_sym / t_hand,
            "relu_p991_final_theta_relative_difference": rel}


def _default_loop_per_step(steps: int, d: int, lr: float) -> dict:
    """Per-step times of ``dt.train`` (batch-1 SGD, replayed indices) of the hand-written ``DiagNet(d)`` — which
    runs in the tuned loop ``dt.train`` picks for it by default — and of the generated ``diagonal_net(d)`` (the
    general loop, kernel through a pointer): the comparison a user makes, beside the same-loop one."""
    from dyntools.dynamics.train import train
    from dyntools.models import symbolic_examples
    from dyntools.models.diag_net import DiagNet
    from dyntools.optim import optimizers as O

    data, idx, theta0 = _setting(steps, d=d)
    kw = dict(steps=steps, sampler="replay", indices=idx, theta0=theta0, records=20, seed=0)
    hand, sym = DiagNet(d), symbolic_examples.diagonal_net(d)
    paths = {tag: train(model, data, O.sgd(lr), **kw).config["path"] for tag, model in (("hand", hand),
                                                                                      ("generated", sym))}
    t_hand = best_time(lambda: train(hand, data, O.sgd(lr), **kw)) / steps
    t_sym = best_time(lambda: train(sym, data, O.sgd(lr), **kw)) / steps
    return {f"default_loop_d{d}_hand_ns_per_step": 1e9 * t_hand,
            f"default_loop_d{d}_generated_ns_per_step": 1e9 * t_sym,
            f"default_loop_d{d}_generated_over_hand": t_sym / t_hand,
            f"default_loop_d{d}_hand_is_tuned": float(paths["hand"] == "tuned"),
            f"default_loop_d{d}_generated_is_tuned": float(paths["generated"] == "tuned")}


def run(quick: bool = False) -> BenchReport:
    from dyntools.dynamics.train import train
    from dyntools.models import symbolic_examples
    from dyntools.models.diag_net import DiagNet
    from dyntools.optim import optimizers as O

    steps = 2_000 if quick else 100_000
    report = BenchReport("symbolic-model")
    data, idx, theta0 = _setting(steps)
    lr = 0.01
    hand = DiagNet(200)
    sym = symbolic_examples.diagonal_net(200)
    kw = dict(steps=steps, sampler="replay", indices=idx, theta0=theta0, records=20, seed=0)

    def kernel_run(model):
        iargs, fargs = model.kernel_args()
        ws = np.zeros(model.workspace_size(1))
        return lambda: sgd_with_kernel(model.loss_grad, theta0.copy(), data.X, data.y, idx, lr, ws, iargs, fargs)

    runs = {"hand": kernel_run(hand), "generated": kernel_run(sym)}
    finals = {k: fn() for k, fn in runs.items()}                # compiles the driver for each kernel
    t_hand, t_sym = (best_time(runs["hand"]) / steps, best_time(runs["generated"]) / steps)
    t_train = best_time(lambda: train(sym, data, O.sgd(lr), **kw)) / steps
    rel = float(np.max(np.abs(finals["hand"] - finals["generated"])) / np.max(np.abs(finals["hand"])))
    report.measurements.update({
        "steps": steps, "d": 200, "hand_ns_per_step": 1e9 * t_hand, "generated_ns_per_step": 1e9 * t_sym,
        "generated_in_dt_train_ns_per_step": 1e9 * t_train, "final_theta_relative_difference": rel})
    # the baseline above is the hand kernel in the same general loop; what a user compares against is DiagNet in
    # dt.train, which takes its tuned loop by default: both baselines are reported, at d = 200 and d = 100
    report.targets.append(Target("generated_over_hand", t_sym / t_hand, 1.5, higher_is_better=False))
    for d in (200, 100):
        report.measurements.update(_default_loop_per_step(steps, d, lr))
        report.targets.append(Target(f"generated_over_hand_default_loop_d{d}",
                                     report.measurements[f"default_loop_d{d}_generated_over_hand"], 1.5,
                                     higher_is_better=False))

    declarations = {"diag_p1000": "symbolic_examples.diagonal_net(500)",
                    "relu_p31": "symbolic_examples.relu_net(1, 10, budget=600.0)",
                    "relu_p151": "symbolic_examples.relu_net(3, 30, budget=600.0)",
                    "relu_p991": "symbolic_examples.relu_net(9, 90, budget=600.0)",
                    "shared_p1001": "symbolic_examples.one_unit_linear_net(1000)"}
    if quick:
        del declarations["relu_p151"], declarations["relu_p991"], declarations["shared_p1001"]
    with tempfile.TemporaryDirectory() as numba_cache:
        # the installation's one-time cost: the trainer loop shared by every generated kernel (and the package's
        # other compiled code), compiled by a first model; the models below find it in numba's cache
        warm = fresh_compile_phases("symbolic_examples.diagonal_net(3)", numba_cache)
        report.measurements["trainer_loop_first_compile_seconds"] = warm["first_train"]
        phases = {tag: fresh_compile_phases(make, numba_cache) for tag, make in declarations.items()}
    for tag, ph in phases.items():
        report.measurements[f"compile_seconds_{tag}"] = ph["total"]
        report.measurements[f"compile_seconds_{tag}_sympy"] = ph["sympy"]
        report.measurements[f"compile_seconds_{tag}_numba"] = ph["numba"]
        report.measurements[f"first_train_seconds_{tag}"] = ph["first_train"]
        report.measurements[f"declared_to_trained_seconds_{tag}"] = ph["total"] + ph["first_train"]
    report.targets.append(Target("compile_seconds_p1000", phases["diag_p1000"]["total"], 10.0,
                                 higher_is_better=False, unit="s"))
    report.targets.append(Target("compile_seconds_dense_relu", phases["relu_p31"]["total"], 10.0,
                                 higher_is_better=False, unit="s"))
    if "relu_p151" in phases:
        report.targets.append(Target("compile_seconds_dense_relu_p151", phases["relu_p151"]["total"], 10.0,
                                     higher_is_better=False, unit="s"))
    report.targets.append(Target("declared_to_trained_seconds_p1000", phases["diag_p1000"]["total"]
                                 + phases["diag_p1000"]["first_train"], 10.0, higher_is_better=False, unit="s"))
    if "relu_p991" in phases:
        report.targets.append(Target("compile_seconds_dense_relu_p991", phases["relu_p991"]["total"], 10.0,
                                     higher_is_better=False, unit="s"))
        report.targets.append(Target("declared_to_trained_seconds_dense_relu_p991", phases["relu_p991"]["total"]
                                     + phases["relu_p991"]["first_train"], 10.0, higher_is_better=False, unit="s"))
        report.measurements.update(_relu_p991_per_step(steps // 5))
    if "shared_p1001" in phases:
        report.targets.append(Target("compile_seconds_shared_scalar_p1001", phases["shared_p1001"]["total"], 10.0,
                                     higher_is_better=False, unit="s"))

    run_jax = jax_run(data.X, data.y, idx, theta0, lr)
    if run_jax is None:
        report.notes.append("jax not importable: the JAX row is skipped")
    else:
        t_jax = best_time(run_jax)
        report.measurements["jax_ns_per_step"] = 1e9 * t_jax / steps
        report.measurements["jax_over_generated"] = t_jax / steps / t_sym
    report.notes.append("per-step times: the same compiled SGD loop around each kernel (replayed indices); "
                        "compile times: sympy derivation, code generation and numba "
                        "compilation of the kernel in an empty code cache; first_train: the model's first dt.train "
                        "after that (the trainer loop that calls every generated kernel through a pointer is "
                        "compiled once per installation: trainer_loop_first_compile_seconds)")
    return report


BENCHMARK = Benchmark("symbolic-model", run)
