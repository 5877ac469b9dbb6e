"""Explicit, worker-independent randomness, and the one table of stream keys.

One ``numpy.random.SeedSequence`` built from the user's seed is spawned into one child per
path (or per grid cell). A path's stream depends only on (seed, purpose, path index), never on how
many workers or chunks computed it, so the same seed gives bitwise-identical arrays.

Every *purpose* that draws random numbers (an initialization, a sampler, label noise, Brownian
increments, a data set, …) has its own key word: its streams are ``SeedSequence(seed, spawn_key=(key, …,
path))``, so two purposes never share a stream for the same seed. The library's purposes (those its models,
data sets, samplers and cells draw from) are the table :data:`KEYS`; an experiment's own purposes are declared
by its module (``STREAMS = {purpose: key word}``, :mod:`dyntools.plugins`). :func:`combine` is the one check that
no two purposes share a name or a key word over the library's table and every plugin's
(:func:`dyntools.plugins.stream_keys`; ``tests/test_engine.py``), which also checks that no module outside the
engine writes a key word elsewhere.
"""

from __future__ import annotations

import numpy as np

from dyntools import validation

#: purpose → SeedSequence key word (unique). Values are kept from earlier versions where a
#: purpose owned one, so that results stay reproducible across versions.
KEYS: dict[str, int] = {
    "toy.data": 0x7A11,              # samples x_i of the quadratic toy
    "toy.sampling": 0x7A12,          # the toy's SGD sample indices
    "diag-net.init": 0xD1A6,         # Gaussian initializations of diagonal networks
    "diag-net.sampling": 0xD1A7,     # SGD indices and label noise of diagonal networks
    "mlp.init": 0x4E11,              # MLP initializations (Gaussian scheme)
    "mlp.init-1d": 0x4E12,           # MLP initialization of the 1-D regression network
    "mlp.sampling": 0x05E1,          # MLP SGD sample indices
    "mlp.dropout": 0x4E13,           # dropout keep masks of the MLP (dyntools.models.mlp.MLP.hooks)
    "data.sparse-regression": 0x5EA1,
    "data.teacher": 0x7EAC,
    "data.spirals": 0x5917,
    "sde.brownian": 0xB20A,          # Brownian increments of dyntools.dynamics.sde.solve
    "sde.label-noise": 0xB20B,       # Brownian increments of the label-noise SDE / GD with label noise
    "sweep.adamw-grid": 0xADA3,      # cells of the (lr, weight decay) heatmap sweep
    "sweep.demo": 0xD3,              # the sweep machinery's own test cell
    "bench": 0xBE7C,                 # benchmark inputs
    "data.voronoi": 0x7020,          # the Voronoi environment of seed 000 (centers, labels, points)
    "voronoi.init": 0x7021,          # initializations of the Voronoi model ladder
    "voronoi.sampling": 0x7022,      # minibatch indices of the Voronoi model ladder (and of its MLP baseline)
    "voronoi.mlp-init": 0x7023,      # initializations of the MLP baseline of the Voronoi study
    "surface.noise": 0x5AF1,         # gradient noise of the 2-D surfaces (optimizer trajectory gallery)
    "universal.features": 0x0A77,    # random hidden layers of the universal-approximation study
    "symbolic.init": 0x5B01,         # initializations of user-declared symbolic models
    "symbolic.sampling": 0x5B02,     # SGD indices and label noise of user-declared symbolic models
    "resnet.init": 0x4E31,           # initializations of the convolutional ResNet (dyntools.models.resnet)
    "resnet.sampling": 0x4E32,       # minibatch indices of the convolutional ResNet
    "data.image-files": 0x1DA7,      # seeded subsets of MNIST / Fashion-MNIST / CIFAR-10 read from their files
    "data.modular": 0x6A0D,          # train/test split of the modular arithmetic tables (grokking)
    "transformer.init": 0x7F01,      # initializations of the small transformer (dyntools.models.transformer)
    "transformer.sampling": 0x7F02,  # minibatch indices of the small transformer
    "user.init": 0xB10D,             # initializations of a user's own model (a dyntools.Model written outside it)
    "user.sampling": 0xB10E,         # minibatch indices and label noise of a user's own model
}


def combine(tables) -> dict[str, int]:
    """One table of purposes from ``tables``, pairs ``(owner, {purpose: key word})`` (the library's :data:`KEYS`
    first, then each plugin's ``STREAMS``).

    Raises
    ------
    ValueError
        When two purposes share a name or a key word (naming both owners), or a key word is not a
        non-negative integer.
    """
    out: dict[str, int] = {}
    owners: dict[int, tuple[str, str]] = {}
    for owner, table in tables:
        for purpose, word in dict(table).items():
            if isinstance(word, bool) or not isinstance(word, int) or word < 0:
                raise ValueError(f"Invalid stream key word of {purpose!r} ({owner}): {word!r} (a non-negative int)")
            if purpose in out:
                raise ValueError(f"Stream purpose {purpose!r} declared twice ({owners[out[purpose]][0]} and {owner})")
            if word in owners:
                raise ValueError(f"Stream purposes {owners[word][1]!r} ({owners[word][0]}) and {purpose!r} ({owner}) "
                                 f"share the key word {word:#x}")
            out[purpose] = word
            owners[word] = (owner, purpose)
    return out


def key(purpose: str) -> int:
    """The key word of ``purpose`` (``ValueError`` listing the purposes otherwise)."""
    if purpose not in KEYS:
        raise ValueError(f"Invalid stream purpose: {purpose!r} (expected one of {', '.join(KEYS)})")
    return KEYS[purpose]


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


def path_states_reference(seed: int, n_paths: int, *key: int) -> np.ndarray:
    """:func:`path_states` one SeedSequence object per path (~25 µs each): the definition the compiled
    derivation is held to, bit for bit."""
    states = np.empty((validation.count("paths", n_paths), 4), dtype=np.uint64)
    for i, seq in enumerate(path_sequences(seed, n_paths, *key)):
        state = seq.generate_state(4, dtype=np.uint64)
        if not state.any():  # the all-zero state is the one fixed point of xoshiro
            state[0] = np.uint64(0x9E3779B97F4A7C15)
        states[i] = state
    return states


def path_states(seed: int, n_paths: int, *key: int) -> np.ndarray:
    """Initial xoshiro256** states (``uint64[n_paths, 4]``) for the compiled kernels, one per path:
    ``SeedSequence(seed, spawn_key=(*key, i)).generate_state(4, uint64)`` (see :mod:`dyntools.engine.rng`),
    the all-zero state replaced by a fixed non-zero word.

    The same bits as :func:`path_states_reference`: many paths in one compiled loop
    (:mod:`dyntools.engine.seed_hash`, NumPy's SeedSequence hash written out; a few hundred integer operations per
    path instead of a Python object per path: 10⁶ paths in ~0.1 s, not ~10 s), fewer than
    :data:`~dyntools.engine.seed_hash.OBJECTS_BELOW` from SeedSequence objects unless the compiled hash is already
    loaded (a few paths never wait on its compile)."""
    n_paths = validation.count("paths", n_paths)
    from dyntools.engine import seed_hash  # numba: imported when paths are seeded, not at start-up

    # a path index of two 32-bit words, or few paths (seed_hash.takes_objects): the reference
    if n_paths > 2**32 or seed_hash.takes_objects(n_paths):
        return path_states_reference(seed, n_paths, *key)
    root = root_sequence(seed, *key)
    return seed_hash.states_by_hash(root.entropy, root.spawn_key, n_paths)
