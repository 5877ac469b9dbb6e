"""Deeper networks on digits: the shift augmentation, the recorded loss on the originals, a small run, the CLI."""

import numpy as np
import pytest
from dyntools.simulations import deep_nets as dn
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import assert_command_refuses


@settings(max_examples=30, deadline=None)
@given(dx=st.integers(-3, 3), dy=st.integers(-3, 3), seed=st.integers(0, 2**31))
def test_shift_images_matches_a_pixel_loop(dx, dy, seed):
    """Reference written from the definition, one pixel at a time: out[r, c] = in[r − dy, c − dx] or 0."""
    X = np.random.default_rng(seed).random((3, 64))
    out = dn.shift_images(X, dx, dy)
    ref = np.zeros((3, 8, 8))
    img = X.reshape(3, 8, 8)
    for r in range(8):
        for c in range(8):
            if 0 <= r - dy < 8 and 0 <= c - dx < 8:
                ref[:, r, c] = img[:, r - dy, c - dx]
    np.testing.assert_array_equal(out, ref.reshape(3, 64))


def test_augmented_copies_originals_first_and_every_shift_once():
    X = np.random.default_rng(0).random((5, 64))
    y = np.arange(5)
    Xa, ya = dn.augmented(X, y, 1)
    assert Xa.shape == (45, 64) and np.array_equal(ya, np.tile(y, 9))
    np.testing.assert_array_equal(Xa[:5], X)
    copies = {Xa[5 * k:5 * k + 5].tobytes() for k in range(9)}
    assert len(copies) == 9                                         # nine distinct shifts
    assert dn.augmented(X, y, 0)[0].shape == (5, 64)


def test_small_run_records_metrics_and_the_loss_on_the_originals():
    p = dn.EXPERIMENT.make(None, width=8, depth=4, steps=30, seeds=1, records=3, sparsity_examples=50,
                           batch=16)
    res = dn.simulate(p, seed=0)
    assert res.kind == "deep-nets" and res["sota_fsc_last"].shape == (1, 4, 3)
    for s in ("basic", "sota"):
        for key in ("train_acc", "test_acc", "fsc_middle", "fsc_last"):
            vals = res[f"{s}_{key}"]
            assert np.all((vals >= 0) & (vals <= 1))
    # the sota run trains on 9 shifted copies; its recorded train loss is the loss on the 1258 originals
    from dyntools import data

    d = data.digits(seed=0)
    model = dn.network(p, d.X)
    theta0 = model.init(0, 0)
    assert res["sota_train_loss"][0, 0, 0] == pytest.approx(model.evaluate(theta0, d.X, d.y)[0], rel=1e-12)
    assert len(res.summary["table"]) == 8 and set(res.summary["checks"]) == {"basic", "sota"}


@pytest.mark.parametrize("args,word", [
    (["--decay-at", "0.5,0.1"], "decay_at"),
    (["--settings", "basic,basic"], "setting"),
])
def test_cli_bad_input_one_line_exit_2_nothing_written(tmp_path, args, word):
    assert_command_refuses(tmp_path, "simulate", "deep-nets", *args, needle=word)


def test_bench_workload_is_the_experiments():
    from dyntools.bench import deep_nets as bench

    p = dn.EXPERIMENT.make(None)
    model, data, opts, scheds = bench.workload()
    assert tuple(model.widths) == tuple(dn.network(p, np.zeros((1258, 64))).widths)
    assert np.array_equal(model.init(0), dn.network(p, np.zeros((1258, 64))).init(0, 0))
    assert [o.lr for o in opts] == [eta for _, eta, _ in dn.schedules(p)]
    assert [repr(s) for s in scheds] == [repr(s) for _, _, s in dn.schedules(p)]
    assert (bench.BATCH, bench.STEPS, bench.TRAININGS) == (p.batch, p.steps, len(p.settings) * p.seeds)
