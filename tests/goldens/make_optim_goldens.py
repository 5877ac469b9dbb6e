"""The optimizer steps of before issue 37, recorded: ``dyntools.optim.kernels.fused_step`` (the precond/hp-slot
ladder) on every built-in optimizer and option combination, so that the compiled step that replaces it
(dyntools.optim.compiled) stays held to its bits after the ladder is deleted (tests/test_optim_compiled.py).

The goldens were recorded at commit 651577f, the last kernels.py is at 1b8a65c (``git show
1b8a65c:dyntools/optim/kernels.py``); it was deleted by the next commit on w47f (issue 37), and with it the
``precond``/``hparams`` fields this script reads. To record them again, from a checkout of that commit::

    git worktree add /tmp/old 651577f && cd /tmp/old && PYTHONPATH=. python tests/goldens/make_optim_goldens.py

writes ``tests/goldens/optim_fused.npz`` (per case and mode: θ and the optimizer state after ``STEPS`` steps) and
``optim_fused.json`` (the machine it ran on). Modes: float64; float32 θ with a float32 state (as the float32
loops keep it); float32 θ with a float64 state.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent
N, STEPS = 11, 12
GROUPS = np.arange(N) % 3
MODES = {"f64": (np.float64, np.float64), "f32": (np.float32, np.float32), "f32s64": (np.float32, np.float64)}


def cases() -> dict:
    """name -> (factory name, keyword arguments, steps): every built-in optimizer and option combination."""
    out = {}
    for name, mom, damp, nest, wd in itertools.product(("sgd", "sgdw"), (0.0, 0.9), (0.0, 0.1), (False, True),
                                                       (0.0, 0.1)):
        if nest and (mom == 0 or damp != 0):
            continue
        out[f"{name}-m{mom}-d{damp}-n{int(nest)}-wd{wd}"] = (name, dict(lr=0.1, momentum=mom, dampening=damp,
                                                                        nesterov=nest, weight_decay=wd), STEPS)
    for name, ams, bc, wd in itertools.product(("adam", "adamw"), (False, True), (False, True), (0.0, 0.1)):
        out[f"{name}-ams{int(ams)}-bc{int(bc)}-wd{wd}"] = (name, dict(lr=0.01, weight_decay=wd, amsgrad=ams,
                                                                      bias_correction=bc), STEPS)
    out["adamw-bc1-rounds-to-1"] = ("adamw", dict(lr=0.01, betas=(0.5, 0.25), weight_decay=0.01), 70)
    for ams in (False, True):
        out[f"adamw_l1-ams{int(ams)}"] = ("adamw_l1", dict(lr=0.01, amsgrad=ams), STEPS)
        out[f"adamw_l1l2-ams{int(ams)}"] = ("adamw_l1l2", dict(lr=0.01, l1_ratio=0.25, amsgrad=ams), STEPS)
    for lrd, init, wd in itertools.product((0.0, 0.01), (0.0, 0.1), (0.0, 0.1)):
        out[f"adagrad-lrd{lrd}-init{init}-wd{wd}"] = ("adagrad", dict(lr=0.1, lr_decay=lrd,
                                                                      initial_accumulator_value=init,
                                                                      weight_decay=wd), STEPS)
    for mom, cen, wd in itertools.product((0.0, 0.9), (False, True), (0.0, 0.1)):
        out[f"rmsprop-m{mom}-c{int(cen)}-wd{wd}"] = ("rmsprop", dict(lr=0.01, alpha=0.9, momentum=mom, centered=cen,
                                                                     weight_decay=wd), STEPS)
    for wd, dec in itertools.product((0.0, 0.1), (False, True)):
        out[f"rmsprop_bc-wd{wd}-dec{int(dec)}"] = ("rmsprop_bc", dict(lr=0.01, beta2=0.9, weight_decay=wd,
                                                                      decoupled=dec), STEPS)
    weights = np.linspace(0.0, 1.0, N).tolist()
    for kind in ("l2", "l1", "l1l2"):
        out[f"grouped-{kind}"] = ("adamw_decay", dict(kind=kind, lr=0.01, weight_decay=0.1, weights=weights,
                                                      groups=GROUPS.tolist()), STEPS)
    out["grouped-min"] = ("adamw_decay", dict(kind="min", lr=0.01, weight_decay=0.5, groups=GROUPS.tolist()), STEPS)
    return out


def build(factory: str, kwargs: dict):
    from dyntools.optim import decay_groups, optimizers

    if factory == "adamw_decay":
        kw = dict(kwargs)
        kw["weights"] = None if "weights" not in kw else np.array(kw["weights"])
        kw["groups"] = np.array(kw["groups"])
        return decay_groups.adamw_decay(**kw)
    return optimizers.make(factory, **kwargs)


def inputs(case: str, mode: str, steps: int):
    """θ₀ and the gradients of a case (one seed per case name and mode)."""
    theta_dtype, _ = MODES[mode]
    rng = np.random.default_rng(sum(map(ord, case + mode)))
    return (rng.standard_normal(N).astype(theta_dtype),
            rng.standard_normal((steps, N)).astype(theta_dtype), 0.5 + rng.random(steps))


def main() -> None:
    from dyntools.engine.target import compile_target
    from dyntools.optim import kernels

    arrays = {}
    for case, (factory, kwargs, steps) in cases().items():
        opt = build(factory, kwargs)
        for mode, (_, state_dtype) in MODES.items():
            theta, grads, mults = inputs(case, mode, steps)
            state = kernels.init_state(opt, N).astype(state_dtype)
            for t in range(1, steps + 1):
                kernels.fused_step(opt.precond, opt.hparams, theta, grads[t - 1], state, t, opt.lr * mults[t - 1])
            arrays[f"{case}/{mode}/theta"] = theta
            arrays[f"{case}/{mode}/state"] = state
    np.savez_compressed(OUT / "optim_fused.npz", **arrays)
    meta = {"target": {k: str(v) for k, v in compile_target().items()}, "cases": len(cases())}
    (OUT / "optim_fused.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
