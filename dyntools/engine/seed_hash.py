"""NumPy's ``SeedSequence`` hash, compiled: the per-path xoshiro states of
:func:`dyntools.engine.streams.path_states` without a Python object per path.

``SeedSequence(entropy, spawn_key=(*key, i)).generate_state(4, uint64)`` (Melissa O'Neill's seed_seq
scheme as NumPy implements it): the entropy and spawn-key integers become little-endian 32-bit words
(the entropy padded to the pool size 4 because a spawn key follows); a pool of 4 words is filled by
``hashmix`` and mixed pairwise (``mix``), the remaining words mixed into every pool word; the output
words cycle through the pool, each hashed with its own running constant; two 32-bit words make one
uint64 (low word first). All arithmetic is modulo 2³² (uint64 registers masked).

**Two ways, the same integers.** Measured (AMD EPYC Zen 5, load ~1): the hash compiles in ~0.5 processor-s in a
process that compiles other kernels too (2.2 s alone), loads from numba's cache in 6 ms (14 ms wall), then takes
0.022 µs per path; one SeedSequence object per path takes 8–13 µs. :func:`~dyntools.engine.streams.path_states`
therefore builds the states from SeedSequence objects (its reference; :func:`takes_objects` decides) while the paths
so seeded in this process stay fewer than :data:`OBJECTS_BELOW` = 4096 in all — at most ~50 ms per process, a tenth
of the compile, so a first ``dt.train`` of a few paths never waits on this module's compiler — and with the compiled
hash once that budget is spent or the hash is loaded (:func:`states_by_hash`: 10⁶ paths in ~0.03 s instead of ~10
s). The budget is per process, not per call: a process that seeds many small runs pays the objects once (≤ ~40 ms
more than loading the hash from a filled cache), then the hash. Both give the same bits
(``tests/test_rng_seeding.py``, across the threshold).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: the paths a process seeds by SeedSequence objects, in all, before it takes the compiled hash (unless the hash is
#: loaded sooner; chosen by measurement: see the module's docstring and docs/performance.md)
OBJECTS_BELOW = 4096
#: the paths this process has seeded by SeedSequence objects
_seeded_by_objects = 0
#: the word that replaces the all-zero state (the one fixed point of xoshiro256**)
NONZERO = 0x9E3779B97F4A7C15


def takes_objects(n_paths: int) -> bool:
    """Whether ``n_paths`` paths are seeded from SeedSequence objects
    (:func:`dyntools.engine.streams.path_states_reference`) rather than by the compiled hash (:func:`states_by_hash`):
    while this process has seeded fewer than :data:`OBJECTS_BELOW` paths so in all (these included, and then
    counted) and the hash is not loaded (the same bits either way)."""
    global _seeded_by_objects
    if _seeded_by_objects + n_paths < OBJECTS_BELOW and not _seed_sequence_states.signatures:
        _seeded_by_objects += n_paths
        return True
    return False


def states_by_hash(entropy: int, spawn_key: tuple, n_paths: int) -> np.ndarray:
    """:func:`path_states` by the compiled hash (:func:`_seed_sequence_states`; compiled or loaded at first use)."""
    words = _uint32_words(entropy)
    words += [0] * max(0, _POOL - len(words))        # every path has a spawn key: the entropy padded to the pool
    spawn = [w for k in spawn_key for w in _uint32_words(k)]
    return _seed_sequence_states(np.array(words + spawn, dtype=np.uint64), n_paths)


_POOL = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _MASK = 0xCA01F9DD, 0x4973F715, 0xFFFFFFFF


def _uint32_words(value: int) -> list[int]:
    """A non-negative integer as little-endian 32-bit words (0 → [0]), as SeedSequence coerces it."""
    value = int(value)
    words = []
    while True:
        words.append(value & _MASK)
        value >>= 32
        if value == 0:
            return words


@njit(cache=True)
def _seed_sequence_states(prefix, n_paths):
    """``SeedSequence`` (O'Neill's seed_seq hash as NumPy implements it): the pool of 4 words mixed from
    the entropy words ``prefix`` followed by the path index ``i``, then 8 output words → 4 uint64."""
    n_words = prefix.shape[0] + 1
    out = np.empty((n_paths, 4), dtype=np.uint64)
    entropy = np.empty(n_words, dtype=np.uint64)
    entropy[:n_words - 1] = prefix
    pool = np.empty(_POOL, dtype=np.uint64)
    for i in range(n_paths):
        entropy[n_words - 1] = i
        hash_a = np.uint64(_INIT_A)
        for k in range(_POOL):
            v = entropy[k] if k < n_words else np.uint64(0)
            v, hash_a = _hashmix(v, hash_a)
            pool[k] = v
        for src in range(_POOL):
            for dst in range(_POOL):
                if src != dst:
                    h, hash_a = _hashmix(pool[src], hash_a)
                    pool[dst] = _mix(pool[dst], h)
        for src in range(_POOL, n_words):
            for dst in range(_POOL):
                h, hash_a = _hashmix(entropy[src], hash_a)
                pool[dst] = _mix(pool[dst], h)
        hash_b = np.uint64(_INIT_B)
        any_set = False
        for w in range(4):
            lo, hash_b = _output_word(pool[(2 * w) % _POOL], hash_b)
            hi, hash_b = _output_word(pool[(2 * w + 1) % _POOL], hash_b)
            out[i, w] = lo | (hi << np.uint64(32))
            any_set = any_set or out[i, w] != 0
        if not any_set:
            out[i, 0] = np.uint64(NONZERO)
    return out


@njit(inline="always")
def _hash(value, hash_const, mult):
    """``value`` hashed with the running constant, which advances by ``mult`` (mod 2³²)."""
    mask = np.uint64(_MASK)
    value = (value ^ hash_const) & mask
    hash_const = (hash_const * np.uint64(mult)) & mask
    value = (value * hash_const) & mask
    return value ^ (value >> np.uint64(16)), hash_const


@njit(inline="always")
def _hashmix(value, hash_const):
    return _hash(value, hash_const, _MULT_A)


@njit(inline="always")
def _output_word(value, hash_const):
    return _hash(value, hash_const, _MULT_B)


@njit(inline="always")
def _mix(x, y):
    mask = np.uint64(_MASK)
    result = (np.uint64(_MIX_L) * x - np.uint64(_MIX_R) * y) & mask
    return result ^ (result >> np.uint64(16))
