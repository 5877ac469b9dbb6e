"""``dyntools bench grokking-step``: the grokking MLP's full-batch step, its first layer sparse against dense.

The network of ``dyntools simulate grokking`` (:func:`dyntools.grokking_study.network`: ``2p → 128 → p``, ReLU,
no biases, softmax cross-entropy, float64) on its training set, the one-hot pairs ``(a, b)`` of a fraction 0.7
of the ``p² = 529`` pairs (``p = 23``; 370 examples, two nonzero inputs of 46 each). The model kernel's loss and
gradient of the whole set (one full-batch step without the optimizer) is timed for the dense kernel
(:func:`dyntools.models.mlp.loss_grad_cross_entropy`) and for ``MLP(…, sparse_inputs=True)``'s
(:func:`dyntools.models.mlp.loss_grad_cross_entropy_sparse_inputs`), interleaved, best of ``repeats`` blocks of
``calls`` calls each, in this process on one thread; the two results are checked equal to the bit first. The target
is the ratio dense / sparse.
"""

from __future__ import annotations

import time

import numpy as np

from dyntools.bench.report import Benchmark, BenchReport, Target

P, WIDTH, FRACTION = 23, 128, 0.7


def workload():
    """``(X, y, n)``: the one-hot pairs of the whole ``a + b mod p`` table (:mod:`dyntools.data.modular`) and the
    size of the training split (its first rows)."""
    from dyntools.data import modular

    a, b, y = modular.table(P, "+")
    return modular.encode(a, b, P, "one-hot"), y, int(round(FRACTION * P * P))


def run(quick: bool = False) -> BenchReport:
    from dyntools.models.mlp import MLP

    X, y, n = workload()
    idx, noise = np.arange(n), np.zeros(n)
    calls, repeats = (50, 3) if quick else (200, 7)
    timed, results = {}, {}
    for sparse in (False, True):
        model = MLP((2 * P, WIDTH, P), biases=False, head="cross-entropy", sparse_inputs=sparse)
        theta, grad, ws = model.init(0), np.zeros(model.n_params), np.zeros(model.workspace_size(n))
        iargs, fargs = model.kernel_args()
        loss = model.loss_grad(theta, X, y, idx, n, noise, grad, ws, iargs, fargs)        # compile / load
        results[sparse] = (loss, grad.copy())

        def call(kernel=model.loss_grad, theta=theta, grad=grad, ws=ws, iargs=iargs, fargs=fargs):
            for _ in range(calls):
                kernel(theta, X, y, idx, n, noise, grad, ws, iargs, fargs)

        timed[sparse] = call
    if results[False][0] != results[True][0] or not np.array_equal(results[False][1], results[True][1]):
        raise RuntimeError("grokking-step: the sparse and dense kernels disagree (they must give the same bits)")
    best = {False: np.inf, True: np.inf}
    for _ in range(repeats):
        for sparse, call in timed.items():
            start = time.perf_counter()
            call()
            best[sparse] = min(best[sparse], (time.perf_counter() - start) / calls)
    report = BenchReport("grokking-step")
    report.notes.append(f"MLP {2 * P}-{WIDTH}-{P} (no biases, float64) on {n} one-hot pairs, one full-batch loss and "
                        f"gradient per call; best of {repeats} blocks of {calls} calls, interleaved; same bits checked")
    report.measurements.update({"dense ms per step": 1e3 * best[False], "sparse inputs ms per step": 1e3 * best[True]})
    report.targets.append(Target("grokking-step: dense / sparse-inputs seconds per full-batch step",
                                 best[False] / best[True], 1.2))
    return report


BENCHMARK = Benchmark("grokking-step", run)
