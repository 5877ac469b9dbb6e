"""dyntools.dynamics.rates: a run's learning rates taken a window at a time are bitwise the whole array's
columns, and a run's result does not depend on the window (nor on keeping every step's rate)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.data import sparse_regression
from dyntools.dynamics import train as train_module
from dyntools.dynamics.diag_net_sgd import train_diag_net
from dyntools.dynamics.rates import LearningRates
from dyntools.models.diag_net import DiagNet
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import (
    Constant,
    CosineAnnealingLR,
    DecayAfterStep,
    LinearWarmup,
    PiecewiseDecay,
    PowerWarmup,
)

SCHEDULES = [Constant(), PiecewiseDecay((0.1, 0.3, 0.5), (4.8, 3.4, 1.5)), DecayAfterStep((0.1, 0.5), (4.8, 1.5)),
             LinearWarmup(7, PiecewiseDecay((0.2,), (3.0,))),
             PowerWarmup(10.0, 0.3, 0.5, DecayAfterStep((0.3,), (2.0,))),
             CosineAnnealingLR(T_max=13)]          # the last one: the default window (a slice of the whole array)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(0, len(SCHEDULES) - 1), steps=st.integers(1, 400), a=st.integers(0, 400), b=st.integers(0, 400))
def test_a_window_is_bitwise_the_slice_of_the_whole_schedule(k, steps, a, b):
    sched = SCHEDULES[k]
    t0 = min(a, steps - 1)
    t1 = min(max(b, t0 + 1), steps)          # a non-empty window inside the run
    whole = sched.multipliers(steps)
    got = sched.window(steps, t0, t1)
    if whole.size == 1:
        assert got.size == 1 and got.tobytes() == whole.tobytes()
    else:
        assert got.tobytes() == whole[t0:t1].tobytes()


def test_the_windows_give_the_rates_of_the_whole_run_and_at_the_recorded_steps():
    steps = 1000
    opts = [O.sgd(0.3), O.sgd(0.1), O.sgd(0.2)]
    scheds = SCHEDULES[1:4]
    record_steps = np.array([0, 1, 5, 99, 100, 101, 500, 999, 1000])
    rates = LearningRates(opts, scheds, steps, (), record_steps, keep=True)
    cuts = [0, 3, 64, 65, 512, 999, 1000]
    for t0, t1 in zip(cuts[:-1], cuts[1:]):
        assert rates.window(t0, t1).shape == (3, t1 - t0)
    old = np.stack([o.lr * np.broadcast_to(s.multipliers(steps), (steps,)) for o, s in zip(opts, scheds)])
    assert rates.whole().tobytes() == old.tobytes()
    assert rates.at().tobytes() == old[:, np.minimum(record_steps, steps - 1)].tobytes()
    const = LearningRates(opts, [Constant()] * 3, steps, (), record_steps)
    assert const.window(0, 1000).shape == (3, 1) and np.all(const.at() == np.array([[0.3], [0.1], [0.2]]))


def test_a_run_does_not_depend_on_the_window_nor_on_keeping_every_rate(monkeypatch):
    data = [sparse_regression(12, 20, 3, n_test=30, seed=0, stream_key=(i,)) for i in range(2)]
    runs = [("const", 0.05, Constant()), ("decay", 0.08, PiecewiseDecay((0.3, 0.6), (2.0, 3.0))),
            ("warm", 0.08, LinearWarmup(40, DecayAfterStep((0.5,), (2.0,))))]
    ref = train_diag_net(data, runs, steps=700, records=30, chunks=3, seed=4)
    monkeypatch.setattr(train_module, "WINDOW", 37)             # 19 windows of at most 37 steps
    small = train_diag_net(data, runs, steps=700, records=30, chunks=3, seed=4)
    for name in ("u", "v", "train_loss", "test_loss", "eta_rec", "diverged_at", "l1"):
        assert ref[name].tobytes() == small[name].tobytes(), name
    model, opts, scheds = DiagNet(20), [O.sgd(eta) for _, eta, _ in runs], [s for _, _, s in runs]
    kw = dict(schedule=scheds, steps=700, records=30, chunks=3, seed=4)
    kept = train_module.train(model, data, opts, keep_lrs=True, **kw)
    monkeypatch.setattr(train_module, "WINDOW", 2**16)
    streamed = train_module.train(model, data, opts, keep_lrs=False, **kw)
    assert kept["lrs"].shape == (3, 700) and "lrs" not in streamed.arrays
    assert kept["theta"].tobytes() == streamed["theta"].tobytes()
    assert streamed["lr_rec"].tobytes() == kept["lrs"][:, np.minimum(streamed["steps"], 699)].tobytes()
