import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dyntools.engine import rng, streams


@njit
def _draw(state, kind, count):
    out = np.empty((state.shape[0], count))
    for p in range(state.shape[0]):
        for k in range(count):
            if kind == 0:
                out[p, k] = rng.uniform01(state, p)
            elif kind == 1:
                out[p, k] = rng.randbelow(state, p, 7)
            else:
                out[p, k] = rng.normal(state, p)
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.sampled_from([0, 1, 2]))
def test_numba_stream_equals_numpy_twin(seed, paths, kind):
    s1 = streams.path_states(seed, paths)
    s2 = s1.copy()
    fast = _draw(s1, kind, 50)
    twin_fn = [rng.uniform01_np, lambda s: rng.randbelow_np(s, 7), rng.normal_np][kind]
    twin = np.stack([twin_fn(s2) for _ in range(50)], axis=1)
    if kind == 2:   # log/cos: NumPy's SIMD routines and libm may differ in the last bit
        np.testing.assert_allclose(fast, twin, rtol=1e-15, atol=1e-15)
    else:
        np.testing.assert_array_equal(fast, twin)
    np.testing.assert_array_equal(s1, s2)


def test_xoshiro_reference_vector():
    # Reference output of xoshiro256** for state (1, 2, 3, 4) (Vigna's C code); the fourth output is the first that
    # the rotation of s3 reaches. The kernel and its twin share the state transition (rng._transition).
    want = [11520, 0, 1509978240, 1215971899390074240]
    state = np.array([[1, 2, 3, 4]], dtype=np.uint64)
    assert [int(rng.next_u64_np(state)[0]) for _ in range(4)] == want
    state = np.array([[1, 2, 3, 4]], dtype=np.uint64)
    assert [int(rng.next_u64(state, 0)) for _ in range(4)] == want


def test_path_stream_does_not_depend_on_number_of_paths():
    a = streams.path_states(7, 3)
    b = streams.path_states(7, 10)
    np.testing.assert_array_equal(a, b[:3])
    assert not np.array_equal(streams.path_states(7, 3, 1), a)     # keyed streams differ
    assert not np.array_equal(streams.path_states(8, 3), a)


def test_draws_have_the_right_distribution():
    state = streams.path_states(0, 4)
    u = _draw(state, 0, 20_000)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    z = _draw(state, 2, 20_000)
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1.0) < 0.03
    k = _draw(state, 1, 20_000)
    assert set(np.unique(k)) == set(range(7))


def test_compiled_path_states_are_the_seed_sequence_states_bit_for_bit():
    """streams.path_states derives SeedSequence(seed, (*key, i)).generate_state(4, uint64) in a compiled
    loop: the same bits as one SeedSequence object per path (same streams as before the change)."""
    from dyntools.engine import seed_hash, streams

    for seed, key, n in [(0, (), 7), (12345, (0xADA3,), 64), (2**40 + 7, (3, 2**33, 1), 20), (9, (1, 2, 3, 4, 5), 9)]:
        want = streams.path_states_reference(seed, n, *key)
        np.testing.assert_array_equal(streams.path_states(seed, n, *key), want)
        root = streams.root_sequence(seed, *key)                 # each way on its own (path_states picks one)
        np.testing.assert_array_equal(seed_hash.states_by_hash(root.entropy, root.spawn_key, n), want)


_BELOW = __import__("dyntools.engine.seed_hash", fromlist=["OBJECTS_BELOW"]).OBJECTS_BELOW


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**128), st.lists(st.integers(0, 2**64), max_size=3),
       st.sampled_from([1, 2, 7, 33, _BELOW - 1, _BELOW, _BELOW + 1]))
def test_seed_sequence_objects_and_the_compiled_hash_give_the_same_states(entropy, key, n):
    """The two ways of dyntools.engine.streams.path_states (objects below the threshold unless the hash is loaded,
    the compiled hash above): the same uint64 states for any entropy, spawn key and path count around the threshold."""
    from dyntools.engine import seed_hash

    root = np.random.SeedSequence(entropy, spawn_key=tuple(key))
    by_objects = streams.path_states_reference(int(entropy), n, *key)
    by_hash = seed_hash.states_by_hash(root.entropy, root.spawn_key, n)
    assert by_objects.dtype == by_hash.dtype == np.uint64 and by_objects.shape == (n, 4)
    np.testing.assert_array_equal(by_objects, by_hash)
    if n <= 33:
        seed = int(entropy)
        np.testing.assert_array_equal(streams.path_states(seed, n, *key), streams.path_states_reference(seed, n, *key))


def test_few_paths_are_seeded_by_objects_until_the_compiled_hash_is_loaded(monkeypatch):
    """The choice of streams.path_states: SeedSequence objects while the paths so seeded in the process stay fewer
    than OBJECTS_BELOW in all and the hash is not compiled/loaded (its ~0.5 s compile is not paid for a few paths),
    the hash otherwise — per process, so many small runs do not pay the objects for ever."""
    from types import SimpleNamespace

    from dyntools.engine import seed_hash

    ways = []
    monkeypatch.setattr(streams, "path_states_reference", lambda *a: ways.append("objects"))
    monkeypatch.setattr(seed_hash, "states_by_hash", lambda *a: ways.append("hash"))
    monkeypatch.setattr(seed_hash, "_seed_sequence_states", SimpleNamespace(signatures=[]))
    for n in (1, _BELOW - 1, _BELOW, 10**6, 2**32 + 1):
        monkeypatch.setattr(seed_hash, "_seeded_by_objects", 0)          # a fresh process
        streams.path_states(5, n, 1)
    assert ways == ["objects", "objects", "hash", "hash", "objects"]     # (beyond 2³² paths: the reference)
    del ways[:]
    monkeypatch.setattr(seed_hash, "_seeded_by_objects", 0)
    for _ in range(5):                                                    # runs of a quarter of the budget each
        streams.path_states(5, _BELOW // 4, 1)
    assert ways == ["objects"] * 3 + ["hash"] * 2
    loaded = SimpleNamespace(signatures=["(array(uint64, 1d, C), int64)"])
    monkeypatch.setattr(seed_hash, "_seeded_by_objects", 0)
    monkeypatch.setattr(seed_hash, "_seed_sequence_states", loaded)
    streams.path_states(5, 1, 1)
    assert ways[-1] == "hash"
