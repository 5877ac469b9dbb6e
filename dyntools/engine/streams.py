"""Explicit, worker-independent randomness.

One ``numpy.random.SeedSequence`` built from the user's seed is spawned into one child per
path (or per grid cell). A path's stream depends only on (seed, path index), never on how many
workers or chunks computed it, so the same seed gives bitwise-identical arrays.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation


def root_sequence(seed: int, *key: int) -> np.random.SeedSequence:
    """The SeedSequence of ``seed``, optionally namespaced by integer ``key`` words
    (e.g. an experiment id and a cell index), so that distinct uses never share streams."""
    seed = validation.seed(seed)
    return np.random.SeedSequence(entropy=seed, spawn_key=tuple(int(k) for k in key))


def path_sequences(seed: int, n_paths: int, *key: int) -> list[np.random.SeedSequence]:
    """One child SeedSequence per path: child ``i`` is the same whatever ``n_paths`` is."""
    n_paths = validation.count("paths", n_paths)
    root = root_sequence(seed, *key)
    return [np.random.SeedSequence(entropy=root.entropy, spawn_key=root.spawn_key + (i,))
            for i in range(n_paths)]


def path_generators(seed: int, n_paths: int, *key: int) -> list[np.random.Generator]:
    """One ``numpy.random.Generator`` (PCG64) per path, for NumPy-side sampling."""
    return [np.random.Generator(np.random.PCG64(s)) for s in path_sequences(seed, n_paths, *key)]


def path_states(seed: int, n_paths: int, *key: int) -> np.ndarray:
    """Initial xoshiro256** states (``uint64[n_paths, 4]``) for the compiled kernels,
    one per path, each drawn from that path's SeedSequence (see :mod:`dyntools.engine.rng`)."""
    states = np.empty((validation.count("paths", n_paths), 4), dtype=np.uint64)
    for i, seq in enumerate(path_sequences(seed, n_paths, *key)):
        state = seq.generate_state(4, dtype=np.uint64)
        if not state.any():  # the all-zero state is the one fixed point of xoshiro
            state[0] = np.uint64(0x9E3779B97F4A7C15)
        states[i] = state
    return states
