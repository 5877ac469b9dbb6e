"""``dyntools bench symbolic-model``: the generated kernel of a :class:`~dyntools.models.symbolic.SymbolicModel`
against the hand-written one and against JAX, one process.

Setting: the diagonal network ``h(x) = ⟨u ⊙ v, x⟩`` at d = 200, n = 80 (sparse regression), batch-1 SGD
replaying the same sample indices, ``dt.train``'s generic loop for both kernels (``fast=False``: the
hand-written :class:`~dyntools.models.diag_net.DiagNet`'s tuned loop is reported besides, not compared).

Targets (issue 25.6):

* per step, the generated kernel at most 1.5× the hand-written DiagNet kernel (``generated_over_hand``);
* compile time of a model with p ≤ 1000 under 10 s: deriving (sympy), generating and numba-compiling
  the kernel of a fresh model in an empty code cache — the diagonal net at d = 500 (p = 1000, declared
  per coordinate) and a dense one-hidden-layer ReLU net on one input with p = 301 (straight-line code);
* the same run in JAX (``jax.grad`` of the same loss + ``lax.scan`` over the steps, float64, optax-free
  plain SGD): the ratio JAX time / generated time, reported (no goal; the row is absent without jax).

``quick`` shrinks the run to 2000 steps (a smoke test, not the targets).
"""

from __future__ import annotations

import os
import tempfile
import time
from types import SimpleNamespace

import numpy as np

from dyntools.bench import BenchReport, Target, best_time


def _setting(steps: int, d: int = 200, n: int = 80):
    from dyntools.data import sparse_regression
    from dyntools.engine import streams

    data = sparse_regression(n=n, d=d, r=20, n_test=10, seed=0)
    rng = np.random.Generator(np.random.PCG64(streams.root_sequence(0, streams.KEYS["bench"])))
    idx = rng.integers(0, n, steps).astype(np.int64)
    theta0 = np.concatenate([np.full(d, 0.1), np.zeros(d)])
    return SimpleNamespace(X=data.X, y=data.y), idx, theta0


def _fresh_compile_seconds(make) -> float:
    """Seconds to declare, derive, generate and compile ``make()``'s kernel with an empty code cache."""
    old = os.environ.get("DYNTOOLS_SYMBOLIC_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DYNTOOLS_SYMBOLIC_CACHE"] = tmp
        try:
            start = time.perf_counter()
            make().compile()
            return time.perf_counter() - start
        finally:
            if old is None:
                del os.environ["DYNTOOLS_SYMBOLIC_CACHE"]
            else:
                os.environ["DYNTOOLS_SYMBOLIC_CACHE"] = old


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


def run(quick: bool = False) -> BenchReport:
    import dyntools as dt
    from dyntools.models import symbolic_examples
    from dyntools.optim import optimizers as O

    steps = 2_000 if quick else 100_000
    report = BenchReport("symbolic-model")
    data, idx, theta0 = _setting(steps)
    lr = 0.01
    hand = dt.DiagNet(200)
    sym = symbolic_examples.diagonal_net(200)
    kw = dict(steps=steps, sampler="replay", indices=idx, theta0=theta0, records=20, seed=0)

    def train(model, fast=False):
        return lambda: dt.train(model, data, O.sgd(lr), fast=fast, **kw)

    for fn in (train(hand), train(sym), train(hand, True)):     # compile / load every loop first
        fn()
    t_hand, t_sym, t_tuned = (best_time(train(hand)), best_time(train(sym)), best_time(train(hand, True)))
    a, b = train(hand)(), train(sym)()
    rel = float(np.max(np.abs(a["final_theta"] - b["final_theta"])) / np.max(np.abs(a["final_theta"])))
    report.measurements.update({
        "steps": steps, "d": 200, "hand_seconds": t_hand, "generated_seconds": t_sym,
        "hand_tuned_loop_seconds": t_tuned, "hand_ns_per_step": 1e9 * t_hand / steps,
        "generated_ns_per_step": 1e9 * t_sym / steps, "final_theta_relative_difference": rel})
    report.targets.append(Target("generated_over_hand", t_sym / t_hand, 1.5, higher_is_better=False))

    t_diag = _fresh_compile_seconds(lambda: symbolic_examples.diagonal_net(500, name="bench-diag-500"))
    t_relu = _fresh_compile_seconds(lambda: symbolic_examples.relu_net(1, 100, name="bench-relu-301", budget=120.0))
    report.measurements.update({"compile_seconds_diag_p1000": t_diag, "compile_seconds_relu_p301": t_relu})
    report.targets.append(Target("compile_seconds_p1000", t_diag, 10.0, higher_is_better=False, unit="s"))
    report.targets.append(Target("compile_seconds_dense_relu", t_relu, 10.0, higher_is_better=False, unit="s"))

    run_jax = jax_run(data.X, data.y, idx, theta0, lr)
    if run_jax is None:
        report.notes.append("jax not importable: the JAX row is skipped")
    else:
        t_jax = best_time(run_jax)
        report.measurements["jax_seconds"] = t_jax
        report.measurements["jax_over_generated"] = t_jax / t_sym
    report.notes.append("compile times include sympy derivation, code generation and numba compilation of the "
                        "kernel in an empty code cache (the trainer loop is compiled once and cached besides)")
    return report
