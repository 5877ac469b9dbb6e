"""``dyntools bench optimizer-chain``: the optimizer step of a user's chain against the built-in one, one process.

Issue 37 asks that your own optimizer run at full speed: a user-written Lion chain (its transform defined here,
outside dyntools.optim, with an element update fused into the chain's loop,
:class:`~dyntools.optim.transforms.ElementUpdate`)
steps within 1.2× of the built-in AdamW, per step, on the parameter vectors of the heatmap MLP cell (2 → 32 × 32
× 32 → 2 ReLU MLP, 2274 parameters) and of the diagonal net (d = 200: 400 parameters). Both run through
:func:`dyntools.optim.compiled.compile_runs`'s step in one compiled driver loop (fixed gradient, ``t`` counting),
so the time is the optimizer's alone; the baseline is the built-in AdamW's compiled step, timed in the same run.

``quick`` runs 10× fewer steps (a smoke test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target
from dyntools.optim import transforms as T

#: Parameter counts: the heatmap MLP cell (2-32-32-32-2 with biases) and the diagonal net (u, v of d = 200).
SIZES = {"heatmap MLP cell": 2 * 32 + 32 + 2 * (32 * 32 + 32) + 32 * 2 + 2, "diagonal net": 400}


_NEW = """
@njit
def new(run, theta, grad, state, hps, steps):
    for t in range(1, steps + 1):
        step(run, theta, grad, state, t, 1e-3, hps)
"""


def _driver(step):
    """A driver loop of ``steps`` steps of the compiled step, named as a global (as a generated training loop names
    it, so numba inlines it)."""
    from numba import njit

    namespace = {"njit": njit, "step": step}
    exec(_NEW, namespace)
    return namespace["new"]


@dataclass(frozen=True)
class scale_by_lion(T.Transform):
    """A user's Lion (Chen et al. 2023), written outside dyntools.optim as a user writes it:
    ``u = sign(β₁ m + (1 − β₁) g)``, ``m ← β₂ m + (1 − β₂) g``; its element update is checked against ``update``
    before it runs, as any user's is."""

    b1: float = 0.9
    b2: float = 0.99

    def init(self, params):
        return (np.zeros_like(params),)

    def update(self, u, state, params, t, lr_t):
        (m,) = state
        return np.sign(self.b1 * m + (1 - self.b1) * u), (self.b2 * m + (1 - self.b2) * u,)

    def element_update(self):
        return T.ElementUpdate((), (self.b1, self.b2), 1, "b1$j, b2$j = $h0, $h1",
                               "m$j = state[$s0$i]\nstate[$s0$i] = b2$j * m$j + (1 - b2$j) * u\n"
                               "u = np.sign(b1$j * m$j + (1 - b1$j) * u)")


def run(quick: bool = False) -> BenchReport:
    import time

    from dyntools.optim import optimizers as O
    from dyntools.optim.compiled import compile_runs

    steps = 2_000 if quick else 20_000
    lion = O.Optimizer("lion", 1e-3, T.chain(scale_by_lion(), T.add_decay(0.1)))
    opts = {"adamw": O.adamw(1e-3, weight_decay=0.1), "lion": lion}
    cr = compile_runs(list(opts.values()))
    new = _driver(cr.step)
    report = BenchReport("optimizer-chain")
    rng = np.random.default_rng(0)
    for where, p in SIZES.items():
        grad = rng.standard_normal(p) * 1e-2
        calls = {name: (lambda g=g, p=p, grad=grad: new(g, np.ones(p), grad, cr.initial_state(g, p), cr.hps, steps))
                 for g, name in enumerate(opts)}
        best = {k: float("inf") for k in calls}
        for k in calls:                                        # compile and warm up
            calls[k]()
        for _ in range(5 if not quick else 2):                 # alternated, best of each
            for k, fn in calls.items():
                start = time.perf_counter()
                fn()
                best[k] = min(best[k], time.perf_counter() - start)
        for k, sec in best.items():
            report.measurements[f"{where}: {k} µs/step"] = sec / steps * 1e6
        report.targets.append(Target(f"{where}: user Lion / built-in AdamW per step", best["lion"] / best["adamw"],
                                     1.2, higher_is_better=False))
    report.notes.append(f"{SIZES['diagonal net']} and {SIZES['heatmap MLP cell']} parameters, {steps} steps per "
                        "timing, best of alternated runs; the baseline is the built-in AdamW's compiled step")
    return report


BENCHMARK = Benchmark("optimizer-chain", run)
