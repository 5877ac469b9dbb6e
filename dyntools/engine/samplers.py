"""Which training examples a step uses: the samplers every runner draws from.

=====================  ==========================================================================
name                   the examples of step ``t`` (``n`` examples, batch ``b``)
=====================  ==========================================================================
``full``               all of them, ``0 … n−1`` (gradient descent)
``with-replacement``   ``b`` independent uniform indices, ``⌊u·n⌋`` with ``u`` a 53-bit uniform
``epoch``              consecutive entries of a stream of random permutations (Fisher–Yates,
                       reshuffled when one is used up): every epoch sees every example once.
                       With ``drop_last`` a batch never spans two epochs (PyTorch's
                       ``DataLoader(shuffle=True, drop_last=True)``): the rest of an epoch too
                       short for a batch is skipped
``distinct``           ``b`` distinct indices per step, drawn afresh each step (a partial
                       Fisher–Yates shuffle of a persistent permutation, one draw per example)
``replay``             read from a given index array (exact replay of another run)
=====================  ==========================================================================

The compiled draws take the path's xoshiro256** state ``st`` (a ``uint64[1, 4]`` private copy,
see :mod:`dyntools.engine.rng`) and, for the permutation samplers, the path's permutation
``perm`` (``int64[n]``, starting as ``arange(n)``) and position ``pos`` (starting at ``n``, i.e. "the
first draw shuffles"). Each has a NumPy twin (``*_np``) with the same draws in the same order; the
tests hold them bitwise equal.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dyntools.engine import rng

FULL, WITH_REPLACEMENT, EPOCH, DISTINCT, REPLAY = 0, 1, 2, 3, 4
#: sampler name → code used by the compiled loops
CODES = {"full": FULL, "with-replacement": WITH_REPLACEMENT, "epoch": EPOCH, "distinct": DISTINCT,
         "replay": REPLAY}
NAMES = tuple(CODES)


def code(name: str) -> int:
    """The compiled code of the sampler ``name`` (``ValueError`` naming the choices otherwise)."""
    if name not in CODES:
        raise ValueError(f"Invalid sampler: {name!r} (expected one of {', '.join(NAMES)})")
    return CODES[name]


# ------------------------------------------------------------------------------- compiled draws

@njit(inline="always")
def with_replacement(st, n):
    """One uniform index in ``{0, …, n−1}``."""
    return rng.randbelow(st, 0, n)


@njit(inline="always")
def with_replacement_reg(s0, s1, s2, s3, n):
    """:func:`with_replacement` on a state held in locals (hot loops): ``(index, s0, s1, s2, s3)``."""
    r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
    return int(rng.u64_to_unit(r) * n), s0, s1, s2, s3


@njit(cache=True, nogil=True)
def shuffle(perm, st):
    """Fisher–Yates in place: for ``j = n−1 … 1`` swap ``perm[j]`` with ``perm[⌊u·(j+1)⌋]`` (the draws of
    :func:`~dyntools.engine.rng.randbelow`, with the generator's state held in locals for the whole pass)."""
    s0, s1, s2, s3 = st[0, 0], st[0, 1], st[0, 2], st[0, 3]
    for j in range(perm.shape[0] - 1, 0, -1):
        r, s0, s1, s2, s3 = rng.xoshiro_next(s0, s1, s2, s3)
        k = int(rng.u64_to_unit(r) * (j + 1))
        tmp = perm[j]
        perm[j] = perm[k]
        perm[k] = tmp
    st[0, 0], st[0, 1], st[0, 2], st[0, 3] = s0, s1, s2, s3


@njit(inline="always")
def epoch_position(perm, pos, st):
    """Where the next index of the epoch stream is: ``pos``, or 0 after a fresh shuffle when the epoch is
    used up (``pos = n``). The caller reads ``perm[pos]`` and moves on to ``pos + 1``. (An ``(index, pos)``
    pair returned instead cost 30 ns a draw in the samplers' loops — 3.8 ms of a 2000-step heatmap cell.)"""
    if pos + 1 > perm.shape[0]:
        shuffle(perm, st)
        return 0
    return pos


@njit(inline="always")
def epoch_end_of_batch(pos, n, b, drop_last):
    """Position after a batch: with ``drop_last``, jump to the end of the epoch when the next
    batch would not fit in it (so that it starts a fresh permutation)."""
    if drop_last and pos + b > n:
        return n
    return pos


@njit(inline="always")
def distinct_next(perm, q, st):
    """Example ``q`` of a batch of distinct indices: swap ``perm[q]`` with a uniform pick of
    ``perm[q:]`` and return it."""
    j = q + rng.randbelow(st, 0, perm.shape[0] - q)
    i = perm[j]
    perm[j] = perm[q]
    perm[q] = i
    return i


def drawer(kind: int | None = None, noisy: bool | None = None):
    """The batch draw of :func:`draw_batch`, with the sampler code ``kind`` and whether there is label noise
    (``noisy``, i.e. ``label_noise != 0``) fixed when a loop is compiled (``None``: read at run time).

    The branches of the samplers not taken are pruned by numba before it inlines the helpers they call: a loop
    compiled for one sampler does not type, lower and optimize the draws of the other four and the normal draws of
    label noise (~0.9 of ~3.7 processor-seconds of the pointer loop's cold compile, issue 38). The same draws in the
    same order: the specialized draw gives the bits of the generic one for its sampler. Made once per
    ``(kind, noisy)``."""
    key = (kind, noisy)
    if key not in _DRAWERS:
        _DRAWERS[key] = _make_drawer(-1 if kind is None else kind, kind is None, bool(noisy), noisy is None)
    return _DRAWERS[key]


_DRAWERS: dict = {}


def _make_drawer(kind, any_kind, noisy, any_noise):
    # closure constants (booleans: numba prunes a branch on a constant's truth, not on a comparison of two): each test
    # below reads "the fixed kind is X, or the kind is read at run time and is X"
    full, replay_, uniform, epoch = (kind == c for c in (FULL, REPLAY, WITH_REPLACEMENT, EPOCH))

    @njit(inline="always")
    def draw(sampler, idx, noise, label_noise, b, n, replay, row, t, perm, cur, st, drop_last):
        for q in range(b):
            if full or (any_kind and sampler == FULL):
                idx[q] = q
            elif replay_ or (any_kind and sampler == REPLAY):
                idx[q] = replay[row, t * b + q]
            elif uniform or (any_kind and sampler == WITH_REPLACEMENT):
                idx[q] = with_replacement(st, n)
            elif epoch or (any_kind and sampler == EPOCH):
                cur = epoch_position(perm, cur, st)
                idx[q] = perm[cur]
                cur += 1
            else:
                idx[q] = distinct_next(perm, q, st)
            if noisy or (any_noise and label_noise != 0.0):
                noise[q] = label_noise * rng.normal(st, 0)
        if epoch or (any_kind and sampler == EPOCH):
            cur = epoch_end_of_batch(cur, n, b, drop_last)
        return cur

    return draw


#: Fill ``idx[:b]`` with the examples of step ``t`` from the sampler ``sampler`` (a code of :data:`CODES`) and, when
#: ``label_noise = δ`` is not zero, ``noise[q] = δ·ξ`` with a standard normal from the same stream drawn right after
#: index ``q``. ``replay`` row ``row`` holds the replayed indices (``t·b …``). Returns the epoch position after the
#: batch: ``draw_batch(sampler, idx, noise, label_noise, b, n, replay, row, t, perm, cur, st, drop_last)``.
draw_batch = drawer()


@njit(cache=True)
def epoch_batches(st, n, steps, batch):
    """``int64[steps, batch]``: the ``epoch`` sampler (no ``drop_last``) run for ``steps`` steps."""
    out = np.empty((steps, batch), dtype=np.int64)
    perm = np.arange(n)
    pos = n
    for t in range(steps):
        for q in range(batch):
            pos = epoch_position(perm, pos, st)
            out[t, q] = perm[pos]
            pos += 1
    return out


# ------------------------------------------------------------------------------- NumPy twins

def with_replacement_np(st: np.ndarray, n: int) -> int:
    return int(rng.randbelow_np(st[:1], n)[0])


def with_replacement_rows_np(states: np.ndarray, n: int) -> np.ndarray:
    """:func:`with_replacement` for every row of ``states`` at once (vectorized twins of lock-step loops)."""
    return rng.randbelow_np(states, n)


def shuffle_np(perm: np.ndarray, st: np.ndarray) -> None:
    for j in range(perm.shape[0] - 1, 0, -1):
        k = int(rng.randbelow_np(st[:1], j + 1)[0])
        perm[j], perm[k] = perm[k], perm[j]


def epoch_next_np(perm: np.ndarray, pos: int, st: np.ndarray) -> tuple[int, int]:
    if pos + 1 > perm.shape[0]:
        shuffle_np(perm, st)
        pos = 0
    return int(perm[pos]), pos + 1


def epoch_end_of_batch_np(pos: int, n: int, b: int, drop_last: bool) -> int:
    return n if drop_last and pos + b > n else pos


def distinct_next_np(perm: np.ndarray, q: int, st: np.ndarray) -> int:
    j = q + int(rng.randbelow_np(st[:1], perm.shape[0] - q)[0])
    i = int(perm[j])
    perm[j] = perm[q]
    perm[q] = i
    return i


def epoch_batches_np(st: np.ndarray, n: int, steps: int, batch: int) -> np.ndarray:
    """NumPy twin of :func:`epoch_batches`."""
    out = np.empty((steps, batch), dtype=np.int64)
    perm = np.arange(n)
    pos = n
    for t in range(steps):
        for q in range(batch):
            out[t, q], pos = epoch_next_np(perm, pos, st)
    return out


def check_replay(indices, *, steps: int, batch: int, paths: int, n: int) -> np.ndarray:
    """A replay index array as the compiled loops take it: ``int64[1 or paths, steps·batch]``.

    Accepts shape ``(steps·batch,)`` (shared by every path) or ``(paths, steps·batch)``; every entry
    must lie in ``[0, n)``. ``ValueError`` naming ``indices`` otherwise."""
    arr = np.asarray(indices)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError("Invalid indices: must be integers")
    if arr.ndim == 1:
        arr = arr[None, :]
    need = steps * batch
    if arr.ndim != 2 or arr.shape[1] != need or arr.shape[0] not in (1, paths):
        raise ValueError(f"Invalid indices: expected shape ({need},) or ({paths}, {need}), got {np.shape(indices)}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"Invalid indices: must lie in [0, {n - 1}]")
    return np.ascontiguousarray(arr, dtype=np.int64)


NO_REPLAY = np.zeros((0, 0), dtype=np.int64)
