"""The run engine: samplers, recorder, guard, stream table, statuses and the generic trainer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dyntools import data
from dyntools.dynamics.train import train
from dyntools.engine import guard, record, result, samplers, streams
from dyntools.models.diag_net import DiagNet
from dyntools.optim import optimizers as O
from dyntools.optim.schedules import Constant, PiecewiseDecay

ROOT = Path(__file__).resolve().parents[1]
#: Modules still being ported onto the engine in this refactor (emptied as each port lands).
PENDING: set[str] = set()


# ----------------------------------------------------------------------------------- samplers

@njit(cache=True)
def _draw(code, n, b, steps, st, drop_last):
    """``steps`` batches of the sampler ``code`` as the loops draw them: the library's compiled
    :func:`~dyntools.engine.samplers.draw_batch` step after step (no label noise, no replay)."""
    perm = np.arange(n)
    pos = n
    out = np.empty((steps, b), dtype=np.int64)
    noise = np.zeros(b)
    replay = np.zeros((1, 1), dtype=np.int64)
    for t in range(steps):
        pos = samplers.draw_batch(code, out[t], noise, 0.0, b, n, replay, 0, t, perm, pos, st, drop_last)
    return out


def _draw_np(code, n, b, steps, st, drop_last):
    perm = np.arange(n)
    pos = n
    out = np.empty((steps, b), dtype=np.int64)
    for t in range(steps):
        for q in range(b):
            if code == samplers.WITH_REPLACEMENT:
                out[t, q] = samplers.with_replacement_np(st, n)
            elif code == samplers.EPOCH:
                out[t, q], pos = samplers.epoch_next_np(perm, pos, st)
            else:
                out[t, q] = samplers.distinct_next_np(perm, q, st)
        if code == samplers.EPOCH:
            pos = samplers.epoch_end_of_batch_np(pos, n, b, drop_last)
    return out


@settings(max_examples=25, deadline=None)
@given(code=st.sampled_from([samplers.WITH_REPLACEMENT, samplers.EPOCH, samplers.DISTINCT]),
       n=st.integers(1, 17), b=st.integers(1, 5), steps=st.integers(1, 30), seed=st.integers(0, 2**32 - 1),
       drop_last=st.booleans())
def test_compiled_samplers_equal_their_twins(code, n, b, steps, seed, drop_last):
    b = min(b, n)
    a_state = streams.path_states(seed, 1, streams.KEYS["bench"])
    b_state = a_state.copy()
    fast = _draw(code, n, b, steps, a_state, drop_last)
    slow = _draw_np(code, n, b, steps, b_state, drop_last)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(a_state, b_state)          # the streams advanced alike
    assert fast.min() >= 0 and fast.max() < n
    if code == samplers.DISTINCT:                           # distinct within every batch
        assert all(len(set(row)) == b for row in fast)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), b=st.integers(1, 12), epochs=st.integers(1, 4), seed=st.integers(0, 1000))
def test_epoch_sampler_sees_every_example_once_per_epoch(n, b, epochs, seed):
    b = min(b, n)
    per_epoch = n // b
    out = _draw(samplers.EPOCH, n, b, per_epoch * epochs, streams.path_states(seed, 1, 7), True)
    for e in range(epochs):             # drop_last: each epoch's batches are distinct examples
        chunk = out[e * per_epoch:(e + 1) * per_epoch].ravel()
        assert len(set(chunk.tolist())) == chunk.size
    stream = samplers.epoch_batches(streams.path_states(seed, 1, 7), n, epochs * n, 1).ravel()
    for e in range(epochs):             # without drop_last (batch 1): permutations back to back
        assert sorted(stream[e * n:(e + 1) * n].tolist()) == list(range(n))


def test_replay_indices_are_checked():
    good = samplers.check_replay(np.arange(6) % 3, steps=3, batch=2, paths=4, n=3)
    assert good.shape == (1, 6) and good.dtype == np.int64
    with pytest.raises(ValueError, match="Invalid indices: expected shape"):
        samplers.check_replay(np.zeros(5, dtype=int), steps=3, batch=2, paths=4, n=3)
    with pytest.raises(ValueError, match=r"Invalid indices: must lie in \[0, 2\]"):
        samplers.check_replay(np.full(6, 3), steps=3, batch=2, paths=4, n=3)
    with pytest.raises(ValueError, match="must be integers"):
        samplers.check_replay(np.zeros(6), steps=3, batch=2, paths=4, n=3)
    with pytest.raises(ValueError, match="Invalid sampler"):
        samplers.code("bootstrap")


# ----------------------------------------------------------------------------------- recorder, guard

def test_record_due_walks_the_grid():
    grid = np.array([0, 1, 5, 9])
    k, hits = 0, []
    for t in range(10):
        if record.due_np(grid, k, t):
            hits.append(t)
            k += 1
    assert hits == [0, 1, 5, 9] and record.start_index(grid, 2) == 2


def test_guard_is_one_rule():
    assert guard.beyond_np(np.nan, 1.0) and guard.beyond_np(np.inf, 1.0) and guard.beyond_np(2.0, 1.0)
    assert not guard.beyond_np(1.0, 1.0)
    assert guard.default_bound(0.0) == guard.FACTOR and guard.default_bound(3.0) == 3.0 * guard.FACTOR
    with pytest.raises(ValueError, match="non-finite"):
        guard.default_bound(np.nan)
    assert guard.summary(np.array([-1, 7, 3])) == {"diverged": 2, "first": 3}


# ----------------------------------------------------------------------------------- streams

def test_every_purpose_has_its_own_key():
    values = list(streams.KEYS.values())
    assert len(values) == len(set(values))
    with pytest.raises(ValueError, match="Invalid stream purpose"):
        streams.key("nope")


def test_no_two_declared_purposes_share_a_key_word_over_the_library_and_every_plugin():
    """The library's table and each plugin's ``STREAMS`` (an experiment's own purposes) form one table; the same
    key numbers as before, so results of a seed stay bitwise identical."""
    from dyntools import plugins

    found = plugins.stream_keys()
    assert len(set(found.values())) == len(found)
    assert set(streams.KEYS) <= set(found)
    assert found["universal.samples"] == 0x0A78 and "universal.samples" not in streams.KEYS   # experiment-owned
    assert found["sweep.adamw-grid"] == 0xADA3 and found["sweep.demo"] == 0xD3       # read by library cells
    with pytest.raises(ValueError, match="share the key word 0xd3"):
        streams.combine([("lib", {"a": 0xD3}), ("mine", {"b": 0xD3})])
    with pytest.raises(ValueError, match="declared twice"):
        streams.combine([("lib", {"a": 1}), ("mine", {"a": 2})])
    with pytest.raises(ValueError, match="non-negative int"):
        streams.combine([("mine", {"a": "0xD3"})])
    assert streams.combine([("lib", {"a": 1}), ("mine", {"b": 2})]) == {"a": 1, "b": 2}


def test_no_stream_key_literal_outside_the_engine():
    """Seeds are namespaced only through streams.KEYS and the plugins' STREAMS: no module writes a hex key of its
    own elsewhere."""
    offenders = []
    pattern = re.compile(r"(path_states|path_generators|path_sequences|root_sequence)\([^)]*0x[0-9A-Fa-f]+")
    literal = re.compile(r"_KEY\s*=\s*0x[0-9A-Fa-f]+")
    for path in list((ROOT / "dyntools").rglob("*.py")) + list((ROOT / "simulations").rglob("*.py")):
        if path.name == "streams.py":
            continue
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        if (pattern.search(text) or literal.search(text)) and name not in PENDING:
            offenders.append(name)
    assert not offenders, offenders


def test_no_divergence_check_or_recorder_outside_the_engine():
    """The divergence test and the "is this step recorded" test are written once (engine/guard.py,
    engine/record.py); kernels call them."""
    offenders = []
    check = re.compile(r"if not [\w\[\], .()]+ <= bound|record_steps\[k\] == t")
    for path in (ROOT / "dyntools").rglob("*.py"):
        if path.parent.name == "engine":
            continue
        name = str(path.relative_to(ROOT))
        if check.search(path.read_text(encoding="utf-8")) and name not in PENDING:
            offenders.append(name)
    assert not offenders, offenders


# ----------------------------------------------------------------------------------- statuses

def test_status_vocabulary_and_messages():
    assert result.STATUSES == ("converged", "stabilized", "diverged", "completed", "failed")
    assert result.check_status("completed") == "completed"
    for old in ("ok", "verified", "shrinking", "fine"):       # the words before the vocabulary was fixed: refused
        with pytest.raises(ValueError, match="Invalid status"):
            result.check_status(old)
    assert not hasattr(result, "LEGACY_STATUSES")
    assert result.message("diverged", diverged=2, paths=5, first=7) == "2 of 5 paths diverged (first at step 7)"
    with pytest.raises(ValueError, match="Invalid status"):
        result.RunResult("x", {}, {}, "great", "")


# ----------------------------------------------------------------------------------- the trainer

def _sets(k=2, n=24, d=10):
    return [data.sparse_regression(n, d, 3, n_test=20, seed=1, stream_key=(i,)) for i in range(k)]


@pytest.mark.parametrize("sampler,batch,noise", [("with-replacement", 3, 0.0), ("epoch", 5, 0.1),
                                                 ("distinct", 4, 0.0), ("full", 1, 0.0),
                                                 ("with-replacement", 1, 0.05)])
def test_generic_loop_equals_its_numpy_twin(sampler, batch, noise):
    """The four optimizers as one run set (one step module and one loop per sampler to compile, not four), each run
    against the NumPy twin's."""
    opt = [O.sgd(0.05, momentum=0.9, weight_decay=1e-3), O.adamw(1e-2, weight_decay=0.1), O.rmsprop(1e-3),
           O.adagrad(0.05)]
    kw = dict(steps=60, schedule=PiecewiseDecay((0.5,), (2.0,)), batch=batch, sampler=sampler, label_noise=noise,
              records=12, seed=4)
    fast = train(DiagNet(10), _sets(), opt, **kw)
    twin = train(DiagNet(10), _sets(), opt, kernel="numpy", **kw)
    np.testing.assert_array_equal(fast["diverged_at"], twin["diverged_at"])
    np.testing.assert_allclose(fast["theta"], twin["theta"], rtol=1e-10, atol=1e-13, equal_nan=True)
    np.testing.assert_allclose(fast["train_loss"], twin["train_loss"], rtol=1e-10, equal_nan=True)


def test_fast_path_is_selected_and_equals_the_generic_loop():
    sets = _sets(3)
    opts = [O.sgd(0.05), O.sgd(0.08)]
    kw = dict(steps=400, schedule=[Constant(), PiecewiseDecay((0.5,), (3.0,))], records=20, seed=2)
    fast = train(DiagNet(10), sets, opts, **kw)
    generic = train(DiagNet(10), sets, opts, fast=False, **kw)
    assert fast.config["path"] == "tuned" and generic.config["path"] == "generic"
    np.testing.assert_array_equal(fast["diverged_at"], generic["diverged_at"])
    np.testing.assert_allclose(fast["theta"], generic["theta"], rtol=1e-11, atol=1e-14)
    # a setting outside the fast path's (momentum) falls back to the generic loop
    assert train(DiagNet(10), sets, O.sgd(0.05, momentum=0.5), steps=5).config["path"] == "generic"


def test_result_does_not_depend_on_workers_chunks_or_ensemble_size():
    sets = _sets(3)
    kw = dict(steps=200, records=15, seed=9, sampler="epoch", batch=4, label_noise=0.02)
    a = train(DiagNet(10), sets, O.adam(1e-2), workers=1, **kw)
    b = train(DiagNet(10), sets, O.adam(1e-2), workers=2, chunks=3, **kw)
    c = train(DiagNet(10), sets[:2], O.adam(1e-2), **kw)
    np.testing.assert_array_equal(a["theta"], b["theta"])
    np.testing.assert_array_equal(a["theta"][:, :2], c["theta"])


def test_divergence_is_reported_with_its_step_and_later_recordings_are_nan():
    res = train(DiagNet(10), _sets(1), O.sgd(50.0), steps=100, sampler="full", records=101, grid="linear", bound=1e3)
    step = int(res["diverged_at"][0, 0])
    assert res.status == "diverged" and 0 < step <= 100 and f"first at step {step}" in res.message
    assert np.isnan(res["theta"][0, 0, step:]).all() and np.isfinite(res["theta"][0, 0, :step]).all()


def test_gd_is_the_full_sampler_and_replay_reproduces_a_run():
    sets = _sets(1)
    gd = train(DiagNet(10), sets, O.sgd(0.05), steps=50, sampler="full", records=10)
    idx = np.tile(np.arange(24), 50)
    replay = train(DiagNet(10), sets, O.sgd(0.05), steps=50, batch=24, sampler="replay", indices=idx, records=10)
    np.testing.assert_allclose(gd["theta"], replay["theta"], rtol=1e-13)


def test_two_models_two_optimizers_through_one_trainer():
    """The README's promise: the same call trains a diagonal net with SGD and with Adam."""
    sets = _sets(1)
    sgd = train(DiagNet(10), sets, O.sgd(0.1), steps=3000, batch=4, records=10)
    adam = train(DiagNet(10, init="gaussian"), sets, O.adam(1e-2), steps=3000, batch=4, records=10)
    for res in (sgd, adam):
        assert res.status in ("completed", "converged")
        assert res["train_loss"][0, 0, -1] < 0.1 * res["train_loss"][0, 0, 0]


def test_bad_arguments_name_the_parameter():
    sets = _sets(1)
    with pytest.raises(ValueError, match="Invalid sampler"):
        train(DiagNet(10), sets, O.sgd(0.1), steps=5, sampler="bootstrap")
    with pytest.raises(ValueError, match="Invalid batch"):
        train(DiagNet(10), sets, O.sgd(0.1), steps=5, batch=99)
    with pytest.raises(ValueError, match="Invalid indices"):
        train(DiagNet(10), sets, O.sgd(0.1), steps=5, sampler="replay")
    with pytest.raises(TypeError, match="Invalid optimizer"):
        train(DiagNet(10), sets, "sgd", steps=5)
    with pytest.raises(ValueError, match="Invalid theta0"):
        train(DiagNet(10), sets, O.sgd(0.1), steps=5, theta0=np.zeros(3))
    with pytest.raises(ValueError, match="Invalid schedule"):
        train(DiagNet(10), sets, [O.sgd(0.1)] * 2, schedule=[Constant()] * 3, steps=5)


def test_toy_fast_path_equals_the_generic_loop():
    """The toy's lock-step ensemble (θ + η θ x (y − xθ²)) and the generic loop (θ − η g with
    g = −θ x (y − xθ²)) differ only in the association of one product."""
    from dyntools.models.quadratic_toy import QuadraticToy, ToyModel, toy_data

    toy = QuadraticToy.uniform(theta_star=1.0, x_min=1.0, x_max=1.05, n=200, seed=1)
    kw = dict(steps=3000, seeds=4, records=40, seed=5)
    fast = train(ToyModel(toy), toy_data(toy), O.sgd(1.08), **kw)
    generic = train(ToyModel(toy), toy_data(toy), O.sgd(1.08), fast=False, **kw)
    assert fast.config["path"] == "tuned" and generic.config["path"] == "generic"
    assert set(fast.arrays) == set(generic.arrays) >= {"in_band", "bounces", "entry"}
    np.testing.assert_allclose(fast["theta"], generic["theta"], rtol=1e-12)
    # the counters are the model's step hooks: the generic loop counts them as the lock-step loop does
    assert fast["bounces"].min() > 2000 and fast["in_band"].min() > 1000
    for key in ("in_band", "bounces", "entry"):
        np.testing.assert_array_equal(fast[key], generic[key], err_msg=key)
    twin = train(ToyModel(toy), toy_data(toy), O.sgd(1.08), kernel="numpy", fast=False, **kw)
    np.testing.assert_allclose(twin["theta"], generic["theta"], rtol=1e-13)
    for key in ("in_band", "bounces", "entry"):
        np.testing.assert_array_equal(twin[key], generic[key], err_msg=key)
    # outside the lock-step loop's setting (momentum: the generic loop) the counters are still there
    heavy = train(ToyModel(toy), toy_data(toy), O.sgd(1.08, momentum=0.1), **kw)
    assert heavy.config["path"] == "generic" and heavy["bounces"].shape == (1, 4)
